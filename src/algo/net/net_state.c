/* The state of the family across nodes, one per UCX worker of a communicator: its
 * counters, its flags (in the signal pad or the pool), its scratch in the pool and the
 * eager broadcast's rings; its life from the pool's attach to the communicator's end,
 * and the word that tells the peers that this rank gave up. */
#include "algo/net/net.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/net/net_int.h"
#include "bootstrap/bootstrap.h"
#include "topo/select.h"
#include "topo/topo.h"

static void net_give_up(net_state_t *st, symcoll_status_t why);

static size_t net_round(size_t bytes)
{
    return (bytes + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
}

static void net_state_free(net_state_t *st)
{
    if (!st)
        return;
    free(st->sent);
    free(st->recvd);
    free(st->reqs);
    free(st->srcs);
    free(st->group);
    free(st->all);
    free(st->ring);
    free(st->bc_recvd);
    free(st->bc_rpos);
    free(st->bc_reqs);
    free(st->wide);
    free(st);
}

char *algo_net_addr(const net_state_t *st, size_t off)
{
    return pool_peer_addr(st->pool, pool_local_rank(st->pool), off);
}

char *algo_net_peer_addr(const net_state_t *st, int rank, size_t off)
{
    return pool_peer_addr(st->pool, st->comm->topo->rank_local_rank[rank], off);
}

/* A new state on worker ucx: its flags allocated and zeroed, then a barrier, so that
 * nobody raises a flag of ours before we zeroed them (collective). */
static symcoll_status_t net_state_create(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                         net_state_t **st_p)
{
    int n = comm->nranks, ls = comm->topo->local_size;
    symcoll_status_t status;
    net_state_t *st;

    st = calloc(1, sizeof(*st));
    if (!st)
        goto err_nomem;
    st->comm = comm;
    st->pool = pool;
    st->ucx = ucx;
    st->n = n;
    st->sent = calloc((size_t)n, sizeof(*st->sent));
    st->recvd = calloc((size_t)n, sizeof(*st->recvd));
    st->srcs = calloc((size_t)ls, sizeof(*st->srcs));
    st->group = calloc((size_t)comm->topo->nnodes, sizeof(*st->group));
    st->all = calloc((size_t)n, sizeof(*st->all));
    st->ring = calloc((size_t)n, sizeof(*st->ring));
    st->bc_recvd = calloc((size_t)n, sizeof(*st->bc_recvd));
    st->bc_rpos = calloc((size_t)n, sizeof(*st->bc_rpos));
    st->bc_reqs = calloc((size_t)n * NET_BC_REQS, sizeof(*st->bc_reqs));
    if (!st->sent || !st->recvd || !st->srcs || !st->group || !st->all || !st->ring ||
        !st->bc_recvd || !st->bc_rpos || !st->bc_reqs) {
        net_state_free(st);
        goto err_nomem;
    }
    for (int r = 0; r < n; r++)
        st->all[r] = r;
    /* by node, then local rank: the ring crosses between nodes as rarely as it can */
    for (int k = 0, p = 0; k < comm->topo->nnodes; k++) {
        for (int l = 0; l < n; l++) {
            for (int r = 0; r < n; r++) {
                if (comm->topo->rank_node[r] != k || comm->topo->rank_local_rank[r] != l)
                    continue;
                if (r == comm->rank)
                    st->ring_me = p;
                st->ring[p++] = r;
            }
        }
    }
    st->chunk_bytes = net_round(comm->config.net_chunk_size);
    /* the same on every rank (the scratch size must match): shape, not this node */
    st->nareas = comm->topo->shape[SYMCOLL_MEM_HOST].ppn > 1 ? 4 : 2;
    /* the selector's choice grows with the size: hierarchical at 1 byte is at any size */
    st->hier_all = topo_choose_algo(comm->topo, SYMCOLL_MEM_HOST, 1) == TOPO_ALGO_HIER;
    /* The communicator's own worker keeps its flags in the host signal pad, after the
     * host algorithms' part, where they fit: always mapped and registered, they pin no
     * pool segment, so trim can unmap the whole pool. Channels and very large jobs take
     * them from the pool, at the same offset everywhere (same call sequence). */
    if (ucx == comm->ucx && pool_backend(pool)->mem_type == SYMCOLL_MEM_HOST &&
        ALGO_SIG_HOST_BYTES + (size_t)(n + 1) * NET_FLAG_STRIDE <=
            pool_backend(pool)->signal_size) {
        st->flags_in_pad = true;
        st->flags_off = ALGO_SIG_HOST_BYTES;
        status = SYMCOLL_OK;
    } else {
        status = pool_alloc(pool, (size_t)(n + 1) * NET_FLAG_STRIDE, POOL_ALLOC_STAGING,
                            &st->flags_off);
    }
    if (status != SYMCOLL_OK) {
        net_state_free(st);
        return status;
    }
    memset(net_flag(st, comm->rank, 0), 0, (size_t)(n + 1) * NET_FLAG_STRIDE);
    status = bootstrap_barrier(comm->bootstrap);
    if (status != SYMCOLL_OK) {
        if (!st->flags_in_pad)
            pool_free(pool, st->flags_off);
        net_state_free(st);
        return status;
    }
    *st_p = st;
    return SYMCOLL_OK;

err_nomem:
    log_error("all-reduce: out of memory for the inter-node algorithm state");
    return SYMCOLL_ERR_NO_MEMORY;
}

/* The eager broadcast's rings (n roots x NET_BC_RING bytes), where the eager broadcast
 * can run (up to NET_BC_MAX_RANKS ranks). Collective: every rank comes here at the same
 * point of its calls (the pool's attach, or the first call after a trim gave them back),
 * whatever its arguments, so every rank allocates the same offset. Their counters stay
 * in the state: rings made again go on where they were (trim follows every rank's calls,
 * so every message in them was consumed). */
static symcoll_status_t net_bc_rings_make(net_state_t *st)
{
    symcoll_status_t status;

    if (st->has_bc || st->n > NET_BC_MAX_RANKS)
        return SYMCOLL_OK;
    status = pool_alloc(st->pool, (size_t)st->n * NET_BC_RING, POOL_ALLOC_STAGING, &st->bc_off);
    if (status != SYMCOLL_OK)
        return status;
    st->has_bc = true;
    return SYMCOLL_OK;
}

/* The communicator's own state, and its fixed-size pool memory (the eager rings), so
 * that no call sets anything up across nodes but the scratch, which grows with the size
 * and only after the ranks agree on it. */
symcoll_status_t algo_net_attach(comm_t *comm, pool_t *pool)
{
    symcoll_status_t status;

    if (comm->algo->net || !comm->ucx)
        return SYMCOLL_OK;
    status = net_state_create(comm, comm->ucx, pool, &comm->algo->net);
    if (status != SYMCOLL_OK)
        return status;
    return net_bc_rings_make(comm->algo->net);
}

/* The slot of worker ucx's state in the context; NULL when the channels are all taken. */
static net_state_t **net_slot(comm_t *comm, const ucx_ctx_t *ucx, bool add)
{
    algo_ctx_t *ctx = comm->algo;

    if (ucx == comm->ucx)
        return &ctx->net;
    for (int i = 0; i < UCX_CHANNELS_MAX; i++)
        if (ctx->channels[i].ucx == ucx)
            return &ctx->channels[i].st;
    for (int i = 0; add && i < UCX_CHANNELS_MAX; i++) {
        if (!ctx->channels[i].ucx) {
            ctx->channels[i].ucx = (ucx_ctx_t *)ucx;
            ctx->channels[i].st = NULL;
            return &ctx->channels[i].st;
        }
    }
    return NULL;
}

symcoll_status_t algo_net_state_get_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       net_state_t **st_p)
{
    net_state_t **slot = net_slot(comm, ucx, true);
    symcoll_status_t status;

    if (!slot) {
        log_error("internal: more than %d UCX channels", UCX_CHANNELS_MAX);
        return SYMCOLL_ERR_INTERNAL;
    }
    if (!*slot && ucx == comm->ucx) {
        /* made with the host pool (algo_net_attach); its failure broke the communicator */
        log_error("internal: no inter-node state on the communicator's worker");
        return SYMCOLL_ERR_INTERNAL;
    }
    if (!*slot) {
        status = net_state_create(comm, ucx, pool, slot);
        if (status != SYMCOLL_OK)
            return status;
    }
    *st_p = *slot;
    return SYMCOLL_OK;
}

