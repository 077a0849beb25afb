/* The algorithm layer's entry: the communicator's algorithm context, the checks that
 * depend on the memory type, and the one table from a plan's family to the function that
 * runs it. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/host/host.h"
#include "algo/net/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda/cuda_algo.h"
#include "algo/cuda_net/cuda_net.h"
#include "cuda/cuda.h"
#endif
#include "topo/topo.h"

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

symcoll_status_t algo_check_call(const comm_t *comm, const topo_plan_t *plan,
                                 const void *sendbuf, const void *recvbuf,
                                 symcoll_dtype_t dtype, void *stream, bool pools_missing)
{
    (void)comm;
    if (plan->mem != SYMCOLL_MEM_CUDA)
        return SYMCOLL_OK;
#ifdef HAVE_CUDA
    size_t esize = symcoll_dtype_size(dtype);
    symcoll_status_t status;
    bool capturing = false;

    if (((uintptr_t)sendbuf | (uintptr_t)recvbuf) % esize) {
        log_error("symcoll_allreduce: CUDA buffers must be aligned to the element size (%zu)",
                  esize);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (algo_family_queued(plan->family)) {
        status = cuda_stream_capturing(stream, &capturing);
        if (status != SYMCOLL_OK)
            return status;
        if (capturing) {
            log_error("symcoll_allreduce: CUDA memory across nodes cannot be captured in a "
                      "CUDA graph (a host thread moves the data over the network on every "
                      "call); call it outside the capture");
            return SYMCOLL_ERR_UNSUPPORTED;
        }
    }
    if (pools_missing)
        return cuda_check_not_capturing(stream, "symcoll_allreduce");
    return SYMCOLL_OK;
#else
    (void)sendbuf;
    (void)recvbuf;
    (void)dtype;
    (void)stream;
    (void)pools_missing;
    log_error("symcoll_allreduce: CUDA memory is not supported by this build");
    return SYMCOLL_ERR_UNSUPPORTED;
#endif
}

/* ---- the families ------------------------------------------------------------------ */

typedef symcoll_status_t (*algo_family_fn_t)(comm_t *comm, const topo_plan_t *plan,
                                             pool_t *const pools[SYMCOLL_MEM_LAST],
                                             const void *sendbuf, void *recvbuf, size_t count,
                                             symcoll_dtype_t dtype, symcoll_op_t op,
                                             void *stream);

static symcoll_status_t run_self(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                 void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                 symcoll_op_t op, void *stream)
{
    (void)comm;
    (void)pools;
    (void)op;
#ifdef HAVE_CUDA
    if (plan->mem == SYMCOLL_MEM_CUDA)
        return algo_cuda_copy(sendbuf, recvbuf, count * symcoll_dtype_size(dtype), stream);
#else
    (void)plan;
    (void)stream;
#endif
    if (sendbuf != recvbuf)
        memmove(recvbuf, sendbuf, count * symcoll_dtype_size(dtype));
    return SYMCOLL_OK;
}

/* The host algorithms' state and their staging (collective: pool growth). */
static symcoll_status_t prepare_host(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST])
{
    algo_host_state_t *st;
    return algo_host_state_get(comm, pools[SYMCOLL_MEM_HOST], &st);
}

static symcoll_status_t run_host(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                 void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                 symcoll_op_t op, void *stream)
{
    host_call_t c;
    symcoll_status_t status = algo_host_call_init(&c, comm, pools[SYMCOLL_MEM_HOST], sendbuf,
                                                  recvbuf, count, dtype, op);

    (void)stream; /* host memory is synchronous */
    if (status != SYMCOLL_OK)
        return status;
    switch (plan->algo) {
    case TOPO_ALGO_ONESHOT:
        return algo_host_done(&c, algo_host_oneshot(&c));
    case TOPO_ALGO_TWOSHOT:
        return algo_host_done(&c, algo_host_twoshot(&c));
    default:
        log_error("symcoll_allreduce: algorithm %s is not implemented for host memory "
                  "inside a node",
                  topo_algo_name(plan->algo));
        return SYMCOLL_ERR_UNSUPPORTED;
    }
}

static symcoll_status_t run_net_host(comm_t *comm, const topo_plan_t *plan,
                                     pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op, void *stream)
{
    (void)stream;
    return algo_net_allreduce(comm, pools[SYMCOLL_MEM_HOST], plan->algo, sendbuf, recvbuf,
                              count, dtype, op);
}

#ifdef HAVE_CUDA
static symcoll_status_t run_cuda(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                 void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                 symcoll_op_t op, void *stream)
{
    return algo_cuda_allreduce(comm, pools[SYMCOLL_MEM_CUDA], plan->algo, sendbuf, recvbuf,
                               count, dtype, op, stream);
}

static symcoll_status_t prepare_net_cuda(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST])
{
    return algo_cuda_net_prepare(comm, pools[SYMCOLL_MEM_HOST]);
}

static symcoll_status_t prepare_net_cuda_direct(comm_t *comm,
                                                pool_t *const pools[SYMCOLL_MEM_LAST])
{
    return algo_cuda_net_prepare_direct(comm, pools[SYMCOLL_MEM_HOST], pools[SYMCOLL_MEM_CUDA]);
}

