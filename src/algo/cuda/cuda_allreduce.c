/* CUDA all-reduce inside a node: picks one-shot or two-shot, keeps the staging space in
 * the CUDA pool, fills the kernel arguments and launches on the caller's stream. */
/*
 * Staging: one-shot uses 2 parities x n sources x slot bytes, allocated once (slot from
 * SYMCOLL_CUDA_ONESHOT_MAX); two-shot (n-1) input slices plus a full-size results area,
 * allocated at the largest size seen. A larger size makes the staging grow: the stream
 * is synchronised first (the old space may still be in use by this rank's kernels; the
 * peers' uses of it ended before this rank's kernels did), then the old space is freed
 * and a new one allocated collectively. Every rank reaches the same decision from the
 * same arguments. Under stream capture no staging may grow: the call fails with
 * SYMCOLL_ERR_IN_PROGRESS and says to warm up.
 *
 * Failures: a kernel that gives up (abort, a dead or failed peer, other arguments, the
 * deadline) leaves the reason in the host-mapped error word; the next call reads it and
 * breaks the communicator. The kernels cannot see a peer process die: a watcher thread
 * per communicator (while the CUDA pool exists, with more than one local rank) waits on
 * the local peers' pidfds and looks at their /proc state every WATCH_PERIOD_MS (zombies
 * too), and raises the abort word with CUDA_KERR_PEER when one is gone.
 */
#define _GNU_SOURCE /* syscall */
#include "algo/cuda/cuda_algo.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda/coll.h"
#include "cuda/cuda.h"
#include "cuda/kernels.h"
#include "cuda/sig.h"

/* pool_cuda.c; named here so that static links of the library always carry it */
extern const pool_backend_t pool_cuda_backend;
#include "bootstrap/bootstrap.h"
#include "algo/base/ctx.h"
#include "topo/topo.h"

/* the watcher's look at /proc when no pidfd tells it at once */
#define WATCH_PERIOD_MS 100

typedef struct cuda_watch {
    pthread_t thread;
    bool running;
    int stop[2]; /* pipe: a byte (or its closing) ends the thread */
    int n, me;
    int pid[CUDA_AR_MAX_RANKS];
    uint64_t start[CUDA_AR_MAX_RANKS];
    int rank[CUDA_AR_MAX_RANKS];  /* communicator rank of each local rank */
    int pidfd[CUDA_AR_MAX_RANKS]; /* -1: none (the kernel has no pidfd_open, or it failed) */
    cuda_words_t *words;
    _Atomic int dead; /* local rank + 1 of the first peer seen gone, 0 while none */
} cuda_watch_t;

struct cuda_algo_state {
    cuda_words_t words;
    cuda_watch_t watch;
    int me, n;
    int device;
    int nb[CUDA_AR_NALGOS]; /* fixed grid of each kernel */
    bool has_stage[CUDA_AR_NALGOS];
    size_t stage_off[CUDA_AR_NALGOS];
    size_t stage_slot[CUDA_AR_NALGOS];
    size_t stage_out; /* two-shot: offset of the results area */
    /* the other collectives' scratch (algo_cuda_scratch) */
    bool has_scratch[ALGO_CUDA_SCRATCH_N];
    size_t scratch_off[ALGO_CUDA_SCRATCH_N];
    size_t scratch_bytes[ALGO_CUDA_SCRATCH_N];
};
typedef struct cuda_algo_state cuda_algo_state_t;

/* the kernels' signature numbers the collectives as the algorithm layer does */
_Static_assert((int)CUDA_AR_COLL_REDUCE_SCATTER == (int)TOPO_COLL_REDUCE_SCATTER &&
                   (int)CUDA_AR_COLL_ALLGATHER == (int)TOPO_COLL_ALLGATHER &&
                   (int)CUDA_AR_COLL_BROADCAST == (int)TOPO_COLL_BROADCAST &&
                   (int)CUDA_AR_COLL_BARRIER == (int)TOPO_COLL_BARRIER &&
                   (int)CUDA_AR_COLL_ALLREDUCE == (int)TOPO_COLL_ALLREDUCE,
               "CUDA_AR_COLL_* and TOPO_COLL_* differ");

/* ---- the watcher of the local peers' processes ---------------------------------------- */

