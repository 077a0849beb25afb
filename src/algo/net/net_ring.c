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
#include "algo/net/net.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/reduce.h"

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

/* One ring call, as the receive hook sees it. */
typedef struct ring_run {
    net_call_t *c;
    const ring_layout_t *l;
    int i, n, left;
    const size_t *cbase; /* first chunk index of each block */
    size_t *mbase;       /* first message index of each step; mbase[2n-2]: messages */
    uint64_t seq0;       /* messages from left consumed before this call */
    uint8_t *mode;       /* per message from left: RING_* */
    char *area;
} ring_run_t;

enum { RING_UNSEEN = 0, RING_HOOKED = 1, RING_IN_AREA = 2 };

static int ring_recv_block(int i, int n, int gs)
{
    int b = gs <= n - 2 ? i - gs - 1 : i - (gs - (n - 1));
    return (b % n + n) % n;
}

/* Takes a payload from the left neighbour as it arrives: reduce-scatter data is folded
 * straight into recvbuf, all-gather data copied straight there, so it is not first
 * copied into the receive area and read back. A message whose first payload came
 * before the hook was set, or whose all-gather target still feeds one of our puts, goes
 * to the area as usual, whole; the main loop then handles it. */
static bool ring_hook(void *arg, int sender, uint64_t seq, void *dst, const void *data,
                      size_t len)
{
    ring_run_t *r = arg;
    net_call_t *c = r->c;
    size_t m, k, off, clen, poff;
    int gs = 0, rb;

    if (!algo_net_hook_msg(seq, r->seq0, sender, r->left, r->mbase[2 * r->n - 2], &m))
        return false;
    while (gs + 1 < 2 * r->n - 2 && r->mbase[gs + 1] <= m)
        gs++;
    k = m - r->mbase[gs];
    rb = ring_recv_block(r->i, r->n, gs);
    ring_chunk(r->l, rb, k, &off, &clen);
    if (!algo_net_hook_within(dst, len, r->area + off, clen, &poff))
        return false;
    if (r->mode[m] == RING_UNSEEN) {
        bool ok = poff == 0 &&
                  (gs <= r->n - 2 || ucx_req_done(c->st->ucx, c->st->reqs[r->cbase[rb] + k]));
        r->mode[m] = ok ? RING_HOOKED : RING_IN_AREA;
    }
    if (r->mode[m] != RING_HOOKED)
        return false;
    if (gs <= r->n - 2) {
        const void *srcs[2] = {c->sendbuf + off + poff, data};
        algo_reduce(c->recvbuf + off + poff, srcs, 2, len / c->esize, c->dtype, c->op,
                    gs == r->n - 2 ? c->avg_div : 0);
    } else {
        memcpy(c->recvbuf + off + poff, data, len);
    }
    return true;
}

symcoll_status_t algo_net_ring(net_call_t *c)
{
    const net_group_t *g = c->g;
    int n = g->n, i = g->me;
    int right = g->ranks[(i + 1) % n], left = g->ranks[(i + n - 1) % n];
    ring_layout_t l;
    size_t *cbase, total = 0;
    char *area = algo_net_addr(c->st, c->area_off);
    ring_run_t run;
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
    run.mbase = malloc((size_t)(2 * n - 1) * sizeof(*run.mbase));
    run.mode = NULL;
    if (!cbase || !run.mbase) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (int b = 0; b < n; b++) {
        cbase[b] = total;
        total += ring_nchunks(&l, b);
    }
    status = ring_reqs(c->st, total);
    if (status != SYMCOLL_OK)
        goto out;
    run.mbase[0] = 0;
    for (int gs = 0; gs < 2 * n - 2; gs++)
        run.mbase[gs + 1] = run.mbase[gs] + ring_nchunks(&l, ring_recv_block(i, n, gs));
    run.mode = calloc(run.mbase[2 * n - 2] + 1, 1);
    if (!run.mode) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    run.c = c;
    run.l = &l;
    run.i = i;
    run.n = n;
    run.left = left;
    run.cbase = cbase;
    run.seq0 = c->st->recvd[left];
    run.area = area;
    ucx_set_recv_hook(c->st->ucx, ring_hook, &run);

    for (size_t k = 0; k < ring_nchunks(&l, i) && status == SYMCOLL_OK; k++) {
        size_t off, len;
        ring_chunk(&l, i, k, &off, &len);
        status = ring_forward(c, right, c->sendbuf, off, len, &c->st->reqs[cbase[i] + k]);
    }

    for (int gs = 0; gs < 2 * n - 2 && status == SYMCOLL_OK; gs++) {
        bool rs = gs <= n - 2;
        int rb = ring_recv_block(i, n, gs);
        size_t nc = ring_nchunks(&l, rb);

        for (size_t k = 0; k < nc && status == SYMCOLL_OK; k++) {
            ucx_req_t *slot = &c->st->reqs[cbase[rb] + k];
            size_t off, len;

            ring_chunk(&l, rb, k, &off, &len);
            status = algo_net_wait(c, left);
            if (status != SYMCOLL_OK)
                break;
            if (run.mode[run.mbase[gs] + k] == RING_HOOKED) {
                /* already folded or copied into recvbuf as it arrived */
            } else if (rs) {
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
    ucx_set_recv_hook(c->st->ucx, NULL, NULL);
    free(cbase);
    free(run.mbase);
    free(run.mode);
    return status;
}
