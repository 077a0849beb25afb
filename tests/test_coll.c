/* Multi-rank tests of reduce-scatter, all-gather, broadcast and barrier: every datatype
 * (x operator for reduce-scatter), out of place and in place, plain and pool buffers,
 * odd counts and counts that cross many pipeline chunks, on one node and on simulated
 * nodes (real UCX over TCP loopback) with uneven ranks per node; arguments that ranks
 * disagree on; argument checks without side effects. Results are compared bit for bit
 * with a reference computed here. Broadcast's own cases (stream, tail, mismatch, eager
 * split) are tests/test_coll_bcast.c. */
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

#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#include "coll_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* counts per rank: one element, odd, several chunks of the 4 KiB pipeline */
static const size_t counts[] = {1, 7, 1001, 40009};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

static void body_sweep(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    uint64_t seed = 1;

    shape_env(arg);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    setenv("SYMCOLL_HOST_CHUNK_SIZE", "4K", 1);
    /* across nodes, the native rings run in many chunks at the large counts */
    setenv("SYMCOLL_NET_CHUNK_SIZE", "4K", 1);
    comm = harness_comm_create();
    for (int pool = 0; pool < 2; pool++)
        for (int inplace = 0; inplace < 2; inplace++)
            for (size_t c = 0; c < NCOUNTS; c++) {
                for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++) {
                    /* every operator at the small counts; sum (pipelined) at the large */
                    for (int op = 0; op < SYMCOLL_OP_LAST; op++)
                        if (c < 2 || op == SYMCOLL_SUM || (dt == SYMCOLL_FLOAT32 && c < 3))
                            rs_round(comm, rank, nranks, counts[c], (symcoll_dtype_t)dt,
                                     (symcoll_op_t)op, inplace, pool, seed++);
                    if (c < 3 || dt == SYMCOLL_UINT8 || dt == SYMCOLL_FLOAT64)
                        ag_round(comm, rank, nranks, counts[c], (symcoll_dtype_t)dt, inplace,
                                 pool, seed++);
                }
                for (int root = 0; root<nranks; root += nranks> 2 ? nranks - 2 : 1)
                    bc_round(comm, rank, counts[c], SYMCOLL_FLOAT32, root, inplace, pool,
                             seed++);
                ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
            }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* The barrier: nobody leaves before everybody arrived (a counter in memory shared by
 * the forked ranks; the late rank changes from round to round). */
static _Atomic int *arrived;

