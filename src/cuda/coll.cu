/* Reduce-scatter, all-gather and broadcast kernels for the GPUs of one node that map each
 * other's pool (CUDA VMM), behind the C entry point cuda_coll_launch(). */
/*
 * Both kinds share the all-reduce's synchronisation (kernel_common.cuh): the same call
 * headers and signatures (with the collective and root), epochs, barriers, bounded waits
 * and "gave up" words, so that they interleave with the all-reduce kernels on one pool.
 *
 * One-shot (small messages; the all-reduce one-shot's staging, flags, epochs and grid):
 *   every source pushes what a peer needs into that peer's staging (parity e & 1, the
 *   slot of the source) chunk by chunk, raises its flag for the chunk, and consumes the
 *   previous chunk once every peer's flag reached it, exactly as the all-reduce one-shot:
 *   - reduce-scatter: block p of the input goes to peer p; each rank reduces its own
 *     block from its input and the peers' slots;
 *   - all-gather: the input goes to every peer; each rank copies every slot to its block;
 *   - broadcast: the root's input goes to every peer; the others push nothing but still
 *     raise their flags, so that every launch waits for every peer.
 *   Every launch waits for every peer, and a chunk's staging position depends on the
 *   element index only (chunk k always belongs to block k % G), so the all-reduce's
 *   parity argument holds: a block writes a parity again two of its epochs later only,
 *   after the launch in between waited for the peer, whose launch had finished reading.
 *
 * Two-shot (large messages; the all-reduce two-shot's flags, epochs and grid, none of its
 *   staging): every rank's source stays where it is if it lies in the pool (else the rank
 *   copies it into its own collectives' staging first), the start barrier publishes where
 *   (pool offset + 1 in the info word, checked with the signature in every block), every
 *   rank reads what it needs straight from the peers' pools, and an end barrier keeps
 *   every source unchanged until every peer has read it:
 *   - reduce-scatter: each rank reduces its own block from every rank's source;
 *   - all-gather: each rank copies every peer's block;
 *   - broadcast: every rank copies from the root's source.
 *   A block copies into its staging exactly the 16-byte positions (and block 0 the tail
 *   elements) that the same block of the peers reads after the start barrier, which the
 *   block's flag releases. A source is written again only by a later launch, after this
 *   launch's end barrier saw every peer's every block past its reads.
 *
 * Positions: 16-byte vectors where a buffer is 16-byte aligned, else element by element
 * (every rank decides for its own pointers only; the positions do not depend on it);
 * the last count % (16 / size) elements of a block go through block 0 one a thread.
 * Reductions run in rank order (float32 for the half types), as the all-reduce's.
 */
#include "cuda/coll.h"
#include "cuda/kernel_common.cuh"
#include "cuda/sig.h"

namespace
{

using namespace symcoll_k;

#define COLL_ONESHOT_UNROLL 2 /* vectors per thread per chunk (as the all-reduce one-shot) */
#define COLL_COPY_UNROLL 4    /* vectors a thread has in flight in the two-shot's copies */

/* unsigned integer of S bytes: how the copying collectives see an element */
template <int S> struct Elem;
template <> struct Elem<1> {
    typedef unsigned char t;
};
template <> struct Elem<2> {
    typedef unsigned short t;
};
template <> struct Elem<4> {
    typedef unsigned int t;
};
template <> struct Elem<8> {
    typedef unsigned long long t;
};

/* 16 bytes at p (another GPU's memory, or written by one: bypass L1), in one access if p
 * is 16-byte aligned (al), else element by element */
template <typename T> __device__ __forceinline__ uint4 ld16(const char *p, bool al)
{
    typedef typename Elem<sizeof(T)>::t E;
    union {
        uint4 u;
        E e[16 / sizeof(T)];
    } v;
    if (al)
        return __ldcg((const uint4 *)p);
#pragma unroll
    for (int k = 0; k < 16 / (int)sizeof(T); k++)
        v.e[k] = __ldcg((const E *)p + k);
    return v.u;
}

template <typename T> __device__ __forceinline__ void st16(char *p, uint4 u, bool al)
{
    typedef typename Elem<sizeof(T)>::t E;
    union {
        uint4 u;
        E e[16 / sizeof(T)];
    } v;
    if (al) {
        *(uint4 *)p = u;
        return;
    }
    v.u = u;
#pragma unroll
    for (int k = 0; k < 16 / (int)sizeof(T); k++)
        ((E *)p)[k] = v.e[k];
}

/* element i of a buffer of T, as its bits */
template <typename T>
__device__ __forceinline__ typename Elem<sizeof(T)>::t ld1(const char *p, size_t i)
{
    typedef typename Elem<sizeof(T)>::t E;
    return __ldcg((const E *)p + i);
}
template <typename T>
__device__ __forceinline__ void st1(char *p, size_t i, typename Elem<sizeof(T)>::t x)
{
    ((typename Elem<sizeof(T)>::t *)p)[i] = x;
}

/* ---- one-shot ------------------------------------------------------------------- */

/* Pushes vectors [c0, c0 + U * blockDim.x) (those below nvec) of src into dst of peer p
 * (every peer but this rank where p < 0). */
template <typename T>
__device__ __forceinline__ void push_chunk(const cuda_ar_args_t &a, const char *src, size_t c0,
                                           size_t nvec, size_t dst_off, int p)
{
    constexpr int U = COLL_ONESHOT_UNROLL;
    const bool al = al16(src);
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = c0 + (size_t)u * blockDim.x + threadIdx.x;
        if (i < nvec)
            v[u] = ld16<T>(src + i * 16, al);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = c0 + (size_t)u * blockDim.x + threadIdx.x;
        if (i < nvec) {
#pragma unroll
            for (int q = 0; q < MAXR; q++)
                if (q < a.nranks && q != a.rank && (p < 0 || q == p))
                    st_v(a.stage[q] + dst_off + i * 16, v[u]);
        }
    }
}

