/* Tests of the inputs and checker that the benchmark engine and the tests share
 * (tools/refcheck.c, through tools/perf_check.c): a right reduction passes bitwise for
 * every datatype and operator, and a wrong, stale or partial one is counted. The ranks
 * are simulated in one process; nothing is timed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_engine.h"
#include "refcheck.h"

/* Reduces the n ranks' inputs the way an implementation may: in rank order, in the
 * type itself (integers, float, double) or in float for the half types, avg as sum / n
 * (integers truncated toward zero). */
static void naive_reduce_spec(void *out, size_t count, const refcheck_spec_t *s)
{
    const symcoll_dtype_t t = s->dtype;
    const symcoll_op_t op = s->op;
    const int n = s->nranks;
    const size_t es = refcheck_dtype_size(t);
    void *in = malloc(count * es + 1);
    double *acc = calloc(count + 1, sizeof(double));

    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(acc);
    for (int r = 0; r < n; r++) {
        refcheck_fill(s, r, in, count);
        for (size_t i = 0; i < count; i++) {
            /* every value involved is an integer far inside double's exact range, so a
             * double accumulator gives what the type's own arithmetic would */
            double v = refcheck_load(in, i, t);
            if (r == 0) {
                acc[i] = v;
                continue;
            }
            switch (op) {
            case SYMCOLL_SUM:
            case SYMCOLL_AVG:
                acc[i] += v;
                break;
            case SYMCOLL_PROD:
                acc[i] *= v;
                break;
            case SYMCOLL_MIN:
                acc[i] = v < acc[i] ? v : acc[i];
                break;
            case SYMCOLL_MAX:
                acc[i] = v > acc[i] ? v : acc[i];
                break;
            default:
                break;
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
        refcheck_store(out, i, t, v);
        ck_assert_msg(refcheck_load(out, i, t) == v, "%s %s: %g is not exact",
                      perf_dtype_name(t), perf_op_name(op), v);
    }
    free(in);
    free(acc);
}

/* the same for the engine's inputs (exact avg) */
static void naive_reduce(void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op, int n,
                         uint64_t seed)
{
    refcheck_spec_t s = {t, op, n, seed, REFCHECK_AVG_EXACT};
    naive_reduce_spec(out, count, &s);
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

/* Without REFCHECK_AVG_EXACT (what the library's tests use) avg follows symcoll's rule
 * and the inputs are not lifted: float averages have fractions and integer ones truncate
 * negative sums toward zero, and the reference still matches a reduction done in the
 * type on rank counts that are powers of two. */
START_TEST(test_symcoll_avg_rule)
{
    static const int ranks[] = {1, 2, 4, 8, 64};
    const size_t count = 4099;
    void *out = malloc(count * 8);

    ck_assert_ptr_nonnull(out);
    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++)
        for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++)
            for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
                refcheck_spec_t s = {t, op, ranks[k], 9, 0};
                size_t first = 0, fractions = 0, truncated = 0;
                naive_reduce_spec(out, count, &s);
                ck_assert_msg(!refcheck_compare(&s, out, count, &first),
                              "%s %s on %d ranks: element %zu", perf_dtype_name(t),
                              perf_op_name(op), ranks[k], first);
                if (t == SYMCOLL_INT8 || t == SYMCOLL_UINT8) {
                    /* the poison byte is never a result, nor rank 0's input */
                    const unsigned char p =
                        t == SYMCOLL_INT8 ? REFCHECK_POISON_INT8 : REFCHECK_POISON_UINT8;
                    ck_assert_ptr_null(memchr(out, p, count));
                    refcheck_fill(&s, 0, out, count);
                    ck_assert_ptr_null(memchr(out, p, count));
                }
                if (op != SYMCOLL_AVG || ranks[k] == 1)
                    continue;
                for (size_t i = 0; i < count; i++) {
                    double sum = 0, want = refcheck_expected(&s, i);
                    for (int r = 0; r < ranks[k]; r++)
                        sum += refcheck_input(&s, r, i);
                    fractions += want != (double)(int64_t)want;
                    truncated += sum < 0 && (int64_t)sum % ranks[k] != 0;
                }
                if (refcheck_is_float(t))
                    ck_assert_uint_gt(fractions, count / 4);
                else if (!refcheck_is_unsigned(t))
                    ck_assert_uint_gt(truncated, count / 8);
            }
    ck_assert_double_eq(refcheck_finish(SYMCOLL_INT32, SYMCOLL_AVG, -7, 2), -3);
    ck_assert_double_eq(refcheck_finish(SYMCOLL_FLOAT32, SYMCOLL_AVG, -7, 2), -3.5);
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
            memset((char *)out + 17 * refcheck_dtype_size(t), 0x7f, refcheck_dtype_size(t));
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
            ck_assert_uint_eq(refcheck_f32_to_f16(refcheck_f16_to_f32((uint16_t)h)), h);
        if ((h & 0x7f80u) != 0x7f80u)
            ck_assert_uint_eq(refcheck_f32_to_bf16(refcheck_bf16_to_f32((uint16_t)h)), h);
    }
    ck_assert_uint_eq(refcheck_f32_to_f16(65520.0f), 0x7c00u); /* rounds up to infinity */
    ck_assert_uint_eq(refcheck_f32_to_f16(2049.0f), 0x6800u);  /* tie to even: 2048 */
    ck_assert_uint_eq(refcheck_f32_to_bf16(257.0f), 0x4380u);  /* tie to even: 256 */
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

