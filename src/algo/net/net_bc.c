/*
 * The eager broadcast across nodes (at most NET_BC_EAGER_MAX bytes, up to NET_BC_MAX_RANKS
 * ranks): as inside a node (host_coll.c), the root does not wait for the receivers. Every
 * rank keeps, in its pool, a ring of NET_BC_RING bytes per root (same offset everywhere;
 * made with the state when the pool is attached, so no broadcast sets anything up);
 * the root writes header (the broadcast's number on the communicator, count, datatype,
 * root) and data at the next place of its own ring, then sends them to the same place of
 * each receiver's ring with the message count in the root's NET_WORD_BC_DATA word of the
 * receiver's flags (ucx_put_signal to another node: data, fence, flag or one active
 * message; a copy and a release store inside the node), and returns. A receiver waits
 * for the word, checks the header against its own arguments and copies the data out.
 *
 * Places: a message starts where the previous one ended (positions count bytes, never
 * wrap), or at the next lap of the ring where a message of the largest size would not
 * fit before its end: so where a message starts does not depend on its own size, and a
 * receiver called with another count still reads the root's header (the mismatch is
 * seen). It takes 64 bytes of header and its data rounded up to 64 bytes; every rank
 * advances by the root's count, from the header.
 *
 * Credits: a receiver returns its position to the root's NET_WORD_BC_CREDIT word each time it
 * crosses a half ring (ordered after its earlier credits: ucx_put_flag_after); the root writes
 * a message ending at e only once every receiver returned at least e - NET_BC_RING, so no
 * receiver still reads what is written again, and waits (bounded, progressing UCX) only while
 * the ring is full. A receiver that consumed every earlier message never withholds the credit
 * the root needs: it returned at least its position less half a ring, and a message moves the
 * end by at most two of the largest (NET_BC_RING holds 16), so the root needs at most end -
 * NET_BC_RING <= that.
 *
 * A mismatched broadcast is reported by every receiver at that call (it breaks the
 * communicator and tells every peer) and by the root no later than its next call that
 * waits for that receiver, or that progresses UCX (every NET_BC_NOTICE broadcasts); an
 * eager call that already heard of it fails at once. The other collectives keep their
 * own counters, flag words and receive areas, so their synchronisation is untouched.
 *
 * As with any eager protocol without a progress thread, bytes that the transport could
 * not hand to the network at once (a full socket) move on at the root's next call that
 * progresses UCX; a receiver waits for them, bounded by its deadline.
 */
#include "algo/net/net.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/base/reduce.h"
#include "topo/topo.h"


typedef struct net_bc_hdr {
    uint64_t seq, count, sig, pad[5];
} net_bc_hdr_t;

/* Where a message goes that follows position pos of its root's ring (see above). */
static uint64_t net_bc_place(uint64_t pos)
{
    uint64_t in = pos % NET_BC_RING;
    return in + NET_BC_SLOT_BYTES > NET_BC_RING ? pos + (NET_BC_RING - in) : pos;
}

/* Ring bytes of a message of count elements of the type in sig (header included); a
 * count no root could have sent (a header read on a mismatch) takes the most. */
static uint64_t net_bc_len(uint64_t count, uint64_t sig)
{
    size_t esize = symcoll_dtype_size((symcoll_dtype_t)(sig & 0xff));
    if (esize == 0 || count > NET_BC_EAGER_MAX / esize)
        return NET_BC_SLOT_BYTES;
    return 64 + ((count * esize + 63) & ~(uint64_t)63);
}

static char *net_bc_at(const net_state_t *st, int root, uint64_t pos)
{
    return algo_net_addr(st,
                         st->bc_off + (size_t)root * NET_BC_RING + (size_t)(pos % NET_BC_RING));
}

static symcoll_status_t net_bc_send(net_state_t *st, const algo_args_t *a, size_t nbytes,
                                    deadline_t *dl, double *next_alive)
{
    int me = st->comm->rank, n = st->n;
    uint64_t k = st->bc_sent, sig = (uint64_t)a->dtype | (uint64_t)(uint32_t)a->root << 32;
    uint64_t start = net_bc_place(st->bc_pos), end = start + net_bc_len(a->count, sig);
    size_t off = (size_t)(net_bc_at(st, me, start) - algo_net_addr(st, 0));
    char *slot = net_bc_at(st, me, start);
    ucx_req_t *reqs = &st->bc_reqs[(size_t)(k % NET_BC_REQS) * (size_t)n];
    net_bc_hdr_t h = {st->bc_seq, a->count, sig, {0}};
    uint64_t *flag = algo_net_flag_word(st, me, me, NET_WORD_BC_DATA);
    symcoll_status_t status;

    if (end - st->bc_credit > NET_BC_RING) {
        uint64_t least = UINT64_MAX, need = end - NET_BC_RING;
        for (int r = 0; r < n; r++) {
            uint64_t *w = algo_net_flag_word(st, me, r, NET_WORD_BC_CREDIT), v;
            if (r == me)
                continue;
            status = algo_net_wait_flag(st, w, need, r, dl, next_alive);
            if (status != SYMCOLL_OK)
                return status;
            v = atomic_load_explicit((_Atomic uint64_t *)w, memory_order_acquire);
            least = v < least ? v : least;
        }
        st->bc_credit = least;
    }
    /* the sends of message k - NET_BC_REQS: their requests go before the entries are
     * taken again (what they sent was consumed, or is no longer read by them: credits) */
    for (int r = 0; r < n; r++) {
        status = ucx_req_wait(st->ucx, reqs[r], dl);
        reqs[r] = NULL;
        if (status != SYMCOLL_OK)
            return status;
    }
    memcpy(slot, &h, sizeof(h));
    memcpy(slot + 64, a->sendbuf, nbytes);
    for (int i = 1; i < n; i++) {
        int r = (me + i) % n;
        if (ucx_is_remote(st->ucx, r)) {
            status = ucx_put_signal(st->ucx, r, slot, 64 + nbytes, slot, flag, k + 1, &reqs[r]);
            if (status != SYMCOLL_OK)
                return status;
        } else {
            memcpy(algo_net_peer_addr(st, r, off), slot, 64 + nbytes);
            atomic_store_explicit(
                (_Atomic uint64_t *)algo_net_flag_word(st, r, me, NET_WORD_BC_DATA), k + 1,
                memory_order_release);
        }
    }
    st->bc_sent = k + 1;
    st->bc_pos = end;
    if (a->recvbuf != a->sendbuf)
        memcpy(a->recvbuf, a->sendbuf, nbytes);
    return SYMCOLL_OK;
}

