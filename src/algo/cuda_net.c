/* CUDA memory across nodes, staged through pinned host memory of the pool: lanes of
 * progress threads per communicator move each queued all-reduce off the GPU, across the
 * nodes with the host algorithms over UCX, and back, in order with the caller's stream. */
/*
 * Why staged: the UCX of Debian and Ubuntu is built without CUDA, so it cannot read or
 * write GPU memory. A UCX 1.13 built with CUDA (scripts/ucx-cuda-build.sh) reports CUDA
 * memory, but on TCP, the only network here, a put into GPU memory crashes it and a put
 * into host memory is emulated at 86 MB/s, and it cannot register the CUDA pool's VMM
 * segments (bench/results/ucx-cuda-probe.md): there is no direct path (puts into the
 * CUDA pool with rkeys), the staged path serves that case too, and symcoll_info says so.
 * A direct path needs RMA into GPU memory (InfiniBand or RoCE with GPUDirect RDMA).
 *
 * The message moves in chunks of SYMCOLL_CUDA_NET_CHUNK bytes through S = 2 x lanes + 1
 * chunk-sized slots of host staging (pool memory, pinned with cudaHostRegister). Three
 * host-mapped words per slot hand a chunk back and forth: "ready" (the GPU copied chunk
 * g into the slot), "done" (a lane reduced it across the nodes), "freed" (the GPU copied
 * the result out). Each holds the low 32 bits of g + 1 for the last chunk g that passed;
 * chunks are numbered across calls in 64 bits (the slot is g mod S: a 32-bit count would
 * jump slots where it wraps), so the words only grow, compared as int32 differences
 * like CU_STREAM_WAIT_VALUE_GEQ does.
 *
 * The call (caller's thread, comm->lock held) never waits for the GPU. It queues the
 * whole pipeline on the caller's stream and the operation for the lanes, and returns:
 *   stream:  copy chunks 0 .. S-1 to their slots, raising "ready" after each; then for
 *            each chunk k: wait for "done", copy the result back, raise "freed", copy
 *            chunk k + S in (a slot is refilled only after its "freed": calls on other
 *            streams share the slots);
 *   lane i:  for each chunk k of the call with k mod lanes == i: wait for "ready",
 *            all-reduce the slot in place across the ranks (the host algorithm the
 *            selector picks for the chunk: rd, ring or hier), raise "done".
 * A message spreads over the lanes in chunks of 64K up to SYMCOLL_CUDA_NET_CHUNK
 * (topo_cuda_net_chunk). A one-chunk call (up to SYMCOLL_CUDA_NET_KERNEL_MAX bytes, when
 * no GPU serves two ranks of the communicator) queues one kernel instead of the six
 * stream commands, which does the same: measured 24.6 instead of 41-75 us at 1 KB.
 * So the lanes move chunks across the nodes at the same time while the copies of the
 * next ones run. Why lanes: one thread that sends, receives and reduces is the limit over
 * TCP (measured on the H200 machine: two pairs of ranks over loopback reach 2.2 times
 * the bandwidth of one); each lane has its own UCX worker and connections (a UCX lane
 * of the communicator's context, ucx_lane_create), its own flags and scratch, so lanes
 * share nothing but the registered pool. With one lane, it is the communicator's own
 * UCX context.
 *
 * The lanes only read and write host memory: they never call CUDA, so nothing the
 * caller's thread does inside the driver (a synchronous copy from pageable memory on the
 * legacy stream, say) can block a thread that stream waits for. (A first version used
 * copy streams and events in the thread, and deadlocked in exactly that way on the
 * H200 machine.) Nor do several lanes touch the pool: their scratch is reserved for the
 * chunk size when the staging is set up (algo_net_reserve_upto). (A single lane uses the
 * communicator's own state, reserved the same way; it may still grow it for a flat
 * chunk, as the caller would: nobody else uses the pool while operations are queued.)
 *
 * Hierarchical (several ranks on every node, whose GPUs map each other:
 * topo_cuda_net_hier): the call queues the two-shot kernel's reduce-scatter half over the
 * CUDA pool (algo_cuda_hier_rs: local rank l ends with slice l of the node's sum in its
 * staging), then this staged pipeline on that slice, whose lanes all-reduce it among
 * the ranks of local index l, one a node (algo_net_group_allreduce_on), then the
 * all-gather half (every slice from the peers' staging into the result). So each rank
 * copies, sends and reduces on the host only 1/L of the message. The hier word orders
 * these calls across streams (they share the CUDA pool's staging), and the node word
 * (after the slots) lets a rank that gives up stop its node's waiting kernels.
 *
 * Every rank's lane i runs the same chunks in the same order, so the host algorithms'
 * collective steps match lane by lane. Lane 0 takes every call's first chunk and keeps
 * polling for 20 ms when idle; the others sleep sooner, and a stream of one-chunk calls
 * neither wakes them nor waits for them (the queue, cnet_sched_t in cuda_net_plan.h,
 * counts an operation finished once the lanes with chunks in it finished it). Everything else
 * that talks to the other ranks (host all-reduces, pool allocation, trim, destroy) first drains
 * this queue (algo_cuda_net_drain), so the lanes and the caller never use the pool, the
 * bootstrap or the communicator's UCX worker at once.
 *
 * Failure: an operation that fails (peer gone, abort, timeout, CUDA error) still
 * releases its stream: each lane raises "done" for its remaining chunks, and tells its
 * peers' lanes that it gave up. The status sticks: every later call on the communicator
 * returns it. The result buffer of a failed operation is undefined.
 *
 * Streams: operations run in call order and share the slots, so calls on different
 * streams are serialised: one that waits behind long work on its stream holds up the
 * ones queued after it (as with NCCL, collectives on a communicator are ordered).
 *
 * CUDA graphs: the work is done by host threads per call, so a capture would record
 * only the stream waits; a call on a capturing stream fails with SYMCOLL_ERR_UNSUPPORTED
 * and changes nothing.
 */
#include "algo/cuda_algo.h"
#include "algo/ctx.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "algo/cuda_net_plan.h"
#include "algo/net.h"
#include "bootstrap/bootstrap.h"
#include "cuda/cuda.h"
#include "cuda/kernels.h"
#include "topo/select.h"
#include "topo/topo.h"

/* how long an idle lane polls the queue before it sleeps (the next call of a loop
 * usually comes within microseconds) */
#define CNET_IDLE_SPIN_SEC 0.02
/* lanes other than 0 only get chunks of calls of several chunks, which last long enough
 * that a wake-up does not show: they poll briefly, not to keep cores busy (and a stream
 * of one-chunk calls neither wakes them nor waits for them: cnet_sched_t) */
