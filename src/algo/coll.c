/* The dispatch's rows of reduce-scatter, all-gather, broadcast and barrier: the
 * families' native algorithms where the selector's plan says so (topo_via_t: the host
 * pool's inside a node, host_coll.c; rings, chains, one exchange or the eager broadcast
 * over UCX across nodes, net_coll.c; the CUDA kernels inside a node, cuda/coll.cu), and
 * every other plan as one all-reduce of the plan's family and algorithm (so that every
 * memory type and shape the all-reduce serves, with its argument agreement, deadlines
 * and failure reporting, serves these too): a broadcast or an all-gather as the bytewise
 * maximum of the root's or each rank's bytes and zeros, which is exact; a reduce-scatter
 * as the whole reduction, of which each rank keeps its block. */
#include "algo/run.h"

#include <stdlib.h>
#include <string.h>

#include "algo/host/host.h"
#include "algo/net/net.h"
#ifdef HAVE_CUDA
#include "algo/cuda/cuda_algo.h"
#endif

/* One all-reduce of the plan's family and algorithm. */
static symcoll_status_t by_ar(comm_t *comm, const topo_plan_t *plan,
                              pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                              void *recvbuf, size_t count, symcoll_dtype_t dtype,
                              symcoll_op_t op, void *stream)
{
    const algo_args_t ar = {.coll = TOPO_COLL_ALLREDUCE,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .stream = stream};
    return algo_allreduce(comm, plan, pools, &ar);
}

