/* The algorithm layer's entry: the communicator's algorithm context and pools, the
 * checks that depend on the plan, and the one run of a call by the selector's plan (what
 * each family needs first, then its cell of the collective x family table: allreduce.c,
 * coll.c). */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/run.h"
#include "algo/host/host.h"
#include "algo/net/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda/cuda_algo.h"
#include "algo/cuda_net/cuda_net.h"
#include "cuda/cuda.h"
#endif
#include "bootstrap/bootstrap.h"
#include "topo/topo.h"
#include "ucx/ucx.h"

/* Defined by the CUDA layer when it is built (cudaPointerGetAttributes); weak, so that
 * without it every pointer is host memory. */
int cuda_ptr_is_device(const void *ptr) __attribute__((weak));

symcoll_status_t algo_mem_type(const void *sendbuf, const void *recvbuf,
                               symcoll_mem_type_t *mem_type_p)
{
    int s = 0, r = 0;
    if (cuda_ptr_is_device) {
        s = sendbuf ? cuda_ptr_is_device(sendbuf) : 0;
        /* in place: one driver query, not two, on every call */
        r = recvbuf == sendbuf ? s : recvbuf ? cuda_ptr_is_device(recvbuf) : 0;
    }
    if (s != r && sendbuf && recvbuf) {
        log_error("symcoll_allreduce: send and receive buffers are of different memory types "
                  "(one host, one CUDA)");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    *mem_type_p = (s || r) ? SYMCOLL_MEM_CUDA : SYMCOLL_MEM_HOST;
    return SYMCOLL_OK;
}

/* ---- the families ------------------------------------------------------------------ */

/* The host algorithms' state and their staging (collective: pool growth). */
static symcoll_status_t prepare_host(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST])
{
    algo_host_state_t *st;
    return algo_host_state_get(comm, pools[SYMCOLL_MEM_HOST], &st);
}

#ifdef HAVE_CUDA
static symcoll_status_t prepare_net_cuda(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST])
{
    return algo_cuda_net_prepare(comm, pools[SYMCOLL_MEM_HOST]);
}

static symcoll_status_t prepare_net_cuda_direct(comm_t *comm,
                                                pool_t *const pools[SYMCOLL_MEM_LAST])
{
    return algo_cuda_net_prepare_direct(comm, pools[SYMCOLL_MEM_HOST], pools[SYMCOLL_MEM_CUDA]);
}
#endif

#define POOL_BIT(mem) (1u << (mem))

/* What every call of a family needs before its row runs (allreduce.c, coll.c): the
 * pools, whether it runs behind the queued CUDA calls across nodes instead of after
 * them, and the collective setup of its state beyond the pools' (made once, before the
 * first call runs, never inside an algorithm). */
static const struct {
    unsigned pools;
    bool queued;
    symcoll_status_t (*prepare)(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST]);
} families[TOPO_FAMILY_LAST] = {
    [TOPO_FAMILY_SELF] = {0, false, NULL},
    [TOPO_FAMILY_HOST] = {POOL_BIT(SYMCOLL_MEM_HOST), false, prepare_host},
    [TOPO_FAMILY_NET_HOST] = {POOL_BIT(SYMCOLL_MEM_HOST), false, NULL},
#ifdef HAVE_CUDA
    [TOPO_FAMILY_CUDA] = {POOL_BIT(SYMCOLL_MEM_CUDA), false, NULL},
    /* staged through the host pool */
    [TOPO_FAMILY_NET_CUDA] = {POOL_BIT(SYMCOLL_MEM_HOST), true, prepare_net_cuda},
    /* the node's part over the CUDA pool's peer mappings, staged through the host pool */
    [TOPO_FAMILY_NET_CUDA_HIER] = {POOL_BIT(SYMCOLL_MEM_HOST) | POOL_BIT(SYMCOLL_MEM_CUDA),
                                   true, prepare_net_cuda},
    /* UCX puts into the peers' CUDA pool; staged where the probe found no way */
    [TOPO_FAMILY_NET_CUDA_DIRECT] = {POOL_BIT(SYMCOLL_MEM_HOST) | POOL_BIT(SYMCOLL_MEM_CUDA),
                                     true, prepare_net_cuda_direct},
    /* the node's part as NET_CUDA_HIER, the slice by UCX puts into the CUDA pool */
    [TOPO_FAMILY_NET_CUDA_HIER_DIRECT] = {POOL_BIT(SYMCOLL_MEM_HOST) |
                                              POOL_BIT(SYMCOLL_MEM_CUDA),
                                          true, prepare_net_cuda_direct},
#endif
};