#define CNET_IDLE_SPIN_OTHER_SEC 0.0005
/* how often an idle lane 0 looks for its peers' failure notices (cnet_listens) */
#define CNET_LISTEN_SEC 0.05

typedef struct cnet_op {
    size_t count;
    size_t chunk; /* elements a chunk (topo_cuda_net_chunk) */
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    uint64_t first; /* number of its first chunk */
    uint64_t nchunks;
    bool group; /* hierarchical: a slice, among the ranks of this local index */
} cnet_op_t;

#define CNET_WORD_STRIDE 16 /* uint32 per line: one cache line per word */

/* One lane: a thread that moves chunks k with k mod lanes == index of each call across
 * the nodes, on its own UCX worker and connections (with one lane: the communicator's
 * own). */
typedef struct cnet_lane {
    cuda_net_t *cn;
    int index;
    ucx_ctx_t *ucx;
    bool own_ucx; /* a UCX lane of this staging (destroyed with it) */
    pthread_t thread;
    bool started;
    bool told_peers; /* this lane told its peers it gave up */
    /* where the time goes (logged at destroy, info level): seconds summed over ops */
    double t_wait_in; /* from taking an op to its first chunk on the host */
    double t_net;     /* in the host all-reduces */
    double t_busy;    /* from taking an op to releasing it */
} cnet_lane_t;

struct cuda_net {
    comm_t *comm;
    pool_t *host_pool;
    const cuda_driver_t *drv;
    int nlanes, nslots;
    cnet_lane_t lanes[CNET_LANES_MAX];
    bool running; /* the lanes (threads, UCX lanes) exist: while there is staging */

    pthread_mutex_t mu;
    pthread_cond_t work; /* work for a lane that sleeps, or stop */
    pthread_cond_t idle; /* an operation finished */
    cnet_op_t q[CNET_QUEUE];
    cnet_sched_t sched; /* which lane takes which operation, what finished (under mu) */
    bool lane0_asleep;  /* lane 0 waits on work (under mu) */
    /* drained: the caller may change what UCX reads (the registered regions, at pool
     * growth), so idle lane 0 does not listen (under mu; cleared by the next operation) */
    bool quiet;
    bool stop;
    _Atomic int aborted; /* symcoll_comm_abort: every lane tells its peers, idle or not */
    uint64_t next_chunk; /* number of the next chunk queued (caller's thread) */
    /* per slot: the last chunk whose "freed" the caller queued + 1 (0: none); once the
     * word shows it, no queued copy touches the slot any more */
    uint64_t last_freed[CNET_SLOTS_MAX];

    volatile uint32_t *words; /* host-mapped, CNET_NWORDS x nslots lines + the hier line */
    CUdeviceptr words_dev;
    /* hierarchical calls queued; the hier word (after the slots' words) holds the low 32
     * bits of the number of the last whose all-gather ran. A hierarchical call's stream
     * waits for the one before it (other streams: they share the CUDA pool's staging) */
    uint64_t hier_seq;

    bool has_stage; /* allocated and pinned */
    bool we_pinned; /* pinned by us (else by UCX: a UCX built with CUDA pins the host
                       pool's segments when it registers them) */
    size_t stage_off, slot_bytes;
    char *stage;
    char *stage_dev; /* the GPU's view of it (mapped); NULL: no small-call kernel */
    /* after the slots, in the same pinned host pool memory: the node word (non-zero: a
     * rank of this node gave up, raised by that rank through the pool mapping; the
     * hierarchical kernels stop waiting then), and its device view */
    size_t node_off;
    const volatile uint32_t *node_word_dev;
    uint64_t nops;   /* operations finished */
    double t_wait_in, t_net, t_busy; /* the lanes' sums, as they stop */
};

static volatile uint32_t *cnet_word(cuda_net_t *cn, int which, int slot)
{
    return cn->words + ((size_t)which * (size_t)cn->nslots + (size_t)slot) * CNET_WORD_STRIDE;
}

static CUdeviceptr cnet_word_dev(cuda_net_t *cn, int which, int slot)
{
    return cn->words_dev + ((size_t)which * (size_t)cn->nslots + (size_t)slot) *
                               CNET_WORD_STRIDE * sizeof(uint32_t);
}

/* pthread_cond_timedwait for at most sec (mu held); true if it timed out. */
static bool cnet_timed_wait(pthread_cond_t *cond, pthread_mutex_t *mu, double sec)
{
    struct timespec ts;
    long ns;

    clock_gettime(CLOCK_REALTIME, &ts);
    ns = ts.tv_nsec + (long)(sec * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT;
}

/* Polls a host-mapped word until it reaches value (wrap-safe) or dl passes. */
static symcoll_status_t cnet_poll_word(volatile uint32_t *w, uint32_t value,
                                       const deadline_t *dl)
{
    unsigned iter = 0;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), value)) {
        if (deadline_check(dl) != SYMCOLL_OK)
            return SYMCOLL_ERR_TIMED_OUT;
        core_spin_pause(&iter);
    }
    return SYMCOLL_OK;
}

/* the hier word: the line after the slots' */
#define CNET_HIER_LINE(cn) ((size_t)CNET_NWORDS * (size_t)(cn)->nslots * CNET_WORD_STRIDE)

/* Waits (caller's thread) until the all-gather of every queued hierarchical call ran:
 * then no queued kernel uses the CUDA pool's staging or the hier word. */
static symcoll_status_t cnet_wait_hier(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);

    if (!cn->hier_seq || cnet_poll_word(cn->words + CNET_HIER_LINE(cn), (uint32_t)cn->hier_seq,
                                        &dl) == SYMCOLL_OK)
        return SYMCOLL_OK;
    log_error("CUDA across nodes: the GPU did not finish the hierarchical call %llu in %.0f s",
              (unsigned long long)cn->hier_seq, cn->comm->timeout_sec);
    return SYMCOLL_ERR_TIMED_OUT;
}

/* Waits (caller's thread) until every copy out queued so far has run: then no queued
 * stream work reads or writes the slots or the words any more. Needs no CUDA call, so
 * it waits for this communicator's work only, on whatever device it runs. */
static symcoll_status_t cnet_wait_quiet(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);

    for (int slot = 0; slot < cn->nslots; slot++)
        if (cn->last_freed[slot] &&
            cnet_poll_word(cnet_word(cn, CNET_FREED, slot), (uint32_t)cn->last_freed[slot],
                           &dl) != SYMCOLL_OK)
            return SYMCOLL_ERR_TIMED_OUT;
    return cnet_wait_hier(cn);
}

