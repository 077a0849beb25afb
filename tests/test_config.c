/* Tests of the configuration table (parsers, bad values failing communicator
 * creation with a named variable), of the API version handshake of communicator
 * creation, of abort racing destroy, and of the status strings. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "harness.h"
#include "symcoll.h"

START_TEST(test_parse_size)
{
    static const struct {
        const char *s;
        size_t v;
    } good[] = {{"0", 0},
                {"4096", 4096},
                {"64K", 65536},
                {"64k", 65536},
                {"2M", 2u << 20},
                {"1G", (size_t)1 << 30},
                {"1T", (size_t)1 << 40},
                {"4KiB", 4096},
                {"4kb", 4096},
                {"7B", 7},
                {"16M", (size_t)16 << 20}};
    static const char *const bad[] = {"",
                                      "-1",
                                      "abc",
                                      "4X",
                                      "K",
                                      "1.5M",
                                      " 4",
                                      "4K ",
                                      "4KK",
                                      "4Kx",
                                      "99999999999999999999",
                                      "17179869184G",
                                      "0x10"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        size_t v = 12345;
        ck_assert_msg(config_parse_size(good[i].s, &v) == 0, "'%s' rejected", good[i].s);
        ck_assert_msg(v == good[i].v, "'%s' gave %zu", good[i].s, v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t v = 12345;
        ck_assert_msg(config_parse_size(bad[i], &v) != 0, "'%s' accepted", bad[i]);
        ck_assert_msg(v == 12345, "'%s' wrote the output", bad[i]);
    }
}
END_TEST

START_TEST(test_parse_time)
{
    static const struct {
        const char *s;
        double v;
    } good[] = {{"1.5", 1.5},    {"2s", 2.0},   {"200ms", 0.2},
                {"50us", 50e-6}, {"2m", 120.0}, {"0", 0.0}};
    static const char *const bad[] = {"",    "abc", "-1",  "1h",     "1.5x", "inf",
                                      "nan", "ms",  "1 s", "1e308m", "1e400"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        double v = -7;
        ck_assert_msg(config_parse_time(good[i].s, &v) == 0, "'%s' rejected", good[i].s);
        ck_assert_double_eq_tol(v, good[i].v, 1e-12);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = -7;
        ck_assert_msg(config_parse_time(bad[i], &v) != 0, "'%s' accepted", bad[i]);
        ck_assert_double_eq(v, -7);
    }
}
END_TEST

START_TEST(test_parse_numbers)
{
    long l = 0;
    double d = 0;
    ck_assert_int_eq(config_parse_long("12", &l), 0);
    ck_assert_int_eq(l, 12);
    ck_assert_int_eq(config_parse_long("-3", &l), 0);
    ck_assert_int_eq(l, -3);
    ck_assert_int_ne(config_parse_long("", &l), 0);
    ck_assert_int_ne(config_parse_long("12a", &l), 0);
    ck_assert_int_ne(config_parse_long("99999999999999999999999", &l), 0);
    ck_assert_int_eq(l, -3);
    ck_assert_int_eq(config_parse_double("2.5", &d), 0);
    ck_assert_double_eq(d, 2.5);
    ck_assert_int_ne(config_parse_double("1e", &d), 0);
    ck_assert_int_ne(config_parse_double("inf", &d), 0);
    ck_assert_int_ne(config_parse_double("", &d), 0);
    ck_assert_double_eq(d, 2.5);
}
END_TEST

/* Clear every variable of the table so the environment of `make check` cannot leak
 * into these tests (each test runs in its own process). */
static void clear_env(void)
{
    for (size_t i = 0; i < config_num_vars(); i++)
        unsetenv(config_var_name(i));
}

START_TEST(test_table_names)
{
    int have_cookie = 0, have_timeout = 0;
    ck_assert_uint_gt(config_num_vars(), 0);
    for (size_t i = 0; i < config_num_vars(); i++) {
        const char *n = config_var_name(i);
        ck_assert_ptr_nonnull(n);
        ck_assert_msg(!strncmp(n, "SYMCOLL_", 8), "row %zu is '%s'", i, n);
        for (size_t k = 0; k < i; k++)
            ck_assert_msg(strcmp(n, config_var_name(k)), "'%s' appears twice", n);
        have_cookie |= !strcmp(n, "SYMCOLL_COOKIE");
        have_timeout |= !strcmp(n, "SYMCOLL_TIMEOUT");
    }
    ck_assert(have_cookie && have_timeout);
    ck_assert_ptr_null(config_var_name(config_num_vars()));
}
END_TEST

