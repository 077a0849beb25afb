/* Private to src/pool/: the pool's state, the exchange message, and the functions its
 * files call on each other. Nothing outside src/pool/ includes it. */
#ifndef SYMCOLL_POOL_INT_H
#define SYMCOLL_POOL_INT_H

#include <stddef.h>

#include "pool/pool.h"

/*
 * Layout. Every local rank's view of the pool is its own reserved range of max_size
 * bytes (bases[r]); offset o of rank r is bases[r] + o in this process, whatever the
 * rank. Data segments are mapped one after the other from offset 0, so the mapped size
 * is also the end offset, and growing never moves a buffer. The signal pad lives in a
 * separate small range per view (sig[r]) so trimming data never touches it.
 *
 * Collectives. Every change of the segment table is agreed by a vote over the bootstrap
 * (pool_exchange: an all-reduce of a fixed-size header's hash, gathered only on failure)
 * among all ranks of the communicator; the header carries a sequence number, the kind of
 * change and its arguments. Ranks whose headers differ return SYMCOLL_ERR_MISMATCH; a rank that
 * failed puts its status in the header and every rank returns the first failure (by rank), so
 * all ranks either commit a change or roll it back.
 *
 * Allocator. Free ranges and live allocations are two arrays sorted by offset: first
 * fit over the free ranges, binary search over the live ones (address lookup in the
 * all-reduce path is O(log n)). Every rank runs the same sequence of collective
 * allocations, so offsets agree. An allocation that grows the pool, one that must back
 * its pages (host) and the library's own agree with an exchange; the user's others
 * (CUDA, fitting) make none, and the next exchange or pool_check compares a hash of the
 * user's allocations and frees. Once the ranks' sequences differ their buffers are not
 * symmetric, and every later check fails with SYMCOLL_ERR_MISMATCH.
 */

#define POOL_XMAGIC 0x53594d43504f4f4cULL /* "SYMCPOOL" */

enum {
    POOL_X_SEG = 1,
    POOL_X_COMMIT,
    POOL_X_ALLOC,
    POOL_X_BACKED,
    POOL_X_TRIM,
    POOL_X_RESERVE,
    POOL_X_CHECK
};

typedef struct pool_xhdr {
    uint64_t magic;
    uint64_t seq;
    uint32_t kind;
    int32_t status; /* this rank's result so far */
    int64_t seg;
    uint64_t a, b, c; /* arguments of the change; must agree */
    uint64_t seqh;    /* pool_seq_value, 0 for a pool with commit (pool_exchange); must agree */
    /* voted, not compared: after the exchange every rank holds the smallest value any
     * rank sent (the segment's listener: 1 where this rank registered it) */
    int64_t vote;
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
    pool_alloc_kind_t kind; /* only USER allocations are the user's to free */
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
    /* The user's allocations and frees so far, which every rank makes alike: seq_hash,
     * FNV-1a over each allocation (size, offset) after the frees before it (free_acc, a
     * sum, since frees between two collective calls may come in any order); and the
     * allocations made without an exchange since the last exchange (unchecked). Every
     * exchange compares pool_seq_value; pool_check makes one where some are unchecked. */
    uint64_t seq_hash, free_acc;
    uint64_t unchecked;
    bool diverged;        /* an exchange found another rank's sequence different: for good */
    unsigned char *xbuf;  /* nranks exchange messages */
    unsigned char *xsend; /* this rank's */
    size_t xmsg;          /* size of one */

    _Atomic size_t st_reserved, st_mapped, st_in_use, st_peak;
    _Atomic uint64_t st_growths, st_segments;
};

static inline uint64_t pool_seq_fnv(uint64_t x, uint64_t a, uint64_t b)
{
    const uint64_t f[2] = {a, b};

    for (size_t i = 0; i < 2; i++)
        for (int k = 0; k < 64; k += 8)
            x = (x ^ ((f[i] >> k) & 0xff)) * 0x100000001b3ull;
    return x;
}

/* What the ranks compare of the user's allocation sequence (see struct pool). */
static inline uint64_t pool_seq_value(const pool_t *pool)
{
    uint64_t x = pool->seq_hash ? pool->seq_hash : 0xcbf29ce484222325ull;

    return pool->free_acc ? pool_seq_fnv(x, 3, pool->free_acc) : x;
}

static inline size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* pool_grow.c: the collectives that change the segment table */
symcoll_status_t pool_exchange(pool_t *pool, pool_xhdr_t *hdr);
symcoll_status_t pool_add_segment(pool_t *pool, void **views, int seg, size_t off, size_t size,
                                  symcoll_status_t pre, uint64_t **handles_p);
void pool_remove_segment(pool_t *pool, void **views, int seg, size_t off, size_t size,
                         uint64_t *handles);
size_t pool_growth_size(const pool_t *pool, size_t need);
void pool_drop_tail(pool_t *pool, int keep);
symcoll_status_t pool_grow(pool_t *pool, size_t size);

/* pool_alloc.c: the free list */
int pool_free_insert(pool_t *pool, size_t off, size_t size);

#endif
