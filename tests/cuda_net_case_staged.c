/* test_cuda_net's cases of the staged all-reduce: every datatype x operator (and with
 * one channel or three, no small-call kernel), pool growth, 2 nodes x 2 ranks
 * hierarchical over each node's GPUs and flat, and the failure cases on that shape. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_net_cases.h"
#include "cuda_net_testlib.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* every datatype x operator at 0, 1, 4099 elements and 16 MiB, in and out of place; the
 * in-place 4099-element and 16 MiB calls go on the legacy default stream */
void body_net_types(int rank, int nranks, void *arg)
{
    static const size_t small[] = {0, 1, 4099};
    const size_t nsmall = sizeof(small) / sizeof(small[0]);
    net_rank_t r;
    int salt = 20000;

    net_setup(&r, rank, 3, NET_BIG);
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
        size_t esize = symcoll_dtype_size((symcoll_dtype_t)t);
        for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
            for (size_t k = 0; k <= nsmall; k++) {
                size_t count = k < nsmall ? small[k] : NET_BIG / esize;
                for (int inplace = 0; inplace < 2; inplace++) {
                    net_bufs_t b = {r.d[0], r.d[inplace ? 0 : 1], r.d[2]};
                    cudaStream_t s = inplace && count > 1 ? NULL : r.s;
                    const char *what = inplace ? "net in place" : "net out of place";
                    salt++;
                    net_enqueue(r.comm, &b, count, t, op, rank, nranks, salt, r.host, s);
                    net_check(&b, count, t, op, nranks, salt, r.host, s, what);
                }
            }
        }
    }
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_types_2x1, 2, 2, 900, body_net_types)

/* the same with other staging shapes: one channel without the small-call kernel (every call
 * through the stream commands, 3 slots), and 3 channels with 64K chunks (16 MiB: 256 chunks
 * over 7 slots, channels finishing out of order) */
static void net_types_staged(const char *channels, const char *kernel_max, const char *chunk)
{
    setenv("SYMCOLL_CUDA_NET_CHANNELS", channels, 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", kernel_max, 1);
    setenv("SYMCOLL_CUDA_NET_CHUNK", chunk, 1);
    ck_assert_int_eq(harness_run(2, 2, 900, body_net_types, NULL), 0);
}

START_TEST(t_net_types_plain)
{
    net_types_staged("1", "0", "4M");
}
END_TEST

START_TEST(t_net_types_channels3)
{
    net_types_staged("3", "4K", "64K");
}
END_TEST

/* pool buffers with plain ones in every combination, then rising pool buffers that make
 * the pool grow while the older ones stay in use */
void body_net_pool(int rank, int nranks, void *arg)
{
    static const size_t rising[] = {64 << 10, 1 << 20, 8 << 20, 32 << 20, 64 << 20};
    enum { NRISING = sizeof(rising) / sizeof(rising[0]) };
    const size_t maxb = (size_t)64 << 20;
    static const struct {
        symcoll_dtype_t t;
        symcoll_op_t op;
    } kinds[] = {{SYMCOLL_BFLOAT16, SYMCOLL_SUM},
                 {SYMCOLL_FLOAT32, SYMCOLL_MAX},
                 {SYMCOLL_INT8, SYMCOLL_MIN}};
    symcoll_pool_attr_t attr = {
        .field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS | SYMCOLL_POOL_ATTR_FIELD_MAPPED |
                      SYMCOLL_POOL_ATTR_FIELD_SEGMENTS | SYMCOLL_POOL_ATTR_FIELD_IN_USE};
    net_rank_t r;
    void *pa, *pb, *plain, *copy, *pg[NRISING], *again;
    uint64_t growths0;
    size_t mapped0, in_use0, rising_total = 0;
    int salt = 30000;

    net_setup(&r, rank, 2, maxb);
    plain = r.d[0];
    copy = r.d[1];
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pa));
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pb));
    {
        const struct {
            void *in, *out;
            const char *what;
        } combos[] = {{pa, pa, "pool in place"},
                      {pa, pb, "pool to pool"},
                      {pa, plain, "pool to plain"},
                      {plain, pb, "plain to pool"}};
        for (size_t m = 0; m < sizeof(combos) / sizeof(combos[0]); m++)
            for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                for (int big = 0; big < 2; big++) {
                    size_t esize = symcoll_dtype_size(kinds[k].t);
                    size_t count = big ? NET_BIG / esize + 3 : 4099;
                    net_run(&r, combos[m].in, combos[m].out, copy, count, kinds[k].t,
                            kinds[k].op, rank, nranks, ++salt, combos[m].what);
                }
    }

    CK_SC(symcoll_pool_query(r.comm, SYMCOLL_MEM_CUDA, &attr));
    growths0 = attr.growths;
    mapped0 = attr.mapped;
    in_use0 = attr.in_use;
    for (int k = 0; k < NRISING; k++) {
        CK_SC(symcoll_mem_alloc(r.comm, rising[k] + NET_SLACK, SYMCOLL_MEM_CUDA, &pg[k]));
        rising_total += rising[k] + NET_SLACK;
        net_run(&r, pg[k], pg[k], copy, rising[k] / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
                nranks, ++salt, "rising pool buffer in place");
        net_run(&r, pg[k], plain, copy, rising[k] / 4, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank,
                nranks, ++salt, "rising pool buffer to plain");
        /* the first buffer still works after the pool grew */
        net_run(&r, pg[0], pg[0], copy, rising[0] / 4, SYMCOLL_INT32, SYMCOLL_MAX, rank, nranks,
                ++salt, "first pool buffer after growth");
    }
    CK_SC(symcoll_pool_query(r.comm, SYMCOLL_MEM_CUDA, &attr));
    if (rank == 0)
        fprintf(stderr,
                "CUDA pool: %llu growths (%llu before the rising buffers), %zu bytes "
                "mapped in %llu segments\n",
                (unsigned long long)attr.growths, (unsigned long long)growths0, attr.mapped,
                (unsigned long long)attr.segments);
    if (in_use0 + rising_total > mapped0 && attr.growths <= growths0)
        harness_fail("the CUDA pool did not grow: %zu bytes in use and %zu more allocated, "
                     "%zu mapped before",
                     in_use0, rising_total, mapped0);

    /* free all but the last, then the space is used again */
    CK_CUDA(cudaStreamSynchronize(r.s));
    for (int k = 0; k < NRISING - 1; k++)
        CK_SC(symcoll_mem_free(r.comm, pg[k]));
    CK_SC(symcoll_mem_alloc(r.comm, maxb + NET_SLACK, SYMCOLL_MEM_CUDA, &again));
    net_run(&r, again, pg[NRISING - 1], copy, maxb / 2, SYMCOLL_FLOAT16, SYMCOLL_SUM, rank,
            nranks, ++salt, "pool buffer after frees");
    CK_CUDA(cudaStreamSynchronize(r.s));
    CK_SC(symcoll_mem_free(r.comm, again));
    CK_SC(symcoll_mem_free(r.comm, pg[NRISING - 1]));
    CK_SC(symcoll_mem_free(r.comm, pa));
    CK_SC(symcoll_mem_free(r.comm, pb));
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_pool_2x1, 2, 2, 600, body_net_pool)
/* 2 x 2: the CUDA pool holds the hierarchical staging too, and grows under it */
NET_TEST(t_net_hier_pool_2x2, 4, 2, 600, body_net_pool)