void algo_net_free(comm_t *comm)
{
    algo_ctx_t *ctx = comm->algo;

    net_state_free(ctx->net);
    ctx->net = NULL;
    for (int i = 0; i < UCX_CHANNELS_MAX; i++) {
        net_state_free(ctx->channels[i].st);
        ctx->channels[i].ucx = NULL;
        ctx->channels[i].st = NULL;
    }
}

symcoll_status_t algo_net_reserve(net_state_t *st, size_t in, size_t acc, size_t area)
{
    size_t off;
    symcoll_status_t status;

    in = net_round(in);
    acc = net_round(acc);
    area = net_round(area);
    if (st->has_scratch && in <= st->in_bytes && acc <= st->acc_bytes && area <= st->area_bytes)
        return SYMCOLL_OK;
    if (st->fixed) {
        /* a channel's thread must not touch the pool (algo_net_reserve_upto sized it) */
        log_error("internal: all-reduce needs %zu + %zu + %d x %zu bytes of scratch, but this "
                  "channel reserved %zu + %zu + %d x %zu",
                  in, acc, st->nareas, area, st->in_bytes, st->acc_bytes, st->nareas,
                  st->area_bytes);
        return SYMCOLL_ERR_INTERNAL;
    }
    if (st->has_scratch) {
        in = in > st->in_bytes ? in : st->in_bytes;
        acc = acc > st->acc_bytes ? acc : st->acc_bytes;
        area = area > st->area_bytes ? area : st->area_bytes;
        /* every put of earlier calls into it has been consumed: free to reuse */
        pool_free(st->pool, st->scratch_off);
        st->has_scratch = false;
    }
    /* pool_alloc exchanges with every rank: once it returns nobody still reads the old
     * scratch, and nobody writes the new one before it is ours */
    status =
        pool_alloc(st->pool, in + acc + (size_t)st->nareas * area, POOL_ALLOC_STAGING, &off);
    if (status != SYMCOLL_OK)
        return status;
    st->scratch_off = off;
    st->in_bytes = in;
    st->acc_bytes = acc;
    st->area_bytes = area;
    st->has_scratch = true;
    return SYMCOLL_OK;
}

