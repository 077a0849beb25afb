/* Entry points of the data path: argument checks in one place, then dispatch to the
 * pool and the algorithms. Every collective entry holds comm->lock, so two threads
 * sharing one communicator cannot interleave collectives; pool statistics are read
 * without it. */
#include "api/api.h"

#include <stdint.h>

#include "algo/algo.h"
#include "bootstrap/bootstrap.h"
#include "pool/pool.h"
#include "topo/topo.h"
#include "ucx/ucx.h"

static bool api_overlap(const char *a, size_t alen, const char *b, size_t blen)
{
    return a < b + blen && b < a + alen;
}

/* The checks every collective shares, then each one's own; no side effect. */
static symcoll_status_t api_check_args(const char *fn, const algo_args_t *a, comm_t *comm)
{
    size_t esize, bytes, total;
    bool root =
        a->coll == ALGO_COLL_BROADCAST && comm && api_comm_valid(comm) && a->root == comm->rank;

    if (!api_comm_valid(comm)) {
        log_error("%s: NULL or destroyed communicator", fn);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    /* a barrier on a stream is a CUDA call: its build and stream are checked by
     * algo_check_call */
    if (a->coll == ALGO_COLL_BARRIER)
        return SYMCOLL_OK;
    if ((unsigned)a->dtype >= SYMCOLL_DTYPE_LAST || (unsigned)a->op >= SYMCOLL_OP_LAST) {
        log_error("%s: invalid datatype %d or operator %d", fn, (int)a->dtype, (int)a->op);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (a->coll == ALGO_COLL_BROADCAST && (a->root < 0 || a->root >= comm->nranks)) {
        log_error("%s: root %d out of range (%d ranks)", fn, a->root, comm->nranks);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    esize = symcoll_dtype_size(a->dtype);
    if (a->count > SIZE_MAX / esize / (size_t)comm->nranks ||
        a->count * esize * (size_t)comm->nranks > (SIZE_MAX >> 2)) {
        log_error("%s: count %zu of %s overflows", fn, a->count, symcoll_dtype_name(a->dtype));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    bytes = a->count * esize;
    total = bytes * (size_t)comm->nranks;
    if (a->count > 0 &&
        (!a->recvbuf || (!a->sendbuf && (a->coll != ALGO_COLL_BROADCAST || root)))) {
        log_error("%s: NULL buffer with count %zu", fn, a->count);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (a->count == 0)
        return SYMCOLL_OK;
    switch (a->coll) {
    case ALGO_COLL_REDUCE_SCATTER:
        if (api_overlap(a->sendbuf, total, a->recvbuf, bytes) &&
            (const char *)a->recvbuf != (const char *)a->sendbuf + (size_t)comm->rank * bytes) {
            log_error("%s: the buffers overlap, and recvbuf is not this rank's block of "
                      "sendbuf (in place)",
                      fn);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
        break;
    case ALGO_COLL_ALLGATHER:
        if (api_overlap(a->sendbuf, bytes, a->recvbuf, total) &&
            (const char *)a->sendbuf != (const char *)a->recvbuf + (size_t)comm->rank * bytes) {
            log_error("%s: the buffers overlap, and sendbuf is not this rank's block of "
                      "recvbuf (in place)",
                      fn);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
        break;
    case ALGO_COLL_BROADCAST:
        if (root && a->sendbuf != a->recvbuf &&
            api_overlap(a->sendbuf, bytes, a->recvbuf, bytes)) {
            log_error("%s: the buffers overlap without being equal (in place)", fn);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
        break;
    default:
        break;
    }
    return SYMCOLL_OK;
}

symcoll_status_t api_check_allreduce_args(const void *sendbuf, void *recvbuf, size_t count,
                                          symcoll_dtype_t dtype, symcoll_op_t op,
                                          symcoll_comm_h comm)
{
    size_t esize;

    if (!api_comm_valid(comm)) {
        log_error("symcoll_allreduce: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if ((unsigned)dtype >= SYMCOLL_DTYPE_LAST || (unsigned)op >= SYMCOLL_OP_LAST) {
        log_error("symcoll_allreduce: invalid datatype %d or operator %d", (int)dtype, (int)op);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    esize = symcoll_dtype_size(dtype);
    if (count > SIZE_MAX / esize || count * esize > (SIZE_MAX >> 2)) {
        log_error("symcoll_allreduce: count %zu of %s overflows", count,
                  symcoll_dtype_name(dtype));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (count > 0 && (!sendbuf || !recvbuf)) {
        log_error("symcoll_allreduce: NULL buffer with count %zu", count);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

static symcoll_status_t api_check_mem_type(const char *fn, symcoll_mem_type_t mem_type)
{
    if ((unsigned)mem_type >= SYMCOLL_MEM_LAST) {
        log_error("%s: invalid memory type %d", fn, (int)mem_type);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

/* The pool of mem_type, created on first use (collective: every rank's first use of a
 * memory type is the same call), with the algorithms' state on it. The one way to a
 * pool. Called with comm->lock held. */
static symcoll_status_t api_pool_get(comm_t *comm, symcoll_mem_type_t mem_type, pool_t **pool_p)
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
                status = api_pool_get(comm, SYMCOLL_MEM_HOST, &host);
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
static symcoll_status_t api_pools_get(comm_t *comm, unsigned mask,
                                      pool_t *pools[SYMCOLL_MEM_LAST])
{
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pools[mt] = NULL;
        if (mask & (1u << mt)) {
            symcoll_status_t status = api_pool_get(comm, (symcoll_mem_type_t)mt, &pools[mt]);
            if (status != SYMCOLL_OK)
                return status;
        }
    }
    return SYMCOLL_OK;
}

static bool api_pools_missing(const comm_t *comm, unsigned mask)
{
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++)
        if ((mask & (1u << mt)) && !comm->pools[mt])
            return true;
    return false;
}

/* After the checks: the selector's plan (one question), the pools it needs, and the one
 * table from plan to algorithm. */
static symcoll_status_t api_run(const char *fn, comm_t *comm, const algo_args_t *a)
{
    pool_t *pools[SYMCOLL_MEM_LAST];
    symcoll_mem_type_t mem_type = SYMCOLL_MEM_HOST;
    const topo_plan_t *plan;
    symcoll_status_t status = SYMCOLL_OK;
    unsigned need;

    if (a->coll != ALGO_COLL_BARRIER) {
        status = algo_mem_type(a->sendbuf, a->recvbuf, &mem_type);
        if (status != SYMCOLL_OK || a->count == 0)
            return status;
    } else if (a->stream) {
        mem_type = SYMCOLL_MEM_CUDA; /* ordered on the stream, over the CUDA path */
    }
    pthread_mutex_lock(&comm->lock);
    plan = topo_plan(comm->topo, mem_type, algo_plan_bytes(comm, a));
    need = algo_family_pools(plan->family);
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
        log_error("%s: communicator aborted", fn);
        /* the staging thread tells the peers itself; it must be done with UCX first */
        (void)algo_quiesce(comm);
        if (comm->pools[mem_type])
            algo_pool_abort(comm, comm->pools[mem_type]);
        /* and peers waiting for us in a bootstrap exchange (a pool's growth) */
        bootstrap_abort(comm->bootstrap);
        status = SYMCOLL_ERR_ABORTED;
        goto out;
    }
    status = algo_check_call(comm, plan, a->sendbuf, a->recvbuf, a->dtype, a->stream,
                             api_pools_missing(comm, need));
    if (status != SYMCOLL_OK)
        goto out;
    /* calls of another family go after the queued CUDA all-reduces across nodes (every
     * collective of CUDA memory there runs as one of them, queued in turn) */
    if (!algo_family_queued(plan->family))
        status = algo_quiesce(comm);
    if (status == SYMCOLL_OK)
        status = api_pools_get(comm, need, pools);
    if (status != SYMCOLL_OK)
        goto out;
    if (a->coll == ALGO_COLL_ALLREDUCE)
        status = algo_allreduce(comm, plan, pools, a->sendbuf, a->recvbuf, a->count, a->dtype,
                                a->op, a->stream);
    else
        status = algo_collective(comm, plan, pools, a);
out:
    pthread_mutex_unlock(&comm->lock);
    return status;
}

/* Every check first (no side effect on a rejected call), then api_run. */
SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream)
{
    algo_args_t a = {.coll = ALGO_COLL_ALLREDUCE,
                     .sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = count,
                     .dtype = dtype,
                     .op = op,
                     .stream = stream};
    symcoll_status_t status =
        api_check_allreduce_args(sendbuf, recvbuf, count, dtype, op, comm);

    return status == SYMCOLL_OK ? api_run("symcoll_allreduce", comm, &a) : status;
}

static symcoll_status_t api_collective(const char *fn, comm_t *comm, const algo_args_t *a)
{
    symcoll_status_t status = api_check_args(fn, a, comm);
    return status == SYMCOLL_OK ? api_run(fn, comm, a) : status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                       size_t recvcount, symcoll_dtype_t dtype,
                                                       symcoll_op_t op, symcoll_comm_h comm,
                                                       void *stream)
{
    algo_args_t a = {.coll = ALGO_COLL_REDUCE_SCATTER,
                     .sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = recvcount,
                     .dtype = dtype,
                     .op = op,
                     .stream = stream};
    return api_collective("symcoll_reduce_scatter", comm, &a);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_allgather(const void *sendbuf, void *recvbuf,
                                                  size_t sendcount, symcoll_dtype_t dtype,
                                                  symcoll_comm_h comm, void *stream)
{
    algo_args_t a = {.coll = ALGO_COLL_ALLGATHER,
                     .sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = sendcount,
                     .dtype = dtype,
                     .op = SYMCOLL_SUM,
                     .stream = stream};
    return api_collective("symcoll_allgather", comm, &a);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_broadcast(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype, int root,
                                                  symcoll_comm_h comm, void *stream)
{
    algo_args_t a = {.coll = ALGO_COLL_BROADCAST,
                     .sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = count,
                     .dtype = dtype,
                     .op = SYMCOLL_SUM,
                     .root = root,
                     .stream = stream};
    /* only the root's send buffer is read: elsewhere it does not decide the memory type */
    if (api_comm_valid(comm) && root != comm->rank)
        a.sendbuf = NULL;
    return api_collective("symcoll_broadcast", comm, &a);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_barrier(symcoll_comm_h comm, void *stream)
{
    algo_args_t a = {
        .coll = ALGO_COLL_BARRIER, .dtype = SYMCOLL_UINT8, .op = SYMCOLL_MAX, .stream = stream};
    return api_collective("symcoll_barrier", comm, &a);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_mem_alloc(symcoll_comm_h comm, size_t size,
                                                  symcoll_mem_type_t mem_type, void **ptr_p)
{
    symcoll_status_t status;
    pool_t *pool;
    size_t off;

    if (!api_comm_valid(comm) || !ptr_p) {
        log_error("symcoll_mem_alloc: NULL or destroyed communicator, or NULL ptr_p");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    status = api_check_mem_type("symcoll_mem_alloc", mem_type);
    if (status != SYMCOLL_OK)
        return status;
    if (size == 0) {
        log_error("symcoll_mem_alloc: size 0");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&comm->lock);
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
        log_error("symcoll_mem_alloc: communicator aborted");
        /* peers waiting for us in this allocation's exchanges stop now */
        bootstrap_abort(comm->bootstrap);
        status = SYMCOLL_ERR_ABORTED;
        goto out;
    }
    status = algo_quiesce(comm);
    if (status == SYMCOLL_OK)
        status = algo_check_usable(comm);
    if (status != SYMCOLL_OK)
        goto out;
    status = api_pool_get(comm, mem_type, &pool);
    if (status != SYMCOLL_OK)
        goto out;
    status = pool_alloc(pool, size, POOL_ALLOC_USER, &off);
    if (status != SYMCOLL_OK)
        goto out;
    *ptr_p = pool_peer_addr(pool, pool_local_rank(pool), off);
out:
    pthread_mutex_unlock(&comm->lock);
    return status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_mem_free(symcoll_comm_h comm, void *ptr)
{
    symcoll_status_t status = SYMCOLL_ERR_INVALID_PARAM;

    if (!api_comm_valid(comm)) {
        log_error("symcoll_mem_free: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (!ptr)
        return SYMCOLL_OK;
    pthread_mutex_lock(&comm->lock);
    /* a queued CUDA all-reduce across nodes may still read or write it */
    (void)algo_quiesce(comm);
    /* only a live buffer of symcoll_mem_alloc, by its start: never the library's
     * staging, which a stale pointer may reach once its range is reused */
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pool_t *pool = comm->pools[mt];
        if (pool && pool_owns(pool, ptr)) {
            status = pool_free_user(pool, ptr);
            goto out;
        }
    }
    log_error("symcoll_mem_free: %p is not in any pool of this communicator (not from "
              "symcoll_mem_alloc on it); nothing freed",
              ptr);
out:
    pthread_mutex_unlock(&comm->lock);
    return status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_pool_query(symcoll_comm_h comm,
                                                   symcoll_mem_type_t mem_type,
                                                   symcoll_pool_attr_t *attr_p)
{
    uint64_t known = SYMCOLL_POOL_ATTR_FIELD_RESERVED | SYMCOLL_POOL_ATTR_FIELD_MAPPED |
                     SYMCOLL_POOL_ATTR_FIELD_IN_USE | SYMCOLL_POOL_ATTR_FIELD_PEAK |
                     SYMCOLL_POOL_ATTR_FIELD_GROWTHS | SYMCOLL_POOL_ATTR_FIELD_SEGMENTS;
    symcoll_pool_attr_t attr;
    pool_t *pool;

    if (!api_comm_valid(comm) || !attr_p) {
        log_error("symcoll_pool_query: NULL or destroyed communicator, or NULL attr_p");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (api_check_mem_type("symcoll_pool_query", mem_type) != SYMCOLL_OK)
        return SYMCOLL_ERR_INVALID_PARAM;
    if (attr_p->field_mask & ~known) {
        log_error("symcoll_pool_query: unknown field_mask bits 0x%llx",
                  (unsigned long long)(attr_p->field_mask & ~known));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    attr = *attr_p;
    attr.reserved = attr.mapped = attr.in_use = attr.peak = 0;
    attr.growths = attr.segments = 0;
    pool = __atomic_load_n(&comm->pools[mem_type], __ATOMIC_ACQUIRE);
    if (pool)
        pool_query(pool, &attr);
    *attr_p = attr;
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_pool_trim(symcoll_comm_h comm,
                                                  symcoll_mem_type_t mem_type)
{
    symcoll_status_t status;
    pool_t *pool;

    if (!api_comm_valid(comm)) {
        log_error("symcoll_pool_trim: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    status = api_check_mem_type("symcoll_pool_trim", mem_type);
    if (status != SYMCOLL_OK)
        return status;
    pthread_mutex_lock(&comm->lock);
    pool = comm->pools[mem_type];
    status = algo_quiesce(comm);
    if (status == SYMCOLL_OK)
        status = algo_check_usable(comm);
    if (pool && status == SYMCOLL_OK) {
        /* the algorithms' staging comes back on the next all-reduce */
        algo_pool_release(comm, pool);
        status = pool_trim(pool);
    }
    pthread_mutex_unlock(&comm->lock);
    return status;
}

symcoll_status_t api_init_layers(comm_t *comm)
{
    symcoll_status_t status;

    if (comm->topo->nnodes > 1) {
        status = ucx_create(comm, &comm->ucx);
        if (status != SYMCOLL_OK)
            return status;
    }
    status = algo_comm_init(comm);
    if (status != SYMCOLL_OK) {
        ucx_destroy(comm->ucx);
        comm->ucx = NULL;
    }
    return status;
}

/* The algorithms first (queued work uses the pools and UCX), then UCX's endpoints, the
 * pools (their listener releases the UCX registrations), and UCX itself. */
void api_release_layers(comm_t *comm)
{
    algo_comm_release(comm);
    ucx_close(comm->ucx); /* flush, rkeys, endpoints; registrations go with the pools */
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pool_destroy(comm->pools[mt]);
        comm->pools[mt] = NULL;
    }
    ucx_destroy(comm->ucx);
    comm->ucx = NULL;
}