/* ---- options and output: a fake backend of 2 ranks in one process ------------------
 * Its all-reduce copies (so a checked result is wrong), every timing lasts 1 ms on this
 * rank and the other rank takes 3 ms: max over ranks is 3 ms, min 1 ms, mean 2 ms. */
static int fake_alloc(void *ctx, size_t bytes, void **p)
{
    (void)ctx;
    *p = malloc(bytes);
    return *p ? 0 : 1;
}
static void fake_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
/* the send buffers the fake all-reduce saw, in the order first seen (up to 4) */
static const void *fake_sends[4];
static int fake_nsends;
static int fake_allreduce(void *ctx, const void *s, void *r, size_t count, symcoll_dtype_t t,
                          symcoll_op_t op)
{
    int k = 0;
    (void)ctx, (void)op;
    while (k < fake_nsends && fake_sends[k] != s)
        k++;
    if (k == fake_nsends && k < 4)
        fake_sends[fake_nsends++] = s;
    memmove(r, s, count * refcheck_dtype_size(t));
    return 0;
}
static int fake_ok(void *ctx)
{
    (void)ctx;
    return 0;
}
static int fake_max_double(void *ctx, double *v)
{
    (void)ctx;
    *v = *v > 3 * *v ? *v : 3 * *v;
    return 0;
}
static int fake_sum_u64(void *ctx, uint64_t *v)
{
    (void)ctx;
    *v *= 4;
    return 0;
}
static int fake_timer_stop(void *ctx, double *sec)
{
    (void)ctx;
    *sec = 1e-3;
    return 0;
}
static int fake_supports(void *ctx, symcoll_dtype_t t, symcoll_op_t op)
{
    (void)ctx, (void)t, (void)op;
    return 1;
}
static const char *fake_strerror(void *ctx, int rc)
{
    (void)ctx, (void)rc;
    return "fake";
}

/* whether the fake has the other collectives (copies too: checked, they are wrong) */
static int fake_has_colls;
static int fake_rs(void *ctx, const void *s, void *r, size_t count, symcoll_dtype_t t,
                   symcoll_op_t op)
{
    (void)ctx, (void)op;
    memmove(r, s, count * refcheck_dtype_size(t));
    return 0;
}
static int fake_ag(void *ctx, const void *s, void *r, size_t count, symcoll_dtype_t t)
{
    (void)ctx;
    memmove(r, s, count * refcheck_dtype_size(t));
    return 0;
}
static int fake_bc(void *ctx, const void *s, void *r, size_t count, symcoll_dtype_t t, int root)
{
    (void)ctx, (void)root;
    memmove(r, s, count * refcheck_dtype_size(t));
    return 0;
}

