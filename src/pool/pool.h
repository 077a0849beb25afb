/* The growable symmetric pool: one per (communicator, memory type). Offset o is the same
 * byte on every rank; local peers map each other's segments, so peer r's view of o is
 * pool_peer_addr(pool, r, o). Memory types plug in as backends (host memfd, CUDA VMM). */
#ifndef SYMCOLL_POOL_H
#define SYMCOLL_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef struct pool pool_t;

/* Alignment of every allocation (offsets and sizes), bytes. Large enough for 16-byte
 * vector loads and a cache line on every architecture we target. */
#define POOL_ALIGN 256

/* Segment index given to the listener for the signal pad (data segments are 0, 1, ...). */
#define POOL_SEG_SIGNAL (-1)

/* ---- backend interface ------------------------------------------------------------
 *
 * A backend provides address space and memory that can be shared with the other ranks of
 * the node through a file descriptor. The pool owns the layout (offsets, views, the
 * allocator, the growth protocol); the backend only does what is memory-type specific.
 * Every call gets the backend's per-pool context (from init).
 *
 * Life of a segment on one rank:
 *   seg_create(size, own_view_addr) -> handle, fd   own memory mapped at own_view_addr,
 *                                                    fd sent to local peers
 *   seg_import(peer_fd, size, peer_view_addr) -> handle  peer memory mapped locally
 *   seg_unmap(addr, size, handle)                     for every view on trim / destroy
 * The pool closes every fd right after the exchange (seg_import must not keep the fd:
 * dup it if needed): after mapping, the mapping itself keeps the memory alive, and a
 * pool with many segments and 64 local ranks would otherwise hold thousands of fds.
 * Addresses given to seg_create / seg_import lie inside ranges from reserve() and are
 * multiples of granularity(); sizes too. Unmapping must leave the range reserved.
 */
typedef struct pool_backend {
    const char *name; /* "host", "cuda" */
    symcoll_mem_type_t mem_type;
    size_t signal_size; /* bytes of signal pad the algorithms of this type need */

    /* Per-pool state (e.g. the CUDA device of comm). Called once per pool. */
    symcoll_status_t (*init)(comm_t *comm, void **ctx_p);
    void (*fini)(void *ctx);

    /* Mapping granularity, bytes (page or huge page; 2 MiB for VMM on Hopper). */
    size_t (*granularity)(void *ctx);

    /* Reserve / release size bytes of address space, aligned to granularity. */
    symcoll_status_t (*reserve)(void *ctx, size_t size, void **base_p);
    void (*unreserve)(void *ctx, void *base, size_t size);

    /* Create a segment of size bytes, map it read/write at addr, and export it as a
     * file descriptor for local peers. *handle_p is opaque to the pool and comes back in
     * seg_unmap. Returns SYMCOLL_ERR_NO_MEMORY when the memory is not available. */
    symcoll_status_t (*seg_create)(void *ctx, size_t size, void *addr, uint64_t *handle_p,
                                   int *fd_p);

    /* Map a peer's segment, received as fd, at addr. Must not keep fd. */
    symcoll_status_t (*seg_import)(void *ctx, int fd, size_t size, void *addr,
                                   uint64_t *handle_p);

    /* Unmap a view made by seg_create or seg_import and release its handle. */
    void (*seg_unmap)(void *ctx, void *addr, size_t size, uint64_t handle);

    /* Fill or copy memory of this type (synchronous). Used to zero the signal pad
     * before its handles are exchanged, and for staging. */
    symcoll_status_t (*memset)(void *ctx, void *addr, int c, size_t size);
    symcoll_status_t (*memcpy)(void *ctx, void *dst, const void *src, size_t size);

    /* Optional (NULL: always allowed). SYMCOLL_ERR_IN_PROGRESS when growth cannot run now
     * (CUDA stream capture); the backend logs the reason. */
    symcoll_status_t (*grow_allowed)(void *ctx);

    /* Optional (NULL: segments are backed by memory from seg_create on, as VMM ones are).
     * Backs [addr, addr+size) of this rank's own view now, so that a shortage is
     * SYMCOLL_ERR_NO_MEMORY at allocation rather than a fault at first touch. Lets a
     * backend map segments lazily, so that the growth factor costs address space, not
     * memory. */
    symcoll_status_t (*commit)(void *ctx, void *addr, size_t size);
} pool_backend_t;

