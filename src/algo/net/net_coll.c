/* Reduce-scatter, all-gather and broadcast of host memory across nodes: pipelined rings
 * (and a chain) over all ranks, after the same agreement the all-reduce runs; with two
 * ranks where the all-reduce runs recursive doubling, each is one exchange that carries
 * the agreement (coll_pair); small broadcasts are eager (net_bc.c).
 *
 * The ranks stand in a ring by node, then local rank (net_state's ring), so that the
 * ring crosses between nodes as few times as it can; a rank sends to the next one
 * (right) and receives from the one before (left): over UCX to another node, through the
 * pool mapping inside a node (algo_net_send). Data travels in chunks of
 * SYMCOLL_NET_CHUNK_SIZE (whole elements), each put straight into the right neighbour's
 * receive area, at the offset its data has in the whole buffer, with its flag; a rank
 * handles a chunk as soon as it arrives, so the transfer of one chunk overlaps the work
 * on the previous one and the steps overlap too.
 *
 * All-gather (n blocks, rank r's at block r): at step s a rank receives the block of the
 * rank s + 1 places to its left in the ring and, but at the last step, forwards it from
 * where it landed (recvbuf, or the receive area); step 0 sends its own block straight
 * from the caller's buffer, then copies it to its own output. Every block crosses each
 * link of the ring once at most: (n-1)/n of the output per rank.
 *
 * Reduce-scatter (NCCL's layout: rank r gets block r): at step 0 a rank sends its input
 * of the block of its left neighbour; at step s it receives the partial sum of the block
 * of the rank s + 2 places to its left, folds its own input into it in its receive area
 * and forwards it from there; at the last step the block is its own, folded into recvbuf
 * (AVG divides there, once).
 *
 * Broadcast: a chain from the root around the ring; every rank but the root receives each
 * chunk and forwards it (but the last one) from where it landed. Received all-gather and
 * broadcast data lands in recvbuf itself where it comes as active messages (coll_hook),
 * else in the receive area, copied out after it is forwarded.
 *
 * Every part of a receive area or of recvbuf is written once per call, and the puts'
 * sources (the caller's input, recvbuf, the receive area) do not change during the call
 * once sent from, so the puts are only completed at the end. The agreement that opens a
 * call ends only once every rank has entered it, so nobody still reads the receive area
 * of this call's parity (net.h).
 */
#include "algo/net/net.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/base/reduce.h"
#include "topo/topo.h"

/* The agreement of a call whose every all-reduce is hierarchical: the hierarchical
 * algorithm's own steps without data (hier.c), so that a rank in an all-reduce and a rank
 * here meet in the same messages and barriers. c is the call over the group of this
 * rank's local index. */
static symcoll_status_t coll_agree_hier(net_state_t *st, net_call_t *c, deadline_t *dl,
                                        const net_sig_t *sig, net_group_t *g)
{
    const topo_t *t = st->comm->topo;
    symcoll_status_t status;
    bool bad = false;

    algo_net_local_index_group(st, g);
    algo_net_call_init(c, st, g, NULL, NULL, 0, sig->dtype, sig->op, dl, sig);
    algo_net_hier_publish(st, NET_WORD_HIER_TAG, c->tag);
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; j < t->local_size; j++) {
        uint64_t tag = algo_net_hier_peek(st, t->local_ranks[j], NET_WORD_HIER_TAG);
        if (tag != c->tag && c->bad_peer < 0) {
            c->bad_peer = t->local_ranks[j];
            c->bad_tag = tag;
        }
        bad |= tag != c->tag;
    }
    if (bad)
        c->tag |= NET_TAG_BAD;
    c->check = true;
    c->header_only = true;
    status = algo_net_rd(c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_hier_publish(st, NET_WORD_HIER_BAD, (c->tag & NET_TAG_BAD) != 0);
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; j < t->local_size; j++)
        if (algo_net_hier_peek(st, t->local_ranks[j], NET_WORD_HIER_BAD))
            c->tag |= NET_TAG_BAD;
    return SYMCOLL_OK;
}

/* The agreement of the flat all-reduce (net_allreduce.c): recursive doubling over all ranks
 * in rank order, messages without data. */
