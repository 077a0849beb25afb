/* Device code the kernels inside a node share (src/cuda/allreduce.cu, src/cuda/coll.cu):
 * element traits and reductions, 16-byte accesses, and the synchronisation through the
 * signal pad (epochs, call headers, barriers, one-shot's flag wait, bounded waits, giving
 * up), so that the kernels of either file interleave on one pool: they count the same
 * epochs and calls and compare the same signatures. See allreduce.cu's opening comment
 * for the protocol. */
#ifndef SYMCOLL_CUDA_KERNEL_COMMON_CUH
#define SYMCOLL_CUDA_KERNEL_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "symcoll.h"
#include "cuda/kernels.h"

namespace symcoll_k
{

constexpr int MAXR = CUDA_AR_MAX_RANKS;
static_assert(MAXR == 8, "reduce_elem writes out the canonical tree of up to 8 ranks");

/* ---- element traits: accumulator type and the operators ------------------------- */

template <typename T> struct Tr {
    /* integers: accumulate in 64 bits, sum and product in unsigned arithmetic (wraps like
     * the element type would) */
    typedef
        typename std::conditional<std::is_signed<T>::value, long long, unsigned long long>::type
            A;
    __device__ static A in(T x) { return (A)x; }
    __device__ static T out(A x) { return (T)x; }
    __device__ static A sum(A a, A b)
    {
        return (A)((unsigned long long)a + (unsigned long long)b);
    }
    __device__ static A prod(A a, A b)
    {
        return (A)((unsigned long long)a * (unsigned long long)b);
    }
    __device__ static A mn(A a, A b) { return b < a ? b : a; }
    __device__ static A mx(A a, A b) { return a < b ? b : a; }
    __device__ static A div(A a, int n) { return a / (A)n; }
};
template <typename F> struct TrF {
    typedef F A;
    __device__ static A sum(A a, A b) { return a + b; }
    __device__ static A prod(A a, A b) { return a * b; }
    __device__ static A mn(A a, A b) { return b < a ? b : a; }
    __device__ static A mx(A a, A b) { return a < b ? b : a; }
    __device__ static A div(A a, int n) { return a / (A)n; }
};
template <> struct Tr<float> : TrF<float> {
    __device__ static float in(float x) { return x; }
    __device__ static float out(float x) { return x; }
};
template <> struct Tr<double> : TrF<double> {
    __device__ static double in(double x) { return x; }
    __device__ static double out(double x) { return x; }
};
template <> struct Tr<__half> : TrF<float> {
    __device__ static float in(__half x) { return __half2float(x); }
    __device__ static __half out(float x) { return __float2half_rn(x); }
};
template <> struct Tr<__nv_bfloat16> : TrF<float> {
    __device__ static float in(__nv_bfloat16 x) { return __bfloat162float(x); }
    __device__ static __nv_bfloat16 out(float x) { return __float2bfloat16_rn(x); }
};

template <typename T, int OP>
__device__ __forceinline__ typename Tr<T>::A apply(typename Tr<T>::A a, typename Tr<T>::A b)
{
    if (OP == SYMCOLL_SUM || OP == SYMCOLL_AVG)
        return Tr<T>::sum(a, b);
    if (OP == SYMCOLL_PROD)
        return Tr<T>::prod(a, b);
    if (OP == SYMCOLL_MIN)
        return Tr<T>::mn(a, b);
    return Tr<T>::mx(a, b);
}

/* The canonical tree (below) of n values x[0 .. n), n <= 16, unrounded, undivided: leaf
 * v lands in level slot (trailing ones of v) after folding in the left subtrees below. */
template <typename T, int OP>
__device__ __forceinline__ typename Tr<T>::A tree_acc(const typename Tr<T>::A *x, int n)
{
    typedef typename Tr<T>::A A;
    A lv[5];
    int p2 = 1, lg = 0;
    while (2 * p2 <= n) {
        p2 *= 2;
        lg++;
    }
    const int rem = n - p2;
    for (int v = 0; v < p2; v++) {
        A c = v < rem ? apply<T, OP>(x[2 * v], x[2 * v + 1]) : x[v + rem];
        int j = 0;
        for (; (v >> j) & 1; j++)
            c = apply<T, OP>(lv[j], c);
        lv[j] = c;
    }
    return lv[lg];
}

/* reduce element k of n source vectors (src[q]: rank q's) in the canonical tree of the
 * host reductions (src/algo/base/reduce.h): the first 2 rem ranks paired, the leaves
 * combined pairwise, neighbours first; accumulated in Tr<T>::A, rounded once */
template <typename T, int OP>
__device__ __forceinline__ T reduce_elem(const T *const *src, int n)
{
    typedef typename Tr<T>::A A;
    A x[MAXR], acc;
#pragma unroll
    for (int q = 0; q < MAXR; q++)
        if (q < n)
            x[q] = Tr<T>::in(*src[q]);
    switch (n) {
    case 1:
        acc = x[0];
        break;
    case 2:
        acc = apply<T, OP>(x[0], x[1]);
        break;
    case 3:
        acc = apply<T, OP>(apply<T, OP>(x[0], x[1]), x[2]);
        break;
    case 4:
        acc = apply<T, OP>(apply<T, OP>(x[0], x[1]), apply<T, OP>(x[2], x[3]));
        break;
    case 5:
        acc = apply<T, OP>(apply<T, OP>(apply<T, OP>(x[0], x[1]), x[2]),
                           apply<T, OP>(x[3], x[4]));
        break;
    case 6:
        acc = apply<T, OP>(apply<T, OP>(apply<T, OP>(x[0], x[1]), apply<T, OP>(x[2], x[3])),
                           apply<T, OP>(x[4], x[5]));
        break;
    case 7:
        acc = apply<T, OP>(apply<T, OP>(apply<T, OP>(x[0], x[1]), apply<T, OP>(x[2], x[3])),
                           apply<T, OP>(apply<T, OP>(x[4], x[5]), x[6]));
        break;
    default: /* 8 = MAXR */
        acc = apply<T, OP>(apply<T, OP>(apply<T, OP>(x[0], x[1]), apply<T, OP>(x[2], x[3])),
                           apply<T, OP>(apply<T, OP>(x[4], x[5]), apply<T, OP>(x[6], x[7])));
        break;
    }
    if (OP == SYMCOLL_AVG)
        acc = Tr<T>::div(acc, n);
    return Tr<T>::out(acc);
}

template <typename T> union Vec {
    uint4 u;
    T e[16 / sizeof(T)];
};

template <typename T, int OP> __device__ __forceinline__ uint4 reduce_vec(const uint4 *v, int n)
{
    constexpr int V = 16 / sizeof(T);
    Vec<T> out;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const T *src[MAXR];
#pragma unroll
        for (int q = 0; q < MAXR; q++)
            src[q] = &reinterpret_cast<const Vec<T> *>(&v[q])->e[k];
        out.e[k] = reduce_elem<T, OP>(src, n);
    }
    return out.u;
}

