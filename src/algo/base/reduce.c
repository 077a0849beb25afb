/* Element-wise reductions: one loop per (datatype, operator) generated from a macro.
 *
 * One or two sources: one pass. More: the loop works in blocks that fit in L1 and builds
 * the canonical tree (reduce.h) in level slots, each step a loop the compiler vectorises
 * (independent elements, a fixed order of operations, so the result does not depend on
 * vector width); the root is converted and stored. Because a whole block is read before
 * it is written, dst may be one of the sources. Element pointers use types of alignment 1,
 * so any byte address works without the compiler assuming natural alignment. */
#include "algo/base/reduce.h"

#include <stdlib.h>
#include <string.h>

/*
 * Vectorisation, without a particular CPU at build or run time and without changing a
 * bit of any result (NaNs aside, see below):
 * - GCC (12) at -O2 vectorises only loops whose trip count it knows at compile time
 *   (its "very cheap" cost model); these loops have a run-time count, so this file asks
 *   for the -O3 vectoriser. Clang vectorises them at -O2 already.
 * - Where the toolchain has ifuncs (GCC or Clang on x86-64 glibc), every loop is built
 *   twice, for AVX2 and for the x86-64 baseline (SSE2); the loader picks one per loop
 *   from the CPU it runs on. AVX2 only, not FMA: nothing may fuse a multiply and an add.
 * Neither relaxes IEEE semantics (no -ffast-math): every element goes through the same
 * operations in the same order at any vector width, so the bits are those of the scalar
 * loop, integer wrap-around and half-precision rounding included. The one exception is
 * an element with two or more NaN inputs: which NaN's sign and payload comes out is the
 * compiler's choice (it may swap the operands of + and *), so it can differ between
 * compilers, flags, and the two clones; it is a NaN in every case.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define REDUCE_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef REDUCE_CLONES
#define REDUCE_CLONES
#endif

#define REDUCE_TREE_BLOCK 256

typedef int8_t u_i8 __attribute__((aligned(1)));
typedef uint8_t u_u8 __attribute__((aligned(1)));
typedef int32_t u_i32 __attribute__((aligned(1)));
typedef uint32_t u_u32 __attribute__((aligned(1)));
typedef int64_t u_i64 __attribute__((aligned(1)));
typedef uint64_t u_u64 __attribute__((aligned(1)));
typedef uint16_t u_h16 __attribute__((aligned(1)));
typedef float u_f32 __attribute__((aligned(1)));
typedef double u_f64 __attribute__((aligned(1)));

/* ---- half-precision conversions ---------------------------------------------------- */

/* The float16 conversions compute every case and pick one with sel32 rather than
 * branching, so that the loops calling them vectorise: a branch would hide the float
 * multiply in a path the vectoriser may not execute speculatively. */
static inline uint32_t sel32(int c, uint32_t a, uint32_t b)
{
    uint32_t mask = -(uint32_t)(c != 0);
    return (a & mask) | (b & ~mask);
}

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x,
             sub_bits;
    /* zero or subnormal: man * 2^-24, exact in float */
    float f = (float)(int32_t)man * 0x1p-24f;
    memcpy(&sub_bits, &f, sizeof(sub_bits));
    x = sel32(exp == 31, 0x7f800000u | (man << 13), ((exp + 112) << 23) | (man << 13));
    x = sel32(exp == 0, sub_bits, x) | sign;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static inline uint16_t float_to_half(float f)
{
    uint32_t x, sign, e, m, sh, sub, norm, mag;
    memcpy(&x, &f, sizeof(x));
    sign = (x >> 16) & 0x8000;
    x &= 0x7fffffffu;
    /* below the smallest normal half (x < 0x38800000: float exponent e <= 112): |f| / 2^-24
     * = m * 2^(e - 126), rounded to an integer, nearest even, in integers (the result
     * 1024 encodes the smallest normal). A shift past 25 gives 0 as 25 does; clamping e
     * also keeps the shift defined for inputs that take another case. */
    e = x >> 23;
    e = e < 101 ? 101 : e > 112 ? 112 : e;
    m = (x & 0x7fffffu) | 0x800000u;
    sh = 126 - e;
    sub = (m + (1u << (sh - 1)) - 1 + ((m >> sh) & 1)) >> sh;
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even; a carry out
     * of the mantissa correctly bumps the exponent */
    norm = x - 0x38000000u;
    norm = (norm + 0xfffu + ((norm >> 13) & 1)) >> 13;
    mag = sel32(x < 0x38800000u, sub, norm);
    mag = sel32(x >= 0x477ff000u, 0x7c00, mag); /* >= 65520 rounds to infinity */
    mag = sel32(x > 0x7f800000u, 0x7e00 | ((x >> 13) & 0x3ff), mag); /* NaN: quiet, non-zero */
    return (uint16_t)(sign | mag);
}

