/* CUDA VMM backend of the pool: segments from cuMemCreate exported as POSIX file
 * descriptors, mapped into one reserved virtual range so the pool grows in place. */
#include "pool/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda/cuda.h"
#include "cuda/kernels.h"

typedef struct cuda_pool_ctx {
    const cuda_driver_t *drv;
    int device;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    size_t granularity;
    cudaStream_t stream; /* private, for the synchronous memset/memcpy of the pool */
} cuda_pool_ctx_t;

/* make the pool's device current for runtime calls; returns the previous one */
static int enter_device(const cuda_pool_ctx_t *c)
{
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess)
        prev = -1;
    if (prev != c->device)
        cudaSetDevice(c->device);
    return prev;
}

static void leave_device(const cuda_pool_ctx_t *c, int prev)
{
    if (prev >= 0 && prev != c->device)
        cudaSetDevice(prev);
}

static symcoll_status_t cuda_pool_init(comm_t *comm, void **ctx_p)
{
    const cuda_driver_t *drv = cuda_driver("CUDA memory pool");
    cuda_pool_ctx_t *c;
    CUdevice cudev;
    CUresult res;
    cudaError_t err;
    int rdma = 0, prev;
    symcoll_status_t status;

    if (!drv)
        return SYMCOLL_ERR_UNSUPPORTED;
    c = calloc(1, sizeof(*c));
    if (!c)
        return SYMCOLL_ERR_NO_MEMORY;
    c->drv = drv;
    status = cuda_comm_device(comm, &c->device);
    if (status != SYMCOLL_OK)
        goto err_free;
    res = drv->device_get(&cudev, c->device);
    if (res != CUDA_SUCCESS) {
        status = cuda_drv_error(res, "cuDeviceGet");
        goto err_free;
    }
    c->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    c->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    c->prop.location.id = c->device;
    c->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (drv->device_get_attribute(&rdma,
                                  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                                  cudev) == CUDA_SUCCESS &&
        rdma)
        c->prop.allocFlags.gpuDirectRDMACapable = 1;
    res = drv->mem_get_allocation_granularity(&c->granularity, &c->prop,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (res != CUDA_SUCCESS) {
        status = cuda_drv_error(res, "cuMemGetAllocationGranularity");
        goto err_free;
    }
    c->access.location = c->prop.location;
    c->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

    prev = enter_device(c);
    err = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    leave_device(c, prev);
    if (err != cudaSuccess) {
        status = cuda_rt_error(err, "cudaStreamCreateWithFlags");
        goto err_free;
    }
    log_debug("CUDA pool on device %d: granularity %zu, GPUDirect RDMA %s", c->device,
              c->granularity, rdma ? "yes" : "no");
    *ctx_p = c;
    return SYMCOLL_OK;

err_free:
    free(c);
    return status;
}

static void cuda_pool_fini(void *ctx)
{
    cuda_pool_ctx_t *c = ctx;
    if (!c)
        return;
    cudaStreamDestroy(c->stream);
    free(c);
}

static size_t cuda_pool_granularity(void *ctx)
{
    return ((cuda_pool_ctx_t *)ctx)->granularity;
}

static symcoll_status_t cuda_pool_reserve(void *ctx, size_t size, void **base_p)
{
    cuda_pool_ctx_t *c = ctx;
    CUdeviceptr base = 0;
    CUresult res = c->drv->mem_address_reserve(&base, size, c->granularity, 0, 0);
    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuMemAddressReserve");
    *base_p = (void *)(uintptr_t)base;
    return SYMCOLL_OK;
}

static void cuda_pool_unreserve(void *ctx, void *base, size_t size)
{
    cuda_pool_ctx_t *c = ctx;
    CUresult res = c->drv->mem_address_free((CUdeviceptr)(uintptr_t)base, size);
    if (res != CUDA_SUCCESS)
        cuda_drv_error(res, "cuMemAddressFree");
}

/* map handle h at addr, readable and writable from the pool's device */
static symcoll_status_t map_handle(cuda_pool_ctx_t *c, void *addr, size_t size,
                                   CUmemGenericAllocationHandle h)
{
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)addr;
    CUresult res = c->drv->mem_map(p, size, 0, h, 0);
    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuMemMap");
    res = c->drv->mem_set_access(p, size, &c->access, 1);
    if (res != CUDA_SUCCESS) {
        c->drv->mem_unmap(p, size);
        return cuda_drv_error(res, "cuMemSetAccess");
    }
    return SYMCOLL_OK;
}