static int pidfd_open_nothrow(int pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void *watch_main(void *arg)
{
    cuda_watch_t *w = arg;
    bool gone[CUDA_AR_MAX_RANKS] = {false};

    for (;;) {
        struct pollfd pf[CUDA_AR_MAX_RANKS + 1];
        int who[CUDA_AR_MAX_RANKS + 1];
        int nf = 0;

        pf[nf++] = (struct pollfd){.fd = w->stop[0], .events = POLLIN};
        for (int r = 0; r < w->n; r++) {
            if (r != w->me && !gone[r] && w->pidfd[r] >= 0) {
                who[nf] = r;
                pf[nf++] = (struct pollfd){.fd = w->pidfd[r], .events = POLLIN};
            }
        }
        if (poll(pf, (nfds_t)nf, WATCH_PERIOD_MS) < 0) {
            if (errno != EINTR)
                usleep(WATCH_PERIOD_MS * 1000);
            continue;
        }
        if (pf[0].revents)
            return NULL;
        for (int r = 0; r < w->n; r++) {
            if (r == w->me || gone[r])
                continue;
            if (topo_proc_alive(w->pid[r], w->start[r])) {
                /* a readable pidfd of a process /proc still shows running (its leader
                 * thread ended, say): the periodic look decides, not a busy poll */
                for (int k = 1; k < nf; k++) {
                    if (who[k] == r && pf[k].revents) {
                        close(w->pidfd[r]);
                        w->pidfd[r] = -1;
                    }
                }
                continue;
            }
            gone[r] = true;
            int none = 0;
            atomic_compare_exchange_strong(&w->dead, &none, r + 1);
            /* info only: a peer may also exit normally after its destroy, before this
             * rank's; a call that this stops says so at error level */
            log_info("local rank %d (rank %d, pid %d) exited or was killed: the CUDA kernels "
                     "of this communicator stop waiting for it",
                     r, w->rank[r], w->pid[r]);
            cuda_words_raise(w->words, CUDA_KERR_PEER);
        }
    }
}

static void watch_stop(cuda_watch_t *w)
{
    if (w->running) {
        char c = 0;
        if (write(w->stop[1], &c, 1) != 1) {
            /* closing the write end wakes the poll as well */
        }
        close(w->stop[1]);
        w->stop[1] = -1;
        pthread_join(w->thread, NULL);
        w->running = false;
        close(w->stop[0]);
    }
    for (int r = 0; r < w->n; r++)
        if (w->pidfd[r] >= 0)
            close(w->pidfd[r]);
    w->n = 0;
}

/* Starts the watcher of comm's local peers (nothing with one local rank). */
static symcoll_status_t watch_start(comm_t *comm, cuda_watch_t *w, cuda_words_t *words, int me,
                                    int n)
{
    int err;

    w->n = n;
    w->me = me;
    w->words = words;
    atomic_init(&w->dead, 0);
    for (int r = 0; r < n; r++) {
        int g = comm->topo->local_ranks[r];
        w->rank[r] = g;
        w->pid[r] = comm->topo->info[g].pid;
        w->start[r] = comm->topo->info[g].start_time;
        w->pidfd[r] = r == me ? -1 : pidfd_open_nothrow(w->pid[r]);
        /* the process the pidfd refers to is the peer only if the peer still runs now
         * (not a reused pid); if not, the first look at /proc says it is gone */
    }
    if (n < 2)
        return SYMCOLL_OK;
    if (pipe2(w->stop, O_CLOEXEC)) {
        log_error("CUDA all-reduce: pipe for the peer watcher: %s", strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    err = pthread_create(&w->thread, NULL, watch_main, w);
    if (err) {
        log_error("CUDA all-reduce: cannot start the peer watcher thread: %s", strerror(err));
        close(w->stop[0]);
        close(w->stop[1]);
        return SYMCOLL_ERR_SYSTEM;
    }
    w->running = true;
    return SYMCOLL_OK;
}

static void state_free(cuda_algo_state_t *st)
{
    if (!st)
        return;
    watch_stop(&st->watch); /* it raises the words: first */
    cuda_words_destroy(NULL, &st->words);
    free(st);
}

void algo_cuda_free(comm_t *comm)
{
    state_free(comm->algo->cuda);
    comm->algo->cuda = NULL;
}

symcoll_status_t algo_cuda_attach(comm_t *comm, pool_t *pool)
{
    cuda_algo_state_t *st;
    symcoll_status_t status;
    int sms = 0;
    cudaError_t err;

    /* more GPUs than the kernels serve: every call says so (algo_cuda_allreduce) */
    if (comm->algo->cuda || pool_local_size(pool) > CUDA_AR_MAX_RANKS)
        return SYMCOLL_OK;
    st = calloc(1, sizeof(*st));
    if (!st)
        return SYMCOLL_ERR_NO_MEMORY;
    st->me = pool_local_rank(pool);
    st->n = pool_local_size(pool);
    status = cuda_comm_device(comm, &st->device);
    if (status != SYMCOLL_OK)
        goto err_free;
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st->device);
    if (err != cudaSuccess) {
        status = cuda_rt_error(err, "cudaDeviceGetAttribute");
        goto err_free;
    }
    /* every rank must use the same grids: take the smallest SM count of the node */
    {
        int *all = calloc((size_t)comm->nranks, sizeof(int));
        if (!all) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto err_free;
        }
        status = bootstrap_allgather(comm->bootstrap, &sms, all, sizeof(int));
        for (int r = 0; status == SYMCOLL_OK && r < comm->nranks; r++)
            if (all[r] < sms)
                sms = all[r];
        free(all);
        if (status != SYMCOLL_OK)
            goto err_free;
    }
    if (comm->config.cuda_nblocks > 0) {
        st->nb[CUDA_AR_ONESHOT] = st->nb[CUDA_AR_TWOSHOT] =
            (int)(comm->config.cuda_nblocks < CUDA_AR_MAX_BLOCKS ? comm->config.cuda_nblocks
                                                                 : CUDA_AR_MAX_BLOCKS);
    } else {
        /* one block per SM: the large messages need every SM to keep NVLink busy */
        st->nb[CUDA_AR_ONESHOT] = st->nb[CUDA_AR_TWOSHOT] =
            sms < CUDA_AR_MAX_BLOCKS ? sms : CUDA_AR_MAX_BLOCKS;
    }
    /* LL: up to SYMCOLL_CUDA_LL_MAX bytes, 8 per thread */
    {
        size_t threads = (comm->config.cuda_ll_max + 7) / 8;
        size_t nb = (threads + CUDA_AR_THREADS - 1) / CUDA_AR_THREADS;
        st->nb[CUDA_AR_LL] = nb < 1 ? 1 : nb > (size_t)sms ? sms : (int)nb;
    }
    status = cuda_kernels_load(st->device);
    if (status == SYMCOLL_OK)
        status = cuda_words_create(comm, &st->words);
    if (status != SYMCOLL_OK)
        goto err_free;
    status = watch_start(comm, &st->watch, &st->words, st->me, st->n);
    if (status != SYMCOLL_OK) {
        state_free(st);
        return status;
    }
    comm->algo->cuda = st;
    return SYMCOLL_OK;

err_free:
    free(st);
    return status;
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* The staging algo needs for a message of bytes bytes: slot bytes a source, the
 * two-shot results area at out, size in all. */
static void stage_need(const comm_t *comm, const cuda_algo_state_t *st, int algo, size_t bytes,
                       size_t *slot_p, size_t *out_p, size_t *size_p)
{
    size_t slot, out = 0, size;

    if (algo == CUDA_AR_ONESHOT) {
        /* the largest size the selector sends one-shot here (scaled with the GPU count) */
        size_t max = topo_choose_oneshot_max(comm->topo, SYMCOLL_MEM_CUDA);
        size_t want = max == SIZE_MAX || bytes > max ? bytes : max;
        slot = round_up(want + 16, POOL_ALIGN);
        size = 2 * (size_t)st->n * slot;
    } else if (algo == CUDA_AR_LL) {
        /* 16-byte records of 8 payload bytes */
        slot = round_up((comm->config.cuda_ll_max + 7) / 8 * 16, POOL_ALIGN);
        size = 2 * (size_t)st->n * slot;
    } else {
        size_t nvec = bytes / 16 + 1;
        slot = round_up((nvec + st->n - 1) / st->n * 16 + 16, POOL_ALIGN);
        out = (size_t)(st->n - 1) * slot;
        size = out + round_up(bytes + 16, POOL_ALIGN);
    }
    *slot_p = slot;
    *out_p = out;
    *size_p = size;
}

static bool stage_fits(const comm_t *comm, const cuda_algo_state_t *st, int algo, size_t bytes)
{
    size_t slot, out, size;

    stage_need(comm, st, algo, bytes, &slot, &out, &size);
    return st->has_stage[algo] && st->stage_slot[algo] >= slot &&
           (algo != CUDA_AR_TWOSHOT || st->stage_out >= out);
}

/* Make sure the staging of algo holds a message of bytes bytes. */
static symcoll_status_t stage_ensure(pool_t *pool, cuda_algo_state_t *st, int algo,
                                     size_t bytes, void *stream)
{
    comm_t *comm = pool_comm(pool);
    size_t slot, out, size;
    symcoll_status_t status;
    cudaError_t err;

    stage_need(comm, st, algo, bytes, &slot, &out, &size);
    if (stage_fits(comm, st, algo, bytes))
        return SYMCOLL_OK;

    status = cuda_check_not_capturing(stream, "symcoll_allreduce");
    if (status != SYMCOLL_OK)
        return status;
    if (st->has_stage[algo]) {
        err = cudaStreamSynchronize((cudaStream_t)stream);
        if (err != cudaSuccess)
            return cuda_rt_error(err, "cudaStreamSynchronize");
        pool_free(pool, st->stage_off[algo]);
        st->has_stage[algo] = false;
    }
    if (algo == CUDA_AR_TWOSHOT) {
        /* grow by half again so that a slowly rising size does not re-stage every call */
        slot = round_up(slot + slot / 2, POOL_ALIGN);
        out = (size_t)(st->n - 1) * slot;
        size = out + round_up((bytes + bytes / 2) + 16, POOL_ALIGN);
    }
    status = pool_alloc(pool, size, POOL_ALLOC_STAGING, &st->stage_off[algo]);
    if (status != SYMCOLL_OK)
        return status;
    st->has_stage[algo] = true;
    st->stage_slot[algo] = slot;
    if (algo == CUDA_AR_TWOSHOT)
        st->stage_out = out;
    log_debug("CUDA %s staging: %zu bytes at pool offset %zu",
              algo == CUDA_AR_TWOSHOT ? "two-shot"
              : algo == CUDA_AR_LL    ? "LL"
                                      : "one-shot",
              size, st->stage_off[algo]);
    return SYMCOLL_OK;
}

void algo_cuda_release(comm_t *comm, pool_t *pool)
{
    cuda_algo_state_t *st = comm->algo->cuda;
    if (!st)
        return;
    cudaDeviceSynchronize();
    for (int a = 0; a < CUDA_AR_NALGOS; a++) {
        if (st->has_stage[a])
            pool_free(pool, st->stage_off[a]);
        st->has_stage[a] = false;
    }
    for (int k = 0; k < ALGO_CUDA_SCRATCH_N; k++) {
        if (st->has_scratch[k])
            pool_free(pool, st->scratch_off[k]);
        st->has_scratch[k] = false;
    }
}

/* The status of a kernel's CUDA_KERR_* reason. */
static symcoll_status_t kerr_status(uint32_t why)
{
    switch (why) {
    case CUDA_KERR_ABORTED:
        return SYMCOLL_ERR_ABORTED;
    case CUDA_KERR_PEER:
        return SYMCOLL_ERR_PEER_FAILED;
    case CUDA_KERR_MISMATCH:
        return SYMCOLL_ERR_MISMATCH;
    default:
        return SYMCOLL_ERR_TIMED_OUT;
    }
}

/* A kernel of an earlier call gave up, or a local peer is gone: the communicator is
 * broken. Logs what the kernels recorded (for other arguments: both signatures). */
static symcoll_status_t check_gave_up(comm_t *comm, cuda_algo_state_t *st)
{
    volatile uint32_t *w = st->words.host;
    uint32_t why = w[CUDA_WORD_ERR];
    int dead = atomic_load(&st->watch.dead);
    symcoll_status_t status;

    if (why == CUDA_KERR_NONE && !dead)
        return SYMCOLL_OK;
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the words a kernel stored before */
    if (why == CUDA_KERR_NONE || (dead && why != CUDA_KERR_MISMATCH))
        why = CUDA_KERR_PEER;
    status = kerr_status(why);
    if (why == CUDA_KERR_MISMATCH && w[CUDA_WORD_PEER]) {
        char mine[160], theirs[160];
        int p = (int)w[CUDA_WORD_PEER] - 1;
        uint64_t ps = (uint64_t)w[CUDA_WORD_PEER_SIG] | (uint64_t)w[CUDA_WORD_PEER_SIG + 1]
                                                            << 32;
        uint64_t ms = (uint64_t)w[CUDA_WORD_MY_SIG] | (uint64_t)w[CUDA_WORD_MY_SIG + 1] << 32;
        log_error("symcoll_allreduce: ranks called with different arguments on CUDA memory: "
                  "local rank %d (rank %d) with %s, this rank with %s; the communicator can "
                  "only be destroyed",
                  p, p >= 0 && p < st->n ? comm->topo->local_ranks[p] : -1,
                  cuda_ar_sig_describe(ps, theirs, sizeof(theirs)),
                  cuda_ar_sig_describe(ms, mine, sizeof(mine)));
    } else if (why == CUDA_KERR_MISMATCH) {
        log_error("symcoll_allreduce: another rank of the node saw ranks call with different "
                  "arguments on CUDA memory (it logs both); the communicator can only be "
                  "destroyed");
    } else if (dead) {
        log_error("symcoll_allreduce: local rank %d (rank %d, pid %d) exited or was killed; "
                  "the communicator can only be destroyed",
                  dead - 1, st->watch.rank[dead - 1], st->watch.pid[dead - 1]);
    } else {
        log_error("symcoll_allreduce: an earlier CUDA all-reduce gave up (%s); the "
                  "communicator can only be destroyed",
                  symcoll_status_string(status));
    }
    return algo_break(comm, status);
}

/* The state of the node's kernels on pool, unless too many ranks share the node or an
 * earlier kernel gave up. */
static symcoll_status_t state_usable(comm_t *comm, pool_t *pool, cuda_algo_state_t **st_p)
{
    if (pool_local_size(pool) > CUDA_AR_MAX_RANKS) {
        log_error("symcoll_allreduce: CUDA memory on more than %d GPUs of a node is not "
                  "supported",
                  CUDA_AR_MAX_RANKS);
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    *st_p = comm->algo->cuda;
    if (!*st_p) {
        log_error("symcoll_allreduce: the CUDA kernels' state could not be set up when the "
                  "CUDA pool was created");
        return SYMCOLL_ERR_INTERNAL;
    }
    return check_gave_up(comm, *st_p);
}

/* The signature of a launch: the all-reduce's arguments, and the collective it serves
 * (the salt of algo/coll.c), so that ranks running different collectives as all-reduces
 * of the same shape stop with SYMCOLL_ERR_MISMATCH too. */
static uint64_t call_sig(const comm_t *comm, size_t count, int dtype, int op, int algo,
                         int phase)
{
    uint64_t salt = comm->algo->salt;
    return cuda_ar_sig_coll(count, dtype, op, algo, phase, (int)(salt >> 32),
                            (int)(uint32_t)salt);
}

/* The kernel arguments of algo on the staging in place (stage_ensure done). */
static void fill_args(const comm_t *comm, pool_t *pool, const cuda_algo_state_t *st, int algo,
                      const void *sendbuf, void *recvbuf, size_t count, symcoll_dtype_t dtype,
                      symcoll_op_t op, cuda_ar_args_t *a)
{
    size_t off;

    memset(a, 0, sizeof(*a));
    a->send = sendbuf;
    a->recv = recvbuf;
    a->count = count;
    a->dtype = (int)dtype;
    a->op = (int)op;
    a->rank = st->me;
    a->nranks = st->n;
    a->algo = algo;
    a->nblocks = st->nb[algo];
    a->stage_slot = st->stage_slot[algo];
    a->stage_out = st->stage_out;
    for (int p = 0; p < st->n; p++) {
        a->stage[p] = pool_peer_addr(pool, p, st->stage_off[algo]);
        a->pool_base[p] = pool_peer_addr(pool, p, 0);
        a->pad[p] = pool_signal_pad(pool, p);
    }
    a->recv_info =
        recvbuf && pool_lookup(pool, recvbuf, count * symcoll_dtype_size(dtype), &off)
            ? (uint64_t)off + 1
            : 0;
    a->sig = call_sig(comm, count, (int)dtype, (int)op, algo, CUDA_AR_PHASE_ALL);
    a->abort_word = st->words.dev + CUDA_WORD_ABORT;
    a->err_word = st->words.dev + CUDA_WORD_ERR;
    a->timeout_ns = (unsigned long long)(comm->timeout_sec * 1e9);
}

/* Launches on the pool's device (the caller's current device is left as it was). */
static symcoll_status_t launch(const cuda_algo_state_t *st, const cuda_ar_args_t *a,
                               void *stream)
{
    int prev = -1;
    cudaError_t err;

    if (cudaGetDevice(&prev) == cudaSuccess && prev != st->device)
        cudaSetDevice(st->device);
    else
        prev = -1;
    err = (cudaError_t)cuda_ar_launch(a, stream);
    if (prev >= 0)
        cudaSetDevice(prev);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "all-reduce kernel launch");
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_copy(const void *sendbuf, void *recvbuf, size_t bytes, void *stream)
{
    cudaError_t err;

    if (sendbuf == recvbuf)
        return SYMCOLL_OK;
    err = cudaMemcpyAsync(recvbuf, sendbuf, bytes, cudaMemcpyDeviceToDevice,
                          (cudaStream_t)stream);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaMemcpyAsync");
}

symcoll_status_t algo_cuda_zero(void *buf, size_t bytes, void *stream)
{
    cudaError_t err;

    if (bytes == 0)
        return SYMCOLL_OK;
    err = cudaMemsetAsync(buf, 0, bytes, (cudaStream_t)stream);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaMemsetAsync");
}

symcoll_status_t algo_cuda_scratch(comm_t *comm, pool_t *pool, algo_cuda_scratch_t which,
                                   size_t bytes, void *stream, void **p)
{
    static const char *const what[ALGO_CUDA_SCRATCH_N] = {
        "symcoll_reduce_scatter", "symcoll_barrier", "a collective on CUDA memory"};
    cuda_algo_state_t *st = NULL;
    symcoll_status_t status = state_usable(comm, pool, &st);
    cudaError_t err;
    size_t size;

    if (status != SYMCOLL_OK)
        return status;
    if (!st->has_scratch[which] || st->scratch_bytes[which] < bytes) {
        status = cuda_check_not_capturing(stream, what[which]);
        if (status != SYMCOLL_OK)
            return status;
        if (st->has_scratch[which]) {
            err = cudaStreamSynchronize((cudaStream_t)stream);
            if (err != cudaSuccess)
                return cuda_rt_error(err, "cudaStreamSynchronize");
            pool_free(pool, st->scratch_off[which]);
            st->has_scratch[which] = false;
        }
        /* half again: a slowly rising size does not grow it on every call */
        size = round_up(bytes + bytes / 2, POOL_ALIGN);
        status = pool_alloc(pool, size, POOL_ALLOC_STAGING, &st->scratch_off[which]);
        if (status != SYMCOLL_OK)
            return status;
        st->has_scratch[which] = true;
        st->scratch_bytes[which] = size;
        log_debug("%s: %zu bytes of CUDA scratch at pool offset %zu", what[which], size,
                  st->scratch_off[which]);
    }
    *p = pool_peer_addr(pool, st->me, st->scratch_off[which]);
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_stream_alloc(comm_t *comm, size_t bytes, void *stream, void **p)
{
    int dev = -1, prev = -1;
    symcoll_status_t status = cuda_comm_device(comm, &dev);
    cudaError_t err;

    if (status != SYMCOLL_OK)
        return status;
    /* the legacy stream allocates on the current device: make it the communicator's */
    if (cudaGetDevice(&prev) == cudaSuccess && prev != dev)
        cudaSetDevice(dev);
    else
        prev = -1;
    err = cudaMallocAsync(p, bytes, (cudaStream_t)stream);
    if (prev >= 0)
        cudaSetDevice(prev);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaMallocAsync");
}

symcoll_status_t algo_cuda_stream_free(void *p, void *stream)
{
    cudaError_t err = cudaFreeAsync(p, (cudaStream_t)stream);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaFreeAsync");
}

symcoll_status_t algo_cuda_allreduce(comm_t *comm, pool_t *pool, topo_algo_t talgo,
                                     const void *sendbuf, void *recvbuf, size_t count,
                                     symcoll_dtype_t dtype, symcoll_op_t op, void *stream)
{
    const size_t esize = symcoll_dtype_size(dtype), bytes = count * esize;
    cuda_algo_state_t *st = NULL;
    cuda_ar_args_t a;
    symcoll_status_t status;
    int algo;

    if (pool_backend(pool) != &pool_cuda_backend) {
        log_error("symcoll_allreduce: internal error: CUDA buffers but not the CUDA pool");
        return SYMCOLL_ERR_INTERNAL;
    }
    if (pool_local_size(pool) != comm->nranks) {
        log_error("symcoll_allreduce: internal error: CUDA memory across nodes here");
        return SYMCOLL_ERR_INTERNAL;
    }
    status = state_usable(comm, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    switch (talgo) {
    case TOPO_ALGO_ONESHOT:
        algo = CUDA_AR_ONESHOT;
        break;
    case TOPO_ALGO_TWOSHOT:
        algo = CUDA_AR_TWOSHOT;
        break;
    default:
        log_error("symcoll_allreduce: %s is not a CUDA algorithm inside a node",
                  topo_algo_name(talgo));
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    /* small one-shot messages in whole 4-byte words: flags inside the data, no barrier
     * (decided by the arguments only, never by a rank's own buffers: every rank must take
     * the same kernel) */
    if (algo == CUDA_AR_ONESHOT && bytes <= comm->config.cuda_ll_max && bytes % 4 == 0)
        algo = CUDA_AR_LL;
    status = stage_ensure(pool, st, algo, bytes, stream);
    if (status != SYMCOLL_OK)
        return status;
    fill_args(comm, pool, st, algo, sendbuf, recvbuf, count, dtype, op, &a);
    return launch(st, &a, stream);
}

/* ---- reduce-scatter, all-gather, broadcast: their own kernels ------------------------ */

/* The kernels' launch, on the pool's device (as launch). */
static symcoll_status_t coll_launch(const cuda_algo_state_t *st, const cuda_coll_args_t *a,
                                    void *stream)
{
    int prev = -1;
    cudaError_t err;

    if (cudaGetDevice(&prev) == cudaSuccess && prev != st->device)
        cudaSetDevice(st->device);
    else
        prev = -1;
    err = (cudaError_t)cuda_coll_launch(a, stream);
    if (prev >= 0)
        cudaSetDevice(prev);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "collective kernel launch");
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_coll(comm_t *comm, pool_t *pool, const topo_plan_t *plan,
                                const algo_args_t *a)
{
    const size_t bytes = a->count * symcoll_dtype_size(a->dtype);
    const int coll = (int)a->coll;
    const bool rs = a->coll == TOPO_COLL_REDUCE_SCATTER;
    /* what a rank's peers read from it: the whole input of a reduce-scatter, the block
     * of an all-gather, the root's message of a broadcast */
    const size_t src_bytes = rs ? bytes * (size_t)comm->nranks : bytes;
    const symcoll_op_t op = rs ? a->op : SYMCOLL_SUM;
    const int algo = plan->algo == TOPO_ALGO_ONESHOT ? CUDA_AR_ONESHOT : CUDA_AR_TWOSHOT;
    cuda_algo_state_t *st = NULL;
    cuda_coll_args_t ca;
    symcoll_status_t status = state_usable(comm, pool, &st);
    size_t off;

    if (status != SYMCOLL_OK)
        return status;
    memset(&ca, 0, sizeof(ca));
    if (algo == CUDA_AR_ONESHOT) {
        /* a slot a source holds one rank's block (the message of a broadcast) */
        status = stage_ensure(pool, st, CUDA_AR_ONESHOT, bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        fill_args(comm, pool, st, CUDA_AR_ONESHOT, a->sendbuf, a->recvbuf, a->count, a->dtype,
                  op, &ca.ar);
        ca.ar.recv_info = 0;
    } else {
        void *scratch = NULL;
        /* every rank makes room, whatever its own buffers: the pool's scratch is
         * collective */
        status = algo_cuda_scratch(comm, pool, ALGO_CUDA_SCRATCH_COLL, src_bytes, a->stream,
                                   &scratch);
        if (status != SYMCOLL_OK)
            return status;
        fill_args(comm, pool, st, CUDA_AR_TWOSHOT, a->sendbuf, a->recvbuf, a->count, a->dtype,
                  op, &ca.ar);
        for (int p = 0; p < st->n; p++)
            ca.ar.stage[p] = pool_peer_addr(pool, p, st->scratch_off[ALGO_CUDA_SCRATCH_COLL]);
        ca.ar.stage_slot = 0;
        ca.ar.stage_out = 0;
        ca.ar.recv_info = 0;
        if (a->coll != TOPO_COLL_BROADCAST || a->root == st->me) {
            if (pool_lookup(pool, a->sendbuf, src_bytes, &off)) {
                ca.ar.recv_info = (uint64_t)off + 1;
            } else {
                ca.ar.recv_info = (uint64_t)st->scratch_off[ALGO_CUDA_SCRATCH_COLL] + 1;
                ca.stage_src = 1;
            }
        }
    }
    ca.ar.sig = cuda_ar_sig_coll(a->count, (int)a->dtype, (int)op, algo, CUDA_AR_PHASE_ALL,
                                 coll, a->root);
    ca.coll = coll;
    ca.root = a->root; /* one node: the local rank */
    return coll_launch(st, &ca, a->stream);
}

/* ---- hierarchical across nodes: the node's part ------------------------------------ */

bool algo_cuda_hier_ready(pool_t *pool, size_t bytes)
{
    const cuda_algo_state_t *st = pool_comm(pool)->algo->cuda;
    return st && stage_fits(pool_comm(pool), st, CUDA_AR_TWOSHOT, bytes);
}

symcoll_status_t algo_cuda_hier_rs(comm_t *comm, pool_t *pool, const void *sendbuf,
                                   size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                   const volatile uint32_t *node_word, void *stream,
                                   char **slice_p, size_t *slice_count_p)
{
    const size_t esize = symcoll_dtype_size(dtype), bytes = count * esize;
    const size_t v = 16 / esize;
    cuda_algo_state_t *st = NULL;
    cuda_ar_args_t a;
    symcoll_status_t status;
    size_t nvec = count / v, lo, len;
    char *res;

    status = state_usable(comm, pool, &st);
    if (status == SYMCOLL_OK)
        status = stage_ensure(pool, st, CUDA_AR_TWOSHOT, bytes, stream);
    if (status != SYMCOLL_OK)
        return status;
    res = (char *)pool_peer_addr(pool, st->me, st->stage_off[CUDA_AR_TWOSHOT]) + st->stage_out;
    /* the slices of the kernel: 16-byte vectors split evenly, the tail to the last rank;
     * an average divides once, across nodes, by the communicator's size */
    fill_args(comm, pool, st, CUDA_AR_TWOSHOT, sendbuf, res, count, dtype,
              op == SYMCOLL_AVG ? SYMCOLL_SUM : op, &a);
    a.phase = CUDA_AR_PHASE_RS;
    a.sig = call_sig(comm, count, (int)dtype, a.op, CUDA_AR_TWOSHOT, CUDA_AR_PHASE_RS);
    a.recv_info = 0;
    a.node_word = node_word;
    lo = nvec * (size_t)st->me / (size_t)st->n;
    len = nvec * (size_t)(st->me + 1) / (size_t)st->n - lo;
    *slice_p = res + lo * 16;
    *slice_count_p = len * v + (st->me == st->n - 1 ? count - nvec * v : 0);
    return launch(st, &a, stream);
}

symcoll_status_t algo_cuda_hier_ag(comm_t *comm, pool_t *pool, void *recvbuf, size_t count,
                                   symcoll_dtype_t dtype, const volatile uint32_t *node_word,
                                   void *stream)
{
    cuda_algo_state_t *st = comm->algo->cuda;
    cuda_ar_args_t a;

    fill_args(comm, pool, st, CUDA_AR_TWOSHOT, NULL, recvbuf, count, dtype, SYMCOLL_SUM, &a);
    a.phase = CUDA_AR_PHASE_AG;
    a.sig = call_sig(comm, count, (int)dtype, SYMCOLL_SUM, CUDA_AR_TWOSHOT, CUDA_AR_PHASE_AG);
    a.recv_info = 0;
    a.node_word = node_word;
    return launch(st, &a, stream);
}
