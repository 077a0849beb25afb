/* CUDA memory across nodes, staged through pinned host memory of the pool: a progress
 * thread per communicator moves each queued all-reduce off the GPU, across the nodes
 * with the host algorithms over UCX, and back, in order with the caller's stream. */
/*
 * Why staged: the UCX of Debian and Ubuntu is built without CUDA, so it cannot read or
 * write GPU memory. (When every rank's UCX reports CUDA memory, the CUDA pool's segments
 * are registered with it, but the direct data path is not written yet: the staged path
 * serves that case too, and symcoll_info says so.)
 *
 * The call (caller's thread, comm->lock held) never waits for the GPU:
 *   1. records the operation's "ready" event on the caller's stream,
 *   2. makes the stream wait (cuStreamWaitValue32, >=) until a host-mapped word, "done",
 *      reaches the operation's sequence number,
 *   3. queues the operation for the progress thread and returns.
 * The progress thread takes operations in order. For each it splits the message into
 * chunks of SYMCOLL_CUDA_NET_CHUNK bytes and keeps three chunk-sized slots of host
 * staging (pool memory, pinned with cudaHostRegister) in flight:
 *   copy-in stream:  waits for "ready", then copies chunk k+2 to the host while
 *   the thread:      reduces chunk k across all ranks in place in its slot (the host
 *                    all-reduce the selector picks for the chunk: rd, ring or hier), and
 *   copy-out stream: copies chunk k-1 back into the caller's receive buffer.
 * A slot is refilled only after its copy back ran (the copy-in stream waits for that
 * event), so no copy waits for the thread and the thread waits for a copy only when
 * the network is faster than PCIe. After the last chunk the copy-out stream writes the
 * sequence number into "done" (cuStreamWriteValue32), which releases the caller's stream:
 * the thread never blocks on the stream it serves.
 *
 * Every rank's thread runs the same operations in the same order, so the host
 * algorithms' collective steps match. Everything else that talks to the other ranks
 * (host all-reduces, pool allocation, trim, destroy) first drains this queue
 * (algo_cuda_net_drain), so the two threads never use UCX or the bootstrap at once.
 *
 * Failure: an operation that fails (peer gone, abort, timeout, CUDA error) still
 * releases its stream: the thread writes "done" from the host (after the copy-out
 * stream has drained, so that no older GPU write lands after it). The status sticks:
 * every later call on the communicator returns it. The result buffer of a failed
 * operation is undefined.
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

#include "algo/net.h"
#include "cuda/cuda.h"
#include "topo/topo.h"

#define CNET_QUEUE 64 /* operations queued ahead of the thread */
#define CNET_SLOTS 3  /* host staging chunks in flight */
/* how long an idle thread polls the queue before it sleeps (the next call of a loop
 * usually comes within microseconds) */
#define CNET_IDLE_SPIN_SEC 0.02

typedef struct cnet_op {
    const char *send;
    char *recv;
    size_t count;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    uint32_t seq;
    cudaEvent_t ready; /* recorded on the caller's stream */
} cnet_op_t;

struct cuda_net {
    comm_t *comm;
    pool_t *host_pool;
    int device;
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
    _Atomic int broken; /* symcoll_status_t of the first failure; sticky */
    uint32_t seq;       /* sequence number of the last queued operation */

    volatile uint32_t *done_host; /* host-mapped: sequence number of the last released */
    CUdeviceptr done_dev;

    /* used by the thread only */
    cudaStream_t cs_in, cs_out;
    cudaEvent_t copied_in[CNET_SLOTS], copied_out[CNET_SLOTS];
    bool out_pending[CNET_SLOTS]; /* copied_out[s] was recorded */
    bool has_stage;
    bool pinned;
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

static symcoll_status_t cnet_rt(cudaError_t err, const char *call)
{
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, call);
}

/* ---- staging ------------------------------------------------------------------------
 * Allocated and pinned by the caller's thread while no operation is queued (collective:
 * the same call on every rank). Never by the progress thread: cudaHostRegister waits for
 * work the driver has queued, and a caller's stream may be waiting for that thread. */