/* Parses the options, runs the sweep on the fake backend; returns its stdout. */
static char *run_fake(int argc, char **argv, int *rc_p)
{
    perf_backend_t be = {
        .rank = 0,
        .nranks = 2,
        .supports = fake_supports,
        .alloc = fake_alloc,
        .free = fake_free,
        .allreduce = fake_allreduce,
        .barrier = fake_ok,
        .max_double = fake_max_double,
        .sum_u64 = fake_sum_u64,
        .timer_start = fake_ok,
        .timer_stop = fake_timer_stop,
        .strerror = fake_strerror,
    };
    perf_opts_t o;

    if (fake_has_colls) {
        be.reduce_scatter = fake_rs;
        be.allgather = fake_ag;
        be.broadcast = fake_bc;
        be.barrier_coll = fake_ok;
    }
    char path[] = "/tmp/test_perf_engine.XXXXXX", *text = calloc(1, 1 << 16);
    int fd = mkstemp(path), saved;
    FILE *f;

    ck_assert_int_ge(fd, 0);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(perf_parse_args(argc, argv, "test", &o, NULL), 0);
    fflush(stdout);
    saved = dup(1);
    dup2(fd, 1);
    *rc_p = perf_run(&o, &be);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fd);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    (void)!fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    unlink(path);
    return text;
}

