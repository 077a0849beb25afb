/* Two-shot all-reduce between the ranks of one node, over the host pool.
 *
 * Algorithm. The message is cut into chunks of SYMCOLL_HOST_CHUNK_SIZE bytes, and each
 * chunk into n slices, one per local rank (slices are whole cache lines where the
 * chunk allows). Each chunk goes through
 *   - copy-in: every rank makes its input chunk visible: read in place when it is a pool
 *     buffer, else copied into one of its staging slots (all but its own slice, which
 *     only it reads, straight from its input);
 *   - reduce-scatter: rank i reads slice i of every rank's chunk, in rank order, and
 *     writes the reduced slice to its result location: its own pool output buffer when
 *     the output was allocated from the pool, else slice i of its staging slot (only
 *     rank i ever reads slice i of anybody's input, so writing it there is safe);
 *   - all-gather: every rank copies slice j of the chunk from rank j's result location,
 *     for every j, into its output.
 * Every element is reduced once, by one rank, in rank order, then copied: identical
 * bits everywhere.
 *
 * Pipeline. One barrier per chunk: iteration k copies in chunk k, passes barrier k,
 * reduces chunk k and gathers chunk k-1 (whose slices every peer reduced before it
 * signalled barrier k); one more barrier and the gather of the last chunk end the
 * loop. Barriers are where a rank waits for a peer to be scheduled, so on a busy
 * machine their number, not the bytes, sets the time (measured: halving them made
 * 2-32 MiB two to four times faster under load). Working on one chunk at a time keeps
 * the working set in cache.
 *
 * Reuse. Staging slots rotate over HOST_STAGING_SLOTS (3). A rank reads a peer's slot
 * of chunk k in its reduce (before barrier k+1) and gather (before barrier k+2); the
 * owner writes that slot again for chunk k+3, after barrier k+2. When some rank's
 * result lives in its caller's buffer, peers read it until their last gather, so the
 * call ends with one more barrier; input read in place is covered by the last barrier
 * of the loop.
 */
#include "algo/host/host.h"

#include <string.h>

#include "algo/base/reduce.h"

/* Slice r of a chunk of m elements: [lo, hi). Slices are multiples of 64 bytes where
 * possible so that ranks do not write the same cache line. */
static void twoshot_slice(size_t m, size_t esize, int n, int r, size_t *lo, size_t *hi)
{
    size_t align = 64 / esize, per = (m + (size_t)n - 1) / (size_t)n;
    per = (per + align - 1) / align * align;
    *lo = (size_t)r * per < m ? (size_t)r * per : m;
    *hi = *lo + per < m ? *lo + per : m;
}

/* All-gather of chunk k (staging slot slot): every slice from its owner's result. */
static void twoshot_gather(host_call_t *c, size_t k, unsigned slot)
{
    size_t chunk = c->st->chunk_bytes, es = c->esize, off = k * chunk, nbytes = c->count * es;
    size_t m = (nbytes - off < chunk ? nbytes - off : chunk) / es, lo, hi;

    for (int i = 0; i < c->n; i++) {
        int r = (c->me + i) % c->n; /* spread the readers over the owners */
        const char *src;
        twoshot_slice(m, es, c->n, r, &lo, &hi);
        if (hi <= lo)
            continue;
        src = algo_host_out(c, r, k, slot) + lo * es;
        if (src != c->recvbuf + off + lo * es)
            memcpy(c->recvbuf + off + lo * es, src, (hi - lo) * es);
    }
}

symcoll_status_t algo_host_twoshot(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    size_t nbytes = c->count * c->esize, chunk = st->chunk_bytes, es = c->esize, off;
    size_t in_off = 0, out_off = 0;
    bool in_linear, out_linear;
    uint64_t flags = 0;
    size_t nchunks;
    unsigned prev_slot = 0;
    symcoll_status_t status;

    out_linear = pool_lookup(c->pool, c->recvbuf, nbytes, &out_off);
    in_linear = pool_lookup(c->pool, c->sendbuf, nbytes, &in_off) &&
                (c->sendbuf == c->recvbuf || c->sendbuf + nbytes <= c->recvbuf ||
                 c->recvbuf + nbytes <= c->sendbuf);
    flags = (in_linear ? HOST_DESC_IN_LINEAR : 0) | (out_linear ? HOST_DESC_OUT_LINEAR : 0);
    algo_host_desc_publish(c, HOST_ALGO_TWOSHOT, flags, in_off, out_off);

    nchunks = (nbytes + chunk - 1) / chunk;
    for (size_t k = 0; k <= nchunks; k++) {
        size_t m = 0, lo = 0, hi = 0;
        unsigned slot = 0;

        off = k * chunk;
        if (k < nchunks) {
            m = (nbytes - off < chunk ? nbytes - off : chunk) / es;
            slot = (unsigned)(st->slot++ % HOST_STAGING_SLOTS);
            twoshot_slice(m, es, c->n, c->me, &lo, &hi);
            if (!in_linear) {
                /* peers read every slice but ours, which we reduce from sendbuf itself */
                char *stage = algo_host_staging(c, c->me, slot);
                memcpy(stage, c->sendbuf + off, lo * es);
                memcpy(stage + hi * es, c->sendbuf + off + hi * es, (m - hi) * es);
            }
        }
        status = algo_host_barrier(c);
        if (status != SYMCOLL_OK)
            return status;
        if (k == 0) {
            status = algo_host_desc_collect(c, HOST_ALGO_TWOSHOT);
            if (status != SYMCOLL_OK)
                return status;
        }
        if (hi > lo) {
            for (int r = 0; r < c->n; r++)
                st->srcs[r] = algo_host_in(c, r, k, slot) + lo * es;
            st->srcs[c->me] = c->sendbuf + off + lo * es;
            algo_reduce(algo_host_out(c, c->me, k, slot) + lo * es, st->srcs, c->n, hi - lo,
                        c->dtype, c->op, c->comm->nranks);
        }
        if (k > 0)
            twoshot_gather(c, k - 1, prev_slot);
        prev_slot = slot;
    }
    return c->any_out_linear ? algo_host_barrier(c) : SYMCOLL_OK;
}