static void cnet_stage_release(cuda_net_t *cn)
{
    if (!cn->has_stage)
        return;
    /* no copy may touch the slots once they are unpinned */
    cudaStreamSynchronize(cn->cs_in);
    cudaStreamSynchronize(cn->cs_out);
    if (cn->pinned)
        cudaHostUnregister(cn->stage);
    pool_free(cn->host_pool, cn->stage_off);
    cn->has_stage = cn->pinned = false;
    memset(cn->out_pending, 0, sizeof(cn->out_pending));
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
    cn->has_stage = true;
    /* pinned, the copies run asynchronously at full PCIe speed; pageable they still work
     * (the driver copies through its own pinned buffer, synchronously) */
    err = cudaHostRegister(cn->stage, CNET_SLOTS * cn->slot_bytes, cudaHostRegisterPortable);
    if (err == cudaSuccess) {
        cn->pinned = true;
    } else {
        (void)cudaGetLastError();
        log_warn("CUDA across nodes: cannot pin the host staging (%s); copies will be "
                 "synchronous",
                 cudaGetErrorString(err));
    }
    log_debug("CUDA across nodes: %d x %zu bytes of %s host staging at pool offset %zu",
              CNET_SLOTS, cn->slot_bytes, cn->pinned ? "pinned" : "pageable", cn->stage_off);
    return SYMCOLL_OK;
}

/* ---- the thread --------------------------------------------------------------------- */

/* Waits for ev while keeping UCX progressing (peers may be sending to us). */
static symcoll_status_t cnet_wait_event(cuda_net_t *cn, cudaEvent_t ev, const deadline_t *dl)
{
    unsigned iter = 0;
    symcoll_status_t status;
    cudaError_t err;

    for (;;) {
        err = cudaEventQuery(ev);
        if (err == cudaSuccess)
            return SYMCOLL_OK;
        if (err != cudaErrorNotReady)
            return cuda_rt_error(err, "cudaEventQuery");
        status = ucx_progress(cn->comm->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes: gave up waiting for the GPU (%s)",
                      symcoll_status_string(status));
            return status;
        }
        core_spin_pause(&iter);
    }
}

/* Queues the copy of chunk j of op into its slot on the copy-in stream. */
static symcoll_status_t cnet_copy_in(cuda_net_t *cn, const cnet_op_t *op, size_t chunk,
                                     size_t j)
{
    size_t esize = symcoll_dtype_size(op->dtype);
    size_t first = j * chunk, n = op->count - first < chunk ? op->count - first : chunk;
    int s = (int)(j % CNET_SLOTS);
    cudaError_t err = cudaSuccess;

    if (cn->out_pending[s])
        err = cudaStreamWaitEvent(cn->cs_in, cn->copied_out[s], 0);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(cn->stage + (size_t)s * cn->slot_bytes, op->send + first * esize,
                              n * esize, cudaMemcpyDeviceToHost, cn->cs_in);
    if (err == cudaSuccess)
        err = cudaEventRecord(cn->copied_in[s], cn->cs_in);
    return cnet_rt(err, "CUDA across nodes: copy to the host");
}

static symcoll_status_t cnet_run(cuda_net_t *cn, const cnet_op_t *op)
{
    size_t esize = symcoll_dtype_size(op->dtype);
    size_t chunk, nchunks, issued = 0;
    deadline_t dl = deadline_make(cn->comm->timeout_sec, &cn->comm->aborted);
    symcoll_status_t status;
    double t0 = time_now(), t;
    CUresult res;

    chunk = cn->slot_bytes / esize;
    nchunks = (op->count + chunk - 1) / chunk;
    status = cnet_rt(cudaStreamWaitEvent(cn->cs_in, op->ready, 0), "cudaStreamWaitEvent");
    for (size_t k = 0; status == SYMCOLL_OK && k < nchunks; k++) {
        size_t first = k * chunk, n = op->count - first < chunk ? op->count - first : chunk;
        int s = (int)(k % CNET_SLOTS);
        char *slot = cn->stage + (size_t)s * cn->slot_bytes;

        while (status == SYMCOLL_OK && issued < nchunks && issued < k + CNET_SLOTS)
            status = cnet_copy_in(cn, op, chunk, issued++);
        if (status == SYMCOLL_OK)
            status = cnet_wait_event(cn, cn->copied_in[s], &dl);
        t = time_now();
        if (k == 0)
            cn->t_wait_in += t - t0;
        if (status == SYMCOLL_OK)
            status =
                algo_net_allreduce(cn->comm, cn->host_pool, slot, slot, n, op->dtype, op->op);
        cn->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            break;
        status = cnet_rt(cudaMemcpyAsync(op->recv + first * esize, slot, n * esize,
                                         cudaMemcpyHostToDevice, cn->cs_out),
                         "CUDA across nodes: copy from the host");
        if (status == SYMCOLL_OK)
            status = cnet_rt(cudaEventRecord(cn->copied_out[s], cn->cs_out), "cudaEventRecord");
        if (status == SYMCOLL_OK)
            cn->out_pending[s] = true;
    }
    if (status != SYMCOLL_OK)
        return status;
    res = cn->drv->stream_write_value32(cn->cs_out, cn->done_dev, op->seq, 0);
    return res == CUDA_SUCCESS ? SYMCOLL_OK : cuda_drv_error(res, "cuStreamWriteValue32");
}

