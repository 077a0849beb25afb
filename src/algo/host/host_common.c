/* Machinery shared by the host algorithms: per-pool state, the barrier over epochs in
 * the signal pads, the wait loop with its deadline, abort and dead-peer checks, and the
 * call descriptors through which ranks tell each other where their data is. */
#include "algo/host/host.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/base/ctx.h"
#include "core/wait.h"
#include "topo/topo.h"

/* How often a waiting rank looks at /proc for its peers: cheap enough not to matter,
 * frequent enough that a dead peer is noticed within a few milliseconds. */
#define HOST_ALIVE_PERIOD 0.005

/*
 * Waiting. A peer usually arrives within microseconds, so a wait first spins (pause
 * instructions), then yields a couple of times, then sleeps on a futex on the peer's
 * progress word, which the peer wakes when it moves it. Sleeping matters when ranks
 * outnumber cores: sched_yield alone does not reliably hand the core to the rank we
 * wait for (the scheduler may pick us again until its next tick, ~1 ms per barrier),
 * while a sleeping rank leaves the run queue and the waker preempts it back at once.
 * The sleep is bounded, so abort, deadline and liveness are still checked. The loop is
 * core_wait_word; these are the host barrier's settings.
 */
#define HOST_SPIN_MAX                                                                          \
    4096              /* pause rounds (~0.1 ms): long enough that ranks with a                 \
                         core each never sleep (a sleep costs a wake-up of                     \
                         several µs, and sleepers slow their wakers down);                    \
                         8 when ranks outnumber cores */
#define HOST_YIELDS 2 /* sched_yield rounds before sleeping */
#define HOST_SLEEP_NS 2000000L

static void host_state_free(algo_host_state_t *st)
{
    if (!st)
        return;
    free(st->sig);
    free(st->pids);
    free(st->starts);
    free(st->srcs);
    free(st->ll_in);
    free(st->peer_flags);
    free(st->peer_in);
    free(st->peer_out);
    free(st->bc_recvd);
    free(st);
}

void algo_host_free(comm_t *comm)
{
    host_state_free(comm->algo->host);
    comm->algo->host = NULL;
}

/* Whether CPUID reports PREFETCHW (AMD family 10h on, Intel Broadwell on; Linux flags
 * older AMD parts itself, this check does not); off x86 a write prefetch is the
 * compiler's. */
static bool host_has_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
#else
    return true;
#endif
}

symcoll_status_t algo_host_state_get(comm_t *comm, pool_t *pool, algo_host_state_t **st_p)
{
    algo_host_state_t *st = comm->algo->host;
    symcoll_status_t status;

    if (!st) {
        int n = pool_local_size(pool);
        st = calloc(1, sizeof(*st));
        if (!st)
            goto err_nomem;
        st->me = pool_local_rank(pool);
        st->n = n;
        st->sig = calloc((size_t)n, sizeof(*st->sig));
        st->pids = calloc((size_t)n, sizeof(*st->pids));
        st->starts = calloc((size_t)n, sizeof(*st->starts));
        st->srcs = calloc((size_t)n, sizeof(*st->srcs));
        st->ll_in = malloc((size_t)n * HOST_LL_BYTES);
        st->peer_flags = calloc((size_t)n, sizeof(uint64_t));
        st->peer_in = calloc((size_t)n, sizeof(uint64_t));
        st->peer_out = calloc((size_t)n, sizeof(uint64_t));
        st->bc_recvd = calloc((size_t)n, sizeof(uint64_t));
        if (!st->sig || !st->pids || !st->starts || !st->srcs || !st->ll_in ||
            !st->peer_flags || !st->peer_in || !st->peer_out || !st->bc_recvd) {
            host_state_free(st);
            goto err_nomem;
        }
        for (int r = 0; r < n; r++) {
            int g = comm->topo->local_ranks[r];
            st->sig[r] = pool_signal_pad(pool, r);
            st->pids[r] = comm->topo->info[g].pid;
            st->starts[r] = comm->topo->info[g].start_time;
        }
        /* a whole number of cache lines, so that chunks and slices stay aligned */
        st->chunk_bytes = comm->config.host_chunk_size / POOL_ALIGN * POOL_ALIGN;
        /* the pad words start at 0 everywhere and never go back: resume from them */
        st->epoch = atomic_load(&st->sig[st->me]->progress);
        /* messages of our eager broadcasts every receiver consumed: none yet */
        st->bc_credit = 0;
        st->prefetchw = host_has_prefetchw();
        /* more ranks than cores: a peer we wait for is likely waiting for our core */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        st->spin_max = ncpu > 0 && n > ncpu ? 8 : HOST_SPIN_MAX;
        comm->algo->host = st;
    }
    if (!st->has_staging) {
        /* same call sequence on every rank, so same decision and same offset */
        status = pool_alloc(pool, HOST_STAGING_SLOTS * st->chunk_bytes, POOL_ALLOC_STAGING,
                            &st->staging_off);
        if (status != SYMCOLL_OK)
            return status;
        st->has_staging = true;
    }
    if (!st->has_bc && st->n > 1 && st->n <= HOST_BC_MAX_RANKS) {
        /* the eager broadcast's ring, like the staging: same decision on every rank.
         * Its counters live in the state and the pad, so a ring given back at trim and
         * made again goes on where it was (every message of it was consumed: trim
         * follows every rank's calls) */
        status = pool_alloc(pool, HOST_BC_SLOTS * HOST_BC_SLOT_BYTES, POOL_ALLOC_STAGING,
                            &st->bc_off);
        if (status != SYMCOLL_OK)
            return status;
        st->has_bc = true;
    }
    *st_p = st;
    return SYMCOLL_OK;

err_nomem:
    log_error("all-reduce: out of memory for the host algorithm state");
    return SYMCOLL_ERR_NO_MEMORY;
}