void algo_net_channel_destroy(ucx_ctx_t *channel, pool_t *pool)
{
    comm_t *comm = pool_comm(pool);
    net_state_t **slot = net_slot(comm, channel, false), *st = slot ? *slot : NULL;

    /* the channel's connections go first: after its close nothing a peer sent can still land
     * in the flags or scratch, which then go back to the pool */
    for (int i = 0; i < UCX_CHANNELS_MAX; i++) {
        if (comm->algo->channels[i].ucx == channel) {
            comm->algo->channels[i].ucx = NULL;
            comm->algo->channels[i].st = NULL;
        }
    }
    ucx_destroy(channel);
    if (!st)
        return;
    if (st->has_scratch)
        pool_free(pool, st->scratch_off);
    if (!st->flags_in_pad)
        pool_free(pool, st->flags_off);
    net_state_free(st);
}

void algo_net_channel_abort(ucx_ctx_t *ucx, pool_t *pool, symcoll_status_t why)
{
    comm_t *comm = pool_comm(pool);
    net_state_t **slot = net_slot(comm, ucx, false);

    why = algo_break(comm, why);
    if (!slot || !*slot) {
        ucx_notify_failure(ucx, why);
        return;
    }
    net_give_up(*slot, why);
}

void algo_net_pool_abort(comm_t *comm, pool_t *pool)
{
    /* only the host pool has inter-node state (its flags); for another pool, or before
     * the state exists, the remote peers still hear it */
    net_state_t *st = pool_backend(pool)->mem_type == SYMCOLL_MEM_HOST ? comm->algo->net : NULL;

    if (!comm->ucx)
        return;
    if (!st) {
        ucx_notify_abort(comm->ucx);
        return;
    }
    net_give_up(st, SYMCOLL_ERR_ABORTED);
}

