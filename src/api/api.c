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
    size_t esize, bytes, total, blocks;
    bool root =
        a->coll == TOPO_COLL_BROADCAST && comm && api_comm_valid(comm) && a->root == comm->rank;

    if (!api_comm_valid(comm)) {
        log_error("%s: NULL or destroyed communicator", fn);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    /* a barrier on a stream is a CUDA call: its build and stream are checked by
     * algo_run */
    if (a->coll == TOPO_COLL_BARRIER)
        return SYMCOLL_OK;
    if ((unsigned)a->dtype >= SYMCOLL_DTYPE_LAST || (unsigned)a->op >= SYMCOLL_OP_LAST) {
        log_error("%s: invalid datatype %d or operator %d", fn, (int)a->dtype, (int)a->op);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (a->coll == TOPO_COLL_BROADCAST && (a->root < 0 || a->root >= comm->nranks)) {
        log_error("%s: root %d out of range (%d ranks)", fn, a->root, comm->nranks);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    /* reduce-scatter and all-gather move n blocks of count elements */
    esize = symcoll_dtype_size(a->dtype);
    blocks = a->coll == TOPO_COLL_REDUCE_SCATTER || a->coll == TOPO_COLL_ALLGATHER
                 ? (size_t)comm->nranks
                 : 1;
    if (a->count > SIZE_MAX / esize / blocks || a->count * esize * blocks > (SIZE_MAX >> 2)) {
        log_error("%s: count %zu of %s overflows", fn, a->count, symcoll_dtype_name(a->dtype));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    bytes = a->count * esize;
    total = bytes * (size_t)comm->nranks;
    if (a->count > 0 &&
        (!a->recvbuf || (!a->sendbuf && (a->coll != TOPO_COLL_BROADCAST || root)))) {
        log_error("%s: NULL buffer with count %zu", fn, a->count);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (a->count == 0)
        return SYMCOLL_OK;
    switch (a->coll) {
    case TOPO_COLL_REDUCE_SCATTER:
        if (api_overlap(a->sendbuf, total, a->recvbuf, bytes) &&
            (const char *)a->recvbuf != (const char *)a->sendbuf + (size_t)comm->rank * bytes) {
            log_error("%s: the buffers overlap, and recvbuf is not this rank's block of "
                      "sendbuf (in place)",
                      fn);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
        break;
    case TOPO_COLL_ALLGATHER:
        if (api_overlap(a->sendbuf, bytes, a->recvbuf, total) &&
            (const char *)a->sendbuf != (const char *)a->recvbuf + (size_t)comm->rank * bytes) {
            log_error("%s: the buffers overlap, and sendbuf is not this rank's block of "
                      "recvbuf (in place)",
                      fn);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
        break;
    case TOPO_COLL_BROADCAST:
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

static symcoll_status_t api_check_mem_type(const char *fn, symcoll_mem_type_t mem_type)
{
    if ((unsigned)mem_type >= SYMCOLL_MEM_LAST) {
        log_error("%s: invalid memory type %d", fn, (int)mem_type);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

/* After the checks: the selector's plan (the one question), then the one run. */
static symcoll_status_t api_run(const char *fn, comm_t *comm, const algo_args_t *a)
{
    symcoll_mem_type_t mem_type = SYMCOLL_MEM_HOST;
    symcoll_status_t status;

    if (a->coll != TOPO_COLL_BARRIER) {
        status = algo_mem_type(a->sendbuf, a->recvbuf, &mem_type);
        if (status != SYMCOLL_OK || a->count == 0)
            return status;
    } else if (a->stream) {
        mem_type = SYMCOLL_MEM_CUDA; /* ordered on the stream, over the CUDA path */
    }
    pthread_mutex_lock(&comm->lock);
    status = algo_run(comm, fn,
                      topo_plan(comm->topo, a->coll, mem_type, algo_plan_bytes(comm, a)), a);
    pthread_mutex_unlock(&comm->lock);
    return status;
}

/* Every check first (no side effect on a rejected call), then api_run. */
static symcoll_status_t api_collective(const char *fn, comm_t *comm, const algo_args_t *a)
{
    symcoll_status_t status = api_check_args(fn, a, comm);
    return status == SYMCOLL_OK ? api_run(fn, comm, a) : status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream)
{
    algo_args_t a = {.coll = TOPO_COLL_ALLREDUCE,
                     .sendbuf = sendbuf,
                     .recvbuf = recvbuf,
                     .count = count,
                     .dtype = dtype,
                     .op = op,
                     .stream = stream};
    return api_collective("symcoll_allreduce", comm, &a);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                       size_t recvcount, symcoll_dtype_t dtype,
                                                       symcoll_op_t op, symcoll_comm_h comm,
                                                       void *stream)
{
    algo_args_t a = {.coll = TOPO_COLL_REDUCE_SCATTER,
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
    algo_args_t a = {.coll = TOPO_COLL_ALLGATHER,
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
    algo_args_t a = {.coll = TOPO_COLL_BROADCAST,
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
        .coll = TOPO_COLL_BARRIER, .dtype = SYMCOLL_UINT8, .op = SYMCOLL_MAX, .stream = stream};
    return api_collective("symcoll_barrier", comm, &a);
}

/* symcoll_mem_alloc (ptr_p set) and symcoll_pool_reserve (ptr_p NULL): the same checks,
 * then the pool's collective under the communicator's lock. */
static symcoll_status_t api_pool_grow_op(symcoll_comm_h comm, const char *fn, size_t size,
                                         symcoll_mem_type_t mem_type, void **ptr_p)
{
    symcoll_status_t status;
    pool_t *pool;
    size_t off;

    status = api_check_mem_type(fn, mem_type);
    if (status != SYMCOLL_OK)
        return status;
    if (size == 0) {
        log_error("%s: size 0", fn);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&comm->lock);
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
        log_error("%s: communicator aborted", fn);
        /* peers waiting for us in this call's exchanges stop now */
        bootstrap_abort(comm->bootstrap);
        status = SYMCOLL_ERR_ABORTED;
        goto out;
    }
    status = algo_quiesce(comm);
    if (status == SYMCOLL_OK)
        status = algo_check_usable(comm);
    if (status != SYMCOLL_OK)
        goto out;
    status = algo_pool_get(comm, mem_type, &pool);
    if (status != SYMCOLL_OK)
        goto out;
    if (!ptr_p) {
        status = pool_reserve(pool, size);
        goto out;
    }
    status = pool_alloc(pool, size, POOL_ALLOC_USER, &off);
    if (status == SYMCOLL_OK)
        *ptr_p = pool_peer_addr(pool, pool_local_rank(pool), off);
out:
    pthread_mutex_unlock(&comm->lock);
    return status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_mem_alloc(symcoll_comm_h comm, size_t size,
                                                  symcoll_mem_type_t mem_type, void **ptr_p)
{
    if (!api_comm_valid(comm) || !ptr_p) {
        log_error("symcoll_mem_alloc: NULL or destroyed communicator, or NULL ptr_p");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return api_pool_grow_op(comm, "symcoll_mem_alloc", size, mem_type, ptr_p);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_pool_reserve(symcoll_comm_h comm, size_t size,
                                                     symcoll_mem_type_t mem_type)
{
    if (!api_comm_valid(comm)) {
        log_error("symcoll_pool_reserve: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return api_pool_grow_op(comm, "symcoll_pool_reserve", size, mem_type, NULL);
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
        status = algo_pool_trim_release(comm, pool);
        if (status == SYMCOLL_OK)
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

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_set_algo(symcoll_comm_h comm, const char *algo)
{
    symcoll_status_t status;

    if (!api_comm_valid(comm)) {
        log_error("symcoll_comm_set_algo: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&comm->lock);
    status = topo_set_call_algo(comm->topo, algo);
    pthread_mutex_unlock(&comm->lock);
    return status;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_layout(symcoll_comm_h comm, char *buf, size_t len)
{
    if (!api_comm_valid(comm) || !buf || len == 0) {
        log_error("symcoll_comm_layout: NULL or destroyed communicator, or no buffer");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&comm->lock);
    topo_fingerprint(comm->topo, buf, len);
    pthread_mutex_unlock(&comm->lock);
    return SYMCOLL_OK;
}