/* ---- the lanes ----------------------------------------------------------------------- */

/* A rank of this node (this one included) raised the node word: it gave up. */
static bool cnet_node_failed(const cuda_net_t *cn)
{
    return cn->has_stage &&
           __atomic_load_n((const uint32_t *)(cn->stage + cn->node_off), __ATOMIC_ACQUIRE) != 0;
}

/* Waits until the GPU copied chunk g into its slot, keeping UCX progressing (peers may
 * be sending to us meanwhile). */
static symcoll_status_t cnet_wait_ready(cnet_lane_t *ln, uint64_t g, const deadline_t *dl)
{
    cuda_net_t *cn = ln->cn;
    volatile uint32_t *w = cnet_word(cn, CNET_READY, cnet_slot(g, cn->nslots));
    unsigned iter = 0;
    symcoll_status_t status;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), (uint32_t)(g + 1))) {
        /* another lane failed, or the caller could not queue the whole pipeline: this
         * chunk may never come */
        status = (symcoll_status_t)atomic_load_explicit(&cn->comm->algo->broken, memory_order_relaxed);
        if (status == SYMCOLL_OK && cnet_node_failed(cn))
            status = SYMCOLL_ERR_PEER_FAILED; /* a rank of the node gave up */
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_progress(ln->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes: gave up waiting for the GPU's copy of "
                      "chunk %llu (%s)",
                      (unsigned long long)g, symcoll_status_string(status));
            return status;
        }
        core_spin_pause(&iter);
    }
    return SYMCOLL_OK;
}

static void cnet_raise_done(cuda_net_t *cn, uint64_t g)
{
    __atomic_store_n(cnet_word(cn, CNET_DONE, cnet_slot(g, cn->nslots)), (uint32_t)(g + 1),
                     __ATOMIC_RELEASE);
}

/* The lane's first chunk at or after chunk k of a call: chunk k goes to lane k mod
 * lanes, so a one-chunk call always goes to lane 0, which stays hot while the others may
 * sleep. */
static uint64_t cnet_lane_chunk(const cnet_lane_t *ln, uint64_t k)
{
    uint64_t L = (uint64_t)ln->cn->nlanes;
    return k + ((uint64_t)ln->index + L - k % L) % L;
}

static symcoll_status_t cnet_run(cnet_lane_t *ln, const cnet_op_t *op, uint64_t *k_p)
{
    cuda_net_t *cn = ln->cn;
    size_t chunk = op->chunk;
    symcoll_status_t status = SYMCOLL_OK;
    double t0 = time_now(), t;
    bool first = true;

    for (*k_p = cnet_lane_chunk(ln, 0); *k_p < op->nchunks; *k_p += (uint64_t)cn->nlanes) {
        uint64_t k = *k_p, g = op->first + k;
        /* per chunk: the timeout bounds a wait, not a whole (possibly huge) message */
        deadline_t dl = deadline_make(cn->comm->timeout_sec, &cn->comm->aborted);
        size_t off = (size_t)k * chunk, n = op->count - off < chunk ? op->count - off : chunk;
        char *slot = cn->stage + (size_t)cnet_slot(g, cn->nslots) * cn->slot_bytes;

        status = cnet_wait_ready(ln, g, &dl);
        t = time_now();
        if (first)
            ln->t_wait_in += t - t0;
        first = false;
        if (status == SYMCOLL_OK && op->group)
            status = algo_net_group_allreduce_on(cn->comm, ln->ucx, cn->host_pool, slot, n,
                                                 op->dtype, op->op);
        else if (status == SYMCOLL_OK)
            status = algo_net_allreduce_on(
                cn->comm, ln->ucx, cn->host_pool,
                topo_select_algo(&cn->comm->topo->select_cfg,
                                 &cn->comm->topo->shape[SYMCOLL_MEM_HOST], SYMCOLL_MEM_HOST,
                                 n * symcoll_dtype_size(op->dtype)),
                slot, slot, n, op->dtype, op->op);
        ln->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            return status;
        cnet_raise_done(cn, g);
    }
    return SYMCOLL_OK;
}

/* Tells this lane's peers once that it gave up: their waits on it end now rather than at
 * their deadline (each lane tells its own peers: only its thread uses its worker). */
static void cnet_lane_tell(cnet_lane_t *ln)
{
    if (ln->told_peers)
        return;
    ln->told_peers = true;
    if (ln->own_ucx)
        algo_net_lane_abort(ln->ucx, ln->cn->host_pool);
    else
        algo_net_pool_abort(ln->cn->comm, ln->cn->host_pool);
}

/* Raises "done" for chunk g that this lane gives up on. Not before the slot's previous
 * chunk g - S is done: the stream's wait for that one is "at least", so raising ours
 * first would let the stream take the previous chunk out of the slot while its own lane
 * still reduces it, corrupting a call that may have succeeded. The previous chunk's lane
 * gets there: either it finishes or, seeing the failure, gives its chunks up the same
 * way (only ever waiting for lower chunk numbers). */
static void cnet_give_up_chunk(cnet_lane_t *ln, uint64_t g)
{
    cuda_net_t *cn = ln->cn;
    uint64_t ns = (uint64_t)cn->nslots;

    if (g >= ns) {
        volatile uint32_t *w = cnet_word(cn, CNET_DONE, cnet_slot(g, cn->nslots));
        deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);
        unsigned iter = 0;
        while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), (uint32_t)(g - ns + 1))) {
            (void)ucx_progress(ln->ucx);
            if (deadline_check(&dl) != SYMCOLL_OK) {
                log_error("CUDA across nodes: chunk %llu of the same slot was not released in "
                          "%.0f s; releasing chunk %llu anyway",
                          (unsigned long long)(g - ns), cn->comm->timeout_sec,
                          (unsigned long long)g);
                break;
            }
            core_spin_pause(&iter);
        }
    }
    cnet_raise_done(cn, g);
}

/* This rank gave up on the communicator: every rank of the node hears it through its
 * node word (a store through the host pool mapping; any thread, no CUDA call), so that
 * their hierarchical kernels stop waiting for this rank's. */
static void cnet_tell_node(cuda_net_t *cn)
{
    if (!cn->has_stage)
        return;
    for (int j = 0; j < pool_local_size(cn->host_pool); j++)
        __atomic_store_n((uint32_t *)((char *)pool_peer_addr(cn->host_pool, j, cn->stage_off) +
                                      cn->node_off),
                         1u, __ATOMIC_RELEASE);
}

