/* Unit tests of the element-wise reductions: float16/bfloat16 conversions (every bit
 * pattern, rounding to nearest even, overflow, subnormals), source order, aliasing,
 * alignment, block boundaries, integer wrap-around and avg's truncation. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/base/reduce.h"
#include "harness.h"

static uint32_t fbits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

START_TEST(test_half_roundtrip)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = algo_half_to_float((uint16_t)h);
        uint16_t back = algo_float_to_half(f);
        int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        /* (plain ifs in the loops: each ck_assert is a write to Check's pipe) */
        if (nan) {
            if (!isnan(f) || (back & 0x7c00) != 0x7c00 || !(back & 0x3ff))
                ck_abort_msg("float16 NaN 0x%04x -> 0x%04x", h, back);
        } else if (back != h) {
            ck_abort_msg("float16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
        }
    }
    /* a few values by their meaning */
    ck_assert(algo_half_to_float(0x3c00) == 1.0f);
    ck_assert(algo_half_to_float(0xc000) == -2.0f);
    ck_assert(algo_half_to_float(0x7bff) == 65504.0f);
    ck_assert(algo_half_to_float(0x0001) == 0x1p-24f);
    ck_assert(isinf(algo_half_to_float(0xfc00)) && algo_half_to_float(0xfc00) < 0);
}
END_TEST