/* The backend serving mem_type, or NULL when this build has none. */
const pool_backend_t *pool_backend_get(symcoll_mem_type_t mem_type);

/* Host memory backend (memfd), always built. */
extern const pool_backend_t pool_host_backend;

/* ---- segment listener (inter-node layer) ------------------------------------------
 *
 * Lets the UCX layer register every segment without the pool knowing UCX. Nothing is
 * exchanged for it: a peer that puts into a segment fetches its rkey from the owner when
 * it first needs it (see ucx.h). Called on every rank, under the pool lock, inside the
 * collective that adds or removes the segment:
 *   seg_added      after the segment is mapped locally; *registered_p says whether this
 *                  rank registered it (false: a soft failure the listener survives);
 *   seg_agreed     once every rank added it; all_registered: every rank registered it;
 *   seg_removed    before the segment is unmapped (trim, destroy, or a growth that
 *                  failed on some rank after seg_added ran here; then seg_agreed may
 *                  not have run).
 * A failure in seg_added or seg_agreed on any rank fails the growth on every rank, and
 * the pool is left as it was. The signal pad goes through the listener too, with
 * seg == POOL_SEG_SIGNAL, when the pool is created.
 */
typedef struct pool_listener {
    symcoll_status_t (*seg_added)(void *arg, int seg, void *addr, size_t size,
                                  bool *registered_p);
    symcoll_status_t (*seg_agreed)(void *arg, int seg, bool all_registered);
    void (*seg_removed)(void *arg, int seg);
    void *arg;
} pool_listener_t;

/* ---- the pool ----------------------------------------------------------------------- */

typedef struct pool_params {
    symcoll_mem_type_t mem_type;
    const pool_listener_t *listener; /* NULL: none; copied */
    /* this rank among the ranks of its node that map each other's segments (those of
     * the bootstrap's local channel, in its order) */
    int local_rank;
    int local_size;
} pool_params_t;

/* Who owns an allocation. USER: a buffer of symcoll_mem_alloc, which only
 * pool_free_user releases on the user's behalf; STAGING: the library's own, released
 * by the algorithm that made it with pool_free. Recorded with every live allocation. */
typedef enum { POOL_ALLOC_USER = 0, POOL_ALLOC_STAGING } pool_alloc_kind_t;

/* Collective over all ranks of comm: reserves the address space and creates the signal
 * pad (zeroed, then exchanged). Data segments are added on demand. */
symcoll_status_t pool_create(comm_t *comm, const pool_params_t *params, pool_t **pool_p);

/* Collective: releases every view, segment and fd. NULL is ignored. */
void pool_destroy(pool_t *pool);

/* Collective: every rank passes the same size and gets the same offset. Grows the pool
 * when needed; SYMCOLL_ERR_NO_MEMORY leaves it as it was (SYMCOLL_ERR_IN_PROGRESS where
 * CUDA refuses the growth during a stream capture). An allocation of the library's own
 * (STAGING), one that grows the pool, and one whose memory must be backed (host) agree
 * with an exchange (SYMCOLL_ERR_MISMATCH where the ranks differ); a USER allocation that
 * fits without growth and needs no backing (CUDA) makes none: every rank that made the
 * same calls carves the same range, and the next exchange or pool_check compares the
 * ranks' allocation sequences. */
symcoll_status_t pool_alloc(pool_t *pool, size_t size, pool_alloc_kind_t kind, size_t *off_p);