static void body_barrier(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;

    (void)arg;
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    for (int round = 0; round < 12; round++) {
        if (rank == round % nranks)
            usleep(20000);
        atomic_fetch_add(&arrived[round], 1);
        ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
        if (atomic_load(&arrived[round]) != nranks)
            harness_fail("round %d: left the barrier with %d of %d ranks arrived", round,
                         atomic_load(&arrived[round]), nranks);
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

static void run_barrier(int nranks, int nnodes)
{
    arrived = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(arrived, MAP_FAILED);
    memset((void *)arrived, 0, 4096);
    ck_assert_int_eq(harness_run(nranks, nnodes, RUN_TIMEOUT, body_barrier, NULL), 0);
    munmap((void *)arrived, 4096);
}

/* Ranks that disagree: every rank gets SYMCOLL_ERR_MISMATCH, and the next agreeing call
 * is right. One node (the native algorithms' descriptors). */
static void body_mismatch(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    size_t count = 64;
    float *send = malloc(count * (size_t)nranks * sizeof(float));
    float *recv = malloc(count * (size_t)nranks * sizeof(float));
    size_t bigcount = 1024;
    float *big = calloc(2 * bigcount, sizeof(float));
    symcoll_status_t st;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    /* count */
    st = symcoll_allgather(send, recv, rank == 1 ? count + 1 : count, SYMCOLL_FLOAT32, comm,
                           NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    ag_round(comm, rank, nranks, count, SYMCOLL_FLOAT32, 0, 0, 7);
    /* root, above the eager broadcast's size (an eager root does not meet the others) */
    st = symcoll_broadcast(big, big + bigcount, bigcount, SYMCOLL_FLOAT32, rank == 1 ? 1 : 0,
                           comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    bc_round(comm, rank, count, SYMCOLL_FLOAT32, nranks - 1, 0, 0, 8);
    /* operator */
    st = symcoll_reduce_scatter(send, recv, count, SYMCOLL_FLOAT32,
                                rank == 0 ? SYMCOLL_MAX : SYMCOLL_SUM, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    rs_round(comm, rank, nranks, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, 0, 0, 9);
    /* another collective */
    if (rank == nranks - 1)
        st = symcoll_barrier(comm, NULL);
    else
        st = symcoll_reduce_scatter(send, recv, count, SYMCOLL_INT32, SYMCOLL_SUM, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
    free(big);
}

/* Across nodes the small collectives run as all-reduces: ranks in different collectives
 * (or with different roots) whose all-reduces would look alike must still disagree; the
 * large ones run natively and must disagree with all-reduces and with each other. */
static void body_mismatch_nodes(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    size_t count = 96, n = (size_t)nranks, big = 20000, mid = 16384 + 64;
    uint8_t *send = calloc(big * n, 8), *recv = calloc(big * n, 8);
    symcoll_status_t st;

    shape_env(arg);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    /* the same bytes of uint8: a broadcast against an all-gather (above the eager
     * broadcast's size: an eager broadcast does not meet the other ranks) */
    if (rank == 1)
        st = symcoll_broadcast(send, recv, mid * n, SYMCOLL_UINT8, 0, comm, NULL);
    else
        st = symcoll_allgather(send, recv, mid, SYMCOLL_UINT8, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    ag_round(comm, rank, nranks, count, SYMCOLL_UINT8, 0, 0, 11);
    /* different roots */
    st = symcoll_broadcast(send, recv, mid * n, SYMCOLL_UINT8, rank == nranks - 1 ? 1 : 0, comm,
                           NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    bc_round(comm, rank, count, SYMCOLL_FLOAT64, nranks - 1, 0, 0, 12);
    /* no rank is the root it names (two ranks: each names the other) */
    st = symcoll_broadcast(send, recv, mid * n, SYMCOLL_UINT8, (rank + 1) % nranks, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    bc_round(comm, rank, mid * n, SYMCOLL_UINT8, 0, 0, 0, 17);
    /* a count that differs */
    st = symcoll_reduce_scatter(send, recv, rank == 0 ? count / 2 : count / 4, SYMCOLL_FLOAT32,
                                SYMCOLL_SUM, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    rs_round(comm, rank, nranks, count, SYMCOLL_INT32, SYMCOLL_SUM, 0, 0, 13);
    /* a native all-gather against an all-reduce of the same bytes */
    if (rank == 0)
        st = symcoll_allreduce(send, recv, big * n, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm, NULL);
    else
        st = symcoll_allgather(send, recv, big, SYMCOLL_FLOAT64, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    ag_round(comm, rank, nranks, big, SYMCOLL_FLOAT64, 0, 1, 14);
    /* native calls: roots, counts, operators */
    st = symcoll_broadcast(send, recv, big, SYMCOLL_FLOAT64, rank == 1 ? 1 : 0, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    st = symcoll_allgather(send, recv, rank == nranks - 1 ? big - 1 : big, SYMCOLL_FLOAT64,
                           comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    st = symcoll_reduce_scatter(send, recv, big, SYMCOLL_FLOAT64,
                                rank == 0 ? SYMCOLL_MIN : SYMCOLL_SUM, comm, NULL);
    ck_assert_int_eq(st, SYMCOLL_ERR_MISMATCH);
    rs_round(comm, rank, nranks, big, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1, 0, 15);
    bc_round(comm, rank, big, SYMCOLL_FLOAT64, 1, 1, 0, 16);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

/* Across nodes, received all-gather and broadcast data goes straight into recvbuf as it
 * arrives (src/algo/net/net_coll.c, coll_hook), unless a message began to arrive before its
 * call was ready for it: random delays on each rank make both happen, small TCP segments
 * split every message into several payloads. Calls of every two-rank path and of the
 * ring and chain, sizes drawn alike on every rank, results checked byte for byte. */
#define HOOK_ITERS 120
#define HOOK_MAX (600 * 1024)

static void body_hook_stress(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    uint8_t *send = malloc(HOOK_MAX), *recv = malloc(HOOK_MAX);
    unsigned same = 4242, own = 17 + 1000003u * (unsigned)rank;

    shape_env(arg);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    setenv("SYMCOLL_NET_TCP_SEG_SIZE", "16K", 1);
    ck_assert_ptr_nonnull(send);
    ck_assert_ptr_nonnull(recv);
    comm = harness_comm_create();
    for (int it = 0; it < HOOK_ITERS; it++) {
        int kind = rand_r(&same) % 4, root = rand_r(&same) % nranks;
        bool inplace = rand_r(&same) % 2;
        uint64_t seed = 1000 + (uint64_t)it;
        size_t bytes;
        symcoll_status_t st;

        if (rand_r(&own) % 3 == 0)
            usleep((useconds_t)(rand_r(&own) % 300));
        if (kind == 3) {
            /* all-gather: blocks from 8 bytes to 160 KiB */
            size_t block = 8 * (1 + (size_t)(rand_r(&same) % 20000));
            uint8_t *mine = inplace ? recv + (size_t)rank * block : send;
            bytes = block * (size_t)nranks;
            memset(recv, 0xa5, bytes);
            fill_bytes(mine, block, rank, seed);
            st = symcoll_allgather(mine, recv, block / 8, SYMCOLL_FLOAT64, comm, NULL);
            check_status(st, "hook all-gather", block / 8, SYMCOLL_FLOAT64, it);
            for (int r = 0; r < nranks; r++)
                if (bad_bytes(recv + (size_t)r * block, block, r, seed))
                    harness_fail("hook all-gather %d: %zu bytes a block, block %d wrong", it,
                                 block, r);
            continue;
        }
        /* broadcast: eager (to 32 KiB), two ranks' exchange (to 512 KiB), chain above */
        bytes = kind == 0   ? 8 * (1 + (size_t)(rand_r(&same) % 4096))
                : kind == 1 ? 32768 + 8 * (1 + (size_t)(rand_r(&same) % 61440))
                            : HOOK_MAX;
        memset(recv, 0xa5, bytes);
        if (rank == root)
            fill_bytes(inplace ? recv : send, bytes, root, seed);
        st = symcoll_broadcast(inplace ? recv : send, recv, bytes / 8, SYMCOLL_FLOAT64, root,
                               comm, NULL);
        check_status(st, "hook broadcast", bytes / 8, SYMCOLL_FLOAT64, it);
        if (bad_bytes(recv, bytes, root, seed))
            harness_fail("hook broadcast %d: %zu bytes from root %d: %zu wrong", it, bytes,
                         root, bad_bytes(recv, bytes, root, seed));
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(send);
    free(recv);
}

/* Rejected arguments change nothing, and the next call works. */
static void body_args(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    size_t count = 16;
    char *buf = malloc(count * 4 * (size_t)(nranks + 1));

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    memset(buf, 0x11, count * 4 * (size_t)(nranks + 1));
    ck_assert_int_eq(symcoll_broadcast(buf, buf, count, SYMCOLL_FLOAT32, nranks, comm, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_broadcast(buf, buf, count, SYMCOLL_FLOAT32, -1, comm, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    /* overlapping, not in place */
    ck_assert_int_eq(
        symcoll_reduce_scatter(buf, buf + 4, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL),
        SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_allgather(buf + 4, buf, count, SYMCOLL_FLOAT32, comm, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_broadcast(buf, NULL, count, SYMCOLL_FLOAT32, 0, comm, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_allgather(buf, buf, count, SYMCOLL_DTYPE_LAST, comm, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_barrier(NULL, NULL), SYMCOLL_ERR_INVALID_PARAM);
    for (size_t i = 0; i < count * 4 * (size_t)(nranks + 1); i++)
        if ((unsigned char)buf[i] != 0x11)
            harness_fail("a rejected call wrote byte %zu", i);
    /* count 0 does nothing */
    ck_assert_int_eq(symcoll_allgather(NULL, NULL, 0, SYMCOLL_FLOAT32, comm, NULL), SYMCOLL_OK);
    ag_round(comm, rank, nranks, count, SYMCOLL_FLOAT32, 0, 0, 3);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(buf);
}

SHAPE_TEST(test_sweep_1node_2, 2, 1, body_sweep)
SHAPE_TEST(test_sweep_1node_3, 3, 1, body_sweep)
/* one rank a node: reduce-scatter and all-gather of 2 ranks are one exchange up to rd's
 * sizes (float32 here), the native ring above (float64 at the largest count): src/algo/
 * coll.c, coll_net_native_pair */
SHAPE_TEST(test_sweep_2nodes_2, 2, 2, body_sweep)
SHAPE_TEST(test_sweep_2nodes_3, 3, 2, body_sweep)
SHAPE_TEST(test_sweep_2nodes_4, 4, 2, body_sweep)
/* the ring at every size: every collective across nodes runs natively, odd counts too */
SHAPE_TEST_ALGO(test_sweep_2nodes_3_ring, 3, 2, "ring", body_sweep)
SHAPE_TEST_ALGO(test_sweep_2nodes_4_ring, 4, 2, "ring", body_sweep)
SHAPE_TEST(test_mismatch_1node_3, 3, 1, body_mismatch)
SHAPE_TEST(test_mismatch_2nodes_4, 4, 2, body_mismatch_nodes)
/* two ranks: the one-exchange reduce-scatter and all-gather against the others */
SHAPE_TEST(test_mismatch_2nodes_2, 2, 2, body_mismatch_nodes)
SHAPE_TEST(test_mismatch_2nodes_3, 3, 2, body_mismatch_nodes)
SHAPE_TEST_ALGO(test_mismatch_2nodes_4_ring, 4, 2, "ring", body_mismatch_nodes)
/* received data straight into the output, or through the area: two ranks (every call
 * one exchange up to 512 KiB), three on the ring and chain */
SHAPE_TEST(test_hook_2nodes_2, 2, 2, body_hook_stress)
SHAPE_TEST_ALGO(test_hook_2nodes_3_ring, 3, 2, "ring", body_hook_stress)

SHAPE_TEST(test_args_1node_2, 2, 1, body_args)
SHAPE_TEST(test_args_2nodes_2, 2, 2, body_args)

START_TEST(test_barrier_1node_3)
{
    run_barrier(3, 1);
}
END_TEST

START_TEST(test_barrier_2nodes_3)
{
    run_barrier(3, 2);
}
END_TEST

int main(void)
{
    /* one case per test (its name without "test_"), so that CK_RUN_CASE=mismatch_2nodes_4
     * (say) runs one of them */
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"sweep_1node_2", test_sweep_1node_2},
        {"sweep_1node_3", test_sweep_1node_3},
        {"sweep_2nodes_2", test_sweep_2nodes_2},
        {"sweep_2nodes_3", test_sweep_2nodes_3},
        {"sweep_2nodes_4", test_sweep_2nodes_4},
        {"sweep_2nodes_3_ring", test_sweep_2nodes_3_ring},
        {"sweep_2nodes_4_ring", test_sweep_2nodes_4_ring},
        {"mismatch_1node_3", test_mismatch_1node_3},
        {"mismatch_2nodes_4", test_mismatch_2nodes_4},
        {"mismatch_2nodes_2", test_mismatch_2nodes_2},
        {"mismatch_2nodes_3", test_mismatch_2nodes_3},
        {"mismatch_2nodes_4_ring", test_mismatch_2nodes_4_ring},
        {"hook_2nodes_2", test_hook_2nodes_2},
        {"hook_2nodes_3_ring", test_hook_2nodes_3_ring},
        {"args_1node_2", test_args_1node_2},
        {"args_2nodes_2", test_args_2nodes_2},
        {"barrier_1node_3", test_barrier_1node_3},
        {"barrier_2nodes_3", test_barrier_2nodes_3},
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