/* Releases the stream of a failed operation from the host. */
static void cnet_release(cuda_net_t *cn, uint32_t seq)
{
    /* an older cuStreamWriteValue32 still queued must not land after this store */
    cudaStreamSynchronize(cn->cs_out);
    (void)cudaGetLastError();
    __atomic_store_n(cn->done_host, seq, __ATOMIC_RELEASE);
}

static void *cnet_thread(void *arg)
{
    cuda_net_t *cn = arg;
    cnet_op_t op;
    symcoll_status_t status;
    double t0;

    log_set_rank(cn->comm->rank);
    cudaSetDevice(cn->device);
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
        if (status == SYMCOLL_OK)
            status = cnet_run(cn, &op);
        if (status != SYMCOLL_OK) {
            int ok = SYMCOLL_OK;
            if (atomic_compare_exchange_strong(&cn->broken, &ok, (int)status)) {
                log_error("CUDA all-reduce across nodes failed (%s); the stream is released "
                          "and later calls on this communicator fail",
                          symcoll_status_string(status));
                /* peers waiting on us end now rather than at their deadline */
                algo_net_pool_abort(cn->host_pool);
            }
            cnet_release(cn, op.seq);
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
    for (int i = 0; i < CNET_QUEUE; i++)
        if (cn->q[i].ready)
            cudaEventDestroy(cn->q[i].ready);
    for (int s = 0; s < CNET_SLOTS; s++) {
        if (cn->copied_in[s])
            cudaEventDestroy(cn->copied_in[s]);
        if (cn->copied_out[s])
            cudaEventDestroy(cn->copied_out[s]);
    }
    if (cn->cs_in)
        cudaStreamDestroy(cn->cs_in);
    if (cn->cs_out)
        cudaStreamDestroy(cn->cs_out);
    if (cn->done_host)
        cudaFreeHost((void *)cn->done_host);
    pthread_cond_destroy(&cn->work);
    pthread_cond_destroy(&cn->idle);
    pthread_mutex_destroy(&cn->mu);
    free(cn);
}

static symcoll_status_t cnet_create(comm_t *comm, pool_t *host_pool, cuda_net_t **cn_p)
{
    cuda_net_t *cn = calloc(1, sizeof(*cn));
    const unsigned evflags = cudaEventDisableTiming;
    symcoll_status_t status;
    void *host = NULL, *dev = NULL;
    int prev = -1;
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
    status = cuda_comm_device(comm, &cn->device);
    if (status != SYMCOLL_OK)
        goto err_free;
    if (cudaGetDevice(&prev) != cudaSuccess || prev == cn->device)
        prev = -1;
    else
        cudaSetDevice(cn->device);

    err = cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable);
    if (err == cudaSuccess) {
        cn->done_host = host;
        *cn->done_host = 0;
        err = cudaHostGetDevicePointer(&dev, host, 0);
    }
    cn->done_dev = (CUdeviceptr)(uintptr_t)dev;
    if (err == cudaSuccess)
        err = cudaStreamCreateWithFlags(&cn->cs_in, cudaStreamNonBlocking);
    if (err == cudaSuccess)
        err = cudaStreamCreateWithFlags(&cn->cs_out, cudaStreamNonBlocking);
    for (int s = 0; err == cudaSuccess && s < CNET_SLOTS; s++) {
        err = cudaEventCreateWithFlags(&cn->copied_in[s], evflags);
        if (err == cudaSuccess)
            err = cudaEventCreateWithFlags(&cn->copied_out[s], evflags);
    }
    for (int i = 0; err == cudaSuccess && i < CNET_QUEUE; i++)
        err = cudaEventCreateWithFlags(&cn->q[i].ready, evflags);
    if (err != cudaSuccess) {
        status = cuda_rt_error(err, "CUDA all-reduce across nodes: setup");
        goto err_dev;
    }
    if (pthread_create(&cn->thread, NULL, cnet_thread, cn)) {
        log_error("CUDA all-reduce across nodes: cannot start the progress thread");
        status = SYMCOLL_ERR_SYSTEM;
        goto err_dev;
    }
    cn->started = true;
    if (prev >= 0)
        cudaSetDevice(prev);
    log_info("CUDA memory across nodes: staged through pinned host memory (%s), by a "
             "progress thread",
             comm->topo->shape[SYMCOLL_MEM_CUDA].net_cuda
                 ? "UCX reports CUDA memory, but the direct path is not built"
                 : "UCX of some rank has no CUDA memory support");
    *cn_p = cn;
    return SYMCOLL_OK;

err_dev:
    if (prev >= 0)
        cudaSetDevice(prev);
err_free:
    cnet_free(cn);
    return status;
}