/* Host memory inside a node: the native algorithms. */
static symcoll_status_t coll_host(comm_t *comm, const topo_plan_t *plan,
                                  pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    pool_t *pool = pools[SYMCOLL_MEM_HOST];
    host_call_t c;
    symcoll_status_t status =
        algo_host_call_init(&c, comm, pool, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op);

    (void)plan; /* the plan said native: the family's own algorithm of a->coll */
    if (status != SYMCOLL_OK)
        return status;
    switch (a->coll) {
    case TOPO_COLL_REDUCE_SCATTER:
        return algo_host_done(&c, algo_host_reduce_scatter(&c));
    case TOPO_COLL_ALLGATHER:
        return algo_host_done(&c, algo_host_allgather(&c));
    case TOPO_COLL_BROADCAST:
        /* one node: global ranks are local ranks */
        c.root = a->root;
        return algo_host_done(&c, algo_host_broadcast(&c, a->root));
    case TOPO_COLL_BARRIER:
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

/* CUDA memory as one all-reduce: the same all-reduces as host memory, with every zeroing
 * and copy queued on the caller's stream around it (so a call inside a node stays
 * capturable). */
static symcoll_status_t coll_cuda_by_allreduce(comm_t *comm, const topo_plan_t *plan,
                                  pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    const size_t bytes = a->count * symcoll_dtype_size(a->dtype);
    const size_t n = (size_t)comm->nranks, me = (size_t)comm->rank;
    pool_t *cuda_pool = plan->family == TOPO_FAMILY_CUDA ? pools[SYMCOLL_MEM_CUDA] : NULL;
    char *recv = a->recvbuf;
    symcoll_status_t status;
    void *tmp = NULL;

    if (plan->family == TOPO_FAMILY_SELF)
        return a->coll == TOPO_COLL_BARRIER
                   ? SYMCOLL_OK
                   : algo_cuda_copy(a->sendbuf, recv, bytes, a->stream);
    switch (a->coll) {
    case TOPO_COLL_REDUCE_SCATTER:
        status = coll_cuda_scratch(comm, cuda_pool, ALGO_CUDA_SCRATCH_REDUCE, bytes * n,
                                   a->stream, &tmp);
        if (status != SYMCOLL_OK)
            return status;
        status = by_ar(comm, plan, pools, a->sendbuf, tmp, a->count * n, a->dtype,
                                a->op, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_copy((char *)tmp + me * bytes, recv, bytes, a->stream);
        return coll_cuda_scratch_done(cuda_pool, tmp, a->stream, status);
    case TOPO_COLL_ALLGATHER:
        status = algo_cuda_copy(a->sendbuf, recv + me * bytes, bytes, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_zero(recv, me * bytes, a->stream);
        if (status == SYMCOLL_OK)
            status = algo_cuda_zero(recv + (me + 1) * bytes, (n - me - 1) * bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        return by_ar(comm, plan, pools, recv, recv, bytes * n, SYMCOLL_UINT8,
                              SYMCOLL_MAX, a->stream);
    case TOPO_COLL_BROADCAST:
        status = comm->rank == a->root ? algo_cuda_copy(a->sendbuf, recv, bytes, a->stream)
                                       : algo_cuda_zero(recv, bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        return by_ar(comm, plan, pools, recv, recv, bytes, SYMCOLL_UINT8, SYMCOLL_MAX,
                              a->stream);
    case TOPO_COLL_BARRIER:
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
            status = by_ar(comm, plan, pools, tmp, tmp, 1, SYMCOLL_UINT8, SYMCOLL_MAX,
                                    a->stream);
        return coll_cuda_scratch_done(cuda_pool, tmp, a->stream, status);
    default:
        return SYMCOLL_ERR_INTERNAL;
    }
}
#endif

/* TOPO_VIA_ALLREDUCE: one all-reduce of the plan's size. */
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
        return coll_cuda_by_allreduce(comm, plan, pools, a);
#endif
    switch (a->coll) {
    case TOPO_COLL_REDUCE_SCATTER:
        status = coll_scratch(comm, bytes * (size_t)comm->nranks, &tmp);
        if (status != SYMCOLL_OK)
            return status;
        status = by_ar(comm, plan, pools, a->sendbuf, tmp,
                                a->count * (size_t)comm->nranks, a->dtype, a->op, a->stream);
        if (status == SYMCOLL_OK)
            memcpy(recv, (char *)tmp + (size_t)comm->rank * bytes, bytes);
        return status;
    case TOPO_COLL_ALLGATHER: {
        char *own = recv + (size_t)comm->rank * bytes;
        if (a->sendbuf != own)
            memcpy(own, a->sendbuf, bytes);
        memset(recv, 0, (size_t)comm->rank * bytes);
        memset(own + bytes, 0, (size_t)(comm->nranks - comm->rank - 1) * bytes);
        return by_ar(comm, plan, pools, recv, recv, bytes * (size_t)comm->nranks,
                              SYMCOLL_UINT8, SYMCOLL_MAX, a->stream);
    }
    case TOPO_COLL_BROADCAST:
        if (comm->rank != a->root)
            memset(recv, 0, bytes);
        else if (a->sendbuf != recv)
            memcpy(recv, a->sendbuf, bytes);
        return by_ar(comm, plan, pools, recv, recv, bytes, SYMCOLL_UINT8, SYMCOLL_MAX,
                              a->stream);
    case TOPO_COLL_BARRIER:
        return by_ar(comm, plan, pools, &b, &b, 1, SYMCOLL_UINT8, SYMCOLL_MAX, NULL);
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

/* Host memory across nodes: the eager broadcast, one exchange (2 ranks) or the rings
 * and chains. */
static symcoll_status_t coll_net(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    if (plan->via == TOPO_VIA_EAGER)
        return algo_net_bc_run(comm, pools[SYMCOLL_MEM_HOST], a);
    return algo_net_collective(comm, pools[SYMCOLL_MEM_HOST], a, plan->via == TOPO_VIA_PAIR);
}

#ifdef HAVE_CUDA
/* CUDA memory inside a node: the collective's own kernel. */
static symcoll_status_t coll_cuda(comm_t *comm, const topo_plan_t *plan,
                                  pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    if (!comm->algo->cuda) /* made when the CUDA pool was attached */
        return SYMCOLL_ERR_INTERNAL;
    return algo_cuda_coll(comm, pools[SYMCOLL_MEM_CUDA], plan, a);
}
#endif

/* The cells of the plans whose way is not TOPO_VIA_ALLREDUCE. */
#define NATIVE_ROW(coll)                                                                       \
    [coll] = {[TOPO_FAMILY_HOST] = coll_host, [TOPO_FAMILY_NET_HOST] = coll_net, CUDA_CELL}
#ifdef HAVE_CUDA
#define CUDA_CELL [TOPO_FAMILY_CUDA] = coll_cuda
#else
#define CUDA_CELL
#endif
static const algo_run_fn_t rows[TOPO_COLL_LAST][TOPO_FAMILY_LAST] = {
    NATIVE_ROW(TOPO_COLL_REDUCE_SCATTER),
    NATIVE_ROW(TOPO_COLL_ALLGATHER),
    NATIVE_ROW(TOPO_COLL_BROADCAST),
    [TOPO_COLL_BARRIER] = {[TOPO_FAMILY_HOST] = coll_host},
};

symcoll_status_t algo_coll(comm_t *comm, const topo_plan_t *plan,
                           pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a)
{
    if (plan->via == TOPO_VIA_ALLREDUCE)
        return coll_by_allreduce(comm, plan, pools, a);
    if ((unsigned)a->coll >= TOPO_COLL_LAST || !rows[a->coll][plan->family]) {
        log_error("internal: no native %s for family %s", topo_coll_name(a->coll),
                  topo_family_name(plan->family));
        return SYMCOLL_ERR_INTERNAL;
    }
    return rows[a->coll][plan->family](comm, plan, pools, a);
}
