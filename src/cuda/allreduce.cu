/* All-reduce kernels for the GPUs of one node that map each other's pool (CUDA VMM),
 * behind the C entry point cuda_ar_launch(). One file on purpose, though long: the three
 * kernels share the vector loads and stores, the reduction, the flags and the staging
 * layout described below, and read best next to each other. */
/*
 * Both algorithms move data with 16-byte accesses; a buffer that is not 16-byte aligned
 * is read or written element by element, and the last count % (16 / size) elements go
 * through block 0 one element per thread. Staging positions depend on the element index
 * only, never on which path a rank took, so ranks with differently aligned buffers agree.
 * Every rank reduces its sources in rank order, in float32 for the half types, so every
 * rank gets the same bits.
 *
 * LL one-shot (small messages, byte size a multiple of 4; buffers that are not 4-byte
 *   aligned are read and written byte by byte, so every rank takes it alike): every
 *   rank pushes its input into every peer's staging as 16-byte records {w0, e, w1, e}
 *   (8 payload bytes, the block's epoch e twice); the receiver polls its own memory until
 *   both flags of a record read e (8-byte stores are atomic) and reduces. No barrier at
 *   all: one one-way NVLink latency. Records go to parity e & 1, and a rank writes a
 *   parity again two calls later only, when its peer must have finished reading it: the
 *   call in between needed the peer's data, which the peer sends after finishing the
 *   call before (stream order).
 *
 * One-shot (grid fixed for the life of the pool): block b owns chunks b, b+G, b+2G, ...
 *   of the message; for each chunk it pushes the input into every peer's staging
 *   (parity e & 1), then raises its flag to (e << 16 | k + 1) for chunk k, and reduces
 *   the previous chunk once the peers' flags reached it, so transfers of chunk k overlap
 *   the reduction of chunk k-1. The same parity argument as LL makes an end barrier
 *   unnecessary.
 *
 * Two-shot (large messages; grid fixed too):
 *   1. push slice p of the input into peer p's staging (slot of the own rank);
 *   2. start barrier; each rank also publishes where its output lies in the pool;
 *   3. reduce the own slice (own input, staging) and store the result into the own
 *      output and into every peer's output (if in the pool) or its staging results area;
 *   4. end barrier;
 *   5. a rank whose output is not in the pool copies the peers' slices from staging.
 *   With a fixed grid, block b always handles the same staging positions, so the end
 *   barrier of the previous call already orders a push after the peer's last read.
 *
 * Barriers: per block, one uint32 flag per (algorithm, slot, block, source) in the
 * receiver's signal pad, written with st.release.sys after a system fence, read with
 * ld.acquire.sys, compared wrap-safely against an epoch counted in device memory and
 * never reset (CUDA graph replays advance it like eager calls).
 *
 * Agreement: every launch that starts a call carries a signature (count, datatype,
 *   operator, algorithm, phase: cuda_ar_sig). Block 0 counts the calls in device memory
 *   and, at its start, stores {signature, call number} into every peer's pad (one 16-byte
 *   store in the LL format); before its first wait for a peer's data it waits for that
 *   peer's header of the same call number and compares. Every algorithm's block 0 does
 *   so, so ranks that disagree, even on the algorithm, both see it; a header arrives
 *   about when the data it goes with does, so this adds no round trip. In two-shot every
 *   block also compares the signature a peer stored before its start flag, because step
 *   2 writes into the peers' outputs by the own count. In LL and one-shot the other
 *   blocks only write the own output and, by the own count, staging slots sized for
 *   any message of their algorithm, so they may finish with bad data but never outside
 *   their buffers; blocks still waiting stop at their next slow check.
 *
 * Giving up: a waiting thread runs a slow check every 4096 spins: the host-mapped abort
 *   word (symcoll_comm_abort, or the host's watcher of the local peers' processes), the
 *   hierarchical node word, this rank's error word (another block, or an earlier call,
 *   gave up), the peer's "gave up" word in the own pad, and the deadline. A rank that
 *   gives up for a reason of its own leaves it in the host-mapped error word and in
 *   every peer's "gave up" word, so that the peers stop waiting for it at once (with
 *   MISMATCH if that was the reason, else PEER). Nothing resets these words: after a
 *   failure the communicator is broken (the host reads the error word at the next call).
 *   Before giving up on an abort word a wait looks once more at what it waits for: a
 *   peer that finished and exited normally (its watcher reports it dead) has already
 *   stored everything this wait needs.
 */