/* Copies vectors [c0, c0 + U * blockDim.x) (those below nvec) of src to dst. */
template <typename T>
__device__ __forceinline__ void copy_chunk(char *dst, const char *src, size_t c0, size_t nvec)
{
    constexpr int U = COLL_ONESHOT_UNROLL;
    const bool sal = al16(src), dal = al16(dst);
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = c0 + (size_t)u * blockDim.x + threadIdx.x;
        if (i < nvec)
            v[u] = ld16<T>(src + i * 16, sal);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const size_t i = c0 + (size_t)u * blockDim.x + threadIdx.x;
        if (i < nvec)
            st16<T>(dst + i * 16, v[u], dal);
    }
}

template <int COLL, typename T, int OP>
__global__ void __launch_bounds__(CUDA_AR_THREADS, 1) k_coll_oneshot(const cuda_coll_args_t ca)
{
    constexpr int V = 16 / sizeof(T);
    constexpr int U = COLL_ONESHOT_UNROLL;
    const cuda_ar_args_t &a = ca.ar;
    __shared__ uint32_t s_e, s_seq;
    __shared__ int s_fail;
    const int n = a.nranks, r = a.rank, t = threadIdx.x, b = blockIdx.x, G = gridDim.x;
    const int root = ca.root;
    const size_t nvec = a.count / V;
    const int tail = (int)(a.count - nvec * V);
    const size_t B = a.count * sizeof(T); /* bytes of a rank's block */
    const char *send = (const char *)a.send;
    char *recv = (char *)a.recv;
    const size_t chv = (size_t)blockDim.x * U; /* vectors per chunk */
    const size_t nchunks_all = (nvec + chv - 1) / chv;
    /* chunks of this block: b, b + G, ...; block 0 also carries the tail */
    size_t nch = nchunks_all > (size_t)b ? (nchunks_all - b + G - 1) / G : 0;
    if (b == 0 && tail && nch == 0)
        nch = 1;
    if (nch == 0)
        return;
    /* block 0 always has a chunk, so every launch counts the call */
    const uint32_t e = next_epoch(a, CUDA_AR_ONESHOT, &s_e, &s_seq, &s_fail);
    const size_t slot = a.stage_slot;
    const size_t par = (size_t)(e & 1) * n * slot;
    const size_t own = par + r * slot;
    const char *mine = a.stage[r] + par;
    const uint32_t base = e << 16;
    const size_t tail_at = nvec * V; /* first tail element of a block */

    for (size_t k = 0; k <= nch; k++) {
        if (k < nch) {
            /* push chunk k */
            const size_t c0 = ((size_t)k * G + b) * chv;
            if (COLL == CUDA_AR_COLL_REDUCE_SCATTER) {
#pragma unroll 1
                for (int p = 0; p < n; p++)
                    if (p != r)
                        push_chunk<T>(a, send + p * B, c0, nvec, own, p);
            } else if (COLL == CUDA_AR_COLL_ALLGATHER || r == root) {
                push_chunk<T>(a, send, c0, nvec, own, -1);
            }
            if (k == 0 && b == 0 && t < tail) {
                /* the last 16 bytes of the slot */
                const size_t at = own + slot - 16;
#pragma unroll
                for (int p = 0; p < MAXR; p++) {
                    if (p >= n || p == r)
                        continue;
                    if (COLL == CUDA_AR_COLL_REDUCE_SCATTER)
                        st1<T>(a.stage[p] + at, t, ld1<T>(send + p * B, tail_at + t));
                    else if (COLL == CUDA_AR_COLL_ALLGATHER || r == root)
                        st1<T>(a.stage[p] + at, t, ld1<T>(send, tail_at + t));
                }
            }
            __syncthreads();
            /* cumulative release: covers the whole block's pushes of this chunk */
            if (t < n && t != r)
                st_release_sys(a.pad[t] + CUDA_PAD_FLAG(CUDA_AR_ONESHOT, CUDA_BAR_START, b, r),
                               base | (uint32_t)(k + 1));
        }
        if (k == 0)
            continue;
        /* consume chunk k - 1 once every peer pushed it */
        if (!flags_wait(a, base | (uint32_t)k, k == 1 ? s_seq : 0, &s_fail))
            return;
        const size_t c0 = ((size_t)(k - 1) * G + b) * chv;
        if (COLL == CUDA_AR_COLL_REDUCE_SCATTER) {
            const char *in = send + r * B;
            const bool sal = al16(in), ral = al16(recv);
            /* one vector at a time: every source's load of it is in flight at once */
#pragma unroll 1
            for (int u = 0; u < U; u++) {
                const size_t i = c0 + (size_t)u * blockDim.x + t;
                if (i >= nvec)
                    continue;
                uint4 v[MAXR];
#pragma unroll
                for (int q = 0; q < MAXR; q++)
                    if (q < n)
                        v[q] = q == r ? ld16<T>(in + i * 16, sal)
                                      : ld_cg(mine + q * slot + i * 16);
                st16<T>(recv + i * 16, reduce_vec<T, OP>(v, n), ral);
            }
            if (k == 1 && b == 0 && t < tail) {
                const T *src[MAXR];
#pragma unroll
                for (int q = 0; q < MAXR; q++)
                    src[q] = q == r || q >= n ? (const T *)in + tail_at + t
                                              : (const T *)(mine + (q + 1) * slot - 16) + t;
                ((T *)recv)[tail_at + t] = reduce_elem<T, OP>(src, n);
            }
        } else {
#pragma unroll 1
            for (int q = 0; q < n; q++) {
                /* all-gather: block q of the output; broadcast: the output, from the root */
                if (COLL == CUDA_AR_COLL_BROADCAST && q != root)
                    continue;
                char *out = COLL == CUDA_AR_COLL_ALLGATHER ? recv + q * B : recv;
                const char *in = q == r ? send : mine + q * slot;
                if (out == in)
                    continue; /* in place */
                copy_chunk<T>(out, in, c0, nvec);
                if (k == 1 && b == 0 && t < tail)
                    st1<T>(out, tail_at + t,
                           q == r ? ld1<T>(send, tail_at + t) : ld1<T>(in + slot - 16, t));
            }
        }
    }
}

