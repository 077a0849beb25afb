/* symcoll_comm_split: real processes, real UCX over TCP, one node and simulated nodes.
 * A 2 x 3 process grid split into rows and columns whose collectives run at the same
 * time from two threads; keys that reverse the order; a rank with no color; a child of
 * a child outliving its parent; a tensor/data-parallel layout across two nodes; a rank
 * killed during a split; argument checks; descriptors and memory over many cycles. Every
 * result is compared bit for bit with a reference computed here. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "coll_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#define SPLIT_TIMEOUT 120.0

#if defined(__SANITIZE_ADDRESS__)
#define SPLIT_ASAN 1 /* its quarantine keeps freed memory resident: no RSS bound */
#else
#define SPLIT_ASAN 0
#endif

static void split_env(void)
{
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", "30", 1);
    setenv("SYMCOLL_HOST_CHUNK_SIZE", "4K", 1);
    setenv("SYMCOLL_NET_CHUNK_SIZE", "4K", 1);
}

static double mono_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One checked float32 sum all-reduce of count elements, plain or pool buffers. */
static void ar_round(symcoll_comm_h comm, int rank, int n, size_t count, int pool,
                     uint64_t seed)
{
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, n, seed, 0};
    size_t bytes = count * sizeof(float), bad, first = 0;
    float *in, *out;

    if (pool) {
        check_status(symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_HOST, (void **)&in),
                     "mem_alloc", count, 0, 0);
        check_status(symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_HOST, (void **)&out),
                     "mem_alloc", count, 0, 1);
    } else {
        in = malloc(bytes);
        out = malloc(bytes);
        ck_assert(in && out);
    }
    refcheck_fill(&spec, rank, in, count);
    memset(out, 0xa5, bytes);
    check_status(symcoll_allreduce(in, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL),
                 "allreduce", count, SYMCOLL_FLOAT32, pool);
    bad = refcheck_compare(&spec, out, count, &first);
    if (bad)
        harness_fail("all-reduce of %zu on %d ranks (pool %d): %zu wrong, first at %zu", count,
                     n, pool, bad, first);
    if (pool) {
        ck_assert_int_eq(symcoll_mem_free(comm, in), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_mem_free(comm, out), SYMCOLL_OK);
    } else {
        free(in);
        free(out);
    }
}