/* This lane saw a failure (when: where, for the log): the communicator is broken for
 * good, the node's kernels stop waiting for this rank, and this lane's peers hear it. */
static void cnet_lane_break(cnet_lane_t *ln, symcoll_status_t status, const char *when)
{
    int ok = SYMCOLL_OK;

    if (atomic_compare_exchange_strong(&ln->cn->comm->algo->broken, &ok, (int)status))
        log_error("CUDA all-reduce across nodes failed%s (%s); its streams are released and "
                  "later calls on this communicator fail",
                  when, symcoll_status_string(status));
    cnet_tell_node(ln->cn); /* idempotent; a lane runs only while the staging exists */
    cnet_lane_tell(ln);
}

/* The operation failed for this lane (its own failure, another lane's, the caller's):
 * make it sticky, tell this lane's peers once, release the lane's remaining chunks. */
static void cnet_lane_fail(cnet_lane_t *ln, const cnet_op_t *op, uint64_t k,
                           symcoll_status_t status)
{
    cuda_net_t *cn = ln->cn;

    cnet_lane_break(ln, status, "");
    /* release the stream: every chunk of this lane not done yet is "done" (its result is
     * undefined); a slot's next copy in still waits for its copy out */
    for (k = cnet_lane_chunk(ln, k); k < op->nchunks; k += (uint64_t)cn->nlanes)
        cnet_give_up_chunk(ln, op->first + k);
}

/* The communicator was aborted or broke (the caller's failure, another lane's) and this
 * lane, idle, has not told its peers yet. Only a lane with its own worker: a single lane
 * uses the communicator's, which an idle lane must leave to the caller (whose own calls
 * tell the peers when they fail, and whose destroy does). */
static bool cnet_must_tell(const cnet_lane_t *ln)
{
    return ln->own_ucx && !ln->told_peers &&
           (atomic_load_explicit(&ln->cn->aborted, memory_order_acquire) ||
            atomic_load_explicit(&ln->cn->comm->algo->broken, memory_order_relaxed) != SYMCOLL_OK);
}

/* No work has been queued for this lane since it last looked (it may still have some
 * that it skipped past: cnet_sched_next decides; this only saves it the mutex while it
 * polls). Lane 0 has chunks in every call; the others only in calls of several chunks. */
static bool cnet_nothing_new(const cnet_lane_t *ln)
{
    const cnet_sched_t *s = &ln->cn->sched;
    uint64_t pos = __atomic_load_n(&s->pos[ln->index], __ATOMIC_RELAXED);

    return (ln->index == 0 ? cnet_sched_end(s) : cnet_sched_multi_end(s)) <= pos;
}

/* Whether this lane, idle, keeps listening for its peers' failure notices: lane 0 (it has
 * a chunk in every operation, so its peers' lane 0 tell it whenever they fail) with its
 * own worker (only its thread may progress it), until it has given up itself. Else a
 * rank whose last operation finished here but failed elsewhere hears nothing until its
 * next call, while its node's hierarchical kernels may wait for a rank that died (seen
 * on the H200s: 20 s, the timeout, for the node peer of a killed rank). */
static bool cnet_listens(const cnet_lane_t *ln)
{
    return ln->index == 0 && ln->own_ucx && !ln->told_peers && !ln->cn->quiet;
}

static void *cnet_lane_main(void *arg)
{
    cnet_lane_t *ln = arg;
    cuda_net_t *cn = ln->cn;
    cnet_op_t op;
    symcoll_status_t status;
    uint64_t k, opi, finished;
    bool have, listen, quick_sleep = false;
    double t0;

    log_set_rank(cn->comm->rank);
    for (;;) {
        /* after a listening turn, back to sleep at once (no polling: an idle
         * communicator should not cost a core) */
        double idle_until = time_now() + (quick_sleep      ? 0
                                          : ln->index == 0 ? CNET_IDLE_SPIN_SEC
                                                           : CNET_IDLE_SPIN_OTHER_SEC);
        unsigned iter = 0;

        quick_sleep = false;
        /* poll first: a loop of calls should not pay a wake-up each */
        while (cnet_nothing_new(ln) && time_now() < idle_until &&
               !__atomic_load_n(&cn->stop, __ATOMIC_ACQUIRE) && !cnet_must_tell(ln))
            core_spin_pause(&iter);
        pthread_mutex_lock(&cn->mu);
        listen = false;
        while (!(have = cnet_sched_next(&cn->sched, ln->index, &opi)) && !cn->stop &&
               !cnet_must_tell(ln) && !listen) {
            /* only lane 0 says whether it sleeps: another lane going to sleep or waking
             * must not clear it (a one-chunk call would then not wake lane 0, which has
             * its only chunk: seen on the H200s as a lane that never came) */
            if (ln->index == 0)
                cn->lane0_asleep = true;
            if (cnet_listens(ln))
                listen = cnet_timed_wait(&cn->work, &cn->mu, CNET_LISTEN_SEC);
            else
                pthread_cond_wait(&cn->work, &cn->mu);
            if (ln->index == 0)
                cn->lane0_asleep = false;
        }
        if (listen && !have) {
            /* idle lane 0 looks for failure notices of its peers (see cnet_listens), under
             * the mutex: the caller sets quiet under it before it changes the regions UCX
             * reads (pool growth) */
            status = cn->quiet ? SYMCOLL_OK : ucx_progress(ln->ucx);
            pthread_mutex_unlock(&cn->mu);
            if (status != SYMCOLL_OK)
                cnet_lane_break(ln, status, " while no operation was queued");
            quick_sleep = true;
            continue;
        }
        if (cnet_must_tell(ln)) {
            /* aborted or broken while idle: peers whose lanes wait on this one, and the
             * node's kernels, hear it now */
            pthread_mutex_unlock(&cn->mu);
            cnet_lane_break(ln, SYMCOLL_ERR_ABORTED, " (aborted)");
            continue;
        }
        if (!have) {
            pthread_mutex_unlock(&cn->mu);
            break; /* stop, nothing left */
        }
        op = cn->q[opi % CNET_QUEUE];
        pthread_mutex_unlock(&cn->mu);

        status = (symcoll_status_t)atomic_load(&cn->comm->algo->broken);
        t0 = time_now();
        k = 0;
        if (status == SYMCOLL_OK)
            status = cnet_run(ln, &op, &k);
        if (status != SYMCOLL_OK)
            cnet_lane_fail(ln, &op, k, status);
        ln->t_busy += time_now() - t0;

        pthread_mutex_lock(&cn->mu);
        finished = cnet_sched_finish(&cn->sched, ln->index);
        if (finished) {
            cn->nops += finished;
            pthread_cond_broadcast(&cn->idle);
        }
        pthread_mutex_unlock(&cn->mu);
    }
    return NULL;
}

