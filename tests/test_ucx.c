/* Tests of the UCX layer on its own, between simulated nodes over TCP loopback: the
 * layer exists only when a communicator spans nodes, regions exchange rkeys, put /
 * fence / flag round trips deliver every byte, and a peer that dies turns a wait into
 * an error instead of a hang. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "harness.h"
#include "ucx/ucx.h"

#define RUN_TIMEOUT 90.0

static void ucx_test_env(void)
{
    setenv("UCX_TLS", "tcp,self", 1);
}

/* ---- the layer exists exactly when the ranks span nodes ----------------------------- */

static void body_presence(int rank, int nranks, void *arg)
{
    int nnodes = *(int *)arg;
    symcoll_comm_h comm;

    ucx_test_env();
    comm = harness_comm_create();
    if (nnodes > 1) {
        ck_assert_ptr_nonnull(comm->ucx);
        ck_assert_msg(strlen(ucx_transports(comm->ucx)) > 0, "no transport reported");
        ck_assert_msg(strstr(ucx_transports(comm->ucx), "tcp") != NULL,
                      "UCX_TLS=tcp,self but transports are '%s'", ucx_transports(comm->ucx));
        for (int r = 0; r < nranks; r++)
            ck_assert_int_eq(ucx_is_remote(comm->ucx, r),
                             harness_node_of(r, nranks, nnodes) !=
                                 harness_node_of(rank, nranks, nnodes));
    } else {
        ck_assert_ptr_null(comm->ucx);
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(test_presence)
{
    int one = 1, two = 2;
    ck_assert_int_eq(harness_run(2, 1, RUN_TIMEOUT, body_presence, &one), 0);
    ck_assert_int_eq(harness_run(4, 2, RUN_TIMEOUT, body_presence, &two), 0);
}
END_TEST

/* ---- put / fence / flag round trips ------------------------------------------------- */

#define RT_BYTES (3 * 1024 * 1024 + 5)
#define RT_ROUNDS 20

/* Layout of the registered buffer: flags first (one line per sender), then data. */
#define RT_FLAGS_BYTES 4096

static unsigned char rt_byte(int sender, int round, size_t i)
{
    return (unsigned char)(sender * 31 + round * 7 + i * 13 + (i >> 11));
}

static void body_roundtrip(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    ucx_region_t *reg;
    size_t size = RT_FLAGS_BYTES + (size_t)nranks * RT_BYTES;
    unsigned char *buf, *src;
    deadline_t dl;

    ucx_test_env();
    /* arg: the transfer protocol to use ("put" or "am") */
    setenv("SYMCOLL_NET_PROTOCOL", arg ? (const char *)arg : "auto", 1);
    comm = harness_comm_create();
    ucx = comm->ucx;
    ck_assert_ptr_nonnull(ucx);
    buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(buf != MAP_FAILED);
    src = malloc(RT_BYTES);
    ck_assert_ptr_nonnull(src);
    ck_assert_int_eq(ucx_region_create(ucx, buf, size, &reg), SYMCOLL_OK);

    for (int round = 1; round <= RT_ROUNDS; round++) {
        /* big messages only every few rounds keep the run short */
        size_t len = round % 5 == 0 ? RT_BYTES : (size_t)(round * 97);
        for (size_t i = 0; i < len; i++)
            src[i] = rt_byte(rank, round, i);
        for (int r = 0; r < nranks; r++) {
            ucx_req_t req;
            if (!ucx_is_remote(ucx, r))
                continue;
            /* into r's slot for us; r waits for our flag */
            ck_assert_int_eq(
                ucx_put(ucx, r, src, len, buf + RT_FLAGS_BYTES + (size_t)rank * RT_BYTES, &req),
                SYMCOLL_OK);
            ck_assert_int_eq(ucx_fence(ucx), SYMCOLL_OK);
            ck_assert_int_eq(
                ucx_put_flag(ucx, r, (uint64_t)round, (uint64_t *)(buf + 64 * (size_t)rank)),
                SYMCOLL_OK);
        }
        dl = deadline_make(60, NULL);
        for (int r = 0; r < nranks; r++) {
            const unsigned char *got = buf + RT_FLAGS_BYTES + (size_t)r * RT_BYTES;
            if (!ucx_is_remote(ucx, r))
                continue;
            ck_assert_int_eq(
                ucx_wait_flag(ucx, (uint64_t *)(buf + 64 * (size_t)r), (uint64_t)round, &dl),
                SYMCOLL_OK);
            for (size_t i = 0; i < len; i++)
                if (got[i] != rt_byte(r, round, i))
                    harness_fail("round %d: byte %zu from rank %d is %u, expected %u", round, i,
                                 r, got[i], rt_byte(r, round, i));
        }
        /* our sources are reused next round; peers may still be reading our slot of
         * theirs, which they own, so only local completion matters here */
        ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
        /* nobody may overwrite a slot before its owner checked it */
        ck_assert_int_eq(ucx_flush(ucx, &dl), SYMCOLL_OK);
        {
            /* a barrier that keeps progressing: one more flag round */
            for (int r = 0; r < nranks; r++)
                if (ucx_is_remote(ucx, r))
                    ck_assert_int_eq(ucx_put_flag(ucx, r, (uint64_t)round,
                                                  (uint64_t *)(buf + 2048 + 64 * (size_t)rank)),
                                     SYMCOLL_OK);
            for (int r = 0; r < nranks; r++)
                if (ucx_is_remote(ucx, r))
                    ck_assert_int_eq(ucx_wait_flag(ucx,
                                                   (uint64_t *)(buf + 2048 + 64 * (size_t)r),
                                                   (uint64_t)round, &dl),
                                     SYMCOLL_OK);
        }
    }
    ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
    ucx_region_release(ucx, reg);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    munmap(buf, size);
    free(src);
}

START_TEST(test_roundtrip_2x1)
{
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_roundtrip, NULL), 0);
}
END_TEST

