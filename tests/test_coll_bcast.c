/* Multi-rank tests of broadcast's own protocol: the streamed broadcast on one node and
 * across simulated nodes (uneven ranks per node), its tail, ranks that disagree (root,
 * size, the call after), the eager path split across nodes and eager calls around trims
 * of the host pool. */
#define _GNU_SOURCE
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll_testlib.h"
#include "core/core.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* One broadcast of bytes from root (send to recv), checked: what and i name it. */
static void bc_checked(symcoll_comm_h comm, int rank, uint8_t *send, uint8_t *recv,
                       size_t bytes, int root, uint64_t seed, const char *what, int i)
{
    size_t bad;

    memset(recv, 0xa5, bytes);
    if (rank == root)
        fill_bytes(send, bytes, root, seed);
    check_status(symcoll_broadcast(send, recv, bytes, SYMCOLL_UINT8, root, comm, NULL),
                 "broadcast", bytes, SYMCOLL_UINT8, root);
    bad = bad_bytes(recv, bytes, root, seed);
    if (bad)
        harness_fail("%s broadcast %d of %zu bytes from %d: %zu wrong bytes", what, i, bytes,
                     root, bad);
}

/* Small broadcasts back to back (the eager path inside a node: the root does not wait),
 * roots and sizes changing every call, interleaved with the other collectives, each
 * checked exactly; many more than the ring's slots between two calls that wait. */