static symcoll_status_t coll_agree_flat(net_state_t *st, net_call_t *c, deadline_t *dl,
                                        const net_sig_t *sig, net_group_t *g)
{
    symcoll_status_t status;

    g->ranks = st->all;
    g->n = st->n;
    g->me = st->comm->rank;
    algo_net_call_init(c, st, g, NULL, NULL, 0, sig->dtype, sig->op, dl, sig);
    c->check = true;
    c->header_only = true;
    status = algo_net_rd(c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    return status;
}

/* One call's ring: chunks of ce elements of esize bytes, blocks of block bytes. */
typedef struct coll_ring {
    net_call_t *c;
    const int *ord; /* ranks in ring order */
    int n, p;       /* ranks; this rank's place */
    int left, right;
    size_t esize, chunk, block;
    char *area;
} coll_ring_t;

/* Rank at ring place p + d. */
static int coll_at(const coll_ring_t *r, int d)
{
    return r->ord[((r->p + d) % r->n + r->n) % r->n];
}

static size_t coll_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/*
 * Where transfers arrive as active messages (TCP), the payloads of all-gather and
 * broadcast go straight from UCX's receive buffer into recvbuf (the hook below) rather
 * than into the receive area and then out of it: one copy of every received byte
 * instead of two. The area mirrors recvbuf's layout (a block at its offset in the
 * output), so a payload bound for area + x belongs at recvbuf + x. The messages from the
 * left neighbour come in the order the loops below consume them; a message whose first
 * payload arrived before the hook was set (during the agreement, or on the two-rank
 * exchange during the previous call or between calls) goes to the area whole, and the
 * loop copies it out as before.
 */
enum { COLL_UNSEEN, COLL_HOOKED, COLL_IN_AREA };

typedef struct coll_hook {
    const coll_ring_t *r;
    uint64_t seq0;       /* messages from the left neighbour before this call's data */
    size_t nmsg, nck;    /* this call's messages from it; chunks per block */
    bool bcast;          /* one block at offset 0, else all-gather's blocks by ring place */
    char *out;           /* where area + x belongs: out + x */
    unsigned char *mode; /* per message: COLL_* (own[] when they fit) */
    unsigned char own[16];
} coll_hook_t;

/* Area offset and length of message m (from 0) from the left neighbour. */
static void coll_msg(const coll_hook_t *h, size_t m, size_t *off, size_t *len)
{
    const coll_ring_t *r = h->r;
    size_t step = m / h->nck, k = (m % h->nck) * r->chunk;

    *off = (h->bcast ? 0 : (size_t)coll_at(r, -(int)step - 1) * r->block) + k;
    *len = coll_min(r->chunk, r->block - k);
}

static bool coll_hook(void *arg, int sender, uint64_t seq, void *dst, const void *data,
                      size_t len)
{
    coll_hook_t *h = arg;
    const coll_ring_t *r = h->r;
    size_t m, off, mlen, poff;

    if (!algo_net_hook_msg(seq, h->seq0, sender, r->left, h->nmsg, &m))
        return false;
    coll_msg(h, m, &off, &mlen);
    if (!algo_net_hook_within(dst, len, r->area + off, mlen, &poff))
        return false;
    if (h->mode[m] == COLL_UNSEEN)
        h->mode[m] = poff == 0 ? COLL_HOOKED : COLL_IN_AREA;
    if (h->mode[m] != COLL_HOOKED)
        return false;
    memcpy(h->out + off + poff, data, len);
    return true;
}

/* Sets the hook for nmsg messages from the left neighbour (out of memory: no hook, and
 * everything goes through the area). */
static void coll_hook_set(coll_hook_t *h, const coll_ring_t *r, size_t nmsg, size_t nck,
                          bool bcast)
{
    net_state_t *st = r->c->st;

    h->r = r;
    h->bcast = bcast;
    h->out = r->c->recvbuf;
    h->seq0 = st->recvd[r->left];
    h->nmsg = nmsg;
    h->nck = nck;
    h->mode = !nmsg ? NULL : nmsg <= sizeof(h->own) ? h->own : calloc(nmsg, 1);
    if (h->mode == h->own)
        memset(h->own, 0, nmsg);
    if (h->mode)
        ucx_set_recv_hook(st->ucx, coll_hook, h);
}

static void coll_hook_clear(coll_hook_t *h)
{
    if (h->mode)
        ucx_set_recv_hook(h->r->c->st->ucx, NULL, NULL);
    if (h->mode != h->own)
        free(h->mode);
    h->mode = NULL;
}

/* Whether message m's payloads went straight to recvbuf (else they are in the area). */
static bool coll_hooked(const coll_hook_t *h, size_t m)
{
    return h->mode && h->mode[m] == COLL_HOOKED;
}

/* Sends len bytes from src to bytes [off, off + len) of right's receive area, in
 * chunks. */
static symcoll_status_t coll_send_chunks(coll_ring_t *r, const char *src, size_t off,
                                         size_t len)
{
    symcoll_status_t status = SYMCOLL_OK;
    ucx_req_t req;

    for (size_t k = 0; k < len && status == SYMCOLL_OK; k += r->chunk)
        status = algo_net_send(r->c, r->right, src + k, coll_min(r->chunk, len - k),
                               r->c->area_off + off + k, &req);
    return status;
}

static symcoll_status_t coll_allgather(coll_ring_t *r)
{
    net_call_t *c = r->c;
    size_t own = (size_t)coll_at(r, 0) * r->block, nck = (r->block + r->chunk - 1) / r->chunk;
    coll_hook_t h;
    symcoll_status_t status;

    coll_hook_set(&h, r, (size_t)(r->n - 1) * nck, nck, false);
    status = coll_send_chunks(r, c->sendbuf, own, r->block);
    if (c->recvbuf + own != c->sendbuf)
        memcpy(c->recvbuf + own, c->sendbuf, r->block);
    for (int s = 0; s < r->n - 1 && status == SYMCOLL_OK; s++) {
        size_t off = (size_t)coll_at(r, -s - 1) * r->block;
        for (size_t k = 0; k < r->block && status == SYMCOLL_OK; k += r->chunk) {
            size_t len = coll_min(r->chunk, r->block - k);
            bool hooked;
            ucx_req_t req;

            status = algo_net_wait(c, r->left);
            hooked = coll_hooked(&h, (size_t)s * nck + k / r->chunk);
            if (status == SYMCOLL_OK && s < r->n - 2)
                status = algo_net_send(c, r->right, (hooked ? c->recvbuf : r->area) + off + k,
                                       len, c->area_off + off + k, &req);
            if (status == SYMCOLL_OK && !hooked)
                memcpy(c->recvbuf + off + k, r->area + off + k, len);
        }
    }
    coll_hook_clear(&h);
    return status;
}

static symcoll_status_t coll_reduce_scatter(coll_ring_t *r)
{
    net_call_t *c = r->c;
    size_t first = (size_t)coll_at(r, -1) * r->block;
    symcoll_status_t status = coll_send_chunks(r, c->sendbuf + first, first, r->block);

    for (int s = 0; s < r->n - 1 && status == SYMCOLL_OK; s++) {
        bool last = s == r->n - 2;
        size_t off = (size_t)coll_at(r, -s - 2) * r->block;
        for (size_t k = 0; k < r->block && status == SYMCOLL_OK; k += r->chunk) {
            size_t len = coll_min(r->chunk, r->block - k);
            char *part = r->area + off + k;
            const void *srcs[2] = {c->sendbuf + off + k, part};
            ucx_req_t req;

            status = algo_net_wait(c, r->left);
            if (status != SYMCOLL_OK)
                break;
            algo_reduce(last ? c->recvbuf + k : part, srcs, 2, len / r->esize, c->dtype, c->op,
                        last ? c->avg_div : 0);
            if (!last)
                status = algo_net_send(c, r->right, part, len, c->area_off + off + k, &req);
        }
    }
    return status;
}

static symcoll_status_t coll_broadcast(coll_ring_t *r, int root_place)
{
    net_call_t *c = r->c;
    int q = ((r->p - root_place) % r->n + r->n) % r->n; /* places after the root */
    size_t nck = (r->block + r->chunk - 1) / r->chunk;
    coll_hook_t h;
    symcoll_status_t status = SYMCOLL_OK;

    if (q == 0) {
        /* the transfer first: the copy into our own output overlaps it */
        status = coll_send_chunks(r, c->sendbuf, 0, r->block);
        if (c->recvbuf != c->sendbuf)
            memcpy(c->recvbuf, c->sendbuf, r->block);
        return status;
    }
    coll_hook_set(&h, r, nck, nck, true);
    for (size_t k = 0; k < r->block && status == SYMCOLL_OK; k += r->chunk) {
        size_t len = coll_min(r->chunk, r->block - k);
        bool hooked;
        ucx_req_t req;

        status = algo_net_wait(c, r->left);
        hooked = coll_hooked(&h, k / r->chunk);
        if (status == SYMCOLL_OK && q < r->n - 1)
            status = algo_net_send(c, r->right, (hooked ? c->recvbuf : r->area) + k, len,
                                   c->area_off + k, &req);
        if (status == SYMCOLL_OK && !hooked)
            memcpy(c->recvbuf + k, r->area + k, len);
    }
    coll_hook_clear(&h);
    return status;
}

/* The call, after the agreement: its receive area, then the ring, to completion. */
static symcoll_status_t coll_run(net_state_t *st, net_call_t *c, const algo_args_t *a)
{
    size_t esize = symcoll_dtype_size(a->dtype), bytes = a->count * esize;
    size_t ce = st->chunk_bytes / esize;
    bool bcast = a->coll == TOPO_COLL_BROADCAST;
    net_group_t ring = {st->ring, st->n, st->ring_me};
    coll_ring_t r = {c, st->ring, st->n, st->ring_me, 0, 0, esize, 0, bytes, NULL};
    int root_place = 0;
    symcoll_status_t status;

    status = algo_net_reserve(st, 0, 0, bcast ? bytes : bytes * (size_t)st->n);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_call_area(c);
    c->g = &ring;
    c->check = false;
    c->header_only = false;
    c->sendbuf = a->sendbuf;
    c->recvbuf = a->recvbuf;
    c->count = a->count;
    r.left = coll_at(&r, -1);
    r.right = coll_at(&r, 1);
    r.chunk = (ce ? ce : 1) * esize;
    r.area = algo_net_addr(st, c->area_off);
    switch (a->coll) {
    case TOPO_COLL_ALLGATHER:
        status = coll_allgather(&r);
        break;
    case TOPO_COLL_REDUCE_SCATTER:
        status = coll_reduce_scatter(&r);
        break;
    case TOPO_COLL_BROADCAST:
        while (st->ring[root_place] != a->root)
            root_place++;
        status = coll_broadcast(&r, root_place);
        break;
    default:
        status = SYMCOLL_ERR_INTERNAL;
        break;
    }
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, c->dl);
    c->g = NULL;
    return status;
}