/* ---- two-shot ------------------------------------------------------------------- */

/* Block-strided copy of nvec vectors and (block 0) tail elements from src to dst; the
 * positions a block handles depend on the element index only. */
template <typename T>
__device__ __forceinline__ void copy_range(char *dst, const char *src, size_t nvec, int tail)
{
    constexpr int U = COLL_COPY_UNROLL;
    constexpr int V = 16 / sizeof(T);
    const bool sal = al16(src), dal = al16(dst);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    for (; j + (U - 1) * stride < nvec; j += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = ld16<T>(src + (j + u * stride) * 16, sal);
#pragma unroll
        for (int u = 0; u < U; u++)
            st16<T>(dst + (j + u * stride) * 16, v[u], dal);
    }
    for (; j < nvec; j += stride)
        st16<T>(dst + j * 16, ld16<T>(src + j * 16, sal), dal);
    if (blockIdx.x == 0 && (int)threadIdx.x < tail)
        st1<T>(dst, nvec * V + threadIdx.x, ld1<T>(src, nvec * V + threadIdx.x));
}

/* one vector j of the own block of a reduce-scatter */
template <typename T, int OP>
__device__ __forceinline__ void rs_vec(const cuda_ar_args_t &a, const char *const *src,
                                       const bool *sal, char *recv, bool ral, size_t j)
{
    uint4 v[MAXR];
#pragma unroll
    for (int q = 0; q < MAXR; q++)
        if (q < a.nranks)
            v[q] = ld16<T>(src[q] + j * 16, sal[q]);
    st16<T>(recv + j * 16, reduce_vec<T, OP>(v, a.nranks), ral);
}

