/* Multi-rank tests of the all-reduce across simulated nodes (real UCX over TCP loopback):
 * every datatype x operator with recursive doubling, the ring and the hierarchical
 * algorithm on several node shapes, sizes from 0 to a few MiB, pool growth and trim while
 * remote peers hold rkeys, a rank of another node dying in the middle of a call, and
 * symcoll_mem_free refusing the library's staging and double frees, and ranks calling with
 * different arguments.
 * Results are compared with a reference computed here, bit for bit, so every rank is
 * checked to hold the same bits. */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#define RUN_TIMEOUT 240.0

typedef struct shape {
    int nranks, nnodes;
} shape_t;

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- inputs and the reference -------------------------------------------------------
 * Values are small integers (and halves for products of floats) chosen so that every
 * partial and final result is exact in every type whatever the order of operations;
 * AVG inputs are base +- offsets that cancel, so the average is the base exactly. The
 * reference is then plain double arithmetic, encoded to the type's bits by
 * tools/refcheck.c. */

static double value_of(symcoll_dtype_t dt, symcoll_op_t op, int r, int n, size_t i)
{
    uint64_t h = ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)r << 40) ^
                 ((uint64_t)op << 52) ^ ((uint64_t)dt << 56);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    switch (op) {
    case SYMCOLL_SUM:
        return refcheck_is_unsigned(dt) ? (double)(h % 7) : (double)(h % 7) - 3;
    case SYMCOLL_PROD:
        if (refcheck_is_unsigned(dt))
            return (double)(1 + h % 2);
        if (refcheck_is_float(dt)) {
            static const double f[] = {1, -1, 2, 0.5};
            return f[h % 4];
        }
        return (double)((int)(h % 3) - 1 == 0 ? 2 : (int)(h % 3) - 1);
    case SYMCOLL_MIN:
    case SYMCOLL_MAX:
        return refcheck_is_unsigned(dt) ? (double)(h % 101) : (double)(h % 101) - 50;
    case SYMCOLL_AVG: {
        /* the base depends on i only, the offsets 2r - (n - 1) sum to zero */
        uint64_t b = ((uint64_t)i * 2654435761u) >> 7;
        double base =
            refcheck_is_unsigned(dt) ? (double)(b % 21 + (uint64_t)n) : (double)(b % 21) - 10;
        return base + (double)(2 * r - (n - 1));
    }
    default:
        return 0;
    }
}

/* exact for these inputs: avg is the base, an integer */
static double reference(symcoll_dtype_t dt, symcoll_op_t op, int n, size_t i)
{
    double acc = value_of(dt, op, 0, n, i);
    for (int r = 1; r < n; r++)
        acc = refcheck_combine(op, acc, value_of(dt, op, r, n, i));
    return refcheck_finish(dt, op, acc, n);
}

/* One all-reduce of count elements, checked element by element. */
static void check_allreduce(symcoll_comm_h comm, int rank, int n, symcoll_dtype_t dt,
                            symcoll_op_t op, size_t count, int inplace, const char *what)
{
    size_t es = symcoll_dtype_size(dt);
    unsigned char *send = malloc(count * es + 1), *recv = malloc(count * es + 1);
    unsigned char want[8];
    symcoll_status_t status;

    ck_assert(send && recv);
    for (size_t i = 0; i < count; i++)
        refcheck_store(send, i, dt, value_of(dt, op, rank, n, i));
    memset(recv, 0xa5, count * es + 1);
    status = symcoll_allreduce(send, inplace ? send : recv, count, dt, op, comm, NULL);
    if (status != SYMCOLL_OK)
        harness_fail("%s: allreduce of %zu %s %s%s: %s", what, count, symcoll_dtype_name(dt),
                     symcoll_op_name(op), inplace ? " in place" : "",
                     symcoll_status_string(status));
    if (inplace)
        memcpy(recv, send, count * es);
    for (size_t i = 0; i < count; i++) {
        refcheck_store(want, 0, dt, reference(dt, op, n, i));
        if (memcmp(recv + i * es, want, es))
            harness_fail("%s: %zu %s %s%s: element %zu differs from the reference", what, count,
                         symcoll_dtype_name(dt), symcoll_op_name(op),
                         inplace ? " in place" : "", i);
    }
    if (!inplace && count > 0 && recv[count * es] != 0xa5)
        harness_fail("%s: wrote past the end of recvbuf", what);
    free(send);
    free(recv);
}