/* ---- memory access -------------------------------------------------------------- */

/* data written by other GPUs during the kernel: bypass L1 */
__device__ __forceinline__ uint4 ld_cg(const char *p)
{
    return __ldcg((const uint4 *)p);
}
__device__ __forceinline__ void st_v(char *p, uint4 v)
{
    *(uint4 *)p = v;
}

template <typename T> __device__ __forceinline__ uint4 ld_any(const char *p, bool aligned)
{
    if (aligned)
        return ld_cg(p);
    Vec<T> v;
#pragma unroll
    for (int k = 0; k < 16 / (int)sizeof(T); k++)
        v.e[k] = ((const T *)p)[k];
    return v.u;
}

template <typename T> __device__ __forceinline__ void st_any(char *p, uint4 u, bool aligned)
{
    if (aligned) {
        st_v(p, u);
        return;
    }
    Vec<T> v;
    v.u = u;
#pragma unroll
    for (int k = 0; k < 16 / (int)sizeof(T); k++)
        ((T *)p)[k] = v.e[k];
}

__device__ __forceinline__ bool al16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* ---- barrier -------------------------------------------------------------------- */

__device__ __forceinline__ void st_release_sys(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ char *pad_at(const cuda_ar_args_t &a, int rank, size_t off)
{
    return (char *)a.pad[rank] + off;
}

/* Codes of the slow check: 0 (go on), or a CUDA_KERR_* reason, with WHY_OWN when this
 * rank saw the failure itself (then the peers are told), or WHY_RECORDED (an earlier
 * failure of this rank is in the error word already). */
constexpr uint32_t WHY_OWN = 0x100, WHY_RECORDED = 0xff;

/* The slow check of a wait for peer src. */
__device__ __forceinline__ uint32_t wait_why(const cuda_ar_args_t &a, int src,
                                             unsigned long long *t0)
{
    /* acquire: a wait that stops for it looks at what it waits for once more, and sees
     * what a peer stored before it exited */
    const uint32_t ab = ld_acquire_sys((const uint32_t *)a.abort_word);
    if (ab)
        return ab | WHY_OWN;
    if (a.node_word && *a.node_word)
        return CUDA_KERR_PEER | WHY_OWN;
    if (*a.err_word)
        return WHY_RECORDED;
    const uint32_t peer =
        *(const volatile uint32_t *)pad_at(a, a.rank, CUDA_PAD_GAVEUP_OFF(src));
    if (peer)
        return peer == CUDA_KERR_MISMATCH ? CUDA_KERR_MISMATCH : CUDA_KERR_PEER;
    const unsigned long long now = global_ns();
    if (!*t0)
        *t0 = now;
    else if (now - *t0 > a.timeout_ns)
        return CUDA_KERR_TIMED_OUT | WHY_OWN;
    return 0;
}

/* This rank gives up with code (wait_why's): the error word says why, unless it holds a
 * reason already, and a reason of its own goes to every peer's "gave up" word. */
__device__ __forceinline__ void give_up(const cuda_ar_args_t &a, uint32_t code)
{
    const uint32_t why = code & 0xff;
    if (why == WHY_RECORDED)
        return;
    if (*a.err_word == CUDA_KERR_NONE)
        *a.err_word = why;
    if (code & WHY_OWN) {
#pragma unroll
        for (int p = 0; p < MAXR; p++)
            if (p < a.nranks && p != a.rank)
                *(volatile uint32_t *)pad_at(a, p, CUDA_PAD_GAVEUP_OFF(a.rank)) = why;
    }
    __threadfence_system();
}

/* Peer src called with signature peer_sig: what the host logs, then give up. Blocks that
 * see it at the same time may mix their records; each names a real disagreement. */
__device__ __forceinline__ void give_up_mismatch(const cuda_ar_args_t &a, int src,
                                                 uint64_t peer_sig)
{
    volatile uint32_t *w = a.err_word - CUDA_WORD_ERR;
    if (w[CUDA_WORD_ERR] == CUDA_KERR_NONE) {
        w[CUDA_WORD_PEER_SIG] = (uint32_t)peer_sig;
        w[CUDA_WORD_PEER_SIG + 1] = (uint32_t)(peer_sig >> 32);
        w[CUDA_WORD_PEER] = (uint32_t)src + 1;
        w[CUDA_WORD_MY_SIG] = (uint32_t)a.sig;
        w[CUDA_WORD_MY_SIG + 1] = (uint32_t)(a.sig >> 32);
        __threadfence_system();
    }
    give_up(a, CUDA_KERR_MISMATCH | WHY_OWN);
}

/* Spin until ready() (which loads what it waits for); false if the wait gave up (the
 * reason recorded). src: the peer it waits for. */
template <typename Ready>
__device__ __forceinline__ bool wait_for(const cuda_ar_args_t &a, int src, Ready ready)
{
    unsigned spins = 0;
    unsigned long long t0 = 0;
    while (!ready()) {
        if ((++spins & 4095) == 0) {
            const uint32_t code = wait_why(a, src, &t0);
            if (code) {
                if (ready())
                    return true;
                give_up(a, code);
                return false;
            }
        }
    }
    return true;
}

/* Block 0, thread t < nranks (t != rank): wait for peer t's call header of call seq and
 * compare its signature with this launch's; false (the reason recorded) if the wait gave
 * up or the peer called with other arguments. */
__device__ __forceinline__ bool header_check(const cuda_ar_args_t &a, int t, uint32_t seq)
{
    const char *h = pad_at(a, a.rank, CUDA_PAD_HDR_OFF(seq & 1, t));
    uint4 v;
    if (!wait_for(a, t, [&]() {
            asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "l"(h)
                         : "memory");
            return v.y == seq && v.w == seq;
        }))
        return false;
    const uint64_t peer_sig = (uint64_t)v.x | (uint64_t)v.z << 32;
    if (peer_sig != a.sig) {
        give_up_mismatch(a, t, peer_sig);
        return false;
    }
    return true;
}

