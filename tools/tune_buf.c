/* symcoll_tune's buffers (see tune_buf.h). */
#define _GNU_SOURCE
#include "symcoll_config.h"

#include "tune_buf.h"

#include "local_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif

static void fill_host(float *p, size_t elems, int rank)
{
    for (size_t i = 0; i < elems; i++)
        p[i] = (float)(rank + 1);
}

int tune_buf_cuda_built(void)
{
#ifdef HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

#ifdef HAVE_CUDA
static int cuda_failed(const char *what, cudaError_t e)
{
    fprintf(stderr, "symcoll_tune: %s: %s\n", what, cudaGetErrorString(e));
    return -1;
}

/* the rank on this node if the launcher says it, else the global rank (as symcoll_perf) */
int tune_buf_device(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);

    if (e != cudaSuccess || ndev == 0) {
        fprintf(stderr, "symcoll_tune: --mem cuda: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    if ((e = cudaSetDevice(tools_local_rank() % ndev)) != cudaSuccess)
        return cuda_failed("cudaSetDevice", e);
    return 0;
}

static int cuda_setup(tune_buf_t *b)
{
    cudaStream_t s;
    cudaError_t e;

    if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_failed("cudaStreamCreate", e);
    b->stream = s;
    if ((e = cudaMalloc((void **)&b->in, b->bytes)) != cudaSuccess ||
        (e = cudaMalloc((void **)&b->out, b->bytes)) != cudaSuccess)
        return cuda_failed("cudaMalloc", e);
    b->hin = malloc(b->bytes);
    b->hout = malloc(b->bytes);
    if (!b->hin || !b->hout) {
        fprintf(stderr, "symcoll_tune: out of memory for %zu-byte host copies\n", b->bytes);
        return -1;
    }
    return 0;
}
#else
int tune_buf_device(void)
{
    fprintf(stderr, "symcoll_tune: --mem cuda: this build has no CUDA (configure "
                    "--with-cuda)\n");
    return -1;
}
#endif

int tune_buf_setup(tune_buf_t *b, symcoll_mem_type_t mem, size_t bytes)
{
    memset(b, 0, sizeof(*b));
    b->mem = mem;
    b->bytes = (bytes + 63) / 64 * 64;
    if (mem == SYMCOLL_MEM_CUDA) {
#ifdef HAVE_CUDA
        return cuda_setup(b);
#else
        fprintf(stderr, "symcoll_tune: --mem cuda: this build has no CUDA (configure "
                        "--with-cuda)\n");
        return -1;
#endif
    }
    /* plain memory, as most callers pass (symcoll_perf's default): a pool buffer needs no
     * copy in, and the fastest algorithm can differ */
    b->in = b->hin = aligned_alloc(64, b->bytes);
    b->out = b->hout = aligned_alloc(64, b->bytes);
    if (!b->in || !b->out) {
        fprintf(stderr, "symcoll_tune: out of memory for %zu-byte buffers\n", b->bytes);
        return -1;
    }
    return 0;
}

int tune_buf_fill(tune_buf_t *b, size_t elems, int rank)
{
    fill_host(b->hin, elems, rank);
#ifdef HAVE_CUDA
    if (b->mem == SYMCOLL_MEM_CUDA) {
        cudaError_t e = cudaMemcpyAsync(b->in, b->hin, elems * sizeof(float),
                                        cudaMemcpyHostToDevice, (cudaStream_t)b->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize((cudaStream_t)b->stream);
        if (e != cudaSuccess)
            return cuda_failed("filling the device buffer", e);
    }
#endif
    return 0;
}

int tune_buf_sync(tune_buf_t *b)
{
#ifdef HAVE_CUDA
    if (b->mem == SYMCOLL_MEM_CUDA) {
        cudaError_t e = cudaStreamSynchronize((cudaStream_t)b->stream);
        if (e != cudaSuccess)
            return cuda_failed("cudaStreamSynchronize", e);
    }
#endif
    (void)b;
    return 0;
}

int tune_buf_fetch(tune_buf_t *b, size_t elems)
{
#ifdef HAVE_CUDA
    if (b->mem == SYMCOLL_MEM_CUDA) {
        cudaStream_t s = (cudaStream_t)b->stream;
        size_t len = elems * sizeof(float);
        cudaError_t e = cudaMemcpyAsync(b->hin, b->in, len, cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(b->hout, b->out, len, cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s);
        if (e != cudaSuccess)
            return cuda_failed("reading the device buffers", e);
    }
#endif
    (void)b, (void)elems;
    return 0;
}

void tune_buf_free(tune_buf_t *b)
{
#ifdef HAVE_CUDA
    if (b->mem == SYMCOLL_MEM_CUDA) {
        cudaFree(b->in);
        cudaFree(b->out);
        free(b->hin);
        free(b->hout);
        if (b->stream)
            cudaStreamDestroy((cudaStream_t)b->stream);
        memset(b, 0, sizeof(*b));
        return;
    }
#endif
    free(b->in);
    free(b->out);
    memset(b, 0, sizeof(*b));
}
