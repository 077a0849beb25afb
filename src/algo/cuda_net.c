/* CUDA memory across nodes, staged through pinned host memory of the pool: a progress
 * thread per communicator moves each queued all-reduce off the GPU, across the nodes
 * with the host algorithms over UCX, and back, in order with the caller's stream. */
/*
 * Why staged: the UCX of Debian and Ubuntu is built without CUDA, so it cannot read or
 * write GPU memory. (When every rank's UCX reports CUDA memory, the CUDA pool's segments
 * are registered with it, but the direct data path is not written yet: the staged path
 * serves that case too, and symcoll_info says so.)
 *
 * The message moves in chunks of SYMCOLL_CUDA_NET_CHUNK bytes through three chunk-sized
 * slots of host staging (pool memory, pinned with cudaHostRegister). Three host-mapped
 * words per slot hand a chunk back and forth: "ready" (the GPU copied chunk g into the
 * slot), "done" (the thread reduced it across the nodes), "freed" (the GPU copied the
 * result out). Each holds the low 32 bits of g + 1 for the last chunk g that passed;
 * chunks are numbered across calls in 64 bits (the slot is g mod 3: a 32-bit count would
 * jump slots where it wraps), so the words only grow, compared as int32 differences
 * like CU_STREAM_WAIT_VALUE_GEQ does.
 *
 * The call (caller's thread, comm->lock held) never waits for the GPU. It queues the
 * whole pipeline on the caller's stream and the operation for the thread, and returns:
 *   stream:  copy chunks 0, 1, 2 to their slots, raising "ready" after each; then for
 *            each chunk k: wait for "done", copy the result back, raise "freed", copy
 *            chunk k + 3 in (a slot is refilled only after its "freed": calls on other
 *            streams share the slots);
 *   thread:  for each chunk: wait for "ready", all-reduce the slot in place across the
 *            ranks (the host algorithm the selector picks for the chunk: rd, ring or
 *            hier), raise "done".
 * So the copies of chunks k + 1 and k + 2 run while chunk k crosses the network, and
 * the thread only reads and writes host memory: it never calls CUDA, so nothing the
 * caller's thread does inside the driver (a synchronous copy from pageable memory on the
 * legacy stream, say) can block the thread that stream waits for. (A first version used
 * copy streams and events in the thread, and deadlocked in exactly that way on the
 * H200 machine.)
 *
 * Every rank's thread runs the same operations in the same order, so the host
 * algorithms' collective steps match. Everything else that talks to the other ranks
 * (host all-reduces, pool allocation, trim, destroy) first drains this queue
 * (algo_cuda_net_drain), so the two threads never use UCX or the bootstrap at once.
 *
 * Failure: an operation that fails (peer gone, abort, timeout, CUDA error) still
 * releases its stream: the thread raises "done" for each of its chunks. The status sticks:
 * every later call on the communicator returns it. The result buffer of a failed
 * operation is undefined.
 *
 * Streams: operations run in call order and share the slots, so calls on different
 * streams are serialised: one that waits behind long work on its stream holds up the
 * ones queued after it (as with NCCL, collectives on a communicator are ordered).
 *
 * CUDA graphs: the work is done by a host thread per call, so a capture would record
 * only the stream waits; a call on a capturing stream fails with SYMCOLL_ERR_UNSUPPORTED
 * and changes nothing.
 */
#include "algo/cuda_algo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "algo/cuda_net_plan.h"
#include "algo/net.h"
#include "cuda/cuda.h"
#include "topo/topo.h"

#define CNET_QUEUE 64 /* operations queued ahead of the thread */
/* how long an idle thread polls the queue before it sleeps (the next call of a loop
 * usually comes within microseconds) */
#define CNET_IDLE_SPIN_SEC 0.02

typedef struct cnet_op {
    size_t count;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    uint64_t first; /* number of its first chunk */
    uint64_t nchunks;
} cnet_op_t;

#define CNET_WORD_STRIDE 16 /* uint32 per line: one cache line per word */