/* Block-wide barrier with the same block of every peer. Returns false if it gave up
 * (abort, timeout, a peer that gave up, other arguments); the caller then returns from
 * the kernel. START of two-shot (publish): each rank also stores its info word and its
 * signature before the flag, and block 0 first checks the call headers (seq). */
__device__ __forceinline__ bool barrier(const cuda_ar_args_t &a, int algo, int slot, uint32_t e,
                                        bool publish, uint32_t seq, int *s_fail)
{
    const int t = threadIdx.x, b = blockIdx.x;
    __syncthreads();
    if (t < a.nranks && t != a.rank) {
        if (publish) {
            *(volatile uint64_t *)((uint64_t *)a.pad[t] + CUDA_PAD_INFO64(b, a.rank)) =
                a.recv_info;
            *(volatile uint64_t *)pad_at(a, t, CUDA_PAD_SIG2_OFF(b, a.rank)) = a.sig;
        }
        /* the release is cumulative: it covers every store of the block ordered before it
         * by the __syncthreads above (PTX causality order), local and remote */
        st_release_sys(a.pad[t] + CUDA_PAD_FLAG(algo, slot, b, a.rank), e);
        const uint32_t *mine = a.pad[a.rank] + CUDA_PAD_FLAG(algo, slot, b, t);
        bool ok = !seq || header_check(a, t, seq);
        ok = ok && wait_for(a, t, [&]() { return (int32_t)(ld_acquire_sys(mine) - e) >= 0; });
        if (ok && publish) {
            /* stored before the flag just acquired; the peer stores it again only after
             * this rank's end flag of this call */
            const uint64_t peer_sig =
                *(const volatile uint64_t *)pad_at(a, a.rank, CUDA_PAD_SIG2_OFF(b, t));
            if (peer_sig != a.sig) {
                give_up_mismatch(a, t, peer_sig);
                ok = false;
            }
        }
        if (!ok)
            *s_fail = 1;
    }
    __syncthreads();
    return !*s_fail;
}