/* put / fence / flag put, which UCX emulates on TCP: still correct while nobody dies */
START_TEST(test_roundtrip_2x1_put)
{
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_roundtrip, "put"), 0);
}
END_TEST

START_TEST(test_roundtrip_3x2)
{
    ck_assert_int_eq(harness_run(6, 3, RUN_TIMEOUT, body_roundtrip, NULL), 0);
}
END_TEST

/* ---- a dead peer ends a wait with an error ------------------------------------------ */

static void body_dead_peer(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    ucx_region_t *reg;
    static uint64_t flags[64] __attribute__((aligned(4096)));
    deadline_t dl;
    double t0;
    symcoll_status_t status;
    (void)arg;

    ucx_test_env();
    comm = harness_comm_create();
    ucx = comm->ucx;
    ck_assert_int_eq(ucx_region_create(ucx, flags, sizeof(flags), &reg), SYMCOLL_OK);
    if (rank == nranks - 1)
        _exit(0); /* dies without a word: sockets close, nothing is flushed */
    /* the flag never comes: the endpoint's error must end the wait long before it */
    t0 = time_now();
    dl = deadline_make(60, NULL);
    status = ucx_wait_flag(ucx, &flags[nranks - 1], 1, &dl);
    ck_assert_msg(status == SYMCOLL_ERR_PEER_FAILED, "wait returned %s",
                  symcoll_status_string(status));
    ck_assert_msg(time_now() - t0 < 30, "error took %.1f s", time_now() - t0);
    /* and a put to it fails instead of hanging */
    status = ucx_put_flag(ucx, nranks - 1, 1, &flags[rank]);
    ck_assert(status == SYMCOLL_OK || status == SYMCOLL_ERR_PEER_FAILED);
    _exit(0); /* the bootstrap lost a rank: destroy is not the subject here */
}

START_TEST(test_dead_peer)
{
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_dead_peer, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ucx");
    /* before any UCX library code reads its configuration */
    ucx_test_env();
    TCase *tc = tcase_create("ucx");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, RUN_TIMEOUT * 2 + 30);
    tcase_add_test(tc, test_presence);
    tcase_add_test(tc, test_roundtrip_2x1);
    tcase_add_test(tc, test_roundtrip_2x1_put);
    tcase_add_test(tc, test_roundtrip_3x2);
    tcase_add_test(tc, test_dead_peer);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
