/* Reduce-scatter, all-gather, broadcast and barrier: the native host algorithms inside
 * a node (host_coll.c), the native CUDA kernels inside a node (cuda_allreduce.c,
 * cuda/coll.cu) and, above the sizes recursive doubling serves, across nodes
 * (net_coll.c); every other path as one all-reduce of the path the selector planned (so
 * that every memory type and shape the all-reduce serves, with its argument agreement,
 * deadlines and failure reporting, serves these too; for CUDA memory with the zeroing
 * and copies around it on the caller's stream). */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

#include "algo/base/ctx.h"
#include "algo/host/host.h"
#include "algo/net/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda/cuda_algo.h"
#endif
#include "topo/topo.h"

size_t algo_plan_bytes(const comm_t *comm, const algo_args_t *a)
{
    size_t bytes = a->count * symcoll_dtype_size(a->dtype);

    switch (a->coll) {
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_ALLGATHER:
        return bytes * (size_t)comm->nranks;
    case ALGO_COLL_BARRIER:
        return 1;
    default:
        return bytes;
    }
}

/* Host memory inside a node: the native algorithms. */
static symcoll_status_t coll_host(comm_t *comm, pool_t *pool, const algo_args_t *a)
{
    host_call_t c;
    symcoll_status_t status =
        algo_host_call_init(&c, comm, pool, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op);

    if (status != SYMCOLL_OK)
        return status;
    switch (a->coll) {
    case ALGO_COLL_REDUCE_SCATTER:
        return algo_host_done(&c, algo_host_reduce_scatter(&c));
    case ALGO_COLL_ALLGATHER:
        return algo_host_done(&c, algo_host_allgather(&c));
    case ALGO_COLL_BROADCAST:
        /* one node: global ranks are local ranks */
        c.root = a->root;
        return algo_host_done(&c, algo_host_broadcast(&c, a->root));
    case ALGO_COLL_BARRIER:
        return algo_host_done(&c, algo_host_coll_barrier(&c));
    default:
        return SYMCOLL_ERR_INTERNAL;
    }
}

static symcoll_status_t coll_scratch(comm_t *comm, size_t bytes, void **p)
{
    algo_ctx_t *ctx = comm->algo;

    if (ctx->scratch_bytes < bytes) {
        void *q = realloc(ctx->scratch, bytes);
        if (!q) {
            log_error("reduce-scatter: out of memory for %zu bytes of scratch", bytes);
            return SYMCOLL_ERR_NO_MEMORY;
        }
        ctx->scratch = q;
        ctx->scratch_bytes = bytes;
    }
    *p = ctx->scratch;
    return SYMCOLL_OK;
}

#ifdef HAVE_CUDA
/* Scratch of CUDA memory for one call: inside a node the CUDA pool's (kept, so that a
 * graph can capture the call; the all-reduce into it needs no staging copy), across
 * nodes allocated and freed on the stream. */
static symcoll_status_t coll_cuda_scratch(comm_t *comm, pool_t *cuda_pool,
                                          algo_cuda_scratch_t which, size_t bytes, void *stream,
                                          void **p)
{
    if (cuda_pool)
        return algo_cuda_scratch(comm, cuda_pool, which, bytes, stream, p);
    return algo_cuda_stream_alloc(comm, bytes, stream, p);
}

static symcoll_status_t coll_cuda_scratch_done(pool_t *cuda_pool, void *p, void *stream,
                                               symcoll_status_t status)
{
    symcoll_status_t freed = cuda_pool ? SYMCOLL_OK : algo_cuda_stream_free(p, stream);
    return status != SYMCOLL_OK ? status : freed;
}

/* CUDA memory: inside a node the collectives' own kernels where they serve
 * (algo_cuda_coll_native); else the same all-reduces as host memory, with every zeroing
 * and copy queued on the caller's stream around it (so a call inside a node stays
 * capturable). */
