/* GPU tests of CUDA memory across simulated nodes (UCX over TCP): stream order, pool
 * growth, 2 nodes x 2 ranks (hierarchical over each node's GPUs, and flat), a killed,
 * aborted or absent peer, ranks calling with different arguments, capture refused, host
 * calls between queued GPU calls; reduce-scatter, all-gather, broadcast and the stream
 * barrier, staged and hierarchical; the direct path (net_direct_*: a UCX with CUDA), flat
 * and as the hierarchical algorithm's inter-node step (net_direct_hier_*). Exit 77
 * without GPUs. Every case carries the Check tag "net" (CK_INCLUDE_TAGS=net). */
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

#include "cuda_net_testlib.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#define NET_FAIL_TIMEOUT 20 /* SYMCOLL_TIMEOUT of the failure cases, seconds */
#define NET_SHORT_TIMEOUT 8 /* SYMCOLL_TIMEOUT of the absent-peer case, seconds */

#define NET_TEST(name, nranks, nnodes, limit, body)                                            \
    START_TEST(name)                                                                           \
    {                                                                                          \
        ck_assert_int_eq(harness_run(nranks, nnodes, limit, body, NULL), 0);                   \
    }                                                                                          \
    END_TEST

/* every datatype x operator at 0, 1, 4099 elements and 16 MiB, in and out of place; the
 * in-place 4099-element and 16 MiB calls go on the legacy default stream */
static void body_net_types(int rank, int nranks, void *arg)
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

/* the same with other staging shapes: one lane without the small-call kernel (every call
 * through the stream commands, 3 slots), and 3 lanes with 64K chunks (16 MiB: 256 chunks
 * over 7 slots, lanes finishing out of order) */
static void net_types_staged(const char *lanes, const char *kernel_max, const char *chunk)
{
    setenv("SYMCOLL_CUDA_NET_LANES", lanes, 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", kernel_max, 1);
    setenv("SYMCOLL_CUDA_NET_CHUNK", chunk, 1);
    ck_assert_int_eq(harness_run(2, 2, 900, body_net_types, NULL), 0);
}

START_TEST(t_net_types_plain)
{
    net_types_staged("1", "0", "4M");
}
END_TEST

START_TEST(t_net_types_lanes3)
{
    net_types_staged("3", "4K", "64K");
}
END_TEST

/* pool buffers with plain ones in every combination, then rising pool buffers that make
 * the pool grow while the older ones stay in use */
static void body_net_pool(int rank, int nranks, void *arg)
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
static void body_net_hier(int rank, int nranks, void *arg)
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
 * its data, hier through the host pool per chunk), and hierarchical with one lane and no
 * small-call kernel (every slice through the stream commands) */
NET_TEST(t_net_hier_types_2x2, 4, 2, 900, body_net_types)

/* hierarchical and flat calls mixed on the same lanes, the flat chunks by rd and ring
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
    setenv("SYMCOLL_CUDA_NET_LANES", "1", 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", "0", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_hier, NULL), 0);
}
END_TEST

/* The failure cases: two buffers, and one checked 16 MiB call so that everyone is
 * connected and warm before the failure. */
static void net_failure_setup(net_rank_t *r, int rank, int nranks, int salt, const char *what)
{
    net_setup(r, rank, 2, NET_BIG);
    net_run(r, r->d[0], r->d[0], r->d[1], NET_BIG / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
            nranks, salt, what);
}

/* Queue large calls until one fails, each followed by a bounded stream wait. Returns the
 * first non-OK status (SYMCOLL_OK if max_calls all succeeded); *ncalls: calls made. */