/* 2 nodes x 2 ranks (GPU rank % ngpus): a few datatypes and operators, 16 MiB + 3 */
void body_net_hier(int rank, int nranks, void *arg)
{
    static const struct {
        symcoll_dtype_t t;
        symcoll_op_t op;
    } kinds[] = {{SYMCOLL_BFLOAT16, SYMCOLL_SUM}, {SYMCOLL_FLOAT32, SYMCOLL_SUM},
                 {SYMCOLL_INT32, SYMCOLL_MAX},    {SYMCOLL_FLOAT16, SYMCOLL_MIN},
                 {SYMCOLL_FLOAT64, SYMCOLL_PROD}, {SYMCOLL_UINT8, SYMCOLL_AVG}};
    net_rank_t r;
    void *pa;
    int salt = 40000;

    net_setup(&r, rank, 3, NET_BIG);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t esize = symcoll_dtype_size(kinds[k].t);
        const size_t counts[] = {0, 1, 4099, NET_BIG / esize + 3};
        for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++)
            for (int inplace = 0; inplace < 2; inplace++)
                net_run(&r, r.d[0], r.d[inplace ? 0 : 1], r.d[2], counts[j], kinds[k].t,
                        kinds[k].op, rank, nranks, ++salt,
                        inplace ? "2x2 in place" : "2x2 out of place");
    }
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pa));
    net_run(&r, pa, pa, r.d[2], NET_BIG / 2 + 3, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
            ++salt, "2x2 pool in place");
    net_run(&r, pa, r.d[1], r.d[2], NET_BIG / 2 + 3, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
            nranks, ++salt, "2x2 pool to plain");
    CK_CUDA(cudaStreamSynchronize(r.s));
    CK_SC(symcoll_mem_free(r.comm, pa));
    /* both pools trimmed right behind a queued call (16M + 6 bytes: hierarchical over the
     * GPUs here), the stream not synchronised: the trims wait for it, the staging goes,
     * and the next call sets it up again */
    {
        net_bufs_t b = {r.d[0], r.d[1], r.d[2]};
        const size_t count = NET_BIG / 2 + 3;
        net_enqueue(r.comm, &b, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks, ++salt,
                    r.host, r.s);
        CK_SC(symcoll_pool_trim(r.comm, SYMCOLL_MEM_CUDA));
        CK_SC(symcoll_pool_trim(r.comm, SYMCOLL_MEM_HOST));
        net_check(&b, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, r.host, r.s,
                  "2x2 call before the trims");
        net_run(&r, r.d[0], r.d[1], r.d[2], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
                ++salt, "2x2 call after the trims");
    }
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_hier_2x2, 4, 2, 900, body_net_hier)