START_TEST(test_half_rounding)
{
    /* ties go to the even mantissa */
    ck_assert_uint_eq(algo_float_to_half(1.0f + 0x1p-11f), 0x3c00);
    ck_assert_uint_eq(algo_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    ck_assert_uint_eq(algo_float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    /* overflow: 65520 is the first value that rounds to infinity */
    ck_assert_uint_eq(algo_float_to_half(65519.0f), 0x7bff);
    ck_assert_uint_eq(algo_float_to_half(65520.0f), 0x7c00);
    ck_assert_uint_eq(algo_float_to_half(-1e10f), 0xfc00);
    /* subnormals, with ties to even, and the carry into the smallest normal */
    ck_assert_uint_eq(algo_float_to_half(0x1p-24f), 0x0001);
    ck_assert_uint_eq(algo_float_to_half(0x1p-25f), 0x0000);
    ck_assert_uint_eq(algo_float_to_half(3 * 0x1p-25f), 0x0002);
    ck_assert_uint_eq(algo_float_to_half(-0x1p-26f), 0x8000);
    ck_assert_uint_eq(algo_float_to_half(0x1p-14f - 0x1p-26f), 0x0400);
    ck_assert_uint_eq(algo_float_to_half(-0.0f), 0x8000);
}
END_TEST

START_TEST(test_bf16)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = algo_bf16_to_float((uint16_t)h);
        uint16_t back = algo_float_to_bf16(f);
        if (fbits(f) >> 16 != h || (isnan(f) ? !isnan(algo_bf16_to_float(back)) : back != h))
            ck_abort_msg("bfloat16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
    }
    ck_assert_uint_eq(algo_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    ck_assert_uint_eq(algo_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    ck_assert_uint_eq(algo_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    ck_assert_uint_eq(algo_float_to_bf16(FLT_MAX), 0x7f80); /* rounds up to infinity */
}
END_TEST

/* The canonical tree (reduce.h): three sources combine as (a + b) + c, four as
 * (a + b) + (c + d), five as ((a + b) + c) + (d + e); each differs from another order. */
START_TEST(test_order_float)
{
    float a[1] = {1.0f}, b[1] = {0x1p24f}, c[1] = {-0x1p24f}, d[1];
    const void *s1[3] = {a, b, c}, *s2[3] = {b, c, a};
    algo_reduce(d, s1, 3, 1, SYMCOLL_FLOAT32, SYMCOLL_SUM, 0);
    ck_assert(d[0] == 0.0f); /* 1 + 2^24 rounds to 2^24 */
    algo_reduce(d, s2, 3, 1, SYMCOLL_FLOAT32, SYMCOLL_SUM, 0);
    ck_assert(d[0] == 1.0f);
    /* left to right gives 0 (2^24 + 1 + 1 rounds to 2^24 twice); the tree 2^24 + (1 -
     * 2^24) = 1 */
    float e[1] = {0x1p24f}, f[1] = {1.0f}, g[1] = {1.0f}, h[1] = {-0x1p24f};
    const void *s4[4] = {e, f, g, h};
    algo_reduce(d, s4, 4, 1, SYMCOLL_FLOAT32, SYMCOLL_SUM, 0);
    ck_assert(d[0] == 1.0f);
    /* five: ((2^24 + 1) + 1) + (1 - 2^24) = 2^24 + (1 - 2^24) = 1; left to right: 1 */
    float i5[1] = {1.0f};
    const void *s5[5] = {e, f, g, i5, h};
    algo_reduce(d, s5, 5, 1, SYMCOLL_FLOAT32, SYMCOLL_SUM, 0);
    ck_assert(d[0] == 1.0f);
    /* half types accumulate in float32: the same sum is exact there */
    uint16_t ha = algo_float_to_half(2048.0f), hb = algo_float_to_half(1.0f), hc = 0, hd;
    hc = algo_float_to_half(-2048.0f);
    const void *s3[3] = {&ha, &hb, &hc};
    algo_reduce(&hd, s3, 3, 1, SYMCOLL_FLOAT16, SYMCOLL_SUM, 0);
    ck_assert(algo_half_to_float(hd) == 1.0f);
}
END_TEST

/* The tree of 1 to 12 sources over several blocks, float64 sums whose value depends on
 * the order (exponents spread over 2^-30 .. 2^30, both signs), against the definition. */
static double tree_pairs(const double *leaf, int n)
{
    return n == 1 ? leaf[0] : tree_pairs(leaf, n / 2) + tree_pairs(leaf + n / 2, n / 2);
}

START_TEST(test_tree_sources)
{
    enum { N = 700, S = 12 };
    static double src[S][N], dst[N];
    unsigned seed = 7;
    for (int r = 0; r < S; r++)
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            src[r][i] = ldexp((seed >> 16 & 1) ? -1.0 : 1.0, (int)(seed >> 17) % 61 - 30) *
                        (1.0 + (double)(seed >> 8 & 0xff) / 256.0);
        }
    for (int n = 1; n <= S; n++) {
        const void *s[S];
        int p2 = 1, rem, sequential_differs = 0;
        while (2 * p2 <= n)
            p2 *= 2;
        rem = n - p2;
        for (int r = 0; r < n; r++)
            s[r] = src[r];
        algo_reduce(dst, s, n, N, SYMCOLL_FLOAT64, SYMCOLL_SUM, 0);
        for (int i = 0; i < N; i++) {
            double leaf[S], want, seq = src[0][i];
            for (int v = 0; v < p2; v++)
                leaf[v] = v < rem ? src[2 * v][i] + src[2 * v + 1][i] : src[v + rem][i];
            want = tree_pairs(leaf, p2);
            for (int r = 1; r < n; r++)
                seq += src[r][i];
            sequential_differs += seq != want;
            if (dst[i] != want)
                ck_abort_msg("%d sources, element %d: %a, expected %a", n, i, dst[i], want);
        }
        /* the inputs do tell the orders apart */
        if (n >= 4)
            ck_assert_int_gt(sequential_differs, 0);
    }
}
END_TEST

/* Long, misaligned, aliased: compared with a plain loop. */
START_TEST(test_alias_align_blocks)
{
    enum { N = 1531 };
    static unsigned char raw[4][N * 8 + 16];
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < sizeof(raw[k]); i++)
            raw[k][i] = (unsigned char)(i * 31 + (size_t)k * 7);
    double *src[3];
    double ref[N];
    for (int k = 0; k < 3; k++) {
        src[k] = (double *)(void *)(raw[k] + 1 + k); /* byte-misaligned on purpose */
        for (int i = 0; i < N; i++) {
            double v = (double)(i % 13) - 6 + k;
            memcpy((char *)src[k] + 8 * i, &v, 8);
        }
    }
    for (int i = 0; i < N; i++) {
        double x[3];
        for (int k = 0; k < 3; k++)
            memcpy(&x[k], (char *)src[k] + 8 * i, 8);
        ref[i] = (x[0] > x[1] ? x[0] : x[1]);
        ref[i] = ref[i] > x[2] ? ref[i] : x[2];
    }
    /* the destination is the second source */
    const void *s[3] = {src[0], src[1], src[2]};
    algo_reduce(src[1], s, 3, N, SYMCOLL_FLOAT64, SYMCOLL_MAX, 0);
    for (int i = 0; i < N; i++) {
        double v;
        memcpy(&v, (char *)src[1] + 8 * i, 8);
        if (v != ref[i])
            ck_abort_msg("element %d: %g, expected %g", i, v, ref[i]);
    }
}
END_TEST

START_TEST(test_integers)
{
    int8_t a[3] = {100, -128, -7}, b[3] = {100, -1, 0}, d[3];
    const void *s[2] = {a, b};
    algo_reduce(d, s, 2, 3, SYMCOLL_INT8, SYMCOLL_SUM, 0);
    ck_assert_int_eq(d[0], (int8_t)200 /* wraps */);
    ck_assert_int_eq(d[1], 127);
    algo_reduce(d, s, 2, 3, SYMCOLL_INT8, SYMCOLL_PROD, 0);
    ck_assert_int_eq(d[0], (int8_t)(100 * 100));
    ck_assert_int_eq(d[1], -128);
    /* avg: exact sum in 64 bits, truncated toward zero */
    algo_reduce(d, s, 2, 3, SYMCOLL_INT8, SYMCOLL_AVG, 2);
    ck_assert_int_eq(d[0], 100);
    ck_assert_int_eq(d[1], -64);
    ck_assert_int_eq(d[2], -3);
    /* partial sums (div 0) then the division */
    int32_t p[2] = {7, -7}, q[2] = {0, 0}, r[2];
    const void *s2[2] = {p, q};
    algo_reduce(r, s2, 2, 2, SYMCOLL_INT32, SYMCOLL_AVG, 0);
    ck_assert_int_eq(r[0], 7);
    algo_reduce_avg_finish(r, r, 2, SYMCOLL_INT32, 2);
    ck_assert_int_eq(r[0], 3);
    ck_assert_int_eq(r[1], -3);
    uint64_t u[1] = {UINT64_MAX}, v[1] = {2}, w[1];
    const void *s3[2] = {u, v};
    algo_reduce(w, s3, 2, 1, SYMCOLL_UINT64, SYMCOLL_SUM, 0);
    ck_assert_uint_eq(w[0], 1);
    algo_reduce(w, s3, 2, 1, SYMCOLL_UINT64, SYMCOLL_MIN, 0);
    ck_assert_uint_eq(w[0], 2);
}
END_TEST

/* ---- half-precision loops of every instruction set against a scalar reference -------
 * Random bit patterns, a quarter of them special (zeros, infinities, NaNs, subnormals,
 * the largest finite values); 1, 2, 3 and 5 sources; counts that leave 16-, 8- and
 * 1-element tails; byte offsets 0, 1 and 2; dst aliasing the first source. Bits must
 * match the scalar reference exactly unless the reference is a NaN (then: a NaN). */

#define BF_MAX 1037

static uint16_t bf_random(unsigned *seed, symcoll_dtype_t t)
{
    /* zeros, infinities, quiet and signalling NaNs, subnormals, smallest normal, largest */
    static const uint16_t special[2][12] = {{0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1,
                                             0x7f81, 0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f},
                                            {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01,
                                             0x7c01, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff}};
    unsigned r = (unsigned)rand_r(seed);
    if (r % 4 == 0)
        return special[t == SYMCOLL_FLOAT16][(r / 4) % 12];
    return (uint16_t)(r >> 3);
}

static float h16_to_float(symcoll_dtype_t t, uint16_t v)
{
    return t == SYMCOLL_FLOAT16 ? algo_half_to_float(v) : algo_bf16_to_float(v);
}

static uint16_t h16_from_float(symcoll_dtype_t t, float f)
{
    return t == SYMCOLL_FLOAT16 ? algo_float_to_half(f) : algo_float_to_bf16(f);
}

static float bf_comb(symcoll_op_t op, float a, float x)
{
    switch (op) {
    case SYMCOLL_PROD:
        return a * x;
    case SYMCOLL_MIN:
        return x < a ? x : a;
    case SYMCOLL_MAX:
        return x > a ? x : a;
    default:
        return a + x;
    }
}

/* The canonical tree of n values, written as its definition: with p2 the largest power
 * of two <= n and rem = n - p2, leaf v is x[2v] op x[2v+1] for v < rem, else x[v + rem];
 * then halves of the leaves combine recursively, left op right. */
static float bf_pairs(symcoll_op_t op, const float *leaf, int n)
{
    if (n == 1)
        return leaf[0];
    return bf_comb(op, bf_pairs(op, leaf, n / 2), bf_pairs(op, leaf + n / 2, n / 2));
}

static float bf_tree(symcoll_op_t op, const float *x, int n)
{
    float leaf[8];
    int p2 = 1, rem;
    while (2 * p2 <= n)
        p2 *= 2;
    rem = n - p2;
    for (int v = 0; v < p2; v++)
        leaf[v] = v < rem ? bf_comb(op, x[2 * v], x[2 * v + 1]) : x[v + rem];
    return bf_pairs(op, leaf, p2);
}

static void bf_check_type(const char *isa, symcoll_dtype_t t)
{
    static uint16_t buf[10][BF_MAX + 8], want[BF_MAX];
    static const int nsrcs[] = {1, 2, 3, 4, 5, 7, 8, 9};
    static const size_t counts[] = {1, 7, 8, 15, 16, 17, 33, BF_MAX};
    unsigned seed = 12345;

    if (isa)
        setenv("SYMCOLL_REDUCE_ISA", isa, 1);
    for (int op = 0; op < SYMCOLL_OP_LAST; op++)
        for (size_t ni = 0; ni < sizeof(nsrcs) / sizeof(nsrcs[0]); ni++)
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                for (int off = 0; off < 3; off++) {
                    int nsrc = nsrcs[ni], div = op == SYMCOLL_AVG ? 3 : 0;
                    size_t count = counts[ci];
                    const void *srcs[9];
                    char *dst;
                    for (int r = 0; r < nsrc; r++) {
                        char *p = (char *)buf[r] + off;
                        for (size_t k = 0; k < count; k++) {
                            uint16_t v = bf_random(&seed, t);
                            memcpy(p + 2 * k, &v, 2);
                        }
                        srcs[r] = p;
                    }
                    for (size_t k = 0; k < count; k++) {
                        uint16_t v;
                        float acc;
                        float x[9];
                        for (int r = 0; r < nsrc; r++) {
                            memcpy(&v, (const char *)srcs[r] + 2 * k, 2);
                            x[r] = h16_to_float(t, v);
                        }
                        acc = bf_tree((symcoll_op_t)op, x, nsrc);
                        if (div)
                            acc = acc / (float)div;
                        want[k] = h16_from_float(t, acc);
                    }
                    /* odd cases write in place over the first source */
                    dst = ci % 2 ? (char *)srcs[0] : (char *)buf[9] + off;
                    algo_reduce(dst, srcs, nsrc, count, t, (symcoll_op_t)op, div);
                    for (size_t k = 0; k < count; k++) {
                        uint16_t got;
                        memcpy(&got, dst + 2 * k, 2);
                        if (isnan(h16_to_float(t, want[k])) ? !isnan(h16_to_float(t, got))
                                                            : got != want[k])
                            ck_abort_msg("%s %s (isa %s), %d sources, count %zu, offset "
                                         "%d: element %zu is 0x%04x, expected 0x%04x",
                                         symcoll_dtype_name(t),
                                         symcoll_op_name((symcoll_op_t)op), isa ? isa : "best",
                                         nsrc, count, off, k, got, want[k]);
                    }
                }
}

static void bf_check_isa(const char *isa)
{
    bf_check_type(isa, SYMCOLL_BFLOAT16);
    bf_check_type(isa, SYMCOLL_FLOAT16);
}

/* each in its own process (fork mode): the instruction set is chosen once a process */
START_TEST(test_bf16_loops_best)
{
    bf_check_isa(NULL);
}
END_TEST

START_TEST(test_bf16_loops_avx2)
{
    bf_check_isa("avx2");
}
END_TEST

START_TEST(test_bf16_loops_generic)
{
    bf_check_isa("generic");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("reduce");

    tcase_add_test(tc, test_half_roundtrip);
    tcase_add_test(tc, test_half_rounding);
    tcase_add_test(tc, test_bf16);
    tcase_add_test(tc, test_order_float);
    tcase_add_test(tc, test_tree_sources);
    tcase_add_test(tc, test_alias_align_blocks);
    tcase_add_test(tc, test_integers);
    tcase_add_test(tc, test_bf16_loops_best);
    tcase_add_test(tc, test_bf16_loops_avx2);
    tcase_add_test(tc, test_bf16_loops_generic);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
