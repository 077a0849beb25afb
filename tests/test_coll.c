/* Multi-rank tests of reduce-scatter, all-gather, broadcast and barrier: every datatype
 * (x operator for reduce-scatter), out of place and in place, plain and pool buffers,
 * odd counts and counts that cross many pipeline chunks, on one node and on simulated
 * nodes (real UCX over TCP loopback) with uneven ranks per node; arguments that ranks
 * disagree on; argument checks without side effects. Results are compared bit for bit
 * with a reference computed here. */
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

#define RUN_TIMEOUT 240.0

typedef struct shape {
    int nranks, nnodes;
    const char *algo; /* SYMCOLL_ALGO, or NULL */
} shape_t;

static void shape_env(const shape_t *sh)
{
    if (sh && sh->algo)
        setenv("SYMCOLL_ALGO", sh->algo, 1);
}

/* counts per rank: one element, odd, several chunks of the 4 KiB pipeline */
static const size_t counts[] = {1, 7, 1001, 40009};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* Byte j of rank r's data in test round seed: never the poison byte 0xa5 pattern alone */
static uint8_t byte_of(int r, size_t j, uint64_t seed)
{
    uint64_t h =
        (j + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)r << 48) ^ seed * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    return (uint8_t)(h >> 56);
}

static void fill_bytes(void *buf, size_t n, int r, uint64_t seed)
{
    for (size_t j = 0; j < n; j++)
        ((uint8_t *)buf)[j] = byte_of(r, j, seed);
}

static size_t bad_bytes(const void *buf, size_t n, int r, uint64_t seed)
{
    size_t bad = 0;
    for (size_t j = 0; j < n; j++)
        bad += ((const uint8_t *)buf)[j] != byte_of(r, j, seed);
    return bad;
}

/* Buffers of a round: plain (malloc) or from the pool (collective: every rank the same
 * size). */
static void *buf_get(symcoll_comm_h comm, size_t bytes, int pool)
{
    void *p = NULL;
    if (pool) {
        symcoll_status_t st = symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_HOST, &p);
        if (st != SYMCOLL_OK)
            harness_fail("symcoll_mem_alloc(%zu): %s", bytes, symcoll_status_string(st));
    } else if (!(p = malloc(bytes))) {
        harness_fail("malloc(%zu)", bytes);
    }
    return p;
}

static void buf_put(symcoll_comm_h comm, void *p, int pool)
{
    if (pool)
        ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    else
        free(p);
}

static void check_status(symcoll_status_t st, const char *what, size_t count, int dt, int extra)
{
    if (st != SYMCOLL_OK)
        harness_fail("%s count %zu dtype %d (%d): %s", what, count, dt, extra,
                     symcoll_status_string(st));
}

/* Reduce-scatter of every datatype x operator: rank r's block of the reference all-reduce
 * of nranks x count elements. */
static void rs_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
                     symcoll_op_t op, int inplace, int pool, uint64_t seed)
{
    refcheck_spec_t spec = {dt, op, n, seed, 0};
    size_t es = refcheck_dtype_size(dt), total = count * (size_t)n, bad = 0, first = 0;
    char *send = buf_get(comm, total * es, pool), *recv;

    refcheck_fill(&spec, rank, send, total);
    recv = inplace ? send + (size_t)rank * count * es : buf_get(comm, count * es, pool);
    if (!inplace)
        memset(recv, 0xa5, count * es);
    check_status(symcoll_reduce_scatter(send, recv, count, dt, op, comm, NULL),
                 "reduce_scatter", count, dt, op);
    /* our block of the reference, rounded to the type (equal values are equal bits,
     * but for the sign of a float zero) */
    for (size_t i = 0; i < count; i++) {
        uint64_t e = 0;
        refcheck_store(&e, 0, dt, refcheck_expected(&spec, (size_t)rank * count + i));
        if (refcheck_load(&e, 0, dt) != refcheck_load(recv, i, dt)) {
            if (!bad)
                first = i;
            bad++;
        }
    }
    if (bad)
        harness_fail("reduce_scatter count %zu dtype %s op %s %s %s: %zu wrong, first %zu",
                     count, symcoll_dtype_name(dt), symcoll_op_name(op),
                     inplace ? "in place" : "out of place", pool ? "pool" : "plain", bad,
                     first);
    if (!inplace)
        buf_put(comm, recv, pool);
    buf_put(comm, send, pool);
}

static void ag_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
                     int inplace, int pool, uint64_t seed)
{
    size_t es = refcheck_dtype_size(dt), block = count * es;
    char *recv = buf_get(comm, block * (size_t)n, pool);
    char *send = inplace ? recv + (size_t)rank * block : buf_get(comm, block, pool);

    memset(recv, 0xa5, block * (size_t)n);
    fill_bytes(send, block, rank, seed);
    check_status(symcoll_allgather(send, recv, count, dt, comm, NULL), "allgather", count, dt,
                 inplace);
    for (int r = 0; r < n; r++) {
        size_t bad = bad_bytes(recv + (size_t)r * block, block, r, seed);
        if (bad)
            harness_fail("allgather count %zu dtype %s %s %s: %zu wrong bytes in block %d",
                         count, symcoll_dtype_name(dt), inplace ? "in place" : "out of place",
                         pool ? "pool" : "plain", bad, r);
    }
    if (!inplace)
        buf_put(comm, send, pool);
    buf_put(comm, recv, pool);
}

static void bc_round(symcoll_comm_h comm, int rank, size_t count, symcoll_dtype_t dt, int root,
                     int inplace, int pool, uint64_t seed)
{
    size_t bytes = count * refcheck_dtype_size(dt), bad;
    char *recv = buf_get(comm, bytes, pool);
    char *send = inplace ? recv : buf_get(comm, bytes, pool);

    memset(recv, 0xa5, bytes);
    if (rank == root)
        fill_bytes(send, bytes, root, seed);
    else if (!inplace)
        memset(send, 0x5a, bytes); /* not the root's: must not be read */
    check_status(symcoll_broadcast(send, recv, count, dt, root, comm, NULL), "broadcast", count,
                 dt, root);
    bad = bad_bytes(recv, bytes, root, seed);
    if (bad)
        harness_fail("broadcast count %zu dtype %s root %d %s %s: %zu wrong bytes", count,
                     symcoll_dtype_name(dt), root, inplace ? "in place" : "out of place",
                     pool ? "pool" : "plain", bad);
    if (!inplace)
        buf_put(comm, send, pool);
    buf_put(comm, recv, pool);
}

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
 * arrives (src/algo/net_coll.c, coll_hook), unless a message began to arrive before its
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

#define SHAPE_TEST(name, nr, nn, body) SHAPE_TEST_ALGO(name, nr, nn, NULL, body)
#define SHAPE_TEST_ALGO(name, nr, nn, algo, body)                                              \
    START_TEST(name)                                                                           \
    {                                                                                          \
        shape_t sh = {nr, nn, algo};                                                           \
        ck_assert_int_eq(harness_run(nr, nn, RUN_TIMEOUT, body, &sh), 0);                      \
    }                                                                                          \
    END_TEST

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
    /* one case per test (its name without "test_"), so that CK_RUN_CASE=bc_tail_2nodes_5
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
