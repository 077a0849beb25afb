/* Tests of the benchmark engine's checker (tools/perf_engine.c): a right reduction
 * passes bitwise for every datatype and operator, and a wrong, stale or partial one
 * is counted. The ranks are simulated in one process; nothing is timed. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "perf_engine.c" /* the conversions under test are static */

/* Reduces the n ranks' inputs the way an implementation may: in rank order, in the
 * type itself (integers, float, double) or in float for the half types, avg as sum / n. */
static void naive_reduce(void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op, int n,
                         uint64_t seed)
{
    const size_t es = perf_dtype_size(t);
    void *in = malloc(count * es + 1);
    double *acc = calloc(count + 1, sizeof(double));

    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(acc);
    for (int r = 0; r < n; r++) {
        perf_fill(in, count, t, op, r, n, seed);
        for (size_t i = 0; i < count; i++) {
            /* every value involved is an integer far inside double's exact range, so a
             * double accumulator gives what the type's own arithmetic would */
            double v = perf_load(in, i, t);
            if (r == 0) {
                acc[i] = v;
                continue;
            }
            switch (op) {
            case SYMCOLL_SUM:
            case SYMCOLL_AVG: acc[i] += v; break;
            case SYMCOLL_PROD: acc[i] *= v; break;
            case SYMCOLL_MIN: acc[i] = v < acc[i] ? v : acc[i]; break;
            case SYMCOLL_MAX: acc[i] = v > acc[i] ? v : acc[i]; break;
            default: break;
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        double v = acc[i];
        if (op == SYMCOLL_AVG) {
            if (t == SYMCOLL_FLOAT16 || t == SYMCOLL_BFLOAT16 || t == SYMCOLL_FLOAT32)
                v = (double)((float)v / (float)n);
            else if (t == SYMCOLL_FLOAT64)
                v = v / n;
            else
                v = (double)((int64_t)v / n);
        }
        perf_store(out, i, t, (int64_t)v);
        ck_assert_msg(perf_load(out, i, t) == v, "%s %s: %g is not exact",
                      perf_dtype_name(t), perf_op_name(op), v);
    }
    free(in);
    free(acc);
}

START_TEST(test_right_results_pass)
{
    static const int ranks[] = {1, 2, 3, 5, 8, 64};
    const size_t count = 1001;
    void *out = malloc(count * 8);

    ck_assert_ptr_nonnull(out);
    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++)
        for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++)
            for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
                naive_reduce(out, count, t, op, ranks[k], 42);
                ck_assert_msg(!perf_check(out, count, t, op, 0, ranks[k], 42, "test"),
                              "%s %s on %d ranks", perf_dtype_name(t), perf_op_name(op),
                              ranks[k]);
            }
    free(out);
}
END_TEST

START_TEST(test_wrong_results_counted)
{
    const size_t count = 4099;
    const int n = 3;
    void *out = malloc(count * 8);

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr)); /* the expected complaints */
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++)
        for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
            /* a stale result (the previous seed) is caught in most elements */
            naive_reduce(out, count, t, op, n, 7);
            ck_assert_uint_gt(perf_check(out, count, t, op, 0, n, 8, "stale"), count / 4);
            /* one rank's input returned unreduced */
            perf_fill(out, count, t, op, 1, n, 8);
            ck_assert_uint_gt(perf_check(out, count, t, op, 0, n, 8, "unreduced"), count / 4);
            /* one element off */
            naive_reduce(out, count, t, op, n, 8);
            memset((char *)out + 17 * perf_dtype_size(t), 0x7f, perf_dtype_size(t));
            ck_assert_uint_eq(perf_check(out, count, t, op, 0, n, 8, "one element"), 1);
        }
    free(out);
}
END_TEST

START_TEST(test_half_conversions)
{
    /* every float16 / bfloat16 bit pattern that is a number survives a round trip */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) != 0x7c00u)
            ck_assert_uint_eq(perf_f32_to_f16(perf_f16_to_f32((uint16_t)h)), h);
        if ((h & 0x7f80u) != 0x7f80u)
            ck_assert_uint_eq(perf_f32_to_bf16(perf_bf16_to_f32((uint16_t)h)), h);
    }
    ck_assert_uint_eq(perf_f32_to_f16(65520.0f), 0x7c00u); /* rounds up to infinity */
    ck_assert_uint_eq(perf_f32_to_f16(2049.0f), 0x6800u);  /* tie to even: 2048 */
    ck_assert_uint_eq(perf_f32_to_bf16(257.0f), 0x4380u);  /* tie to even: 256 */
}
END_TEST

START_TEST(test_sizes_and_names)
{
    size_t v;
    symcoll_dtype_t t;
    symcoll_op_t op;

    ck_assert_int_eq(perf_parse_size("64M", &v), 0);
    ck_assert_uint_eq(v, 64u << 20);
    ck_assert_int_eq(perf_parse_size("8", &v), 0);
    ck_assert_uint_eq(v, 8);
    ck_assert_int_ne(perf_parse_size("-1", &v), 0);
    ck_assert_int_ne(perf_parse_size("3X", &v), 0);
    ck_assert_int_eq(perf_dtype_from_name("double", &t), 0);
    ck_assert_int_eq(t, SYMCOLL_FLOAT64);
    ck_assert_int_eq(perf_op_from_name("avg", &op), 0);
    ck_assert_int_eq(op, SYMCOLL_AVG);
    ck_assert_int_ne(perf_op_from_name("xor", &op), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("perf_engine");
    TCase *tc = tcase_create("checker");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_right_results_pass);
    tcase_add_test(tc, test_wrong_results_counted);
    tcase_add_test(tc, test_half_conversions);
    tcase_add_test(tc, test_sizes_and_names);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