#include "cuda/kernel_common.cuh"

namespace
{

using namespace symcoll_k;

/* ---- LL one-shot ---------------------------------------------------------------- */

__device__ __forceinline__ void st_volatile_v4(char *p, uint4 v)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ __forceinline__ uint4 ld_volatile_v4(const char *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

template <typename T> union Pay {
    uint2 u;
    T e[8 / sizeof(T)];
};

/* poll peer src's record until both of its flags read e; false if the wait gave up */
__device__ __forceinline__ bool ll_wait(const cuda_ar_args_t &a, int src, const char *p,
                                        uint32_t e, uint2 *out)
{
    uint4 v;
    if (!wait_for(a, src, [&]() {
            v = ld_volatile_v4(p);
            return v.y == e && v.w == e;
        }))
        return false;
    *out = make_uint2(v.x, v.z);
    return true;
}

/* 32-bit word w of a buffer that is 4-byte aligned (al) or only element-aligned */
__device__ __forceinline__ uint32_t ld_word(const char *p, size_t w, bool al)
{
    if (al)
        return ((const uint32_t *)p)[w];
    const unsigned char *b = (const unsigned char *)p + 4 * w;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
__device__ __forceinline__ void st_word(char *p, size_t w, uint32_t v, bool al)
{
    if (al) {
        ((uint32_t *)p)[w] = v;
        return;
    }
    unsigned char *b = (unsigned char *)p + 4 * w;
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}

template <typename T, int OP>
__global__ void __launch_bounds__(CUDA_AR_THREADS, 1) k_oneshot_ll(const cuda_ar_args_t a)
{
    __shared__ uint32_t s_e, s_seq;
    __shared__ int s_fail;
    const int n = a.nranks, r = a.rank;
    const size_t nw = a.count * sizeof(T) / 4, nrec = (nw + 1) / 2;
    /* buffers are element-aligned; those of 1- and 2-byte types may not be 4-byte
     * aligned, and every rank must take this kernel whatever its own alignment */
    const char *send = (const char *)a.send;
    char *recv = (char *)a.recv;
    const bool sal = ((uintptr_t)send & 3) == 0, ral = ((uintptr_t)recv & 3) == 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* the first payload is loaded while thread 0 reads the epoch */
    uint2 mine = make_uint2(0, 0);
    if (i0 < nrec)
        mine = make_uint2(ld_word(send, 2 * i0, sal),
                          2 * i0 + 1 < nw ? ld_word(send, 2 * i0 + 1, sal) : 0u);
    const uint32_t e = next_epoch(a, CUDA_AR_LL, &s_e, &s_seq, &s_fail);
    const size_t par = (size_t)(e & 1) * n * a.stage_slot;

    for (size_t i = i0; i < nrec; i += stride) {
        if (i != i0)
            mine = make_uint2(ld_word(send, 2 * i, sal),
                              2 * i + 1 < nw ? ld_word(send, 2 * i + 1, sal) : 0u);
        const uint4 rec = make_uint4(mine.x, e, mine.y, e);
#pragma unroll
        for (int p = 0; p < MAXR; p++)
            if (p < n && p != r)
                st_volatile_v4(a.stage[p] + par + r * a.stage_slot + i * 16, rec);
    }
    /* block 0: the peers' call headers before their data (the other blocks stop at their
     * next slow check if this fails) */
    if (blockIdx.x == 0) {
        const int t = threadIdx.x;
        if (t < n && t != r && !header_check(a, t, s_seq))
            s_fail = 1;
        __syncthreads();
        if (s_fail)
            return;
    }
    for (size_t i = i0; i < nrec; i += stride) {
        Pay<T> v[MAXR], res;
#pragma unroll
        for (int q = 0; q < MAXR; q++) {
            if (q >= n)
                continue;
            if (q == r)
                v[q].u = make_uint2(ld_word(send, 2 * i, sal),
                                    2 * i + 1 < nw ? ld_word(send, 2 * i + 1, sal) : 0u);
            else if (!ll_wait(a, q, a.stage[r] + par + q * a.stage_slot + i * 16, e, &v[q].u))
                return;
        }
#pragma unroll
        for (int k = 0; k < 8 / (int)sizeof(T); k++) {
            const T *src[MAXR];
#pragma unroll
            for (int q = 0; q < MAXR; q++)
                src[q] = &v[q].e[k]; /* only q < n is read */
            res.e[k] = reduce_elem<T, OP>(src, n);
        }
        st_word(recv, 2 * i, res.u.x, ral);
        if (2 * i + 1 < nw)
            st_word(recv, 2 * i + 1, res.u.y, ral);
    }
}

/* ---- one-shot ------------------------------------------------------------------- */

#define ONESHOT_UNROLL 2 /* vectors per thread per chunk */

template <typename T, int OP>
__device__ __forceinline__ void oneshot_reduce(const cuda_ar_args_t &a, const char *send,
                                               char *recv, const char *mine, size_t i, bool sal,
                                               bool ral)
{
    uint4 v[MAXR];
#pragma unroll
    for (int q = 0; q < MAXR; q++)
        if (q < a.nranks)
            v[q] = q == a.rank ? ld_any<T>(send + i * 16, sal)
                               : ld_cg(mine + q * a.stage_slot + i * 16);
    st_any<T>(recv + i * 16, reduce_vec<T, OP>(v, a.nranks), ral);
}

template <typename T, int OP>
__global__ void __launch_bounds__(CUDA_AR_THREADS, 1) k_oneshot(const cuda_ar_args_t a)
{
    constexpr int V = 16 / sizeof(T);
    constexpr int U = ONESHOT_UNROLL;
    __shared__ uint32_t s_e, s_seq;
    __shared__ int s_fail;
    const int n = a.nranks, r = a.rank, t = threadIdx.x, b = blockIdx.x, G = gridDim.x;
    const size_t nvec = a.count / V;
    const int tail = (int)(a.count - nvec * V);
    const char *send = (const char *)a.send;
    char *recv = (char *)a.recv;
    const bool sal = al16(send), ral = al16(recv);
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
    const size_t par = (size_t)(e & 1) * n * a.stage_slot;
    const size_t own = par + r * a.stage_slot;
    const char *mine = a.stage[r] + par;
    const uint32_t base = e << 16;

    for (size_t k = 0; k <= nch; k++) {
        if (k < nch) {
            /* push chunk k */
            const size_t c0 = ((size_t)k * G + b) * chv;
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const size_t i = c0 + (size_t)u * blockDim.x + t;
                if (i < nvec)
                    v[u] = ld_any<T>(send + i * 16, sal);
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const size_t i = c0 + (size_t)u * blockDim.x + t;
                if (i < nvec) {
#pragma unroll
                    for (int p = 0; p < MAXR; p++)
                        if (p < n && p != r)
                            st_v(a.stage[p] + own + i * 16, v[u]);
                }
            }
            if (k == 0 && b == 0 && t < tail) {
                const T x = ((const T *)send)[nvec * V + t];
#pragma unroll
                for (int p = 0; p < MAXR; p++)
                    if (p < n && p != r)
                        *(T *)(a.stage[p] + own + a.stage_slot - 16 + t * sizeof(T)) = x;
            }
            __syncthreads();
            /* cumulative release: covers the whole block's pushes of this chunk */
            if (t < n && t != r)
                st_release_sys(a.pad[t] + CUDA_PAD_FLAG(CUDA_AR_ONESHOT, CUDA_BAR_START, b, r),
                               base | (uint32_t)(k + 1));
        }
        if (k == 0)
            continue;
        /* reduce chunk k - 1 once every peer pushed it */
        if (!flags_wait(a, base | (uint32_t)k, k == 1 ? s_seq : 0, &s_fail))
            return;
        const size_t c0 = ((size_t)(k - 1) * G + b) * chv;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const size_t i = c0 + (size_t)u * blockDim.x + t;
            if (i < nvec)
                oneshot_reduce<T, OP>(a, send, recv, mine, i, sal, ral);
        }
        if (k == 1 && b == 0 && t < tail) {
            const T *src[MAXR];
#pragma unroll
            for (int q = 0; q < MAXR; q++)
                src[q] = q == r || q >= n ? (const T *)send + nvec * V + t
                                          : (const T *)(mine + (q + 1) * a.stage_slot - 16) + t;
            const T x = reduce_elem<T, OP>(src, n);
            ((T *)recv)[nvec * V + t] = x;
        }
    }
}

/* ---- two-shot ------------------------------------------------------------------- */

template <typename T, int OP>
__device__ __forceinline__ void
twoshot_reduce(const cuda_ar_args_t &a, const char *send, char *recv, const char *mine,
               char *const *out, const bool *oal, size_t lo, size_t j, bool sal, bool ral)
{
    uint4 v[MAXR];
#pragma unroll
    for (int q = 0; q < MAXR; q++)
        if (q < a.nranks)
            v[q] = q == a.rank
                       ? ld_any<T>(send + (lo + j) * 16, sal)
                       : ld_cg(mine + (size_t)(q - (q > a.rank)) * a.stage_slot + j * 16);
    const uint4 res = reduce_vec<T, OP>(v, a.nranks);
    st_any<T>(recv + (lo + j) * 16, res, ral);
#pragma unroll
    for (int p = 0; p < MAXR; p++)
        if (p < a.nranks && p != a.rank && out[p])
            st_any<T>(out[p] + (lo + j) * 16, res, oal[p]);
}

template <typename T, int OP>
__global__ void __launch_bounds__(CUDA_AR_THREADS, 1) k_twoshot(const cuda_ar_args_t a)
{
    constexpr int V = 16 / sizeof(T);
    __shared__ uint32_t s_e, s_seq;
    __shared__ int s_fail;
    const int n = a.nranks, r = a.rank, t = threadIdx.x, phase = a.phase;
    const uint32_t e =
        next_epoch(a, CUDA_AR_TWOSHOT, &s_e, &s_seq, &s_fail, phase != CUDA_AR_PHASE_AG);
    const size_t nvec = a.count / V;
    const int tail = (int)(a.count - nvec * V);
    const char *send = (const char *)a.send;
    char *recv = (char *)a.recv;
    const bool sal = al16(send), ral = al16(recv);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t j0 = (size_t)blockIdx.x * blockDim.x + t;
    const size_t slot = a.stage_slot;

    if (phase == CUDA_AR_PHASE_AG)
        goto gather;

        /* 1. push slice p of the input to peer p */
#pragma unroll
    for (int p = 0; p < MAXR; p++) {
        if (p >= n || p == r)
            continue;
        const size_t lo = nvec * p / n, len = nvec * (p + 1) / n - lo;
        char *dst = a.stage[p] + (size_t)(r - (r > p)) * slot;
        const char *src = send + lo * 16;
        size_t j = j0;
        for (; j + stride < len; j += 2 * stride) {
            const uint4 v0 = ld_any<T>(src + j * 16, sal);
            const uint4 v1 = ld_any<T>(src + (j + stride) * 16, sal);
            st_v(dst + j * 16, v0);
            st_v(dst + (j + stride) * 16, v1);
        }
        if (j < len)
            st_v(dst + j * 16, ld_any<T>(src + j * 16, sal));
        if (p == n - 1 && blockIdx.x == 0 && t < tail)
            *(T *)(dst + slot - 16 + t * sizeof(T)) = ((const T *)send)[nvec * V + t];
    }
    if (!barrier(a, CUDA_AR_TWOSHOT, CUDA_BAR_START, e, true, s_seq, &s_fail))
        return;

    /* 2. reduce the own slice, store it everywhere */
    char *out[MAXR];
    bool oal[MAXR];
#pragma unroll
    for (int p = 0; p < MAXR; p++) {
        out[p] = nullptr;
        oal[p] = true;
        if (p < n && p != r && phase == CUDA_AR_PHASE_ALL) {
            const uint64_t info = *(const volatile uint64_t *)((const uint64_t *)a.pad[r] +
                                                               CUDA_PAD_INFO64(blockIdx.x, p));
            out[p] = info ? a.pool_base[p] + (info - 1) : a.stage[p] + a.stage_out;
            oal[p] = al16(out[p]);
        }
    }
    {
        const size_t lo = nvec * r / n, len = nvec * (r + 1) / n - lo;
        const char *mine = a.stage[r];
        size_t j = j0;
        for (; j + stride < len; j += 2 * stride) {
            twoshot_reduce<T, OP>(a, send, recv, mine, out, oal, lo, j, sal, ral);
            twoshot_reduce<T, OP>(a, send, recv, mine, out, oal, lo, j + stride, sal, ral);
        }
        if (j < len)
            twoshot_reduce<T, OP>(a, send, recv, mine, out, oal, lo, j, sal, ral);
        if (r == n - 1 && blockIdx.x == 0 && t < tail) {
            const T *src[MAXR];
#pragma unroll
            for (int q = 0; q < MAXR; q++)
                src[q] = q == r || q >= n
                             ? (const T *)send + nvec * V + t
                             : (const T *)(mine + (size_t)(q - (q > r) + 1) * slot - 16) + t;
            const T x = reduce_elem<T, OP>(src, n);
            ((T *)recv)[nvec * V + t] = x;
#pragma unroll
            for (int p = 0; p < MAXR; p++)
                if (p < n && p != r && out[p])
                    ((T *)out[p])[nvec * V + t] = x;
        }
    }
    /* RS: recv is this rank's own results area; the step across nodes comes next, and
     * the AG launch's barrier ends this call for the peers */
    if (phase == CUDA_AR_PHASE_RS)
        return;
gather:
    if (!barrier(a, CUDA_AR_TWOSHOT, CUDA_BAR_END, e, false, 0, &s_fail))
        return;
    if (phase == CUDA_AR_PHASE_AG) {
        /* every rank's final slice from its results area, the own one too */
#pragma unroll
        for (int p = 0; p < MAXR; p++) {
            if (p >= n)
                continue;
            const char *res = a.stage[p] + a.stage_out;
            const size_t lo = nvec * p / n, len = nvec * (p + 1) / n - lo;
            for (size_t j = j0; j < len; j += stride)
                st_any<T>(recv + (lo + j) * 16, ld_cg(res + (lo + j) * 16), ral);
            if (p == n - 1 && blockIdx.x == 0 && t < tail)
                ((T *)recv)[nvec * V + t] = __ldcg((const T *)res + nvec * V + t);
        }
        return;
    }

    /* 3. results that peers left in the staging area */
    if (a.recv_info)
        return;
    const char *res = a.stage[r] + a.stage_out;
#pragma unroll
    for (int p = 0; p < MAXR; p++) {
        if (p >= n || p == r)
            continue;
        const size_t lo = nvec * p / n, len = nvec * (p + 1) / n - lo;
        for (size_t j = j0; j < len; j += stride)
            st_any<T>(recv + (lo + j) * 16, ld_cg(res + (lo + j) * 16), ral);
        if (p == n - 1 && blockIdx.x == 0 && t < tail)
            ((T *)recv)[nvec * V + t] = __ldcg((const T *)res + nvec * V + t);
    }
}

/* ---- dispatch ------------------------------------------------------------------- */

typedef void (*kernel_fn)(const cuda_ar_args_t);

template <typename T> struct Kernels {
    static kernel_fn get(int algo, int op)
    {
        switch (op) {
#define SYMCOLL_CASE(o)                                                                        \
    case o:                                                                                    \
        return algo == CUDA_AR_ONESHOT ? k_oneshot<T, o>                                       \
               : algo == CUDA_AR_LL    ? k_oneshot_ll<T, o>                                    \
                                       : k_twoshot<T, o>;
            SYMCOLL_CASE(SYMCOLL_SUM)
            SYMCOLL_CASE(SYMCOLL_PROD)
            SYMCOLL_CASE(SYMCOLL_MIN)
            SYMCOLL_CASE(SYMCOLL_MAX)
            SYMCOLL_CASE(SYMCOLL_AVG)
#undef SYMCOLL_CASE
        default:
            return nullptr;
        }
    }
};

kernel_fn kernel_for(int dtype, int algo, int op)
{
    switch (dtype) {
    case SYMCOLL_INT8:
        return Kernels<int8_t>::get(algo, op);
    case SYMCOLL_UINT8:
        return Kernels<uint8_t>::get(algo, op);
    case SYMCOLL_INT32:
        return Kernels<int32_t>::get(algo, op);
    case SYMCOLL_UINT32:
        return Kernels<uint32_t>::get(algo, op);
    case SYMCOLL_INT64:
        return Kernels<int64_t>::get(algo, op);
    case SYMCOLL_UINT64:
        return Kernels<uint64_t>::get(algo, op);
    case SYMCOLL_FLOAT16:
        return Kernels<__half>::get(algo, op);
    case SYMCOLL_BFLOAT16:
        return Kernels<__nv_bfloat16>::get(algo, op);
    case SYMCOLL_FLOAT32:
        return Kernels<float>::get(algo, op);
    case SYMCOLL_FLOAT64:
        return Kernels<double>::get(algo, op);
    default:
        return nullptr;
    }
}

} // namespace