/* Two ranks where the all-reduce's plan is recursive doubling (the caller checked; up to
 * 16 x SYMCOLL_NET_RD_MAX by default, any size when SYMCOLL_ALGO=rd forces it): one
 * exchange moves the block, in one put, and carries the agreement, as recursive
 * doubling's does for the all-reduce, instead of an agreement round trip before the ring
 * or chain. All-gather: each rank sends its block; reduce-scatter: its input of the
 * peer's block, and reduces its own with the peer's, lower rank first; broadcast: the
 * root sends the data, the receiver a message without data (its tag: the agreement, and
 * the root's next call of this parity waits for it, so the area is not reused early).
 * Received all-gather and broadcast data goes straight to recvbuf (coll_hook).
 * Where the block does not fit the receive area yet, the agreement goes first without
 * data, so that only ranks known to agree grow the scratch (net_run_flat). */
static symcoll_status_t coll_pair(net_state_t *st, deadline_t *dl, const net_sig_t *sig,
                                  const algo_args_t *a)
{
    size_t es = symcoll_dtype_size(a->dtype), block = a->count * es;
    int me = st->comm->rank, peer = 1 - me;
    net_group_t g = {st->all, 2, me};
    bool fits = st->has_scratch && block <= st->area_bytes;
    bool gather = a->coll == TOPO_COLL_ALLGATHER, bcast = a->coll == TOPO_COLL_BROADCAST;
    bool hooked;
    coll_ring_t ring = {NULL, st->all, 2, me, peer, peer, es, 0, 0, NULL};
    coll_hook_t h = {0};
    const char *theirs;
    net_call_t c;
    ucx_req_t req;
    symcoll_status_t status = SYMCOLL_OK;

    algo_net_call_init(&c, st, &g, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, dl, sig);
    c.check = true;
    if (!fits) {
        c.header_only = true;
        status = algo_net_rd(&c);
        if (status == SYMCOLL_OK)
            status = ucx_wait_all(st->ucx, dl);
        if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
            return algo_net_mismatch(st, &c, sig, true);
        if (status == SYMCOLL_OK)
            status = algo_net_reserve(st, 0, 0, block);
        if (status != SYMCOLL_OK)
            return status;
        c.check = false;
    }
    algo_net_call_area(&c);
    c.header_only = false;
    theirs = algo_net_addr(st, c.area_off);
    if (bcast || gather) {
        /* what the peer sends lands in our output: the hook takes it there */
        ring.c = &c;
        ring.left = peer;
        ring.chunk = ring.block = block;
        ring.area = (char *)theirs;
        coll_hook_set(&h, &ring, !bcast || me != a->root ? 1 : 0, 1, true);
        h.out = a->recvbuf + (gather ? (size_t)peer * block : 0);
    }
    /* a broadcast's receiver sends no data (its sendbuf may be NULL): its message is its
     * half of the agreement */
    if (bcast && me != a->root)
        status = algo_net_send(&c, peer, NULL, 0, c.area_off, &req);
    else
        status =
            algo_net_send(&c, peer, a->sendbuf + (gather || bcast ? 0 : (size_t)peer * block),
                          block, c.area_off, &req);
    if (status == SYMCOLL_OK && bcast && me == a->root && a->recvbuf != a->sendbuf)
        memcpy(a->recvbuf, a->sendbuf, block);
    if (status == SYMCOLL_OK)
        status = algo_net_wait(&c, peer);
    hooked = coll_hooked(&h, 0);
    coll_hook_clear(&h);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
        return algo_net_mismatch(st, &c, sig, true);
    if (status != SYMCOLL_OK)
        return status;
    if (bcast) {
        if (me != a->root && !hooked)
            memcpy(a->recvbuf, theirs, block);
    } else if (gather) {
        char *own = a->recvbuf + (size_t)me * block;
        if (!hooked)
            memcpy(a->recvbuf + (size_t)peer * block, theirs, block);
        if (a->sendbuf != own)
            memcpy(own, a->sendbuf, block);
    } else {
        const char *mine = a->sendbuf + (size_t)me * block;
        const void *srcs[2] = {me == 0 ? (const void *)mine : theirs,
                               me == 0 ? theirs : (const void *)mine};
        algo_reduce(a->recvbuf, srcs, 2, a->count, a->dtype, a->op, c.avg_div);
    }
    return SYMCOLL_OK;
}