symcoll_status_t algo_host_call_init(host_call_t *c, comm_t *comm, pool_t *pool,
                                     const void *sendbuf, void *recvbuf, size_t count,
                                     symcoll_dtype_t dtype, symcoll_op_t op)
{
    algo_host_state_t *st;
    symcoll_status_t status = algo_host_state_get(comm, pool, &st);

    if (status != SYMCOLL_OK)
        return status;
    memset(c, 0, sizeof(*c));
    c->comm = comm;
    c->pool = pool;
    c->st = st;
    c->me = st->me;
    c->n = st->n;
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->dtype = dtype;
    c->op = op;
    c->esize = symcoll_dtype_size(dtype);
    return SYMCOLL_OK;
}

void algo_host_release(comm_t *comm, pool_t *pool)
{
    algo_host_state_t *st = comm->algo->host;
    if (!st)
        return;
    if (st->has_bc) {
        pool_free(pool, st->bc_off);
        st->has_bc = false;
    }
    if (!st->has_staging)
        return;
    pool_free(pool, st->staging_off);
    st->has_staging = false;
}

/* Tells the local peers that this rank gives up from epoch on, and why. Only the first
 * time counts: a later call of ours (which fails at once) must not move the epoch past
 * a call that a peer may still be completing, nor change the reason. Only the pad's
 * owner writes it, under the communicator's lock. */
static void host_give_up(algo_host_sig_t *me, uint64_t epoch, symcoll_status_t why)
{
    if (atomic_load_explicit(&me->aborted, memory_order_relaxed))
        return;
    atomic_store_explicit(&me->reason, (int64_t)why, memory_order_relaxed);
    atomic_store_explicit(&me->aborted, epoch, memory_order_release);
}

/* Why a local peer gave up, as its waiters report it: an abort, a timeout, a mismatch
 * of an eager broadcast it received, or a death. */
symcoll_status_t algo_host_peer_reason(const algo_host_sig_t *peer)
{
    int64_t why = atomic_load_explicit(&peer->reason, memory_order_relaxed);
    if (why == SYMCOLL_ERR_ABORTED || why == SYMCOLL_ERR_TIMED_OUT ||
        why == SYMCOLL_ERR_MISMATCH)
        return (symcoll_status_t)why;
    return SYMCOLL_ERR_PEER_FAILED;
}

void algo_host_abort(comm_t *comm, pool_t *pool)
{
    algo_host_state_t *st = comm->algo->host;
    /* between calls: every epoch so far completed (the pad exists from pool creation
     * on, state or not) */
    host_give_up((algo_host_sig_t *)pool_signal_pad(pool, pool_local_rank(pool)),
                 st ? st->epoch + 1 : 1, SYMCOLL_ERR_ABORTED);
}