/* Stops the lanes (queue drained: caller's thread) and destroys their UCX lanes
 * (collective, like their creation). */
static void cnet_lanes_stop(cuda_net_t *cn)
{
    if (!cn->running)
        return;
    pthread_mutex_lock(&cn->mu);
    cn->stop = true;
    pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);
    for (int i = 0; i < cn->nlanes; i++) {
        cnet_lane_t *ln = &cn->lanes[i];
        if (ln->started)
            pthread_join(ln->thread, NULL);
        ln->started = false;
        cn->t_wait_in += ln->t_wait_in;
        cn->t_net += ln->t_net;
        cn->t_busy += ln->t_busy;
        ln->t_wait_in = ln->t_net = ln->t_busy = 0;
    }
    for (int i = 0; i < cn->nlanes; i++) {
        cnet_lane_t *ln = &cn->lanes[i];
        if (ln->own_ucx && ln->ucx)
            algo_net_lane_destroy(ln->ucx, cn->host_pool);
        ln->ucx = NULL;
        ln->own_ucx = false;
    }
    cn->stop = false;
    cn->running = false;
}

/* Starts the lanes (queue empty: caller's thread; collective). With one lane, it uses
 * the communicator's own UCX context; with more, each its own UCX lane, whose
 * algorithm scratch is reserved here for the chunk size: lane threads never grow the
 * pool, since several run at once. */
static symcoll_status_t cnet_lanes_start(cuda_net_t *cn)
{
    symcoll_status_t status = SYMCOLL_OK;

    cn->running = true;
    for (int i = 0; i < cn->nlanes && status == SYMCOLL_OK; i++) {
        cnet_lane_t *ln = &cn->lanes[i];
        net_state_t *st;
        memset(ln, 0, sizeof(*ln));
        ln->cn = cn;
        ln->index = i;
        if (cn->nlanes == 1) {
            /* the communicator's own context and state: its scratch is reserved too (not
             * fixed), since the hierarchical algorithm's steps among one rank a node do
             * not run on every rank (a slice may be empty) and could not grow it
             * collectively */
            ln->ucx = cn->comm->ucx;
        } else {
            status = ucx_lane_create(cn->comm->ucx, &ln->ucx);
            if (status != SYMCOLL_OK)
                break;
            ln->own_ucx = true;
        }
        status = algo_net_state_get_on(cn->comm, ln->ucx, cn->host_pool, &st);
        if (status == SYMCOLL_OK)
            status = algo_net_reserve_upto(st, cn->slot_bytes, cn->nlanes > 1);
    }
    cnet_sched_restart_lanes(&cn->sched); /* the queue is empty: they start at its end */
    for (int i = 0; i < cn->nlanes && status == SYMCOLL_OK; i++) {
        cnet_lane_t *ln = &cn->lanes[i];
        if (pthread_create(&ln->thread, NULL, cnet_lane_main, ln)) {
            log_error("CUDA all-reduce across nodes: cannot start lane thread %d", i);
            status = SYMCOLL_ERR_SYSTEM;
            break;
        }
        ln->started = true;
    }
    /* every rank started its lanes, or all stop them together (stopping is collective);
     * the steps above that talk to the others fail on every rank alike */
    {
        int32_t ok = status == SYMCOLL_OK,
                *oks = calloc((size_t)cn->comm->nranks, sizeof(*oks));
        symcoll_status_t bs =
            oks ? bootstrap_allgather(cn->comm->bootstrap, &ok, oks, sizeof(ok))
                : SYMCOLL_ERR_NO_MEMORY;
        if (bs != SYMCOLL_OK && status == SYMCOLL_OK)
            status = bs;
        for (int r = 0; oks && r < cn->comm->nranks && status == SYMCOLL_OK; r++) {
            if (!oks[r]) {
                log_error("CUDA all-reduce across nodes: rank %d could not start its lanes", r);
                status = SYMCOLL_ERR_SYSTEM;
            }
        }
        free(oks);
    }
    if (status != SYMCOLL_OK)
        cnet_lanes_stop(cn);
    return status;
}

/* ---- staging ------------------------------------------------------------------------
 * Allocated and pinned by the caller's thread while no operation is queued (collective:
 * the same call on every rank), together with the lanes. Never by a lane thread:
 * cudaHostRegister waits for work the driver has queued, and a caller's stream may be
 * waiting for that thread. */

static void cnet_stage_release(cuda_net_t *cn)
{
    cnet_lanes_stop(cn);
    if (!cn->has_stage)
        return;
    /* every queued operation was released (drained); once each slot's last copy out
     * ran, nothing queued touches the slots */
    if (cnet_wait_quiet(cn) != SYMCOLL_OK) {
        log_error("CUDA across nodes: the GPU did not finish copying out of the host staging; "
                  "leaving it mapped (%zu bytes)",
                  (size_t)cn->nslots * cn->slot_bytes);
        cn->has_stage = false;
        return;
    }
    if (cn->we_pinned)
        cudaHostUnregister(cn->stage);
    pool_free(cn->host_pool, cn->stage_off);
    cn->has_stage = false;
}

