/* Machinery shared by the algorithms that cross nodes: state, scratch in the pool, flags,
 * transfers (UCX to other nodes, pool mappings inside a node), waits, and the dispatcher
 * of recursive doubling, ring and hierarchical. */
#include "algo/net/net.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "algo/base/ctx.h"
#include "algo/base/reduce.h"
#include "core/wait.h"
#include "bootstrap/bootstrap.h"
#include "topo/select.h"
#include "topo/topo.h"

/* How often a rank waiting on a peer of its own node checks that it still runs. */
#define NET_ALIVE_PERIOD 0.005

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
    free(st);
}

char *algo_net_addr(const net_state_t *st, size_t off)
{
    return pool_peer_addr(st->pool, pool_local_rank(st->pool), off);
}

static char *net_peer_addr(const net_state_t *st, int rank, size_t off)
{
    return pool_peer_addr(st->pool, st->comm->topo->rank_local_rank[rank], off);
}

static uint64_t *net_flag(const net_state_t *st, int owner, int word)
{
    size_t off = st->flags_off + (size_t)word * NET_FLAG_STRIDE;
    if (st->flags_in_pad)
        return (uint64_t *)((char *)pool_signal_pad(st->pool,
                                                    st->comm->topo->rank_local_rank[owner]) +
                            off);
    return (uint64_t *)(owner == st->comm->rank ? algo_net_addr(st, off)
                                                : net_peer_addr(st, owner, off));
}

