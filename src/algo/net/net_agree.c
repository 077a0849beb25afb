/* Agreement of the family across nodes: the tag every message carries (what the ranks
 * agree on: the arguments of the call and its number), the words a rank shows its node
 * during a hierarchical call, and the report of a disagreement. */
#include "algo/net/net.h"

#include <stdlib.h>

#include "algo/base/ctx.h"
#include "algo/net/net_int.h"
#include "bootstrap/bootstrap.h"

uint64_t algo_net_tag(const net_sig_t *sig, uint64_t seq)
{
    /* another collective run as this all-reduce differs from it by its salt, and a call
     * whose algorithm its caller forced by that algorithm */
    uint64_t n = (uint64_t)sig->count ^ sig->salt * UINT64_C(0x9e3779b97f4a7c15) ^
                 (uint64_t)sig->call_algo * UINT64_C(0xc2b2ae3d27d4eb4f);
    /* exact below 2^24 elements, a fold above */
    uint64_t fold = (n ^ (n >> 24) ^ (n >> 48)) & 0xffffff;

    return fold | (seq & 7) << 24 | ((uint64_t)sig->dtype & 15) << 27 |
           ((uint64_t)sig->op & 7) << 31 | ((uint64_t)sig->mem & 1) << 34;
}

void algo_net_hier_publish(net_state_t *st, uint64_t word, uint64_t value)
{
    atomic_store_explicit((_Atomic uint64_t *)net_flag(st, st->comm->rank, 0) + word, value,
                          memory_order_relaxed);
}

uint64_t algo_net_hier_peek(const net_state_t *st, int rank, uint64_t word)
{
    return atomic_load_explicit((_Atomic uint64_t *)net_flag(st, rank, 0) + word,
                                memory_order_relaxed);
}

static const char *net_mem_name(int mem)
{
    return mem == SYMCOLL_MEM_CUDA ? "CUDA" : "host";
}

/* What the bootstrap exchange of a failed agreement carries. */
typedef struct net_xsig {
    uint64_t count, seq, salt;
    int32_t dtype, op, mem, call_algo;
    uint64_t bc_seq; /* eager broadcasts taken part in (net_coll.c) */
} net_xsig_t;

static bool net_xsig_differ(const net_xsig_t *a, const net_xsig_t *b)
{
    return a->count != b->count || a->dtype != b->dtype || a->op != b->op || a->mem != b->mem ||
           (a->seq & 7) != (b->seq & 7) || a->salt != b->salt || a->call_algo != b->call_algo;
}

