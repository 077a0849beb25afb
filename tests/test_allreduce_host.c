/* Multi-rank tests of the intra-node host all-reduce through the public API: every
 * datatype x operator at several sizes, in place and out of place, plain and pool
 * buffers at odd alignments, forced algorithms and small pipeline chunks; results are
 * compared with a reference computed here and checked to be bitwise identical on
 * every rank. (A rank killed in a loop of calls is tests/test_fault.c's.) */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "pool_tests.h"
#include "refcheck.h"
#include "symcoll.h"

#define RUN_TIMEOUT 150.0

/* ---- inputs and reference ------------------------------------------------------------
 * Inputs are chosen so that every result is exact in every datatype, whatever the
 * order of the operations: small integers for sum, powers of two for prod, and for avg
 * rank offsets that cancel (the sum is nranks times a base value). So the reference
 * below, computed in double / 64-bit integers, must match bit for bit. */

/* The value rank r contributes at element i. */
static double input_value(symcoll_dtype_t dt, symcoll_op_t op, int r, int n, size_t i)
{
    uint64_t h = (uint64_t)i * 2654435761u + (uint64_t)r * 40503u + (uint64_t)op * 977u;
    h ^= h >> 13;
    switch (op) {
    case SYMCOLL_PROD:
        if (refcheck_is_float(dt)) {
            static const double f[] = {1, 2, 0.5, -1, 1, -2, 1, 0.5};
            return f[h % 8];
        }
        return !refcheck_is_unsigned(dt) ? (double)((int)(h % 5) - 2) : (double)(h % 4);
    case SYMCOLL_AVG:
        /* a base value common to all ranks plus offsets that cancel */
        h = (uint64_t)i * 2654435761u;
        h ^= h >> 13;
        if (!refcheck_is_unsigned(dt))
            return (double)((int)(h % 17) - 8) + (double)(2 * r - (n - 1));
        return (double)(h % 29);
    default:
        return !refcheck_is_unsigned(dt) ? (double)((int)(h % 23) - 11) : (double)(h % 23);
    }
}

/* Writes value v as element i of buf (tools/refcheck.c's encoding, written
 * independently of the library's conversion). Floats must be exact in the format (all
 * the values this test produces); integers keep their low bits, which is what wrapping
 * arithmetic in the element type gives for sum and prod. */
static void store(symcoll_dtype_t dt, void *buf, size_t i, double v)
{
    if (!refcheck_dtype_size(dt))
        harness_fail("bad datatype %d", (int)dt);
    refcheck_store(buf, i, dt, v);
    /* (no ck_assert in loops: in fork mode each one is a write to Check's pipe) */
    if (refcheck_is_float(dt) && refcheck_load(buf, i, dt) != v)
        harness_fail("%g is not exact in %s", v, symcoll_dtype_name(dt));
}

/* Expected bytes of element i: the reduction of every rank's input in double, exact for
 * these inputs (every value here is below 2^53); avg truncates toward zero for integers. */
