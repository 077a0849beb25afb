/* CUDA glue: runtime probe, driver entry points, pointer queries, abort words. */
#include "cuda/cuda.h"

#include <pthread.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "cuda/coll.h"
#include "cuda/kernels.h"
#include "cuda/net_direct.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_ok;
static char probe_reason[160];
static cuda_driver_t drv;

/* ABI version of the driver functions we ask for (their signatures as of CUDA 12.0) */
#define CUDA_DRV_ABI 12000

static int load_entry(const char *name, void **fn)
{
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err =
        cudaGetDriverEntryPointByVersion(name, fn, CUDA_DRV_ABI, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        snprintf(probe_reason, sizeof(probe_reason), "driver entry point %s not found (%s)",
                 name, cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

static void probe(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);

    if (err != cudaSuccess || n <= 0) {
        snprintf(probe_reason, sizeof(probe_reason), "%s",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device");
        (void)cudaGetLastError();
        return;
    }
#define LOAD(field, sym)                                                                       \
    if (load_entry(#sym, (void **)&drv.field))                                                 \
        return;
    LOAD(get_error_string, cuGetErrorString)
    LOAD(device_get, cuDeviceGet)
    LOAD(device_get_attribute, cuDeviceGetAttribute)
    LOAD(pointer_get_attribute, cuPointerGetAttribute)
    LOAD(mem_get_allocation_granularity, cuMemGetAllocationGranularity)
    LOAD(mem_address_reserve, cuMemAddressReserve)
    LOAD(mem_address_free, cuMemAddressFree)
    LOAD(mem_create, cuMemCreate)
    LOAD(mem_release, cuMemRelease)
    LOAD(mem_map, cuMemMap)
    LOAD(mem_unmap, cuMemUnmap)
    LOAD(mem_set_access, cuMemSetAccess)
    LOAD(mem_export, cuMemExportToShareableHandle)
    LOAD(mem_import, cuMemImportFromShareableHandle)
    LOAD(stream_wait_value32, cuStreamWaitValue32)
    LOAD(stream_write_value32, cuStreamWriteValue32)
#undef LOAD
    probe_ok = true;
}

bool cuda_available(void)
{
    pthread_once(&probe_once, probe);
    return probe_ok;
}

const cuda_driver_t *cuda_driver(const char *what)
{
    if (cuda_available())
        return &drv;
    log_error("%s: CUDA is not usable on this machine (%s)", what, probe_reason);
    return NULL;
}

int cuda_hw_queues(void)
{
    const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    char *end;
    long n;

    if (!v || !*v)
        return 8;
    n = strtol(v, &end, 10);
    /* a value outside the documented 1-32 is taken as the default here */
    if (end == v || n < 1 || n > 32)
        return 8;
    return (int)n;
}

symcoll_status_t cuda_rt_error(int err, const char *call)
{
    log_error("%s failed: %s (%d)", call, cudaGetErrorString((cudaError_t)err), err);
    return SYMCOLL_ERR_CUDA;
}

symcoll_status_t cuda_drv_error(CUresult res, const char *call)
{
    const char *s = NULL;
    if (drv.get_error_string)
        drv.get_error_string(res, &s);
    log_error("%s failed: %s (%d)", call, s ? s : "unknown error", (int)res);
    return res == CUDA_ERROR_OUT_OF_MEMORY ? SYMCOLL_ERR_NO_MEMORY : SYMCOLL_ERR_CUDA;
}

int cuda_ptr_is_device(const void *ptr)
{
    unsigned int type = 0;

    if (!ptr || !cuda_available())
        return 0;
    /* a pointer query needs no context; host memory unknown to CUDA fails the query */
    if (drv.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ptr) !=
        CUDA_SUCCESS)
        return 0;
    return type == CU_MEMORYTYPE_DEVICE;
}

symcoll_status_t cuda_comm_device(const comm_t *comm, int *device_p)
{
    int dev;
    cudaError_t err;

    if (comm->cuda_device >= 0) {
        *device_p = comm->cuda_device;
        return SYMCOLL_OK;
    }
    err = cudaGetDevice(&dev);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "cudaGetDevice");
    *device_p = dev;
    return SYMCOLL_OK;
}

int cuda_device_identity(int dev, int *ordinal_p, char *pci, size_t pci_len, char *uuid,
                         size_t uuid_len, char *name, size_t name_len)
{
    struct cudaDeviceProp prop;
    const unsigned char *u;

    if (!cuda_available())
        return -1;
    if (dev < 0 && cudaGetDevice(&dev) != cudaSuccess)
        return -1;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess ||
        cudaDeviceGetPCIBusId(pci, (int)pci_len, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    u = (const unsigned char *)prop.uuid.bytes;
    snprintf(uuid, uuid_len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    snprintf(name, name_len, "%s", prop.name);
    *ordinal_p = dev;
    return 0;
}

int cuda_p2p_attributes(const char *pci_a, const char *pci_b, int *access_p, int *atomic_p,
                        int *perf_rank_p)
{
    int a, b;

    if (!cuda_available() || cudaDeviceGetByPCIBusId(&a, pci_a) != cudaSuccess ||
        cudaDeviceGetByPCIBusId(&b, pci_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    if (a == b) {
        *access_p = *atomic_p = 1;
        *perf_rank_p = 0;
        return 0;
    }
    if (cudaDeviceGetP2PAttribute(access_p, cudaDevP2PAttrAccessSupported, a, b) !=
            cudaSuccess ||
        cudaDeviceGetP2PAttribute(atomic_p, cudaDevP2PAttrNativeAtomicSupported, a, b) !=
            cudaSuccess ||
        cudaDeviceGetP2PAttribute(perf_rank_p, cudaDevP2PAttrPerformanceRank, a, b) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return 0;
}

symcoll_status_t cuda_kernels_load(int dev)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t loaded; /* bit d: device d's primary context has them */
    int prev = -1, err;

    if (dev >= 0 && dev < 64 && (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) >> dev & 1))
        return SYMCOLL_OK;
    pthread_mutex_lock(&lock);
    err = (int)cudaGetDevice(&prev);
    if (err == cudaSuccess && prev != dev)
        err = (int)cudaSetDevice(dev);
    if (err == cudaSuccess)
        err = cuda_ar_preload();
    if (err == cudaSuccess)
        err = cuda_coll_preload();
    if (err == cudaSuccess)
        err = cuda_net_reduce_preload();
    if (err == cudaSuccess && dev >= 0 && dev < 64)
        __atomic_or_fetch(&loaded, (uint64_t)1 << dev, __ATOMIC_RELEASE);
    /* the caller's thread keeps the device it had */
    if (prev >= 0 && prev != dev)
        (void)cudaSetDevice(prev);
    pthread_mutex_unlock(&lock);
    return err == cudaSuccess ? SYMCOLL_OK : cuda_rt_error(err, "loading the CUDA kernels");
}

symcoll_status_t cuda_stream_capturing(void *stream, bool *capturing_p)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing((cudaStream_t)stream, &st);

    /* the legacy stream while another thread captures in global mode: the call would
     * join (or break) that capture */
    if (err == cudaErrorStreamCaptureImplicit) {
        (void)cudaGetLastError();
        st = cudaStreamCaptureStatusActive;
    } else if (err != cudaSuccess) {
        return cuda_rt_error(err, "cudaStreamIsCapturing");
    }
    *capturing_p = st != cudaStreamCaptureStatusNone;
    return SYMCOLL_OK;
}

symcoll_status_t cuda_check_not_capturing(void *stream, const char *what)
{
    bool capturing = false;
    symcoll_status_t status = cuda_stream_capturing(stream, &capturing);

    if (status != SYMCOLL_OK)
        return status;
    if (capturing) {
        log_error("%s: the CUDA pool must grow, but the stream is being captured into a "
                  "graph and growth is a collective that cannot be captured; run the same "
                  "call once before capturing (warm-up) or pre-size the pool with "
                  "symcoll_mem_alloc",
                  what);
        return SYMCOLL_ERR_IN_PROGRESS;
    }
    return SYMCOLL_OK;
}

/* ---- abort words: comm -> host-mapped word, for symcoll_comm_abort ------------------ */

bool cuda_words_raise(cuda_words_t *w, uint32_t why)
{
    uint32_t none = CUDA_KERR_NONE;
    return __atomic_compare_exchange_n((uint32_t *)&w->host[CUDA_WORD_ABORT], &none, why, false,
                                       __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

typedef struct abort_entry {
    const comm_t *comm;
    volatile uint32_t *word;
} abort_entry_t;

static pthread_mutex_t abort_lock = PTHREAD_MUTEX_INITIALIZER;
static abort_entry_t *abort_tab;
static size_t abort_len, abort_cap;

symcoll_status_t cuda_words_create(comm_t *comm, cuda_words_t *w)
{
    void *host = NULL, *dev = NULL;
    cudaError_t err;
    symcoll_status_t status = SYMCOLL_OK;

    err = cudaHostAlloc(&host, CUDA_WORDS * sizeof(uint32_t),
                        cudaHostAllocMapped | cudaHostAllocPortable);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "cudaHostAlloc(abort word)");
    err = cudaHostGetDevicePointer(&dev, host, 0);
    if (err != cudaSuccess) {
        status = cuda_rt_error(err, "cudaHostGetDevicePointer");
        goto err_free;
    }
    for (int i = 0; i < CUDA_WORDS; i++)
        ((volatile uint32_t *)host)[i] = 0;
    ((volatile uint32_t *)host)[CUDA_WORD_ABORT] =
        atomic_load(&comm->aborted) ? CUDA_KERR_ABORTED : CUDA_KERR_NONE;

    pthread_mutex_lock(&abort_lock);
    if (abort_len == abort_cap) {
        size_t cap = abort_cap ? 2 * abort_cap : 4;
        abort_entry_t *t = realloc(abort_tab, cap * sizeof(*t));
        if (!t) {
            pthread_mutex_unlock(&abort_lock);
            status = SYMCOLL_ERR_NO_MEMORY;
            goto err_free;
        }
        abort_tab = t;
        abort_cap = cap;
    }
    abort_tab[abort_len].comm = comm;
    abort_tab[abort_len].word = (volatile uint32_t *)host;
    abort_len++;
    pthread_mutex_unlock(&abort_lock);
    w->host = (volatile uint32_t *)host;
    w->dev = (uint32_t *)dev;
    return SYMCOLL_OK;

err_free:
    cudaFreeHost(host);
    return status;
}

void cuda_words_destroy(comm_t *comm, cuda_words_t *w)
{
    if (!w->host)
        return;
    pthread_mutex_lock(&abort_lock);
    for (size_t i = 0; i < abort_len; i++) {
        if (abort_tab[i].word == w->host) {
            abort_tab[i] = abort_tab[--abort_len];
            break;
        }
    }
    pthread_mutex_unlock(&abort_lock);
    cudaFreeHost((void *)w->host);
    w->host = NULL;
    w->dev = NULL;
}

void cuda_abort_notify(comm_t *comm)
{
    pthread_mutex_lock(&abort_lock);
    for (size_t i = 0; i < abort_len; i++)
        if (abort_tab[i].comm == comm)
            __atomic_store_n(&abort_tab[i].word[CUDA_WORD_ABORT], CUDA_KERR_ABORTED,
                             __ATOMIC_RELEASE);
    pthread_mutex_unlock(&abort_lock);
}