struct cuda_net {
    comm_t *comm;
    pool_t *host_pool;
    const cuda_driver_t *drv;

    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t work; /* queued or stop */
    pthread_cond_t idle; /* an operation finished */
    cnet_op_t q[CNET_QUEUE];
    uint64_t head;        /* next operation the thread takes (under mu) */
    _Atomic uint64_t end; /* one past the last queued (written under mu) */
    bool stop;
    _Atomic int broken;  /* symcoll_status_t of the first failure; sticky */
    uint64_t next_chunk; /* number of the next chunk queued (caller's thread) */
    /* per slot: the last chunk whose "freed" the caller queued + 1 (0: none); once the
     * word shows it, no queued copy touches the slot any more */
    uint64_t last_freed[CNET_SLOTS];
    bool told_peers; /* the thread told the other ranks it gave up (thread only) */

    volatile uint32_t *words; /* host-mapped, CNET_NWORDS x CNET_SLOTS lines */
    CUdeviceptr words_dev;

    bool has_stage; /* allocated and pinned */
    size_t stage_off, slot_bytes;
    char *stage;
    /* where the time goes (logged at destroy, info level): seconds summed over ops */
    uint64_t nops;
    double t_wait_in;  /* from taking an op to its first chunk on the host */
    double t_net;      /* in the host all-reduces */
    double t_busy;     /* from taking an op to releasing it */
    double t_gap;      /* from releasing one op to taking the next, while queued */
    double t_last_end; /* release time of the previous op */
};

/* ---- staging ------------------------------------------------------------------------
 * Allocated and pinned by the caller's thread while no operation is queued (collective:
 * the same call on every rank). Never by the progress thread: cudaHostRegister waits for
 * work the driver has queued, and a caller's stream may be waiting for that thread. */

static symcoll_status_t cnet_wait_quiet(cuda_net_t *cn);

static void cnet_stage_release(cuda_net_t *cn)
{
    if (!cn->has_stage)
        return;
    /* every queued operation was released (drained); once each slot's last copy out
     * ran, nothing queued touches the slots */
    if (cnet_wait_quiet(cn) != SYMCOLL_OK) {
        log_error("CUDA across nodes: the GPU did not finish copying out of the host staging; "
                  "leaving it mapped (%zu bytes)",
                  CNET_SLOTS * cn->slot_bytes);
        cn->has_stage = false;
        return;
    }
    cudaHostUnregister(cn->stage);
    pool_free(cn->host_pool, cn->stage_off);
    cn->has_stage = false;
}

static symcoll_status_t cnet_stage_ensure(cuda_net_t *cn)
{
    symcoll_status_t status;
    cudaError_t err;

    if (cn->has_stage)
        return SYMCOLL_OK;
    cn->slot_bytes =
        (cn->comm->config.cuda_net_chunk + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    status = pool_alloc(cn->host_pool, CNET_SLOTS * cn->slot_bytes, POOL_ALLOC_STAGING,
                        &cn->stage_off);
    if (status != SYMCOLL_OK)
        return status;
    cn->stage = pool_peer_addr(cn->host_pool, pool_local_rank(cn->host_pool), cn->stage_off);
    /* pinned, or nothing: a copy from pageable memory to the GPU reads its source when it
     * is queued, long before the thread has reduced the chunk */
    err = cudaHostRegister(cn->stage, CNET_SLOTS * cn->slot_bytes, cudaHostRegisterPortable);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        pool_free(cn->host_pool, cn->stage_off);
        log_error("CUDA across nodes: cannot pin %zu bytes of host staging (%s)",
                  CNET_SLOTS * cn->slot_bytes, cudaGetErrorString(err));
        return SYMCOLL_ERR_CUDA;
    }
    cn->has_stage = true;
    log_debug("CUDA across nodes: %d x %zu bytes of pinned host staging at pool offset %zu",
              CNET_SLOTS, cn->slot_bytes, cn->stage_off);
    return SYMCOLL_OK;
}

/* ---- the thread --------------------------------------------------------------------- */