/* p is page-locked host memory CUDA knows (registered or allocated by CUDA). */
static bool cnet_pinned(const void *p)
{
    struct cudaPointerAttributes a;

    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

static symcoll_status_t cnet_stage_ensure(cuda_net_t *cn)
{
    size_t bytes;
    symcoll_status_t status;
    cudaError_t err;

    if (cn->has_stage)
        return SYMCOLL_OK;
    cn->slot_bytes =
        (cn->comm->config.cuda_net_chunk + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    cn->node_off = (size_t)cn->nslots * cn->slot_bytes;
    bytes = cn->node_off + POOL_ALIGN;
    status = pool_alloc(cn->host_pool, bytes, POOL_ALLOC_STAGING, &cn->stage_off);
    if (status != SYMCOLL_OK)
        return status;
    cn->stage = pool_peer_addr(cn->host_pool, pool_local_rank(cn->host_pool), cn->stage_off);
    /* before the lanes start (an agreement among all ranks): no peer raises it earlier */
    __atomic_store_n((uint32_t *)(cn->stage + cn->node_off), 0u, __ATOMIC_RELEASE);
    /* pinned, or nothing: a copy from pageable memory to the GPU reads its source when it
     * is queued, long before the lane has reduced the chunk */
    err = cudaHostRegister(cn->stage, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    cn->we_pinned = err == cudaSuccess;
    if (err == cudaErrorHostMemoryAlreadyRegistered) {
        /* UCX with CUDA support (cuda_copy) pinned the pool's segments when it registered
         * them (portable): fine, if both ends of the staging are pinned host memory */
        (void)cudaGetLastError();
        err = cnet_pinned(cn->stage) && cnet_pinned(cn->stage + bytes - 1)
                  ? cudaSuccess
                  : cudaErrorHostMemoryAlreadyRegistered;
        if (err == cudaSuccess)
            log_debug("CUDA across nodes: the host staging was pinned already (by UCX)");
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        pool_free(cn->host_pool, cn->stage_off);
        log_error("CUDA across nodes: cannot pin %zu bytes of host staging (%s)", bytes,
                  cudaGetErrorString(err));
        return SYMCOLL_ERR_CUDA;
    }
    cn->has_stage = true;
    {
        /* the small-call kernel reads and writes the slots directly; portable and
         * mapped: the same view serves every device where host pointers are unified */
        void *dev = NULL;
        bool mapped = cudaHostGetDevicePointer(&dev, cn->stage, 0) == cudaSuccess;
        cn->stage_dev = mapped && dev == (void *)cn->stage ? cn->stage : NULL;
        cn->node_word_dev =
            mapped ? (const volatile uint32_t *)((char *)dev + cn->node_off) : NULL;
        (void)cudaGetLastError();
    }
    status = cnet_lanes_start(cn);
    if (status != SYMCOLL_OK) {
        cnet_stage_release(cn);
        return status;
    }
    log_debug("CUDA across nodes: %d x %zu bytes of pinned host staging at pool offset %zu, "
              "%d lanes",
              cn->nslots, cn->slot_bytes, cn->stage_off, cn->nlanes);
    return SYMCOLL_OK;
}

/* ---- creation and teardown (caller's thread, comm->lock held) ---------------------- */

static void cnet_free(cuda_net_t *cn)
{
    if (cn->words)
        cudaFreeHost((void *)cn->words);
    pthread_cond_destroy(&cn->work);
    pthread_cond_destroy(&cn->idle);
    pthread_mutex_destroy(&cn->mu);
    free(cn);
}

static symcoll_status_t cnet_create(comm_t *comm, pool_t *host_pool, cuda_net_t **cn_p)
{
    cuda_net_t *cn = calloc(1, sizeof(*cn));
    size_t words_bytes;
    symcoll_status_t status;
    void *host = NULL, *dev = NULL;
    cudaError_t err;

    if (!cn)
        return SYMCOLL_ERR_NO_MEMORY;
    pthread_mutex_init(&cn->mu, NULL);
    pthread_cond_init(&cn->work, NULL);
    pthread_cond_init(&cn->idle, NULL);
    cn->comm = comm;
    cn->host_pool = host_pool;
    cn->nlanes = (int)comm->config.cuda_net_lanes; /* 1 .. 15: checked by the config */
    cn->nslots = cnet_nslots(cn->nlanes);
    cnet_sched_init(&cn->sched, cn->nlanes);
    words_bytes = (CNET_HIER_LINE(cn) + CNET_WORD_STRIDE) * sizeof(uint32_t);
    cn->drv = cuda_driver("CUDA all-reduce across nodes");
    if (!cn->drv) {
        status = SYMCOLL_ERR_CUDA;
        goto err_free;
    }
    /* portable: the words serve streams of any device the caller uses */
    err = cudaHostAlloc(&host, words_bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (err == cudaSuccess) {
        cn->words = host;
        memset(host, 0, words_bytes);
        err = cudaHostGetDevicePointer(&dev, host, 0);
    }
    if (err != cudaSuccess) {
        status = cuda_rt_error(err, "CUDA all-reduce across nodes: host-mapped words");
        goto err_free;
    }
    cn->words_dev = (CUdeviceptr)(uintptr_t)dev;
    log_info("CUDA memory across nodes: staged through pinned host memory (%s), %d lanes",
             comm->topo->shape[SYMCOLL_MEM_CUDA].net_cuda
                 ? "UCX reports CUDA memory, but there is no direct path"
                 : "UCX of some rank has no CUDA memory support",
             cn->nlanes);
    *cn_p = cn;
    return SYMCOLL_OK;

err_free:
    cnet_free(cn);
    return status;
}

/* Waits until at most max operations are queued. The timeout counts from the last one
 * that finished: queued operations wait for their streams, which may hold long work. */
static symcoll_status_t cnet_wait_queued(cuda_net_t *cn, uint64_t max)
{
    comm_t *comm = cn->comm;
    deadline_t dl = deadline_make(comm->timeout_sec, NULL);
    uint64_t seen;
    symcoll_status_t status = SYMCOLL_OK;

    pthread_mutex_lock(&cn->mu);
    seen = cn->sched.head;
    while (cnet_sched_queued(&cn->sched) > max) {
        (void)cnet_timed_wait(&cn->idle, &cn->mu, 0.01);
        if (cn->sched.head != seen) {
            seen = cn->sched.head;
            dl = deadline_make(comm->timeout_sec, NULL);
        } else if (deadline_check(&dl) != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes: no queued operation finished in %.0f s",
                      comm->timeout_sec);
            status = SYMCOLL_ERR_TIMED_OUT;
            break;
        }
    }
    pthread_mutex_unlock(&cn->mu);
    return status;
}

symcoll_status_t algo_cuda_net_drain(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;
    symcoll_status_t status;

    if (!cn)
        return SYMCOLL_OK;
    status = cnet_wait_queued(cn, 0);
    pthread_mutex_lock(&cn->mu);
    cn->quiet = true;
    pthread_mutex_unlock(&cn->mu);
    /* and the hierarchical calls' all-gather kernels: a trim may free their staging */
    if (status == SYMCOLL_OK)
        status = cnet_wait_hier(cn);
    if (status == SYMCOLL_OK)
        status = (symcoll_status_t)atomic_load(&cn->comm->algo->broken);
    return status;
}

void algo_cuda_net_abort(comm_t *comm)
{
    cuda_net_t *cn = __atomic_load_n(&comm->algo->cuda_net, __ATOMIC_ACQUIRE);
    int ok = SYMCOLL_OK;

    if (!cn)
        return;
    atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok, (int)SYMCOLL_ERR_ABORTED);
    atomic_store_explicit(&cn->aborted, 1, memory_order_release);
    pthread_mutex_lock(&cn->mu);
    pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);
}

void algo_cuda_net_release(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;

    if (!cn || algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT)
        return;
    cnet_stage_release(cn);
}

void algo_cuda_net_destroy(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;

    if (!cn)
        return;
    if (algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT) {
        /* make the lanes fail what is left (and release those streams) */
        int ok = SYMCOLL_OK;
        atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok, (int)SYMCOLL_ERR_TIMED_OUT);
    }
    cnet_stage_release(cn); /* stops the lanes once the queue is empty */
    if (cn->nops)
        log_info("CUDA across nodes: %llu all-reduces on %d lanes; per call, us, summed over "
                 "the lanes: %.1f busy = %.1f until the first chunk was on the host + %.1f "
                 "in the host all-reduces + the rest",
                 (unsigned long long)cn->nops, cn->nlanes, 1e6 * cn->t_busy / (double)cn->nops,
                 1e6 * cn->t_wait_in / (double)cn->nops, 1e6 * cn->t_net / (double)cn->nops);
    comm->algo->cuda_net = NULL;
    /* the words too: a stream may still be on its way to its last copy out */
    if (cnet_wait_quiet(cn) != SYMCOLL_OK) {
        log_error("CUDA across nodes: the GPU did not finish its queued copies; leaving the "
                  "host-mapped words allocated");
        cn->words = NULL;
    }
    cnet_free(cn);
}