static symcoll_status_t net_until_failure(net_rank_t *r, size_t count, int max_calls,
                                          int *ncalls)
{
    symcoll_status_t st = SYMCOLL_OK;
    int it;

    for (it = 0; it < max_calls && st == SYMCOLL_OK; it++) {
        cudaError_t e;
        /* queued or not, the call and then the stream must come back */
        net_watch("symcoll_allreduce and cudaStreamSynchronize on a failing communicator",
                  NET_FAIL_TIMEOUT + 15);
        st = symcoll_allreduce(r->d[0], r->d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm,
                               r->s);
        e = cudaStreamSynchronize(r->s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("cudaStreamSynchronize after a call that returned %s: %s",
                         symcoll_status_string(st), cudaGetErrorString(e));
    }
    *ncalls = it;
    return st;
}

/* After a failure: the call that saw it said so or the next one does, with one of the
 * failure codes; the stream was never left waiting; later calls fail at once; the stream
 * takes work again and destroy returns. loop_status: what net_until_failure returned. */
static void net_after_failure(net_rank_t *r, symcoll_status_t loop_status, int rank, int ncalls,
                              double t0)
{
    symcoll_status_t st;
    double t;

    if (loop_status == SYMCOLL_OK)
        harness_fail("%d calls succeeded after the failure", ncalls);
    if (loop_status != SYMCOLL_ERR_PEER_FAILED && loop_status != SYMCOLL_ERR_ABORTED &&
        loop_status != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("after the failure symcoll_allreduce returned %s",
                     symcoll_status_string(loop_status));
    fprintf(stderr, "rank %d: %s after %d calls, %.2f s\n", rank,
            symcoll_status_string(loop_status), ncalls, now_sec() - t0);
    net_watch("a call and the stream after the failure", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r->d[0], r->d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm, r->s);
    if (st == SYMCOLL_OK)
        harness_fail("a call after %s returned OK", symcoll_status_string(loop_status));
    CK_CUDA(cudaMemsetAsync(r->d[0], 0, 64, r->s));
    CK_CUDA(cudaStreamSynchronize(r->s));
    net_watch("symcoll_comm_destroy after the failure", NET_FAIL_TIMEOUT + 15);
    t = now_sec();
    st = symcoll_comm_destroy(r->comm);
    alarm(0);
    fprintf(stderr, "rank %d: symcoll_comm_destroy: %s in %.2f s\n", rank,
            symcoll_status_string(st), now_sec() - t);
}

static void *net_killer(void *arg)
{
    (void)arg;
    usleep(50000);
    raise(SIGKILL);
    return NULL;
}

/* The last rank forks: its child is the rank and kills itself while 16 MiB calls are in
 * flight; the harness's process only checks that it died by SIGKILL. */
static void body_net_kill(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    if (rank == nranks - 1) {
        int ws;
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            if (waitpid(pid, &ws, 0) != pid)
                harness_fail("waitpid: %s", strerror(errno));
            if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
                harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
            return;
        }
    }
    net_failure_setup(&r, rank, nranks, 50000, "before the kill");
    if (rank == nranks - 1) {
        pthread_t th;
        pthread_create(&th, NULL, net_killer, NULL);
        for (;;) {
            symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                              r.s);
            cudaStreamSynchronize(r.s);
        }
    }
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    /* a death is reported as one, on every survivor (not as an abort) */
    if (st != SYMCOLL_ERR_PEER_FAILED)
        harness_fail("a survivor of the kill got %s", symcoll_status_string(st));
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_kill_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)
/* 2 x 2, hierarchical: rank 3 dies; rank 1 (its partner across nodes) fails at once and
 * tells rank 0's kernels through the node word; rank 2's kernels wait for rank 3 until
 * the timeout */
NET_TEST(t_net_hier_kill_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)

/* One rank queues a call with another datatype of the same size, or another count: the
 * lanes' agreement sees it on every rank. A queued call returns before its lanes run, so
 * the verdict shows at the latest in the next call; it is a failure of the communicator
 * here (the lanes of ranks with other counts are out of step), never success: every
 * rank's next call fails with a failure code and MISMATCH is logged, the streams are
 * released, and destroy returns. */
