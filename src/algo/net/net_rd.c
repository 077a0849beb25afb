/* Recursive doubling all-reduce across nodes, for small messages.
 *
 * With p2 the largest power of two <= n and rem = n - p2, the first 2*rem ranks pair up:
 * each even one sends its vector to the odd one above it, which folds it in (lower rank
 * first) and stands for both; the others stand for themselves. The p2 remaining ranks
 * then run log2(p2) butterfly steps: at step k, virtual ranks v and v ^ 2^k swap their
 * partial results and both compute (lower virtual rank's value) op (upper's), so that the
 * two compute the very same bits, and by induction every rank ends with identical bits.
 * Finally every odd rank of the first 2*rem sends the result back to its even partner.
 * AVG sums throughout and divides once, in the last step.
 *
 * Each step receives into its own slot of the receive area, so a partner running one
 * step ahead never overwrites data still being reduced; each message carries its flag
 * (algo_net_send), and the receiver waits for the flag. The slots split the reserved area
 * evenly (log2(p2) + 2 of them), so where they lie depends on the reservation, which all
 * ranks share, not on the count: ranks called with different counts (a mismatch the
 * agreement reports) still write inside each other's slots.
 *
 * Agreement (c->check): each message carries the sender's tag and its verdict so far. By
 * induction over the steps, after step k a rank's verdict covers every rank of its block
 * of 2^(k+1) virtual ranks (its own block's verdict, the partner's block's, and the two
 * tags compared); the paired ranks fold into the odd ones' verdict and get the final one
 * back with the result. So every rank ends knowing whether all agree, from the messages
 * rd sends anyway.
 */
#include "algo/net/net.h"

#include <string.h>

#include "algo/base/reduce.h"

static int net_log2(int p2)
{
    int l = 0;
    while ((1 << (l + 1)) <= p2)
        l++;
    return l;
}

size_t algo_net_rd_area(size_t count, size_t esize, int n)
{
    size_t slot = (count * esize + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    int p2 = 1 << net_log2(n);
    return slot * (size_t)(net_log2(p2) + 2);
}

/* Bytes of a slot: the reserved area split evenly, whole lines. */
static size_t net_rd_slot(const net_state_t *st, int lg)
{
    return st->area_bytes / (size_t)(lg + 2) / POOL_ALIGN * POOL_ALIGN;
}

/* Group rank standing for virtual rank v. */
static int net_rd_real(int v, int rem)
{
    return v < rem ? 2 * v + 1 : v + rem;
}

symcoll_status_t algo_net_alone(net_call_t *c)
{
    if (c->avg_div > 0)
        algo_reduce_avg_finish(c->recvbuf, c->sendbuf, c->count, c->dtype, c->avg_div);
    else if (c->recvbuf != c->sendbuf)
        memcpy(c->recvbuf, c->sendbuf, c->count * c->esize);
    return SYMCOLL_OK;
}

symcoll_status_t algo_net_rd(net_call_t *c)
{
    const net_group_t *g = c->g;
    int n = g->n, i = g->me;
    int lg = net_log2(n), p2 = 1 << lg, rem = n - p2, v;
    size_t bytes = c->count * c->esize;
    size_t slot = net_rd_slot(c->st, lg);
    /* what the messages carry: nothing when only agreeing */
    size_t len = c->header_only ? 0 : bytes;
    bool data = !c->header_only;
    const char *cur = c->sendbuf;
    const void *srcs[2];
    ucx_req_t req;
    symcoll_status_t status;

    if (n == 1)
        return data ? algo_net_alone(c) : SYMCOLL_OK;

    if (i < 2 * rem && i % 2 == 0) {
        int up = g->ranks[i + 1];
        status = algo_net_send(c, up, c->sendbuf, len, c->area_off, &req);
        if (status == SYMCOLL_OK)
            status = algo_net_wait(c, up);
        /* the result overwrites recvbuf, which may be sendbuf: the put must be done */
        if (status == SYMCOLL_OK)
            status = algo_net_req_wait(c, req);
        if (status == SYMCOLL_OK && data)
            memcpy(c->recvbuf, algo_net_addr(c->st, c->area_off + (size_t)(lg + 1) * slot),
                   bytes);
        return status;
    }
    if (i < 2 * rem) {
        int down = g->ranks[i - 1];
        status = algo_net_wait(c, down);
        if (status != SYMCOLL_OK)
            return status;
        srcs[0] = algo_net_addr(c->st, c->area_off);
        srcs[1] = c->sendbuf;
        if (data)
            algo_reduce(c->recvbuf, srcs, 2, c->count, c->dtype, c->op, 0);
        cur = c->recvbuf;
        v = i / 2;
    } else {
        v = i - rem;
    }

    for (int k = 0; k < lg; k++) {
        int pv = v ^ (1 << k), partner = g->ranks[net_rd_real(pv, rem)];
        size_t off = c->area_off + (size_t)(k + 1) * slot;
        const void *theirs = algo_net_addr(c->st, off);

        status = algo_net_send(c, partner, cur, len, off, &req);
        if (status == SYMCOLL_OK)
            status = algo_net_wait(c, partner);
        /* recvbuf (maybe cur) is about to change: our put must have left it */
        if (status == SYMCOLL_OK)
            status = algo_net_req_wait(c, req);
        if (status != SYMCOLL_OK)
            return status;
        srcs[0] = v < pv ? (const void *)cur : theirs;
        srcs[1] = v < pv ? theirs : (const void *)cur;
        if (data)
            algo_reduce(c->recvbuf, srcs, 2, c->count, c->dtype, c->op,
                        k == lg - 1 ? c->avg_div : 0);
        cur = c->recvbuf;
    }

    if (i < 2 * rem) {
        /* the dispatcher completes this last send before returning */
        return algo_net_send(c, g->ranks[i - 1], c->recvbuf, len,
                             c->area_off + (size_t)(lg + 1) * slot, &req);
    }
    return SYMCOLL_OK;
}