static symcoll_status_t cuda_pool_seg_create(void *ctx, size_t size, void *addr,
                                             uint64_t *handle_p, int *fd_p)
{
    cuda_pool_ctx_t *c = ctx;
    CUmemGenericAllocationHandle h;
    int fd = -1;
    symcoll_status_t status;
    CUresult res = c->drv->mem_create(&h, size, &c->prop, 0);

    if (res != CUDA_SUCCESS) {
        if (res == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
            res == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
            log_error("cuMemCreate refused during CUDA stream capture: warm up or pre-size "
                      "the pool before capturing");
            return SYMCOLL_ERR_IN_PROGRESS;
        }
        return cuda_drv_error(res, "cuMemCreate");
    }
    status = map_handle(c, addr, size, h);
    if (status != SYMCOLL_OK)
        goto err_release;
    res = c->drv->mem_export(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (res != CUDA_SUCCESS) {
        status = cuda_drv_error(res, "cuMemExportToShareableHandle");
        goto err_unmap;
    }
    *handle_p = (uint64_t)h;
    *fd_p = fd;
    return SYMCOLL_OK;

err_unmap:
    c->drv->mem_unmap((CUdeviceptr)(uintptr_t)addr, size);
err_release:
    c->drv->mem_release(h);
    return status;
}

static symcoll_status_t cuda_pool_seg_import(void *ctx, int fd, size_t size, void *addr,
                                             uint64_t *handle_p)
{
    cuda_pool_ctx_t *c = ctx;
    CUmemGenericAllocationHandle h;
    symcoll_status_t status;
    CUresult res =
        c->drv->mem_import(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);

    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuMemImportFromShareableHandle");
    status = map_handle(c, addr, size, h);
    if (status != SYMCOLL_OK) {
        c->drv->mem_release(h);
        return status;
    }
    *handle_p = (uint64_t)h;
    return SYMCOLL_OK;
}

static void cuda_pool_seg_unmap(void *ctx, void *addr, size_t size, uint64_t handle)
{
    cuda_pool_ctx_t *c = ctx;
    CUresult res = c->drv->mem_unmap((CUdeviceptr)(uintptr_t)addr, size);
    if (res != CUDA_SUCCESS)
        cuda_drv_error(res, "cuMemUnmap");
    res = c->drv->mem_release((CUmemGenericAllocationHandle)handle);
    if (res != CUDA_SUCCESS)
        cuda_drv_error(res, "cuMemRelease");
}

static symcoll_status_t cuda_pool_memset(void *ctx, void *addr, int v, size_t size)
{
    cuda_pool_ctx_t *c = ctx;
    int prev = enter_device(c);
    cudaError_t err = cudaMemsetAsync(addr, v, size, c->stream);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(c->stream);
    leave_device(c, prev);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaMemsetAsync");
}

static symcoll_status_t cuda_pool_memcpy(void *ctx, void *dst, const void *src, size_t size)
{
    cuda_pool_ctx_t *c = ctx;
    int prev = enter_device(c);
    cudaError_t err = cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, c->stream);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(c->stream);
    leave_device(c, prev);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "cudaMemcpyAsync");
}

const pool_backend_t pool_cuda_backend = {
    .name = "cuda",
    .mem_type = SYMCOLL_MEM_CUDA,
    .signal_size = CUDA_PAD_BYTES,
    .init = cuda_pool_init,
    .fini = cuda_pool_fini,
    .granularity = cuda_pool_granularity,
    .reserve = cuda_pool_reserve,
    .unreserve = cuda_pool_unreserve,
    .seg_create = cuda_pool_seg_create,
    .seg_import = cuda_pool_seg_import,
    .seg_unmap = cuda_pool_seg_unmap,
    .memset = cuda_pool_memset,
    .memcpy = cuda_pool_memcpy,
    /* Growth through symcoll_mem_alloc enqueues no stream work, so it may run while a
     * stream is captured; the all-reduce refuses to grow its staging under capture
     * itself (it knows the stream, and a graph must never hold staging that is freed). */
    .grow_allowed = NULL,
};
