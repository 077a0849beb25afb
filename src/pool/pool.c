/* The symmetric pool: address layout, collective growth and trim, the allocator over
 * offsets, and the signal pad. Memory-type specifics live in the backends. */
#include "pool/pool.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "topo/topo.h"

/* Defined in pool_cuda.c by the CUDA layer. Weak, so that the library links (and serves
 * host memory) whether or not that backend is built. Note: a static link pulls an
 * archive member only for strong references, so the CUDA layer's object must be
 * referenced strongly elsewhere (libsymcoll.so takes every member anyway). */
extern const pool_backend_t pool_cuda_backend __attribute__((weak));

/*
 * Layout. Every local rank's view of the pool is its own reserved range of max_size
 * bytes (bases[r]); offset o of rank r is bases[r] + o in this process, whatever the
 * rank. Data segments are mapped one after the other from offset 0, so the mapped size
 * is also the end offset, and growing never moves a buffer. The signal pad lives in a
 * separate small range per view (sig[r]) so trimming data never touches it.
 *
 * Collectives. Every change of the segment table is an exchange of a fixed-size
 * message (header + the listener's blob) over bootstrap_allgather among all ranks of
 * the communicator; the header carries a sequence number, the kind of change and its
 * arguments. Ranks whose headers differ return SYMCOLL_ERR_MISMATCH; a rank that failed
 * puts its status in the header and every rank returns the first failure (by rank), so
 * all ranks either commit a change or roll it back.
 *
 * Allocator. Free ranges and live allocations are two arrays sorted by offset: first
 * fit over the free ranges, binary search over the live ones (address lookup in the
 * all-reduce path is O(log n)). Every rank runs the same sequence of collective
 * allocations, so offsets agree; pool_alloc checks that with its exchange.
 */

#define POOL_XMAGIC 0x53594d43504f4f4cULL /* "SYMCPOOL" */

enum { POOL_X_SEG = 1, POOL_X_COMMIT, POOL_X_ALLOC, POOL_X_BACKED, POOL_X_TRIM };

typedef struct pool_xhdr {
    uint64_t magic;
    uint64_t seq;
    uint32_t kind;
    int32_t status; /* this rank's result so far */
    int64_t seg;
    uint64_t a, b, c; /* arguments of the change; must agree */
    uint64_t blob_len;
} pool_xhdr_t;

typedef struct pool_seg {
    size_t off, size;
    uint64_t *handles; /* per local rank */
} pool_seg_t;

typedef struct pool_range {
    size_t off, size;
} pool_range_t;

typedef struct pool_live {
    size_t off, size;
    int kind;
} pool_live_t;

/* pool_offset_search reads the offset at the start of each element */
_Static_assert(offsetof(pool_range_t, off) == 0, "pool_range_t.off first");
_Static_assert(offsetof(pool_live_t, off) == 0, "pool_live_t.off first");

struct pool {
    comm_t *comm;
    const pool_backend_t *be;
    void *be_ctx;
    pool_listener_t listener;
    bool has_listener;
    pthread_mutex_t lock;
    int local_rank, local_size;
    size_t gran, max_size, min_size;
    double growth;

    void **bases; /* data view of every local rank */
    void **sig;   /* signal pad view of every local rank */
    size_t sig_size;
    uint64_t *sig_handles; /* per local rank */
    bool sig_mapped;

    pool_seg_t *segs;
    int nsegs;
    size_t segs_cap;
    size_t mapped; /* end offset of the last segment */

    pool_range_t *free;
    size_t nfree, free_cap;
    pool_live_t *live;
    size_t nlive, live_cap;

    uint64_t xseq;
    unsigned char *xbuf;  /* nranks exchange messages */
    unsigned char *xsend; /* this rank's */
    size_t xmsg;          /* size of one */

    _Atomic size_t st_reserved, st_mapped, st_in_use, st_peak;
    _Atomic uint64_t st_growths, st_segments;
};

