/* The pool's allocator over offsets: the free list and the sorted live allocations,
 * collective allocation, local free, and address lookup. */
#include "pool/pool_int.h"

#include <stdlib.h>
#include <string.h>

static int pool_reserve_array(void **arr, size_t *cap, size_t len, size_t elem)
{
    if (len < *cap)
        return 0;
    size_t ncap = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Index of the first free range that fits size, or -1. */
static long pool_first_fit(const pool_t *pool, size_t size)
{
    for (size_t i = 0; i < pool->nfree; i++)
        if (pool->free[i].size >= size)
            return (long)i;
    return -1;
}

/* Binary search over an array sorted by offset whose elements start with a size_t
 * offset (pool_range_t, pool_live_t): the first index whose offset is >= off, or > off
 * when past_equal is set. */
static size_t pool_offset_search(const void *base, size_t n, size_t stride, size_t off,
                                 bool past_equal)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        size_t mid_off = *(const size_t *)((const char *)base + mid * stride);
        if (mid_off < off || (past_equal && mid_off == off))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Inserts [off, off+size) into the free list, merging neighbours. */
int pool_free_insert(pool_t *pool, size_t off, size_t size)
{
    size_t lo = pool_offset_search(pool->free, pool->nfree, sizeof(pool->free[0]), off, false);
    bool merge_prev = lo > 0 && pool->free[lo - 1].off + pool->free[lo - 1].size == off;
    bool merge_next = lo < pool->nfree && off + size == pool->free[lo].off;
    if (merge_prev && merge_next) {
        pool->free[lo - 1].size += size + pool->free[lo].size;
        memmove(&pool->free[lo], &pool->free[lo + 1],
                (pool->nfree - lo - 1) * sizeof(pool->free[0]));
        pool->nfree--;
    } else if (merge_prev) {
        pool->free[lo - 1].size += size;
    } else if (merge_next) {
        pool->free[lo].off = off;
        pool->free[lo].size += size;
    } else {
        if (pool_reserve_array((void **)&pool->free, &pool->free_cap, pool->nfree,
                               sizeof(pool->free[0])))
            return -1;
        memmove(&pool->free[lo + 1], &pool->free[lo],
                (pool->nfree - lo) * sizeof(pool->free[0]));
        pool->free[lo].off = off;
        pool->free[lo].size = size;
        pool->nfree++;
    }
    return 0;
}

/* Index of the live allocation containing offset off, or -1. */
static long pool_live_find(const pool_t *pool, size_t off)
{
    size_t lo = pool_offset_search(pool->live, pool->nlive, sizeof(pool->live[0]), off, true);
    if (lo == 0)
        return -1;
    const pool_live_t *l = &pool->live[lo - 1];
    return off - l->off < l->size ? (long)(lo - 1) : -1;
}

static void pool_stat_in_use(pool_t *pool, size_t in_use)
{
    atomic_store(&pool->st_in_use, in_use);
    if (in_use > atomic_load(&pool->st_peak))
        atomic_store(&pool->st_peak, in_use);
}

/* One allocation of the user's into the sequence hash: FNV-1a over (asize, off), after
 * the frees since the previous allocation, which count as a set (pool_int.h). */
static void pool_seq_alloc(pool_t *pool, uint64_t asize, uint64_t off)
{
    pool->seq_hash = pool_seq_fnv(pool_seq_value(pool), asize, off);
    pool->free_acc = 0;
}

/* One free of the user's: any order among the frees between two allocations gives the
 * same sum (the contract lets ranks free them in any order). */
static void pool_seq_free(pool_t *pool, uint64_t off)
{
    uint64_t z = off + 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    pool->free_acc += z ^ (z >> 31);
}

/* The plan for asize more bytes (lock held): the free range that takes them (*i_p, or
 * -1) and the growth that makes one (*grow_p, 0 if none is needed). The tables get room
 * for one more entry first, so that carving never fails. */
static symcoll_status_t pool_plan(pool_t *pool, size_t size, size_t asize, long *i_p,
                                  size_t *grow_p)
{
    long i = asize ? pool_first_fit(pool, asize) : -1;

    *i_p = i;
    *grow_p = 0;
    if (pool_reserve_array((void **)&pool->live, &pool->live_cap, pool->nlive,
                           sizeof(pool->live[0])) ||
        pool_reserve_array((void **)&pool->free, &pool->free_cap, pool->nfree,
                           sizeof(pool->free[0])) ||
        pool_reserve_array((void **)&pool->segs, &pool->segs_cap, (size_t)pool->nsegs,
                           sizeof(pool->segs[0]))) {
        log_error("pool: out of memory for the allocator tables");
        return SYMCOLL_ERR_NO_MEMORY;
    }
    if (asize == 0) {
        log_error("pool %s: cannot allocate %zu bytes (ceiling SYMCOLL_POOL_MAX_SIZE=%zu)",
                  pool->be->name, size, pool->max_size);
        return size == 0 ? SYMCOLL_ERR_INVALID_PARAM : SYMCOLL_ERR_NO_MEMORY;
    }
    if (i < 0) {
        /* the new segment extends a free range that ends at the current end */
        size_t tail = 0;
        if (pool->nfree &&
            pool->free[pool->nfree - 1].off + pool->free[pool->nfree - 1].size == pool->mapped)
            tail = pool->free[pool->nfree - 1].size;
        *grow_p = pool_growth_size(pool, asize - tail);
        if (!*grow_p) {
            log_error("pool %s: cannot grow by %zu bytes: %zu of SYMCOLL_POOL_MAX_SIZE=%zu "
                      "already mapped",
                      pool->be->name, asize - tail, pool->mapped, pool->max_size);
            return SYMCOLL_ERR_NO_MEMORY;
        }
    }
    return SYMCOLL_OK;
}

/* Agrees on a request (kind, size) and this rank's plan (pool_plan's status, range and
 * growth) before anything changes; a failed plan still takes part, so that peers never
 * wait for us in vain. */
static symcoll_status_t pool_plan_agree(pool_t *pool, uint32_t kind, symcoll_status_t planned,
                                        size_t size, long i, size_t grow)
{
    pool_xhdr_t hdr;

    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = kind;
    hdr.status = planned;
    hdr.a = size;
    hdr.b = i >= 0 ? pool->free[i].off : pool->mapped;
    hdr.c = grow;
    return pool_exchange(pool, &hdr);
}

/* Bytes an allocation of size takes; 0: refused (pool_plan says why). */
static size_t pool_alloc_size(const pool_t *pool, size_t size)
{
    return size == 0 || size > pool->max_size ? 0 : round_up(size, POOL_ALIGN);
}

/* Carves asize bytes at the start of free range i into a live allocation (lock held;
 * pool_plan made room in the tables); returns its offset. */
static size_t pool_carve(pool_t *pool, long i, size_t asize, pool_alloc_kind_t kind)
{
    size_t off = pool->free[i].off, lo;

    pool->free[i].off += asize;
    pool->free[i].size -= asize;
    if (pool->free[i].size == 0) {
        memmove(&pool->free[i], &pool->free[i + 1],
                (pool->nfree - (size_t)i - 1) * sizeof(pool->free[0]));
        pool->nfree--;
    }
    lo = pool_offset_search(pool->live, pool->nlive, sizeof(pool->live[0]), off, false);
    memmove(&pool->live[lo + 1], &pool->live[lo], (pool->nlive - lo) * sizeof(pool->live[0]));
    pool->live[lo].off = off;
    pool->live[lo].size = asize;
    pool->live[lo].kind = kind;
    pool->nlive++;
    pool_stat_in_use(pool, atomic_load(&pool->st_in_use) + asize);
    if (kind == POOL_ALLOC_USER)
        pool_seq_alloc(pool, asize, off);
    return off;
}

symcoll_status_t pool_alloc(pool_t *pool, size_t size, pool_alloc_kind_t kind, size_t *off_p)
{
    symcoll_status_t status;
    pool_xhdr_t hdr;
    size_t asize = pool_alloc_size(pool, size), grow, off;
    long i;

    pthread_mutex_lock(&pool->lock);
    status = pool_plan(pool, size, asize, &i, &grow);
    if (kind == POOL_ALLOC_USER && i >= 0 && !pool->be->commit) {
        /* Fits, and nothing to back: every rank that made the same calls carves the same
         * range, with no exchange (legal during a CUDA stream capture, and cheap). The
         * sequence hash is compared at the next exchange or collective (pool_check). A
         * failure here is this rank's alone (its tables could not grow): it goes into the
         * sequence too, so that the others hear of it there, not in an exchange they do
         * not make. */
        if (status == SYMCOLL_OK)
            *off_p = pool_carve(pool, i, asize, kind);
        else
            pool_seq_alloc(pool, UINT64_MAX, UINT64_MAX);
        pool->unchecked++;
        pthread_mutex_unlock(&pool->lock);
        return status;
    }

    status = pool_plan_agree(pool, POOL_X_ALLOC, status, size, i, grow);
    if (status != SYMCOLL_OK)
        goto out;

    if (grow) {
        status = pool_grow(pool, grow);
        if (status == SYMCOLL_ERR_IN_PROGRESS)
            log_error("pool %s: %zu bytes need the pool to grow by %zu bytes, which CUDA "
                      "refuses during this stream capture; nothing changed. Reserve the "
                      "memory before the capture begins (symcoll_pool_reserve of at least "
                      "%zu bytes)",
                      pool->be->name, size, grow, asize);
        if (status != SYMCOLL_OK)
            goto out;
        i = pool_first_fit(pool, asize);
        if (i < 0) {
            log_error("pool: internal: no room after growing by %zu", grow);
            status = SYMCOLL_ERR_INTERNAL;
            goto out;
        }
    }
    off = pool->free[i].off;
    if (pool->be->commit) {
        /* every rank backs its own bytes; all succeed or the pool goes back as it was */
        memset(&hdr, 0, sizeof(hdr));
        hdr.kind = POOL_X_BACKED;
        hdr.status =
            pool->be->commit(pool->be_ctx, (char *)pool->bases[pool->local_rank] + off, asize);
        hdr.a = off;
        hdr.b = asize;
        status = pool_exchange(pool, &hdr);
        if (status != SYMCOLL_OK) {
            if (grow) {
                pool_drop_tail(pool, pool->nsegs - 1);
                atomic_fetch_sub(&pool->st_growths, 1);
            }
            goto out;
        }
    }
    *off_p = pool_carve(pool, i, asize, kind);
out:
    pthread_mutex_unlock(&pool->lock);
    return status;
}

symcoll_status_t pool_alloc_quiet(pool_t *pool, size_t size, pool_alloc_kind_t kind,
                                  size_t *off_p)
{
    size_t asize = pool_alloc_size(pool, size), grow;
    symcoll_status_t status;
    long i;

    pthread_mutex_lock(&pool->lock);
    status = pool_plan(pool, size, asize, &i, &grow);
    if (status == SYMCOLL_OK && (i < 0 || pool->be->commit)) {
        log_error("pool %s: %zu bytes do not fit in the pool without growing it, which is "
                  "an exchange; nothing changed. Reserve the memory before the capture "
                  "begins (symcoll_pool_reserve of at least %zu bytes beside the buffers "
                  "it holds), or run the same call once outside a capture",
                  pool->be->name, size, asize);
        status = SYMCOLL_ERR_IN_PROGRESS;
    }
    if (status == SYMCOLL_OK) {
        *off_p = pool_carve(pool, i, asize, kind);
        if (kind != POOL_ALLOC_USER) /* the user's are in the sequence already */
            pool_seq_alloc(pool, asize, *off_p);
        pool->unchecked++;
    } else if (status != SYMCOLL_ERR_IN_PROGRESS) {
        /* this rank's own failure (its tables): the others hear of it at the next check */
        pool_seq_alloc(pool, UINT64_MAX, UINT64_MAX);
        pool->unchecked++;
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}

symcoll_status_t pool_reserve(pool_t *pool, size_t size)
{
    symcoll_status_t status;
    size_t asize = pool_alloc_size(pool, size), grow;
    long i;

    pthread_mutex_lock(&pool->lock);
    status = pool_plan(pool, size, asize, &i, &grow);
    status = pool_plan_agree(pool, POOL_X_RESERVE, status, size, i, grow);
    if (status == SYMCOLL_OK && grow) {
        status = pool_grow(pool, grow);
        if (status == SYMCOLL_ERR_IN_PROGRESS)
            log_error("pool %s: growing by %zu bytes, which CUDA refuses during this stream "
                      "capture; nothing changed: reserve before the capture begins",
                      pool->be->name, grow);
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}

symcoll_status_t pool_check(pool_t *pool)
{
    symcoll_status_t status = SYMCOLL_OK;
    pool_xhdr_t hdr;

    pthread_mutex_lock(&pool->lock);
    if (pool->diverged) {
        log_error("pool %s: the ranks' allocations differ (found earlier): its buffers are "
                  "not symmetric",
                  pool->be->name);
        status = SYMCOLL_ERR_MISMATCH;
    } else if (pool->unchecked) {
        memset(&hdr, 0, sizeof(hdr));
        hdr.kind = POOL_X_CHECK;
        hdr.a = pool->unchecked;
        status = pool_exchange(pool, &hdr);
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}

/* Releases live allocation i into the free list. Called with the lock held. */
static symcoll_status_t pool_release(pool_t *pool, size_t i)
{
    size_t off = pool->live[i].off, size = pool->live[i].size;

    if (pool_free_insert(pool, off, size)) {
        log_error("pool: out of memory for the free list");
        return SYMCOLL_ERR_NO_MEMORY;
    }
    memmove(&pool->live[i], &pool->live[i + 1], (pool->nlive - i - 1) * sizeof(pool->live[0]));
    pool->nlive--;
    atomic_store(&pool->st_in_use, atomic_load(&pool->st_in_use) - size);
    return SYMCOLL_OK;
}

symcoll_status_t pool_free(pool_t *pool, size_t off)
{
    symcoll_status_t status;
    long i;

    pthread_mutex_lock(&pool->lock);
    i = pool_live_find(pool, off);
    if (i < 0 || pool->live[i].off != off) {
        log_error("pool %s: offset %zu is not the start of a live allocation", pool->be->name,
                  off);
        status = SYMCOLL_ERR_INVALID_PARAM;
    } else {
        status = pool_release(pool, (size_t)i);
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}

bool pool_lookup(pool_t *pool, const void *ptr, size_t len, size_t *off_p)
{
    uintptr_t base = (uintptr_t)pool->bases[pool->local_rank], p = (uintptr_t)ptr;
    bool found = false;
    long i;

    if (p < base || p - base >= pool->max_size)
        return false;
    pthread_mutex_lock(&pool->lock);
    i = pool_live_find(pool, p - base);
    if (i >= 0) {
        const pool_live_t *l = &pool->live[i];
        found = len <= l->size - (p - base - l->off);
    }
    pthread_mutex_unlock(&pool->lock);
    if (found)
        *off_p = p - base;
    return found;
}

bool pool_owns(const pool_t *pool, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    for (int r = 0; r < pool->local_size; r++) {
        uintptr_t base = (uintptr_t)pool->bases[r];
        if (base && p >= base && p - base < pool->max_size)
            return true;
    }
    return false;
}

symcoll_status_t pool_free_user(pool_t *pool, const void *ptr)
{
    uintptr_t base = (uintptr_t)pool->bases[pool->local_rank], p = (uintptr_t)ptr;
    symcoll_status_t status = SYMCOLL_ERR_INVALID_PARAM;
    const char *name = pool->be->name;
    size_t off;
    long i;

    if (p < base || p - base >= pool->max_size) {
        if (pool_owns(pool, ptr))
            log_error("symcoll_mem_free: %p is another local rank's view of the %s pool, "
                      "not a pointer symcoll_mem_alloc returned on this rank; nothing freed",
                      ptr, name);
        else
            log_error("symcoll_mem_free: %p is not in the %s pool; nothing freed", ptr, name);
        return status;
    }
    off = p - base;
    pthread_mutex_lock(&pool->lock);
    i = pool_live_find(pool, off);
    if (i < 0) {
        log_error(
            "symcoll_mem_free: %p is not a live buffer of the %s pool: a double free (freed "
            "already) or never returned by symcoll_mem_alloc; nothing freed",
            ptr, name);
    } else if (pool->live[i].kind != POOL_ALLOC_USER) {
        /* typically a stale pointer whose range the library reused */
        log_error("symcoll_mem_free: %p is the library's internal staging in the %s pool, not "
                  "a buffer of symcoll_mem_alloc (freed already?); nothing freed",
                  ptr, name);
    } else if (pool->live[i].off != off) {
        log_error("symcoll_mem_free: %p is inside the buffer at %p (%zu bytes past its "
                  "start), not its start; nothing freed",
                  ptr, (void *)(base + pool->live[i].off), off - pool->live[i].off);
    } else {
        status = pool_release(pool, (size_t)i);
        if (status == SYMCOLL_OK)
            pool_seq_free(pool, off);
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}