size_t algo_plan_bytes(const comm_t *comm, const algo_args_t *a)
{
    size_t bytes = a->count * symcoll_dtype_size(a->dtype);

    switch (a->coll) {
    case TOPO_COLL_REDUCE_SCATTER:
    case TOPO_COLL_ALLGATHER:
        return bytes * (size_t)comm->nranks;
    case TOPO_COLL_BARRIER:
        return 1;
    default:
        return bytes;
    }
}

/* The pool of mem_type, created on first use (collective: every rank's first use of a
 * memory type is the same call), with the algorithms' state on it. The one way to a
 * pool. Called with comm->lock held. */
symcoll_status_t algo_pool_get(comm_t *comm, symcoll_mem_type_t mem_type, pool_t **pool_p)
{
    pool_params_t params = {.mem_type = mem_type,
                            .listener = NULL,
                            .local_rank = comm->topo->local_rank,
                            .local_size = comm->topo->local_size};
    pool_listener_t listener;
    pool_t *pool = comm->pools[mem_type];
    symcoll_status_t status;

    if (!pool) {
        if (!pool_backend_get(mem_type)) {
            log_error("%s memory is not supported by this build",
                      mem_type == SYMCOLL_MEM_CUDA ? "CUDA" : "this");
            return SYMCOLL_ERR_UNSUPPORTED;
        }
        /* queued CUDA all-reduces across nodes use the pools: creating one is a
         * rendezvous they must not interleave with */
        status = algo_quiesce(comm);
        if (status != SYMCOLL_OK)
            return status;
        /* host segments are registered with UCX; CUDA ones where UCX reaches CUDA
         * memory on every rank and the direct path may be used (a UCX that cannot
         * register them says so once, and CUDA data crosses nodes staged through the
         * host pool, which the probe of the direct path then needs: created first) */
        if (comm->ucx && (mem_type == SYMCOLL_MEM_HOST ||
                          (comm->topo->shape[SYMCOLL_MEM_CUDA].net_cuda &&
                           comm->topo->select_cfg.cuda_net_path != TOPO_PATH_STAGED))) {
            if (mem_type != SYMCOLL_MEM_HOST) {
                pool_t *host;
                status = algo_pool_get(comm, SYMCOLL_MEM_HOST, &host);
                if (status != SYMCOLL_OK)
                    return status;
            }
            ucx_pool_listener(comm->ucx, mem_type, &listener);
            params.listener = &listener;
        }
        status = pool_create(comm, &params, &pool);
        if (status != SYMCOLL_OK)
            return status;
        /* published for symcoll_pool_query, which does not take the lock */
        __atomic_store_n(&comm->pools[mem_type], pool, __ATOMIC_RELEASE);
        status = algo_pool_attach(comm, pool);
        if (status != SYMCOLL_OK)
            return status;
    }
    *pool_p = pool;
    return SYMCOLL_OK;
}

/* The pools a family needs, created where missing. */
static symcoll_status_t pools_get(comm_t *comm, unsigned mask, pool_t *pools[SYMCOLL_MEM_LAST])
{
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pools[mt] = NULL;
        if (mask & (1u << mt)) {
            symcoll_status_t status = algo_pool_get(comm, (symcoll_mem_type_t)mt, &pools[mt]);
            if (status != SYMCOLL_OK)
                return status;
        }
    }
    return SYMCOLL_OK;
}

static bool pools_missing(const comm_t *comm, unsigned mask)
{
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++)
        if ((mask & (1u << mt)) && !comm->pools[mt])
            return true;
    return false;
}

void algo_tell_aborted(comm_t *comm, int mem)
{
    /* the staging thread tells the peers itself; it must be done with UCX first */
    (void)algo_quiesce(comm);
    for (int m = 0; m < SYMCOLL_MEM_LAST; m++)
        if ((mem < 0 || m == mem) && comm->pools[m])
            algo_pool_abort(comm, comm->pools[m]);
    /* and peers waiting for us in a bootstrap exchange (a pool's growth) */
    bootstrap_abort(comm->bootstrap);
}

/* An aborted communicator: tells the peers, refuses the call. */
static symcoll_status_t run_aborted(comm_t *comm, const char *fn, symcoll_mem_type_t mem)
{
    log_error("%s: communicator aborted", fn);
    algo_tell_aborted(comm, (int)mem);
    return SYMCOLL_ERR_ABORTED;
}

/* Checks of a call that depend on its plan (CUDA: buffers aligned to the element size;
 * no stream capture across nodes, nor while a pool the call needs is missing, since
 * creating it is a rendezvous). No side effect. */