symcoll_status_t algo_net_mismatch(net_state_t *st, const net_call_t *c, const net_sig_t *sig,
                                   bool exact)
{
    comm_t *comm = st->comm;
    net_xsig_t me = {(uint64_t)sig->count, (c->tag >> 24) & 7, sig->salt,
                     (int32_t)sig->dtype,  (int32_t)sig->op,   (int32_t)sig->mem,
                     sig->call_algo,       st->bc_seq};
    /* the collective run: its own, or the one run as this all-reduce (the same salt) */
    const char *what = topo_coll_name((topo_coll_t)(sig->salt >> 32));

    if (exact) {
        /* every rank of the communicator knows: a bootstrap exchange (error path only) */
        net_xsig_t *all = calloc((size_t)comm->nranks, sizeof(*all));
        symcoll_status_t status =
            all ? bootstrap_allgather(comm->bootstrap, &me, all, sizeof(me))
                : SYMCOLL_ERR_NO_MEMORY;
        int r = 0;

        /* ranks whose counts of eager broadcasts differ decided differently whether a
         * broadcast was eager (each decides from its own size): a root's message then
         * waits unread in a receiver's ring, which would take it for its next eager
         * broadcast. Every rank sees the same counts: all break the communicator. */
        for (int q = 0; status == SYMCOLL_OK && q < comm->nranks; q++) {
            if (all[q].bc_seq == me.bc_seq)
                continue;
            log_error("collective across nodes: rank %d took part in %llu eager broadcasts, "
                      "this rank (%d) in %llu: a broadcast was eager on some ranks only "
                      "(different sizes); the communicator can only be destroyed",
                      q, (unsigned long long)all[q].bc_seq, comm->rank,
                      (unsigned long long)me.bc_seq);
            free(all);
            (void)algo_break(comm, SYMCOLL_ERR_MISMATCH);
            return SYMCOLL_ERR_MISMATCH;
        }
        while (status == SYMCOLL_OK && r < comm->nranks && !net_xsig_differ(&all[r], &me))
            r++;
        if (status == SYMCOLL_OK && r < comm->nranks && all[r].salt != me.salt) {
            log_error("collective across nodes: ranks called different collectives: rank %d "
                      "%s (root %d), this rank (%d) %s (root %d)",
                      r, topo_coll_name((topo_coll_t)(all[r].salt >> 32)),
                      (int)(uint32_t)all[r].salt, comm->rank,
                      topo_coll_name((topo_coll_t)(me.salt >> 32)), (int)(uint32_t)me.salt);
            free(all);
            return SYMCOLL_ERR_MISMATCH;
        }
        if (status == SYMCOLL_OK && r < comm->nranks && all[r].call_algo != me.call_algo) {
            log_error("%s across nodes: ranks forced different algorithms "
                      "(symcoll_comm_set_algo): rank %d %s, this rank (%d) %s",
                      what, r, topo_algo_name((topo_algo_t)all[r].call_algo), comm->rank,
                      topo_algo_name((topo_algo_t)me.call_algo));
            free(all);
            return SYMCOLL_ERR_MISMATCH;
        }
        if (status == SYMCOLL_OK && r < comm->nranks) {
            log_error("%s across nodes: ranks called with different arguments: rank %d "
                      "with count %llu, %s, %s, %s memory (call %llu mod 8); this rank (%d) "
                      "with count %llu, %s, %s, %s memory (call %llu mod 8)",
                      what, r, (unsigned long long)all[r].count,
                      symcoll_dtype_name((symcoll_dtype_t)all[r].dtype),
                      symcoll_op_name((symcoll_op_t)all[r].op), net_mem_name(all[r].mem),
                      (unsigned long long)(all[r].seq & 7), comm->rank,
                      (unsigned long long)me.count, symcoll_dtype_name(sig->dtype),
                      symcoll_op_name(sig->op), net_mem_name(sig->mem),
                      (unsigned long long)me.seq);
            free(all);
            return SYMCOLL_ERR_MISMATCH;
        }
        free(all);
        if (status != SYMCOLL_OK)
            return status;
        /* a rank that compared tags equal for different folded counts cannot see it;
         * what is left is a difference in the call sequence itself */
    }
    if (c->bad_peer >= 0) {
        uint64_t t = c->bad_tag;
        log_error("%s across nodes: ranks called with different arguments: rank %d "
                  "with count %llu (mod 2^24), %s, %s, %s memory (call %llu mod 8); this rank "
                  "(%d) with count %zu, %s, %s, %s memory (call %llu mod 8)",
                  what, c->bad_peer, (unsigned long long)(t & 0xffffff),
                  symcoll_dtype_name((symcoll_dtype_t)((t >> 27) & 15)),
                  symcoll_op_name((symcoll_op_t)((t >> 31) & 7)),
                  net_mem_name((int)(t >> 34) & 1), (unsigned long long)((t >> 24) & 7),
                  comm->rank, sig->count, symcoll_dtype_name(sig->dtype),
                  symcoll_op_name(sig->op), net_mem_name(sig->mem), (unsigned long long)me.seq);
    } else {
        log_error("%s across nodes: ranks called with different arguments (this rank, "
                  "%d: count %zu, %s, %s, %s memory; another rank's differ)",
                  what, comm->rank, sig->count, symcoll_dtype_name(sig->dtype),
                  symcoll_op_name(sig->op), net_mem_name(sig->mem));
    }
    return SYMCOLL_ERR_MISMATCH;
}