static symcoll_status_t coll_cuda(comm_t *comm, const topo_plan_t *plan,
                                  pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    const size_t bytes = a->count * symcoll_dtype_size(a->dtype);
    const size_t n = (size_t)comm->nranks, me = (size_t)comm->rank;
    pool_t *cuda_pool = plan->family == TOPO_FAMILY_CUDA ? pools[SYMCOLL_MEM_CUDA] : NULL;
    char *recv = a->recvbuf;
    symcoll_status_t status;
    void *tmp = NULL;

    /* nothing serves it (ranks without GPUs, say): the all-reduce says why, with no side
     * effect */
    if (plan->family == TOPO_FAMILY_NONE)
        return algo_allreduce(comm, plan, pools, NULL, NULL, algo_plan_bytes(comm, a),
                              SYMCOLL_UINT8, SYMCOLL_MAX, a->stream);
    if (plan->family == TOPO_FAMILY_SELF)
        return a->coll == ALGO_COLL_BARRIER
                   ? SYMCOLL_OK
                   : algo_cuda_copy(a->sendbuf, recv, bytes, a->stream);
    /* the scratch of the pool is collective: only on a communicator that can still run */
    if (cuda_pool) {
        status = algo_check_usable(comm);
        if (status != SYMCOLL_OK)
            return status;
        if (algo_cuda_coll_native(comm, cuda_pool, plan, a))
            return algo_cuda_coll(comm, cuda_pool, plan, a);
    }
    switch (a->coll) {
    case ALGO_COLL_REDUCE_SCATTER:
        status = coll_cuda_scratch(comm, cuda_pool, ALGO_CUDA_SCRATCH_REDUCE, bytes * n,
                                   a->stream, &tmp);
        if (status != SYMCOLL_OK)
            return status;
        status = algo_allreduce(comm, plan, pools, a->sendbuf, tmp, a->count * n, a->dtype,
                                a->op, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_copy((char *)tmp + me * bytes, recv, bytes, a->stream);
        return coll_cuda_scratch_done(cuda_pool, tmp, a->stream, status);
    case ALGO_COLL_ALLGATHER:
        status = algo_cuda_copy(a->sendbuf, recv + me * bytes, bytes, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_zero(recv, me * bytes, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_zero(recv + (me + 1) * bytes, (n - me - 1) * bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        return algo_allreduce(comm, plan, pools, recv, recv, bytes * n, SYMCOLL_UINT8,
                              SYMCOLL_MAX, a->stream);
    case ALGO_COLL_BROADCAST:
        status = comm->rank == a->root ? algo_cuda_copy(a->sendbuf, recv, bytes, a->stream)
                                       : algo_cuda_zero(recv, bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        return algo_allreduce(comm, plan, pools, recv, recv, bytes, SYMCOLL_UINT8, SYMCOLL_MAX,
                              a->stream);
    case ALGO_COLL_BARRIER:
        /* one byte, never in whole words: the one-shot kernel, whose flags are released
         * at system scope after everything before it on the stream (the LL kernel's
         * flags travel inside the data, without a fence) */
        status =
            coll_cuda_scratch(comm, cuda_pool, ALGO_CUDA_SCRATCH_BARRIER, 1, a->stream, &tmp);
        if (status != SYMCOLL_OK)
            return status;
        if (!cuda_pool)
            status = algo_cuda_zero(tmp, 1, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_allreduce(comm, plan, pools, tmp, tmp, 1, SYMCOLL_UINT8, SYMCOLL_MAX,
                                    a->stream);
        return coll_cuda_scratch_done(cuda_pool, tmp, a->stream, status);
    default:
        return SYMCOLL_ERR_INTERNAL;
    }
}
#endif

/* Every other path: one all-reduce of the planned size. */
static symcoll_status_t coll_by_allreduce_salted(comm_t *comm, const topo_plan_t *plan,
                                                 pool_t *const pools[SYMCOLL_MEM_LAST],
                                                 const algo_args_t *a)
{
    size_t es = symcoll_dtype_size(a->dtype), bytes = a->count * es;
    char *recv = a->recvbuf;
    symcoll_status_t status;
    void *tmp;
    uint8_t b = 0;

#ifdef HAVE_CUDA
    if (plan->mem == SYMCOLL_MEM_CUDA)
        return coll_cuda(comm, plan, pools, a);
#endif
    switch (a->coll) {
    case ALGO_COLL_REDUCE_SCATTER:
        status = coll_scratch(comm, bytes * (size_t)comm->nranks, &tmp);
        if (status != SYMCOLL_OK)
            return status;
        status = algo_allreduce(comm, plan, pools, a->sendbuf, tmp,
                                a->count * (size_t)comm->nranks, a->dtype, a->op, a->stream);
        if (status == SYMCOLL_OK)
            memcpy(recv, (char *)tmp + (size_t)comm->rank * bytes, bytes);
        return status;
    case ALGO_COLL_ALLGATHER: {
        char *own = recv + (size_t)comm->rank * bytes;
        if (a->sendbuf != own)
            memcpy(own, a->sendbuf, bytes);
        memset(recv, 0, (size_t)comm->rank * bytes);
        memset(own + bytes, 0, (size_t)(comm->nranks - comm->rank - 1) * bytes);
        return algo_allreduce(comm, plan, pools, recv, recv, bytes * (size_t)comm->nranks,
                              SYMCOLL_UINT8, SYMCOLL_MAX, a->stream);
    }
    case ALGO_COLL_BROADCAST:
        if (comm->rank != a->root)
            memset(recv, 0, bytes);
        else if (a->sendbuf != recv)
            memcpy(recv, a->sendbuf, bytes);
        return algo_allreduce(comm, plan, pools, recv, recv, bytes, SYMCOLL_UINT8, SYMCOLL_MAX,
                              a->stream);
    case ALGO_COLL_BARRIER:
        return algo_allreduce(comm, plan, pools, &b, &b, 1, SYMCOLL_UINT8, SYMCOLL_MAX, NULL);
    default:
        return SYMCOLL_ERR_INTERNAL;
    }
}

/* The all-reduce's agreement across nodes also compares which collective it runs. */
static symcoll_status_t coll_by_allreduce(comm_t *comm, const topo_plan_t *plan,
                                          pool_t *const pools[SYMCOLL_MEM_LAST],
                                          const algo_args_t *a)
{
    symcoll_status_t status;

    comm->algo->salt = ALGO_SALT(a->coll, a->root);
    status = coll_by_allreduce_salted(comm, plan, pools, a);
    comm->algo->salt = 0;
    return status;
}

/* Two ranks across nodes: recursive doubling serves all-reduces up to 16 x
 * SYMCOLL_NET_RD_MAX, but a reduce-scatter, all-gather or broadcast run as one moves both
 * ranks' whole buffers, twice the bytes of the native path. Wherever the plan is
 * recursive doubling (up to 16 x SYMCOLL_NET_RD_MAX, or any size with SYMCOLL_ALGO=rd),
 * a reduce-scatter or all-gather is one exchange of a block that also carries the
 * agreement (net_coll.c, coll_pair): 2 simulated nodes over TCP, 0.83-0.93x Open MPI's
 * time up to 32 KiB, where the all-reduce took 1.0-1.19x. So is a broadcast above
 * SYMCOLL_NET_RD_MAX (below it: eager, or the all-reduce): the root's data one way, the
 * receiver's agreement the other, 0.51-0.58x Open MPI at 128 KiB and 0.72-0.87x at
 * 512 KiB, where the chain after an agreement round trip took 0.74-0.88x and
 * 0.92-1.00x. */
static bool coll_net_native_pair(const comm_t *comm, const topo_plan_t *plan,
                                 const algo_args_t *a)
{
    return comm->nranks == 2 && plan->family == TOPO_FAMILY_NET_HOST &&
           plan->algo == TOPO_ALGO_RD &&
           (a->coll == ALGO_COLL_ALLGATHER || a->coll == ALGO_COLL_REDUCE_SCATTER ||
            (a->coll == ALGO_COLL_BROADCAST &&
             algo_plan_bytes(comm, a) > comm->topo->select_cfg.net_rd_max));
}

symcoll_status_t algo_collective(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    if (plan->family == TOPO_FAMILY_HOST) {
        symcoll_status_t status = algo_check_usable(comm);
        if (status != SYMCOLL_OK)
            return status;
        /* a staging slot too small for a piece of every rank's block */
        if (a->coll != ALGO_COLL_REDUCE_SCATTER ||
            algo_host_rs_piece(comm->config.host_chunk_size / POOL_ALIGN * POOL_ALIGN,
                               comm->topo->local_size) > 0)
            return coll_host(comm, pools[SYMCOLL_MEM_HOST], a);
    }
    /* small broadcasts across nodes: eager, the root does not wait (net_coll.c) */
    if (a->coll == ALGO_COLL_BROADCAST &&
        algo_net_bc_eager(comm, plan, algo_plan_bytes(comm, a))) {
        symcoll_status_t status = algo_check_usable(comm);
        if (status != SYMCOLL_OK)
            return status;
        return algo_net_bc_run(comm, pools[SYMCOLL_MEM_HOST], a);
    }
    if (a->coll != ALGO_COLL_BARRIER) {
        bool pair = coll_net_native_pair(comm, plan, a);
        if (pair || algo_net_coll_native(comm, plan, algo_plan_bytes(comm, a)))
            return algo_net_collective(comm, pools[SYMCOLL_MEM_HOST], a, pair);
    }
    return coll_by_allreduce(comm, plan, pools, a);
}