static void body_net_mismatch(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    const int *by_count = arg;
    int odd = rank == nranks - 1;
    net_rank_t r;
    symcoll_status_t st, next;
    cudaError_t e;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 60000, "before the mismatch");
    net_watch("a mismatched call and its stream", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r.d[0], r.d[0], *by_count && odd ? count / 2 + 1 : count,
                           !*by_count && odd ? SYMCOLL_FLOAT16 : SYMCOLL_BFLOAT16, SYMCOLL_SUM,
                           r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    alarm(0);
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after a mismatched call: %s",
                     cudaGetErrorString(e));
    net_watch("the call after a mismatched one", NET_FAIL_TIMEOUT + 15);
    next = symcoll_allreduce(r.d[0], r.d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    alarm(0);
    fprintf(stderr, "rank %d: mismatched call: %s, next: %s\n", rank, symcoll_status_string(st),
            symcoll_status_string(next));
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after the next call: %s", cudaGetErrorString(e));
    if (st == SYMCOLL_OK && next == SYMCOLL_OK)
        harness_fail("a mismatched call and the next one both returned OK");
    if (next != SYMCOLL_ERR_MISMATCH && next != SYMCOLL_ERR_ABORTED &&
        next != SYMCOLL_ERR_PEER_FAILED)
        harness_fail("the call after a mismatched one returned %s",
                     symcoll_status_string(next));
    net_watch("symcoll_comm_destroy after a mismatch", NET_FAIL_TIMEOUT + 15);
    symcoll_comm_destroy(r.comm);
    alarm(0);
    net_teardown(&r, 0);
}

static int net_mismatch_dtype = 0, net_mismatch_count = 1;

START_TEST(t_net_mismatch_2x1)
{
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_dtype),
        0);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_count),
        0);
}
END_TEST

typedef struct {
    symcoll_comm_h comm;
    symcoll_status_t st; /* what symcoll_comm_abort returned */
} net_abort_t;

static void *net_aborter(void *arg)
{
    net_abort_t *ab = arg;
    usleep(100000);
    ab->st = symcoll_comm_abort(ab->comm);
    return NULL;
}

/* The last rank aborts its communicator from another thread while 16 MiB calls are in
 * flight: it gets SYMCOLL_ERR_ABORTED, its peer one of the failure codes. */
static void body_net_abort(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    net_abort_t ab;
    pthread_t th;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 51000, "before the abort");
    ab = (net_abort_t){r.comm, SYMCOLL_ERR_INTERNAL};
    if (rank == nranks - 1)
        pthread_create(&th, NULL, net_aborter, &ab);
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    if (rank == nranks - 1) {
        pthread_join(th, NULL);
        if (ab.st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(ab.st));
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the aborted rank got %s, expected %s", symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_ABORTED));
    }
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)
/* 2 x 2, hierarchical: rank 3 aborts; its node peer (rank 2) waits on its kernels and
 * hears through its lanes' partners and the node word */
NET_TEST(t_net_hier_abort_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)

/* The last rank aborts while its lanes are idle; the other's next call (8 chunks over
 * the lanes) must end soon after, not at its timeout: idle lanes tell their peers. */
