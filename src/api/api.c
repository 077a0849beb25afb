/* Entry points of the data path: argument checks in one place, then dispatch to the
 * pool and the algorithms. Every collective entry holds comm->lock, so two threads
 * sharing one communicator cannot interleave collectives; pool statistics are read
 * without it. */
#include "api/api.h"

#include <stdint.h>

#include "algo/algo.h"
#include "pool/pool.h"
#include "topo/topo.h"
#include "ucx/ucx.h"

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

static symcoll_status_t core_check_mem_type(const char *fn, symcoll_mem_type_t mem_type)
{
    if ((unsigned)mem_type >= SYMCOLL_MEM_LAST) {
        log_error("%s: invalid memory type %d", fn, (int)mem_type);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

/* The pool of mem_type, created on first use (collective: every rank's first use of a
 * memory type is the same call). Called with comm->lock held. */
static symcoll_status_t core_pool_get(comm_t *comm, symcoll_mem_type_t mem_type,
                                      pool_t **pool_p)
{
    pool_params_t params = {.mem_type = mem_type, .listener = NULL};
    pool_listener_t listener;
    pool_t *pool = comm->pools[mem_type];
    symcoll_status_t status;

    if (!pool) {
        if (!pool_backend_get(mem_type)) {
            log_error("%s memory is not supported by this build",
                      mem_type == SYMCOLL_MEM_CUDA ? "CUDA" : "this");
            return SYMCOLL_ERR_UNSUPPORTED;
        }
        /* only host segments are registered with UCX: CUDA memory crosses nodes staged
         * through the host pool (no direct path), and a UCX 1.13 built with CUDA fails
         * to register the CUDA pool's VMM segments (ucp_mem_map: invalid parameter,
         * bench/results/ucx-cuda-probe.md) */
        if (comm->ucx && mem_type == SYMCOLL_MEM_HOST) {
            ucx_pool_listener(comm->ucx, mem_type, &listener);
            params.listener = &listener;
        }
        status = pool_create(comm, &params, &pool);
        if (status != SYMCOLL_OK)
            return status;
        /* published for symcoll_pool_query, which does not take the lock */
        __atomic_store_n(&comm->pools[mem_type], pool, __ATOMIC_RELEASE);
    }
    *pool_p = pool;
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream)
{
    symcoll_status_t status =
        api_check_allreduce_args(sendbuf, recvbuf, count, dtype, op, comm);
    symcoll_mem_type_t mem_type;
    pool_t *pool = NULL;

    if (status != SYMCOLL_OK)
        return status;
    status = algo_mem_type(sendbuf, recvbuf, &mem_type);
    if (status != SYMCOLL_OK || count == 0)
        return status;
    pthread_mutex_lock(&comm->lock);
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
        log_error("symcoll_allreduce: communicator aborted");
        /* the staging thread tells the peers itself; it must be done with UCX first */
        (void)algo_quiesce(comm);
        if (comm->pools[mem_type])
            algo_pool_abort(comm->pools[mem_type]);
        status = SYMCOLL_ERR_ABORTED;
        goto out;
    }
    if (mem_type == SYMCOLL_MEM_CUDA && comm->topo->nnodes > 1) {
        /* staged through the host pool; the hierarchical algorithm also uses the CUDA
         * pool (created first if need be: collective, so queued operations go first) */
        status = core_pool_get(comm, SYMCOLL_MEM_HOST, &pool);
        if (status == SYMCOLL_OK &&
            algo_cuda_across_uses_pool(comm, count * symcoll_dtype_size(dtype))) {
            pool_t *cuda_pool;
            if (!comm->pools[SYMCOLL_MEM_CUDA])
                status = algo_quiesce(comm);
            if (status == SYMCOLL_OK)
                status = core_pool_get(comm, SYMCOLL_MEM_CUDA, &cuda_pool);
        }
    } else {
        /* CUDA all-reduces across nodes queued before this call go first */
        status = algo_quiesce(comm);
        if (status == SYMCOLL_OK && comm->nranks > 1)
            status = core_pool_get(comm, mem_type, &pool);
    }
    if (status != SYMCOLL_OK)
        goto out;
    status = algo_allreduce(comm, pool, mem_type, sendbuf, recvbuf, count, dtype, op, stream);
out:
    pthread_mutex_unlock(&comm->lock);
    return status;
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
    status = core_check_mem_type("symcoll_mem_alloc", mem_type);
    if (status != SYMCOLL_OK)
        return status;
    if (size == 0) {
        log_error("symcoll_mem_alloc: size 0");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&comm->lock);
    if (atomic_load_explicit(&comm->aborted, memory_order_relaxed)) {
        log_error("symcoll_mem_alloc: communicator aborted");
        status = SYMCOLL_ERR_ABORTED;
        goto out;
    }
    status = algo_quiesce(comm);
    if (status != SYMCOLL_OK)
        goto out;
    status = core_pool_get(comm, mem_type, &pool);
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
    size_t off;

    if (!api_comm_valid(comm)) {
        log_error("symcoll_mem_free: NULL or destroyed communicator");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (!ptr)
        return SYMCOLL_OK;
    pthread_mutex_lock(&comm->lock);
    /* a queued CUDA all-reduce across nodes may still read or write it */
    (void)algo_quiesce(comm);
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pool_t *pool = comm->pools[mt];
        if (pool && pool_lookup(pool, ptr, 0, &off)) {
            status = pool_free(pool, off);
            goto out;
        }
    }
    log_error("symcoll_mem_free: %p was not returned by symcoll_mem_alloc on this "
              "communicator (or was freed already)",
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
    if (core_check_mem_type("symcoll_pool_query", mem_type) != SYMCOLL_OK)
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
    status = core_check_mem_type("symcoll_pool_trim", mem_type);
    if (status != SYMCOLL_OK)
        return status;
    pthread_mutex_lock(&comm->lock);
    pool = comm->pools[mem_type];
    status = algo_quiesce(comm);
    if (pool && status == SYMCOLL_OK) {
        /* the algorithms' staging comes back on the next all-reduce */
        algo_pool_release(pool);
        status = pool_trim(pool);
    }
    pthread_mutex_unlock(&comm->lock);
    return status;
}

symcoll_status_t api_init_layers(comm_t *comm)
{
    if (comm->topo->nnodes > 1)
        return ucx_create(comm, &comm->ucx);
    return SYMCOLL_OK;
}

/* Pools go first: their listener (UCX registration) must release before the UCX
 * context does. */
void api_release_layers(comm_t *comm)
{
    algo_comm_release(comm); /* queued work first: it uses the pools and UCX */
    ucx_close(comm->ucx);    /* flush, rkeys, endpoints; registrations go with the pools */
    for (int mt = 0; mt < SYMCOLL_MEM_LAST; mt++) {
        pool_destroy(comm->pools[mt]);
        comm->pools[mt] = NULL;
    }
    ucx_destroy(comm->ucx);
    comm->ucx = NULL;
}