symcoll_status_t algo_host_fail(host_call_t *c, symcoll_status_t status)
{
    /* a mismatch here is a peer's eager broadcast receive that gave up with it */
    if (status == SYMCOLL_ERR_TIMED_OUT || status == SYMCOLL_ERR_PEER_FAILED ||
        status == SYMCOLL_ERR_ABORTED || status == SYMCOLL_ERR_MISMATCH) {
        algo_break(c->comm, status);
        /* peers still waiting for us learn it at once instead of at their deadline;
         * the epoch we did not complete tells them whether this touches their call */
        host_give_up(c->st->sig[c->me], c->st->epoch + !c->epoch_open, status);
    }
    return status;
}

symcoll_status_t algo_host_done(host_call_t *c, symcoll_status_t status)
{
    if (status != SYMCOLL_OK)
        return status;
    /* after our last read of peer memory (x86 keeps loads in order; the fence says so
     * for the rest) */
    atomic_thread_fence(memory_order_acquire);
    for (int r = 0; r < c->n; r++) {
        uint64_t gave_up = atomic_load_explicit(&c->st->sig[r]->aborted, memory_order_acquire);
        /* a peer that gave up after this call's last epoch completed it */
        if (r != c->me && gave_up && gave_up <= c->st->epoch) {
            symcoll_status_t why = algo_host_peer_reason(c->st->sig[r]);
            log_error("all-reduce: rank %d (local rank %d) gave up during the call: %s",
                      c->comm->topo->local_ranks[r], r, symcoll_status_string(why));
            return algo_host_fail(c, why);
        }
    }
    return SYMCOLL_OK;
}

/* Slow part of the wait loop: abort, deadline, the peer's own abort word, liveness. */
symcoll_status_t algo_host_wait_check(host_call_t *c, int r)
{
    algo_host_state_t *st = c->st;
    double now;

    if (atomic_load_explicit(&c->comm->aborted, memory_order_relaxed))
        return SYMCOLL_ERR_ABORTED;
    if (atomic_load_explicit(&st->sig[r]->aborted, memory_order_acquire))
        return algo_host_peer_reason(st->sig[r]);
    now = time_now();
    if (c->dl.end == 0) {
        /* the clock is read only once a wait gets long: calls that never wait (small
         * messages, peers in step) do not pay for it */
        c->dl = deadline_make(c->comm->timeout_sec, &c->comm->aborted);
        c->next_alive = now + HOST_ALIVE_PERIOD;
    }
    if (now > c->dl.end)
        return SYMCOLL_ERR_TIMED_OUT;
    if (now >= c->next_alive) {
        c->next_alive = now + HOST_ALIVE_PERIOD;
        if (!topo_proc_alive(st->pids[r], st->starts[r]))
            return SYMCOLL_ERR_PEER_FAILED;
    }
    return SYMCOLL_OK;
}

typedef struct host_wait_arg {
    host_call_t *c;
    int r;
} host_wait_arg_t;

static symcoll_status_t host_wait_check_hook(void *arg)
{
    host_wait_arg_t *a = arg;
    return algo_host_wait_check(a->c, a->r);
}

static symcoll_status_t host_wait(host_call_t *c, int r, uint64_t target)
{
    algo_host_sig_t *peer = c->st->sig[r];
    int g = c->comm->topo->local_ranks[r];
    host_wait_arg_t arg = {c, r};
    core_wait_t w = {.spin_max = c->st->spin_max,
                     .yields = HOST_YIELDS,
                     .sleep_ns = HOST_SLEEP_NS,
                     .progress = NULL,
                     .check = host_wait_check_hook,
                     .arg = &arg};
    symcoll_status_t status = core_wait_word(&w, &peer->progress, &peer->waiters, target);

    if (status == SYMCOLL_OK)
        return SYMCOLL_OK;
    if (atomic_load_explicit(&peer->aborted, memory_order_acquire) &&
        !atomic_load_explicit(&c->comm->aborted, memory_order_relaxed))
        log_error("all-reduce: rank %d (local rank %d) gave up: %s", g, r,
                  symcoll_status_string(status));
    else if (status == SYMCOLL_ERR_ABORTED)
        log_error("all-reduce: communicator aborted while waiting for rank %d", g);
    else if (status == SYMCOLL_ERR_TIMED_OUT)
        log_error("all-reduce: timed out after %.1f s waiting for rank %d (local rank %d)",
                  c->comm->timeout_sec, g, r);
    else
        log_error("all-reduce: rank %d (local rank %d, pid %d) died", g, r, c->st->pids[r]);
    return algo_host_fail(c, status);
}