template <int COLL, typename T, int OP>
__global__ void __launch_bounds__(CUDA_AR_THREADS, 1) k_coll_twoshot(const cuda_coll_args_t ca)
{
    constexpr int V = 16 / sizeof(T);
    const cuda_ar_args_t &a = ca.ar;
    __shared__ uint32_t s_e, s_seq;
    __shared__ int s_fail;
    const int n = a.nranks, r = a.rank, t = threadIdx.x, root = ca.root;
    const uint32_t e = next_epoch(a, CUDA_AR_TWOSHOT, &s_e, &s_seq, &s_fail);
    const size_t nvec = a.count / V;
    const int tail = (int)(a.count - nvec * V);
    const size_t B = a.count * sizeof(T);
    const char *send = (const char *)a.send;
    char *recv = (char *)a.recv;

    /* 1. a source outside the pool goes to the own staging, where the peers read it */
    if (ca.stage_src) {
        char *stg = a.stage[r];
        if (COLL == CUDA_AR_COLL_REDUCE_SCATTER) {
#pragma unroll 1
            for (int p = 0; p < n; p++)
                if (p != r)
                    copy_range<T>(stg + p * B, send + p * B, nvec, tail);
        } else if (COLL == CUDA_AR_COLL_ALLGATHER || r == root) {
            copy_range<T>(stg, send, nvec, tail);
        }
    }
    /* 2. start barrier: every rank publishes where its source lies, block 0 checks the
     * call headers and every block the signatures */
    if (!barrier(a, CUDA_AR_TWOSHOT, CUDA_BAR_START, e, true, s_seq, &s_fail))
        return;

    /* 3. read the peers' sources (the own one from the send buffer) */
    const char *src[MAXR];
#pragma unroll
    for (int q = 0; q < MAXR; q++) {
        src[q] = nullptr;
        if (q < n && q != r) {
            const uint64_t info = *(const volatile uint64_t *)((const uint64_t *)a.pad[r] +
                                                               CUDA_PAD_INFO64(blockIdx.x, q));
            src[q] = info ? a.pool_base[q] + (info - 1) : nullptr;
        }
    }
    src[r] = send;
    if (COLL == CUDA_AR_COLL_REDUCE_SCATTER) {
        bool sal[MAXR];
        const bool ral = al16(recv);
        bool ok = true;
#pragma unroll
        for (int q = 0; q < MAXR; q++) {
            sal[q] = true;
            if (q < n) {
                /* block r of every rank's source */
                ok = ok && src[q];
                if (src[q]) {
                    src[q] += r * B;
                    sal[q] = al16(src[q]);
                }
            }
        }
        if (ok) {
            const size_t stride = (size_t)gridDim.x * blockDim.x;
            size_t j = (size_t)blockIdx.x * blockDim.x + t;
            for (; j + stride < nvec; j += 2 * stride) {
                rs_vec<T, OP>(a, src, sal, recv, ral, j);
                rs_vec<T, OP>(a, src, sal, recv, ral, j + stride);
            }
            if (j < nvec)
                rs_vec<T, OP>(a, src, sal, recv, ral, j);
            if (blockIdx.x == 0 && t < tail) {
                const T *el[MAXR];
#pragma unroll
                for (int q = 0; q < MAXR; q++)
                    el[q] = (const T *)src[q < n ? q : r] + nvec * V + t;
                ((T *)recv)[nvec * V + t] = reduce_elem<T, OP>(el, n);
            }
        }
    } else {
#pragma unroll 1
        for (int q = 0; q < n; q++) {
            if (COLL == CUDA_AR_COLL_BROADCAST && q != root)
                continue;
            char *out = COLL == CUDA_AR_COLL_ALLGATHER ? recv + q * B : recv;
            if (src[q] && src[q] != out)
                copy_range<T>(out, src[q], nvec, tail);
        }
    }

    /* 4. end barrier: no rank changes its source before every peer has read it */
    barrier(a, CUDA_AR_TWOSHOT, CUDA_BAR_END, e, false, 0, &s_fail);
}

/* ---- dispatch ------------------------------------------------------------------- */

typedef void (*kernel_fn)(const cuda_coll_args_t);

template <int COLL, typename T, int OP> kernel_fn pick(int algo)
{
    return algo == CUDA_AR_ONESHOT ? k_coll_oneshot<COLL, T, OP> : k_coll_twoshot<COLL, T, OP>;
}