static inline size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

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

/* ---- exchange ---------------------------------------------------------------------- */

/* Allgathers this rank's header (+ blob) and checks agreement. Returns the first failure
 * status of any rank, SYMCOLL_ERR_MISMATCH on disagreement, else SYMCOLL_OK; the
 * gathered messages stay in pool->xbuf. */
static symcoll_status_t pool_exchange(pool_t *pool, pool_xhdr_t *hdr, const void *blob)
{
    comm_t *comm = pool->comm;
    symcoll_status_t status;

    hdr->magic = POOL_XMAGIC;
    hdr->seq = ++pool->xseq;
    /* sent from its own buffer (allocated with the pool: nothing here can fail before
     * we take part, so peers never wait for us in vain) */
    memset(pool->xsend, 0, pool->xmsg);
    memcpy(pool->xsend, hdr, sizeof(*hdr));
    if (blob && hdr->blob_len)
        memcpy(pool->xsend + sizeof(*hdr), blob, hdr->blob_len);
    status = bootstrap_allgather(comm->bootstrap, pool->xsend, pool->xbuf, pool->xmsg);
    if (status != SYMCOLL_OK) {
        log_error("pool: exchange %llu failed: %s", (unsigned long long)hdr->seq,
                  symcoll_status_string(status));
        return status;
    }
    /* a rank that failed may not have been able to compute the same arguments: its
     * failure is the answer, not a mismatch */
    for (int r = 0; r < comm->nranks; r++) {
        pool_xhdr_t h;
        memcpy(&h, pool->xbuf + (size_t)r * pool->xmsg, sizeof(h));
        if (h.magic == POOL_XMAGIC && h.seq == hdr->seq && h.status != SYMCOLL_OK)
            return (symcoll_status_t)h.status;
    }
    for (int r = 0; r < comm->nranks; r++) {
        pool_xhdr_t h;
        memcpy(&h, pool->xbuf + (size_t)r * pool->xmsg, sizeof(h));
        if (h.magic != POOL_XMAGIC || h.seq != hdr->seq || h.kind != hdr->kind ||
            h.seg != hdr->seg || h.a != hdr->a || h.b != hdr->b || h.c != hdr->c ||
            h.blob_len > pool->listener.max_blob) {
            log_error("pool %s: rank %d disagrees (exchange %llu kind %u args %llu/%llu/%llu, "
                      "here %llu kind %u args %llu/%llu/%llu): ranks made different pool calls",
                      pool->be->name, r, (unsigned long long)h.seq, h.kind,
                      (unsigned long long)h.a, (unsigned long long)h.b, (unsigned long long)h.c,
                      (unsigned long long)hdr->seq, hdr->kind, (unsigned long long)hdr->a,
                      (unsigned long long)hdr->b, (unsigned long long)hdr->c);
            return SYMCOLL_ERR_MISMATCH;
        }
    }
    return SYMCOLL_OK;
}

/* ---- segments ---------------------------------------------------------------------- */

static void pool_unmap_views(pool_t *pool, void **views, size_t off, size_t size,
                             const uint64_t *handles, const bool *mapped)
{
    for (int r = 0; r < pool->local_size; r++)
        if (mapped[r])
            pool->be->seg_unmap(pool->be_ctx, (char *)views[r] + off, size, handles[r]);
}

/*
 * Collective: create this rank's segment [off, off+size) in the views, export it to the
 * local peers, import theirs, and let the listener register and exchange it. On success
 * *handles_p holds one handle per local rank. On failure every rank has rolled back.
 */