/* ---- CUDA memory across nodes: the pipeline of one small staged chunk ------------------ */

/* Block-wide copy of n bytes; src may be host memory another agent wrote (volatile
 * loads, all of a thread's issued before its stores: the reads cross PCIe). */
__device__ __forceinline__ void net_copy(char *dst, const char *src, size_t n)
{
    constexpr int U = 8;
    const size_t step = (size_t)CUDA_NET_SMALL_THREADS * 16;
    size_t nv = al16(dst) && al16(src) ? n / 16 * 16 : 0;

    for (size_t base = (size_t)threadIdx.x * 16; base < nv; base += U * step) {
        uint4 v[U];
#pragma unroll
        for (int j = 0; j < U; j++)
            if (base + j * step < nv)
                v[j] = ld_volatile_v4(src + base + j * step);
#pragma unroll
        for (int j = 0; j < U; j++)
            if (base + j * step < nv)
                *(uint4 *)(dst + base + j * step) = v[j];
    }
    for (size_t i = nv + threadIdx.x; i < n; i += CUDA_NET_SMALL_THREADS)
        dst[i] = *(const volatile char *)(src + i);
}

__global__ void __launch_bounds__(CUDA_NET_SMALL_THREADS, 1)
    k_net_small(const cuda_net_small_args_t a)
{
    if (threadIdx.x == 0 && a.has_wait)
        while ((int32_t)(ld_acquire_sys(a.freed) - a.wait_freed) < 0)
            __nanosleep(100);
    __syncthreads();
    net_copy(a.slot, (const char *)a.send, a.bytes);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        st_release_sys(a.ready, a.value);
        /* the channel raises "done" even when the operation fails, so this ends */
        while ((int32_t)(ld_acquire_sys(a.done) - a.value) < 0)
            __nanosleep(100);
    }
    __syncthreads();
    net_copy((char *)a.recv, a.slot, a.bytes);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        st_release_sys(a.freed, a.value);
    }
}