static void body_net_abort_idle(int rank, int nranks, void *arg)
{
    net_rank_t r;
    symcoll_status_t st;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the abort");
    if (rank == nranks - 1) {
        st = symcoll_comm_abort(r.comm);
        if (st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(st));
        usleep(500000);
    } else {
        usleep(200000);
    }
    t0 = now_sec();
    net_watch("a call while a peer is aborted", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r.d[0], r.d[0], NET_BIG / 2 / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM,
                           r.comm, r.s);
    CK_CUDA(cudaStreamSynchronize(r.s));
    alarm(0);
    if (rank == nranks - 1 && st != SYMCOLL_ERR_ABORTED)
        harness_fail("the aborted rank got %s", symcoll_status_string(st));
    if (now_sec() - t0 > NET_FAIL_TIMEOUT / 2)
        harness_fail(
            "the call and its stream took %.1f s after the peer's abort (timeout %d s)",
            now_sec() - t0, NET_FAIL_TIMEOUT);
    net_after_failure(
        &r,
        rank == nranks - 1
            ? st
            : symcoll_allreduce(r.d[0], r.d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s),
        rank, 1, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_idle_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort_idle)

/* Rank 1 stays alive but makes no call: rank 0's call fails by its deadline and never
 * leaves the stream waiting; later, rank 1's own call fails or is refused in bounded
 * time. */
static void body_net_timeout(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_SHORT_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the timeout");
    if (rank == 0) {
        t0 = now_sec();
        st = net_until_failure(&r, count, 2, &ncalls);
        net_after_failure(&r, st, rank, ncalls, t0);
    } else {
        cudaError_t e;
        sleep(2 * NET_SHORT_TIMEOUT + 5);
        net_watch("the late rank's call and stream", NET_SHORT_TIMEOUT + 15);
        st = symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                               r.s);
        e = cudaStreamSynchronize(r.s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("the late rank's stream: %s", cudaGetErrorString(e));
        fprintf(stderr, "rank %d: late call: %s\n", rank, symcoll_status_string(st));
        net_watch("the late rank's symcoll_comm_destroy", NET_SHORT_TIMEOUT + 15);
        symcoll_comm_destroy(r.comm);
        alarm(0);
    }
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_timeout_2x1, 2, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)
/* 2 x 2, hierarchical: only rank 0 calls; its kernels and lanes give up by the deadline */
NET_TEST(t_net_hier_timeout_2x2, 4, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)

/* Calls under stream capture (each capture mode; 4099 elements and 16 MiB; with an eager
 * call still in flight on the same stream) are refused with SYMCOLL_ERR_UNSUPPORTED and
 * change nothing: the capture ends with an empty graph, the output keeps its poison, the
 * eager call completes, and the next eager calls are right. Rank 0 makes two refused
 * calls per capture and the others one, so a refused call that took a sequence number
 * shows as a mismatch. */
static void body_net_capture(int rank, int nranks, void *arg)
{
    static const enum cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeThreadLocal,
                                                       cudaStreamCaptureModeRelaxed,
                                                       cudaStreamCaptureModeGlobal};
    static const char *const mode_names[] = {"thread-local", "relaxed", "global"};
    net_rank_t r;
    void *a, *b;
    unsigned char *poison;
    int salt = 53000;

    net_setup(&r, rank, 5, NET_BIG);
    a = r.d[3];
    b = r.d[4];
    poison = net_host(NET_BIG + NET_SLACK);
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        for (int big = 0; big < 2; big++) {
            size_t count = big ? NET_BIG / 4 + 3 : 4099, bytes = count * 4, nnodes = 0;
            net_bufs_t eager = {r.d[0], r.d[1], r.d[2]};
            int esalt = ++salt, csalt = ++salt;
            symcoll_status_t st1, st2 = SYMCOLL_ERR_UNSUPPORTED;
            cudaGraph_t g = NULL;
            cudaError_t e;

            /* (a copy from pageable memory may wait for the stream: fill before queueing
             * the eager call, so that it is still in flight when the capture begins) */
            gpu_fill(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, csalt, r.host,
                     r.s);
            net_enqueue(r.comm, &eager, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
                        esalt, r.host, r.s);
            CK_CUDA(cudaStreamBeginCapture(r.s, modes[m]));
            st1 = symcoll_allreduce(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
            if (rank == 0)
                st2 = symcoll_allreduce(a, a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
            e = cudaStreamEndCapture(r.s, &g);
            if (st1 != SYMCOLL_ERR_UNSUPPORTED || st2 != SYMCOLL_ERR_UNSUPPORTED)
                harness_fail("%s capture, %zu elements: calls returned %s and %s, expected %s",
                             mode_names[m], count, symcoll_status_string(st1),
                             symcoll_status_string(st2),
                             symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
            if (e != cudaSuccess)
                harness_fail("%s capture, %zu elements, an eager call in flight: "
                             "cudaStreamEndCapture after the refused calls: %s",
                             mode_names[m], count, cudaGetErrorString(e));
            CK_CUDA(cudaGraphGetNodes(g, NULL, &nnodes));
            if (nnodes)
                harness_fail("%s capture: the refused calls left %zu nodes in the graph",
                             mode_names[m], nnodes);
            CK_CUDA(cudaGraphDestroy(g));
            net_check(&eager, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, esalt, r.host, r.s,
                      "eager call in flight during a capture");
            CK_CUDA(cudaMemcpyAsync(poison, b, bytes, cudaMemcpyDeviceToHost, r.s));
            CK_CUDA(cudaStreamSynchronize(r.s));
            for (size_t i = 0; i < bytes; i++)
                if (poison[i] != GPU_POISON)
                    harness_fail("%s capture: a refused call wrote its output (byte %zu)",
                                 mode_names[m], i);
            /* the input too is as it was: the eager calls after the capture use it */
            CK_SC(symcoll_allreduce(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s));
            gpu_verify(b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, csalt, r.host, r.s,
                       "first eager call after a capture");
            CK_SC(symcoll_allreduce(a, a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s));
            gpu_verify(a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, csalt, r.host, r.s,
                       "in-place eager call after a capture");
        }
    }
    free(poison);
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_capture_2x1, 2, 2, 600, body_net_capture)

/* CUDA, host, CUDA, host calls with no wait in between: the host calls come while the
 * GPU calls are still queued (behind their stream delay). The second GPU call of each
 * round goes on the legacy default stream. */
static void body_net_mixed(int rank, int nranks, void *arg)
{
    const size_t hmax = ((size_t)1 << 20) + 5;
    net_rank_t r;
    double *hx, *hy;
    int32_t *hz;
    int salt = 54000;

    net_setup(&r, rank, 5, NET_BIG);
    hx = net_host(hmax * sizeof(double));
    hy = net_host(hmax * sizeof(double));
    hz = net_host(hmax * sizeof(int32_t));
    for (int round = 0; round < 8; round++) {
        size_t n1 = round % 2 ? NET_BIG / 2 + 3 : 4099;
        size_t n2 = round % 4 == 1 ? NET_BIG / 4 + 1 : 1000;
        size_t h1 = round % 2 ? 7 : hmax, h2 = round % 3 ? 4099 : 1;
        net_bufs_t g1 = {r.d[0], r.d[1], r.d[2]}, g2 = {r.d[3], r.d[3], r.d[4]};
        int s1 = ++salt, s2 = ++salt, s3 = ++salt, s4 = ++salt;

        net_enqueue(r.comm, &g1, n1, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks, s1, r.host,
                    r.s);
        gpu_host_fill(hx, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, rank, nranks, s2);
        CK_SC(symcoll_allreduce(hx, hy, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, r.comm, NULL));
        gpu_host_verify(hy, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, nranks, s2,
                        "host call after a GPU call");
        net_enqueue(r.comm, &g2, n2, SYMCOLL_FLOAT32, SYMCOLL_MAX, rank, nranks, s3, r.host,
                    NULL);
        gpu_host_fill(hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, rank, nranks, s4);
        CK_SC(symcoll_allreduce(hz, hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, r.comm, NULL));
        gpu_host_verify(hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, nranks, s4,
                        "in-place host call after GPU calls");
        net_check(&g1, n1, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, s1, r.host, r.s,
                  "GPU call before a host call");
        net_check(&g2, n2, SYMCOLL_FLOAT32, SYMCOLL_MAX, nranks, s3, r.host, NULL,
                  "GPU call on the legacy stream between host calls");
    }
    free(hx);
    free(hy);
    free(hz);
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_mixed_2x1, 2, 2, 600, body_net_mixed)

/* reduce-scatter, all-gather and broadcast across simulated nodes: staged (uneven ranks
 * per node) and hierarchical (2 x 2), plain and pool buffers */
static void body_net_coll(int rank, int nranks, void *arg)
{
    net_rank_t r;
    const int *quick = arg;

    net_setup(&r, rank, 1, 1 << 20);
    (void)gpu_coll_sweep(r.comm, rank, nranks, r.s, 1, *quick, 40000, "across nodes");
    CK_CUDA(cudaStreamSynchronize(r.s));
    net_teardown(&r, 1);
}

static const int net_coll_full = 0, net_coll_quick = 1;

START_TEST(t_net_coll_3x2)
{
    ck_assert_int_eq(harness_run(3, 2, 900, body_net_coll, (void *)&net_coll_full), 0);
}
END_TEST

START_TEST(t_net_coll_hier_2x2)
{
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_coll, (void *)&net_coll_quick), 0);
}
END_TEST

