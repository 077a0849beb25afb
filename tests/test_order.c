/* The canonical reduction order (SYMCOLL_REDUCTION_ORDER=canonical; auto, the default,
 * for 32 and 64-bit floats): float sums, products and averages on host memory give the
 * bits of one fixed tree of the
 * ranks' values (algo/base/reduce.h), whatever the size, the algorithm (chosen or
 * forced), the node layout, in or out of place, pool or plain buffers; a reduce-scatter's
 * block is the matching slice of the all-reduce.
 *
 * Inputs depend on the order: each element is a value of many binary exponents and both
 * signs (sums), or near 1 with long mantissas (products). Every rank computes the tree
 * itself, from the definition, and checks every element of every call; rank 0 also writes
 * a hash of each (datatype, operator)'s largest result, and the test checks that every
 * layout and algorithm of one rank count wrote the same hashes. Small thresholds and
 * chunks (below) make the sizes cross one-shot/two-shot, recursive doubling/ring and
 * several pipeline chunks. */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "order_ref.h"
#include "symcoll.h"

#define RUN_TIMEOUT 120.0
#define MAX_RANKS 7

static const symcoll_dtype_t dtypes[] = {SYMCOLL_FLOAT32, SYMCOLL_FLOAT64, SYMCOLL_BFLOAT16,
                                         SYMCOLL_FLOAT16};
static const symcoll_op_t ops[] = {SYMCOLL_SUM, SYMCOLL_PROD, SYMCOLL_AVG};
/* elements; the largest is several chunks of SYMCOLL_NET_CHUNK_SIZE and
 * SYMCOLL_HOST_CHUNK_SIZE as set below */