static symcoll_status_t net_bc_recv(net_state_t *st, const algo_args_t *a, size_t nbytes,
                                    deadline_t *dl, double *next_alive)
{
    int me = st->comm->rank, root = a->root;
    uint64_t k = st->bc_recvd[root], from = st->bc_rpos[root];
    uint64_t start = net_bc_place(from), end;
    const char *slot = net_bc_at(st, root, start);
    uint64_t sig = (uint64_t)a->dtype | (uint64_t)(uint32_t)root << 32;
    symcoll_status_t status;
    net_bc_hdr_t h;
    bool match;

    status = algo_net_wait_flag(st, algo_net_flag_word(st, me, root, NET_WORD_BC_DATA), k + 1,
                                root, dl, next_alive);
    if (status != SYMCOLL_OK)
        return status;
    memcpy(&h, slot, sizeof(h));
    match = h.seq == st->bc_seq && h.count == a->count && h.sig == sig;
    if (match)
        memcpy(a->recvbuf, slot + 64, nbytes);
    /* consumed either way, and by the root's count, so that its credits stay right */
    end = start + net_bc_len(h.count, h.sig);
    st->bc_recvd[root] = k + 1;
    st->bc_rpos[root] = end;
    if (from / (NET_BC_RING / 2) != end / (NET_BC_RING / 2)) {
        uint64_t *w = algo_net_flag_word(st, me, me, NET_WORD_BC_CREDIT);
        /* the root may have moved on and not wait for it: an active message, which needs
         * no rkey of the root and so no answer from it (see ucx.h) */
        if (ucx_is_remote(st->ucx, root))
            status = ucx_put_flag_am(st->ucx, root, end, w);
        else
            atomic_store_explicit(
                (_Atomic uint64_t *)algo_net_flag_word(st, root, me, NET_WORD_BC_CREDIT), end,
                memory_order_release);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (match)
        return SYMCOLL_OK;
    log_error("broadcast across nodes: rank %d, the root, called with different arguments: "
              "count %llu %s root %d as broadcast %llu there, count %zu %s root %d as "
              "broadcast %llu here",
              root, (unsigned long long)h.count,
              symcoll_dtype_name((symcoll_dtype_t)(h.sig & 0xff)), (int)(uint32_t)(h.sig >> 32),
              (unsigned long long)h.seq, a->count, symcoll_dtype_name(a->dtype), root,
              (unsigned long long)st->bc_seq);
    return SYMCOLL_ERR_MISMATCH;
}

symcoll_status_t algo_net_bc_run(comm_t *comm, pool_t *pool, const algo_args_t *a)
{
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    double next_alive = time_now() + 0.005;
    size_t nbytes = a->count * symcoll_dtype_size(a->dtype);
    net_state_t *st;
    symcoll_status_t status;

    if (!comm->ucx) {
        log_error("internal: broadcast across nodes without a UCX context");
        return SYMCOLL_ERR_INTERNAL;
    }
    status = algo_net_state_usable(comm, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    if (!st->has_bc) {
        /* made with the state, on every rank whatever its arguments (algo_net_attach) */
        log_error("internal: eager broadcast across nodes of %d ranks without its rings",
                  st->n);
        return SYMCOLL_ERR_INTERNAL;
    }
    /* a peer that gave up (a receiver's mismatch, a failure): fail at once. Remote peers'
     * notices arrive while UCX progresses: every wait does; a root that never waits does
     * every NET_BC_NOTICE calls (each progress is a system call on TCP) */
    status = st->bc_seq % NET_BC_NOTICE == 0 ? ucx_progress(st->ucx) : SYMCOLL_OK;
    for (int r = 0; r < st->n && status == SYMCOLL_OK; r++)
        if (r != comm->rank && !ucx_is_remote(st->ucx, r))
            status = algo_net_peer_gave_up(st, r);
    if (status == SYMCOLL_OK)
        status = comm->rank == a->root ? net_bc_send(st, a, nbytes, &dl, &next_alive)
                                       : net_bc_recv(st, a, nbytes, &dl, &next_alive);
    st->bc_seq++;
    if (status != SYMCOLL_OK)
        return algo_net_give_up(st, status);
    return SYMCOLL_OK;
}