static symcoll_status_t run_net_cuda(comm_t *comm, const topo_plan_t *plan,
                                     pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op, void *stream)
{
    return algo_cuda_net_allreduce(comm, plan, pools[SYMCOLL_MEM_HOST], pools[SYMCOLL_MEM_CUDA],
                                   sendbuf, recvbuf, count, dtype, op, stream);
}
#endif

#define POOL_BIT(mem) (1u << (mem))

/* The one table from a plan's family to what runs it, the pools it needs, and the
 * collective setup of its state beyond the pools' (made once, before the first call
 * runs, never inside an algorithm). */
static const struct {
    algo_family_fn_t run;
    unsigned pools;
    bool queued; /* runs behind the queued CUDA calls across nodes instead of after them */
    symcoll_status_t (*prepare)(comm_t *comm, pool_t *const pools[SYMCOLL_MEM_LAST]);
} families[TOPO_FAMILY_LAST] = {
    [TOPO_FAMILY_SELF] = {run_self, 0, false, NULL},
    [TOPO_FAMILY_HOST] = {run_host, POOL_BIT(SYMCOLL_MEM_HOST), false, prepare_host},
    [TOPO_FAMILY_NET_HOST] = {run_net_host, POOL_BIT(SYMCOLL_MEM_HOST), false, NULL},
#ifdef HAVE_CUDA
    [TOPO_FAMILY_CUDA] = {run_cuda, POOL_BIT(SYMCOLL_MEM_CUDA), false, NULL},
    /* staged through the host pool */
    [TOPO_FAMILY_NET_CUDA] = {run_net_cuda, POOL_BIT(SYMCOLL_MEM_HOST), true, prepare_net_cuda},
    /* the node's part over the CUDA pool's peer mappings, staged through the host pool */
    [TOPO_FAMILY_NET_CUDA_HIER] = {run_net_cuda,
                                   POOL_BIT(SYMCOLL_MEM_HOST) | POOL_BIT(SYMCOLL_MEM_CUDA),
                                   true, prepare_net_cuda},
    /* UCX puts into the peers' CUDA pool; staged where the probe found no way */
    [TOPO_FAMILY_NET_CUDA_DIRECT] = {run_net_cuda,
                                     POOL_BIT(SYMCOLL_MEM_HOST) | POOL_BIT(SYMCOLL_MEM_CUDA),
                                     true, prepare_net_cuda_direct},
    /* the node's part as NET_CUDA_HIER, the slice by UCX puts into the CUDA pool */
    [TOPO_FAMILY_NET_CUDA_HIER_DIRECT] = {run_net_cuda,
                                          POOL_BIT(SYMCOLL_MEM_HOST) |
                                              POOL_BIT(SYMCOLL_MEM_CUDA),
                                          true, prepare_net_cuda_direct},
#endif
};

unsigned algo_family_pools(topo_family_t family)
{
    return (unsigned)family < TOPO_FAMILY_LAST ? families[family].pools : 0;
}

bool algo_family_queued(topo_family_t family)
{
    return (unsigned)family < TOPO_FAMILY_LAST && families[family].queued;
}

symcoll_status_t algo_allreduce(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                symcoll_op_t op, void *stream)
{
    symcoll_status_t status;

    if ((unsigned)plan->family >= TOPO_FAMILY_LAST || !families[plan->family].run) {
        topo_plan_t p;
        topo_decision_t d;
        topo_plan_explain(comm->topo, plan->mem, count * symcoll_dtype_size(dtype), &p, &d);
        log_error("symcoll_allreduce: no algorithm for %zu bytes of %s memory: %s",
                  count * symcoll_dtype_size(dtype),
                  plan->mem == SYMCOLL_MEM_HOST ? "host" : "CUDA", d.reason);
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    if (log_level_current >= LOG_LEVEL_DEBUG) {
        topo_plan_t p;
        topo_decision_t d;
        topo_plan_explain(comm->topo, plan->mem, count * symcoll_dtype_size(dtype), &p, &d);
        log_debug("all-reduce of %zu bytes: %s/%s (%s)", count * symcoll_dtype_size(dtype),
                  topo_family_name(plan->family), topo_algo_name(plan->algo), d.reason);
    }
    /* the queued families check it themselves, and tell the node's kernels */
    if (plan->family != TOPO_FAMILY_SELF && !families[plan->family].queued) {
        status = algo_check_usable(comm);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (families[plan->family].prepare) {
        status = families[plan->family].prepare(comm, pools);
        if (status != SYMCOLL_OK)
            return status;
    }
    return families[plan->family].run(comm, plan, pools, sendbuf, recvbuf, count, dtype, op,
                                      stream);
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
    algo_cuda_net_abort(comm); /* lanes tell their peers, also when idle */
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

void algo_pool_abort(comm_t *comm, pool_t *pool)
{
    algo_break(comm, SYMCOLL_ERR_ABORTED);
    if (pool_backend(pool)->mem_type == SYMCOLL_MEM_HOST)
        algo_host_abort(comm, pool);
    algo_net_pool_abort(comm, pool);
}