static symcoll_status_t pool_add_segment(pool_t *pool, void **views, int seg, size_t off,
                                         size_t size, symcoll_status_t pre,
                                         uint64_t **handles_p)
{
    comm_t *comm = pool->comm;
    const pool_backend_t *be = pool->be;
    int n = pool->local_size, me = pool->local_rank;
    uint64_t *handles = calloc((size_t)n, sizeof(*handles));
    bool *mapped = calloc((size_t)n, sizeof(*mapped));
    int *all_fds = calloc((size_t)n, sizeof(*all_fds));
    unsigned char *blob = NULL;
    bool listened = false;
    int fd = -1;
    pool_xhdr_t hdr;
    symcoll_status_t status = pre, st2;

    if (!handles || !mapped || !all_fds) {
        log_error("pool: out of memory adding a segment");
        status = SYMCOLL_ERR_NO_MEMORY;
    }
    if (pool->has_listener && pool->listener.max_blob) {
        blob = calloc(1, pool->listener.max_blob);
        if (!blob && status == SYMCOLL_OK) {
            log_error("pool: out of memory adding a segment");
            status = SYMCOLL_ERR_NO_MEMORY;
        }
    }
    if (status == SYMCOLL_OK && be->grow_allowed)
        status = be->grow_allowed(pool->be_ctx);
    if (status == SYMCOLL_OK) {
        status = be->seg_create(pool->be_ctx, size, (char *)views[me] + off, &handles[me], &fd);
        mapped[me] = status == SYMCOLL_OK;
    }
    if (status == SYMCOLL_OK && seg == POOL_SEG_SIGNAL)
        /* zeroed before anyone else can see it, so epochs start from 0 everywhere */
        status = be->memset(pool->be_ctx, (char *)views[me] + off, 0, size);

    memset(&hdr, 0, sizeof(hdr));
    if (status == SYMCOLL_OK && pool->has_listener) {
        size_t len = 0;
        status = pool->listener.seg_added(pool->listener.arg, seg, (char *)views[me] + off,
                                          size, blob, &len);
        listened = status == SYMCOLL_OK;
        if (listened && len > pool->listener.max_blob) {
            log_error("pool: listener blob of %zu bytes exceeds its maximum %zu", len,
                      pool->listener.max_blob);
            status = SYMCOLL_ERR_INTERNAL;
        }
        hdr.blob_len = status == SYMCOLL_OK ? len : 0;
    }

    /* round 1: did every rank create its segment? */
    hdr.kind = POOL_X_SEG;
    hdr.status = status;
    hdr.seg = seg;
    hdr.a = off;
    hdr.b = size;
    status = pool_exchange(pool, &hdr, blob);
    if (status != SYMCOLL_OK)
        goto err_rollback;

    if (n > 1) {
        uint64_t desc[2] = {off, size}, *all_desc = calloc((size_t)n, sizeof(desc));
        if (!all_desc) {
            log_error("pool: out of memory adding a segment");
            status = SYMCOLL_ERR_NO_MEMORY;
        } else {
            for (int r = 0; r < n; r++)
                all_fds[r] = -1;
            status = bootstrap_local_fd_allgather(comm->bootstrap, &fd, 1, desc, sizeof(desc),
                                                  all_fds, all_desc);
            for (int r = 0; r < n && status == SYMCOLL_OK; r++) {
                if (all_desc[2 * r] != off || all_desc[2 * r + 1] != size) {
                    log_error("pool: local rank %d sent segment %llu+%llu, expected %zu+%zu", r,
                              (unsigned long long)all_desc[2 * r],
                              (unsigned long long)all_desc[2 * r + 1], off, size);
                    status = SYMCOLL_ERR_MISMATCH;
                }
            }
            for (int r = 0; r < n && status == SYMCOLL_OK; r++) {
                if (r == me)
                    continue;
                status = be->seg_import(pool->be_ctx, all_fds[r], size, (char *)views[r] + off,
                                        &handles[r]);
                mapped[r] = status == SYMCOLL_OK;
            }
            /* the mappings keep the memory: no fd outlives the exchange */
            for (int r = 0; r < n; r++)
                if (all_fds[r] >= 0)
                    close(all_fds[r]);
            free(all_desc);
        }
    }
    if (fd >= 0) {
        close(fd);
        fd = -1;
    }
    if (status == SYMCOLL_OK && listened && pool->listener.seg_exchanged) {
        size_t *lens = calloc((size_t)comm->nranks, sizeof(*lens));
        unsigned char *blobs = calloc((size_t)comm->nranks, pool->listener.max_blob + 1);
        if (!lens || !blobs) {
            log_error("pool: out of memory adding a segment");
            status = SYMCOLL_ERR_NO_MEMORY;
        } else {
            for (int r = 0; r < comm->nranks; r++) {
                pool_xhdr_t h;
                memcpy(&h, pool->xbuf + (size_t)r * pool->xmsg, sizeof(h));
                lens[r] = h.blob_len;
                memcpy(blobs + (size_t)r * pool->listener.max_blob,
                       pool->xbuf + (size_t)r * pool->xmsg + sizeof(h), h.blob_len);
            }
            status = pool->listener.seg_exchanged(pool->listener.arg, seg, blobs, lens);
        }
        free(lens);
        free(blobs);
    }

    /* round 2: did every rank map every peer's segment? */
    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = POOL_X_COMMIT;
    hdr.status = status;
    hdr.seg = seg;
    hdr.a = off;
    hdr.b = size;
    st2 = pool_exchange(pool, &hdr, NULL);
    status = st2;
    if (status != SYMCOLL_OK)
        goto err_rollback;

    free(mapped);
    free(all_fds);
    free(blob);
    *handles_p = handles;
    return SYMCOLL_OK;

err_rollback:
    if (fd >= 0)
        close(fd);
    if (listened)
        pool->listener.seg_removed(pool->listener.arg, seg);
    if (mapped && handles)
        pool_unmap_views(pool, views, off, size, handles, mapped);
    free(handles);
    free(mapped);
    free(all_fds);
    free(blob);
    return status;
}