static symcoll_status_t check_call(const comm_t *comm, const char *fn, const topo_plan_t *plan,
                                   const algo_args_t *a, bool pools_missing)
{
    const void *sendbuf = a->sendbuf, *recvbuf = a->recvbuf;
    symcoll_dtype_t dtype = a->dtype;
    void *stream = a->stream;

    (void)comm;
    if (plan->mem != SYMCOLL_MEM_CUDA)
        return SYMCOLL_OK;
#ifdef HAVE_CUDA
    size_t esize = symcoll_dtype_size(dtype);
    symcoll_status_t status;
    bool capturing = false;

    if (((uintptr_t)sendbuf | (uintptr_t)recvbuf) % esize) {
        log_error("%s: CUDA buffers must be aligned to the element size (%zu)", fn, esize);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (families[plan->family].queued) {
        status = cuda_stream_capturing(stream, &capturing);
        if (status != SYMCOLL_OK)
            return status;
        if (capturing) {
            log_error("%s: CUDA memory across nodes cannot be captured in a "
                      "CUDA graph (a host thread moves the data over the network on every "
                      "call); call it outside the capture",
                      fn);
            return SYMCOLL_ERR_UNSUPPORTED;
        }
    }
    if (pools_missing)
        return cuda_check_not_capturing(stream, fn);
    return SYMCOLL_OK;
#else
    (void)sendbuf;
    (void)recvbuf;
    (void)dtype;
    (void)stream;
    (void)pools_missing;
    log_error("%s: CUDA memory is not supported by this build", fn);
    return SYMCOLL_ERR_UNSUPPORTED;
#endif
}

symcoll_status_t algo_run(comm_t *comm, const char *fn, const topo_plan_t *plan,
                          const algo_args_t *a)
{
    const bool has = (unsigned)plan->family < TOPO_FAMILY_LAST &&
                     plan->family != TOPO_FAMILY_NONE && algo_allreduce_has(plan->family);
    const unsigned need = has ? families[plan->family].pools : 0;
    const bool queued = has && families[plan->family].queued;
    pool_t *pools[SYMCOLL_MEM_LAST];
    symcoll_status_t status;

    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed))
        return run_aborted(comm, fn, plan->mem);
    if (!has || log_level_current >= LOG_LEVEL_DEBUG) {
        size_t bytes = algo_plan_bytes(comm, a);
        topo_plan_t p;
        topo_decision_t d;
        topo_plan_explain(comm->topo, plan->coll, plan->mem, bytes, &p, &d);
        if (!has) {
            log_error("%s: no algorithm for %zu bytes of %s memory: %s", fn, bytes,
                      plan->mem == SYMCOLL_MEM_HOST ? "host" : "CUDA", d.reason);
            /* the caller's own choice (symcoll_comm_set_algo): an argument it can change */
            return d.source == TOPO_SOURCE_CALL ? SYMCOLL_ERR_INVALID_PARAM
                                                : SYMCOLL_ERR_UNSUPPORTED;
        }
        log_debug("%s of %zu bytes: %s/%s, via %d (%s)", topo_coll_name(plan->coll), bytes,
                  topo_family_name(plan->family), topo_algo_name(plan->algo), (int)plan->via,
                  d.reason);
    }
    status = check_call(comm, fn, plan, a, pools_missing(comm, need));
    if (status != SYMCOLL_OK)
        return status;
    /* calls of another family go after the queued CUDA all-reduces across nodes (every
     * collective of CUDA memory there runs as one of them, queued in turn) */
    if (!queued)
        status = algo_quiesce(comm);
    if (status == SYMCOLL_OK)
        status = pools_get(comm, need, pools);
    /* allocations made without an exchange are compared before the first collective
     * after them (host communication only: legal during a stream capture) */
    for (int m = 0; m < SYMCOLL_MEM_LAST && status == SYMCOLL_OK; m++)
        if (comm->pools[m])
            status = pool_check(comm->pools[m]);
    /* ranks whose allocations differ hold buffers that are not symmetric: for good */
    if (status == SYMCOLL_ERR_MISMATCH)
        algo_break(comm, status);
    if (status != SYMCOLL_OK)
        return status;
    /* the queued families check it themselves, and tell the node's kernels */
    if (plan->family != TOPO_FAMILY_SELF && !queued) {
        status = algo_check_usable(comm);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (families[plan->family].prepare) {
        status = families[plan->family].prepare(comm, pools);
        if (status != SYMCOLL_OK)
            return status;
    }
#ifdef HAVE_CUDA
    /* a graph that captures the call holds the communicator's CUDA memory: before
     * anything is queued, so that a failure here leaves no trace */
    if (plan->mem == SYMCOLL_MEM_CUDA && !queued) {
        status = algo_cuda_note_capture(comm, a->stream);
        if (status != SYMCOLL_OK)
            return status;
    }
#endif
    return a->coll == TOPO_COLL_ALLREDUCE ? algo_allreduce(comm, plan, pools, a)
                                          : algo_coll(comm, plan, pools, a);
}