static const size_t sizes[] = {1, 3, 64, 1000, 6000, 25000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_COUNT 25000
#define RS_BLOCK 1500

/* One run: a layout (node of each rank) and a forced algorithm ("auto": none). */
typedef struct order_run {
    int n;
    int node[MAX_RANKS];
    const char *algo;
    const char *order;  /* SYMCOLL_REDUCTION_ORDER: canonical, or auto (32 and 64-bit only) */
    const char *hashes; /* file rank 0 writes its hashes to */
} order_run_t;

static void check_result(const order_run_t *run, int rank, const char *what, symcoll_dtype_t dt,
                         symcoll_op_t op, size_t first, size_t count, const void *got)
{
    size_t es = symcoll_dtype_size(dt);
    char want[8];

    for (size_t k = 0; k < count; k++) {
        order_expect(dt, op, run->n, first + k, want);
        if (memcmp(want, (const char *)got + k * es, es))
            harness_fail("rank %d, %d ranks, algo %s, %s %s %s: element %zu differs from "
                         "the canonical tree",
                         rank, run->n, run->algo, what, symcoll_dtype_name(dt),
                         symcoll_op_name(op), first + k);
    }
}

static void fill(symcoll_dtype_t dt, symcoll_op_t op, int rank, void *buf, size_t count)
{
    for (size_t k = 0; k < count; k++)
        order_store(dt, buf, k, order_input(dt, op, rank, k));
}

static void order_body(int rank, int nranks, void *arg)
{
    const order_run_t *run = arg;
    char host[32];
    symcoll_comm_h comm;
    symcoll_status_t st;
    FILE *out = NULL;
    size_t max_bytes = MAX_COUNT * 8;
    char *plain_in = malloc(max_bytes), *plain_out = malloc(max_bytes);
    void *pool_in = NULL, *pool_out = NULL;

    snprintf(host, sizeof(host), "ordernode-%d", run->node[rank]);
    setenv("SYMCOLL_HOST_ID", host, 1);
    setenv("SYMCOLL_ALGO", run->algo, 1);
    /* ORDER_TEST_ORDER=fastest shows that the test fails without the canonical order */
    setenv("SYMCOLL_REDUCTION_ORDER",
           getenv("ORDER_TEST_ORDER") ? getenv("ORDER_TEST_ORDER") : run->order, 1);
    setenv("SYMCOLL_HOST_ONESHOT_MAX", "2K", 1);
    setenv("SYMCOLL_HOST_CHUNK_SIZE", "8K", 1);
    setenv("SYMCOLL_NET_RD_MAX", "1K", 1);
    setenv("SYMCOLL_NET_CHUNK_SIZE", "16K", 1);
    comm = harness_comm_create();
    {
        int size = 0;
        ck_assert_int_eq(symcoll_comm_size(comm, &size), SYMCOLL_OK);
        ck_assert_int_eq(size, nranks);
    }
    st = symcoll_mem_alloc(comm, max_bytes, SYMCOLL_MEM_HOST, &pool_in);
    if (st == SYMCOLL_OK)
        st = symcoll_mem_alloc(comm, max_bytes, SYMCOLL_MEM_HOST, &pool_out);
    if (st != SYMCOLL_OK || !plain_in || !plain_out)
        harness_fail("rank %d: buffers: %s", rank, symcoll_status_string(st));
    if (rank == 0) {
        out = fopen(run->hashes, "w");
        if (!out)
            harness_fail("cannot write %s", run->hashes);
    }
    /* auto keeps the contract for 32 and 64-bit floats (16-bit ones across nodes are
     * rounded at each step there) */
    for (size_t di = 0; di < (strcmp(run->order, "auto") ? 4u : 2u); di++)
        for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++) {
            symcoll_dtype_t dt = dtypes[di];
            symcoll_op_t op = ops[oi];
            size_t es = symcoll_dtype_size(dt);
            for (size_t si = 0; si < NSIZES; si++)
                for (int place = 0; place < 4; place++) {
                    /* plain or pool, out of place or in place */
                    char *in = place < 2 ? plain_in : pool_in;
                    char *res = place % 2 ? in : (place < 2 ? plain_out : pool_out);
                    static const char *const names[4] = {"plain", "plain in place", "pool",
                                                         "pool in place"};
                    fill(dt, op, rank, in, sizes[si]);
                    st = symcoll_allreduce(in, res, sizes[si], dt, op, comm, NULL);
                    if (st != SYMCOLL_OK)
                        harness_fail("rank %d: all-reduce of %zu: %s", rank, sizes[si],
                                     symcoll_status_string(st));
                    check_result(run, rank, names[place], dt, op, 0, sizes[si], res);
                    if (out && si == NSIZES - 1 && place == 0)
                        fprintf(out, "%s %s %016llx\n", symcoll_dtype_name(dt),
                                symcoll_op_name(op),
                                (unsigned long long)order_fnv(res, sizes[si] * es));
                }
            /* reduce-scatter: this rank's block is the all-reduce's slice */
            fill(dt, op, rank, pool_in, (size_t)nranks * RS_BLOCK);
            st = symcoll_reduce_scatter(pool_in, pool_out, RS_BLOCK, dt, op, comm, NULL);
            if (st != SYMCOLL_OK)
                harness_fail("rank %d: reduce-scatter: %s", rank, symcoll_status_string(st));
            check_result(run, rank, "reduce-scatter", dt, op, (size_t)rank * RS_BLOCK, RS_BLOCK,
                         pool_out);
        }
    if (out)
        fclose(out);
    symcoll_mem_free(comm, pool_in);
    symcoll_mem_free(comm, pool_out);
    free(plain_in);
    free(plain_out);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* Runs every (layout, algorithm) of one rank count in one order; all must write the same
 * hashes. */
static void order_case_in(const char *order, int n, const int (*layouts)[MAX_RANKS],
                          int nlayouts)
{
    static const char *const intra[] = {"auto", "oneshot", "twoshot"};
    static const char *const inter[] = {"auto", "rd", "ring", "hier", "rhd"};
    char first[4096] = "", path[64], buf[4096];
    int runs = 0;

    snprintf(path, sizeof(path), "/tmp/symcoll-order-%d", (int)getpid());
    for (int li = 0; li < nlayouts; li++) {
        int nodes = 0, uniform = 1, cnt[MAX_RANKS] = {0};
        for (int r = 0; r < n; r++) {
            nodes = layouts[li][r] + 1 > nodes ? layouts[li][r] + 1 : nodes;
            cnt[layouts[li][r]]++;
        }
        for (int k = 1; k < nodes; k++)
            uniform &= cnt[k] == cnt[0];
        for (int ai = 0; ai < (nodes == 1 ? 3 : 5); ai++) {
            order_run_t run = {.order = order,
                               .n = n,
                               .algo = nodes == 1 ? intra[ai] : inter[ai],
                               .hashes = path};
            FILE *f;
            size_t len;
            if (nodes > 1 && ai == 3 && (!uniform || n == nodes))
                continue; /* hier needs several ranks on each of equal nodes */
            memcpy(run.node, layouts[li], sizeof(run.node));
            unlink(path);
            ck_assert_msg(harness_run(n, 1, RUN_TIMEOUT, order_body, &run) == 0,
                          "%d ranks, layout %d, algo %s failed", n, li, run.algo);
            f = fopen(path, "r");
            ck_assert_ptr_nonnull(f);
            len = fread(buf, 1, sizeof(buf) - 1, f);
            fclose(f);
            buf[len] = 0;
            ck_assert_uint_gt(len, 0);
            if (!runs++)
                memcpy(first, buf, len + 1);
            else
                ck_assert_msg(!strcmp(first, buf),
                              "%d ranks, layout %d, algo %s: hashes\n%s differ from the "
                              "first run's\n%s",
                              n, li, run.algo, buf, first);
        }
    }
    unlink(path);
    printf("%d ranks, %s order, %d runs, one hash per datatype and operator:\n%s", n, order,
           runs, first);
}

static void order_case(int n, const int (*layouts)[MAX_RANKS], int nlayouts)
{
    order_case_in("canonical", n, layouts, nlayouts);
    /* the default: the same for 32 and 64-bit floats; uneven layouts only, for time */
    if (n == 3 || n == 5)
        order_case_in("auto", n, layouts, nlayouts);
}

START_TEST(test_order_2)
{
    static const int l[][MAX_RANKS] = {{0, 0}, {0, 1}};
    order_case(2, l, 2);
}
END_TEST

START_TEST(test_order_3)
{
    /* one node; 2 + 1; 1 + 2 with the ranks of node 0 not adjacent */
    static const int l[][MAX_RANKS] = {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}};
    order_case(3, l, 3);
}
END_TEST