static volatile uint32_t *cnet_word(cuda_net_t *cn, int which, int slot)
{
    return cn->words + ((size_t)which * CNET_SLOTS + (size_t)slot) * CNET_WORD_STRIDE;
}

static CUdeviceptr cnet_word_dev(cuda_net_t *cn, int which, int slot)
{
    return cn->words_dev +
           ((size_t)which * CNET_SLOTS + (size_t)slot) * CNET_WORD_STRIDE * sizeof(uint32_t);
}

/* Waits until the GPU copied chunk g into its slot, keeping UCX progressing (peers may
 * be sending to us meanwhile). */
static symcoll_status_t cnet_wait_ready(cuda_net_t *cn, uint64_t g, const deadline_t *dl)
{
    volatile uint32_t *w = cnet_word(cn, CNET_READY, cnet_slot(g));
    unsigned iter = 0;
    symcoll_status_t status;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), (uint32_t)(g + 1))) {
        /* the caller could not queue the whole pipeline: this chunk may never come */
        status = (symcoll_status_t)atomic_load_explicit(&cn->broken, memory_order_relaxed);
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_progress(cn->comm->ucx);
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
    __atomic_store_n(cnet_word(cn, CNET_DONE, cnet_slot(g)), (uint32_t)(g + 1),
                     __ATOMIC_RELEASE);
}

/* Waits (caller's thread) until every copy out queued so far has run: then no queued
 * stream work reads or writes the slots or the words any more. Needs no CUDA call, so
 * it waits for this communicator's work only, on whatever device it runs. */
static symcoll_status_t cnet_wait_quiet(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);
    unsigned iter = 0;

    for (int slot = 0; slot < CNET_SLOTS; slot++) {
        volatile uint32_t *w = cnet_word(cn, CNET_FREED, slot);
        if (!cn->last_freed[slot])
            continue;
        while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE),
                             (uint32_t)cn->last_freed[slot])) {
            if (deadline_check(&dl) != SYMCOLL_OK)
                return SYMCOLL_ERR_TIMED_OUT;
            core_spin_pause(&iter);
        }
    }
    return SYMCOLL_OK;
}

static symcoll_status_t cnet_run(cuda_net_t *cn, const cnet_op_t *op, uint64_t *k_p)
{
    size_t esize = symcoll_dtype_size(op->dtype);
    size_t chunk = cn->slot_bytes / esize;
    symcoll_status_t status = SYMCOLL_OK;
    double t0 = time_now(), t;

    for (*k_p = 0; *k_p < op->nchunks; ++*k_p) {
        uint64_t k = *k_p, g = op->first + k;
        /* per chunk: the timeout bounds a wait, not a whole (possibly huge) message */
        deadline_t dl = deadline_make(cn->comm->timeout_sec, &cn->comm->aborted);
        size_t first = (size_t)k * chunk,
               n = op->count - first < chunk ? op->count - first : chunk;
        char *slot = cn->stage + (size_t)cnet_slot(g) * cn->slot_bytes;

        status = cnet_wait_ready(cn, g, &dl);
        t = time_now();
        if (k == 0)
            cn->t_wait_in += t - t0;
        if (status == SYMCOLL_OK)
            status =
                algo_net_allreduce(cn->comm, cn->host_pool, slot, slot, n, op->dtype, op->op);
        cn->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            return status;
        cnet_raise_done(cn, g);
    }
    return SYMCOLL_OK;
}

