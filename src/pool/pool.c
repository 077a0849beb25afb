/* The symmetric pool: creation and destruction of its views and signal pad, the
 * backend choice, statistics and accessors. The design is described in pool_int.h. */
#include "pool/pool_int.h"

#include <stdlib.h>

/* Defined in pool_cuda.c, built when configure finds CUDA. Weak, so that the library
 * links (and serves host memory) whether or not that backend is built. A static link
 * pulls an archive member only for strong references, so pool_cuda.c's object must be
 * referenced strongly elsewhere (the CUDA all-reduce does; libsymcoll.so takes every
 * member anyway). */
extern const pool_backend_t pool_cuda_backend __attribute__((weak));

const pool_backend_t *pool_backend_get(symcoll_mem_type_t mem_type)
{
    switch (mem_type) {
    case SYMCOLL_MEM_HOST:
        return &pool_host_backend;
    case SYMCOLL_MEM_CUDA:
        return &pool_cuda_backend ? &pool_cuda_backend : NULL;
    default:
        return NULL;
    }
}

/* ---- create / destroy -------------------------------------------------------------- */

static void pool_release_views(pool_t *pool, void **views, size_t size)
{
    if (!views)
        return;
    for (int r = 0; r < pool->local_size; r++)
        if (views[r])
            pool->be->unreserve(pool->be_ctx, views[r], size);
    free(views);
}

static symcoll_status_t pool_reserve_views(pool_t *pool, size_t size, void ***views_p)
{
    void **views = calloc((size_t)pool->local_size, sizeof(*views));
    symcoll_status_t status = SYMCOLL_OK;
    if (!views)
        return SYMCOLL_ERR_NO_MEMORY;
    for (int r = 0; r < pool->local_size && status == SYMCOLL_OK; r++)
        status = pool->be->reserve(pool->be_ctx, size, &views[r]);
    if (status != SYMCOLL_OK) {
        pool_release_views(pool, views, size);
        return status;
    }
    *views_p = views;
    return SYMCOLL_OK;
}

