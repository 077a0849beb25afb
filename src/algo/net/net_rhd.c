/* Recursive halving and doubling all-reduce across nodes, for large messages in the
 * canonical reduction order (algo/base/reduce.h).
 *
 * The first 2*rem ranks fold in pairs as in recursive doubling (net_rd.c: each even one
 * sends its vector to the odd one above it, which reduces lower first and stands for
 * both), leaving p2 virtual ranks. The vector is cut into p2 blocks. Reduce-scatter by
 * recursive halving with the distance doubling: at step k (k = 0 .. log2(p2) - 1) the
 * virtual ranks v and v ^ 2^k hold the same range of blocks; v keeps its upper half when
 * bit k of v is set (else the lower one), sends the other half to its partner and reduces
 * the half it keeps with the partner's copy of it, lower virtual rank first. So after step
 * k every block a rank keeps is the sum over an aligned group of 2^(k+1) virtual ranks,
 * built pairwise, neighbours first: the canonical tree, the very tree recursive doubling
 * builds, but each rank sends (p2 - 1) / p2 of the vector instead of all of it at every
 * step. AVG divides in the last step, once. All-gather by recursive doubling in the
 * opposite order of distances: each step swaps the ranges the two partners own. Last, the
 * odd ranks of the first 2*rem send the result back to their even partners.
 *
 * Every step receives into its own slot of the receive area (the fold's, one per halving
 * step, one per doubling step, the result's), so a partner one step ahead never writes
 * over data still being read; every put is complete before its source range is written
 * again (the all-gather writes the ranges the halving sent away).
 */
#include "algo/net/net.h"

#include <string.h>

#include "algo/base/reduce.h"

static int rhd_log2(int n)
{
    int l = 0;
    while ((2 << l) <= n)
        l++;
    return l;
}