/* ---- the call -------------------------------------------------------------------- */

/* Queues one command of the plan (algo/cuda_net_plan.c) on the caller's stream. */
typedef struct cnet_queue {
    cuda_net_t *cn;
    cudaStream_t s;
    const cnet_op_t *o;
    const char *send;
    char *recv;
} cnet_queue_t;

static symcoll_status_t cnet_queue_cmd(void *arg, const cnet_cmd_t *c)
{
    cnet_queue_t *q = arg;
    cuda_net_t *cn = q->cn;
    size_t esize = symcoll_dtype_size(q->o->dtype), chunk = q->o->chunk;
    size_t first = (size_t)c->k * chunk;
    size_t n = q->o->count - first < chunk ? q->o->count - first : chunk;
    char *slot = cn->stage + (size_t)c->slot * cn->slot_bytes;
    CUresult res;
    cudaError_t err;

    switch (c->kind) {
    case CNET_CMD_WAIT:
        res = cn->drv->stream_wait_value32(q->s, cnet_word_dev(cn, c->word, c->slot), c->value,
                                           CU_STREAM_WAIT_VALUE_GEQ);
        return res == CUDA_SUCCESS ? SYMCOLL_OK : cuda_drv_error(res, "cuStreamWaitValue32");
    case CNET_CMD_WRITE:
        res = cn->drv->stream_write_value32(q->s, cnet_word_dev(cn, c->word, c->slot), c->value,
                                            0);
        if (res != CUDA_SUCCESS)
            return cuda_drv_error(res, "cuStreamWriteValue32");
        if (c->word == CNET_FREED)
            cn->last_freed[c->slot] = q->o->first + c->k + 1;
        return SYMCOLL_OK;
    case CNET_CMD_COPY_IN:
        err = cudaMemcpyAsync(slot, q->send + first * esize, n * esize, cudaMemcpyDeviceToHost,
                              q->s);
        return err == cudaSuccess ? SYMCOLL_OK
                                  : cuda_rt_error(err, "CUDA across nodes: copy to the host");
    case CNET_CMD_COPY_OUT:
        err = cudaMemcpyAsync(q->recv + first * esize, slot, n * esize, cudaMemcpyHostToDevice,
                              q->s);
        return err == cudaSuccess ? SYMCOLL_OK
                                  : cuda_rt_error(err, "CUDA across nodes: copy from the host");
    }
    return SYMCOLL_ERR_INTERNAL;
}

/* A one-chunk call as one kernel: the same commands as cnet_plan queues for it (wait for
 * the slot's "freed", copy in, "ready", wait for "done", copy out, "freed"), run by the
 * GPU in one launch; measured faster than six stream commands for small messages. */
static symcoll_status_t cnet_queue_small(cuda_net_t *cn, cudaStream_t s, const cnet_op_t *o,
                                         const void *sendbuf, void *recvbuf)
{
    uint64_t g = o->first, ns = (uint64_t)cn->nslots;
    int slot = cnet_slot(g, cn->nslots);
    cuda_net_small_args_t a;
    cudaError_t err;

    memset(&a, 0, sizeof(a));
    a.send = sendbuf;
    a.recv = recvbuf;
    a.bytes = o->count * symcoll_dtype_size(o->dtype);
    a.slot = cn->stage_dev + (size_t)slot * cn->slot_bytes;
    a.ready = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_READY, slot);
    a.done = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_DONE, slot);
    a.freed = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_FREED, slot);
    a.value = (uint32_t)(g + 1);
    a.has_wait = g >= ns;
    a.wait_freed = (uint32_t)(g - ns + 1);
    err = (cudaError_t)cuda_net_small_launch(&a, s);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "CUDA across nodes: staging kernel");
    cn->last_freed[slot] = g + 1;
    return SYMCOLL_OK;
}

/* Queues one operation for the lanes and its pipeline on the stream (the staging is in
 * place). On failure the communicator is broken: the lanes stop waiting for its chunks. */