symcoll_status_t algo_cuda_net_drain(comm_t *comm)
{
    cuda_net_t *cn = comm->cuda_net;
    deadline_t dl;
    symcoll_status_t status = SYMCOLL_OK;

    if (!cn)
        return SYMCOLL_OK;
    /* the queued operations wait for their streams, which may hold long kernels:
     * the communicator's timeout counts from here */
    dl = deadline_make(comm->timeout_sec, NULL);
    pthread_mutex_lock(&cn->mu);
    while (cn->head != atomic_load_explicit(&cn->end, memory_order_relaxed)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&cn->idle, &cn->mu, &ts);
        if (deadline_check(&dl) != SYMCOLL_OK) {
            log_error("CUDA all-reduces across nodes still queued after %.0f s",
                      comm->timeout_sec);
            status = SYMCOLL_ERR_TIMED_OUT;
            break;
        }
    }
    pthread_mutex_unlock(&cn->mu);
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
    /* a caller's stream may not have passed its wait on the done word yet */
    cudaDeviceSynchronize();
    cnet_free(cn);
}

/* ---- the call -------------------------------------------------------------------- */

symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, pool_t *host_pool, const void *sendbuf,
                                         void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                         symcoll_op_t op, void *stream)
{
    const size_t esize = symcoll_dtype_size(dtype);
    cudaStream_t s = (cudaStream_t)stream;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cuda_net_t *cn = comm->cuda_net;
    symcoll_status_t status;
    cnet_op_t *o;
    uint32_t seq;
    CUresult res;
    cudaError_t err;

    if (((uintptr_t)sendbuf | (uintptr_t)recvbuf) % esize) {
        log_error("symcoll_allreduce: CUDA buffers must be aligned to the element size (%zu)",
                  esize);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    err = cudaStreamIsCapturing(s, &cap);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "cudaStreamIsCapturing");
    if (cap != cudaStreamCaptureStatusNone) {
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
    if (!cn->has_stage) {
        /* first call, or the first after a trim: the queue is empty then */
        status = algo_cuda_net_drain(comm);
        if (status == SYMCOLL_OK)
            status = cnet_stage_ensure(cn);
        if (status != SYMCOLL_OK)
            return status;
    }
    status = (symcoll_status_t)atomic_load(&cn->broken);
    if (status != SYMCOLL_OK) {
        log_error("symcoll_allreduce: an earlier CUDA all-reduce across nodes failed (%s); "
                  "the communicator can only be destroyed",
                  symcoll_status_string(status));
        return status;
    }

    /* a free queue slot: the thread frees one per operation */
    pthread_mutex_lock(&cn->mu);
    if (atomic_load_explicit(&cn->end, memory_order_relaxed) - cn->head >= CNET_QUEUE) {
        pthread_mutex_unlock(&cn->mu);
        status = algo_cuda_net_drain(comm);
        if (status != SYMCOLL_OK)
            return status;
        pthread_mutex_lock(&cn->mu);
    }
    o = &cn->q[atomic_load_explicit(&cn->end, memory_order_relaxed) % CNET_QUEUE];
    pthread_mutex_unlock(&cn->mu);

    seq = cn->seq + 1;
    err = cudaEventRecord(o->ready, s);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "cudaEventRecord");
    res = cn->drv->stream_wait_value32(s, cn->done_dev, seq, CU_STREAM_WAIT_VALUE_GEQ);
    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuStreamWaitValue32");
    o->send = sendbuf;
    o->recv = recvbuf;
    o->count = count;
    o->dtype = dtype;
    o->op = op;
    o->seq = seq;
    cn->seq = seq;
    pthread_mutex_lock(&cn->mu);
    atomic_store_explicit(&cn->end, atomic_load_explicit(&cn->end, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_cond_signal(&cn->work);
    pthread_mutex_unlock(&cn->mu);
    return SYMCOLL_OK;
}