/* the stream barrier across nodes: ordering, what follows sees the peers' writes, a
 * capture refused */
static void body_net_barrier(int rank, int nranks, void *arg)
{
    net_rank_t r;

    net_setup(&r, rank, 0, 4096);
    gpu_barrier_order(r.comm, rank, nranks, arg, SYMCOLL_ERR_UNSUPPORTED);
    net_teardown(&r, 1);
}

START_TEST(t_net_barrier_3x2)
{
    gpu_bar_shared_t *sh = gpu_bar_shared_new();
    ck_assert_ptr_nonnull(sh);
    ck_assert_int_eq(harness_run(3, 2, 600, body_net_barrier, sh), 0);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* ---- the direct path: UCX puts into the peers' CUDA pool ------------------------------
 * Only where the UCX in use reaches CUDA memory (a UCX built with CUDA, UCX_TLS with
 * cuda_copy): the cases force SYMCOLL_CUDA_NET_PATH=direct, so a probe that fails makes
 * the call that ran it (the first that creates the CUDA pool) fail with
 * SYMCOLL_ERR_UNSUPPORTED, and after the body, a report shows the plans and the probe per
 * peer. */

/* The communicator's topology report and decision table, printed and returned (free) */
static char *net_reports(symcoll_comm_h comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(f);
    CK_SC(symcoll_comm_print_topology(comm, f));
    CK_SC(symcoll_comm_print_decisions(comm, f));
    fclose(f);
    printf("%s", text);
    return text;
}

/* every rank: one call (an average); rank 0: the reports name the direct family and a
 * landed probe put to each rank of another node. arg: non-NULL for 2 nodes x 2 ranks
 * (ranks 0 and 1 on node 0), hierarchical with the direct inter-node step (each rank's
 * slice of its node's sum put into the CUDA pool of the rank of its local index on the
 * other node); NULL for one rank a node */
static const int net_report_hier = 1;

static void body_net_direct_report(int rank, int nranks, void *arg)
{
    const bool hier = arg != NULL;
    net_rank_t r;
    char *text;

    net_setup(&r, rank, 3, 1 << 20);
    net_run(&r, r.d[0], r.d[1], r.d[2], 4099, SYMCOLL_FLOAT32, SYMCOLL_AVG, rank, nranks, 777,
            "direct report call");
    if (rank == 0) {
        text = net_reports(r.comm);
        for (int p = hier ? nranks / 2 : 1; p < nranks; p++) {
            char want[96];
            snprintf(want, sizeof(want), "direct path to rank %d (node %d): yes", p,
                     hier ? 1 : p);
            ck_assert_msg(strstr(text, want), "the topology report lacks '%s'", want);
        }
        ck_assert_msg(strstr(text, hier ? "net-cuda-hier-direct" : "net-cuda-direct"),
                      "no plan of the direct family");
        free(text);
    }
    net_teardown(&r, 1);
}

static void net_direct(int nranks, int limit, void (*body)(int, int, void *), void *arg)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(nranks, nranks, limit, body, arg), 0);
    ck_assert_int_eq(harness_run(nranks, nranks, 120, body_net_direct_report, NULL), 0);
}