/* owner's word for the messages of sender in receive area area */
static uint64_t *net_msg_flag(const net_state_t *st, int owner, int sender, int area)
{
    return net_flag(st, owner, 1 + sender) + area;
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
     * pool segment, so trim can unmap the whole pool. Lanes and very large jobs take
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

symcoll_status_t algo_net_attach(comm_t *comm, pool_t *pool)
{
    if (comm->algo->net || !comm->ucx)
        return SYMCOLL_OK;
    return net_state_create(comm, comm->ucx, pool, &comm->algo->net);
}

/* The slot of worker ucx's state in the context; NULL when the lanes are all taken. */
static net_state_t **net_slot(comm_t *comm, const ucx_ctx_t *ucx, bool add)
{
    algo_ctx_t *ctx = comm->algo;

    if (ucx == comm->ucx)
        return &ctx->net;
    for (int i = 0; i < UCX_LANES_MAX; i++)
        if (ctx->lanes[i].ucx == ucx)
            return &ctx->lanes[i].st;
    for (int i = 0; add && i < UCX_LANES_MAX; i++) {
        if (!ctx->lanes[i].ucx) {
            ctx->lanes[i].ucx = (ucx_ctx_t *)ucx;
            ctx->lanes[i].st = NULL;
            return &ctx->lanes[i].st;
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
        log_error("internal: more than %d UCX lanes", UCX_LANES_MAX);
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
    for (int i = 0; i < UCX_LANES_MAX; i++) {
        net_state_free(ctx->lanes[i].st);
        ctx->lanes[i].ucx = NULL;
        ctx->lanes[i].st = NULL;
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
        /* a lane's thread must not touch the pool (algo_net_reserve_upto sized it) */
        log_error("internal: all-reduce needs %zu + %zu + %d x %zu bytes of scratch, but this "
                  "lane reserved %zu + %zu + %d x %zu",
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

/* Scratch of the algorithm the selector picks for bytes, as the algorithms reserve it
 * (hier: its inner rd or ring on the largest slice). */
static void net_needs(net_state_t *st, size_t bytes, size_t *in, size_t *acc, size_t *area)
{
    const topo_t *t = st->comm->topo;
    int algo = topo_choose_algo(t, pool_backend(st->pool)->mem_type, bytes);
    int L = t->local_size, nn = t->nnodes;

    *in = *acc = *area = 0;
    if (algo == TOPO_ALGO_RD) {
        *area = algo_net_rd_area(bytes, 1, st->n);
    } else if (algo == TOPO_ALGO_RING) {
        *area = algo_net_ring_area(bytes, 1, st->n);
    } else if (algo == TOPO_ALGO_HIER) {
        /* ceil(count / L) elements of up to 8 bytes */
        size_t slice = bytes / (size_t)L + 8, rd_max = topo_rd_max(&t->select_cfg, nn);
        size_t rd = algo_net_rd_area(slice < rd_max ? slice : rd_max, 1, nn);
        size_t ring = algo_net_ring_area(slice, 1, nn);
        *in = bytes;
        *acc = slice;
        /* rd on slices up to its limit, ring above: the larger of both covers all */
        *area = rd > ring ? rd : ring;
    }
}

symcoll_status_t algo_net_reserve_upto(net_state_t *st, size_t max_bytes, bool fix)
{
    size_t in = 0, acc = 0, area = 0;
    /* the selector takes rd up to a limit, ring above it, hier from SYMCOLL_HIER_MIN on,
     * and each one's needs grow with the size: each one's largest size up to max_bytes
     * covers every size below (hier's inner rd and ring: net_needs) */
    const topo_select_cfg_t *cfg = &st->comm->topo->select_cfg;
    /* below SYMCOLL_HIER_MIN: the flat algorithms, up to the size before it */
    size_t sizes[3] = {max_bytes, topo_rd_max(cfg, st->n),
                       cfg->hier_min ? cfg->hier_min - 1 : max_bytes};
    symcoll_status_t status;

    for (int i = 0; i < 3; i++) {
        size_t b = sizes[i] < max_bytes ? sizes[i] : max_bytes, bi, ba, br;
        net_needs(st, b, &bi, &ba, &br);
        in = bi > in ? bi : in;
        acc = ba > acc ? ba : acc;
        area = br > area ? br : area;
    }
    {
        /* algo_net_group_allreduce_on: rd or ring among one rank a node */
        int nn = st->comm->topo->nnodes;
        size_t rd_max = topo_rd_max(cfg, nn);
        size_t rd = algo_net_rd_area(max_bytes < rd_max ? max_bytes : rd_max, 1, nn);
        size_t ring = algo_net_ring_area(max_bytes, 1, nn);
        area = rd > area ? rd : area;
        area = ring > area ? ring : area;
    }
    st->fixed = false;
    status = algo_net_reserve(st, in, acc, area);
    st->fixed = fix && status == SYMCOLL_OK;
    if (status == SYMCOLL_OK)
        log_debug("lane scratch for all-reduces up to %zu bytes: %zu + %zu + %d x %zu bytes",
                  max_bytes, st->in_bytes, st->acc_bytes, st->nareas, st->area_bytes);
    return status;
}

void algo_net_lane_destroy(ucx_ctx_t *lane, pool_t *pool)
{
    comm_t *comm = pool_comm(pool);
    net_state_t **slot = net_slot(comm, lane, false), *st = slot ? *slot : NULL;

    /* the lane's connections go first: after its close nothing a peer sent can still land
     * in the flags or scratch, which then go back to the pool */
    for (int i = 0; i < UCX_LANES_MAX; i++) {
        if (comm->algo->lanes[i].ucx == lane) {
            comm->algo->lanes[i].ucx = NULL;
            comm->algo->lanes[i].st = NULL;
        }
    }
    ucx_destroy(lane);
    if (!st)
        return;
    if (st->has_scratch)
        pool_free(pool, st->scratch_off);
    if (!st->flags_in_pad)
        pool_free(pool, st->flags_off);
    net_state_free(st);
}

void algo_net_lane_abort(ucx_ctx_t *ucx, pool_t *pool, symcoll_status_t why)
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
        /* trim follows every rank's calls: every message in the ring was consumed */
        pool_free(pool, st->bc_off);
        st->has_bc = false;
    }
}

uint64_t *algo_net_flag_word(const net_state_t *st, int owner, int sender, int word)
{
    return net_flag(st, owner, 1 + sender) + word;
}

char *algo_net_peer_addr(const net_state_t *st, int rank, size_t off)
{
    return net_peer_addr(st, rank, off);
}

symcoll_status_t algo_net_send(net_call_t *c, int rank, const void *src, size_t len, size_t off,
                               ucx_req_t *req_p)
{
    net_state_t *st = c->st;
    int me = st->comm->rank;
    uint64_t v = (++st->sent[rank] & NET_CNT_MASK) | c->tag << NET_CNT_BITS;

    *req_p = NULL;
    if (ucx_is_remote(st->ucx, rank))
        return ucx_put_signal(st->ucx, rank, src, len, algo_net_addr(st, off),
                              net_msg_flag(st, me, me, c->area), v, req_p);
    if (len)
        memcpy(net_peer_addr(st, rank, off), src, len);
    atomic_store_explicit((_Atomic uint64_t *)net_msg_flag(st, rank, me, c->area), v,
                          memory_order_release);
    return SYMCOLL_OK;
}

uint64_t algo_net_tag(const net_sig_t *sig, uint64_t seq)
{
    /* another collective run as this all-reduce differs from it by its salt */
    uint64_t n = (uint64_t)sig->count ^ sig->salt * UINT64_C(0x9e3779b97f4a7c15);
    /* exact below 2^24 elements, a fold above */
    uint64_t fold = (n ^ (n >> 24) ^ (n >> 48)) & 0xffffff;

    return fold | (seq & 7) << 24 | ((uint64_t)sig->dtype & 15) << 27 |
           ((uint64_t)sig->op & 7) << 31 | ((uint64_t)sig->mem & 1) << 34;
}

/* The count of a flag word reached target (mod 2^NET_CNT_BITS). */
static bool net_reached(uint64_t word, uint64_t target)
{
    return ((word - target) & NET_CNT_MASK) < (NET_CNT_MASK >> 1);
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

/* Waits until owner's flag word reaches target, progressing UCX all along (on TCP the
 * peers' puts into our memory land only while we progress). */
static symcoll_status_t net_wait_word(net_state_t *st, const uint64_t *word, uint64_t target,
                                      int peer, deadline_t *dl, double *next_alive,
                                      uint64_t *value_p)
{
    const _Atomic uint64_t *w = (const _Atomic uint64_t *)word;
    bool local = !ucx_is_remote(st->ucx, peer);
    unsigned iter = 0;
    uint64_t value;

    while (!net_reached(value = atomic_load_explicit(w, memory_order_acquire), target)) {
        symcoll_status_t status = ucx_progress(st->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status == SYMCOLL_OK && local)
            status = net_peer_gave_up(st, peer);
        if (status == SYMCOLL_OK && local && iter > 256) {
            double now = time_now();
            if (now >= *next_alive) {
                const topo_rank_info_t *info = &st->comm->topo->info[peer];
                *next_alive = now + NET_ALIVE_PERIOD;
                if (!topo_proc_alive(info->pid, info->start_time)) {
                    log_error("rank %d (same node) died", peer);
                    status = SYMCOLL_ERR_PEER_FAILED;
                }
            }
        }
        if (status != SYMCOLL_OK) {
            log_error("across nodes: waiting for rank %d: %s", peer,
                      symcoll_status_string(status));
            return status;
        }
        ucx_idle(st->ucx, &iter);
    }
    *value_p = value;
    return SYMCOLL_OK;
}

symcoll_status_t algo_net_wait_flag(net_state_t *st, const uint64_t *word, uint64_t target,
                                    int peer, deadline_t *dl, double *next_alive)
{
    uint64_t value;
    return net_wait_word(st, word, target, peer, dl, next_alive, &value);
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

symcoll_status_t algo_net_wait(net_call_t *c, int rank)
{
    net_state_t *st = c->st;
    uint64_t target = ++st->recvd[rank], value, tag;
    symcoll_status_t status = net_wait_word(st, net_msg_flag(st, st->comm->rank, rank, c->area),
                                            target, rank, c->dl, &c->next_alive, &value);

    if (status != SYMCOLL_OK || !c->check)
        return status;
    /* the word may already show a later message of the same call: same tag, and a
     * verdict at least as complete */
    tag = value >> NET_CNT_BITS;
    if ((tag & ~NET_TAG_BAD) != (c->tag & ~NET_TAG_BAD) && c->bad_peer < 0) {
        c->bad_peer = rank;
        c->bad_tag = tag;
    }
    if ((tag & ~NET_TAG_BAD) != (c->tag & ~NET_TAG_BAD) || (tag & NET_TAG_BAD))
        c->tag |= NET_TAG_BAD;
    return SYMCOLL_OK;
}

symcoll_status_t algo_net_req_wait(net_call_t *c, ucx_req_t req)
{
    return ucx_req_wait(c->st->ucx, req, c->dl);
}

/*
 * The node barrier of the hierarchical algorithm. Word 0 of a rank's flags is its
 * barrier epoch, word 1 the number of local peers asleep on it. A waiter spins (and
 * progresses UCX), yields a little, then sleeps on a futex on the peer's epoch word,
 * which the peer wakes when it moves it: with more ranks than cores, sched_yield alone
 * does not reliably hand the core to the rank we wait for. Sleeps are short (remote
 * peers' messages wait in the socket meanwhile; none of them needs our progress to
 * complete) so deadline, abort and liveness are still checked. The loop is
 * core_wait_word, with UCX progress every turn.
 */
#define NET_BAR_SLEEP_NS 1000000L

typedef struct net_bar_arg {
    net_state_t *st;
    deadline_t *dl;
    double *next_alive;
    int r; /* the rank waited for */
} net_bar_arg_t;

static symcoll_status_t net_bar_progress(void *arg)
{
    return ucx_progress(((net_bar_arg_t *)arg)->st->ucx);
}

static symcoll_status_t net_bar_check(void *arg)
{
    net_bar_arg_t *a = arg;
    const topo_t *t = a->st->comm->topo;
    symcoll_status_t status = deadline_check(a->dl);

    if (status == SYMCOLL_OK)
        status = net_peer_gave_up(a->st, a->r);
    if (status == SYMCOLL_OK && time_now() >= *a->next_alive) {
        *a->next_alive = time_now() + NET_ALIVE_PERIOD;
        if (!topo_proc_alive(t->info[a->r].pid, t->info[a->r].start_time)) {
            log_error("rank %d (same node) died", a->r);
            status = SYMCOLL_ERR_PEER_FAILED;
        }
    }
    return status;
}

symcoll_status_t algo_net_local_barrier(net_state_t *st, deadline_t *dl)
{
    const topo_t *t = st->comm->topo;
    uint64_t target = ++st->bar;
    double next_alive = time_now() + NET_ALIVE_PERIOD;
    _Atomic uint64_t *mine = (_Atomic uint64_t *)net_flag(st, st->comm->rank, 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    net_bar_arg_t arg = {st, dl, &next_alive, -1};
    /* Each turn progresses UCX (a system call on TCP), so even this short spin lasts
     * ~0.1 ms: peers with a core each arrive within it, and on a crowded machine
     * (simulated nodes share its cores too) a long spin only delays the peer. */
    core_wait_t w = {.spin_max = ncpu > 0 && t->local_size >= ncpu ? 16 : 128,
                     .yields = 2,
                     .sleep_ns = NET_BAR_SLEEP_NS,
                     .progress = net_bar_progress,
                     .check = net_bar_check,
                     .arg = &arg};

    core_word_publish(mine, mine + 1, target);
    for (int j = 0; j < t->local_size; j++) {
        _Atomic uint64_t *peer;
        symcoll_status_t status;

        arg.r = t->local_ranks[j];
        peer = (_Atomic uint64_t *)net_flag(st, arg.r, 0);
        status = core_wait_word(&w, peer, peer + 1, target);
        if (status != SYMCOLL_OK) {
            log_error("across nodes: node barrier, waiting for rank %d: %s", arg.r,
                      symcoll_status_string(status));
            return status;
        }
    }
    return SYMCOLL_OK;
}

/* algo_net_call_init in receive area area (0 .. nareas - 1), the call numbered seq. */
static void net_call_init_in(net_call_t *c, net_state_t *st, const net_group_t *g,
                             const void *sendbuf, void *recvbuf, size_t count,
                             symcoll_dtype_t dtype, symcoll_op_t op, deadline_t *dl, int area,
                             const net_sig_t *sig, uint64_t seq)
{
    memset(c, 0, sizeof(*c));
    c->st = st;
    c->g = g;
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = symcoll_dtype_size(dtype);
    c->dtype = dtype;
    c->op = op;
    c->avg_div = op == SYMCOLL_AVG ? st->n : 0;
    c->area = area;
    algo_net_call_area(c);
    c->dl = dl;
    c->next_alive = time_now() + NET_ALIVE_PERIOD;
    c->tag = algo_net_tag(sig, seq);
    c->bad_peer = -1;
}

void algo_net_call_area(net_call_t *c)
{
    net_state_t *st = c->st;
    c->area_off =
        st->scratch_off + st->in_bytes + st->acc_bytes + (size_t)c->area * st->area_bytes;
}

void algo_net_call_init(net_call_t *c, net_state_t *st, const net_group_t *g,
                        const void *sendbuf, void *recvbuf, size_t count, symcoll_dtype_t dtype,
                        symcoll_op_t op, deadline_t *dl, const net_sig_t *sig)
{
    net_call_init_in(c, st, g, sendbuf, recvbuf, count, dtype, op, dl, (int)(st->calls & 1),
                     sig, st->calls);
    st->calls++;
}

/* ---- agreement ----------------------------------------------------------------------- */

void algo_net_hier_publish(net_state_t *st, uint64_t word, uint64_t value)
{
    atomic_store_explicit((_Atomic uint64_t *)net_flag(st, st->comm->rank, 0) + word, value,
                          memory_order_relaxed);
}

uint64_t algo_net_hier_peek(const net_state_t *st, int rank, uint64_t word)
{
    return atomic_load_explicit((_Atomic uint64_t *)net_flag(st, rank, 0) + word,
                                memory_order_relaxed);
}

static const char *net_mem_name(int mem)
{
    return mem == SYMCOLL_MEM_CUDA ? "CUDA" : "host";
}

/* What the bootstrap exchange of a failed agreement carries. */
typedef struct net_xsig {
    uint64_t count, seq, salt;
    int32_t dtype, op, mem, pad;
    uint64_t bc_seq; /* eager broadcasts taken part in (net_coll.c) */
} net_xsig_t;

static bool net_xsig_differ(const net_xsig_t *a, const net_xsig_t *b)
{
    return a->count != b->count || a->dtype != b->dtype || a->op != b->op || a->mem != b->mem ||
           (a->seq & 7) != (b->seq & 7) || a->salt != b->salt;
}

symcoll_status_t algo_net_mismatch(net_state_t *st, const net_call_t *c, const net_sig_t *sig,
                                   bool exact)
{
    comm_t *comm = st->comm;
    net_xsig_t me = {(uint64_t)sig->count, (c->tag >> 24) & 7, sig->salt, (int32_t)sig->dtype,
                     (int32_t)sig->op,     (int32_t)sig->mem,  0,         st->bc_seq};
    /* the collective run: its own, or the one run as this all-reduce (the same salt) */
    const char *what = topo_coll_name((topo_coll_t)(sig->salt >> 32));

    if (exact) {
        /* every rank of the communicator knows: a bootstrap exchange (error path only) */
        net_xsig_t *all = calloc((size_t)comm->nranks, sizeof(*all));
        symcoll_status_t status =
            all ? bootstrap_allgather(comm->bootstrap, &me, all, sizeof(me))
                : SYMCOLL_ERR_NO_MEMORY;
        int r = 0;

        /* ranks whose counts of eager broadcasts differ decided differently whether a
         * broadcast was eager (each decides from its own size): a root's message then
         * waits unread in a receiver's ring, which would take it for its next eager
         * broadcast. Every rank sees the same counts: all break the communicator. */
        for (int q = 0; status == SYMCOLL_OK && q < comm->nranks; q++) {
            if (all[q].bc_seq == me.bc_seq)
                continue;
            log_error("collective across nodes: rank %d took part in %llu eager broadcasts, "
                      "this rank (%d) in %llu: a broadcast was eager on some ranks only "
                      "(different sizes); the communicator can only be destroyed",
                      q, (unsigned long long)all[q].bc_seq, comm->rank,
                      (unsigned long long)me.bc_seq);
            free(all);
            (void)algo_break(comm, SYMCOLL_ERR_MISMATCH);
            return SYMCOLL_ERR_MISMATCH;
        }
        while (status == SYMCOLL_OK && r < comm->nranks && !net_xsig_differ(&all[r], &me))
            r++;
        if (status == SYMCOLL_OK && r < comm->nranks && all[r].salt != me.salt) {
            log_error("collective across nodes: ranks called different collectives: rank %d "
                      "%s (root %d), this rank (%d) %s (root %d)",
                      r, topo_coll_name((topo_coll_t)(all[r].salt >> 32)),
                      (int)(uint32_t)all[r].salt, comm->rank,
                      topo_coll_name((topo_coll_t)(me.salt >> 32)), (int)(uint32_t)me.salt);
            free(all);
            return SYMCOLL_ERR_MISMATCH;
        }
        if (status == SYMCOLL_OK && r < comm->nranks) {
            log_error("%s across nodes: ranks called with different arguments: rank %d "
                      "with count %llu, %s, %s, %s memory (call %llu mod 8); this rank (%d) "
                      "with count %llu, %s, %s, %s memory (call %llu mod 8)",
                      what, r, (unsigned long long)all[r].count,
                      symcoll_dtype_name((symcoll_dtype_t)all[r].dtype),
                      symcoll_op_name((symcoll_op_t)all[r].op), net_mem_name(all[r].mem),
                      (unsigned long long)(all[r].seq & 7), comm->rank,
                      (unsigned long long)me.count, symcoll_dtype_name(sig->dtype),
                      symcoll_op_name(sig->op), net_mem_name(sig->mem),
                      (unsigned long long)me.seq);
            free(all);
            return SYMCOLL_ERR_MISMATCH;
        }
        free(all);
        if (status != SYMCOLL_OK)
            return status;
        /* a rank that compared tags equal for different folded counts cannot see it;
         * what is left is a difference in the call sequence itself */
    }
    if (c->bad_peer >= 0) {
        uint64_t t = c->bad_tag;
        log_error("%s across nodes: ranks called with different arguments: rank %d "
                  "with count %llu (mod 2^24), %s, %s, %s memory (call %llu mod 8); this rank "
                  "(%d) with count %zu, %s, %s, %s memory (call %llu mod 8)",
                  what, c->bad_peer, (unsigned long long)(t & 0xffffff),
                  symcoll_dtype_name((symcoll_dtype_t)((t >> 27) & 15)),
                  symcoll_op_name((symcoll_op_t)((t >> 31) & 7)),
                  net_mem_name((int)(t >> 34) & 1), (unsigned long long)((t >> 24) & 7),
                  comm->rank, sig->count, symcoll_dtype_name(sig->dtype),
                  symcoll_op_name(sig->op), net_mem_name(sig->mem), (unsigned long long)me.seq);
    } else {
        log_error("%s across nodes: ranks called with different arguments (this rank, "
                  "%d: count %zu, %s, %s, %s memory; another rank's differ)",
                  what, comm->rank, sig->count, symcoll_dtype_name(sig->dtype),
                  symcoll_op_name(sig->op), net_mem_name(sig->mem));
    }
    return SYMCOLL_ERR_MISMATCH;
}

/* ---- dispatcher ---------------------------------------------------------------------- */

static bool net_failure_is_sticky(symcoll_status_t s)
{
    return s == SYMCOLL_ERR_TIMED_OUT || s == SYMCOLL_ERR_PEER_FAILED ||
           s == SYMCOLL_ERR_ABORTED || s == SYMCOLL_ERR_UCX || s == SYMCOLL_ERR_INTERNAL;
}

static symcoll_status_t net_allreduce(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                      topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                      size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                      const net_sig_t *sig, bool exact);

symcoll_status_t algo_net_allreduce(comm_t *comm, pool_t *pool, topo_algo_t algo,
                                    const void *sendbuf, void *recvbuf, size_t count,
                                    symcoll_dtype_t dtype, symcoll_op_t op)
{
    net_sig_t sig = {count, dtype, op, SYMCOLL_MEM_HOST, comm->algo->salt};
    return net_allreduce(comm, comm->ucx, pool, algo, sendbuf, recvbuf, count, dtype, op, &sig,
                         true);
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

/* The state of a UCX context for a call, unless an earlier call broke it. */
static symcoll_status_t net_state_usable(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                         net_state_t **st_p)
{
    symcoll_status_t status = algo_net_state_get_on(comm, ucx, pool, st_p);

    if (status != SYMCOLL_OK)
        return status;
    return algo_check_usable(comm);
}

symcoll_status_t algo_net_state_usable(comm_t *comm, pool_t *pool, net_state_t **st_p)
{
    return net_state_usable(comm, comm->ucx, pool, st_p);
}

/* Over group g: the agreement (algo_net_rd with check), then algo (rd or ring; its receive
 * area reserved first), to completion; or the agreement alone (algo TOPO_ALGO_HIER: the
 * hierarchical algorithm follows). Where rd's data fits the reserved area, the agreement
 * is the rd itself, which then costs nothing more; else it is rd's messages without data,
 * and only once every rank knows that all agree does any of them grow the scratch
 * (collective) or take a path of its own. */
static symcoll_status_t net_run_flat(net_state_t *st, const net_group_t *g, topo_algo_t algo,
                                     bool group, const void *sendbuf, void *recvbuf,
                                     size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                     deadline_t *dl, const net_sig_t *sig, bool exact)
{
    size_t esize = symcoll_dtype_size(dtype);
    bool rd = algo == TOPO_ALGO_RD;
    size_t need =
        rd ? algo_net_rd_area(count, esize, g->n) : algo_net_ring_area(count, esize, g->n);
    bool fits = rd && st->has_scratch && need <= st->area_bytes;
    symcoll_status_t status;
    net_call_t c;

    if (group) {
        if (st->nareas < 4) {
            log_error("internal: all-reduce among one rank a node with one rank a node");
            return SYMCOLL_ERR_INTERNAL;
        }
        net_call_init_in(&c, st, g, sendbuf, recvbuf, count, dtype, op, dl,
                         2 + (int)(st->group_calls & 1), sig, st->group_calls);
        st->group_calls++;
    } else {
        algo_net_call_init(&c, st, g, sendbuf, recvbuf, count, dtype, op, dl, sig);
    }
    c.check = true;
    c.header_only = !fits;
    status = algo_net_rd(&c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
        return algo_net_mismatch(st, &c, sig, exact);
    if (status != SYMCOLL_OK || fits || algo == TOPO_ALGO_HIER)
        return status;
    c.check = false;
    c.header_only = false;
    status = algo_net_reserve(st, 0, 0, need);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_call_area(&c);
    status = rd ? algo_net_rd(&c) : algo_net_ring(&c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    return status;
}

/* Whether a peer gave up (a mismatch it received in an eager broadcast ends our waits
 * with SYMCOLL_ERR_MISMATCH too, and is sticky like any give-up, unlike a mismatch our
 * own agreement finds, after which the ranks stay in step). */
static bool net_any_gave_up(net_state_t *st)
{
    if (st->ucx && ucx_progress(st->ucx) != SYMCOLL_OK)
        return true;
    for (int r = 0; r < st->n; r++)
        if (r != st->comm->rank && !ucx_is_remote(st->ucx, r) &&
            net_peer_gave_up(st, r) != SYMCOLL_OK)
            return true;
    return false;
}

symcoll_status_t algo_net_finish(net_state_t *st, symcoll_status_t status)
{
    if (status != SYMCOLL_OK && (net_failure_is_sticky(status) ||
                                 (status == SYMCOLL_ERR_MISMATCH && net_any_gave_up(st))))
        net_give_up(st, algo_break(st->comm, status));
    return status;
}

symcoll_status_t algo_net_group_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                             void *buf, size_t count, symcoll_dtype_t dtype,
                                             symcoll_op_t op, const net_sig_t *sig)
{
    net_state_t *st;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    symcoll_status_t status;
    net_group_t g;
    bool rd;

    status = net_state_usable(comm, ucx, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_local_index_group(st, &g);
    rd = count * symcoll_dtype_size(dtype) <= topo_rd_max(&comm->topo->select_cfg, g.n);
    return algo_net_finish(st, net_run_flat(st, &g, rd ? TOPO_ALGO_RD : TOPO_ALGO_RING, true,
                                            buf, buf, count, dtype, op, &dl, sig, false));
}

/* algo_net_allreduce_on; exact: from the caller's thread (algo_net_mismatch). */
static symcoll_status_t net_allreduce(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                      topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                      size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                      const net_sig_t *sig, bool exact)
{
    net_state_t *st;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    net_group_t all;
    symcoll_status_t status;

    if (!ucx) {
        log_error("internal: inter-node all-reduce without a UCX context");
        return SYMCOLL_ERR_INTERNAL;
    }
    status = net_state_usable(comm, ucx, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    if (algo != TOPO_ALGO_RD && algo != TOPO_ALGO_RING && algo != TOPO_ALGO_HIER) {
        log_error("symcoll_allreduce: %s is not an algorithm across nodes",
                  topo_algo_name(algo));
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    all.ranks = st->all;
    all.n = comm->nranks;
    all.me = comm->rank;
    if (algo == TOPO_ALGO_HIER && st->hier_all) {
        /* every rank is in the hierarchical algorithm, whatever its count: it agrees in
         * its own steps */
        net_call_t c;
        bool rerun = false;
        status =
            algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, &dl, sig, true, &rerun, &c);
        if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
            status = algo_net_mismatch(st, &c, sig, exact);
        else if (status == SYMCOLL_OK && rerun)
            status = algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, &dl, sig, false,
                                   NULL, NULL);
    } else {
        /* ranks of other counts may be in rd or ring: all agree the flat way first */
        status = net_run_flat(st, &all, algo, false, sendbuf, recvbuf, count, dtype, op, &dl,
                              sig, exact);
        if (status == SYMCOLL_OK && algo == TOPO_ALGO_HIER)
            status = algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, &dl, sig, false,
                                   NULL, NULL);
    }
    return algo_net_finish(st, status);
}

symcoll_status_t algo_net_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                       size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                       const net_sig_t *sig)
{
    return net_allreduce(comm, ucx, pool, algo, sendbuf, recvbuf, count, dtype, op, sig, false);
}