START_TEST(test_time_over_ranks)
{
    /* -a 0..3: rank 0's, mean, min, max; min_us and max_us always the extremes */
    static const double want[4] = {1000, 2000, 1000, 3000};
    char mode[2] = {0};
    char *argv[] = {"test", "-b", "64", "-e", "64",    "-n", "1",  "-w", "0",
                    "-r",   "1",  "-c", "0",  "--csv", "-a", mode, NULL};
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    for (int a = 0; a < 4; a++) {
        char *field[16], *save = NULL, *row;
        int rc, n = 0;
        mode[0] = (char)('0' + a);
        char *out = run_fake((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_ptr_nonnull(row = strstr(out, "\n64,"));
        row = strtok_r(row + 1, "\n", &save);
        /* size,count,type,redop,algo,placement,time_us,algbw,busbw,wrong,min_us,max_us */
        for (char *p = row, *c; n < 16; p = c + 1) {
            field[n++] = p;
            if (!(c = strchr(p, ',')))
                break;
            *c = '\0';
        }
        ck_assert_int_eq(n, 12);
        ck_assert_double_eq_tol(strtod(field[6], NULL), want[a], 1e-6);
        ck_assert_str_eq(field[9], ""); /* not checked */
        ck_assert_double_eq_tol(strtod(field[10], NULL), 1000, 1e-6);
        ck_assert_double_eq_tol(strtod(field[11], NULL), 3000, 1e-6);
        free(out);
    }
}
END_TEST

START_TEST(test_check_and_json)
{
    char *on[] = {"test", "-b", "64", "-e", "128", "-n", "1", "-r", "2", "--json", NULL};
    char *off[] = {"test", "-b", "64",     "-e", "128", "-n", "1",
                   "-r",   "2",  "--json", "-c", "0",   NULL};
    char *both[] = {"test", "--json", "--csv", NULL};
    char *bad_a[] = {"test", "-a", "4", NULL};
    char *bad_c[] = {"test", "-c", "2", NULL};
    perf_opts_t o;
    int rc;
    char *out;

    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    /* checked: the fake's copies are wrong, and the document says so */
    out = run_fake(10, on, &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert_ptr_nonnull(strstr(out, "\"check\": true"));
    ck_assert_ptr_nonnull(strstr(out, "\"size\": 128"));
    ck_assert_ptr_nonnull(strstr(out, "\"status\": \"wrong\""));
    ck_assert_ptr_null(strstr(out, "\"wrong\": null"));
    ck_assert_int_eq(out[strlen(out) - 2], '}');
    free(out);
    /* -c 0: nothing checked, wrong is null, the run succeeds */
    out = run_fake(12, off, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(out, "\"check\": false"));
    ck_assert_ptr_nonnull(strstr(out, "\"wrong\": null}"));
    ck_assert_ptr_nonnull(strstr(out, "\"status\": \"ok\""));
    free(out);
    ck_assert_int_eq(perf_parse_args(3, both, "test", &o, NULL), -1);
    ck_assert_int_eq(perf_parse_args(3, bad_a, "test", &o, NULL), -1);
    ck_assert_int_eq(perf_parse_args(3, bad_c, "test", &o, NULL), -1);
    ck_assert_int_eq(perf_parse_args(1, both, "test", &o, NULL), 0);
    ck_assert_int_eq(o.check, 1);
    ck_assert_int_eq(o.avg_mode, PERF_AVG_MAX);
}
END_TEST

/* Out of place, the calls rotate between two send buffers; --same-buffer sends one. */
START_TEST(test_same_buffer)
{
    char *argv[] = {"test", "-b", "64", "-e", "64", "-n",    "4",  "-w",
                    "0",    "-r", "2",  "-c", "0",  "--csv", NULL, NULL};
    perf_opts_t o;
    char *out;
    int rc;

    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    fake_nsends = 0;
    out = run_fake(14, argv, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(fake_nsends, 2);
    free(out);
    argv[14] = "--same-buffer";
    ck_assert_int_eq(perf_parse_args(15, argv, "test", &o, NULL), 0);
    ck_assert_int_eq(o.same_buffer, 1);
    fake_nsends = 0;
    out = run_fake(15, argv, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(fake_nsends, 1);
    free(out);
}
END_TEST

/* --coll: nccl-tests' sizes and bus bandwidth for each collective, and the checks of
 * reduce-scatter's block and of the byte patterns catch a wrong element. */
START_TEST(test_collectives)
{
    perf_shape_t sh;
    perf_coll_t coll;
    double ref[64];
    unsigned char buf[3 * 40];
    char *argv[] = {"test", "-b", "96", "-e", "96",    "-n",     "1",         "-w", "0",
                    "-r",   "1",  "-c", "0",  "--csv", "--coll", "allgather", NULL};
    char *field[16], *save = NULL, *row, *out;
    int rc, n = 0;

    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    ck_assert_int_eq(perf_coll_from_name("reduce_scatter", &coll), 0);
    ck_assert_int_eq(coll, PERF_COLL_REDUCE_SCATTER);
    ck_assert_int_ne(perf_coll_from_name("alltoall", &coll), 0);
    /* 100 bytes of doubles over 3 ranks: 12 elements, 4 per rank */
    perf_coll_shape(PERF_COLL_REDUCE_SCATTER, 100, 8, 3, &sh);
    ck_assert_uint_eq(sh.count, 4);
    ck_assert_uint_eq(sh.send_elems, 12);
    ck_assert_uint_eq(sh.recv_elems, 4);
    ck_assert_uint_eq(sh.bytes, 96);
    perf_coll_shape(PERF_COLL_ALLGATHER, 100, 8, 3, &sh);
    ck_assert_uint_eq(sh.count, 4);
    ck_assert_uint_eq(sh.send_elems, 4);
    ck_assert_uint_eq(sh.recv_elems, 12);
    ck_assert_uint_eq(sh.bytes, 96);
    perf_coll_shape(PERF_COLL_BROADCAST, 100, 8, 3, &sh);
    ck_assert_uint_eq(sh.count, 12);
    ck_assert_uint_eq(sh.bytes, 96);
    perf_coll_shape(PERF_COLL_BARRIER, 100, 8, 3, &sh);
    ck_assert_uint_eq(sh.bytes, 0);
    ck_assert_double_eq_tol(perf_busbw_factor(PERF_COLL_ALLREDUCE, 4), 1.5, 1e-12);
    ck_assert_double_eq_tol(perf_busbw_factor(PERF_COLL_REDUCE_SCATTER, 4), 0.75, 1e-12);
    ck_assert_double_eq_tol(perf_busbw_factor(PERF_COLL_ALLGATHER, 4), 0.75, 1e-12);
    ck_assert_double_eq_tol(perf_busbw_factor(PERF_COLL_BROADCAST, 4), 1.0, 1e-12);
    ck_assert_double_eq_tol(perf_busbw_factor(PERF_COLL_BARRIER, 4), 0.0, 1e-12);

    /* reduce-scatter: rank 1's block (elements 8..15 of the reduction) of 3 ranks */
    perf_fill(ref, 24, SYMCOLL_FLOAT64, SYMCOLL_SUM, -1, 3, 7);
    ck_assert_uint_eq(
        perf_check_block(ref + 8, 8, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1, 3, 7, "t"), 0);
    /* another rank's block, or a stale seed, is wrong */
    ck_assert_uint_eq(perf_check_block(ref, 8, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1, 3, 7, "t"),
                      8);
    ck_assert_uint_gt(
        perf_check_block(ref + 8, 8, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1, 3, 8, "t"), 4);
    ref[13] += 1;
    ck_assert_uint_eq(
        perf_check_block(ref + 8, 8, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1, 3, 7, "t"), 1);

    /* patterns: 3 blocks of 40 bytes (5 doubles, 10 float32, 40 int8) */
    for (int q = 0; q < 3; q++)
        perf_pattern_fill(buf + 40 * q, 40, q, 99);
    for (int q = 0; q < 3; q++) {
        ck_assert_uint_eq(perf_pattern_check(buf + 40 * q, 5, 8, q, 99, "t"), 0);
        ck_assert_uint_eq(perf_pattern_check(buf + 40 * q, 40, 1, q, 99, "t"), 0);
    }
    ck_assert_uint_eq(perf_pattern_check(buf, 5, 8, 1, 99, "t"), 5); /* another rank's bytes */
    ck_assert_uint_eq(perf_pattern_check(buf, 5, 8, 0, 98, "t"), 5); /* stale seed */
    buf[40 + 13] ^= 0x10;
    ck_assert_uint_eq(perf_pattern_check(buf + 40, 10, 4, 1, 99, "t"), 1);
    ck_assert_uint_eq(perf_pattern_check(buf + 40, 40, 1, 1, 99, "t"), 1);

    /* the fake's 2 ranks: allgather's size is the receive buffer, busbw algbw / 2 */
    out = run_fake((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, &rc);
    ck_assert_int_eq(rc, 2); /* the fake has no allgather */
    free(out);
    {
        perf_opts_t o;
        ck_assert_int_eq(perf_parse_args(16, argv, "test", &o, NULL), 0);
        ck_assert_int_eq(o.coll, PERF_COLL_ALLGATHER);
    }
    fake_has_colls = 1;
    out = run_fake((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, &rc);
    fake_has_colls = 0;
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(row = strstr(out, "\n96,"));
    row = strtok_r(row + 1, "\n", &save);
    for (char *p = row, *c; n < 16; p = c + 1) {
        field[n++] = p;
        if (!(c = strchr(p, ',')))
            break;
        *c = '\0';
    }
    ck_assert_int_eq(n, 12);
    ck_assert_str_eq(field[1], "12");   /* count: float32 elements per rank */
    ck_assert_str_eq(field[3], "none"); /* no operator */
    /* 96 bytes in 3 ms (-a 3: the slowest rank) */
    ck_assert_double_eq_tol(strtod(field[7], NULL), 96 / 3e-3 / 1e9, 1e-4);
    ck_assert_double_eq_tol(strtod(field[8], NULL), 96 / 3e-3 / 1e9 / 2, 1e-4);
    free(out);
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
    tcase_add_test(tc, test_symcoll_avg_rule);
    tcase_add_test(tc, test_wrong_results_counted);
    tcase_add_test(tc, test_half_conversions);
    tcase_add_test(tc, test_sizes_and_names);
    tcase_add_test(tc, test_time_over_ranks);
    tcase_add_test(tc, test_check_and_json);
    tcase_add_test(tc, test_collectives);
    tcase_add_test(tc, test_same_buffer);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