/* 2 x 2 is hierarchical over each node's GPUs (reduce-scatter and all-gather kernels
 * over the CUDA pool around the staged step): every datatype x operator there too, in
 * place on the legacy stream and out of place on the body's (so consecutive calls come
 * on two streams); then the flat staged path on the same shape (every rank stages all of
 * its data, hier through the host pool per chunk), and hierarchical with one channel and no
 * small-call kernel (every slice through the stream commands) */
NET_TEST(t_net_hier_types_2x2, 4, 2, 900, body_net_types)

/* hierarchical and flat calls mixed on the same channels, the flat chunks by rd and ring
 * below SYMCOLL_HIER_MIN: ranks of different local indices make different numbers of
 * slice calls, and the flat calls' receive areas must still agree */
START_TEST(t_net_hier_mixed_2x2)
{
    setenv("SYMCOLL_HIER_MIN", "64K", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_types, NULL), 0);
}
END_TEST

START_TEST(t_net_hier_flat_2x2)
{
    setenv("SYMCOLL_HIER_MIN", "1G", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_hier, NULL), 0);
}
END_TEST

START_TEST(t_net_hier_plain_2x2)
{
    setenv("SYMCOLL_CUDA_NET_CHANNELS", "1", 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", "0", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_hier, NULL), 0);
}
END_TEST

/* 2 x 2, hierarchical: rank 3 dies; rank 1 (its partner across nodes) fails at once and
 * tells rank 0's kernels through the node word; rank 2's kernels wait for rank 3 until
 * the timeout */
NET_TEST(t_net_hier_kill_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)

/* 2 x 2, hierarchical: rank 3 aborts; its node peer (rank 2) waits on its kernels and
 * hears through its channels' partners and the node word */
NET_TEST(t_net_hier_abort_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)

/* 2 x 2, hierarchical: only rank 0 calls; its kernels and channels give up by the deadline */
NET_TEST(t_net_hier_timeout_2x2, 4, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)

/* every algorithm a call may force across nodes (symcoll_comm_set_algo, as a tuning file
 * or SYMCOLL_ALGO would), on each staged chunk: the channels' scratch, reserved before
 * their threads start, must serve each one up to the chunk size */
static void body_net_forced(int rank, int nranks, void *arg)
{
    static const char *const algos[] = {"rd", "ring", "rhd", "hier"};
    static const size_t counts[] = {1, 4099, (size_t)1 << 20};
    net_rank_t r;
    int salt = 26000;

    net_setup(&r, rank, 3, (size_t)4 << 20);
    for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        ck_assert_int_eq(symcoll_comm_set_algo(r.comm, algos[a]), SYMCOLL_OK);
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            net_bufs_t b = {r.d[0], r.d[1], r.d[2]};
            salt++;
            net_enqueue(r.comm, &b, counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, salt,
                        r.host, r.s);
            net_check(&b, counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, r.host, r.s,
                      algos[a]);
        }
    }
    ck_assert_int_eq(symcoll_comm_set_algo(r.comm, NULL), SYMCOLL_OK);
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_forced_2x1, 2, 2, 600, body_net_forced)
NET_TEST(t_net_hier_forced_2x2, 4, 2, 600, body_net_forced)

/* ---- cases ------------------------------------------------------------------------- */

void cuda_net_staged_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"net_pool", t_net_pool_2x1, 1},
        {"net_types", t_net_types_2x1, 1},
        {"net_hier", t_net_hier_2x2, 1},
        {"net_hier_types", t_net_hier_types_2x2, 1},
        {"net_hier_flat", t_net_hier_flat_2x2, 1},
        {"net_hier_mixed", t_net_hier_mixed_2x2, 1},
        {"net_hier_plain", t_net_hier_plain_2x2, 1},
        {"net_hier_kill", t_net_hier_kill_2x2, 1},
        {"net_hier_abort", t_net_hier_abort_2x2, 1},
        {"net_hier_timeout", t_net_hier_timeout_2x2, 1},
        {"net_hier_pool", t_net_hier_pool_2x2, 1},
        {"net_types_plain", t_net_types_plain, 1},
        {"net_types_channels3", t_net_types_channels3, 1},
        {"net_forced", t_net_forced_2x1, 1},
        {"net_hier_forced", t_net_hier_forced_2x2, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, "net");
}