symcoll_status_t algo_host_barrier(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    uint64_t e = ++st->epoch;
    symcoll_status_t status;

    core_word_publish(&st->sig[c->me]->progress, &st->sig[c->me]->waiters, e);
    /* Peers in order, starting after ourselves so ranks do not all poll rank 0 first. */
    c->epoch_open = true;
    for (int i = 1; i < c->n; i++) {
        status = host_wait(c, (c->me + i) % c->n, e);
        if (status != SYMCOLL_OK)
            return status;
    }
    c->epoch_open = false;
    return SYMCOLL_OK;
}

symcoll_status_t algo_host_barrier_ll(host_call_t *c, unsigned parity, size_t lines)
{
    algo_host_state_t *st = c->st;
    uint64_t e = ++st->epoch;
    symcoll_status_t status;

    /* for peers whose wait lasts, and for the epochs of every later barrier */
    core_word_publish(&st->sig[c->me]->progress, &st->sig[c->me]->waiters, e);
    c->epoch_open = true;
    for (int i = 1; i < c->n; i++) {
        int r = (c->me + i) % c->n;
        const algo_host_ll_line_t *ll = st->sig[r]->ll[parity];
        unsigned spins = 0, pause;
        size_t k = 0;

        for (size_t j = 0; j < lines; j++)
            __builtin_prefetch(&ll[j]);
        while (k < lines) {
            if (atomic_load_explicit(&ll[k].epoch, memory_order_acquire) == e) {
                k++;
                continue;
            }
            if (++spins > st->spin_max)
                break;
            pause = 0;
            core_spin_pause(&pause);
        }
        if (k < lines) {
            status = host_wait(c, r, e);
            if (status != SYMCOLL_OK)
                return status;
        }
    }
    c->epoch_open = false;
    return SYMCOLL_OK;
}

static const char *host_algo_name(int algo)
{
    static const char *const names[] = {
        [HOST_ALGO_ONESHOT] = "all-reduce (one-shot)",
        [HOST_ALGO_TWOSHOT] = "all-reduce (two-shot)",
        [HOST_ALGO_REDUCE_SCATTER] = "reduce-scatter",
        [HOST_ALGO_ALLGATHER] = "all-gather",
        [HOST_ALGO_BROADCAST] = "broadcast",
        [HOST_ALGO_BARRIER] = "barrier",
    };
    return algo > 0 && algo < (int)(sizeof(names) / sizeof(names[0])) ? names[algo] : "?";
}

static const char *host_or_q(const char *name)
{
    return name ? name : "?";
}

/* The arguments that must agree besides the count, packed side by side (exact: equal
 * words mean equal fields), and the number of broadcasts so far mod 256: an eager
 * broadcast does not meet the other ranks, so a rank that skipped or added one
 * disagrees at the next call that does. */
static uint64_t host_signature(const host_call_t *c, int algo)
{
    return (uint64_t)(uint32_t)c->root << 32 | (c->st->bc_seq & 0xff) << 24 |
           (uint64_t)(algo & 0xff) << 16 | (uint64_t)(c->op & 0xff) << 8 |
           (uint64_t)(c->dtype & 0xff);
}

void algo_host_desc_publish(host_call_t *c, int algo, uint64_t flags, size_t in_off,
                            size_t out_off)
{
    algo_host_desc_t *d = &c->st->sig[c->me]->desc[c->st->calls & 1];
    uint64_t v[5] = {host_signature(c, algo), c->count,
                     flags | ((uint64_t)c->st->chunk_bytes << 8), in_off, out_off};
    _Atomic uint64_t *w[5] = {&d->sig, &d->count, &d->flags, &d->in_off, &d->out_off};

    /* Relaxed: the release store of the next barrier publishes them. Stored only when
     * they change (only we write this line): in a loop of equal calls the peers' copies
     * of the line stay valid, and reading it costs them no cache-line transfer (measured
     * 8 B: 0.44 -> 0.38 us, 2 ranks on the 2-core VM). */
    for (int i = 0; i < 5; i++)
        if (atomic_load_explicit(w[i], memory_order_relaxed) != v[i])
            atomic_store_explicit(w[i], v[i], memory_order_relaxed);
}