static void net_env(void)
{
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("SYMCOLL_TIMEOUT", "60", 1);
}

/* ---- every datatype x operator, every algorithm, small sizes --------------------------- */

static void body_sweep(int rank, int nranks, void *arg)
{
    const shape_t *sh = arg;
    const char *algos[] = {"auto", "rd", "ring", "hier"};
    static const size_t sizes[] = {0, 1, 7, 1031};
    int uniform = nranks % sh->nnodes == 0;

    net_env();
    /* small chunks: the ring pipelines even these sizes */
    setenv("SYMCOLL_NET_CHUNK_SIZE", "4K", 1);
    for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        symcoll_comm_h comm;
        if (!strcmp(algos[a], "hier") && !uniform)
            continue;
        setenv("SYMCOLL_ALGO", algos[a], 1);
        comm = harness_comm_create();
        for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++)
            for (int op = 0; op < SYMCOLL_OP_LAST; op++)
                for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
                    check_allreduce(comm, rank, nranks, (symcoll_dtype_t)dt, (symcoll_op_t)op,
                                    sizes[s], (int)((dt + op + s) % 3 == 0), algos[a]);
        ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    }
    unsetenv("SYMCOLL_ALGO");
    unsetenv("SYMCOLL_NET_CHUNK_SIZE");
}

/* ---- a few pairs at MiB sizes with the default configuration --------------------------- */

static void body_large(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    (void)arg;

    net_env();
    comm = harness_comm_create();
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, (1u << 19) + 3, 0,
                    "large");
    check_allreduce(comm, rank, nranks, SYMCOLL_INT32, SYMCOLL_MAX, (1u << 20) + 1, 1, "large");
    check_allreduce(comm, rank, nranks, SYMCOLL_BFLOAT16, SYMCOLL_AVG, (3u << 19) + 5, 0,
                    "large");
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT32, SYMCOLL_PROD, 65537, 0, "large");
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* The same sweeps with puts into the peers' registered pool segments (rkeys) instead of
 * active messages, the protocol used where UCX has native RMA lanes: on TCP UCX emulates
 * it, so the target's progress matters too. */
static void body_sweep_put(int rank, int nranks, void *arg)
{
    setenv("SYMCOLL_NET_PROTOCOL", "put", 1);
    body_sweep(rank, nranks, arg);
    body_large(rank, nranks, arg);
    unsetenv("SYMCOLL_NET_PROTOCOL");
}

#define SHAPE_TEST(name, nr, nn, body)                                                         \
    START_TEST(name)                                                                           \
    {                                                                                          \
        shape_t sh = {nr, nn};                                                                 \
        ck_assert_int_eq(harness_run(nr, nn, RUN_TIMEOUT, body, &sh), 0);                      \
    }                                                                                          \
    END_TEST

SHAPE_TEST(test_sweep_2x1, 2, 2, body_sweep)
SHAPE_TEST(test_sweep_2x2, 4, 2, body_sweep)
SHAPE_TEST(test_sweep_3x1, 3, 3, body_sweep)
SHAPE_TEST(test_sweep_4x1, 4, 4, body_sweep)
SHAPE_TEST(test_sweep_3x2, 6, 3, body_sweep)
SHAPE_TEST(test_sweep_put_2x1, 2, 2, body_sweep_put)
SHAPE_TEST(test_sweep_put_3x2, 6, 3, body_sweep_put)
SHAPE_TEST(test_large_2x1, 2, 2, body_large)
SHAPE_TEST(test_large_3x1, 3, 3, body_large)
SHAPE_TEST(test_large_2x2, 4, 2, body_large)

/* ---- pool growth and trim while remote peers hold rkeys ------------------------------- */

/* arg: a shape, or NULL; protocol: SYMCOLL_NET_PROTOCOL for the growth test */
static const char *growth_protocol = "auto";