START_TEST(test_read_defaults)
{
    config_t cfg;
    clear_env();
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_double_eq(cfg.timeout_sec, 120.0);
    ck_assert_int_eq(cfg.rank, -1);
    ck_assert_int_eq(cfg.nranks, -1);
    ck_assert_str_eq(cfg.addr, "");
    ck_assert_str_eq(cfg.cookie, "");
    setenv("SYMCOLL_TIMEOUT", "250ms", 1);
    setenv("SYMCOLL_RANK", "3", 1);
    setenv("SYMCOLL_POOL_MIN_SIZE", "8M", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_double_eq_tol(cfg.timeout_sec, 0.25, 1e-12);
    ck_assert_int_eq(cfg.rank, 3);
    ck_assert_uint_eq(cfg.pool_min_size, 8u << 20);
    /* the largest timeout, 30 days, in seconds and in minutes */
    setenv("SYMCOLL_TIMEOUT", "2592000", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_double_eq(cfg.timeout_sec, 2592000.0);
    setenv("SYMCOLL_TIMEOUT", "43200m", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_double_eq(cfg.timeout_sec, 2592000.0);
    /* how the other collectives run on CUDA memory: allreduce by default, any case */
    clear_env();
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.cuda_coll, CONFIG_CUDA_COLL_ALLREDUCE);
    setenv("SYMCOLL_CUDA_COLL", "Auto", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.cuda_coll, CONFIG_CUDA_COLL_AUTO);
    /* the other enumerated settings: parsed once into their enumerators */
    setenv("SYMCOLL_NET_PROTOCOL", "PUT", 1);
    setenv("SYMCOLL_CUDA_NET_PATH", "staged", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.net_protocol, CONFIG_NET_PROTOCOL_PUT);
    ck_assert_int_eq(cfg.cuda_net_path, CONFIG_CUDA_NET_PATH_STAGED);
    setenv("SYMCOLL_NET_PROTOCOL", "rdma", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_ERR_INVALID_PARAM);
    unsetenv("SYMCOLL_NET_PROTOCOL");
    unsetenv("SYMCOLL_CUDA_NET_PATH");
    /* a renamed variable: the former name is read while the new one is unset, and the
     * new one wins where both are set */
    setenv("SYMCOLL_CUDA_NET_LANES", "3", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.cuda_net_channels, 3);
    setenv("SYMCOLL_CUDA_NET_CHANNELS", "5", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.cuda_net_channels, 5);
    unsetenv("SYMCOLL_CUDA_NET_CHANNELS");
    setenv("SYMCOLL_CUDA_NET_LANES", "16", 1);
    ck_assert_int_eq(config_read(&cfg), SYMCOLL_ERR_INVALID_PARAM);
    unsetenv("SYMCOLL_CUDA_NET_LANES");
}
END_TEST

START_TEST(test_read_bad)
{
    static const char *const bad[][2] = {
        {"SYMCOLL_TIMEOUT", "abc"},     {"SYMCOLL_TIMEOUT", "0"},
        {"SYMCOLL_TIMEOUT", "-5"},      {"SYMCOLL_LOG_LEVEL", "loud"},
        {"SYMCOLL_RANK", "-1"},         {"SYMCOLL_NRANKS", "x"},
        {"SYMCOLL_POOL_GROWTH", "0.5"}, {"SYMCOLL_POOL_MAX_SIZE", "lots"},
        {"SYMCOLL_ALGO", "fastest"},    {"SYMCOLL_POOL_MIN_SIZE", "128G"},
        {"SYMCOLL_TIMEOUT", "1e308m"},  {"SYMCOLL_TIMEOUT", "2592000.5"},
        {"SYMCOLL_TIMEOUT", "43201m"},  {"SYMCOLL_TIMEOUT", "1e300"},
        {"SYMCOLL_CUDA_COLL", "native"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        config_t cfg;
        clear_env();
        setenv(bad[i][0], bad[i][1], 1);
        ck_assert_msg(config_read(&cfg) == SYMCOLL_ERR_INVALID_PARAM, "%s=%s accepted",
                      bad[i][0], bad[i][1]);
    }
}
END_TEST

/* A bad value stops communicator creation with SYMCOLL_ERR_INVALID_PARAM, the output
 * untouched; the same environment with the value fixed works (one rank). */
START_TEST(test_comm_create_bad_env)
{
    static const char *const bad[][2] = {{"SYMCOLL_TIMEOUT", "abc"},
                                         {"SYMCOLL_TIMEOUT", "1e308m"},
                                         {"SYMCOLL_COOKIE", "not-hex"},
                                         {"SYMCOLL_COOKIE", "0"},
                                         {"SYMCOLL_LOG_LEVEL", "verbose"}};
    symcoll_comm_h comm = (symcoll_comm_h)(uintptr_t)0x1;
    clear_env();
    setenv("SYMCOLL_RANK", "0", 1);
    setenv("SYMCOLL_NRANKS", "1", 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv(bad[i][0], bad[i][1], 1);
        ck_assert_msg(symcoll_comm_create(NULL, &comm) == SYMCOLL_ERR_INVALID_PARAM,
                      "%s=%s accepted", bad[i][0], bad[i][1]);
        ck_assert(comm == (symcoll_comm_h)(uintptr_t)0x1);
        unsetenv(bad[i][0]);
    }
    setenv("SYMCOLL_TIMEOUT", "30", 1);
    setenv("SYMCOLL_COOKIE", "00c0ffee", 1);
    ck_assert_int_eq(symcoll_comm_create(NULL, &comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    /* rank and size unknown */
    clear_env();
    ck_assert_int_eq(symcoll_comm_create(NULL, &comm), SYMCOLL_ERR_INVALID_PARAM);
}
END_TEST

/* The API version handshake: a caller built against another major, or a newer minor
 * than the library's, is refused with SYMCOLL_ERR_UNSUPPORTED and its output untouched;
 * the header's own version and an older minor create a communicator (one rank). */
START_TEST(test_comm_create_version)
{
    symcoll_comm_params_t params = {.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK |
                                                  SYMCOLL_COMM_PARAM_FIELD_NRANKS,
                                    .rank = 0,
                                    .nranks = 1};
    static const unsigned refused[][2] = {
        {SYMCOLL_API_MAJOR + 1, SYMCOLL_API_MINOR},
        {SYMCOLL_API_MAJOR + 1, 0},
        {SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR + 1},
#if SYMCOLL_API_MAJOR > 0
        {SYMCOLL_API_MAJOR - 1, SYMCOLL_API_MINOR},
#endif
    };
    symcoll_comm_h comm = (symcoll_comm_h)(uintptr_t)0x1;

    clear_env();
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        ck_assert_msg(symcoll_comm_create_version(refused[i][0], refused[i][1], &params,
                                                  &comm) == SYMCOLL_ERR_UNSUPPORTED,
                      "API %u.%u accepted by a library of %u.%u", refused[i][0], refused[i][1],
                      SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR);
        ck_assert(comm == (symcoll_comm_h)(uintptr_t)0x1);
    }
    /* refused before the arguments are looked at */
    ck_assert_int_eq(
        symcoll_comm_create_version(SYMCOLL_API_MAJOR + 1, SYMCOLL_API_MINOR, NULL, NULL),
        SYMCOLL_ERR_UNSUPPORTED);

    ck_assert_int_eq(
        symcoll_comm_create_version(SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR, &params, &comm),
        SYMCOLL_OK);
    ck_assert(comm != (symcoll_comm_h)(uintptr_t)0x1);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    if (SYMCOLL_API_MINOR > 0) {
        ck_assert_int_eq(symcoll_comm_create_version(SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR - 1,
                                                     &params, &comm),
                         SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    }
    /* the header's inline wrapper passes its own version */
    comm = NULL;
    ck_assert_int_eq(symcoll_comm_create(&params, &comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}
END_TEST

/* The timeout parameter: a NaN, an infinity, zero, a negative value or more than 30
 * days is refused with SYMCOLL_ERR_INVALID_PARAM, the output untouched; 30 days is
 * accepted (one rank). */
START_TEST(test_comm_create_timeout)
{
    const double bad[] = {INFINITY, -INFINITY, NAN, 0.0, -1.0, 2592000.5, 1e308};
    symcoll_comm_params_t params = {.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK |
                                                  SYMCOLL_COMM_PARAM_FIELD_NRANKS |
                                                  SYMCOLL_COMM_PARAM_FIELD_TIMEOUT,
                                    .rank = 0,
                                    .nranks = 1};
    symcoll_comm_h comm = (symcoll_comm_h)(uintptr_t)0x1;

    clear_env();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        params.timeout_sec = bad[i];
        ck_assert_msg(symcoll_comm_create(&params, &comm) == SYMCOLL_ERR_INVALID_PARAM,
                      "timeout %g accepted", bad[i]);
        ck_assert(comm == (symcoll_comm_h)(uintptr_t)0x1);
    }
    params.timeout_sec = 2592000.0;
    ck_assert_int_eq(symcoll_comm_create(&params, &comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}
END_TEST

/* symcoll_comm_abort from another thread racing symcoll_comm_destroy (one rank): every
 * abort returns SYMCOLL_OK (it ran before the destroy took the communicator) or
 * SYMCOLL_ERR_INVALID_PARAM (after), and none touches freed memory (an AddressSanitizer
 * build reports the use after free; without one the race may crash or pass). */
struct abort_racer {
    symcoll_comm_h comm;
    atomic_int started;
    int bad_status;
};

static void *abort_racer_main(void *arg)
{
    struct abort_racer *r = arg;
    symcoll_status_t st;

    atomic_store(&r->started, 1);
    do {
        st = symcoll_comm_abort(r->comm);
        if (st != SYMCOLL_OK && st != SYMCOLL_ERR_INVALID_PARAM)
            r->bad_status = (int)st;
    } while (st == SYMCOLL_OK);
    return NULL;
}

START_TEST(test_comm_abort_races_destroy)
{
    symcoll_comm_params_t params = {.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK |
                                                  SYMCOLL_COMM_PARAM_FIELD_NRANKS,
                                    .rank = 0,
                                    .nranks = 1};

    clear_env();
    setenv("SYMCOLL_LOG_LEVEL", "error", 1); /* not a warning per abort */
    for (int i = 0; i < 200; i++) {
        struct abort_racer r = {.bad_status = 0};
        pthread_t t;

        ck_assert_int_eq(symcoll_comm_create(&params, &r.comm), SYMCOLL_OK);
        atomic_init(&r.started, 0);
        ck_assert_int_eq(pthread_create(&t, NULL, abort_racer_main, &r), 0);
        while (!atomic_load(&r.started))
            ;
        ck_assert_int_eq(symcoll_comm_destroy(r.comm), SYMCOLL_OK);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_msg(r.bad_status == 0, "abort returned %d", r.bad_status);
        /* the handle is gone: a later abort or destroy is refused */
        ck_assert_int_eq(symcoll_comm_abort(r.comm), SYMCOLL_ERR_INVALID_PARAM);
        ck_assert_int_eq(symcoll_comm_destroy(r.comm), SYMCOLL_ERR_INVALID_PARAM);
    }
}
END_TEST

START_TEST(test_status_strings)
{
    const char *seen[-SYMCOLL_ERR_LAST];
    for (int s = SYMCOLL_OK; s > SYMCOLL_ERR_LAST; s--) {
        const char *str = symcoll_status_string((symcoll_status_t)s);
        ck_assert_ptr_nonnull(str);
        ck_assert_msg(*str, "status %d has an empty string", s);
        ck_assert_msg(strcmp(str, symcoll_status_string(SYMCOLL_ERR_LAST)),
                      "status %d has no string of its own", s);
        for (int k = 0; k < -s; k++)
            ck_assert_msg(strcmp(str, seen[k]), "status %d repeats '%s'", s, str);
        seen[-s] = str;
    }
    ck_assert_ptr_nonnull(symcoll_status_string(SYMCOLL_ERR_LAST));
    ck_assert_ptr_nonnull(symcoll_status_string((symcoll_status_t)1));
    ck_assert_ptr_nonnull(symcoll_status_string((symcoll_status_t)-1000));
    ck_assert_str_eq(symcoll_status_string(SYMCOLL_ERR_BOOTSTRAP), "bootstrap error");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parse");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_parse_time);
    tcase_add_test(tc, test_parse_numbers);
    tcase_add_test(tc, test_table_names);
    tcase_add_test(tc, test_read_defaults);
    tcase_add_test(tc, test_read_bad);
    tcase_add_test(tc, test_comm_create_bad_env);
    tcase_add_test(tc, test_comm_create_version);
    tcase_add_test(tc, test_comm_create_timeout);
    tcase_add_test(tc, test_comm_abort_races_destroy);
    tcase_add_test(tc, test_status_strings);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
