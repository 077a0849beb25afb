/* Tests of the bootstrap: allgather and barrier over real processes (built-in TCP and
 * a callback), rejection of bogus or malformed peers, the node-local descriptor
 * channel, and descriptor hygiene. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/bs_int.h"
#include "harness.h"
#include "topo/topo.h"

#define RUN_TIMEOUT 25.0 /* harness deadline; Check's is above it */
#define BS_TIMEOUT  15.0 /* bootstrap deadline inside the ranks */

/* ---- helpers ----------------------------------------------------------- */

static bootstrap_params_t env_params(double timeout)
{
    bootstrap_params_t p;
    memset(&p, 0, sizeof(p));
    p.rank = atoi(getenv("SYMCOLL_RANK"));
    p.nranks = atoi(getenv("SYMCOLL_NRANKS"));
    p.addr = getenv("SYMCOLL_ADDR");
    p.cookie = getenv("SYMCOLL_COOKIE");
    p.timeout_sec = timeout;
    return p;
}

static bootstrap_t *env_bootstrap(void)
{
    bootstrap_params_t p = env_params(BS_TIMEOUT);
    bootstrap_t *bs = NULL;
    symcoll_status_t st = bootstrap_create(&p, &bs);
    if (st != SYMCOLL_OK)
        harness_fail("bootstrap_create: %s", symcoll_status_string(st));
    return bs;
}

static unsigned char pattern(int rank, size_t i, size_t size)
{
    return (unsigned char)(rank * 131 + i * 7 + size * 3 + 1);
}

/* Allgather of several sizes; every rank checks every other rank's bytes. */
static void check_allgathers(bootstrap_t *bs, int rank, int nranks)
{
    static const size_t sizes[] = {0, 1, 13, 4096 + 7, 3000};
    for (size_t s = 0; s < SC_ARRAY_SIZE(sizes); s++) {
        size_t size = sizes[s];
        unsigned char *src = malloc(size + 1), *dst = malloc(size * (size_t)nranks + 1);
        symcoll_status_t st;
        ck_assert(src && dst);
        for (size_t i = 0; i < size; i++)
            src[i] = pattern(rank, i, size);
        memset(dst, 0xee, size * (size_t)nranks);
        st = bootstrap_allgather(bs, src, dst, size);
        ck_assert_int_eq(st, SYMCOLL_OK);
        for (int r = 0; r < nranks; r++)
            for (size_t i = 0; i < size; i++)
                if (dst[(size_t)r * size + i] != pattern(r, i, size))
                    harness_fail("size %zu: byte %zu of rank %d is %u, expected %u", size, i,
                                 r, dst[(size_t)r * size + i], pattern(r, i, size));
        free(src);
        free(dst);
    }
}

static void check_job_id(bootstrap_t *bs, int nranks)
{
    uint64_t id = bootstrap_job_id(bs), *ids = calloc((size_t)nranks, sizeof(*ids));
    ck_assert(ids);
    ck_assert(id != 0);
    ck_assert_int_eq(bootstrap_allgather(bs, &id, ids, sizeof(id)), SYMCOLL_OK);
    for (int r = 0; r < nranks; r++)
        ck_assert(ids[r] == id);
    free(ids);
}

/* ---- allgather over the built-in TCP bootstrap ------------------------ */

static void body_tcp_allgather(int rank, int nranks, void *arg)
{
    int fds0 = harness_count_fds();
    bootstrap_t *bs;
    (void)arg;

    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    check_job_id(bs, nranks);
    /* the local channel holds this rank alone until it is opened */
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
    if (harness_count_fds() != fds0)
        harness_fail("%d descriptors open before, %d after destroy", fds0,
                     harness_count_fds());
}

static const int tcp_sizes[] = {1, 2, 3, 4, 7};

START_TEST(test_tcp_allgather)
{
    ck_assert_int_eq(harness_run(tcp_sizes[_i], 1, RUN_TIMEOUT, body_tcp_allgather, NULL), 0);
}
END_TEST

/* Without SYMCOLL_COOKIE rank 0 makes up the cookie and hands it out. */
static void body_no_cookie(int rank, int nranks, void *arg)
{
    bootstrap_t *bs;
    (void)arg;
    unsetenv("SYMCOLL_COOKIE");
    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    bootstrap_destroy(bs);
}

START_TEST(test_tcp_no_cookie)
{
    ck_assert_int_eq(harness_run(3, 1, RUN_TIMEOUT, body_no_cookie, NULL), 0);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *bootstrap_suite(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("tcp");

    tcase_set_timeout(tc, 40);
    tcase_add_loop_test(tc, test_tcp_allgather, 0, (int)SC_ARRAY_SIZE(tcp_sizes));
    tcase_add_test(tc, test_tcp_no_cookie);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bootstrap_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