/* every type x operator, 0, 1, 4099 elements and 16 MiB (16 chunks over 3 slots), in and
 * out of place, 3 nodes; with 256K chunks (64 chunks) on 2 */
START_TEST(t_net_direct_types_3x1)
{
    net_direct(3, 900, body_net_types, NULL);
}
END_TEST

START_TEST(t_net_direct_chunks_2x1)
{
    setenv("SYMCOLL_CUDA_NET_CHUNK", "256K", 1);
    net_direct(2, 900, body_net_types, NULL);
}
END_TEST

START_TEST(t_net_direct_pool_2x1)
{
    net_direct(2, 600, body_net_pool, NULL);
}
END_TEST

START_TEST(t_net_direct_mixed_2x1)
{
    net_direct(2, 600, body_net_mixed, NULL);
}
END_TEST

START_TEST(t_net_direct_coll_3x1)
{
    net_direct(3, 900, body_net_coll, (void *)&net_coll_full);
}
END_TEST

START_TEST(t_net_direct_kill_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_abort_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_timeout_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout, NULL), 0);
}
END_TEST

static void net_direct_hier(int limit, void (*body)(int, int, void *), void *arg)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(4, 2, limit, body, arg), 0);
    /* a hierarchical call creates the CUDA pool, whose creation runs the probe */
    setenv("SYMCOLL_ALGO", "hier", 1);
    ck_assert_int_eq(harness_run(4, 2, 120, body_net_direct_report, (void *)&net_report_hier),
                     0);
}

