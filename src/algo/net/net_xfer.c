/* Transfers and waits of the family across nodes: a call's receive area and tag, one
 * message to a rank (UCX to other nodes, the pool mappings inside a node) with its flag,
 * the wait for a flag (progressing UCX, watching deadline, abort and local peers), the
 * node barrier, and the end of a call that fails. */
#include "algo/net/net.h"

#include <string.h>
#include <unistd.h>

#include "algo/base/ctx.h"
#include "algo/net/net_int.h"
#include "core/wait.h"
#include "topo/topo.h"

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
        memcpy(algo_net_peer_addr(st, rank, off), src, len);
    atomic_store_explicit((_Atomic uint64_t *)net_msg_flag(st, rank, me, c->area), v,
                          memory_order_release);
    return SYMCOLL_OK;
}

/* The count of a flag word reached target (mod 2^NET_CNT_BITS). */
static bool net_reached(uint64_t word, uint64_t target)
{
    return ((word - target) & NET_CNT_MASK) < (NET_CNT_MASK >> 1);
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

    /* our endpoint to a remote peer is what tells us that it died */
    if (!local) {
        symcoll_status_t status = ucx_connect(st->ucx, peer);
        if (status != SYMCOLL_OK)
            return status;
    }
    while (!net_reached(value = atomic_load_explicit(w, memory_order_acquire), target)) {
        symcoll_status_t status = ucx_progress(st->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status == SYMCOLL_OK && local)
            status = algo_net_peer_gave_up(st, peer);
        if (status == SYMCOLL_OK && local && iter > 256) {
            double now = time_now();
            if (now >= *next_alive) {
                const topo_rank_info_t *info = &st->comm->topo->info[peer];
                *next_alive = now + NET_ALIVE_PERIOD;
                /* one that sent, then exited, is no failure */
                if (!topo_proc_alive(info->pid, info->start_time) &&
                    !net_reached(atomic_load_explicit(w, memory_order_acquire), target)) {
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
 * peers' messages, and their requests for our rkeys, wait in the socket meanwhile) so
 * deadline, abort and liveness are still checked. The loop is
 * core_wait_word, with UCX progress every turn.
 */
#define NET_BAR_SLEEP_NS 1000000L

typedef struct net_bar_arg {
    net_state_t *st;
    deadline_t *dl;
    double *next_alive;
    int r;                  /* the rank waited for */
    _Atomic uint64_t *word; /* its epoch word, and the epoch awaited */
    uint64_t target;
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
        status = algo_net_peer_gave_up(a->st, a->r);
    if (status == SYMCOLL_OK && time_now() >= *a->next_alive) {
        *a->next_alive = time_now() + NET_ALIVE_PERIOD;
        /* a peer that arrived, finished the call and exited is no failure */
        if (!topo_proc_alive(t->info[a->r].pid, t->info[a->r].start_time) &&
            atomic_load_explicit(a->word, memory_order_acquire) < a->target) {
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
    net_bar_arg_t arg = {st, dl, &next_alive, -1, NULL, target};
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
        arg.word = peer;
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

void algo_net_group_call_init(net_call_t *c, net_state_t *st, const net_group_t *g,
                              const void *sendbuf, void *recvbuf, size_t count,
                              symcoll_dtype_t dtype, symcoll_op_t op, deadline_t *dl,
                              const net_sig_t *sig)
{
    net_call_init_in(c, st, g, sendbuf, recvbuf, count, dtype, op, dl,
                     2 + (int)(st->group_calls & 1), sig, st->group_calls);
    st->group_calls++;
}

static bool net_failure_is_sticky(symcoll_status_t s)
{
    return s == SYMCOLL_ERR_TIMED_OUT || s == SYMCOLL_ERR_PEER_FAILED ||
           s == SYMCOLL_ERR_ABORTED || s == SYMCOLL_ERR_UCX || s == SYMCOLL_ERR_INTERNAL;
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
            algo_net_peer_gave_up(st, r) != SYMCOLL_OK)
            return true;
    return false;
}

symcoll_status_t algo_net_finish(net_state_t *st, symcoll_status_t status)
{
    if (status != SYMCOLL_OK && (net_failure_is_sticky(status) ||
                                 (status == SYMCOLL_ERR_MISMATCH && net_any_gave_up(st))))
        (void)algo_net_give_up(st, status);
    return status;
}