/* One-shot's wait (either kernel's): until every peer's START flag of this block reached
 * want, compared wrap-safely (epochs are never reset); seq (block 0's first wait of a
 * call): check the peers' call headers first. Returns false if it gave up (the reason
 * recorded, as wait_for). */
__device__ __forceinline__ bool flags_wait(const cuda_ar_args_t &a, uint32_t want, uint32_t seq,
                                           int *s_fail)
{
    const int t = threadIdx.x, b = blockIdx.x;
    if (t < a.nranks && t != a.rank) {
        const uint32_t *f =
            a.pad[a.rank] + CUDA_PAD_FLAG(CUDA_AR_ONESHOT, CUDA_BAR_START, b, t);
        if ((seq && !header_check(a, t, seq)) ||
            !wait_for(a, t, [&]() { return (int32_t)(ld_acquire_sys(f) - want) >= 0; }))
            *s_fail = 1;
    }
    __syncthreads();
    return !*s_fail;
}

/* epoch of this block for algo: counted in this rank's own pad, never reset (advance
 * false: the epoch of the launch before, for a call's second launch). Block 0 of a
 * launch that starts a call (advance) also counts the call (*s_seq: its number, never 0;
 * 0 in other blocks and second launches) and stores its header into every peer's pad:
 * one 16-byte store, no fence (the reader checks the number in both 8-byte halves). */
__device__ __forceinline__ uint32_t next_epoch(const cuda_ar_args_t &a, int algo, uint32_t *s_e,
                                               uint32_t *s_seq, int *s_fail,
                                               bool advance = true)
{
    if (threadIdx.x == 0) {
        uint32_t *c = a.pad[a.rank] + CUDA_PAD_COUNTER(algo, 0, blockIdx.x);
        uint32_t e = *c + (advance ? 1 : 0), q = 0;
        *c = e;
        if (blockIdx.x == 0 && advance) {
            uint32_t *calls = (uint32_t *)pad_at(a, a.rank, CUDA_PAD_CALLS_OFF);
            q = *calls + 1;
            q += q == 0;
            *calls = q;
        }
        *s_e = e;
        *s_seq = q;
        *s_fail = 0;
    }
    __syncthreads();
    const uint32_t q = *s_seq;
    if (q && threadIdx.x < a.nranks && threadIdx.x != a.rank)
        asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(
                         pad_at(a, threadIdx.x, CUDA_PAD_HDR_OFF(q & 1, a.rank))),
                     "r"((uint32_t)a.sig), "r"(q), "r"((uint32_t)(a.sig >> 32)), "r"(q)
                     : "memory");
    return *s_e;
}

} // namespace symcoll_k

#endif