symcoll_status_t algo_net_collective(comm_t *comm, pool_t *pool, const algo_args_t *a,
                                     bool exchange)
{
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    net_sig_t sig = {a->count,        a->dtype,
                     a->op,           SYMCOLL_MEM_HOST,
                     ALGO_SALT(a->coll, a->root), (int)comm->topo->select_cfg.call_forced};
    net_state_t *st;
    net_group_t g;
    net_call_t c;
    symcoll_status_t status;

    if (!comm->ucx) {
        log_error("internal: %s across nodes without a UCX context", topo_coll_name(a->coll));
        return SYMCOLL_ERR_INTERNAL;
    }
    status = algo_net_state_usable(comm, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    if (exchange && st->n == 2 && !st->hier_all) {
        log_debug("%s of %zu elements across nodes: one exchange", topo_coll_name(a->coll),
                  a->count);
        return algo_net_finish(st, coll_pair(st, &dl, &sig, a));
    }
    log_debug("%s of %zu elements across nodes: native ring", topo_coll_name(a->coll),
              a->count);
    status = st->hier_all ? coll_agree_hier(st, &c, &dl, &sig, &g)
                          : coll_agree_flat(st, &c, &dl, &sig, &g);
    if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
        return algo_net_mismatch(st, &c, &sig, true);
    if (status == SYMCOLL_OK)
        status = coll_run(st, &c, a);
    return algo_net_finish(st, status);
}
