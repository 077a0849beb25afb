/* What keeps a communicator's CUDA memory alive while CUDA graphs that captured its calls
 * exist: a CUDA user object per captured call, owned by the capturing graph (and, by
 * CUDA's rules, by every executable graph made from it), counts the live graphs; the
 * communicator's release waits for the count to fall to zero on a thread of its own. */
#include "cuda/cuda.h"

#include <pthread.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "core/log.h"

struct cuda_keep {
    pthread_mutex_t lock;
    pthread_cond_t gone; /* signalled when graphs falls to 0 */
    int refs;            /* the owner's (until its release ran) + one per user object */
    int graphs;          /* user objects CUDA has not destroyed yet */
    int device;
    void (*release)(void *);
    void *arg;
};

cuda_keep_t *cuda_keep_create(void)
{
    cuda_keep_t *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    if (pthread_mutex_init(&k->lock, NULL)) {
        free(k);
        return NULL;
    }
    if (pthread_cond_init(&k->gone, NULL)) {
        pthread_mutex_destroy(&k->lock);
        free(k);
        return NULL;
    }
    k->refs = 1;
    return k;
}

/* Drops one reference, with k->lock held; frees k at the last. */
static void keep_unref_locked(cuda_keep_t *k)
{
    const bool last = --k->refs == 0;

    pthread_mutex_unlock(&k->lock);
    if (last) {
        pthread_cond_destroy(&k->gone);
        pthread_mutex_destroy(&k->lock);
        free(k);
    }
}

/* The user object's destructor, on CUDA's internal thread once no graph holds it and
 * their launches ended: no CUDA call here, and nothing that blocks for long. */
static void keep_graph_gone(void *arg)
{
    cuda_keep_t *k = arg;

    pthread_mutex_lock(&k->lock);
    if (--k->graphs == 0)
        pthread_cond_broadcast(&k->gone);
    keep_unref_locked(k);
}

symcoll_status_t cuda_keep_capture(cuda_keep_t *k, void *stream)
{
    enum cudaStreamCaptureStatus cst = cudaStreamCaptureStatusNone;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaGraph_t graph = NULL;
    cudaUserObject_t obj;
    cudaError_t err;

    /* CUDA 13 added the edge data argument to the one name; CUDA 12 has the form
     * without it under that name (and the edge form as _v3 from 12.3) */
#if CUDART_VERSION >= 13000
    err = cudaStreamGetCaptureInfo((cudaStream_t)stream, &cst, NULL, &graph, NULL, NULL, NULL);
#else
    err = cudaStreamGetCaptureInfo((cudaStream_t)stream, &cst, NULL, &graph, NULL, NULL);
#endif
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the call fails, not the next one */
        return cuda_rt_error(err, "cudaStreamGetCaptureInfo");
    }
    if (cst != cudaStreamCaptureStatusActive || !graph)
        return SYMCOLL_OK;

    pthread_mutex_lock(&k->lock);
    k->refs++;
    k->graphs++;
    pthread_mutex_unlock(&k->lock);
    /* neither call enqueues work; relaxed, so that a global-mode capture of another
     * thread does not count them as unsafe */
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    err = cudaUserObjectCreate(&obj, k, keep_graph_gone, 1, cudaUserObjectNoDestructorSync);
    if (err == cudaSuccess) {
        err = cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove);
        if (err != cudaSuccess) /* the reference is still ours: its release calls us */
            (void)cudaUserObjectRelease(obj, 1);
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
        return err == cudaSuccess ? SYMCOLL_OK
                                  : cuda_rt_error(err, "cudaGraphRetainUserObject");
    }
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    pthread_mutex_lock(&k->lock);
    k->graphs--;
    k->refs--; /* the owner's reference is still held: not the last */
    pthread_mutex_unlock(&k->lock);
    return cuda_rt_error(err, "cudaUserObjectCreate");
}

int cuda_keep_graphs(cuda_keep_t *k)
{
    int n;

    if (!k)
        return 0;
    pthread_mutex_lock(&k->lock);
    n = k->graphs;
    pthread_mutex_unlock(&k->lock);
    return n;
}

static void *keep_waiter(void *arg)
{
    cuda_keep_t *k = arg;

    pthread_mutex_lock(&k->lock);
    while (k->graphs > 0)
        pthread_cond_wait(&k->gone, &k->lock);
    pthread_mutex_unlock(&k->lock);
    /* the memory's device, for the driver calls of the release */
    (void)cudaSetDevice(k->device);
    log_info("the last CUDA graph that captured a destroyed communicator is gone: its CUDA "
             "memory is released");
    k->release(k->arg);
    pthread_mutex_lock(&k->lock);
    keep_unref_locked(k);
    return NULL;
}

bool cuda_keep_release(cuda_keep_t *k, int device, void (*release)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t thread;
    int rc;

    if (!k)
        return false;
    pthread_mutex_lock(&k->lock);
    if (k->graphs == 0 || !release) {
        keep_unref_locked(k);
        return false;
    }
    k->device = device;
    k->release = release;
    k->arg = arg;
    pthread_mutex_unlock(&k->lock);
    rc = pthread_attr_init(&attr);
    if (rc == 0) {
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&thread, &attr, keep_waiter, k);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        /* nothing may free the memory while a graph can still launch: it stays */
        log_warn("no thread to release a destroyed communicator's CUDA memory once its "
                 "graphs are gone (pthread_create: error %d): it stays mapped until exit",
                 rc);
        pthread_mutex_lock(&k->lock);
        keep_unref_locked(k);
    }
    return true;
}