static void pool_remove_segment(pool_t *pool, void **views, int seg, size_t off, size_t size,
                                uint64_t *handles)
{
    bool all[pool->local_size];
    if (pool->has_listener)
        pool->listener.seg_removed(pool->listener.arg, seg);
    for (int r = 0; r < pool->local_size; r++)
        all[r] = true;
    pool_unmap_views(pool, views, off, size, handles, all);
    free(handles);
}

/* ---- allocator --------------------------------------------------------------------- */

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
static int pool_free_insert(pool_t *pool, size_t off, size_t size)
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

/* Size of the new data segment for a shortfall of need bytes; 0 if over the ceiling. */
static size_t pool_growth_size(const pool_t *pool, size_t need)
{
    size_t size, room = pool->max_size - pool->mapped;
    if (pool->mapped == 0) {
        size = need > pool->min_size ? need : pool->min_size;
    } else {
        double g = (double)pool->mapped * pool->growth;
        size_t gs = g >= (double)pool->max_size ? pool->max_size : (size_t)g;
        size = need > gs ? need : gs;
    }
    if (size > room)
        size = room;
    size = round_up(size, pool->gran);
    if (size > room)
        size -= pool->gran;
    return size >= need ? size : 0;
}

/* Unmaps the data segments from index keep on; they must be free (the last free range
 * covers them). Every rank does the same, inside a collective. */
static void pool_drop_tail(pool_t *pool, int keep)
{
    while (pool->nsegs > keep) {
        pool_seg_t *s = &pool->segs[--pool->nsegs];
        pool_remove_segment(pool, pool->bases, pool->nsegs, s->off, s->size, s->handles);
        /* the tail free range shrinks by the segment */
        pool_range_t *last = &pool->free[pool->nfree - 1];
        last->size -= s->size;
        if (last->size == 0)
            pool->nfree--;
        pool->mapped = s->off;
    }
    atomic_store(&pool->st_mapped, pool->mapped);
    atomic_store(&pool->st_segments, (uint64_t)pool->nsegs);
}