/* All five collectives on comm, checked; counts of one element to several chunks. */
static void all_colls(symcoll_comm_h comm, uint64_t seed)
{
    static const size_t counts[] = {1, 1001, 9000};
    int r, n;

    ck_assert_int_eq(symcoll_comm_rank(comm, &r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_size(comm, &n), SYMCOLL_OK);
    for (int pool = 0; pool < 2; pool++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            ar_round(comm, r, n, counts[c], pool, seed++);
            rs_round(comm, r, n, counts[c], SYMCOLL_INT32, SYMCOLL_SUM, 0, pool, seed++);
            ag_round(comm, r, n, counts[c], SYMCOLL_FLOAT64, c & 1, pool, seed++);
            bc_round(comm, r, counts[c], SYMCOLL_FLOAT32, n - 1, 0, pool, seed++);
            ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
        }
}

static symcoll_comm_h split_ok(symcoll_comm_h comm, int color, int key)
{
    symcoll_comm_h child = NULL;
    symcoll_status_t st = symcoll_comm_split(comm, color, key, NULL, &child);

    if (st != SYMCOLL_OK)
        harness_fail("symcoll_comm_split(color %d, key %d): %s", color, key,
                     symcoll_status_string(st));
    if ((color == SYMCOLL_SPLIT_NOCOLOR) != (child == NULL))
        harness_fail("split with color %d gave %s communicator", color, child ? "a" : "no");
    return child;
}

static void expect_place(symcoll_comm_h comm, int rank, int size, const char *what)
{
    int r = -1, n = -1;

    ck_assert_int_eq(symcoll_comm_rank(comm, &r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_size(comm, &n), SYMCOLL_OK);
    if (r != rank || n != size)
        harness_fail("%s: rank %d of %d, expected %d of %d", what, r, n, rank, size);
}

typedef struct colls_thread {
    symcoll_comm_h comm;
    uint64_t seed;
    int reps;
} colls_thread_t;

static void *colls_main(void *arg)
{
    colls_thread_t *t = arg;
    for (int i = 0; i < t->reps; i++)
        all_colls(t->comm, t->seed + 1000u * (unsigned)i);
    return NULL;
}

/* Two threads, one per communicator, running their collectives at the same time. */
static void colls_at_once(symcoll_comm_h a, symcoll_comm_h b, int reps)
{
    colls_thread_t ta = {a, 100, reps}, tb = {b, 50000, reps};
    pthread_t th;

    ck_assert_int_eq(pthread_create(&th, NULL, colls_main, &ta), 0);
    colls_main(&tb);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
}

/* ---- the 2 x 3 grid ---------------------------------------------------------------------
 * Rank g = 3 i + j: row i (3 ranks, keyed by j), column j (2 ranks, keyed by -i: the
 * column's order is the reverse of the parent's). On 2 simulated nodes the rows are the
 * nodes and every column crosses them. */
static void body_grid(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, row, col;
    int i = rank / 3, j = rank % 3;

    (void)arg;
    ck_assert_int_eq(nranks, 6);
    split_env();
    world = harness_comm_create();
    row = split_ok(world, i, j);
    col = split_ok(world, j, -i);
    expect_place(row, j, 3, "row");
    expect_place(col, 1 - i, 2, "column (reversed keys)");
    colls_at_once(row, col, 2);
    /* the parent still works, and between its children's calls */
    all_colls(world, 7);
    colls_at_once(world, row, 1);
    ck_assert_int_eq(symcoll_comm_destroy(row), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(col), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_grid_1node)
{
    ck_assert_int_eq(harness_run(6, 1, SPLIT_TIMEOUT, body_grid, NULL), 0);
}
END_TEST

START_TEST(test_grid_2nodes)
{
    ck_assert_int_eq(harness_run(6, 2, SPLIT_TIMEOUT, body_grid, NULL), 0);
}
END_TEST

/* ---- no color, a child of a child, the parent destroyed first ------------------------ */
static void body_nested(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, part, half;

    (void)arg;
    split_env();
    world = harness_comm_create();
    /* the last rank joins nothing; the others form one part in the reverse order */
    part = split_ok(world, rank == nranks - 1 ? SYMCOLL_SPLIT_NOCOLOR : 5, nranks - rank);
    /* the parent goes first: its children keep working */
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
    if (!part)
        return;
    expect_place(part, nranks - 2 - rank, nranks - 1, "part");
    half = split_ok(part, rank % 2, rank);
    all_colls(part, 11);
    ck_assert_int_eq(symcoll_comm_destroy(part), SYMCOLL_OK);
    expect_place(half, rank / 2, (nranks - 1 + 1 - rank % 2) / 2, "half");
    all_colls(half, 13);
    ck_assert_int_eq(symcoll_comm_destroy(half), SYMCOLL_OK);
}

START_TEST(test_nested_nocolor)
{
    ck_assert_int_eq(harness_run(6, 2, SPLIT_TIMEOUT, body_nested, NULL), 0);
}
END_TEST

/* ---- tensor and data parallel ------------------------------------------------------------
 * 8 ranks on 2 simulated nodes: TP groups of 4 inside each node, DP groups of 2 across
 * them; each rank's TP and DP all-reduces run from two threads at once, and the TP
 * group must take the node's paths while the DP group takes the network's. */
static void body_tpdp(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, tp, dp;

    (void)arg;
    split_env();
    world = harness_comm_create();
    tp = split_ok(world, rank / 4, rank);
    dp = split_ok(world, rank % 4, rank);
    expect_place(tp, rank % 4, 4, "TP");
    expect_place(dp, rank / 4, nranks / 4, "DP");
    colls_at_once(tp, dp, 2);
    if (rank == 0) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert(f);
        ck_assert_int_eq(symcoll_comm_print_topology(tp, f), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_print_topology(dp, f), SYMCOLL_OK);
        fclose(f);
        if (!strstr(buf, "4 rank(s) on 1 node(s)") || !strstr(buf, "2 rank(s) on 2 node(s)"))
            harness_fail("TP and DP topologies: expected 1 node and 2 nodes:\n%s", buf);
        free(buf);
    }
    ck_assert_int_eq(symcoll_comm_destroy(dp), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(tp), SYMCOLL_OK);
}

START_TEST(test_tp_dp)
{
    ck_assert_int_eq(harness_run(8, 2, SPLIT_TIMEOUT, body_tpdp, NULL), 0);
}
END_TEST

/* ---- a hierarchical child -------------------------------------------------------------
 * 8 ranks on 2 simulated nodes split by parity: each part has 2 ranks on each node, so
 * with SYMCOLL_ALGO=hier (inherited from the parent's settings) its all-reduces go
 * through the node leaders; the other collectives take their own paths. */
static void body_hier(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, part;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    (void)arg;
    (void)nranks;
    split_env();
    setenv("SYMCOLL_ALGO", "hier", 1);
    world = harness_comm_create();
    part = split_ok(world, rank % 2, rank);
    expect_place(part, rank / 2, 4, "part");
    all_colls(part, 21);
    f = open_memstream(&buf, &len);
    ck_assert(f);
    ck_assert_int_eq(symcoll_comm_print_decisions(part, f), SYMCOLL_OK);
    fclose(f);
    if (rank == 0 && getenv("SPLIT_SHOW"))
        fputs(buf, stderr);
    /* an all-reduce row whose algorithm is hier, on the part's own layout */
    if (!strstr(buf, "B  hier ") || !strstr(buf, "4 rank(s), 2 node(s), up to 2 per node"))
        harness_fail("the part's decisions show no hierarchical all-reduce on 2 x 2:\n%s", buf);
    free(buf);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(part), SYMCOLL_OK);
}

START_TEST(test_hier_child)
{
    ck_assert_int_eq(harness_run(8, 2, SPLIT_TIMEOUT, body_hier, NULL), 0);
}
END_TEST

/* ---- arguments ----------------------------------------------------------------------------
 * Refused with no side effect: the same communicator then splits and works. */
static void body_args(int rank, int nranks, void *arg)
{
    symcoll_comm_params_t p;
    symcoll_comm_h world, child = (symcoll_comm_h)(uintptr_t)1;

    (void)arg;
    split_env();
    world = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_split(NULL, 0, 0, NULL, &child), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_split(world, 0, 0, NULL, NULL), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_split(world, -5, 0, NULL, &child), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_ptr_null(child);
    memset(&p, 0, sizeof(p));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK;
    ck_assert_int_eq(symcoll_comm_split(world, 0, 0, &p, &child), SYMCOLL_ERR_INVALID_PARAM);
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TIMEOUT;
    p.timeout_sec = -1;
    ck_assert_int_eq(symcoll_comm_split(world, 0, 0, &p, &child), SYMCOLL_ERR_INVALID_PARAM);
    p.timeout_sec = 20;
    ck_assert_int_eq(symcoll_comm_split(world, rank % 2, 0, &p, &child), SYMCOLL_OK);
    expect_place(child, rank / 2, (nranks + 1 - rank % 2) / 2, "child");
    ar_round(child, rank / 2, (nranks + 1 - rank % 2) / 2, 100, 0, 3);
    ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
    /* ranks that set another CUDA device than the parent's (rank 0 only): the part
     * probes its topology on every rank, not only on rank 0 */
    p.field_mask = rank == 0 ? SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE : 0;
    p.cuda_device = 0;
    ck_assert_int_eq(symcoll_comm_split(world, 0, rank, &p, &child), SYMCOLL_OK);
    ar_round(child, rank, nranks, 100, 1, 4);
    ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_args)
{
    ck_assert_int_eq(harness_run(3, 1, SPLIT_TIMEOUT, body_args, NULL), 0);
}
END_TEST

/* ---- a rank killed during a split ---------------------------------------------------------
 * The last rank dies by SIGKILL instead of calling split (after the others are in it);
 * every other rank gets a failure status within the bound, and its parent is failed. */
#define KILL_BOUND_SEC 10.0

static void body_kill(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, child = NULL;
    symcoll_status_t st;
    double t0;

    (void)arg;
    split_env();
    setenv("SYMCOLL_TIMEOUT", "20", 1);
    /* the victim forks before it creates anything: the process that stays behind to
     * reap it holds no communicator (nothing of it to leak at its exit) */
    if (rank == nranks - 1 && !harness_fork_victim())
        return;
    world = harness_comm_create();
    ck_assert_int_eq(symcoll_barrier(world, NULL), SYMCOLL_OK);
    if (rank == nranks - 1) {
        usleep(300000);
        raise(SIGKILL);
    }
    t0 = mono_sec();
    st = symcoll_comm_split(world, rank % 2, rank, NULL, &child);
    if (st == SYMCOLL_OK || child)
        harness_fail("split with a dead rank: %s", symcoll_status_string(st));
    if (st != SYMCOLL_ERR_PEER_FAILED && st != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("split with a dead rank: %s", symcoll_status_string(st));
    if (mono_sec() - t0 > KILL_BOUND_SEC)
        harness_fail("split with a dead rank took %.1f s", mono_sec() - t0);
    ck_assert_int_ne(symcoll_barrier(world, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_kill_during_split)
{
    ck_assert_int_eq(harness_run(4, 1, SPLIT_TIMEOUT, body_kill, NULL), 0);
    ck_assert_int_eq(harness_run(4, 2, SPLIT_TIMEOUT, body_kill, NULL), 0);
}
END_TEST

/* ---- descriptors and memory over many cycles -----------------------------------------
 * 100 split / all-reduce / destroy cycles: after a warm-up, the descriptors do not change
 * and the resident memory grows by less than a slack (a leaked pool segment or mesh a
 * cycle is far above it). */
#define CYCLES 100
#define CYCLES_WARM 10
#define RSS_SLACK_KIB 4096

static void body_cycles(int rank, int nranks, void *arg)
{
    symcoll_comm_h world;
    long rss0 = 0;
    int fds0 = 0;

    (void)arg;
    split_env();
    world = harness_comm_create();
    for (int i = 0; i < CYCLES; i++) {
        symcoll_comm_h child = split_ok(world, rank % 2, rank);
        ar_round(child, rank / 2, (nranks + 1 - rank % 2) / 2, 64, i & 1, (uint64_t)i);
        ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
        if (i == CYCLES_WARM - 1) {
            fds0 = harness_count_fds();
            rss0 = harness_rss_kib();
        }
    }
    if (harness_count_fds() != fds0)
        harness_fail("descriptors: %d after the warm-up, %d after %d cycles", fds0,
                     harness_count_fds(), CYCLES);
    if (!SPLIT_ASAN && harness_rss_kib() - rss0 > RSS_SLACK_KIB)
        harness_fail("resident memory grew by %ld KiB over %d cycles", harness_rss_kib() - rss0,
                     CYCLES - CYCLES_WARM);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_cycles)
{
    ck_assert_int_eq(harness_run(4, 2, SPLIT_TIMEOUT * 2, body_cycles, NULL), 0);
}
END_TEST

static Suite *split_suite(void)
{
    Suite *s = suite_create("split");
    TCase *tc = tcase_create("split");

    tcase_set_timeout(tc, SPLIT_TIMEOUT * 2 + 30);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_grid_1node);
    tcase_add_test(tc, test_grid_2nodes);
    tcase_add_test(tc, test_nested_nocolor);
    tcase_add_test(tc, test_tp_dp);
    tcase_add_test(tc, test_hier_child);
    tcase_add_test(tc, test_kill_during_split);
    tcase_add_test(tc, test_cycles);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(split_suite());
}