void algo_net_pool_release(comm_t *comm, pool_t *pool)
{
    net_state_t *st = comm->algo->net;

    if (!comm->ucx || pool_backend(pool)->mem_type != SYMCOLL_MEM_HOST)
        return;
    if (st && st->has_scratch) {
        pool_free(pool, st->scratch_off);
        st->has_scratch = false;
        st->in_bytes = st->acc_bytes = st->area_bytes = 0;
    }
    if (st && st->has_bc) {
        /* so that trim can unmap the whole pool; the next call makes them again
         * (algo_net_state_usable_on) */
        pool_free(pool, st->bc_off);
        st->has_bc = false;
    }
}

uint64_t *algo_net_flag_word(const net_state_t *st, int owner, int sender, int word)
{
    return net_flag(st, owner, 1 + sender) + word;
}

/* Word 2 of a rank's flags: 0, or once it gave up (abort or a failed call) the status it
 * gave up with, which its waiters report: ABORTED only for an abort, MISMATCH only for an
 * eager broadcast it received with other arguments. */
static symcoll_status_t net_peer_gave_up(const net_state_t *st, int rank)
{
    int64_t why = (int64_t)atomic_load_explicit((_Atomic uint64_t *)net_flag(st, rank, 0) + 2,
                                                memory_order_relaxed);
    if (!why || why == SYMCOLL_ERR_ABORTED || why == SYMCOLL_ERR_TIMED_OUT ||
        why == SYMCOLL_ERR_MISMATCH)
        return (symcoll_status_t)why;
    return SYMCOLL_ERR_PEER_FAILED;
}

/* Tells the peers that this rank gives up, and why, so that their waits on it end now;
 * the first reason stays. */
static void net_give_up(net_state_t *st, symcoll_status_t why)
{
    _Atomic uint64_t *w = (_Atomic uint64_t *)net_flag(st, st->comm->rank, 0) + 2;
    uint64_t none = 0;

    atomic_compare_exchange_strong(w, &none, (uint64_t)(int64_t)why);
    ucx_notify_failure(st->ucx, why);
}

symcoll_status_t algo_net_peer_gave_up(const net_state_t *st, int rank)
{
    return net_peer_gave_up(st, rank);
}

symcoll_status_t algo_net_give_up(net_state_t *st, symcoll_status_t why)
{
    net_give_up(st, algo_break(st->comm, why));
    return why;
}

/* The ranks of this rank's local index, one a node, in node order. */
void algo_net_local_index_group(net_state_t *st, net_group_t *g)
{
    const topo_t *t = st->comm->topo;
    int l = t->local_rank;

    for (int k = 0; k < t->nnodes; k++) {
        for (int r = 0; r < st->n; r++) {
            if (t->rank_node[r] == k && t->rank_local_rank[r] == l) {
                st->group[k] = r;
                break;
            }
        }
    }
    g->ranks = st->group;
    g->n = t->nnodes;
    g->me = t->node;
}

symcoll_status_t algo_net_state_usable_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                          net_state_t **st_p)
{
    symcoll_status_t status = algo_net_state_get_on(comm, ucx, pool, st_p);

    if (status == SYMCOLL_OK)
        status = algo_check_usable(comm);
    /* after a trim gave the rings back: every call on the communicator's worker passes
     * here, before anything that depends on its arguments */
    if (status == SYMCOLL_OK && ucx == comm->ucx)
        status = net_bc_rings_make(*st_p);
    return status;
}

symcoll_status_t algo_net_state_usable(comm_t *comm, pool_t *pool, net_state_t **st_p)
{
    return algo_net_state_usable_on(comm, comm->ucx, pool, st_p);
}