/* Collective: appends a data segment of size bytes. The caller reserved room in the
 * segment table and the free list, so nothing can fail locally after the exchange. */
static symcoll_status_t pool_grow(pool_t *pool, size_t size)
{
    uint64_t *handles;
    symcoll_status_t status;
    int idx = pool->nsegs;

    status = pool_add_segment(pool, pool->bases, idx, pool->mapped, size, SYMCOLL_OK, &handles);
    if (status != SYMCOLL_OK)
        return status;
    pool_free_insert(pool, pool->mapped, size); /* cannot fail: room reserved */
    pool->segs[idx].off = pool->mapped;
    pool->segs[idx].size = size;
    pool->segs[idx].handles = handles;
    pool->nsegs++;
    pool->mapped += size;
    atomic_store(&pool->st_mapped, pool->mapped);
    atomic_fetch_add(&pool->st_growths, 1);
    atomic_store(&pool->st_segments, (uint64_t)pool->nsegs);
    log_debug("pool %s: segment %d of %zu bytes at offset %zu (mapped %zu)", pool->be->name,
              idx, size, pool->segs[idx].off, pool->mapped);
    return SYMCOLL_OK;
}

symcoll_status_t pool_alloc(pool_t *pool, size_t size, pool_alloc_kind_t kind, size_t *off_p)
{
    symcoll_status_t status = SYMCOLL_OK;
    pool_xhdr_t hdr;
    size_t asize, grow = 0, off;
    long i;

    if (size == 0 || size > pool->max_size) {
        /* still collective: peers must not wait for us in the exchange */
        asize = 0;
    } else {
        asize = round_up(size, POOL_ALIGN);
    }

    pthread_mutex_lock(&pool->lock);
    i = asize ? pool_first_fit(pool, asize) : -1;
    if (pool_reserve_array((void **)&pool->live, &pool->live_cap, pool->nlive,
                           sizeof(pool->live[0])) ||
        pool_reserve_array((void **)&pool->free, &pool->free_cap, pool->nfree,
                           sizeof(pool->free[0])) ||
        pool_reserve_array((void **)&pool->segs, &pool->segs_cap, (size_t)pool->nsegs,
                           sizeof(pool->segs[0]))) {
        log_error("pool: out of memory for the allocator tables");
        status = SYMCOLL_ERR_NO_MEMORY;
    } else if (asize == 0) {
        log_error("pool %s: cannot allocate %zu bytes (ceiling SYMCOLL_POOL_MAX_SIZE=%zu)",
                  pool->be->name, size, pool->max_size);
        status = size == 0 ? SYMCOLL_ERR_INVALID_PARAM : SYMCOLL_ERR_NO_MEMORY;
    } else if (i < 0) {
        /* the new segment extends a free range that ends at the current end */
        size_t tail = 0;
        if (pool->nfree &&
            pool->free[pool->nfree - 1].off + pool->free[pool->nfree - 1].size == pool->mapped)
            tail = pool->free[pool->nfree - 1].size;
        grow = pool_growth_size(pool, asize - tail);
        if (!grow) {
            log_error("pool %s: cannot grow by %zu bytes: %zu of SYMCOLL_POOL_MAX_SIZE=%zu "
                      "already mapped",
                      pool->be->name, asize - tail, pool->mapped, pool->max_size);
            status = SYMCOLL_ERR_NO_MEMORY;
        }
    }

    /* agree on the request and on the plan before touching anything */
    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = POOL_X_ALLOC;
    hdr.status = status;
    hdr.a = size;
    hdr.b = i >= 0 ? pool->free[i].off : pool->mapped;
    hdr.c = grow;
    status = pool_exchange(pool, &hdr, NULL);
    if (status != SYMCOLL_OK)
        goto out;

    if (grow) {
        status = pool_grow(pool, grow);
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
        status = pool_exchange(pool, &hdr, NULL);
        if (status != SYMCOLL_OK) {
            if (grow) {
                pool_drop_tail(pool, pool->nsegs - 1);
                atomic_fetch_sub(&pool->st_growths, 1);
            }
            goto out;
        }
    }
    pool->free[i].off += asize;
    pool->free[i].size -= asize;
    if (pool->free[i].size == 0) {
        memmove(&pool->free[i], &pool->free[i + 1],
                (pool->nfree - (size_t)i - 1) * sizeof(pool->free[0]));
        pool->nfree--;
    }
    {
        size_t lo =
            pool_offset_search(pool->live, pool->nlive, sizeof(pool->live[0]), off, false);
        memmove(&pool->live[lo + 1], &pool->live[lo],
                (pool->nlive - lo) * sizeof(pool->live[0]));
        pool->live[lo].off = off;
        pool->live[lo].size = asize;
        pool->live[lo].kind = kind;
        pool->nlive++;
    }
    pool_stat_in_use(pool, atomic_load(&pool->st_in_use) + asize);
    *off_p = off;
out:
    pthread_mutex_unlock(&pool->lock);
    return status;
}