template <typename T> kernel_fn rs_for(int algo, int op)
{
    switch (op) {
    case SYMCOLL_SUM:
        return pick<CUDA_AR_COLL_REDUCE_SCATTER, T, SYMCOLL_SUM>(algo);
    case SYMCOLL_PROD:
        return pick<CUDA_AR_COLL_REDUCE_SCATTER, T, SYMCOLL_PROD>(algo);
    case SYMCOLL_MIN:
        return pick<CUDA_AR_COLL_REDUCE_SCATTER, T, SYMCOLL_MIN>(algo);
    case SYMCOLL_MAX:
        return pick<CUDA_AR_COLL_REDUCE_SCATTER, T, SYMCOLL_MAX>(algo);
    case SYMCOLL_AVG:
        return pick<CUDA_AR_COLL_REDUCE_SCATTER, T, SYMCOLL_AVG>(algo);
    default:
        return nullptr;
    }
}

/* the copying collectives see elements as unsigned integers of their size */
template <int COLL> kernel_fn copy_for(int algo, size_t esize)
{
    switch (esize) {
    case 1:
        return pick<COLL, unsigned char, SYMCOLL_SUM>(algo);
    case 2:
        return pick<COLL, unsigned short, SYMCOLL_SUM>(algo);
    case 4:
        return pick<COLL, unsigned int, SYMCOLL_SUM>(algo);
    case 8:
        return pick<COLL, unsigned long long, SYMCOLL_SUM>(algo);
    default:
        return nullptr;
    }
}

kernel_fn kernel_for(int coll, int algo, int dtype, int op)
{
    const size_t esize = symcoll_dtype_size((symcoll_dtype_t)dtype);

    if (algo != CUDA_AR_ONESHOT && algo != CUDA_AR_TWOSHOT)
        return nullptr;
    if (coll == CUDA_AR_COLL_ALLGATHER)
        return copy_for<CUDA_AR_COLL_ALLGATHER>(algo, esize);
    if (coll == CUDA_AR_COLL_BROADCAST)
        return copy_for<CUDA_AR_COLL_BROADCAST>(algo, esize);
    if (coll != CUDA_AR_COLL_REDUCE_SCATTER)
        return nullptr;
    switch (dtype) {
    case SYMCOLL_INT8:
        return rs_for<int8_t>(algo, op);
    case SYMCOLL_UINT8:
        return rs_for<uint8_t>(algo, op);
    case SYMCOLL_INT32:
        return rs_for<int32_t>(algo, op);
    case SYMCOLL_UINT32:
        return rs_for<uint32_t>(algo, op);
    case SYMCOLL_INT64:
        return rs_for<int64_t>(algo, op);
    case SYMCOLL_UINT64:
        return rs_for<uint64_t>(algo, op);
    case SYMCOLL_FLOAT16:
        return rs_for<__half>(algo, op);
    case SYMCOLL_BFLOAT16:
        return rs_for<__nv_bfloat16>(algo, op);
    case SYMCOLL_FLOAT32:
        return rs_for<float>(algo, op);
    case SYMCOLL_FLOAT64:
        return rs_for<double>(algo, op);
    default:
        return nullptr;
    }
}

} // namespace

extern "C" int cuda_coll_preload(void)
{
    static const int colls[] = {CUDA_AR_COLL_REDUCE_SCATTER, CUDA_AR_COLL_ALLGATHER,
                                CUDA_AR_COLL_BROADCAST};
    cudaError_t err = cudaSuccess;

    for (int c = 0; err == cudaSuccess && c < 3; c++)
        for (int algo = CUDA_AR_ONESHOT; err == cudaSuccess && algo <= CUDA_AR_TWOSHOT; algo++)
            for (int t = SYMCOLL_INT8; err == cudaSuccess && t <= SYMCOLL_FLOAT64; t++)
                for (int op = SYMCOLL_SUM; err == cudaSuccess && op <= SYMCOLL_AVG; op++) {
                    kernel_fn k = kernel_for(colls[c], algo, t, op);
                    cudaFuncAttributes attr;
                    /* asking for a kernel's attributes loads it */
                    if (k)
                        err = cudaFuncGetAttributes(&attr, (const void *)k);
                }
    return (int)err;
}

extern "C" int cuda_coll_launch(const cuda_coll_args_t *args, void *stream)
{
    kernel_fn k = kernel_for(args->coll, args->ar.algo, args->ar.dtype, args->ar.op);
    if (!k || args->ar.nblocks <= 0 || args->ar.nblocks > CUDA_AR_MAX_BLOCKS ||
        args->ar.nranks > CUDA_AR_MAX_RANKS)
        return (int)cudaErrorInvalidValue;
    k<<<args->ar.nblocks, CUDA_AR_THREADS, 0, (cudaStream_t)stream>>>(*args);
    return (int)cudaGetLastError();
}