/* every type x operator as net_direct_types, every call hierarchical */
START_TEST(t_net_direct_hier_types_2x2)
{
    setenv("SYMCOLL_ALGO", "hier", 1);
    net_direct_hier(900, body_net_types, NULL);
}
END_TEST

/* as net_hier: hierarchical direct from 16M (a GPU serves two ranks here), below it flat
 * and staged (two ranks a node) on the same lanes; pool buffers, trims behind a call */
START_TEST(t_net_direct_hier_mixed_2x2)
{
    net_direct_hier(900, body_net_hier, NULL);
}
END_TEST

/* the failure cases of 2 x 2, every call hierarchical with the direct step */
static void net_direct_hier_fail(void (*body)(int, int, void *), int limit)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    setenv("SYMCOLL_ALGO", "hier", 1);
    ck_assert_int_eq(harness_run(4, 2, limit, body, NULL), 0);
}

START_TEST(t_net_direct_hier_kill_2x2)
{
    net_direct_hier_fail(body_net_kill, NET_FAIL_TIMEOUT * 4 + 60);
}
END_TEST

START_TEST(t_net_direct_hier_timeout_2x2)
{
    net_direct_hier_fail(body_net_timeout, NET_SHORT_TIMEOUT * 6 + 60);
}
END_TEST

START_TEST(t_net_direct_hier_abort_2x2)
{
    net_direct_hier_fail(body_net_abort, NET_FAIL_TIMEOUT * 4 + 60);
}
END_TEST

/* SYMCOLL_CUDA_NET_PATH=auto, plain buffers (the first call creates the CUDA pool and
 * runs the probe): where UCX's lanes call the CUDA driver (cuda_ipc, cuda_copy) every call
 * stays staged, so a blocking copy into pageable memory right behind a call on its
 * stream returns (on the direct path it would wait for ever: README) */
static void body_net_direct_auto(int rank, int nranks, void *arg)
{
    const size_t count = 4099;
    net_rank_t r;
    char *text;

    net_setup(&r, rank, 3, 1 << 20);
    for (int i = 0; i < 3; i++) {
        net_bufs_t b = {r.d[0], r.d[1], r.d[2]};
        net_enqueue(r.comm, &b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, 910 + i,
                    r.host, NULL);
        CK_CUDA(cudaMemcpy(r.host, b.copy, count * sizeof(float), cudaMemcpyDeviceToHost));
        gpu_host_verify(r.host, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, 910 + i,
                        "auto, blocking copy behind the call");
    }
    if (rank == 0) {
        text = net_reports(r.comm);
        if (strstr(text, "transports that call the CUDA driver from the lane"))
            ck_assert_msg(!strstr(text, "net-cuda-direct"),
                          "auto plans the direct path over lanes that call the CUDA driver");
        free(text);
    }
    net_teardown(&r, 1);
    (void)arg;
}

START_TEST(t_net_direct_auto_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "auto", 1);
    ck_assert_int_eq(harness_run(2, 2, 300, body_net_direct_auto, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_mismatch_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_dtype),
        0);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_count),
        0);
}
END_TEST

/* CUDA_DEVICE_MAX_CONNECTIONS=1 (in the ranks' environment before they create their CUDA
 * contexts) with the direct path forced, over lanes that call the CUDA driver (TCP with
 * cuda_copy, or cuda_ipc: every UCX_TLS these tests use): the probe reports the direct path
 * not available, so the first call fails at once with SYMCOLL_ERR_UNSUPPORTED on every
 * rank instead of waiting for its deadline (the lane's copies would queue behind the
 * stream's wait for them); the next call is planned staged and runs */