extern "C" int cuda_net_small_launch(const cuda_net_small_args_t *args, void *stream)
{
    k_net_small<<<1, CUDA_NET_SMALL_THREADS, 0, (cudaStream_t)stream>>>(*args);
    return (int)cudaGetLastError();
}

/* Asking for a kernel's attributes loads it into the current context. */
static int load_kernel(const void *k)
{
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, k);
}

extern "C" int cuda_ar_preload(void)
{
    int err = load_kernel((const void *)k_net_small);

    for (int t = SYMCOLL_INT8; err == cudaSuccess && t <= SYMCOLL_FLOAT64; t++)
        for (int algo = 0; err == cudaSuccess && algo < CUDA_AR_NALGOS; algo++)
            for (int op = SYMCOLL_SUM; err == cudaSuccess && op <= SYMCOLL_AVG; op++) {
                kernel_fn k = kernel_for(t, algo, op);
                if (k)
                    err = load_kernel((const void *)k);
            }
    return err;
}

extern "C" int cuda_ar_launch(const cuda_ar_args_t *args, void *stream)
{
    kernel_fn k = kernel_for(args->dtype, args->algo, args->op);
    if (!k || args->nblocks <= 0 || args->nblocks > CUDA_AR_MAX_BLOCKS)
        return (int)cudaErrorInvalidValue;
    k<<<args->nblocks, CUDA_AR_THREADS, 0, (cudaStream_t)stream>>>(*args);
    return (int)cudaGetLastError();
}