symcoll_status_t pool_create(comm_t *comm, const pool_params_t *params, pool_t **pool_p)
{
    const pool_backend_t *be = pool_backend_get(params->mem_type);
    symcoll_status_t status, pre = SYMCOLL_OK;
    bool inited;
    pool_t *pool;

    if (!be) {
        log_error("pool: no backend for memory type %d in this build", (int)params->mem_type);
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    if (params->local_size < 1 || params->local_rank < 0 ||
        params->local_rank >= params->local_size) {
        log_error("pool: invalid local rank %d of %d", params->local_rank, params->local_size);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    pool = calloc(1, sizeof(*pool));
    if (!pool)
        return SYMCOLL_ERR_NO_MEMORY;
    pool->comm = comm;
    pool->be = be;
    if (params->listener) {
        pool->listener = *params->listener;
        pool->has_listener = true;
    }
    pool->local_rank = params->local_rank;
    pool->local_size = params->local_size;
    pool->xmsg = round_up(sizeof(pool_xhdr_t), 8);
    pool->xbuf = calloc((size_t)comm->nranks, pool->xmsg);
    pool->xsend = calloc(1, pool->xmsg);
    if (!pool->xbuf || !pool->xsend || pthread_mutex_init(&pool->lock, NULL)) {
        free(pool->xbuf);
        free(pool->xsend);
        free(pool);
        return SYMCOLL_ERR_NO_MEMORY;
    }

    /* Local failures below still take part in the signal pad exchange (as "pre"), so
     * that every rank fails together instead of waiting for us. */
    pre = be->init(comm, &pool->be_ctx);
    inited = pre == SYMCOLL_OK;
    pool->gran = inited ? be->granularity(pool->be_ctx) : 4096;
    pool->max_size = comm->config.pool_max_size / pool->gran * pool->gran;
    if (pool->max_size < pool->gran)
        pool->max_size = pool->gran;
    pool->min_size = round_up(comm->config.pool_min_size, pool->gran);
    pool->growth = comm->config.pool_growth;
    pool->sig_size = round_up(be->signal_size, pool->gran);

    if (pre == SYMCOLL_OK)
        pre = pool_reserve_views(pool, pool->max_size, &pool->bases);
    if (pre == SYMCOLL_OK) {
        pre = pool_reserve_views(pool, pool->sig_size, &pool->sig);
        if (pre == SYMCOLL_OK)
            atomic_store(&pool->st_reserved, pool->max_size);
    }
    status = pool_add_segment(pool, pool->sig, POOL_SEG_SIGNAL, 0, pool->sig_size, pre,
                              &pool->sig_handles);
    if (status != SYMCOLL_OK)
        goto err_views;
    pool->sig_mapped = true;
    log_debug("pool %s: created; %d local ranks, granularity %zu, ceiling %zu", be->name,
              pool->local_size, pool->gran, pool->max_size);
    *pool_p = pool;
    return SYMCOLL_OK;

err_views:
    pool_release_views(pool, pool->sig, pool->sig_size);
    pool_release_views(pool, pool->bases, pool->max_size);
    if (inited)
        be->fini(pool->be_ctx);
    pthread_mutex_destroy(&pool->lock);
    free(pool->xbuf);
    free(pool->xsend);
    free(pool);
    return status;
}

void pool_destroy(pool_t *pool)
{
    if (!pool)
        return;
    while (pool->nsegs > 0) {
        pool_seg_t *s = &pool->segs[--pool->nsegs];
        pool_remove_segment(pool, pool->bases, pool->nsegs, s->off, s->size, s->handles);
    }
    if (pool->sig_mapped)
        pool_remove_segment(pool, pool->sig, POOL_SEG_SIGNAL, 0, pool->sig_size,
                            pool->sig_handles);
    pool_release_views(pool, pool->sig, pool->sig_size);
    pool_release_views(pool, pool->bases, pool->max_size);
    pool->be->fini(pool->be_ctx);
    pthread_mutex_destroy(&pool->lock);
    free(pool->segs);
    free(pool->free);
    free(pool->live);
    free(pool->xbuf);
    free(pool->xsend);
    free(pool);
}

/* ---- accessors --------------------------------------------------------------------- */

void pool_query(const pool_t *pool, symcoll_pool_attr_t *attr)
{
    pool_t *p = (pool_t *)pool; /* atomics only */
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_RESERVED)
        attr->reserved = atomic_load(&p->st_reserved);
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_MAPPED)
        attr->mapped = atomic_load(&p->st_mapped);
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_IN_USE)
        attr->in_use = atomic_load(&p->st_in_use);
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_PEAK)
        attr->peak = atomic_load(&p->st_peak);
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_GROWTHS)
        attr->growths = atomic_load(&p->st_growths);
    if (attr->field_mask & SYMCOLL_POOL_ATTR_FIELD_SEGMENTS)
        attr->segments = atomic_load(&p->st_segments);
}

int pool_local_rank(const pool_t *pool)
{
    return pool->local_rank;
}
int pool_local_size(const pool_t *pool)
{
    return pool->local_size;
}

void *pool_peer_addr(const pool_t *pool, int local_rank, size_t off)
{
    return (char *)pool->bases[local_rank] + off;
}

void *pool_signal_pad(const pool_t *pool, int local_rank)
{
    return pool->sig[local_rank];
}

const pool_backend_t *pool_backend(const pool_t *pool)
{
    return pool->be;
}
void *pool_backend_ctx(const pool_t *pool)
{
    return pool->be_ctx;
}
void pool_orphan(pool_t *pool)
{
    if (!pool)
        return;
    pool->comm = NULL;
    pool->has_listener = false;
}

comm_t *pool_comm(const pool_t *pool)
{
    return pool->comm;
}
