/* CUDA glue: the statically linked runtime, driver functions reached through
 * cudaGetDriverEntryPointByVersion (the library never links libcuda, so it loads on
 * machines without a driver), device-pointer detection and the abort words kernels poll. */
#ifndef SYMCOLL_CUDA_CUDA_H
#define SYMCOLL_CUDA_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "core/core.h"

/* Driver functions the library uses (only types come from cuda.h). */
typedef struct cuda_driver {
    __typeof__(cuGetErrorString) *get_error_string;
    __typeof__(cuDeviceGet) *device_get;
    __typeof__(cuDeviceGetAttribute) *device_get_attribute;
    __typeof__(cuPointerGetAttribute) *pointer_get_attribute;
    __typeof__(cuMemGetAllocationGranularity) *mem_get_allocation_granularity;
    __typeof__(cuMemAddressReserve) *mem_address_reserve;
    __typeof__(cuMemAddressFree) *mem_address_free;
    __typeof__(cuMemCreate) *mem_create;
    __typeof__(cuMemRelease) *mem_release;
    __typeof__(cuMemMap) *mem_map;
    __typeof__(cuMemUnmap) *mem_unmap;
    __typeof__(cuMemSetAccess) *mem_set_access;
    __typeof__(cuMemExportToShareableHandle) *mem_export;
    __typeof__(cuMemImportFromShareableHandle) *mem_import;
    __typeof__(cuStreamWaitValue32) *stream_wait_value32;
    __typeof__(cuStreamWriteValue32) *stream_write_value32;
} cuda_driver_t;

/* True when a CUDA driver and at least one device are present. Probed once; the reason
 * it is not is logged at info level. */
bool cuda_available(void);

/* The driver table, or NULL (and an error logged, naming what) when CUDA is unavailable. */
const cuda_driver_t *cuda_driver(const char *what);

/* Log a failed runtime (cudaError_t) or driver (CUresult) call; return SYMCOLL_ERR_CUDA. */
symcoll_status_t cuda_rt_error(int err, const char *call);
symcoll_status_t cuda_drv_error(CUresult res, const char *call);

/* The hardware work queues per device that this process's streams share: the value of
 * CUDA_DEVICE_MAX_CONNECTIONS (1 to 32) as the driver reads it when it creates the
 * context, else its default, 8 (CUDA C++ Programming Guide, environment variables). Two
 * streams on one queue run their commands in order with each other. */
int cuda_hw_queues(void);

/* Non-zero if ptr is device (or managed) memory. Never creates a CUDA context; 0 when
 * CUDA is unavailable. (The algorithm layer refers to it weakly.) */
int cuda_ptr_is_device(const void *ptr);

/* Device that CUDA memory of comm lives on: comm->cuda_device or the current one. */
symcoll_status_t cuda_comm_device(const comm_t *comm, int *device_p);

/* Identity of CUDA device dev (-1: the current one) for the topology probe: ordinal,
 * PCI bus id, UUID ("GPU-..."), name. Returns 0, or -1 when CUDA is unavailable. */
int cuda_device_identity(int dev, int *ordinal_p, char *pci, size_t pci_len, char *uuid,
                         size_t uuid_len, char *name, size_t name_len);

/* CUDA peer attributes between the devices with PCI bus ids a and b, both visible to this
 * process: access supported, native atomics, performance rank. -1 if either is not. */
int cuda_p2p_attributes(const char *pci_a, const char *pci_b, int *access_p, int *atomic_p,
                        int *perf_rank_p);

/* *capturing_p: stream (cudaStream_t) is being captured into a graph (for the legacy
 * stream also: another thread captures in global mode). */
symcoll_status_t cuda_stream_capturing(void *stream, bool *capturing_p);

/* SYMCOLL_ERR_IN_PROGRESS (logged) if stream (cudaStream_t) is being captured. */
symcoll_status_t cuda_check_not_capturing(void *stream, const char *what);

/* Loads every kernel of the library into device dev's primary context (the one the
 * runtime API uses), once per device and process; the caller's current device stays.
 * CUDA loads a kernel at its first launch by default (lazy loading), and that load may
 * wait for the context's queued work while it holds the driver's lock. A stream of this
 * library may be parked in a kernel that waits for a channel thread, or for a peer process
 * whose own first launch waits the same way; the channel calls the driver (through UCX
 * too), so a load in the middle of a call can wait forever (a hierarchical call across
 * nodes stalled so on a GPU that served several ranks). Called where a communicator sets
 * up its CUDA paths, before any call is queued. A context the caller destroys
 * (cudaDeviceReset) takes the kernels with it, and they are not loaded again: after
 * that, first launches are lazy. */
symcoll_status_t cuda_kernels_load(int dev);

/* Host-mapped words of a communicator's kernels (CUDA_WORD_* in cuda/kernels.h): the
 * abort word, a CUDA_KERR_* reason the kernels stop for (ABORTED from
 * symcoll_comm_abort through cuda_abort_notify, PEER from the watcher of the local
 * peers), the error a kernel left (CUDA_KERR_*) and what a kernel that saw other
 * arguments recorded. */
typedef struct cuda_words {
    volatile uint32_t *host; /* host view, CUDA_WORDS words */
    uint32_t *dev;           /* device view */
} cuda_words_t;
symcoll_status_t cuda_words_create(comm_t *comm, cuda_words_t *w);
void cuda_words_destroy(comm_t *comm, cuda_words_t *w);

/* Sets the abort word to why unless it holds a reason already (any thread); true if it
 * did. */
bool cuda_words_raise(cuda_words_t *w, uint32_t why);

/* Called by symcoll_comm_abort (any thread): raise the abort word of comm's kernels. */
void cuda_abort_notify(comm_t *comm);

/* Live CUDA graphs that captured a communicator's calls (graph_keep.c). */
typedef struct cuda_keep cuda_keep_t;
cuda_keep_t *cuda_keep_create(void);
/* If stream (cudaStream_t) is being captured, the graph it records into holds k until
 * that graph and every executable graph made from it are destroyed and their launches
 * ended. Legal during any capture mode. */
symcoll_status_t cuda_keep_capture(cuda_keep_t *k, void *stream);
/* How many captured calls are held by live graphs now (0 for NULL). */
int cuda_keep_graphs(cuda_keep_t *k);
/* The owner lets go of k. With no live graph or no release: returns false, and k is no
 * longer the owner's. Else returns
 * true, and release(arg) runs once the last graph is gone, on a thread of the library's
 * with device current (if no thread can start, never: the memory then stays). */
bool cuda_keep_release(cuda_keep_t *k, int device, void (*release)(void *), void *arg);

#endif
