/* Host memory backend of the pool: address space reserved with an inaccessible anonymous
 * mapping, segments are memfds (never a file in /dev/shm) mapped MAP_SHARED|MAP_FIXED
 * into it; unmapping puts the inaccessible mapping back so the range stays reserved. */
#define _GNU_SOURCE
#include "pool/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static symcoll_status_t host_init(comm_t *comm, void **ctx_p)
{
    (void)comm;
    *ctx_p = NULL;
    return SYMCOLL_OK;
}

static void host_fini(void *ctx)
{
    (void)ctx;
}

static size_t host_granularity(void *ctx)
{
    long pg = sysconf(_SC_PAGESIZE);
    (void)ctx;
    return pg > 0 ? (size_t)pg : 4096;
}

static symcoll_status_t host_reserve(void *ctx, size_t size, void **base_p)
{
    void *p;
    (void)ctx;
    p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        log_error("pool: cannot reserve %zu bytes of address space: %s (lower "
                  "SYMCOLL_POOL_MAX_SIZE)",
                  size, strerror(errno));
        return SYMCOLL_ERR_NO_MEMORY;
    }
    *base_p = p;
    return SYMCOLL_OK;
}

static void host_unreserve(void *ctx, void *base, size_t size)
{
    (void)ctx;
    if (base)
        munmap(base, size);
}

static symcoll_status_t host_map_fd(int fd, size_t size, void *addr)
{
    void *p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        log_error("pool: mmap of a %zu-byte segment failed: %s", size, strerror(errno));
        return errno == ENOMEM ? SYMCOLL_ERR_NO_MEMORY : SYMCOLL_ERR_SYSTEM;
    }
    return SYMCOLL_OK;
}

static symcoll_status_t host_seg_create(void *ctx, size_t size, void *addr, uint64_t *handle_p,
                                        int *fd_p)
{
    symcoll_status_t status;
    int fd;
    (void)ctx;

    fd = memfd_create("symcoll-pool", MFD_CLOEXEC);
    if (fd < 0) {
        log_error("pool: memfd_create failed: %s", strerror(errno));
        return errno == ENOMEM || errno == EMFILE || errno == ENFILE ? SYMCOLL_ERR_NO_MEMORY
                                                                     : SYMCOLL_ERR_SYSTEM;
    }
    if (ftruncate(fd, (off_t)size)) {
        log_error("pool: ftruncate of a memfd to %zu bytes failed: %s", size, strerror(errno));
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err_close;
    }
    /* pages come when allocations are carved out (host_commit), not here: a segment
     * grown by SYMCOLL_POOL_GROWTH beyond the request costs no memory until used */
    status = host_map_fd(fd, size, addr);
    if (status != SYMCOLL_OK)
        goto err_close;
    *handle_p = 0;
    *fd_p = fd;
    return SYMCOLL_OK;

err_close:
    close(fd);
    return status;
}

static symcoll_status_t host_seg_import(void *ctx, int fd, size_t size, void *addr,
                                        uint64_t *handle_p)
{
    symcoll_status_t status;
    (void)ctx;
    status = host_map_fd(fd, size, addr);
    if (status == SYMCOLL_OK)
        *handle_p = 0;
    return status;
}

static void host_seg_unmap(void *ctx, void *addr, size_t size, uint64_t handle)
{
    (void)ctx;
    (void)handle;
    /* replacing the view keeps the range reserved for a later growth */
    if (mmap(addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) == MAP_FAILED) {
        log_warn("pool: cannot re-reserve an unmapped segment: %s", strerror(errno));
        munmap(addr, size);
    }
}

/* Backs the range with pages now. A memfd page that cannot be allocated would raise
 * SIGBUS at first touch, in some later all-reduce; populating reports ENOMEM instead.
 * Kernels before 5.14 do not know MADV_POPULATE_WRITE: then pages come at first touch. */
static symcoll_status_t host_commit(void *ctx, void *addr, size_t size)
{
    (void)ctx;
#ifdef MADV_POPULATE_WRITE
    if (size && madvise(addr, size, MADV_POPULATE_WRITE) && errno != EINVAL) {
        log_error("pool: cannot back %zu bytes of pool memory: %s", size, strerror(errno));
        return SYMCOLL_ERR_NO_MEMORY;
    }
#else
    (void)addr;
    (void)size;
#endif
    return SYMCOLL_OK;
}

static symcoll_status_t host_memset(void *ctx, void *addr, int c, size_t size)
{
    (void)ctx;
    memset(addr, c, size);
    return SYMCOLL_OK;
}

static symcoll_status_t host_memcpy(void *ctx, void *dst, const void *src, size_t size)
{
    (void)ctx;
    memcpy(dst, src, size);
    return SYMCOLL_OK;
}

const pool_backend_t pool_host_backend = {
    .name = "host",
    .mem_type = SYMCOLL_MEM_HOST,
    .signal_size = 64 * 1024,
    .init = host_init,
    .fini = host_fini,
    .granularity = host_granularity,
    .reserve = host_reserve,
    .unreserve = host_unreserve,
    .seg_create = host_seg_create,
    .seg_import = host_seg_import,
    .seg_unmap = host_seg_unmap,
    .memset = host_memset,
    .memcpy = host_memcpy,
    .grow_allowed = NULL,
    .commit = host_commit,
};