/* pool_alloc with no exchange at all, for an allocation during a CUDA stream capture:
 * where size fits without growth and needs no backing, every rank that makes the same
 * calls carves the same range, recorded in the allocation sequence (compared at the next
 * exchange or pool_check); else SYMCOLL_ERR_IN_PROGRESS (logged: what to reserve) and
 * nothing changed, or SYMCOLL_ERR_NO_MEMORY where the size can never fit. Not collective
 * by itself. */
symcoll_status_t pool_alloc_quiet(pool_t *pool, size_t size, pool_alloc_kind_t kind,
                                  size_t *off_p);

/* Collective: grows the pool, where needed, so that an allocation of size bytes fits
 * without growth (then it makes no exchange: pool_alloc). Allocates nothing; the same
 * statuses as pool_alloc. pool_trim gives the room back. */
symcoll_status_t pool_reserve(pool_t *pool, size_t size);

/* Collective where allocations were made without an exchange since the last one: the
 * ranks compare their allocation sequences (SYMCOLL_ERR_MISMATCH where they differ);
 * else returns SYMCOLL_OK at once. Called before every collective call. */
symcoll_status_t pool_check(pool_t *pool);

/* Local: no exchange, no wait for the other ranks. The allocator must stay the same on
 * every rank, so by contract every rank frees the same allocations between the same two
 * collective pool calls, in any order (neighbours merge, so the free list comes out the
 * same); a difference that changes the plan of the next exchange fails it with
 * SYMCOLL_ERR_MISMATCH, and where allocations skip the exchange (pool_alloc) the hash of
 * the user's frees tells at the next exchange or pool_check. Frees an allocation of any kind:
 * for the library's own callers, which know their offsets. */
symcoll_status_t pool_free(pool_t *pool, size_t off);

/* True if ptr lies in the address range of some local rank's view of this pool (mapped
 * or not). The views of different pools never overlap, so at most one pool owns ptr. */
bool pool_owns(const pool_t *pool, const void *ptr);

/* symcoll_mem_free's free, local like pool_free: releases the allocation only if ptr is
 * the exact start, in this rank's view, of a live POOL_ALLOC_USER allocation. Anything
 * else is SYMCOLL_ERR_INVALID_PARAM, frees nothing and logs one error line naming the
 * case: outside this rank's view (outside the pool, or another local rank's view), no
 * live allocation there (freed already, or never allocated), the library's staging, or
 * a pointer inside a buffer rather than its start. */
symcoll_status_t pool_free_user(pool_t *pool, const void *ptr);

/* True if [ptr, ptr+len) lies inside one live allocation of this rank's view; then
 * *off_p is the pool offset of ptr. O(log n). len 0 counts as inside. */
bool pool_lookup(pool_t *pool, const void *ptr, size_t len, size_t *off_p);

/* Collective: unmaps the data segments at the tail that hold no allocation. */
symcoll_status_t pool_trim(pool_t *pool);

/* Statistics, readable from any thread at any time. */
void pool_query(const pool_t *pool, symcoll_pool_attr_t *attr);

/* Ranks of this node that map the pool (local rank order = topo->local_ranks). */
int pool_local_rank(const pool_t *pool);
int pool_local_size(const pool_t *pool);

/* Local rank r's view of offset off, in this process. Valid for any mapped offset. */
void *pool_peer_addr(const pool_t *pool, int local_rank, size_t off);

/* Local rank r's signal pad (backend->signal_size bytes, zeroed at creation). */
void *pool_signal_pad(const pool_t *pool, int local_rank);

const pool_backend_t *pool_backend(const pool_t *pool);
void *pool_backend_ctx(const pool_t *pool);
comm_t *pool_comm(const pool_t *pool);

/* pool outlives its communicator (it is destroyed later, from another thread): it
 * forgets the communicator and its listener, so that pool_destroy touches neither. A
 * pool with a listener (registered with UCX) is never kept so (CUDA graphs capture calls
 * inside a node only); its registrations go with UCX. NULL is ignored. */
void pool_orphan(pool_t *pool);

#endif