symcoll_status_t algo_host_desc_collect(host_call_t *c, int algo)
{
    algo_host_state_t *st = c->st;
    unsigned parity = st->calls & 1;
    uint64_t sig = host_signature(c, algo);
    symcoll_status_t status = SYMCOLL_OK;

    st->calls++;
    c->any_out_linear = false;
    for (int r = 0; r < c->n; r++) {
        algo_host_desc_t *d = &st->sig[r]->desc[parity];
        uint64_t s = atomic_load_explicit(&d->sig, memory_order_relaxed);
        uint64_t f = atomic_load_explicit(&d->flags, memory_order_relaxed);
        uint64_t n = atomic_load_explicit(&d->count, memory_order_relaxed);
        st->peer_flags[r] = f;
        st->peer_in[r] = atomic_load_explicit(&d->in_off, memory_order_relaxed);
        st->peer_out[r] = atomic_load_explicit(&d->out_off, memory_order_relaxed);
        if (f & HOST_DESC_OUT_LINEAR)
            c->any_out_linear = true;
        if (s != sig || n != c->count || (f >> 8) != st->chunk_bytes) {
            if (status == SYMCOLL_OK)
                log_error(
                    "collective: local rank %d (rank %d) called with different arguments: "
                    "%s count %llu %s %s root %d chunk %llu after %llu broadcasts (mod "
                    "256) there, %s count %zu %s %s root %d chunk %zu after %llu here",
                    r, c->comm->topo->local_ranks[r], host_algo_name((int)(s >> 16 & 0xff)),
                    (unsigned long long)n,
                    host_or_q(symcoll_dtype_name((symcoll_dtype_t)(s & 0xff))),
                    host_or_q(symcoll_op_name((symcoll_op_t)(s >> 8 & 0xff))),
                    (int)(uint32_t)(s >> 32), (unsigned long long)(f >> 8),
                    (unsigned long long)(s >> 24 & 0xff), host_algo_name(algo), c->count,
                    host_or_q(symcoll_dtype_name(c->dtype)), host_or_q(symcoll_op_name(c->op)),
                    c->root, st->chunk_bytes, (unsigned long long)(st->bc_seq & 0xff));
            status = SYMCOLL_ERR_MISMATCH;
        }
    }
    return status;
}

char *algo_host_staging(const host_call_t *c, int r, unsigned slot)
{
    return (char *)pool_peer_addr(c->pool, r,
                                  c->st->staging_off + (size_t)slot * c->st->chunk_bytes);
}

const char *algo_host_in(const host_call_t *c, int r, size_t k, unsigned slot)
{
    if (c->st->peer_flags[r] & HOST_DESC_IN_LINEAR)
        return (const char *)pool_peer_addr(c->pool, r, c->st->peer_in[r]) +
               k * c->st->chunk_bytes;
    return algo_host_staging(c, r, slot);
}

char *algo_host_out(const host_call_t *c, int r, size_t k, unsigned slot)
{
    if (c->st->peer_flags[r] & HOST_DESC_OUT_LINEAR)
        return (char *)pool_peer_addr(c->pool, r, c->st->peer_out[r]) + k * c->st->chunk_bytes;
    return algo_host_staging(c, r, slot);
}

/*
 * The barrier of the other collectives (host_coll.c): algo_host_barrier with its signal
 * stored without a fence. A fenced store waits until the peers' copies of the progress
 * line are invalidated, a cache-line round trip that at small sizes is as long as the
 * rest of the call; unfenced, that transfer overlaps the wait for the peers. The futex
 * handshake (core_word_sleep: count the sleeper, then look at the word) then needs the
 * fence on our side before we look at the sleepers, so we look after the wait: either
 * we see a sleeper and wake it, or it saw our signal. A peer asleep on our signal has
 * signalled this epoch itself, so our wait does not depend on it; it is woken once
 * every peer has arrived, which it waits for too.
 */
symcoll_status_t algo_host_barrier_lazy(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    algo_host_sig_t *me = st->sig[c->me];
    uint64_t e = ++st->epoch;
    symcoll_status_t status = SYMCOLL_OK;

    atomic_store_explicit(&me->progress, e, memory_order_release);
    c->epoch_open = true;
    for (int i = 1; i < c->n && status == SYMCOLL_OK; i++)
        status = host_wait(c, (c->me + i) % c->n, e);
    if (status == SYMCOLL_OK)
        c->epoch_open = false;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&me->waiters, memory_order_relaxed))
        core_word_publish(&me->progress, &me->waiters, e);
    return status;
}