static size_t rhd_round(size_t bytes)
{
    return (bytes + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
}

/* Bytes of the slot of halving (or doubling) step k: the most one range of
 * p2 >> (k + 1) blocks can hold. */
static size_t rhd_step_slot(size_t count, size_t esize, int p2, int k)
{
    size_t most = (count + (size_t)p2 - 1) / (size_t)p2;
    return rhd_round((size_t)(p2 >> (k + 1)) * most * esize);
}

/* Offsets in the area: the fold's slot, the halving steps', the doubling steps', the
 * result's. */
typedef struct rhd_layout {
    size_t fold, half[32], dbl[32], back, total;
} rhd_layout_t;

static void rhd_layout(size_t count, size_t esize, int n, rhd_layout_t *l)
{
    int lg = rhd_log2(n), p2 = 1 << lg;
    size_t full = rhd_round(count * esize), off = full;

    l->fold = 0;
    for (int k = 0; k < lg; k++) {
        l->half[k] = off;
        off += rhd_step_slot(count, esize, p2, k);
    }
    for (int k = 0; k < lg; k++) {
        l->dbl[k] = off;
        off += rhd_step_slot(count, esize, p2, k);
    }
    l->back = off;
    l->total = off + full;
}

size_t algo_net_rhd_area(size_t count, size_t esize, int n)
{
    rhd_layout_t l;
    rhd_layout(count, esize, n, &l);
    return l.total;
}

/* Group rank standing for virtual rank v (as in net_rd.c). */
static int rhd_real(int v, int rem)
{
    return v < rem ? 2 * v + 1 : v + rem;
}

/* Elements [*start, *start + *len) of blocks [b0, b0 + nb) of p2. */
static void rhd_range(size_t count, int p2, int b0, int nb, size_t *start, size_t *len)
{
    size_t s, e, l;
    algo_net_block(count, p2, b0, &s, &l);
    if (b0 + nb >= p2) {
        e = count;
    } else {
        algo_net_block(count, p2, b0 + nb, &e, &l);
    }
    *start = s;
    *len = e - s;
}

/* Sends len bytes to rank's offset off, waits for rank's next message and for our put. */
static symcoll_status_t rhd_swap(net_call_t *c, int rank, const void *src, size_t len,
                                 size_t off)
{
    ucx_req_t req;
    symcoll_status_t status = algo_net_send(c, rank, src, len, off, &req);

    if (status == SYMCOLL_OK)
        status = algo_net_wait(c, rank);
    if (status == SYMCOLL_OK)
        status = algo_net_req_wait(c, req);
    return status;
}

symcoll_status_t algo_net_rhd(net_call_t *c)
{
    const net_group_t *g = c->g;
    int n = g->n, i = g->me, lg = rhd_log2(n), p2 = 1 << lg, rem = n - p2, v;
    size_t es = c->esize, bytes = c->count * es;
    const char *cur = c->sendbuf;
    const void *srcs[2];
    rhd_layout_t l;
    int b0 = 0, nb = p2;
    symcoll_status_t status;

    if (n == 1)
        return algo_net_alone(c);
    rhd_layout(c->count, es, n, &l);

    if (i < 2 * rem && i % 2 == 0) {
        int up = g->ranks[i + 1];
        status = rhd_swap(c, up, c->sendbuf, bytes, c->area_off + l.fold);
        if (status == SYMCOLL_OK)
            memcpy(c->recvbuf, algo_net_addr(c->st, c->area_off + l.back), bytes);
        return status;
    }
    if (i < 2 * rem) {
        int down = g->ranks[i - 1];
        status = algo_net_wait(c, down);
        if (status != SYMCOLL_OK)
            return status;
        srcs[0] = algo_net_addr(c->st, c->area_off + l.fold);
        srcs[1] = c->sendbuf;
        algo_reduce(c->recvbuf, srcs, 2, c->count, c->dtype, c->op, 0);
        cur = c->recvbuf;
        v = i / 2;
    } else {
        v = i - rem;
    }

    /* reduce-scatter: after step k this rank keeps blocks [b0, b0 + nb), nb = p2 >> (k+1) */
    for (int k = 0; k < lg; k++) {
        int pv = v ^ (1 << k), partner = g->ranks[rhd_real(pv, rem)], half = nb / 2;
        bool upper = (v >> k) & 1;
        size_t ks, kl, ss, sl;
        const char *mine = k == 0 ? cur : c->recvbuf;

        rhd_range(c->count, p2, upper ? b0 + half : b0, half, &ks, &kl);
        rhd_range(c->count, p2, upper ? b0 : b0 + half, half, &ss, &sl);
        status = rhd_swap(c, partner, mine + ss * es, sl * es, c->area_off + l.half[k]);
        if (status != SYMCOLL_OK)
            return status;
        srcs[0] = v < pv ? (const void *)(mine + ks * es)
                         : algo_net_addr(c->st, c->area_off + l.half[k]);
        srcs[1] = v < pv ? algo_net_addr(c->st, c->area_off + l.half[k])
                         : (const void *)(mine + ks * es);
        algo_reduce(c->recvbuf + ks * es, srcs, 2, kl, c->dtype, c->op,
                    k == lg - 1 ? c->avg_div : 0);
        b0 = upper ? b0 + half : b0;
        nb = half;
    }

    /* all-gather: step k swaps this rank's range with its partner's, doubling it */
    for (int k = lg - 1; k >= 0; k--) {
        int pv = v ^ (1 << k), partner = g->ranks[rhd_real(pv, rem)];
        bool upper = (v >> k) & 1;
        int pb0 = upper ? b0 - nb : b0 + nb;
        size_t ms, ml, ps, pl;

        rhd_range(c->count, p2, b0, nb, &ms, &ml);
        rhd_range(c->count, p2, pb0, nb, &ps, &pl);
        status = rhd_swap(c, partner, c->recvbuf + ms * es, ml * es, c->area_off + l.dbl[k]);
        if (status != SYMCOLL_OK)
            return status;
        memcpy(c->recvbuf + ps * es, algo_net_addr(c->st, c->area_off + l.dbl[k]), pl * es);
        b0 = upper ? pb0 : b0;
        nb *= 2;
    }

    if (i < 2 * rem) {
        ucx_req_t req;
        /* the dispatcher completes this last send before returning */
        return algo_net_send(c, g->ranks[i - 1], c->recvbuf, bytes, c->area_off + l.back, &req);
    }
    return SYMCOLL_OK;
}