static void body_bc_stream(int rank, int nranks, void *arg)
{
    static const size_t sizes[] = {1, 8, 31, 32, 33, 100, 511, 2048, 2049, 4096};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    symcoll_comm_h comm;
    uint8_t *recv = malloc(32768 + 4096 * (size_t)nranks), *send = malloc(32768);
    uint64_t seed = 100;

    shape_env(arg);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    for (int i = 0; i < 600; i++, seed++) {
        size_t bytes = sizes[(size_t)i * 7 % nsizes];
        int root = (i / 3) % nranks, in_place = i % 5 == 0;
        uint8_t *out = recv;

        memset(recv, 0xa5, bytes);
        if (rank == root)
            fill_bytes(in_place ? recv : send, bytes, root, seed);
        check_status(symcoll_broadcast(in_place ? recv : send, recv, bytes, SYMCOLL_UINT8, root,
                                       comm, NULL),
                     "broadcast", bytes, SYMCOLL_UINT8, root);
        if (bad_bytes(out, bytes, root, seed))
            harness_fail("broadcast %d of %zu bytes from %d: wrong bytes", i, bytes, root);
        /* the root's buffer changes at once: a receiver must not see it */
        if (rank == root)
            memset(in_place ? recv : send, 0x5a, bytes);
        if (i % 97 == 0)
            ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
        if (i % 41 == 0)
            ag_round(comm, rank, nranks, 1 + (size_t)i % 13, SYMCOLL_UINT8, 0, 0, seed);
        if (i % 53 == 0)
            rs_round(comm, rank, nranks, 3, SYMCOLL_INT32, SYMCOLL_SUM, 0, 0, seed);
        if (i % 61 == 0) {
            int64_t v = rank + i, sum = 0;
            ck_assert_int_eq(
                symcoll_allreduce(&v, &sum, 1, SYMCOLL_INT64, SYMCOLL_SUM, comm, NULL),
                SYMCOLL_OK);
            ck_assert_int_eq(sum, (int64_t)nranks * i + (int64_t)nranks * (nranks - 1) / 2);
        }
    }
    /* a flood from one root while the others start late: it runs ahead until its ring is
     * full, then waits for their credits; the largest eager size every third call (6
     * laps of the ring across nodes, each skipping its tail), small ones between */
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    if (rank != nranks - 1)
        usleep(200000);
    for (int i = 0; i < 300; i++, seed++) {
        size_t bytes = i % 3 == 2 ? 32768 : 1 + (size_t)i * 37 % 200;
        bc_checked(comm, rank, send, recv, bytes, nranks - 1, seed, "flood", i);
    }
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

/* The tail of a root's ring across nodes: a message that would not fit before the ring's
 * end starts the next lap (net_coll.c), so it never reaches into the next root's ring.
 * 5 ranks on 2 simulated nodes: ranks 0, 1 and 2 share a node, so root 0 and root 1
 * write rank 2's rings themselves, in the order the calls make. On a new communicator
 * root 0 sends 1 byte (128 ring bytes), then 32 KiB messages (64 + 32 KiB each, 16 of
 * them fill the ring): the 16th of those is the first that would not fit. Rank 2 waits
 * before that one, so it is written (credits: rank 2 returned half a ring) and root 1's
 * first message, at the start of root 1's ring, lands before rank 2 reads it: any byte of
 * it past the end of root 0's ring would be overwritten. */
static void body_bc_tail(int rank, int nranks, void *arg)
{
    enum { BIG = 32768, BIGS = 16 };
    uint8_t *send = malloc(BIG), *recv = malloc(BIG);
    symcoll_comm_h comm;
    uint64_t seed = 500;

    (void)arg;
    ck_assert_int_ge(nranks, 3);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    for (int i = 0; i <= BIGS + 1; i++, seed++) {
        /* 1 byte, then BIGS messages from root 0; then one from root 1 */
        size_t bytes = i == 0 ? 1 : BIG;
        int root = i <= BIGS ? 0 : 1;

        if (rank == 2 && i == BIGS)
            usleep(300000);
        bc_checked(comm, rank, send, recv, bytes, root, seed, "tail", i);
    }
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

/* An eager broadcast whose receivers were called with another count: every receiver
 * gets SYMCOLL_ERR_MISMATCH at that call, the root an error at its next call that waits
 * (a barrier here), or within one and a half rings' worth of further broadcasts; the
 * communicator is broken everywhere afterwards. */
static void body_bc_mismatch(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    uint8_t buf[64] = {0};
    symcoll_status_t st;
    int fails = 0, stream = *(const int *)arg & 1, warm = !(*(const int *)arg & 2);

    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    /* the ring in use first; then every message so far consumed, so that a rank that
     * fails below cannot take one with it. Not with 3 ranks across nodes: there a
     * failure notice may overtake the barrier's last message to a third rank. */
    for (int i = 0; warm && i < 5; i++)
        bc_round(comm, rank, 5 + (size_t)i, SYMCOLL_FLOAT32, i % nranks, 0, 0,
                 40 + (uint64_t)i);
    if (warm)
        ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    st = symcoll_broadcast(buf, buf, rank == 0 ? 16 : 17, SYMCOLL_UINT8, 0, comm, NULL);
    if (rank != 0) {
        ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
        ck_assert_int_ne(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    } else {
        ck_assert_int_eq(st, SYMCOLL_OK);
        if (stream) {
            /* further eager broadcasts: one fails, at the latest when the ring runs out
             * of credits (16-byte broadcasts take 128 bytes of it: about 4100 to a lap,
             * credits each half lap, so at most about 6200 calls) */
            for (int i = 0; i < 20000 && !fails; i++)
                fails =
                    symcoll_broadcast(buf, buf, 16, SYMCOLL_UINT8, 0, comm, NULL) != SYMCOLL_OK;
            ck_assert_int_eq(fails, 1);
        } else {
            ck_assert_int_ne(symcoll_barrier(comm, NULL), SYMCOLL_OK);
        }
    }
    ck_assert_int_ne(symcoll_broadcast(buf, buf, 16, SYMCOLL_UINT8, 0, comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* A broadcast eager on the root (32 KiB) but not on the receivers (one byte more): each
 * rank decides from its own size, so the root's message waits unread in the receivers'
 * rings. The mismatch that follows (the receivers' broadcast against the root's barrier)
 * breaks the communicator on every rank: a later eager broadcast must fail, never hand
 * a receiver the stale message as its data. */
static void body_bc_eager_split(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    uint8_t *buf = calloc(32769, 1);
    symcoll_status_t st;

    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    /* the rings exist and every message so far is consumed */
    for (int i = 0; i < 3; i++)
        bc_round(comm, rank, 5 + (size_t)i, SYMCOLL_FLOAT32, 0, 0, 0, 70 + (uint64_t)i);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    memset(buf, 0x11, 32769);
    st = symcoll_broadcast(buf, buf, rank == 0 ? 32768 : 32769, SYMCOLL_UINT8, 0, comm, NULL);
    if (rank == 0) {
        ck_assert_int_eq(st, SYMCOLL_OK); /* eager: it does not meet the others */
        ck_assert_int_ne(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    } else {
        ck_assert_int_ne(st, SYMCOLL_OK);
    }
    /* the root's eager size again: the stale message would match its header */
    memset(buf, rank == 0 ? 0x22 : 0, 32768);
    st = symcoll_broadcast(buf, buf, 32768, SYMCOLL_UINT8, 0, comm, NULL);
    if (rank != 0 && st == SYMCOLL_OK)
        harness_fail("an eager broadcast after the split returned OK (first byte 0x%02x)",
                     buf[0]);
    ck_assert_int_ne(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(buf);
    (void)nranks;
    (void)arg;
}

/* Eager broadcasts across nodes around trims of the host pool: the trim releases the
 * rings with the rest of the staging, and the next call makes them again (collectively,
 * on every rank, whatever the root). Each round: eager broadcasts from every root at
 * sizes up to the eager limit, one larger broadcast and an all-reduce between trims,
 * every result checked; the pool's bytes in use must fall at each trim. */
static void body_bc_trim(int rank, int nranks, void *arg)
{
    static const size_t sizes[] = {1, 64, 4096, 32768};
    uint8_t *send = malloc(1 << 20), *recv = malloc(1 << 20);
    symcoll_comm_h comm;
    uint64_t seed = 900;

    (void)arg;
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    for (int round = 0; round < 4; round++) {
        symcoll_pool_attr_t before = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_IN_USE},
                            after = before;
        int64_t v = rank + round, sum = 0;
        for (int root = 0; root < nranks; root++)
            for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++, seed++)
                bc_checked(comm, rank, send, recv, sizes[i], root, seed, "eager", round);
        if (round % 2 == 1) /* a broadcast past the eager limit, then eager again */
            bc_checked(comm, rank, send, recv, 1 << 20, round % nranks, seed++, "large", round);
        bc_checked(comm, rank, send, recv, 100, nranks - 1, seed++, "eager", round);
        ck_assert_int_eq(symcoll_allreduce(&v, &sum, 1, SYMCOLL_INT64, SYMCOLL_SUM, comm, NULL),
                         SYMCOLL_OK);
        ck_assert_int_eq(sum, (int64_t)nranks * round + (int64_t)nranks * (nranks - 1) / 2);
        ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &before), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &after), SYMCOLL_OK);
        if (after.in_use >= before.in_use) /* the rings and the other staging went */
            harness_fail("round %d: the trim left %zu of %zu bytes in use", round, after.in_use,
                         before.in_use);
    }
    /* the first call after the last trim is eager from a root other than 0 */
    bc_checked(comm, rank, send, recv, 8, nranks - 1, seed++, "after trim", 4);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

/* Credits to a root that is away: over RMA (SYMCOLL_NET_PROTOCOL=put) the root sends
 * most of a ring's worth of eager broadcasts and then stays out of the library for 3 s;
 * the receivers take them all, returning credits into the root's pool as they go, and
 * must finish at once: a credit must not wait for the away root (to answer a request for
 * its rkey, say). */
static void body_bc_away_root(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    uint8_t *recv = malloc(32768), *send = malloc(32768);
    uint64_t seed = 7;
    double t0;

    (void)arg;
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_NET_PROTOCOL", "put", 1);
    setenv("SYMCOLL_TIMEOUT", "20", 1);
    /* no call before: a barrier would have asked for the root's rkeys already */
    comm = harness_comm_create();
    t0 = time_now();
    /* 12 of the 16 slots of the ring (32 KiB each): past half of it, so every receiver
     * returns a credit, and few enough that the root never waits for one */
    for (int i = 0; i < 12; i++, seed++)
        bc_checked(comm, rank, send, recv, 32768, 0, seed, "away", i);
    if (rank == 0)
        sleep(3);
    else if (time_now() - t0 > 2)
        harness_fail("the receivers took %.1f s: a credit waited for the root", time_now() - t0);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

START_TEST(test_bc_away_root_3nodes_3)
{
    ck_assert_int_eq(harness_run(3, 3, RUN_TIMEOUT, body_bc_away_root, NULL), 0);
}
END_TEST

START_TEST(test_bc_trim_2nodes_3)
{
    ck_assert_int_eq(harness_run(3, 2, RUN_TIMEOUT, body_bc_trim, NULL), 0);
}
END_TEST

START_TEST(test_bc_eager_split_2nodes_2)
{
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_bc_eager_split, NULL), 0);
}
END_TEST

START_TEST(test_bc_eager_split_2nodes_3)
{
    ck_assert_int_eq(harness_run(3, 2, RUN_TIMEOUT, body_bc_eager_split, NULL), 0);
}
END_TEST

SHAPE_TEST(test_bc_stream_1node_2, 2, 1, body_bc_stream)
SHAPE_TEST(test_bc_stream_1node_3, 3, 1, body_bc_stream)
SHAPE_TEST(test_bc_stream_2nodes_3, 3, 2, body_bc_stream)
SHAPE_TEST(test_bc_stream_2nodes_5, 5, 2, body_bc_stream)
SHAPE_TEST(test_bc_tail_2nodes_5, 5, 2, body_bc_tail)

/* mode: 1 the root's next calls are broadcasts (else a barrier); 2 no warm-up */
static int bc_barrier_next = 0, bc_stream_next = 1, bc_cold_barrier_next = 2;

START_TEST(test_bc_mismatch_1node_3)
{
    ck_assert_int_eq(harness_run(3, 1, RUN_TIMEOUT, body_bc_mismatch, &bc_barrier_next), 0);
}
END_TEST

START_TEST(test_bc_mismatch_stream_1node_2)
{
    ck_assert_int_eq(harness_run(2, 1, RUN_TIMEOUT, body_bc_mismatch, &bc_stream_next), 0);
}
END_TEST

START_TEST(test_bc_mismatch_2nodes_3)
{
    ck_assert_int_eq(harness_run(3, 2, RUN_TIMEOUT, body_bc_mismatch, &bc_cold_barrier_next),
                     0);
}
END_TEST

START_TEST(test_bc_mismatch_stream_2nodes_2)
{
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_bc_mismatch, &bc_stream_next), 0);
}
END_TEST

int main(void)
{
    /* one case per test (its name without "test_"), so that CK_RUN_CASE=bc_tail_2nodes_5
     * (say) runs one of them */
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"bc_stream_1node_2", test_bc_stream_1node_2},
        {"bc_stream_1node_3", test_bc_stream_1node_3},
        {"bc_stream_2nodes_3", test_bc_stream_2nodes_3},
        {"bc_stream_2nodes_5", test_bc_stream_2nodes_5},
        {"bc_tail_2nodes_5", test_bc_tail_2nodes_5},
        {"bc_mismatch_1node_3", test_bc_mismatch_1node_3},
        {"bc_mismatch_stream_1node_2", test_bc_mismatch_stream_1node_2},
        {"bc_mismatch_2nodes_3", test_bc_mismatch_2nodes_3},
        {"bc_mismatch_stream_2nodes_2", test_bc_mismatch_stream_2nodes_2},
        {"bc_eager_split_2nodes_2", test_bc_eager_split_2nodes_2},
        {"bc_eager_split_2nodes_3", test_bc_eager_split_2nodes_3},
        {"bc_trim_2nodes_3", test_bc_trim_2nodes_3},
        {"bc_away_root_3nodes_3", test_bc_away_root_3nodes_3},
    };
    Suite *s = suite_create("coll");

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, RUN_TIMEOUT + 60);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return harness_main(s);
}
