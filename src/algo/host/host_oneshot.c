/* One-shot all-reduce between the ranks of one node, over the host pool.
 *
 * Algorithm. The message is cut into chunks of SYMCOLL_HOST_CHUNK_SIZE bytes (small
 * messages are one chunk). For each chunk every rank makes its input visible to its
 * peers: a buffer from symcoll_mem_alloc is already in the pool and is read in place;
 * any other input is copied into one of the rank's staging slots. One barrier
 * (each rank bumps its epoch in its signal pad with a release store and waits, with
 * acquire loads, until every peer's epoch reaches it), then every rank reads all ranks'
 * copies in rank order and reduces them into its own output. Every rank runs the same
 * reduction over the same bytes in the same order, so all get identical bits.
 *
 * Reuse. Staging slots rotate from chunk to chunk (and call to call): a rank writes a
 * slot again only after the barrier of a later chunk, which every peer reaches only
 * after it finished reading that slot; so no end barrier is needed for staged input.
 * Input read in place from the caller's buffer is different: the caller may change it
 * as soon as the call returns, so then the call ends with one more barrier. An
 * in-place call on a pool buffer stages its input (the output overwrites it while
 * peers may still read it).
 *
 * Small messages (at most HOST_LL_BYTES) go through the rank's mailbox in its signal
 * pad instead: 56 bytes of data per cache line, each line stamped with the epoch in the
 * same line. A peer polls those lines, not the epoch word, so the flag and the data
 * arrive in one cache-line transfer, and the lines' transfers overlap (after a barrier
 * on the epoch word, the data is a second transfer that has to wait for the first).
 * The input is always copied there (also from a pool buffer: no end barrier).
 */
#include "algo/host/host.h"

#include <string.h>

#include "algo/base/reduce.h"

static symcoll_status_t oneshot_ll(host_call_t *c, size_t nbytes)
{
    algo_host_state_t *st = c->st;
    uint64_t e = st->epoch + 1;
    unsigned parity = (unsigned)(e & 1);
    size_t lines = (nbytes + HOST_LL_DATA - 1) / HOST_LL_DATA;
    algo_host_ll_line_t *mine = st->sig[c->me]->ll[parity];
    symcoll_status_t status;

    /* the slot counters of all ranks stay equal (peers address each other's staging by
     * their own counter) also when a peer staged this call: the descriptors then
     * disagree, and both sides return after this one step */
    st->slot++;
    algo_host_desc_publish(c, HOST_ALGO_ONESHOT, 0, 0, 0);
    for (size_t k = 0; k < lines; k++) {
        size_t off = k * HOST_LL_DATA;
        memcpy(mine[k].data, c->sendbuf + off,
               nbytes - off < HOST_LL_DATA ? nbytes - off : HOST_LL_DATA);
        atomic_store_explicit(&mine[k].epoch, e, memory_order_release);
    }
    status = algo_host_barrier_ll(c, parity, lines);
    if (status != SYMCOLL_OK)
        return status;
    /* equal descriptors: every peer sent through its mailbox too */
    status = algo_host_desc_collect(c, HOST_ALGO_ONESHOT);
    if (status != SYMCOLL_OK)
        return status;
    for (int r = 0; r < c->n; r++) {
        const algo_host_ll_line_t *ll = st->sig[r]->ll[parity];
        char *in = st->ll_in + (size_t)r * HOST_LL_BYTES;
        if (r == c->me) {
            /* our own part from where it is, still in our cache */
            st->srcs[r] = c->sendbuf;
            continue;
        }
        for (size_t k = 0; k < lines; k++) {
            size_t off = k * HOST_LL_DATA;
            memcpy(in + off, ll[k].data,
                   nbytes - off < HOST_LL_DATA ? nbytes - off : HOST_LL_DATA);
        }
        st->srcs[r] = in;
    }
    algo_reduce(c->recvbuf, st->srcs, c->n, c->count, c->dtype, c->op, c->comm->nranks);
    return SYMCOLL_OK;
}

symcoll_status_t algo_host_oneshot(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    size_t nbytes = c->count * c->esize, chunk = st->chunk_bytes, off;
    size_t in_off = 0;
    bool in_linear;
    symcoll_status_t status;

    if (nbytes && nbytes <= HOST_LL_BYTES)
        return oneshot_ll(c, nbytes);
    in_linear = pool_lookup(c->pool, c->sendbuf, nbytes, &in_off) &&
                (c->sendbuf + nbytes <= c->recvbuf || c->recvbuf + nbytes <= c->sendbuf);
    algo_host_desc_publish(c, HOST_ALGO_ONESHOT, in_linear ? HOST_DESC_IN_LINEAR : 0, in_off,
                           0);

    for (size_t k = 0; (off = k * chunk) < nbytes; k++) {
        size_t bytes = nbytes - off < chunk ? nbytes - off : chunk;
        unsigned slot = (unsigned)(st->slot++ % HOST_STAGING_SLOTS);

        if (!in_linear)
            memcpy(algo_host_staging(c, c->me, slot), c->sendbuf + off, bytes);
        status = algo_host_barrier(c);
        if (status != SYMCOLL_OK)
            return status;
        if (k == 0) {
            /* start fetching the peers' staged data while their descriptors come in */
            for (int r = 0; r < c->n; r++)
                for (size_t b = 0; r != c->me && b < bytes && b < 512; b += 64)
                    __builtin_prefetch(algo_host_staging(c, r, slot) + b);
            status = algo_host_desc_collect(c, HOST_ALGO_ONESHOT);
            if (status != SYMCOLL_OK)
                return status;
        }
        for (int r = 0; r < c->n; r++)
            st->srcs[r] = algo_host_in(c, r, k, slot);
        /* our own part from where we wrote it, still in our cache */
        st->srcs[c->me] = c->sendbuf + off;
        algo_reduce(c->recvbuf + off, st->srcs, c->n, bytes / c->esize, c->dtype, c->op,
                    c->comm->nranks);
    }
    /* some rank's input is read in place: nobody returns before everybody read it */
    for (int r = 0; r < c->n; r++)
        if (st->peer_flags[r] & HOST_DESC_IN_LINEAR)
            return algo_host_barrier(c);
    return SYMCOLL_OK;
}