symcoll_status_t pool_free(pool_t *pool, size_t off)
{
    symcoll_status_t status = SYMCOLL_OK;
    long i;

    pthread_mutex_lock(&pool->lock);
    i = pool_live_find(pool, off);
    if (i < 0 || pool->live[i].off != off) {
        log_error("pool %s: offset %zu is not the start of a live allocation", pool->be->name,
                  off);
        status = SYMCOLL_ERR_INVALID_PARAM;
        goto out;
    }
    size_t size = pool->live[i].size;
    if (pool_free_insert(pool, off, size)) {
        log_error("pool: out of memory for the free list");
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    memmove(&pool->live[i], &pool->live[i + 1],
            (pool->nlive - (size_t)i - 1) * sizeof(pool->live[0]));
    pool->nlive--;
    atomic_store(&pool->st_in_use, atomic_load(&pool->st_in_use) - size);
out:
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

symcoll_status_t pool_free_ptr(pool_t *pool, const void *ptr)
{
    uintptr_t base = (uintptr_t)pool->bases[pool->local_rank], p = (uintptr_t)ptr;
    if (p < base || p - base >= pool->max_size) {
        log_error("pool %s: %p was not allocated from this pool", pool->be->name, ptr);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return pool_free(pool, p - base);
}

symcoll_status_t pool_trim(pool_t *pool)
{
    symcoll_status_t status;
    pool_xhdr_t hdr;
    size_t tail_off = pool->mapped;
    int keep;

    pthread_mutex_lock(&pool->lock);
    if (pool->nfree &&
        pool->free[pool->nfree - 1].off + pool->free[pool->nfree - 1].size == pool->mapped)
        tail_off = pool->free[pool->nfree - 1].off;
    keep = pool->nsegs;
    while (keep > 0 && pool->segs[keep - 1].off >= tail_off)
        keep--;

    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = POOL_X_TRIM;
    hdr.a = (uint64_t)keep;
    hdr.b = pool->mapped;
    status = pool_exchange(pool, &hdr, NULL);
    if (status != SYMCOLL_OK)
        goto out;

    pool_drop_tail(pool, keep);
out:
    pthread_mutex_unlock(&pool->lock);
    return status;
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
    pool = calloc(1, sizeof(*pool));
    if (!pool)
        return SYMCOLL_ERR_NO_MEMORY;
    pool->comm = comm;
    pool->be = be;
    if (params->listener) {
        pool->listener = *params->listener;
        pool->has_listener = true;
    }
    pool->local_rank = comm->topo->local_rank;
    pool->local_size = comm->topo->local_size;
    pool->xmsg = round_up(sizeof(pool_xhdr_t) + pool->listener.max_blob, 8);
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
comm_t *pool_comm(const pool_t *pool)
{
    return pool->comm;
}