/* the loops use the inline versions: a call into a global function would not vectorise */
float algo_half_to_float(uint16_t h)
{
    return half_to_float(h);
}

uint16_t algo_float_to_half(float f)
{
    return float_to_half(f);
}

float algo_bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

uint16_t algo_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- loops ------------------------------------------------------------------------- */

typedef void (*reduce_fn_t)(void *dst, const void *const *srcs, int nsrc, size_t count,
                            int div);

/* The canonical tree of nsrc sources (reduce.h): p2 leaves, the largest power of two
 * <= nsrc; with rem = nsrc - p2, leaf v < rem is srcs[2v] op srcs[2v+1], leaf v >= rem is
 * srcs[v + rem]; the leaves combine pairwise, neighbours first. Evaluated as a binary
 * counter: leaf v lands in level slot j = (trailing ones of v), after folding in the
 * slots below it, which hold the left subtrees it completes; slot j is free then (bit j
 * of v is 0). After leaf p2 - 1, slot log2(p2) holds the root. */
static inline int reduce_log2(int n)
{
    int l = 0;
    while ((2 << l) <= n)
        l++;
    return l;
}

#define REDUCE_LEVELS 17 /* sources up to 2^16 */

/* T: element (unaligned), A: accumulator, LD: T->A, COMB: (A,A)->A, FIN: (A,div)->T.
 * Up to 8 sources: the tree written out, one pass. More: level slots of one block each. */