static void expected(symcoll_dtype_t dt, symcoll_op_t op, int n, size_t i, void *out)
{
    double acc = input_value(dt, op, 0, n, i);
    if ((unsigned)op >= SYMCOLL_OP_LAST)
        harness_fail("bad operator %d", (int)op);
    for (int r = 1; r < n; r++)
        acc = refcheck_combine(op, acc, input_value(dt, op, r, n, i));
    store(dt, out, 0, refcheck_finish(dt, op, acc, n));
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* ---- one checked call ------------------------------------------------------------------ */

typedef struct run_ctx {
    symcoll_comm_h comm;
    int rank, n;
    unsigned char *plain_send, *plain_recv; /* malloc'd, big enough + slack */
    unsigned char *pool_send, *pool_recv;   /* from symcoll_mem_alloc */
    uint64_t hash;                          /* of every output, for the identity check */
    unsigned long calls;
} run_ctx_t;

enum { BUF_PLAIN = 0, BUF_POOL = 1 };

static void check_call(run_ctx_t *x, symcoll_dtype_t dt, symcoll_op_t op, size_t count,
                       int inplace, int kind, size_t misalign)
{
    size_t es = symcoll_dtype_size(dt), nbytes = count * es;
    unsigned char *send = (kind == BUF_POOL ? x->pool_send : x->plain_send) + misalign;
    unsigned char *recv =
        inplace ? send : (kind == BUF_POOL ? x->pool_recv : x->plain_recv) + misalign;
    unsigned char exp[8];
    symcoll_status_t st;

    for (size_t i = 0; i < count; i++)
        store(dt, send, i, input_value(dt, op, x->rank, x->n, i));
    if (!inplace)
        memset(recv, 0xa5, nbytes + 16);
    else
        memset(send + nbytes, 0xa5, 16);
    st = symcoll_allreduce(count ? send : NULL, count ? recv : NULL, count, dt, op, x->comm,
                           NULL);
    if (st != SYMCOLL_OK)
        harness_fail("allreduce %s %s count %zu inplace %d kind %d: %s", symcoll_dtype_name(dt),
                     symcoll_op_name(op), count, inplace, kind, symcoll_status_string(st));
    for (size_t i = 0; i < count; i++) {
        expected(dt, op, x->n, i, exp);
        if (memcmp(recv + i * es, exp, es))
            harness_fail("allreduce %s %s count %zu inplace %d kind %d misalign %zu: element "
                         "%zu differs from the reference",
                         symcoll_dtype_name(dt), symcoll_op_name(op), count, inplace, kind,
                         misalign, i);
    }
    for (size_t i = 0; i < 16; i++)
        if (recv[nbytes + i] != 0xa5)
            harness_fail("allreduce %s %s count %zu: wrote past the end",
                         symcoll_dtype_name(dt), symcoll_op_name(op), count);
    x->hash = fnv(x->hash, recv, nbytes);
    x->calls++;
}

/* Every rank must have produced the same bytes: min and max of the hash agree. */
static void check_identical(run_ctx_t *x)
{
    uint64_t h[2] = {x->hash, x->hash}, mn, mx;
    ck_assert_int_eq(
        symcoll_allreduce(&h[0], &mn, 1, SYMCOLL_UINT64, SYMCOLL_MIN, x->comm, NULL),
        SYMCOLL_OK);
    ck_assert_int_eq(
        symcoll_allreduce(&h[1], &mx, 1, SYMCOLL_UINT64, SYMCOLL_MAX, x->comm, NULL),
        SYMCOLL_OK);
    if (mn != mx || mn != x->hash)
        harness_fail("outputs differ between ranks (hash %016llx, min %016llx, max %016llx)",
                     (unsigned long long)x->hash, (unsigned long long)mn,
                     (unsigned long long)mx);
}

#define BIG_COUNT ((size_t)1048576 + 3)
#define SMALL_MAX 4099

static void ctx_init(run_ctx_t *x, int rank, int n, size_t max_bytes)
{
    memset(x, 0, sizeof(*x));
    x->rank = rank;
    x->n = n;
    x->hash = 0xcbf29ce484222325ULL;
    x->comm = harness_comm_create();
    x->plain_send = malloc(max_bytes + 64);
    x->plain_recv = malloc(max_bytes + 64);
    ck_assert(x->plain_send && x->plain_recv);
    ck_assert_int_eq(
        symcoll_mem_alloc(x->comm, max_bytes + 64, SYMCOLL_MEM_HOST, (void **)&x->pool_send),
        SYMCOLL_OK);
    ck_assert_int_eq(
        symcoll_mem_alloc(x->comm, max_bytes + 64, SYMCOLL_MEM_HOST, (void **)&x->pool_recv),
        SYMCOLL_OK);
}

static void ctx_fini(run_ctx_t *x)
{
    check_identical(x);
    ck_assert_int_eq(symcoll_mem_free(x->comm, x->pool_send), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(x->comm, x->pool_recv), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(x->comm), SYMCOLL_OK);
    free(x->plain_send);
    free(x->plain_recv);
}

/*
 * The matrix. Every datatype x operator at counts 0, 1, 7 and 4099, in place and out of
 * place, with plain and pool buffers (misaligned by a few bytes in half the cases):
 * 800 calls, which covers the one-shot range (up to 16 KiB) and, for the 4- and
 * 8-byte types at 4099 elements, the two-shot one. The 1 MiB + 3 element size runs for
 * one pair per datatype (rotating through the operators, so every operator and every
 * type is seen once at that size, pipelined over several chunks): the arithmetic is
 * the same code at every size, so the big size checks chunking and slicing, not the
 * operator table, and 50 big calls on 8 ranks would take minutes on 2 cores.
 */
static void body_matrix(int rank, int n, void *arg)
{
    static const size_t counts[] = {0, 1, 7, SMALL_MAX};
    run_ctx_t x;
    (void)arg;

    ctx_init(&x, rank, n, BIG_COUNT * 8);
    for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++)
        for (int op = 0; op < SYMCOLL_OP_LAST; op++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int inplace = 0; inplace < 2; inplace++)
                    for (int kind = 0; kind < 2; kind++)
                        check_call(&x, (symcoll_dtype_t)dt, (symcoll_op_t)op, counts[c],
                                   inplace, kind,
                                   (c + (size_t)op) % 2 ? (size_t)(dt % 3) + 1 : 0);
    for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++)
        check_call(&x, (symcoll_dtype_t)dt, (symcoll_op_t)(dt % SYMCOLL_OP_LAST), BIG_COUNT,
                   dt % 2, (dt / 2) % 2, 0);
    ctx_fini(&x);
}

/* Small pipeline chunks and each algorithm forced: many chunks per call, staging
 * slots reused across chunks and calls, one-shot on a large message, two-shot on a
 * tiny one (empty slices on some ranks). */
static void body_chunks(int rank, int n, void *arg)
{
    static const char *const algos[] = {"oneshot", "twoshot"};
    static const size_t counts[] = {1, 5, 4099, 70001};
    (void)arg;
    setenv("SYMCOLL_HOST_CHUNK_SIZE", "4K", 1);
    for (int a = 0; a < 2; a++) {
        run_ctx_t x;
        setenv("SYMCOLL_ALGO", algos[a], 1);
        ctx_init(&x, rank, n, 70001 * 8);
        for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int mode = 0; mode < 4; mode++)
                    check_call(&x, (symcoll_dtype_t)dt,
                               (symcoll_op_t)((dt + c) % SYMCOLL_OP_LAST), counts[c], mode & 1,
                               mode >> 1, (size_t)mode);
        ctx_fini(&x);
    }
}