static void body_growth(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    symcoll_pool_attr_t attr = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS |
                                              SYMCOLL_POOL_ATTR_FIELD_SEGMENTS};
    uint64_t growths0;
    double *buf;
    void *pbuf;
    (void)arg;

    net_env();
    /* with put, every transfer uses the peers' rkeys of the segment it lands in */
    setenv("SYMCOLL_NET_PROTOCOL", growth_protocol, 1);
    setenv("SYMCOLL_POOL_MIN_SIZE", "64K", 1);
    setenv("SYMCOLL_NET_CHUNK_SIZE", "16K", 1);
    comm = harness_comm_create();
    /* small: scratch in the first segment, whose rkeys the peers unpack and cache */
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, 100, 0, "growth");
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &attr), SYMCOLL_OK);
    growths0 = attr.growths;
    /* a user buffer that stays in the pool across the growth */
    ck_assert_int_eq(symcoll_mem_alloc(comm, 32 * 1024, SYMCOLL_MEM_HOST, &pbuf), SYMCOLL_OK);
    /* larger, in steps: each grows the pool; old segments keep their rkeys */
    for (size_t count = 20000; count <= 400000; count *= 4)
        check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, 0, "growth");
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &attr), SYMCOLL_OK);
    ck_assert_msg(attr.growths > growths0, "the pool did not grow (%llu growths)",
                  (unsigned long long)attr.growths);
    /* the pool buffer (old segment) as both input and output */
    buf = pbuf;
    for (size_t i = 0; i < 4096; i++)
        buf[i] = value_of(SYMCOLL_FLOAT64, SYMCOLL_MAX, rank, nranks, i);
    ck_assert_int_eq(
        symcoll_allreduce(buf, buf, 4096, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm, NULL),
        SYMCOLL_OK);
    for (size_t i = 0; i < 4096; i++)
        ck_assert(buf[i] == reference(SYMCOLL_FLOAT64, SYMCOLL_MAX, nranks, i));
    check_allreduce(comm, rank, nranks, SYMCOLL_INT64, SYMCOLL_SUM, 33, 1, "growth");
    /* trim drops tail segments and their rkeys everywhere; growing again registers new
     * ones over the same addresses */
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, 300000, 0, "after trim");
    check_allreduce(comm, rank, nranks, SYMCOLL_UINT8, SYMCOLL_MIN, 5, 0, "after trim");
    ck_assert_int_eq(symcoll_mem_free(comm, pbuf), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

SHAPE_TEST(test_growth_2x1, 2, 2, body_growth)
SHAPE_TEST(test_growth_2x2, 4, 2, body_growth)

/* put / fence / flag put (UCX emulates RMA on TCP, correct while nobody dies): rkeys
 * unpacked lazily and cached per segment, dropped at trim, new ones after regrowth */
START_TEST(test_growth_2x1_put)
{
    shape_t sh = {2, 2};
    growth_protocol = "put";
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_growth, &sh), 0);
}
END_TEST

/* ---- symcoll_mem_free frees only live buffers of symcoll_mem_alloc ---------------------- */

static uint64_t pool_in_use(symcoll_comm_h comm)
{
    symcoll_pool_attr_t attr = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_IN_USE};
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &attr), SYMCOLL_OK);
    return attr.in_use;
}

/* p is the first allocation of the new pool; once it is freed, the inter-node staging of
 * the next all-reduce takes the same first fit, so freeing p again would release the
 * library's staging. It and every other stale or inner pointer must be refused. */