#define DEF_REDUCE(name, T, A, LD, COMB, FIN)                                                  \
    REDUCE_CLONES static void name(void *dst, const void *const *srcs, int nsrc, size_t count, \
                                   int div)                                                    \
    {                                                                                          \
        (void)div;                                                                             \
        if (nsrc <= 8) {                                                                       \
            /* the tree of up to 8 sources as one expression: one pass */                      \
            const T *s[8];                                                                     \
            T *d = (T *)dst;                                                                   \
            for (int r = 0; r < 8; r++)                                                        \
                s[r] = (const T *)srcs[r < nsrc ? r : 0];                                      \
            switch (nsrc) {                                                                    \
            case 1:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(LD(s[0][k]), div);                                              \
                return;                                                                        \
            case 2:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(LD(s[0][k]), LD(s[1][k])), div);                           \
                return;                                                                        \
            case 3:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(COMB(LD(s[0][k]), LD(s[1][k])), LD(s[2][k])), div);        \
                return;                                                                        \
            case 4:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(                                                                \
                        COMB(COMB(LD(s[0][k]), LD(s[1][k])), COMB(LD(s[2][k]), LD(s[3][k]))),  \
                        div);                                                                  \
                return;                                                                        \
            case 5:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(COMB(COMB(LD(s[0][k]), LD(s[1][k])), LD(s[2][k])),         \
                                    COMB(LD(s[3][k]), LD(s[4][k]))),                           \
                               div);                                                           \
                return;                                                                        \
            case 6:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(COMB(COMB(LD(s[0][k]), LD(s[1][k])),                       \
                                         COMB(LD(s[2][k]), LD(s[3][k]))),                      \
                                    COMB(LD(s[4][k]), LD(s[5][k]))),                           \
                               div);                                                           \
                return;                                                                        \
            case 7:                                                                            \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(COMB(COMB(LD(s[0][k]), LD(s[1][k])),                       \
                                         COMB(LD(s[2][k]), LD(s[3][k]))),                      \
                                    COMB(COMB(LD(s[4][k]), LD(s[5][k])), LD(s[6][k]))),        \
                               div);                                                           \
                return;                                                                        \
            default:                                                                           \
                for (size_t k = 0; k < count; k++)                                             \
                    d[k] = FIN(COMB(COMB(COMB(LD(s[0][k]), LD(s[1][k])),                       \
                                         COMB(LD(s[2][k]), LD(s[3][k]))),                      \
                                    COMB(COMB(LD(s[4][k]), LD(s[5][k])),                       \
                                         COMB(LD(s[6][k]), LD(s[7][k])))),                     \
                               div);                                                           \
                return;                                                                        \
            }                                                                                  \
        }                                                                                      \
        A slot[REDUCE_LEVELS][REDUCE_TREE_BLOCK];                                              \
        int lg = reduce_log2(nsrc), p2 = 1 << lg, rem = nsrc - p2;                             \
        for (size_t b = 0; b < count; b += REDUCE_TREE_BLOCK) {                                \
            size_t m = count - b < REDUCE_TREE_BLOCK ? count - b : REDUCE_TREE_BLOCK;          \
            for (int v = 0; v < p2; v++) {                                                     \
                int j = 0;                                                                     \
                while ((v >> j) & 1)                                                           \
                    j++;                                                                       \
                A *c = slot[j];                                                                \
                if (v < rem) {                                                                 \
                    const T *s0 = (const T *)srcs[2 * v] + b,                                  \
                            *s1 = (const T *)srcs[2 * v + 1] + b;                              \
                    for (size_t k = 0; k < m; k++) {                                           \
                        A x = LD(s0[k]), y = LD(s1[k]);                                        \
                        c[k] = COMB(x, y);                                                     \
                    }                                                                          \
                } else {                                                                       \
                    const T *s0 = (const T *)srcs[v + rem] + b;                                \
                    for (size_t k = 0; k < m; k++)                                             \
                        c[k] = LD(s0[k]);                                                      \
                }                                                                              \
                for (int i = 0; i < j; i++) {                                                  \
                    const A *l = slot[i];                                                      \
                    for (size_t k = 0; k < m; k++)                                             \
                        c[k] = COMB(l[k], c[k]);                                               \
                }                                                                              \
            }                                                                                  \
            T *d = (T *)dst + b;                                                               \
            const A *root = slot[lg];                                                          \
            for (size_t k = 0; k < m; k++)                                                     \
                d[k] = FIN(root[k], div);                                                      \
        }                                                                                      \
    }

#define C_SUM(a, b) ((a) + (b))
#define C_PROD(a, b) ((a) * (b))
#define C_MIN(a, b) ((b) < (a) ? (b) : (a))
#define C_MAX(a, b) ((b) > (a) ? (b) : (a))

/* integers: sum and prod in the unsigned type of the element's width (wraps, no UB);
 * min and max in the element type; avg sums in 64 bits then divides */