/* Ranks mixing pool and plain buffers in the same call: each rank tells its peers
 * where its data is, so any mix works. */
static void body_mixed(int rank, int n, void *arg)
{
    run_ctx_t x;
    (void)arg;
    ctx_init(&x, rank, n, 70001 * 8);
    for (int i = 0; i < 6; i++) {
        size_t count = i < 3 ? 513 : 70001; /* one-shot, then two-shot */
        check_call(&x, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, i % 2, (rank + i) % 2, 0);
        check_call(&x, SYMCOLL_INT32, SYMCOLL_MAX, count, 0, (rank + i + 1) % 2, 4);
    }
    ctx_fini(&x);
}

/* Every datatype x operator at 1 MiB + 3 elements, once, on 3 ranks (uneven slices,
 * several pipeline chunks); in place and pool buffers alternate. Complements the
 * matrix above, which sees the big size once per datatype on every rank count. */
static void body_big_all(int rank, int n, void *arg)
{
    run_ctx_t x;
    (void)arg;
    ctx_init(&x, rank, n, BIG_COUNT * 8);
    for (int dt = 0; dt < SYMCOLL_DTYPE_LAST; dt++)
        for (int op = 0; op < SYMCOLL_OP_LAST; op++)
            check_call(&x, (symcoll_dtype_t)dt, (symcoll_op_t)op, BIG_COUNT, op % 2,
                       (dt + op) % 2, 0);
    ctx_fini(&x);
}

/*
 * Small messages travel through each rank's mailbox lines (56 bytes of data and an
 * epoch per cache line, up to 280 bytes). Counts on both sides of every line boundary
 * and of the mailbox's end, one rank late now and then (peers poll its lines while it
 * writes them, or give up polling and wait on its epoch), back to back so that both
 * mailboxes are reused; then counts that disagree across the mailbox's end (one rank
 * uses it, the others stage): a mismatch everywhere, and the staged calls after it
 * still right (the ranks' staging slots stayed in step).
 */
static void body_mailbox(int rank, int n, void *arg)
{
    static const size_t bytes[] = {1,   8,   55,  56,  57,  111, 112, 113, 168,
                                   200, 224, 248, 272, 279, 280, 281, 288, 512};
    double x[64] = {0};
    run_ctx_t c;
    (void)arg;

    ctx_init(&c, rank, n, 4096);
    for (int round = 0; round < 6; round++)
        for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++) {
            symcoll_dtype_t dt = round % 2 ? SYMCOLL_INT8 : SYMCOLL_FLOAT64;
            size_t count = bytes[b] / symcoll_dtype_size(dt);
            if ((b + (size_t)round) % 7 == (size_t)rank)
                usleep(200);
            if (count)
                check_call(&c, dt, (symcoll_op_t)((b + (size_t)round) % SYMCOLL_OP_LAST), count,
                           (int)(b % 3 == 0), (int)((b / 3 + (size_t)round) % 2), b % 4);
        }
    ck_assert_int_eq(symcoll_allreduce(x, x, rank == 0 ? 35 : 36, SYMCOLL_FLOAT64, SYMCOLL_SUM,
                                       c.comm, NULL),
                     SYMCOLL_ERR_MISMATCH);
    for (size_t count = 36; count < 42; count++)
        check_call(&c, SYMCOLL_FLOAT64, SYMCOLL_SUM, count, 0, BUF_PLAIN, 0);
    ctx_fini(&c);
}

RANKS_TEST(test_matrix_1, body_matrix, 1)
RANKS_TEST(test_matrix_2, body_matrix, 2)
RANKS_TEST(test_matrix_3, body_matrix, 3)
RANKS_TEST(test_matrix_4, body_matrix, 4)
RANKS_TEST(test_matrix_8, body_matrix, 8)
RANKS_TEST(test_chunks_3, body_chunks, 3)
RANKS_TEST(test_mixed_buffers_3, body_mixed, 3)
RANKS_TEST(test_big_all_ops_3, body_big_all, 3)
RANKS_TEST(test_mailbox_3, body_mailbox, 3)
RANKS_TEST(test_mailbox_8, body_mailbox, 8)

int main(void)
{
    Suite *s = suite_create("allreduce_host");

    ADD_CASE(s, test_matrix_1);
    ADD_CASE(s, test_matrix_2);
    ADD_CASE(s, test_matrix_3);
    ADD_CASE(s, test_matrix_4);
    ADD_CASE(s, test_matrix_8);
    ADD_CASE(s, test_chunks_3);
    ADD_CASE(s, test_mixed_buffers_3);
    ADD_CASE(s, test_big_all_ops_3);
    ADD_CASE(s, test_mailbox_3);
    ADD_CASE(s, test_mailbox_8);
    return harness_main(s);
}