/* ---- the context ------------------------------------------------------------------ */

symcoll_status_t algo_comm_init(comm_t *comm)
{
    comm->algo = calloc(1, sizeof(*comm->algo));
    if (!comm->algo) {
        log_error("out of memory for the algorithms' context");
        return SYMCOLL_ERR_NO_MEMORY;
    }
    atomic_init(&comm->algo->broken, SYMCOLL_OK);
    /* the native reduce-scatter inside a node needs a piece of every rank's block in a
     * staging slot */
    topo_set_host_rs_native(
        comm->topo, algo_host_rs_piece(comm->config.host_chunk_size / POOL_ALIGN * POOL_ALIGN,
                                       comm->topo->local_size) > 0);
    return SYMCOLL_OK;
}

void algo_comm_release(comm_t *comm)
{
    algo_ctx_t *ctx = comm->algo;

    if (!ctx)
        return;
#ifdef HAVE_CUDA
    algo_cuda_net_destroy(comm); /* queued work first: it uses the pools and UCX */
    algo_cuda_free(comm);
#endif
    algo_net_free(comm);
    algo_host_free(comm);
    free(ctx->scratch);
    free(ctx);
    comm->algo = NULL;
}

symcoll_status_t algo_pool_attach(comm_t *comm, pool_t *pool)
{
    symcoll_status_t status = SYMCOLL_OK;

    switch (pool_backend(pool)->mem_type) {
    case SYMCOLL_MEM_HOST:
        if (comm->topo->nnodes > 1)
            status = algo_net_attach(comm, pool);
        break;
#ifdef HAVE_CUDA
    case SYMCOLL_MEM_CUDA:
        status = algo_cuda_attach(comm, pool);
        /* the direct path's probe, where it can run (it says whether it does) */
        if (status == SYMCOLL_OK && comm->topo->nnodes > 1 && comm->pools[SYMCOLL_MEM_HOST])
            status = algo_cuda_net_probe(comm, comm->pools[SYMCOLL_MEM_HOST], pool);
        break;
#endif
    default:
        break;
    }
    /* the pool exists on every rank now, without the state its calls need (or the ranks
     * disagree on it): no later call can run */
    if (status != SYMCOLL_OK)
        algo_break(comm, status);
    return status;
}

symcoll_status_t algo_quiesce(comm_t *comm)
{
#ifdef HAVE_CUDA
    return algo_cuda_net_drain(comm);
#else
    (void)comm;
    return SYMCOLL_OK;
#endif
}

void algo_comm_abort(comm_t *comm)
{
#ifdef HAVE_CUDA
    algo_cuda_net_abort(comm); /* channels tell their peers, also when idle */
#else
    (void)comm;
#endif
}

/* What the algorithms keep per pool depends on its memory type. */
void algo_pool_release(comm_t *comm, pool_t *pool)
{
    switch (pool_backend(pool)->mem_type) {
    case SYMCOLL_MEM_HOST:
#ifdef HAVE_CUDA
        algo_cuda_net_release(comm); /* its staging lives in the host pool */
#endif
        algo_host_release(comm, pool);
        algo_net_pool_release(comm, pool);
        break;
#ifdef HAVE_CUDA
    case SYMCOLL_MEM_CUDA:
        algo_cuda_net_release_direct(comm); /* its scratch lives in the CUDA pool */
        algo_cuda_release(comm, pool);
        break;
#endif
    default:
        break;
    }
}

symcoll_status_t algo_pool_trim_release(comm_t *comm, pool_t *pool)
{
#ifdef HAVE_CUDA
    if (pool_backend(pool)->mem_type == SYMCOLL_MEM_CUDA) {
        /* every rank keeps the staging, or none does: the pools stay alike */
        int64_t live = algo_cuda_graphs(comm);
        symcoll_status_t status =
            bootstrap_allreduce(comm->bootstrap, &live, 1, BOOTSTRAP_OP_MAX);
        if (status != SYMCOLL_OK)
            return status;
        if (live > 0) {
            log_info("pool trim keeps the CUDA staging and scratch: live CUDA graphs use "
                     "them (%lld captured call(s) on the rank with the most)",
                     (long long)live);
            return SYMCOLL_OK;
        }
    }
#endif
    algo_pool_release(comm, pool);
    return SYMCOLL_OK;
}

void algo_pool_abort(comm_t *comm, pool_t *pool)
{
    algo_break(comm, SYMCOLL_ERR_ABORTED);
    if (pool_backend(pool)->mem_type == SYMCOLL_MEM_HOST)
        algo_host_abort(comm, pool);
    algo_net_pool_abort(comm, pool);
}