#define ID(x) (x)
#define DEF_INT(tag, T, UT)                                                                    \
    static inline UT tag##_ld_u(T x)                                                           \
    {                                                                                          \
        return (UT)x;                                                                          \
    }                                                                                          \
    static inline T tag##_fin_u(UT a, int div)                                                 \
    {                                                                                          \
        (void)div;                                                                             \
        return (T)a;                                                                           \
    }                                                                                          \
    static inline T tag##_fin_id(T a, int div)                                                 \
    {                                                                                          \
        (void)div;                                                                             \
        return a;                                                                              \
    }                                                                                          \
    DEF_REDUCE(reduce_##tag##_sum, u_##tag, UT, tag##_ld_u, C_SUM, tag##_fin_u)                \
    DEF_REDUCE(reduce_##tag##_prod, u_##tag, UT, tag##_ld_u, C_PROD, tag##_fin_u)              \
    DEF_REDUCE(reduce_##tag##_min, u_##tag, T, ID, C_MIN, tag##_fin_id)                        \
    DEF_REDUCE(reduce_##tag##_max, u_##tag, T, ID, C_MAX, tag##_fin_id)

/* uint8 * uint8 promotes to int: multiply in unsigned int to stay defined */
#define C_PROD_U8(a, b) ((uint8_t)((unsigned)(a) * (unsigned)(b)))

static inline uint8_t i8_ld_u(int8_t x)
{
    return (uint8_t)x;
}
static inline int8_t i8_fin_u(uint8_t a, int div)
{
    (void)div;
    return (int8_t)a;
}
static inline uint8_t u8_ld_u(uint8_t x)
{
    return x;
}
static inline uint8_t u8_fin_u(uint8_t a, int div)
{
    (void)div;
    return a;
}
static inline int8_t i8_fin_id(int8_t a, int div)
{
    (void)div;
    return a;
}
static inline uint8_t u8_fin_id(uint8_t a, int div)
{
    (void)div;
    return a;
}
DEF_REDUCE(reduce_i8_sum, u_i8, uint8_t, i8_ld_u, C_SUM, i8_fin_u)
DEF_REDUCE(reduce_i8_prod, u_i8, uint8_t, i8_ld_u, C_PROD_U8, i8_fin_u)
DEF_REDUCE(reduce_i8_min, u_i8, int8_t, ID, C_MIN, i8_fin_id)
DEF_REDUCE(reduce_i8_max, u_i8, int8_t, ID, C_MAX, i8_fin_id)
DEF_REDUCE(reduce_u8_sum, u_u8, uint8_t, u8_ld_u, C_SUM, u8_fin_u)
DEF_REDUCE(reduce_u8_prod, u_u8, uint8_t, u8_ld_u, C_PROD_U8, u8_fin_u)
DEF_REDUCE(reduce_u8_min, u_u8, uint8_t, ID, C_MIN, u8_fin_id)
DEF_REDUCE(reduce_u8_max, u_u8, uint8_t, ID, C_MAX, u8_fin_id)

DEF_INT(i32, int32_t, uint32_t)
DEF_INT(u32, uint32_t, uint32_t)
DEF_INT(i64, int64_t, uint64_t)
DEF_INT(u64, uint64_t, uint64_t)

/* avg of integers: exact 64-bit sum (wrapping only past 64 bits), then truncation */
#define DEF_INT_AVG(tag, T, ST)                                                                \
    static inline uint64_t tag##_ld_avg(T x)                                                   \
    {                                                                                          \
        return (uint64_t)(ST)x;                                                                \
    }                                                                                          \
    static inline T tag##_fin_avg(uint64_t a, int div)                                         \
    {                                                                                          \
        return div > 0 ? (T)((ST)a / (ST)div) : (T)a;                                          \
    }                                                                                          \
    DEF_REDUCE(reduce_##tag##_avg, u_##tag, uint64_t, tag##_ld_avg, C_SUM, tag##_fin_avg)
DEF_INT_AVG(i8, int8_t, int64_t)
DEF_INT_AVG(u8, uint8_t, uint64_t)
DEF_INT_AVG(i32, int32_t, int64_t)
DEF_INT_AVG(u32, uint32_t, uint64_t)
DEF_INT_AVG(i64, int64_t, int64_t)
DEF_INT_AVG(u64, uint64_t, uint64_t)

/* floating point: A is the accumulation type */
#define DEF_FLT(tag, T, A, LD, ST)                                                             \
    static inline T tag##_fin(A a, int div)                                                    \
    {                                                                                          \
        (void)div;                                                                             \
        return ST(a);                                                                          \
    }                                                                                          \
    static inline T tag##_fin_avg(A a, int div)                                                \
    {                                                                                          \
        return ST(div > 0 ? a / (A)div : a);                                                   \
    }                                                                                          \
    DEF_REDUCE(reduce_##tag##_sum, T, A, LD, C_SUM, tag##_fin)                                 \
    DEF_REDUCE(reduce_##tag##_prod, T, A, LD, C_PROD, tag##_fin)                               \
    DEF_REDUCE(reduce_##tag##_min, T, A, LD, C_MIN, tag##_fin)                                 \
    DEF_REDUCE(reduce_##tag##_max, T, A, LD, C_MAX, tag##_fin)                                 \
    DEF_REDUCE(reduce_##tag##_avg, T, A, LD, C_SUM, tag##_fin_avg)

DEF_FLT(f16, u_h16, float, half_to_float, float_to_half)
DEF_FLT(bf16, u_h16, float, algo_bf16_to_float, algo_float_to_bf16)
DEF_FLT(f32, u_f32, float, ID, ID)
DEF_FLT(f64, u_f64, double, ID, ID)

/* ---- half precision with AVX2 / AVX-512 intrinsics --------------------------------------
 * The compiler's vectorisation of the generic half-precision loops is poor (bfloat16:
 * 4-10 GB/s; float16, whose conversions are bit manipulation: 2 GB/s), which made the host
 * reduction a visible part of every staged GPU chunk. These loops do exactly what the
 * generic ones do, 8 (AVX2) or 16 (AVX-512) elements at a time: widen to float (exact:
 * bfloat16 by a shift, float16 with F16C's vcvtph2ps), combine in the same tree with the
 * same IEEE operation, divide for avg, round to nearest even (bfloat16 with the generic
 * loop's integer steps, NaN: quiet with the top bits kept; float16 with vcvtps2ph, which
 * rounds the same way, subnormals and overflow included). min and max take the operands
 * in the generic loop's order (minps returns its second operand unless the first is
 * smaller, as C_MIN does). The test compares every path with a scalar reference. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define REDUCE_H16_FAST 1

#define H16_AVX2 __attribute__((target("avx2,f16c")))
#define H16_AVX512 __attribute__((target("avx512f,avx512bw")))
#define REDUCE_H16_NSRC_MAX 64 /* sources of one call (local ranks); more: generic */

H16_AVX2 static inline __m256 bf16_v_load(const void *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

H16_AVX2 static inline __m128i bf16_v_round(__m256 a)
{
    __m256i x = _mm256_castps_si256(a);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, q, nan);
    /* 32 -> 16 bits: packus works per 128-bit channel; keep quadwords 0 and 2 */
    r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    return _mm256_castsi256_si128(r);
}

H16_AVX2 static inline __m256 f16_v_load(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

H16_AVX2 static inline __m128i f16_v_round(__m256 a)
{
    return _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

H16_AVX512 static inline __m512 bf16_w_load(const void *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

H16_AVX512 static inline __m256i bf16_w_round(__m512 a)
{
    __m512i x = _mm512_castps_si512(a);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i q = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, r, q)); /* all fit 16 bits */
}

H16_AVX512 static inline __m512 f16_w_load(const void *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

H16_AVX512 static inline __m256i f16_w_round(__m512 a)
{
    return _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#define V_SUM(acc, x) _mm256_add_ps(acc, x)
#define V_PROD(acc, x) _mm256_mul_ps(acc, x)
#define V_MIN(acc, x) _mm256_min_ps(x, acc)
#define V_MAX(acc, x) _mm256_max_ps(x, acc)
#define W_SUM(acc, x) _mm512_add_ps(acc, x)
#define W_PROD(acc, x) _mm512_mul_ps(acc, x)
#define W_MIN(acc, x) _mm512_min_ps(x, acc)
#define W_MAX(acc, x) _mm512_max_ps(x, acc)

/* The canonical tree (see DEF_REDUCE) on one vector (or element) of every source: VT the
 * vector type, CV(LDAT(p)) loads from byte address p (a source plus OFF), COMB combines; the
 * level slots are registers or L1. srcs, nsrc, lg, p2 and rem come from the enclosing loop. */
/* one raw 16-bit element at byte address p */
#define H16_RAW(p) (*(const u_h16 *)(const void *)(p))
#define H16_TREE(VT, out, LDAT, CV, COMB, OFF)                                                 \
    do {                                                                                       \
        VT lv[REDUCE_LEVELS];                                                                  \
        for (int v = 0; v < p2; v++) {                                                         \
            int j = 0;                                                                         \
            VT c;                                                                              \
            while ((v >> j) & 1)                                                               \
                j++;                                                                           \
            if (v < rem)                                                                       \
                c = COMB(CV(LDAT((const char *)srcs[2 * v] + (OFF))),                          \
                         CV(LDAT((const char *)srcs[2 * v + 1] + (OFF))));                     \
            else                                                                               \
                c = CV(LDAT((const char *)srcs[v + rem] + (OFF)));                             \
            for (int i = 0; i < j; i++)                                                        \
                c = COMB(lv[i], c);                                                            \
            lv[j] = c;                                                                         \
        }                                                                                      \
        out = lv[lg];                                                                          \
    } while (0)

/* The canonical tree of 1 to 8 sources written out: C combines, L(a, r) loads source r. */
#define TREE1(C, L, a) L(a, 0)
#define TREE2(C, L, a) C(L(a, 0), L(a, 1))
#define TREE3(C, L, a) C(C(L(a, 0), L(a, 1)), L(a, 2))
#define TREE4(C, L, a) C(C(L(a, 0), L(a, 1)), C(L(a, 2), L(a, 3)))
#define TREE5(C, L, a) C(C(C(L(a, 0), L(a, 1)), L(a, 2)), C(L(a, 3), L(a, 4)))
#define TREE6(C, L, a) C(C(C(L(a, 0), L(a, 1)), C(L(a, 2), L(a, 3))), C(L(a, 4), L(a, 5)))
#define TREE7(C, L, a)                                                                         \
    C(C(C(L(a, 0), L(a, 1)), C(L(a, 2), L(a, 3))), C(C(L(a, 4), L(a, 5)), L(a, 6)))
#define TREE8(C, L, a)                                                                         \
    C(C(C(L(a, 0), L(a, 1)), C(L(a, 2), L(a, 3))), C(C(L(a, 4), L(a, 5)), C(L(a, 6), L(a, 7))))

/* source r's vector at element k (s and k of the loop below) */
#define H16_AT(LOADF, r) LOADF(s[r] + 2 * k)
/* one vector of results: divide for avg, round, store at element k */
#define H16_PUT(VT, e, AV, DIVF, vd, ROUNDF, STOREF, ST)                                       \
    do {                                                                                       \
        VT acc_ = (e);                                                                         \
        if (AV && div > 0)                                                                     \
            acc_ = DIVF(acc_, vd);                                                             \
        STOREF((ST *)(void *)((char *)dst + 2 * k), ROUNDF(acc_));                             \
    } while (0)
/* the loop over whole vectors of W elements, the tree written out for 1 to 8 sources */
#define H16_VECTORS(W, VT, LOADF, VCOMB, AV, DIVF, vd, ROUNDF, STOREF, ST)                     \
    do {                                                                                       \
        const char *s[8];                                                                      \
        for (int r = 0; r < 8; r++)                                                            \
            s[r] = (const char *)srcs[r < nsrc ? r : 0];                                       \
        switch (nsrc > 8 ? 0 : nsrc) {                                                         \
        case 1:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE1(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 2:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE2(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 3:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE3(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 4:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE4(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 5:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE5(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 6:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE6(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 7:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE7(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        case 8:                                                                                \
            for (; k + W <= count; k += W)                                                     \
                H16_PUT(VT, TREE8(VCOMB, H16_AT, LOADF), AV, DIVF, vd, ROUNDF, STOREF, ST);    \
            break;                                                                             \
        default:                                                                               \
            for (; k + W <= count; k += W) {                                                   \
                VT t_;                                                                         \
                H16_TREE(VT, t_, LOADF, ID, VCOMB, 2 * k);                                     \
                H16_PUT(VT, t_, AV, DIVF, vd, ROUNDF, STOREF, ST);                             \
            }                                                                                  \
            break;                                                                             \
        }                                                                                      \
    } while (0)

/* 8 at a time, then element by element. tag: bf16 or f16; SLD / SST: the scalar
 * conversions; VCOMB / COMB: the vector and scalar combination; AVG: divide at the end */
#define DEF_H16_AVX2(name, tag, SLD, SST, VCOMB, COMB, AVG)                                    \
    H16_AVX2 static void name(void *dst, const void *const *srcs, int nsrc, size_t count,      \
                              int div)                                                         \
    {                                                                                          \
        const __m256 vdiv = _mm256_set1_ps((float)(div > 0 ? div : 1));                        \
        const int lg = reduce_log2(nsrc), p2 = 1 << lg, rem = nsrc - p2;                       \
        size_t k = 0;                                                                          \
        H16_VECTORS(8, __m256, tag##_v_load, VCOMB, AVG, _mm256_div_ps, vdiv, tag##_v_round,   \
                    _mm_storeu_si128, __m128i);                                                \
        for (; k < count; k++) {                                                               \
            float acc;                                                                         \
            H16_TREE(float, acc, H16_RAW, SLD, COMB, 2 * k);                                   \
            if (AVG && div > 0)                                                                \
                acc = acc / (float)div;                                                        \
            ((u_h16 *)dst)[k] = SST(acc);                                                      \
        }                                                                                      \
    }

/* 16 at a time, the rest (< 16) through the AVX2 loop tail */
#define DEF_H16_AVX512(name, tag, WCOMB, tail, AVG)                                            \
    H16_AVX512 static void name(void *dst, const void *const *srcs, int nsrc, size_t count,    \
                                int div)                                                       \
    {                                                                                          \
        const __m512 wdiv = _mm512_set1_ps((float)(div > 0 ? div : 1));                        \
        const int lg = reduce_log2(nsrc), p2 = 1 << lg, rem = nsrc - p2;                       \
        size_t k = 0;                                                                          \
        H16_VECTORS(16, __m512, tag##_w_load, WCOMB, AVG, _mm512_div_ps, wdiv, tag##_w_round,  \
                    _mm256_storeu_si256, __m256i);                                             \
        if (k < count) {                                                                       \
            const void *rest[REDUCE_H16_NSRC_MAX];                                             \
            for (int r = 0; r < nsrc; r++)                                                     \
                rest[r] = (const char *)srcs[r] + 2 * k;                                       \
            tail((char *)dst + 2 * k, rest, nsrc, count - k, div);                             \
        }                                                                                      \
    }

/* the five operators of one type: name##_sum_avx2 ... name##_avg_avx512, and the tables */
#define DEF_H16_FAST(tag, SLD, SST)                                                            \
    DEF_H16_AVX2(reduce_##tag##_sum_avx2, tag, SLD, SST, V_SUM, C_SUM, 0)                      \
    DEF_H16_AVX2(reduce_##tag##_prod_avx2, tag, SLD, SST, V_PROD, C_PROD, 0)                   \
    DEF_H16_AVX2(reduce_##tag##_min_avx2, tag, SLD, SST, V_MIN, C_MIN, 0)                      \
    DEF_H16_AVX2(reduce_##tag##_max_avx2, tag, SLD, SST, V_MAX, C_MAX, 0)                      \
    DEF_H16_AVX2(reduce_##tag##_avg_avx2, tag, SLD, SST, V_SUM, C_SUM, 1)                      \
    DEF_H16_AVX512(reduce_##tag##_sum_avx512, tag, W_SUM, reduce_##tag##_sum_avx2, 0)          \
    DEF_H16_AVX512(reduce_##tag##_prod_avx512, tag, W_PROD, reduce_##tag##_prod_avx2, 0)       \
    DEF_H16_AVX512(reduce_##tag##_min_avx512, tag, W_MIN, reduce_##tag##_min_avx2, 0)          \
    DEF_H16_AVX512(reduce_##tag##_max_avx512, tag, W_MAX, reduce_##tag##_max_avx2, 0)          \
    DEF_H16_AVX512(reduce_##tag##_avg_avx512, tag, W_SUM, reduce_##tag##_avg_avx2, 1)          \
    static const reduce_fn_t reduce_##tag##_fast[2][SYMCOLL_OP_LAST] = {                       \
        {reduce_##tag##_sum_avx2, reduce_##tag##_prod_avx2, reduce_##tag##_min_avx2,           \
         reduce_##tag##_max_avx2, reduce_##tag##_avg_avx2},                                    \
        {reduce_##tag##_sum_avx512, reduce_##tag##_prod_avx512, reduce_##tag##_min_avx512,     \
         reduce_##tag##_max_avx512, reduce_##tag##_avg_avx512}};

DEF_H16_FAST(bf16, algo_bf16_to_float, algo_float_to_bf16)
DEF_H16_FAST(f16, half_to_float, float_to_half)

/* The loops for this CPU: 0 generic, 1 AVX2 (with F16C), 2 AVX-512; asked once (a race
 * only asks twice). SYMCOLL_REDUCE_ISA=generic|avx2 caps the choice (tests compare them);
 * it is read here, not from a communicator's configuration, since reductions have none
 * (the configuration table validates it at creation). */
static int reduce_isa(void)
{
    static int isa = -1;
    int i = __atomic_load_n(&isa, __ATOMIC_RELAXED);
    if (i < 0) {
        const char *cap = getenv("SYMCOLL_REDUCE_ISA");
        __builtin_cpu_init();
        i = !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")        ? 0
            : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? 2
                                                                                      : 1;
        if (cap && !strcmp(cap, "generic"))
            i = 0;
        else if (cap && !strcmp(cap, "avx2") && i > 1)
            i = 1;
        __atomic_store_n(&isa, i, __ATOMIC_RELAXED);
    }
    return i;
}
#endif

#define ROW(tag)                                                                               \
    {                                                                                          \
        reduce_##tag##_sum, reduce_##tag##_prod, reduce_##tag##_min, reduce_##tag##_max,       \
            reduce_##tag##_avg                                                                 \
    }

static const reduce_fn_t reduce_table[SYMCOLL_DTYPE_LAST][SYMCOLL_OP_LAST] = {
    ROW(i8),  ROW(u8),  ROW(i32),  ROW(u32), ROW(i64),
    ROW(u64), ROW(f16), ROW(bf16), ROW(f32), ROW(f64)};

void algo_reduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                 symcoll_dtype_t dtype, symcoll_op_t op, int avg_div)
{
#ifdef REDUCE_H16_FAST
    if ((dtype == SYMCOLL_BFLOAT16 || dtype == SYMCOLL_FLOAT16) &&
        nsrc <= REDUCE_H16_NSRC_MAX) {
        int isa = reduce_isa();
        if (isa > 0) {
            /* each table indexed by itself (not through a conditional of the two), so
             * that the object-size check knows which one is read */
            reduce_fn_t fn = dtype == SYMCOLL_BFLOAT16 ? reduce_bf16_fast[isa - 1][op]
                                                       : reduce_f16_fast[isa - 1][op];
            fn(dst, srcs, nsrc, count, avg_div);
            return;
        }
    }
#endif
    reduce_table[dtype][op](dst, srcs, nsrc, count, avg_div);
}

void algo_reduce_avg_finish(void *dst, const void *src, size_t count, symcoll_dtype_t dtype,
                            int div)
{
    /* one source: the loop only loads, then divides on the way out */
    algo_reduce(dst, &src, 1, count, dtype, SYMCOLL_AVG, div);
}

REDUCE_CLONES static void widen_f16(float *dst, const u_h16 *src, size_t count)
{
    for (size_t k = 0; k < count; k++)
        dst[k] = half_to_float(src[k]);
}

REDUCE_CLONES static void widen_bf16(float *dst, const u_h16 *src, size_t count)
{
    for (size_t k = 0; k < count; k++)
        dst[k] = algo_bf16_to_float(src[k]);
}

REDUCE_CLONES static void narrow_f16(u_h16 *dst, const float *src, size_t count)
{
    for (size_t k = 0; k < count; k++)
        dst[k] = float_to_half(src[k]);
}

REDUCE_CLONES static void narrow_bf16(u_h16 *dst, const float *src, size_t count)
{
    for (size_t k = 0; k < count; k++)
        dst[k] = algo_float_to_bf16(src[k]);
}

void algo_widen(float *dst, const void *src, size_t count, symcoll_dtype_t dtype)
{
    if (dtype == SYMCOLL_BFLOAT16)
        widen_bf16(dst, src, count);
    else
        widen_f16(dst, src, count);
}

void algo_narrow(void *dst, const float *src, size_t count, symcoll_dtype_t dtype)
{
    if (dtype == SYMCOLL_BFLOAT16)
        narrow_bf16(dst, src, count);
    else
        narrow_f16(dst, src, count);
}
