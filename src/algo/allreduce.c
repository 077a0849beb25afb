/* All-reduce dispatch: memory type of the buffers, the selector's algorithm for this
 * communicator and size, then the algorithm. The one place where the intra-node,
 * inter-node and hierarchical algorithms (and the CUDA path) plug in. */
#include "algo/algo.h"

#include <string.h>

#include "algo/host.h"
#include "algo/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda_algo.h"
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

/* Remember the last decision so that a loop of equal calls asks the selector once (the
 * reason string is formatted only when it is logged). */
static topo_algo_t allreduce_choose(comm_t *comm, algo_host_state_t *st, symcoll_mem_type_t mem,
                                    size_t bytes)
{
    topo_decision_t d;
    if (st && st->last_algo >= 0 && st->last_bytes == bytes)
        return (topo_algo_t)st->last_algo;
    d.algo = topo_choose_algo(comm->topo, mem, bytes);
    /* the reason only when it is printed */
    if (d.algo == TOPO_ALGO_NONE || log_level_current >= LOG_LEVEL_DEBUG)
        topo_choose(comm->topo, mem, bytes, &d);
    if (d.algo == TOPO_ALGO_NONE)
        log_error("symcoll_allreduce: no algorithm for %zu bytes of %s memory: %s", bytes,
                  mem == SYMCOLL_MEM_HOST ? "host" : "CUDA", d.reason);
    else
        log_debug("all-reduce of %zu bytes: %s (%s)", bytes, topo_algo_name(d.algo), d.reason);
    if (st) {
        st->last_bytes = bytes;
        st->last_algo = (int)d.algo;
    }
    return d.algo;
}

static symcoll_status_t allreduce_host(comm_t *comm, pool_t *pool, const void *sendbuf,
                                       void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                       symcoll_op_t op)
{
    algo_host_state_t *st;
    host_call_t c;
    symcoll_status_t status;
    topo_algo_t algo;

    status = algo_host_state_get(pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    if (st->broken != SYMCOLL_OK) {
        log_error("symcoll_allreduce: an earlier call failed (%s); the communicator can only "
                  "be destroyed",
                  symcoll_status_string(st->broken));
        return st->broken;
    }

    memset(&c, 0, sizeof(c));
    c.comm = comm;
    c.pool = pool;
    c.st = st;
    c.me = st->me;
    c.n = st->n;
    c.sendbuf = sendbuf;
    c.recvbuf = recvbuf;
    c.count = count;
    c.dtype = dtype;
    c.op = op;
    c.esize = symcoll_dtype_size(dtype);

    algo = allreduce_choose(comm, st, SYMCOLL_MEM_HOST, count * c.esize);
    switch (algo) {
    case TOPO_ALGO_ONESHOT:
        return algo_host_done(&c, algo_host_oneshot(&c));
    case TOPO_ALGO_TWOSHOT:
        return algo_host_done(&c, algo_host_twoshot(&c));
    case TOPO_ALGO_NONE:
        return SYMCOLL_ERR_UNSUPPORTED;
    default:
        log_error("symcoll_allreduce: algorithm %s is not implemented for host memory yet",
                  topo_algo_name(algo));
        return SYMCOLL_ERR_UNSUPPORTED;
    }
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

void algo_comm_release(comm_t *comm)
{
#ifdef HAVE_CUDA
    algo_cuda_net_destroy(comm);
#else
    (void)comm;
#endif
}

/* What the algorithms keep per pool depends on its memory type. */
void algo_pool_release(pool_t *pool)
{
    switch (pool_backend(pool)->mem_type) {
    case SYMCOLL_MEM_HOST:
#ifdef HAVE_CUDA
        algo_cuda_net_release(pool_comm(pool)); /* its staging lives in the host pool */
#endif
        algo_host_release(pool);
        algo_net_pool_release(pool);
        break;
#ifdef HAVE_CUDA
    case SYMCOLL_MEM_CUDA:
        algo_cuda_release(pool);
        break;
#endif
    default:
        break;
    }
}

bool algo_cuda_across_uses_pool(const comm_t *comm, size_t bytes)
{
#ifdef HAVE_CUDA
    return algo_cuda_net_uses_pool(comm, bytes);
#else
    (void)comm;
    (void)bytes;
    return false;
#endif
}

void algo_pool_abort(pool_t *pool)
{
    if (pool_backend(pool)->mem_type == SYMCOLL_MEM_HOST)
        algo_host_abort(pool);
    algo_net_pool_abort(pool);
}

symcoll_status_t algo_allreduce(comm_t *comm, pool_t *pool, symcoll_mem_type_t mem_type,
                                const void *sendbuf, void *recvbuf, size_t count,
                                symcoll_dtype_t dtype, symcoll_op_t op, void *stream)
{
    (void)stream; /* host memory is synchronous; CUDA calls are ordered on it */

    if (comm->nranks == 1) {
        /* sum, prod, min, max and avg of one value are the value */
        if (mem_type == SYMCOLL_MEM_HOST) {
            if (sendbuf != recvbuf)
                memmove(recvbuf, sendbuf, count * symcoll_dtype_size(dtype));
            return SYMCOLL_OK;
        }
    }
    if (mem_type != SYMCOLL_MEM_HOST) {
#ifdef HAVE_CUDA
        if (comm->topo->nnodes > 1) /* pool: the host pool, staging goes there */
            return algo_cuda_net_allreduce(comm, pool, sendbuf, recvbuf, count, dtype, op,
                                           stream);
        return algo_cuda_allreduce(comm, pool, sendbuf, recvbuf, count, dtype, op, stream);
#else
        log_error("symcoll_allreduce: CUDA memory is not supported by this build");
        return SYMCOLL_ERR_UNSUPPORTED;
#endif
    }
    if (comm->topo->nnodes > 1) {
        return algo_net_allreduce(comm, pool, sendbuf, recvbuf, count, dtype, op);
    }
    return allreduce_host(comm, pool, sendbuf, recvbuf, count, dtype, op);
}
