/* CUDA all-reduce inside a node: the kernels' state (set-up, health), picks one-shot or
 * two-shot, fills the kernel arguments and launches on the caller's stream; the pool
 * scratch and stream-ordered memory the other collectives use. */
/*
 * Failures: a kernel that gives up (abort, a dead or failed peer, other arguments, the
 * deadline) leaves the reason in the host-mapped error word; the next call reads it and
 * breaks the communicator. A local peer process that dies is seen by the watcher
 * (cuda_watch.c), which raises the abort word.
 */
#include "algo/cuda/cuda_int.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bootstrap/bootstrap.h"
#include "cuda/cuda.h"
#include "cuda/kernels.h"
#include "cuda/sig.h"
#include "topo/topo.h"

static void state_free(cuda_algo_state_t *st)
{
    if (!st)
        return;
    algo_cuda_watch_stop(&st->watch); /* it raises the words: first */
    cuda_words_destroy(NULL, &st->words);
    (void)cuda_keep_release(st->keep, st->device, NULL, NULL); /* no live graph here */
    free(st->retired);
    free(st);
}

/* What a destroyed communicator's live graphs still reach: the CUDA pool (buffers,
 * staging, signal pad, the peers' mappings) and the kernels' words. */
typedef struct cuda_kept {
    pool_t *pool;
    cuda_words_t words;
} cuda_kept_t;

static void kept_release(void *arg)
{
    cuda_kept_t *z = arg;

    pool_destroy(z->pool);
    cuda_words_destroy(NULL, &z->words);
    free(z);
}

void algo_cuda_free(comm_t *comm)
{
    cuda_algo_state_t *st = comm->algo->cuda;
    cuda_kept_t *z;
    int graphs;

    comm->algo->cuda = NULL;
    if (!st)
        return;
    algo_cuda_watch_stop(&st->watch);
    graphs = cuda_keep_graphs(st->keep);
    if (graphs == 0)
        goto free_now;
    z = calloc(1, sizeof(*z));
    if (!z) {
        log_warn("out of memory: a destroyed communicator's CUDA memory is released although "
                 "%d captured call(s) of live CUDA graphs use it (launching them would fault)",
                 graphs);
        goto free_now;
    }
    /* a later replay's kernels stop at their first wait instead of waiting for peers
     * that left; they touch only memory that stays mapped */
    (void)cuda_words_raise(&st->words, CUDA_KERR_ABORTED);
    z->pool = comm->pools[SYMCOLL_MEM_CUDA];
    z->words = st->words;
    pool_orphan(z->pool);
    if (!cuda_keep_release(st->keep, st->device, kept_release, z)) {
        free(z); /* the last graph went in between */
        st->keep = NULL;
        goto free_now;
    }
    comm->pools[SYMCOLL_MEM_CUDA] = NULL;
    log_info("communicator destroyed with %d captured call(s) in live CUDA graphs: its CUDA "
             "memory stays mapped until they are destroyed; launching them does nothing",
             graphs);
    free(st->retired);
    free(st);
    return;

free_now:
    state_free(st);
}

symcoll_status_t algo_cuda_note_capture(comm_t *comm, void *stream)
{
    cuda_algo_state_t *st = comm->algo->cuda;
    bool capturing = false;
    symcoll_status_t status = st ? cuda_stream_capturing(stream, &capturing) : SYMCOLL_OK;

    return status == SYMCOLL_OK && capturing ? cuda_keep_capture(st->keep, stream) : status;
}

int algo_cuda_graphs(comm_t *comm)
{
    cuda_algo_state_t *st = comm->algo ? comm->algo->cuda : NULL;

    return st ? cuda_keep_graphs(st->keep) : 0;
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
        int64_t least = sms;
        status = bootstrap_allreduce(comm->bootstrap, &least, 1, BOOTSTRAP_OP_MIN);
        if (status != SYMCOLL_OK)
            goto err_free;
        sms = (int)least;
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
    st->keep = cuda_keep_create();
    if (!st->keep) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err_free;
    }
    status = cuda_kernels_load(st->device);
    if (status == SYMCOLL_OK)
        status = cuda_words_create(comm, &st->words);
    if (status != SYMCOLL_OK)
        goto err_free;
    status = algo_cuda_watch_start(comm, &st->watch, &st->words, st->me, st->n);
    if (status != SYMCOLL_OK) {
        state_free(st);
        return status;
    }
    comm->algo->cuda = st;
    return SYMCOLL_OK;

err_free:
    (void)cuda_keep_release(st->keep, st->device, NULL, NULL);
    free(st);
    return status;
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
    for (size_t k = 0; k < st->nretired; k++)
        pool_free(pool, st->retired[k]);
    st->nretired = 0;
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
symcoll_status_t algo_cuda_state_usable(comm_t *comm, pool_t *pool, cuda_algo_state_t **st_p)
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
uint64_t algo_cuda_call_sig(const comm_t *comm, size_t count, int dtype, int op, int algo,
                            int phase)
{
    uint64_t salt = comm->algo->salt;
    return cuda_ar_sig_coll(count, dtype, op, algo, phase, (int)(salt >> 32),
                            (int)(uint32_t)salt);
}

/* The kernel arguments of algo on the staging in place (algo_cuda_stage_ensure done). */
void algo_cuda_fill_args(const comm_t *comm, pool_t *pool, const cuda_algo_state_t *st,
                         int algo, const void *sendbuf, void *recvbuf, size_t count,
                         symcoll_dtype_t dtype, symcoll_op_t op, cuda_ar_args_t *a)
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
    a->sig = algo_cuda_call_sig(comm, count, (int)dtype, (int)op, algo, CUDA_AR_PHASE_ALL);
    a->abort_word = st->words.dev + CUDA_WORD_ABORT;
    a->err_word = st->words.dev + CUDA_WORD_ERR;
    a->timeout_ns = (unsigned long long)(comm->timeout_sec * 1e9);
}

/* Launches on the pool's device (the caller's current device is left as it was). */
symcoll_status_t algo_cuda_launch(const cuda_algo_state_t *st, const cuda_ar_args_t *a,
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
    symcoll_status_t status = algo_cuda_state_usable(comm, pool, &st);
    size_t size;

    if (status != SYMCOLL_OK)
        return status;
    if (!st->has_scratch[which] || st->scratch_bytes[which] < bytes) {
        /* half again: a slowly rising size does not grow it on every call */
        size = round_up(bytes + bytes / 2, POOL_ALIGN);
        status = algo_cuda_stage_alloc(pool, st, stream, what[which], size,
                                       &st->has_scratch[which], &st->scratch_off[which]);
        if (status != SYMCOLL_OK)
            return status;
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
    status = algo_cuda_state_usable(comm, pool, &st);
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
    status = algo_cuda_stage_ensure(pool, st, algo, bytes, stream);
    if (status != SYMCOLL_OK)
        return status;
    algo_cuda_fill_args(comm, pool, st, algo, sendbuf, recvbuf, count, dtype, op, &a);
    return algo_cuda_launch(st, &a, stream);
}