static void body_mem_free(int rank, int nranks, void *arg)
{
    const size_t size = 64 * 1024, count = size / sizeof(double);
    symcoll_comm_h comm;
    uint64_t in_use;
    double *p, *q;
    (void)arg;

    net_env();
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(comm, size, SYMCOLL_MEM_HOST, (void **)&p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, 0, "staging");
    in_use = pool_in_use(comm);
    ck_assert_uint_gt(in_use, 0);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_uint_eq(pool_in_use(comm), in_use);

    /* a pool buffer next to the staging, reduced in place across the nodes */
    ck_assert_int_eq(symcoll_mem_alloc(comm, size, SYMCOLL_MEM_HOST, (void **)&q), SYMCOLL_OK);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < count; i++)
            q[i] = value_of(SYMCOLL_FLOAT64, SYMCOLL_SUM, rank, nranks, i);
        ck_assert_int_eq(
            symcoll_allreduce(q, q, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
            SYMCOLL_OK);
        for (size_t i = 0; i < count; i++)
            ck_assert(q[i] == reference(SYMCOLL_FLOAT64, SYMCOLL_SUM, nranks, i));
        check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, 1, "staging");
    }
    in_use = pool_in_use(comm);
    ck_assert_int_eq(symcoll_mem_free(comm, q + 1), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_uint_eq(pool_in_use(comm), in_use);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    in_use = pool_in_use(comm);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_uint_eq(pool_in_use(comm), in_use);
    check_allreduce(comm, rank, nranks, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, 0, "staging");
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

SHAPE_TEST(test_mem_free_2x1, 2, 2, body_mem_free)
SHAPE_TEST(test_mem_free_2x2, 4, 2, body_mem_free)

/* ---- a rank of another node dies in the middle of a call ------------------------------ */

#define KILL_TIMEOUT 20.0

static void *killer(void *arg)
{
    (void)arg;
    usleep(30000);
    _exit(0); /* the process ends at once, mid-call, as a kill would end it */
    return NULL;
}

static void body_killed(int rank, int nranks, void *arg)
{
    const size_t count = 1u << 20;
    double *a = calloc(count, sizeof(double)), *b = calloc(count, sizeof(double));
    symcoll_comm_h comm;
    symcoll_status_t status = SYMCOLL_OK;
    char tmo[32];
    (void)arg;

    net_env();
    snprintf(tmo, sizeof(tmo), "%g", KILL_TIMEOUT);
    setenv("SYMCOLL_TIMEOUT", tmo, 1);
    comm = harness_comm_create();
    ck_assert(a && b);
    /* everyone is connected and warm before the victim goes */
    ck_assert_int_eq(symcoll_allreduce(a, b, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    for (int it = 0; it < 1000 && status == SYMCOLL_OK; it++) {
        double t0 = now_sec(), dt;
        /* The victim's timer starts only once its call 0 of the loop returned: that call
         * needed every rank's contribution, so every rank had left the warm call above
         * (a timer started right after the warm call could end the victim while a slow
         * survivor was still in it). */
        if (rank == nranks - 1 && it == 1) {
            pthread_t t;
            pthread_create(&t, NULL, killer, NULL);
        }
        status = symcoll_allreduce(a, b, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        dt = now_sec() - t0;
        if (status != SYMCOLL_OK) {
            ck_assert_msg(status == SYMCOLL_ERR_PEER_FAILED ||
                              status == SYMCOLL_ERR_TIMED_OUT || status == SYMCOLL_ERR_ABORTED,
                          "survivor got %s", symcoll_status_string(status));
            ck_assert_msg(dt < KILL_TIMEOUT + 10, "the error took %.1f s", dt);
            if (getenv("NET_TEST_VERBOSE"))
                printf("rank %d: %s after %.2f s\n", rank, symcoll_status_string(status), dt);
        }
    }
    ck_assert_msg(status != SYMCOLL_OK, "1000 calls succeeded without the dead rank");
    /* the communicator is broken for good, and says so at once */
    ck_assert_int_eq(symcoll_allreduce(a, b, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     status);
    symcoll_comm_destroy(comm); /* must return (harness deadline), whatever it reports */
    free(a);
    free(b);
}

START_TEST(test_killed_3x1)
{
    ck_assert_int_eq(harness_run(3, 3, KILL_TIMEOUT * 4 + 30, body_killed, NULL), 0);
}
END_TEST

START_TEST(test_killed_2x2)
{
    ck_assert_int_eq(harness_run(4, 2, KILL_TIMEOUT * 4 + 30, body_killed, NULL), 0);
}
END_TEST

/* ranks connect on need: most survivors hold no endpoint to the victim and learn of it
 * from the ranks that do */
START_TEST(test_killed_4x2)
{
    ck_assert_int_eq(harness_run(8, 4, KILL_TIMEOUT * 4 + 30, body_killed, NULL), 0);
}
END_TEST

/* ---- abort from another thread: every rank's call ends promptly ------------------------ */

static void *aborter(void *arg)
{
    usleep(100000);
    ck_assert_int_eq(symcoll_comm_abort((symcoll_comm_h)arg), SYMCOLL_OK);
    return NULL;
}

static void body_abort(int rank, int nranks, void *arg)
{
    const size_t count = 1u << 18;
    double *a = calloc(count, sizeof(double)), *b = calloc(count, sizeof(double));
    symcoll_comm_h comm;
    symcoll_status_t status = SYMCOLL_OK;
    pthread_t t;
    double t0 = 0;
    (void)arg;

    net_env(); /* deadline 60 s: "promptly" means far below it */
    comm = harness_comm_create();
    ck_assert(a && b);
    if (rank == nranks - 1)
        pthread_create(&t, NULL, aborter, comm);
    for (int it = 0; it < 100000 && status == SYMCOLL_OK; it++) {
        t0 = now_sec();
        status = symcoll_allreduce(a, b, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    }
    ck_assert_msg(now_sec() - t0 < 20, "the failing call took %.1f s", now_sec() - t0);
    if (rank == nranks - 1) {
        ck_assert_int_eq(status, SYMCOLL_ERR_ABORTED);
        pthread_join(t, NULL);
    } else {
        ck_assert_msg(status == SYMCOLL_ERR_ABORTED || status == SYMCOLL_ERR_PEER_FAILED,
                      "peer of the aborted rank got %s", symcoll_status_string(status));
    }
    ck_assert_int_eq(symcoll_allreduce(a, b, 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     status);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(a);
    free(b);
}

SHAPE_TEST(test_abort_2x1, 2, 2, body_abort)
SHAPE_TEST(test_abort_2x2, 4, 2, body_abort)

/* ---- ranks calling with different arguments ---------------------------------------------
 * One rank (a different one each time) calls with another count, datatype or operator,
 * at small and large sizes and across the boundaries where the selector changes the
 * algorithm or the scratch must grow: every rank must get SYMCOLL_ERR_MISMATCH, and the
 * next agreeing call must return exact results. */

typedef struct mismatch_case {
    const char *what;
    size_t count, odd_count;
    symcoll_dtype_t dt, odd_dt;
    symcoll_op_t op, odd_op;
} mismatch_case_t;

typedef struct mismatch_arg {
    int nranks, nnodes;
    const char *algo, *hier_min;
} mismatch_arg_t;

static void body_mismatch(int rank, int nranks, void *arg)
{
    const mismatch_arg_t *ma = arg;
    const symcoll_dtype_t F64 = SYMCOLL_FLOAT64, I64 = SYMCOLL_INT64, F32 = SYMCOLL_FLOAT32;
    const symcoll_op_t SUM = SYMCOLL_SUM, MAX = SYMCOLL_MAX;
    static const size_t small = 5, large = 70000; /* 40 B; 560 KB: ring, hier slices ring */
    const mismatch_case_t cases[] = {
        {"count (small)", small, small + 3, F64, F64, SUM, SUM},
        {"count (large)", large, large + 1, F64, F64, SUM, SUM},
        {"count (small vs large)", small, large, F64, F64, SUM, SUM},
        {"count (large vs small)", large, 1, F64, F64, MAX, MAX},
        {"datatype (same size, small)", small, small, F64, I64, SUM, SUM},
        {"datatype (same size, large)", large, large, F64, I64, MAX, MAX},
        {"datatype (other size)", large, large, F64, F32, SUM, SUM},
        {"operator (small)", small, small, F64, F64, SUM, MAX},
        {"operator (large)", large, large, I64, I64, MAX, SUM},
    };
    size_t ncases = sizeof(cases) / sizeof(cases[0]);
    double *send = calloc(2 * large, sizeof(double)), *recv = calloc(2 * large, sizeof(double));
    symcoll_comm_h comm;

    ck_assert(send && recv);
    net_env();
    setenv("SYMCOLL_TIMEOUT", "30", 1);
    setenv("SYMCOLL_NET_CHUNK_SIZE", "16K", 1);
    setenv("SYMCOLL_ALGO", ma->algo, 1);
    if (ma->hier_min)
        setenv("SYMCOLL_HIER_MIN", ma->hier_min, 1);
    comm = harness_comm_create();
    check_allreduce(comm, rank, nranks, F64, SUM, small, 0, "before the mismatches");
    for (size_t k = 0; k < 2 * ncases; k++) {
        const mismatch_case_t *mc = &cases[k % ncases];
        /* a different odd rank each time: its direct peers are local or remote */
        int odd = (int)((k * 5 + 1) % (size_t)nranks), me_odd = rank == odd;
        size_t count = me_odd ? mc->odd_count : mc->count;
        symcoll_dtype_t dt = me_odd ? mc->odd_dt : mc->dt;
        symcoll_op_t op = me_odd ? mc->odd_op : mc->op;
        symcoll_status_t status;

        for (size_t i = 0; i < count; i++)
            refcheck_store(send, i, dt, value_of(dt, op, rank, nranks, i));
        status = symcoll_allreduce(send, k % 3 == 0 ? send : recv, count, dt, op, comm, NULL);
        if (status != SYMCOLL_ERR_MISMATCH)
            harness_fail("%s, %s: rank %d (odd one: %d) got %s, not SYMCOLL_ERR_MISMATCH",
                         ma->algo, mc->what, rank, odd, symcoll_status_string(status));
        /* usable again, and in step: small and large, both algorithms of the selector */
        check_allreduce(comm, rank, nranks, mc->dt, mc->op, k % 2 ? large : small, 0,
                        "after a mismatch");
        check_allreduce(comm, rank, nranks, SYMCOLL_INT32, SYMCOLL_MIN, k % 2 ? 3 : 40000,
                        k % 4 == 1, "after a mismatch");
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    unsetenv("SYMCOLL_ALGO");
    unsetenv("SYMCOLL_HIER_MIN");
    unsetenv("SYMCOLL_NET_CHUNK_SIZE");
    free(send);
    free(recv);
}

#define MISMATCH_TEST(name, nr, nn, algo, hier_min)                                            \
    START_TEST(name)                                                                           \
    {                                                                                          \
        mismatch_arg_t ma = {nr, nn, algo, hier_min};                                          \
        ck_assert_int_eq(harness_run(nr, nn, RUN_TIMEOUT, body_mismatch, &ma), 0);             \
    }                                                                                          \
    END_TEST

/* 2 nodes x 2 ranks: hierarchical at every size (auto), flat rd and ring (forced), and
 * flat up to 64 KB, hierarchical above (SYMCOLL_HIER_MIN) */
MISMATCH_TEST(test_mismatch_2x2_auto, 4, 2, "auto", NULL)
MISMATCH_TEST(test_mismatch_2x2_rd, 4, 2, "rd", NULL)
MISMATCH_TEST(test_mismatch_2x2_ring, 4, 2, "ring", NULL)
MISMATCH_TEST(test_mismatch_2x2_hier_min, 4, 2, "auto", "64K")
/* 3 ranks on 2 nodes: rd up to 32 KB, ring above, local and remote peers */
MISMATCH_TEST(test_mismatch_3on2_auto, 3, 2, "auto", NULL)
MISMATCH_TEST(test_mismatch_3on2_ring, 3, 2, "ring", NULL)

int main(void)
{
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("net");

    tcase_set_timeout(tc, RUN_TIMEOUT + 60);
    tcase_add_test(tc, test_sweep_2x1);
    tcase_add_test(tc, test_sweep_2x2);
    tcase_add_test(tc, test_sweep_3x1);
    tcase_add_test(tc, test_sweep_4x1);
    tcase_add_test(tc, test_sweep_3x2);
    tcase_add_test(tc, test_sweep_put_2x1);
    tcase_add_test(tc, test_sweep_put_3x2);
    tcase_add_test(tc, test_large_2x1);
    tcase_add_test(tc, test_large_3x1);
    tcase_add_test(tc, test_large_2x2);
    tcase_add_test(tc, test_growth_2x1);
    tcase_add_test(tc, test_growth_2x2);
    tcase_add_test(tc, test_growth_2x1_put);
    tcase_add_test(tc, test_mem_free_2x1);
    tcase_add_test(tc, test_mem_free_2x2);
    tcase_add_test(tc, test_killed_3x1);
    tcase_add_test(tc, test_killed_2x2);
    tcase_add_test(tc, test_killed_4x2);
    tcase_add_test(tc, test_abort_2x1);
    tcase_add_test(tc, test_abort_2x2);
    suite_add_tcase(s, tc);
    tc = tcase_create("mismatch");
    tcase_set_timeout(tc, RUN_TIMEOUT + 60);
    tcase_add_test(tc, test_mismatch_2x2_auto);
    tcase_add_test(tc, test_mismatch_2x2_rd);
    tcase_add_test(tc, test_mismatch_2x2_ring);
    tcase_add_test(tc, test_mismatch_2x2_hier_min);
    tcase_add_test(tc, test_mismatch_3on2_auto);
    tcase_add_test(tc, test_mismatch_3on2_ring);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
