/* CUDA memory across nodes, the entry points of cuda_net.h: the call's checks, the
 * engine's creation, its preparation (staging, channels, the direct path's probe and buffers),
 * abort, release and destroy (the engine: cuda_net_int.h). */
#include "algo/cuda_net/cuda_net_int.h"

#include <stdlib.h>
#include <string.h>

#include "topo/select.h"
#include "topo/topo.h"

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
    cn->nchannels = (int)comm->config.cuda_net_channels; /* 1 .. 15: checked by the config */
    cn->nslots = cnet_nslots(cn->nchannels);
    cnet_sched_init(&cn->sched, cn->nchannels);
    words_bytes = CNET_WORDS_LINES(cn) * CNET_WORD_STRIDE * sizeof(uint32_t);
    cn->drv = cuda_driver("CUDA all-reduce across nodes");
    if (!cn->drv) {
        status = SYMCOLL_ERR_CUDA;
        goto err_free;
    }
    {
        int dev;
        status = cuda_comm_device(comm, &dev);
        if (status == SYMCOLL_OK)
            status = cuda_kernels_load(dev);
    }
    if (status != SYMCOLL_OK)
        goto err_free;
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
    log_info("CUDA memory across nodes: %s, %d channels",
             comm->topo->shape[SYMCOLL_MEM_CUDA].net_cuda
                 ? "UCX reports CUDA memory: direct where the probe puts land and the "
                   "selector plans it (SYMCOLL_CUDA_NET_PATH), else staged through pinned "
                   "host memory"
                 : "staged through pinned host memory (UCX of some rank has no CUDA memory "
                   "support)",
             cn->nchannels);
    *cn_p = cn;
    return SYMCOLL_OK;

err_free:
    cnet_free(cn);
    return status;
}

/* Stops the channels, then frees the host staging and the direct path's buffers once no queued
 * stream work uses them (caller's thread, queue drained; collective). */
static void cnet_stop(cuda_net_t *cn)
{
    cnet_channels_stop(cn);
    cnet_stage_release(cn);
}

/* Sets up the host staging, then starts the channels, which reserve their scratch for its
 * slots, if not done yet (caller's thread, no operation queued; collective). */
static symcoll_status_t cnet_start(cuda_net_t *cn)
{
    symcoll_status_t status;

    if (cn->has_stage)
        return SYMCOLL_OK;
    status = cnet_stage_ensure(cn);
    if (status != SYMCOLL_OK)
        return status;
    status = cnet_channels_start(cn);
    if (status != SYMCOLL_OK) {
        cnet_stop(cn);
        return status;
    }
    log_debug("CUDA across nodes: %d x %zu bytes of pinned host staging at pool offset %zu, "
              "%d channels",
              cn->nslots, cn->slot_bytes, cn->stage_off, cn->nchannels);
    return SYMCOLL_OK;
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
    cnet_stop(cn);
}

void algo_cuda_net_release_direct(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;

    if (!cn || !cn->direct.scratch || algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT)
        return;
    cnet_direct_release_scratch(cn);
}

void algo_cuda_net_destroy(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;

    if (!cn)
        return;
    if (algo_cuda_net_drain(comm) == SYMCOLL_ERR_TIMED_OUT) {
        /* make the channels fail what is left (and release those streams) */
        int ok = SYMCOLL_OK;
        atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok,
                                       (int)SYMCOLL_ERR_TIMED_OUT);
    }
    cnet_stop(cn); /* the channels stop once the queue is empty */
    if (cn->nops)
        log_info(
            "CUDA across nodes: %llu all-reduces on %d channels; per call, us, summed over "
            "the channels: %.1f busy = %.1f until the first chunk was on the host + %.1f "
            "in the host all-reduces + the rest",
            (unsigned long long)cn->nops, cn->nchannels, 1e6 * cn->t_busy / (double)cn->nops,
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

/* A call failed after other ranks may have queued it: their threads would wait for
 * ours. The communicator breaks (the channels stop waiting for its chunks and release them,
 * and every later call fails), the node's kernels stop waiting for ours, and idle channels
 * wake and tell their peers (cnet_must_tell). */
static void cnet_fail_call(cuda_net_t *cn, symcoll_status_t status)
{
    int ok = SYMCOLL_OK;

    if (atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok, (int)status))
        cnet_tell_node(cn);
    pthread_mutex_lock(&cn->mu);
    pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);
}

symcoll_status_t algo_cuda_net_prepare(comm_t *comm, pool_t *host_pool)
{
    cuda_net_t *cn = NULL;
    symcoll_status_t status;

    cn = comm->algo->cuda_net;
    if (!cn) {
        status = cnet_create(comm, host_pool, &cn);
        if (status != SYMCOLL_OK)
            return status;
        /* symcoll_comm_abort may read it from another thread */
        __atomic_store_n(&comm->algo->cuda_net, cn, __ATOMIC_RELEASE);
    }
    /* broken: the call says so (and tells the node) */
    if (cn->has_stage || algo_broken(comm) != SYMCOLL_OK)
        return SYMCOLL_OK;
    /* first call, or the first after a trim (the queue is empty then): the staging and
     * the channels, which connect to their peers (collective) */
    status = algo_cuda_net_drain(comm);
    if (status == SYMCOLL_OK)
        status = cnet_start(cn);
    if (status != SYMCOLL_OK)
        cnet_fail_call(cn, status);
    return status;
}