START_TEST(test_order_4)
{
    /* one node; 2 x 2 in blocks; 2 x 2 interleaved; 4 x 1; 3 + 1 */
    static const int l[][MAX_RANKS] = {
        {0, 0, 0, 0}, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 2, 3}, {0, 1, 1, 1}};
    order_case(4, l, 5);
}
END_TEST

START_TEST(test_order_5)
{
    /* one node; 2 + 1 + 2; 3 + 2 interleaved */
    static const int l[][MAX_RANKS] = {{0, 0, 0, 0, 0}, {0, 0, 1, 2, 2}, {0, 1, 0, 1, 0}};
    order_case(5, l, 3);
}
END_TEST

/* The communicator parameter: the order of a creation and of a split; ranks that ask
 * for different orders all fail, without a hang. 3 ranks on 2 nodes, where the fastest
 * order takes the ring for large messages and the canonical one rd. */
static bool decides_ring(symcoll_comm_h comm)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    bool ring;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(symcoll_comm_print_decisions(comm, f), SYMCOLL_OK);
    fclose(f);
    ring = strstr(buf, "  ring ") != NULL;
    free(buf);
    return ring;
}

static void param_body(int rank, int nranks, void *arg)
{
    symcoll_comm_params_t p = {0};
    symcoll_comm_h comm = NULL, child = NULL;
    float x = 1.0f, y = 0;

    (void)nranks;
    (void)arg;
    setenv("SYMCOLL_HOST_ID", rank < 2 ? "pnode-0" : "pnode-1", 1);
    unsetenv("SYMCOLL_REDUCTION_ORDER");
    /* a default creation is canonical; a split asks for the fastest order */
    comm = harness_comm_create();
    ck_assert(!decides_ring(comm));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER;
    p.reduction_order = SYMCOLL_ORDER_FASTEST;
    ck_assert_int_eq(symcoll_comm_split(comm, 0, rank, &p, &child), SYMCOLL_OK);
    ck_assert(decides_ring(child));
    ck_assert_int_eq(symcoll_allreduce(&x, &y, 1, SYMCOLL_FLOAT32, SYMCOLL_SUM, child, NULL),
                     SYMCOLL_OK);
    ck_assert(y == 3.0f);
    ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
    /* an unknown order: refused before anything happens */
    p.reduction_order = 7;
    ck_assert_int_eq(symcoll_comm_split(comm, 0, rank, &p, &child), SYMCOLL_ERR_INVALID_PARAM);
    /* rank 2 asks for another order than the others: the part fails on every rank */
    p.reduction_order = rank == 2 ? SYMCOLL_ORDER_FASTEST : SYMCOLL_ORDER_CANONICAL;
    ck_assert_int_eq(symcoll_comm_split(comm, 0, rank, &p, &child), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(test_order_7)
{
    /* rhd with the fold and two halving steps: one node; 3 + 2 + 2 */
    static const int l[][MAX_RANKS] = {{0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 1, 2, 2}};
    order_case_in("canonical", 7, l, 2);
}
END_TEST

START_TEST(test_order_param)
{
    ck_assert_int_eq(harness_run(3, 1, RUN_TIMEOUT, param_body, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("order");
    TCase *tc = tcase_create("canonical");

    setenv("UCX_TLS", getenv("UCX_TLS") ? getenv("UCX_TLS") : "tcp,self", 0);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 0);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_order_2);
    tcase_add_test(tc, test_order_3);
    tcase_add_test(tc, test_order_4);
    tcase_add_test(tc, test_order_5);
    tcase_add_test(tc, test_order_7);
    tcase_add_test(tc, test_order_param);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