static void *cnet_thread(void *arg)
{
    cuda_net_t *cn = arg;
    cnet_op_t op;
    symcoll_status_t status;
    uint64_t k;
    double t0;

    log_set_rank(cn->comm->rank);
    for (;;) {
        double idle_until = time_now() + CNET_IDLE_SPIN_SEC;
        unsigned iter = 0;

        /* poll first: a loop of calls should not pay a wake-up each */
        while (atomic_load_explicit(&cn->end, memory_order_acquire) == cn->head &&
               time_now() < idle_until && !__atomic_load_n(&cn->stop, __ATOMIC_ACQUIRE))
            core_spin_pause(&iter);
        pthread_mutex_lock(&cn->mu);
        while (atomic_load_explicit(&cn->end, memory_order_relaxed) == cn->head && !cn->stop)
            pthread_cond_wait(&cn->work, &cn->mu);
        if (atomic_load_explicit(&cn->end, memory_order_relaxed) == cn->head) {
            pthread_mutex_unlock(&cn->mu);
            break; /* stop, nothing left */
        }
        op = cn->q[cn->head % CNET_QUEUE];
        pthread_mutex_unlock(&cn->mu);

        status = (symcoll_status_t)atomic_load(&cn->broken);
        t0 = time_now();
        if (cn->t_last_end > 0)
            cn->t_gap += t0 - cn->t_last_end;
        k = 0;
        if (status == SYMCOLL_OK)
            status = cnet_run(cn, &op, &k);
        if (status != SYMCOLL_OK) {
            int ok = SYMCOLL_OK;
            if (atomic_compare_exchange_strong(&cn->broken, &ok, (int)status))
                log_error("CUDA all-reduce across nodes failed (%s); the stream is released "
                          "and later calls on this communicator fail",
                          symcoll_status_string(status));
            if (!cn->told_peers) {
                /* whoever broke it (this thread, the caller, destroy): peers waiting on
                 * us end now rather than at their deadline */
                cn->told_peers = true;
                algo_net_pool_abort(cn->host_pool);
            }
            /* release the stream: every chunk not done yet is "done" (its result is
             * undefined); a slot's next copy in still waits for its copy out */
            for (; k < op.nchunks; k++)
                cnet_raise_done(cn, op.first + k);
        }
        cn->t_last_end = time_now();
        cn->t_busy += cn->t_last_end - t0;
        cn->nops++;
        pthread_mutex_lock(&cn->mu);
        cn->head++;
        /* only the gap before an op that was already queued counts (not idle time) */
        if (atomic_load_explicit(&cn->end, memory_order_relaxed) == cn->head)
            cn->t_last_end = 0;
        pthread_cond_broadcast(&cn->idle);
        pthread_mutex_unlock(&cn->mu);
    }
    return NULL;
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
    size_t words_bytes = (size_t)CNET_NWORDS * CNET_SLOTS * CNET_WORD_STRIDE * sizeof(uint32_t);
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
    if (pthread_create(&cn->thread, NULL, cnet_thread, cn)) {
        log_error("CUDA all-reduce across nodes: cannot start the progress thread");
        status = SYMCOLL_ERR_SYSTEM;
        goto err_free;
    }
    cn->started = true;
    log_info("CUDA memory across nodes: staged through pinned host memory (%s), by a "
             "progress thread",
             comm->topo->shape[SYMCOLL_MEM_CUDA].net_cuda
                 ? "UCX reports CUDA memory, but the direct path is not built"
                 : "UCX of some rank has no CUDA memory support");
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
    seen = cn->head;
    while (atomic_load_explicit(&cn->end, memory_order_relaxed) - cn->head > max) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&cn->idle, &cn->mu, &ts);
        if (cn->head != seen) {
            seen = cn->head;
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
    cuda_net_t *cn = comm->cuda_net;
    symcoll_status_t status;

    if (!cn)
        return SYMCOLL_OK;
    status = cnet_wait_queued(cn, 0);
    if (status == SYMCOLL_OK)
        status = (symcoll_status_t)atomic_load(&cn->broken);
    return status;
}

void algo_cuda_net_release(comm_t *comm)
{
    cuda_net_t *cn = comm->cuda_net;

    if (!cn || algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT)
        return;
    cnet_stage_release(cn);
}

