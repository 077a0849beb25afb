/* Ring all-reduce across nodes, for large messages.
 *
 * The count is split into n blocks (block b of rank i's ring position). Reduce-scatter:
 * at step s (0 <= s < n-1) rank i sends block i-s to its right neighbour and receives
 * block i-s-1 from its left, folding it into its own copy; after n-1 steps rank i holds
 * block i+1 fully reduced (AVG divides it there, once). All-gather: at step t rank i
 * passes block i+1-t on and receives block i-t, which it copies out. Every final block
 * is computed by one rank and copied by the others, so all ranks end with the same bits.
 *
 * Pipelining: blocks travel in chunks of SYMCOLL_NET_CHUNK_SIZE. Each chunk is put
 * straight into the right neighbour's receive area (pool memory registered with UCX, at
 * the chunk's own offset) with its flag; as soon as a chunk arrives it is reduced
 * and forwarded, so the transfer of chunk k+1 overlaps the reduction of chunk k and the
 * two halves of the algorithm overlap too. Step 0 sends straight from the caller's
 * buffer, so nothing is staged on the way out.
 *
 * Reuse of the receive area: block b's chunk is received at most twice per call (once
 * reduce-scattered, once all-gathered); the all-gathered copy can only exist after this
 * rank folded the first one in, since the chain that produces it runs through this rank.
 * Consecutive calls alternate between two areas (see net.h).
 */
#include "algo/net.h"

#include <stdlib.h>
#include <string.h>

#include "algo/reduce.h"

size_t algo_net_ring_area(size_t count, size_t esize, int n)
{
    (void)n;
    return count * esize;
}

typedef struct ring_layout {
    size_t count, esize, ce; /* elements per chunk */
    int n;
} ring_layout_t;

static size_t ring_nchunks(const ring_layout_t *l, int b)
{
    size_t start, len;
    algo_net_block(l->count, l->n, b, &start, &len);
    return (len + l->ce - 1) / l->ce;
}

/* Byte offset and length of chunk k of block b. */
static void ring_chunk(const ring_layout_t *l, int b, size_t k, size_t *off, size_t *len)
{
    size_t start, blen, first = k * l->ce;
    algo_net_block(l->count, l->n, b, &start, &blen);
    *off = (start + first) * l->esize;
    *len = (blen - first < l->ce ? blen - first : l->ce) * l->esize;
}

static symcoll_status_t ring_reqs(net_state_t *st, size_t total)
{
    if (total > st->nreqs_cap) {
        ucx_req_t *r = realloc(st->reqs, total * sizeof(*r));
        if (!r) {
            log_error("all-reduce: out of memory for %zu ring requests", total);
            return SYMCOLL_ERR_NO_MEMORY;
        }
        st->reqs = r;
        st->nreqs_cap = total;
    }
    memset(st->reqs, 0, total * sizeof(*st->reqs));
    return SYMCOLL_OK;
}

static symcoll_status_t ring_forward(net_call_t *c, int right, const char *src, size_t off,
                                     size_t len, ucx_req_t *slot)
{
    symcoll_status_t status = algo_net_req_wait(c, *slot);
    *slot = NULL;
    if (status == SYMCOLL_OK)
        status = algo_net_send(c, right, src + off, len, c->area_off + off, slot);
    return status;
}

symcoll_status_t algo_net_ring(net_call_t *c)
{
    const net_group_t *g = c->g;
    int n = g->n, i = g->me;
    int right = g->ranks[(i + 1) % n], left = g->ranks[(i + n - 1) % n];
    ring_layout_t l;
    size_t *cbase, total = 0;
    const char *area = algo_net_addr(c->st, c->area_off);
    symcoll_status_t status = SYMCOLL_OK;

    if (n == 1)
        return algo_net_rd(c);
    l.count = c->count;
    l.esize = c->esize;
    l.n = n;
    l.ce = c->st->chunk_bytes / c->esize;
    if (l.ce == 0)
        l.ce = 1;
    cbase = malloc((size_t)n * sizeof(*cbase));
    if (!cbase)
        return SYMCOLL_ERR_NO_MEMORY;
    for (int b = 0; b < n; b++) {
        cbase[b] = total;
        total += ring_nchunks(&l, b);
    }
    status = ring_reqs(c->st, total);
    if (status != SYMCOLL_OK)
        goto out;

    for (size_t k = 0; k < ring_nchunks(&l, i) && status == SYMCOLL_OK; k++) {
        size_t off, len;
        ring_chunk(&l, i, k, &off, &len);
        status = ring_forward(c, right, c->sendbuf, off, len, &c->st->reqs[cbase[i] + k]);
    }

    for (int gs = 0; gs < 2 * n - 2 && status == SYMCOLL_OK; gs++) {
        bool rs = gs <= n - 2;
        int rb = rs ? ((i - gs - 1) % n + n) % n : ((i - (gs - (n - 1))) % n + n) % n;
        size_t nc = ring_nchunks(&l, rb);

        for (size_t k = 0; k < nc && status == SYMCOLL_OK; k++) {
            ucx_req_t *slot = &c->st->reqs[cbase[rb] + k];
            size_t off, len;

            ring_chunk(&l, rb, k, &off, &len);
            status = algo_net_wait(c, left);
            if (status != SYMCOLL_OK)
                break;
            if (rs) {
                const void *srcs[2] = {c->sendbuf + off, area + off};
                algo_reduce(c->recvbuf + off, srcs, 2, len / c->esize, c->dtype, c->op,
                            gs == n - 2 ? c->avg_div : 0);
            } else {
                /* recvbuf may still feed an earlier put of this chunk */
                status = algo_net_req_wait(c, *slot);
                *slot = NULL;
                if (status != SYMCOLL_OK)
                    break;
                memcpy(c->recvbuf + off, area + off, len);
            }
            if (gs < 2 * n - 3)
                status = ring_forward(c, right, c->recvbuf, off, len, slot);
        }
    }
    for (size_t k = 0; k < total && status == SYMCOLL_OK; k++) {
        status = algo_net_req_wait(c, c->st->reqs[k]);
        c->st->reqs[k] = NULL;
    }
out:
    free(cbase);
    return status;
}