static symcoll_status_t cnet_enqueue(cuda_net_t *cn, cudaStream_t s, const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op, bool group)
{
    const size_t esize = symcoll_dtype_size(dtype);
    symcoll_status_t status;
    cnet_op_t o;
    size_t chunk;

    /* a free queue entry: the lanes free one per operation */
    status = cnet_wait_queued(cn, CNET_QUEUE - 1);
    if (status != SYMCOLL_OK)
        return status;
    chunk = topo_cuda_net_chunk(count * esize, cn->slot_bytes, cn->nlanes) / esize;
    if (chunk == 0)
        chunk = 1; /* count 0 never comes here; keep the division below defined anyway */
    o.chunk = chunk;
    o.count = count;
    o.dtype = dtype;
    o.op = op;
    o.group = group;
    o.first = cn->next_chunk;
    o.nchunks = (count + chunk - 1) / chunk;
    cn->next_chunk += o.nchunks;

    /* the lanes first: they wait for each chunk's "ready" anyway. Only lanes with chunks
     * in it need to hear of it: lane 0 (if it sleeps) for a one-chunk call, every lane
     * for more */
    pthread_mutex_lock(&cn->mu);
    cn->quiet = false;
    cn->q[cn->sched.end % CNET_QUEUE] = o;
    (void)cnet_sched_push(&cn->sched, o.nchunks);
    if (o.nchunks > 1 || cn->lane0_asleep)
        pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);

    /* the pipeline on the caller's stream */
    if (o.nchunks == 1 && count * esize <= cn->comm->config.cuda_net_kernel_max &&
        cn->stage_dev && !cn->comm->topo->shape[SYMCOLL_MEM_CUDA].gpus_shared) {
        /* (not where a GPU serves two ranks: the kernel spins on the GPU until its lane
         * is done, which held the other process's work back, 2.3-3.7 ms instead of
         * 0.3 ms a small call with 2 ranks a GPU on the H200 machine) */
        return cnet_queue_small(cn, s, &o, sendbuf, recvbuf);
    } else {
        cnet_queue_t q = {cn, s, &o, sendbuf, recvbuf};
        return cnet_plan(o.first, o.nchunks, cn->nslots, cnet_queue_cmd, &q);
    }
}

/* Hierarchical: reduce-scatter over the GPUs of the node (a kernel over the CUDA pool's
 * peer mappings), this rank's slice of the node's sum staged across the nodes among
 * the ranks of its local index (the lanes, as any staged call), all-gather over the
 * GPUs; all on the stream. Each rank sends only 1/L of the message across nodes, and the
 * host reduces only 1/L of it. */
static symcoll_status_t cnet_hier(cuda_net_t *cn, cudaStream_t s, pool_t *cuda_pool,
                                  const void *sendbuf, void *recvbuf, size_t count,
                                  symcoll_dtype_t dtype, symcoll_op_t op)
{
    comm_t *comm = cn->comm;
    CUdeviceptr hw = cn->words_dev + CNET_HIER_LINE(cn) * sizeof(uint32_t);
    symcoll_status_t status = SYMCOLL_OK;
    char *slice = NULL;
    size_t slice_count = 0;
    CUresult res;

    if (!algo_cuda_hier_ready(cuda_pool, count * symcoll_dtype_size(dtype))) {
        /* the CUDA staging is set up or grows (collective pool calls): nothing queued may
         * still use the pool or the staging */
        status = algo_cuda_net_drain(comm);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (cn->hier_seq) {
        res = cn->drv->stream_wait_value32(s, hw, (uint32_t)cn->hier_seq,
                                           CU_STREAM_WAIT_VALUE_GEQ);
        if (res != CUDA_SUCCESS)
            return cuda_drv_error(res, "cuStreamWaitValue32");
    }
    status = algo_cuda_hier_rs(comm, cuda_pool, sendbuf, count, dtype, op, cn->node_word_dev, s,
                               &slice, &slice_count);
    if (status != SYMCOLL_OK)
        return status;
    if (slice_count > 0)
        status = cnet_enqueue(cn, s, slice, slice, slice_count, dtype, op, true);
    if (status == SYMCOLL_OK)
        status =
            algo_cuda_hier_ag(comm, cuda_pool, recvbuf, count, dtype, cn->node_word_dev, s);
    if (status != SYMCOLL_OK)
        return status;
    res = cn->drv->stream_write_value32(s, hw, (uint32_t)(cn->hier_seq + 1), 0);
    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuStreamWriteValue32");
    cn->hier_seq++; /* waited for only once its write is queued */
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, const topo_plan_t *plan,
                                         pool_t *host_pool, pool_t *plan_cuda_pool,
                                         const void *sendbuf, void *recvbuf, size_t count,
                                         symcoll_dtype_t dtype, symcoll_op_t op, void *stream)
{
    const size_t esize = symcoll_dtype_size(dtype);
    cudaStream_t s = (cudaStream_t)stream;
    cuda_net_t *cn = comm->algo->cuda_net;
    pool_t *cuda_pool = NULL;
    symcoll_status_t status;

    (void)esize; /* alignment and capture: checked by algo_check_call */
    if (plan->family == TOPO_FAMILY_NET_CUDA_HIER) {
        cuda_pool = plan_cuda_pool;
        if (!cuda_pool) {
            log_error("symcoll_allreduce: internal error: no CUDA pool for the hierarchical "
                      "algorithm");
            return SYMCOLL_ERR_INTERNAL;
        }
    }
    if (!cn) {
        status = cnet_create(comm, host_pool, &cn);
        if (status != SYMCOLL_OK)
            return status;
        /* symcoll_comm_abort may read it from another thread */
        __atomic_store_n(&comm->algo->cuda_net, cn, __ATOMIC_RELEASE);
    }
    if (cnet_node_failed(cn)) {
        /* a rank of this node gave up: its kernels will not come */
        int ok = SYMCOLL_OK;
        if (atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok, (int)SYMCOLL_ERR_PEER_FAILED))
            log_error("symcoll_allreduce: a rank of this node gave up on the communicator");
    }
    status = (symcoll_status_t)atomic_load(&cn->comm->algo->broken);
    if (status != SYMCOLL_OK) {
        log_error("symcoll_allreduce: an earlier CUDA all-reduce across nodes failed (%s); "
                  "the communicator can only be destroyed",
                  symcoll_status_string(status));
        cnet_tell_node(cn); /* idempotent: the node's kernels must not wait for ours */
        return status;
    }

    if (!cn->has_stage) {
        /* first call, or the first after a trim: the queue is empty then */
        status = algo_cuda_net_drain(comm);
        if (status == SYMCOLL_OK)
            status = cnet_stage_ensure(cn);
    }
    if (status == SYMCOLL_OK)
        status = cuda_pool ? cnet_hier(cn, s, cuda_pool, sendbuf, recvbuf, count, dtype, op)
                           : cnet_enqueue(cn, s, sendbuf, recvbuf, count, dtype, op, false);
    if (status != SYMCOLL_OK) {
        /* other ranks may have queued this call: their threads would wait for ours; the
         * lanes stop waiting for this call's chunks and release them (and every later
         * call fails), and the node's kernels stop waiting for ours */
        int ok = SYMCOLL_OK;
        if (atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok, (int)status))
            cnet_tell_node(cn);
        /* idle lanes wake and tell their peers (cnet_must_tell) */
        pthread_mutex_lock(&cn->mu);
        pthread_cond_broadcast(&cn->work);
        pthread_mutex_unlock(&cn->mu);
    }
    return status;
}
