/* The reduction kernel of the direct path of CUDA memory across nodes (net_direct.h):
 * a grid-stride loop, 16-byte vectors where every pointer allows, accumulating as the
 * intra-node kernels do (integers in 64 bits with wrap-around, half types in float). */
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "symcoll.h"
#include "cuda/kernel_common.cuh"
#include "cuda/net_direct.h"

namespace
{

constexpr int THREADS = 512;
constexpr int MAX_BLOCKS = 264; /* two waves of 132 SMs */

/* element traits, operators and 16-byte vectors as the kernels inside a node have them */
using symcoll_k::apply;
using symcoll_k::Tr;
using symcoll_k::Vec;

template <typename T, int OP>
__global__ void __launch_bounds__(THREADS) k_reduce(const cuda_net_reduce_args_t a)
{
    typedef typename Tr<T>::A A;
    constexpr int V = 16 / sizeof(T);
    const size_t stride = (size_t)gridDim.x * THREADS;
    const size_t tid = (size_t)blockIdx.x * THREADS + threadIdx.x;
    size_t nvec = 0;
    uintptr_t align = (uintptr_t)a.dst;
    const A div = (A)a.divisor;

    for (int q = 0; q < a.nsrc; q++)
        align |= (uintptr_t)a.src[q];
    if ((align & 15) == 0) {
        nvec = a.count / V;
        for (size_t v = tid; v < nvec; v += stride) {
            Vec<T> in[CUDA_NET_REDUCE_MAX], out;
            for (int q = 0; q < a.nsrc; q++)
                in[q].u = ((const uint4 *)a.src[q])[v];
#pragma unroll
            for (int k = 0; k < V; k++) {
                A x[CUDA_NET_REDUCE_MAX], s;
                for (int q = 0; q < a.nsrc; q++)
                    x[q] = Tr<T>::in(in[q].e[k]);
                /* the canonical tree of the sources (rank order), as the host's */
                s = symcoll_k::tree_acc<T, OP>(x, a.nsrc);
                out.e[k] = Tr<T>::out(OP == SYMCOLL_AVG ? s / div : s);
            }
            ((uint4 *)a.dst)[v] = out.u;
        }
    }
    for (size_t i = nvec * V + tid; i < a.count; i += stride) {
        A x[CUDA_NET_REDUCE_MAX], s;
        for (int q = 0; q < a.nsrc; q++)
            x[q] = Tr<T>::in(((const T *)a.src[q])[i]);
        s = symcoll_k::tree_acc<T, OP>(x, a.nsrc);
        ((T *)a.dst)[i] = Tr<T>::out(OP == SYMCOLL_AVG ? s / div : s);
    }
}

__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* one thread until *word reaches value (32-bit wrap-safe, as CU_STREAM_WAIT_VALUE_GEQ) or
 * a rank of the node raises its node word (it gave up: what follows is undefined) */
__global__ void k_wait(const unsigned *word, unsigned value, const unsigned *node_word)
{
    while ((int)(ld_acquire_sys(word) - value) < 0) {
        if (node_word && ld_acquire_sys(node_word))
            return;
        __nanosleep(1000);
    }
}

typedef void (*kernel_fn)(const cuda_net_reduce_args_t);

template <typename T> kernel_fn for_op(int op)
{
    switch (op) {
    case SYMCOLL_SUM:
        return k_reduce<T, SYMCOLL_SUM>;
    case SYMCOLL_PROD:
        return k_reduce<T, SYMCOLL_PROD>;
    case SYMCOLL_MIN:
        return k_reduce<T, SYMCOLL_MIN>;
    case SYMCOLL_MAX:
        return k_reduce<T, SYMCOLL_MAX>;
    case SYMCOLL_AVG:
        return k_reduce<T, SYMCOLL_AVG>;
    default:
        return nullptr;
    }
}

kernel_fn kernel_for(int dtype, int op)
{
    switch (dtype) {
    case SYMCOLL_INT8:
        return for_op<int8_t>(op);
    case SYMCOLL_UINT8:
        return for_op<uint8_t>(op);
    case SYMCOLL_INT32:
        return for_op<int32_t>(op);
    case SYMCOLL_UINT32:
        return for_op<uint32_t>(op);
    case SYMCOLL_INT64:
        return for_op<int64_t>(op);
    case SYMCOLL_UINT64:
        return for_op<uint64_t>(op);
    case SYMCOLL_FLOAT16:
        return for_op<__half>(op);
    case SYMCOLL_BFLOAT16:
        return for_op<__nv_bfloat16>(op);
    case SYMCOLL_FLOAT32:
        return for_op<float>(op);
    case SYMCOLL_FLOAT64:
        return for_op<double>(op);
    default:
        return nullptr;
    }
}

} // namespace

extern "C" int cuda_net_reduce_launch(const cuda_net_reduce_args_t *args, void *stream)
{
    kernel_fn k = kernel_for(args->dtype, args->op);
    size_t blocks = (args->count + (size_t)THREADS * 8 - 1) / ((size_t)THREADS * 8);

    if (!k || args->nsrc < 1 || args->nsrc > CUDA_NET_REDUCE_MAX || args->divisor < 1)
        return (int)cudaErrorInvalidValue;
    if (args->count == 0)
        return (int)cudaSuccess;
    blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
    k<<<(unsigned)blocks, THREADS, 0, (cudaStream_t)stream>>>(*args);
    return (int)cudaGetLastError();
}

extern "C" int cuda_net_wait_launch(const void *word, unsigned value, const void *node_word,
                                    void *stream)
{
    k_wait<<<1, 1, 0, (cudaStream_t)stream>>>((const unsigned *)word, value,
                                              (const unsigned *)node_word);
    return (int)cudaGetLastError();
}

extern "C" int cuda_net_reduce_preload(void)
{
    cudaFuncAttributes wattr;
    cudaError_t werr = cudaFuncGetAttributes(&wattr, (const void *)k_wait);

    if (werr != cudaSuccess)
        return (int)werr;
    for (int t = SYMCOLL_INT8; t <= SYMCOLL_FLOAT64; t++)
        for (int op = SYMCOLL_SUM; op <= SYMCOLL_AVG; op++) {
            kernel_fn k = kernel_for(t, op);
            cudaFuncAttributes attr;
            cudaError_t err;

            if (!k)
                continue;
            /* asking for a kernel's attributes loads it */
            err = cudaFuncGetAttributes(&attr, (const void *)k);
            if (err != cudaSuccess)
                return (int)err;
        }
    return (int)cudaSuccess;
}
