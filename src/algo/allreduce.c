/* The all-reduce row of the dispatch: one cell per family, each handing the call to its
 * family's entry. */
#include "algo/run.h"

#include <string.h>

#include "algo/host/host.h"
#include "algo/net/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda/cuda_algo.h"
#include "algo/cuda_net/cuda_net.h"
#endif

static symcoll_status_t ar_self(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    size_t bytes = a->count * symcoll_dtype_size(a->dtype);

    (void)comm;
    (void)pools;
#ifdef HAVE_CUDA
    if (plan->mem == SYMCOLL_MEM_CUDA)
        return algo_cuda_copy(a->sendbuf, a->recvbuf, bytes, a->stream);
#else
    (void)plan;
#endif
    if (a->sendbuf != a->recvbuf)
        memmove(a->recvbuf, a->sendbuf, bytes);
    return SYMCOLL_OK;
}

static symcoll_status_t ar_host(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    host_call_t c;
    symcoll_status_t status = algo_host_call_init(&c, comm, pools[SYMCOLL_MEM_HOST], a->sendbuf,
                                                  a->recvbuf, a->count, a->dtype, a->op);

    /* host memory is synchronous: no stream */
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

static symcoll_status_t ar_net_host(comm_t *comm, const topo_plan_t *plan,
                                    pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    return algo_net_allreduce(comm, pools[SYMCOLL_MEM_HOST], plan->algo, a->sendbuf, a->recvbuf,
                              a->count, a->dtype, a->op);
}

#ifdef HAVE_CUDA
static symcoll_status_t ar_cuda(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    return algo_cuda_allreduce(comm, pools[SYMCOLL_MEM_CUDA], plan->algo, a->sendbuf, a->recvbuf,
                               a->count, a->dtype, a->op, a->stream);
}

/* every CUDA family across nodes: the engine's queue takes the plan */
static symcoll_status_t ar_net_cuda(comm_t *comm, const topo_plan_t *plan,
                                    pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    return algo_cuda_net_allreduce(comm, plan, pools[SYMCOLL_MEM_HOST], pools[SYMCOLL_MEM_CUDA],
                                   a->sendbuf, a->recvbuf, a->count, a->dtype, a->op,
                                   a->stream);
}
#endif

static const algo_run_fn_t row[TOPO_FAMILY_LAST] = {
    [TOPO_FAMILY_SELF] = ar_self,
    [TOPO_FAMILY_HOST] = ar_host,
    [TOPO_FAMILY_NET_HOST] = ar_net_host,
#ifdef HAVE_CUDA
    [TOPO_FAMILY_CUDA] = ar_cuda,
    [TOPO_FAMILY_NET_CUDA] = ar_net_cuda,
    [TOPO_FAMILY_NET_CUDA_HIER] = ar_net_cuda,
    [TOPO_FAMILY_NET_CUDA_DIRECT] = ar_net_cuda,
    [TOPO_FAMILY_NET_CUDA_HIER_DIRECT] = ar_net_cuda,
#endif
};

bool algo_allreduce_has(topo_family_t family)
{
    return (unsigned)family < TOPO_FAMILY_LAST && row[family];
}

symcoll_status_t algo_allreduce(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    if (!algo_allreduce_has(plan->family))
        return SYMCOLL_ERR_INTERNAL;
    return row[plan->family](comm, plan, pools, a);
}