void algo_cuda_net_destroy(comm_t *comm)
{
    cuda_net_t *cn = comm->cuda_net;

    if (!cn)
        return;
    if (algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT) {
        /* make the thread fail what is left (and release those streams) */
        int ok = SYMCOLL_OK;
        atomic_compare_exchange_strong(&cn->broken, &ok, (int)SYMCOLL_ERR_TIMED_OUT);
    }
    pthread_mutex_lock(&cn->mu);
    cn->stop = true;
    pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);
    if (cn->started)
        pthread_join(cn->thread, NULL);
    if (cn->nops)
        log_info(
            "CUDA across nodes: %llu all-reduces; per call, us: %.1f busy = %.1f until the "
            "first chunk was on the host + %.1f in the host all-reduces + the rest; %.1f "
            "between back-to-back calls",
            (unsigned long long)cn->nops, 1e6 * cn->t_busy / (double)cn->nops,
            1e6 * cn->t_wait_in / (double)cn->nops, 1e6 * cn->t_net / (double)cn->nops,
            1e6 * cn->t_gap / (double)cn->nops);
    cnet_stage_release(cn);
    comm->cuda_net = NULL;
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
    size_t esize = symcoll_dtype_size(q->o->dtype), chunk = cn->slot_bytes / esize;
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

symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, pool_t *host_pool, const void *sendbuf,
                                         void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                         symcoll_op_t op, void *stream)
{
    const size_t esize = symcoll_dtype_size(dtype);
    cudaStream_t s = (cudaStream_t)stream;
    cuda_net_t *cn = comm->cuda_net;
    symcoll_status_t status;
    bool capturing = false;
    cnet_op_t o;
    size_t chunk;

    if (((uintptr_t)sendbuf | (uintptr_t)recvbuf) % esize) {
        log_error("symcoll_allreduce: CUDA buffers must be aligned to the element size (%zu)",
                  esize);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    status = cuda_stream_capturing(stream, &capturing);
    if (status != SYMCOLL_OK)
        return status;
    if (capturing) {
        log_error("symcoll_allreduce: CUDA memory across nodes cannot be captured in a CUDA "
                  "graph (a host thread moves the data over the network on every call); call "
                  "it outside the capture");
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    if (!cn) {
        status = cnet_create(comm, host_pool, &cn);
        if (status != SYMCOLL_OK)
            return status;
        comm->cuda_net = cn;
    }
    status = (symcoll_status_t)atomic_load(&cn->broken);
    if (status != SYMCOLL_OK) {
        log_error("symcoll_allreduce: an earlier CUDA all-reduce across nodes failed (%s); "
                  "the communicator can only be destroyed",
                  symcoll_status_string(status));
        return status;
    }

    if (!cn->has_stage) {
        /* first call, or the first after a trim: the queue is empty then */
        status = algo_cuda_net_drain(comm);
        if (status == SYMCOLL_OK)
            status = cnet_stage_ensure(cn);
    } else {
        /* a free queue entry: the thread frees one per operation */
        status = cnet_wait_queued(cn, CNET_QUEUE - 1);
    }
    if (status != SYMCOLL_OK) {
        /* other ranks may have queued this call: their threads would wait for ours */
        int ok = SYMCOLL_OK;
        atomic_compare_exchange_strong(&cn->broken, &ok, (int)status);
        return status;
    }
    chunk = cn->slot_bytes / esize;
    o.count = count;
    o.dtype = dtype;
    o.op = op;
    o.first = cn->next_chunk;
    o.nchunks = (count + chunk - 1) / chunk;
    cn->next_chunk += o.nchunks;

    /* the thread first: it waits for each chunk's "ready" anyway */
    pthread_mutex_lock(&cn->mu);
    cn->q[atomic_load_explicit(&cn->end, memory_order_relaxed) % CNET_QUEUE] = o;
    atomic_store_explicit(&cn->end, atomic_load_explicit(&cn->end, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_cond_signal(&cn->work);
    pthread_mutex_unlock(&cn->mu);

    /* the pipeline on the caller's stream */
    {
        cnet_queue_t q = {cn, s, &o, sendbuf, recvbuf};
        status = cnet_plan(o.first, o.nchunks, cnet_queue_cmd, &q);
    }
    if (status != SYMCOLL_OK) {
        /* the thread stops waiting for this call's chunks and releases them (and every
         * later call fails) */
        int ok = SYMCOLL_OK;
        atomic_compare_exchange_strong(&cn->broken, &ok, (int)status);
    }
    return status;
}