symcoll_status_t algo_cuda_net_probe(comm_t *comm, pool_t *host_pool, pool_t *cuda_pool)
{
    topo_t *topo = comm->topo;
    symcoll_status_t status;

    if (topo->nnodes < 2 || !comm->ucx || topo->shape[SYMCOLL_MEM_CUDA].net_direct != 0 ||
        !topo->shape[SYMCOLL_MEM_CUDA].net_cuda || !topo->shape[SYMCOLL_MEM_CUDA].gpus ||
        topo->select_cfg.cuda_net_path == TOPO_PATH_STAGED)
        return SYMCOLL_OK;
    if (!ucx_pool_registered(comm->ucx, SYMCOLL_MEM_CUDA)) {
        /* every rank knows (the registrations' exchange told them): no probe */
        topo_set_net_direct(topo, NULL, false, false, false);
        return SYMCOLL_OK;
    }
    status = algo_cuda_net_prepare(comm, host_pool);
    if (status != SYMCOLL_OK)
        return status;
    return cnet_probe(comm, cuda_pool);
}

symcoll_status_t algo_cuda_net_prepare_direct(comm_t *comm, pool_t *host_pool,
                                              pool_t *cuda_pool)
{
    const topo_t *topo = comm->topo;
    symcoll_status_t status = algo_cuda_net_prepare(comm, host_pool);
    cuda_net_t *cn = comm->algo->cuda_net;

    if (status != SYMCOLL_OK)
        return status;
    if (topo->shape[SYMCOLL_MEM_CUDA].net_direct == 0) {
        /* the CUDA pool was created before the host pool: the probe runs now */
        status = algo_cuda_net_probe(comm, host_pool, cuda_pool);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (topo->shape[SYMCOLL_MEM_CUDA].net_direct < 0) {
        if (topo->select_cfg.cuda_net_path == TOPO_PATH_DIRECT) {
            log_error("symcoll_allreduce: SYMCOLL_CUDA_NET_PATH=direct, but the direct path "
                      "is not available here (see the warnings above, or symcoll_info -t)");
            return SYMCOLL_ERR_UNSUPPORTED;
        }
        return SYMCOLL_OK; /* this call runs staged; the next ones are planned so */
    }
    /* planned before the probe that told: auto does not run it where UCX's lanes call the
     * CUDA driver (topo_shape_t's net_direct_drv); every rank knows the same */
    if (topo->shape[SYMCOLL_MEM_CUDA].net_direct_drv &&
        topo->select_cfg.cuda_net_path != TOPO_PATH_DIRECT)
        return SYMCOLL_OK;
    if (cn->direct.scratch && cn->direct.cuda_pool == cuda_pool)
        return SYMCOLL_OK;
    status = algo_cuda_net_drain(comm);
    if (status == SYMCOLL_OK)
        status = cnet_direct_ensure(cn, cuda_pool);
    if (status != SYMCOLL_OK)
        cnet_fail_call(cn, status);
    return status;
}

symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, const topo_plan_t *plan,
                                         pool_t *host_pool, pool_t *plan_cuda_pool,
                                         const void *sendbuf, void *recvbuf, size_t count,
                                         symcoll_dtype_t dtype, symcoll_op_t op, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    cuda_net_t *cn = comm->algo->cuda_net;
    pool_t *cuda_pool = NULL;
    symcoll_status_t status;

    /* alignment and capture were checked by algo_check_call */
    if (plan->family != TOPO_FAMILY_NET_CUDA) {
        cuda_pool = plan_cuda_pool;
        if (!cuda_pool) {
            log_error("symcoll_allreduce: internal error: no CUDA pool for %s",
                      topo_family_name(plan->family));
            return SYMCOLL_ERR_INTERNAL;
        }
    }
    if (!cn || cn->host_pool != host_pool) {
        log_error("symcoll_allreduce: internal error: CUDA across nodes not prepared");
        return SYMCOLL_ERR_INTERNAL;
    }
    if (cnet_node_failed(cn)) {
        /* a rank of this node gave up: its kernels will not come */
        int ok = SYMCOLL_OK;
        if (atomic_compare_exchange_strong(&cn->comm->algo->broken, &ok,
                                           (int)SYMCOLL_ERR_PEER_FAILED))
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
        log_error("symcoll_allreduce: internal error: no staging for CUDA across nodes");
        return SYMCOLL_ERR_INTERNAL;
    }
    if (plan->family == TOPO_FAMILY_NET_CUDA_HIER_DIRECT && !cn->direct.scratch) {
        /* planned only when forced, and then the preparation set the buffers up or failed */
        log_error("symcoll_allreduce: internal error: no buffers for the direct path");
        status = SYMCOLL_ERR_INTERNAL;
    } else if (plan->family == TOPO_FAMILY_NET_CUDA_DIRECT && cn->direct.scratch)
        status = cnet_direct_enqueue(cn, s, sendbuf, recvbuf, count, dtype, op);
    else if (plan->family == TOPO_FAMILY_NET_CUDA_HIER ||
             plan->family == TOPO_FAMILY_NET_CUDA_HIER_DIRECT)
        status =
            cnet_hier(cn, s, cuda_pool, sendbuf, recvbuf, count, dtype, op,
                      plan->family == TOPO_FAMILY_NET_CUDA_HIER_DIRECT && cn->direct.scratch);
    else
        status = cnet_enqueue(cn, s, sendbuf, recvbuf, count, dtype, op, false, plan->forced);
    if (status != SYMCOLL_OK)
        cnet_fail_call(cn, status);
    return status;
}
