/* Hierarchical all-reduce, for several ranks on each of several nodes (same count on
 * every node).
 *
 * With L ranks per node, the count is split into L slices. 1. Intra-node reduce-scatter
 * through the pool: every rank copies its input into its pool scratch; after a node
 * barrier, local rank l reduces slice l from all L copies (read through the pool
 * mappings, in local-rank order) into its accumulator. 2. Inter-node all-reduce of slice
 * l among the ranks of local index l on every node (one per node, so all over UCX),
 * recursive doubling or ring by the slice's size (in the canonical order recursive halving
 * and doubling instead of the ring: topo_net_flat_algo); the L groups of a node run at the same
 * time, so each rank sends only 1/L of the data across nodes. AVG divides by the total
 * rank count there, once. 3. Intra-node all-gather: after a second barrier, every rank
 * copies the L final slices out of its peers' accumulators.
 *
 * Every final slice is computed by one group all-reduce (identical bits across the
 * group) and copied inside each node, so every rank ends with the same bits.
 * Reuse across calls: a rank writes its accumulator only after the first barrier of the
 * next call, when every local peer has finished copying from it; its input copy is read
 * by peers only before the second barrier of the call that wrote it.
 *
 * Agreement (check): in these same steps (see net.h). A rank's tag and verdict words are
 * read by its local peers between the barriers that follow their stores, and rewritten
 * only before the barriers of the next call, which nobody passes before every local peer
 * has read them.
 */
#include "algo/net/net.h"

#include <string.h>

#include "algo/base/reduce.h"
#include "topo/select.h"
#include "topo/topo.h"

symcoll_status_t algo_net_hier(net_state_t *st, const void *sendbuf, void *recvbuf,
                               size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                               deadline_t *dl, const net_sig_t *sig, bool check, bool *rerun,
                               net_call_t *c_out)
{
    const topo_t *t = st->comm->topo;
    int L = t->local_size, l = t->local_rank, nn = t->nnodes;
    size_t esize = symcoll_dtype_size(dtype), bytes = count * esize;
    size_t s0, slen, max_slice = (count + (size_t)L - 1) / (size_t)L;
    topo_algo_t inner = topo_net_flat_algo(&t->select_cfg, nn, max_slice * esize);
    bool rd = inner == TOPO_ALGO_RD;
    size_t area = rd                       ? algo_net_rd_area(max_slice, esize, nn)
                  : inner == TOPO_ALGO_RHD ? algo_net_rhd_area(max_slice, esize, nn)
                                           : algo_net_ring_area(max_slice, esize, nn);
    size_t in_off, acc_off;
    char *acc;
    net_group_t g;
    net_call_t c;
    bool fits = true, bad = false;
    symcoll_status_t status;

    if (check) {
        /* nothing may grow before every rank knows that all agree */
        fits = st->has_scratch && bytes <= st->in_bytes && max_slice * esize <= st->acc_bytes &&
               area <= st->area_bytes;
        *rerun = !fits;
    } else {
        status = algo_net_reserve(st, bytes, max_slice * esize, area);
        if (status != SYMCOLL_OK)
            return status;
    }
    in_off = st->scratch_off;
    acc_off = st->scratch_off + st->in_bytes;
    acc = algo_net_addr(st, acc_off);
    algo_net_block(count, L, l, &s0, &slen);
    algo_net_local_index_group(st, &g);
    algo_net_call_init(&c, st, &g, acc, acc, slen, dtype, op, dl, sig);

    /* 1. intra-node reduce-scatter */
    if (fits)
        memcpy(algo_net_addr(st, in_off), sendbuf, bytes);
    if (check)
        algo_net_hier_publish(st, NET_WORD_HIER_TAG, c.tag);
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; check && j < L; j++) {
        uint64_t tag = algo_net_hier_peek(st, t->local_ranks[j], NET_WORD_HIER_TAG);
        if (tag != c.tag && c.bad_peer < 0) {
            c.bad_peer = t->local_ranks[j];
            c.bad_tag = tag;
        }
        bad |= tag != c.tag;
    }
    /* with counts that differ the slices read are garbage, but inside the scratch, whose
     * reservation all ranks share */
    if (fits) {
        for (int j = 0; j < L; j++)
            st->srcs[j] = (const char *)pool_peer_addr(st->pool, j, in_off) + s0 * esize;
        algo_reduce(acc, st->srcs, L, slen, dtype, op, 0);
    }

    /* 2. inter-node all-reduce of our slice, among the ranks of our local index: agreed
     * by rd's own messages where rd serves it and fits, else by rd's messages without
     * data first (also for an empty slice: other nodes' slices may not be) */
    if (check) {
        if (bad)
            c.tag |= NET_TAG_BAD;
        c.check = true;
        c.header_only = !(fits && rd);
        status = algo_net_rd(&c);
        if (status == SYMCOLL_OK)
            status = ucx_wait_all(st->ucx, dl);
        c.check = false;
        c.header_only = false;
        bad = (c.tag & NET_TAG_BAD) != 0;
        if (status == SYMCOLL_OK && !bad && fits && !rd && slen > 0) {
            status = inner == TOPO_ALGO_RHD ? algo_net_rhd(&c) : algo_net_ring(&c);
            if (status == SYMCOLL_OK)
                status = ucx_wait_all(st->ucx, dl);
        }
    } else if (slen > 0) {
        status = rd                       ? algo_net_rd(&c)
                 : inner == TOPO_ALGO_RHD ? algo_net_rhd(&c)
                                          : algo_net_ring(&c);
        if (status == SYMCOLL_OK)
            status = ucx_wait_all(st->ucx, dl);
    }
    if (status != SYMCOLL_OK)
        return status;

    /* 3. intra-node all-gather; the verdicts of the node's groups go with the barrier
     * (the same everywhere: every group holds one rank of each node, and each of those
     * knows its node's verdict, so this only confirms it) */
    if (check)
        algo_net_hier_publish(st, NET_WORD_HIER_BAD, bad);
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; check && j < L; j++)
        if (algo_net_hier_peek(st, t->local_ranks[j], NET_WORD_HIER_BAD))
            c.tag |= NET_TAG_BAD;
    if (c_out)
        *c_out = c;
    if (!fits || (c.tag & NET_TAG_BAD))
        return SYMCOLL_OK;
    for (int j = 0; j < L; j++) {
        size_t js, jl;
        algo_net_block(count, L, j, &js, &jl);
        memcpy((char *)recvbuf + js * esize, pool_peer_addr(st->pool, j, acc_off), jl * esize);
    }
    return SYMCOLL_OK;
}