static void body_net_direct_one_queue(int rank, int nranks, void *arg)
{
    const size_t count = 4099;
    net_rank_t r;
    symcoll_status_t st;
    cudaError_t e;
    double t0, sec;
    char *text;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_setup(&r, rank, 3, 1 << 20);
    net_watch("a forced direct call with one hardware queue", NET_FAIL_TIMEOUT + 15);
    t0 = now_sec();
    st = symcoll_allreduce(r.d[0], r.d[1], count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    sec = now_sec() - t0;
    alarm(0);
    fprintf(stderr, "rank %d: forced direct call with one hardware queue: %s after %.1f s\n",
            rank, symcoll_status_string(st), sec);
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after the refused call: %s", cudaGetErrorString(e));
    if (st != SYMCOLL_ERR_UNSUPPORTED)
        harness_fail("a forced direct call with CUDA_DEVICE_MAX_CONNECTIONS=1 returned %s",
                     symcoll_status_string(st));
    if (sec > NET_FAIL_TIMEOUT / 2)
        harness_fail("the refusal took %.1f s (the call's deadline is %d s)", sec,
                     NET_FAIL_TIMEOUT);
    net_run(&r, r.d[0], r.d[1], r.d[2], count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, 4321,
            "the staged call after the refusal");
    if (rank == 0) {
        text = net_reports(r.comm);
        ck_assert_msg(strstr(text, "CUDA_DEVICE_MAX_CONNECTIONS=1"),
                      "the reports do not say why the direct path is not available");
        ck_assert_msg(!strstr(text, "net-cuda-direct"), "a plan of the direct family");
        ck_assert_msg(!strstr(text, "): yes"), "a peer listed as reached directly");
        free(text);
    }
    net_teardown(&r, 1);
    (void)arg;
}

START_TEST(t_net_direct_one_queue_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_direct_one_queue, NULL), 0);
}
END_TEST

static Suite *cuda_net_suite(int ngpus)
{
    /* one case per test, so that CK_RUN_CASE=net_mixed (say) runs one of them */
    const struct {
        const char *name;
        const TTest *test;
        int min_gpus;
    } cases[] = {
        {"net_capture", t_net_capture_2x1, 1},
        {"net_mixed", t_net_mixed_2x1, 1},
        {"net_kill", t_net_kill_2x1, 1},
        {"net_mismatch", t_net_mismatch_2x1, 1},
        {"net_abort", t_net_abort_2x1, 1},
        {"net_timeout", t_net_timeout_2x1, 1},
        {"net_abort_idle", t_net_abort_idle_2x1, 1},
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
        {"net_types_lanes3", t_net_types_lanes3, 1},
        {"net_coll", t_net_coll_3x2, 1},
        {"net_coll_hier", t_net_coll_hier_2x2, 1},
        {"net_barrier", t_net_barrier_3x2, 1},
        {"net_direct_types", t_net_direct_types_3x1, 1},
        {"net_direct_chunks", t_net_direct_chunks_2x1, 1},
        {"net_direct_pool", t_net_direct_pool_2x1, 1},
        {"net_direct_mixed", t_net_direct_mixed_2x1, 1},
        {"net_direct_coll", t_net_direct_coll_3x1, 1},
        {"net_direct_kill", t_net_direct_kill_2x1, 1},
        {"net_direct_abort", t_net_direct_abort_2x1, 1},
        {"net_direct_timeout", t_net_direct_timeout_2x1, 1},
        {"net_direct_mismatch", t_net_direct_mismatch_2x1, 1},
        {"net_direct_auto", t_net_direct_auto_2x1, 1},
        {"net_direct_one_queue", t_net_direct_one_queue_2x1, 1},
        {"net_direct_hier_types", t_net_direct_hier_types_2x2, 1},
        {"net_direct_hier_mixed", t_net_direct_hier_mixed_2x2, 1},
        {"net_direct_hier_kill", t_net_direct_hier_kill_2x2, 1},
        {"net_direct_hier_abort", t_net_direct_hier_abort_2x2, 1},
        {"net_direct_hier_timeout", t_net_direct_hier_timeout_2x2, 1},
    };
    Suite *su = suite_create("cuda_net");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc;
        if (ngpus < cases[i].min_gpus)
            continue;
        tc = tcase_create(cases[i].name);
        tcase_set_tags(tc, "net");
        tcase_set_timeout(tc, 1200);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(su, tc);
    }
    return su;
}

int main(void)
{
    return gpu_tests_main(cuda_net_suite, 2);
}
