/* test_cuda's cases of communicators made from others, on device memory: the parts of a
 * split running every collective and a CUDA graph at the same time on one node, and the
 * survivors of a killed rank shrinking to a communicator whose all-reduces are exact. */
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

#include <cuda_runtime_api.h>

#include "cuda_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void expect_place(symcoll_comm_h comm, int rank, int size, const char *what)
{
    int r = -1, n = -1;

    CK_SC(symcoll_comm_rank(comm, &r));
    CK_SC(symcoll_comm_size(comm, &n));
    if (r != rank || n != size)
        harness_fail("%s: rank %d of %d, expected %d of %d", what, r, n, rank, size);
}

/* float32 sums on comm at the LL, one-shot and two-shot sizes (the last count only
 * if @a big), in and out of place, on pool and plain buffers, each checked bit for bit
 * against the reference. Returns the next unused salt. */
#define AR_MAX_COUNT (((size_t)4 << 20) + 5)
static int ar_exact(symcoll_comm_h comm, cudaStream_t s, int big, int salt, const char *where)
{
    static const size_t counts[] = {7, 1024, (64u << 10) + 1, AR_MAX_COUNT};
    const size_t ncounts = sizeof(counts) / sizeof(counts[0]) - (big ? 0 : 1);
    const size_t bytes = AR_MAX_COUNT * 4;
    void *host = malloc(bytes);
    char what[160];
    int r, n;

    if (!host)
        harness_fail("malloc(%zu)", bytes);
    CK_SC(symcoll_comm_rank(comm, &r));
    CK_SC(symcoll_comm_size(comm, &n));
    for (int pool = 1; pool >= 0; pool--) {
        void *a, *b;
        if (pool) {
            CK_SC(symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_CUDA, &a));
            CK_SC(symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_CUDA, &b));
        } else {
            CK_CUDA(cudaMalloc(&a, bytes));
            CK_CUDA(cudaMalloc(&b, bytes));
        }
        for (size_t k = 0; k < ncounts; k++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                void *out = inplace ? a : b;
                snprintf(what, sizeof(what), "%s, %s %s", where, pool ? "pool" : "plain",
                         inplace ? "in place" : "out of place");
                salt++;
                gpu_fill(a, out, counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, r, n, salt, host, s);
                CK_SC(symcoll_allreduce(a, out, counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, comm,
                                        s));
                gpu_verify(out, counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, n, salt, host, s,
                           what);
            }
        }
        CK_CUDA(cudaStreamSynchronize(s));
        if (pool) {
            CK_SC(symcoll_mem_free(comm, a));
            CK_SC(symcoll_mem_free(comm, b));
        } else {
            CK_CUDA(cudaFree(a));
            CK_CUDA(cudaFree(b));
        }
    }
    free(host);
    return salt;
}

/* ---- split ---------------------------------------------------------------------------
 * 4 ranks on one node (one GPU each, or sharing them), split by parity: each part (2
 * ranks) runs exact all-reduces, the sweep of reduce-scatter, all-gather and broadcast
 * (gpu_coll_sweep, quick) on pool and plain buffers, and a CUDA graph, while the other
 * part does the same. Then the parent still reduces; a second split into the pairs
 * (0 1) and (2 3), ranked in reverse by key, with the device and timeout given in
 * params; the parent destroyed first, its parts reducing after it. */
#define SPLIT_RANKS 4
#define SPLIT_REPLAYS 4

static symcoll_comm_h split_ok(symcoll_comm_h comm, int color, int key,
                               const symcoll_comm_params_t *p)
{
    symcoll_comm_h child = NULL;
    symcoll_status_t st = symcoll_comm_split(comm, color, key, p, &child);

    if (st != SYMCOLL_OK || !child)
        harness_fail("symcoll_comm_split(color %d, key %d): %s", color, key,
                     symcoll_status_string(st));
    return child;
}

/* Warm-up, capture, then replays with new inputs, as the all-reduce graph case: float32
 * sums at a one-shot and a two-shot size, an eager call of another size between
 * replays, every replay checked. */
static int split_graph(symcoll_comm_h comm, cudaStream_t s, int salt)
{
    static const size_t counts[] = {8 << 10, (2 << 20) + 5};
    void *in[2], *out[2], *host;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    int r, n;

    CK_SC(symcoll_comm_rank(comm, &r));
    CK_SC(symcoll_comm_size(comm, &n));
    host = malloc(counts[1] * 4);
    for (int k = 0; k < 2; k++) {
        CK_CUDA(cudaMalloc(&in[k], counts[k] * 4));
        CK_CUDA(cudaMalloc(&out[k], counts[k] * 4));
        salt++;
        gpu_fill(in[k], out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, r, n, salt, host, s);
        CK_SC(
            symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        gpu_verify(out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, n, salt, host, s,
                   "split part: graph warm-up");
    }
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 2; k++)
        CK_SC(
            symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int it = 0; it <= SPLIT_REPLAYS; it++) {
        salt++;
        for (int k = 0; k < 2; k++)
            gpu_fill(in[k], out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, r, n, salt, host,
                     s);
        CK_CUDA(cudaGraphLaunch(ge, s));
        for (int k = 0; k < 2; k++)
            gpu_verify(out[k], counts[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, n, salt, host, s,
                       it == SPLIT_REPLAYS ? "split part: replay after an eager call"
                                           : "split part: graph replay");
        if (it == SPLIT_REPLAYS - 1) {
            salt++;
            gpu_fill(in[0], out[0], 4099, SYMCOLL_FLOAT32, SYMCOLL_SUM, r, n, salt, host, s);
            CK_SC(
                symcoll_allreduce(in[0], out[0], 4099, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
            gpu_verify(out[0], 4099, SYMCOLL_FLOAT32, SYMCOLL_SUM, n, salt, host, s,
                       "split part: eager between replays");
        }
    }
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
    for (int k = 0; k < 2; k++) {
        CK_CUDA(cudaFree(in[k]));
        CK_CUDA(cudaFree(out[k]));
    }
    free(host);
    return salt;
}

static void body_split(int rank, int nranks, void *arg)
{
    symcoll_comm_params_t p;
    symcoll_comm_h world, part, pair;
    cudaStream_t s;
    int dev = -1, salt = 400000;
    double t0, t;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", "30", 1);
    gpu_set_device(rank);
    CK_CUDA(cudaGetDevice(&dev));
    world = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    t0 = t = mono_sec();
    part = split_ok(world, rank % 2, rank, NULL);
    expect_place(part, rank / 2, nranks / 2, "part by parity");
    if (rank == 0)
        fprintf(stderr, "CUDA split: parts by parity made in %.3f s\n", mono_sec() - t);
    t = mono_sec();
    salt = ar_exact(part, s, 1, salt, "part by parity");
    if (rank == 0)
        fprintf(stderr, "CUDA split: part's float32 all-reduces exact, %.3f s\n",
                mono_sec() - t);
    t = mono_sec();
    salt = gpu_coll_sweep(part, rank / 2, nranks / 2, s, 1, 1, salt, "part by parity:");
    if (rank == 0)
        fprintf(stderr,
                "CUDA split: part's reduce-scatter, all-gather, broadcast exact, %.3f s\n",
                mono_sec() - t);
    t = mono_sec();
    salt = split_graph(part, s, salt);
    if (rank == 0)
        fprintf(stderr, "CUDA split: part's graph, %d replays exact, %.3f s\n",
                SPLIT_REPLAYS + 1, mono_sec() - t);

    /* the parent, between and after its parts' calls */
    salt = ar_exact(world, s, 0, salt, "parent after the split");

    /* pairs (0 1), (2 3), each in the reverse order, device and timeout in params */
    memset(&p, 0, sizeof(p));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE | SYMCOLL_COMM_PARAM_FIELD_TIMEOUT;
    p.cuda_device = dev;
    p.timeout_sec = 30;
    pair = split_ok(world, rank / 2, -rank, &p);
    expect_place(pair, 1 - rank % 2, 2, "pair (reversed keys)");
    salt = ar_exact(pair, s, 0, salt, "pair");

    /* the parent goes first: its parts keep working */
    CK_SC(symcoll_comm_destroy(world));
    salt = ar_exact(part, s, 0, salt, "part after its parent's destroy");
    salt = ar_exact(pair, s, 0, salt, "pair after its parent's destroy");
    CK_SC(symcoll_comm_destroy(part));
    CK_SC(symcoll_comm_destroy(pair));
    CK_CUDA(cudaStreamDestroy(s));
    if (rank == 0)
        fprintf(stderr, "CUDA split: 4 ranks, all exact, %.3f s\n", mono_sec() - t0);
}

START_TEST(t_split_4ranks)
{
    ck_assert_int_eq(harness_run(SPLIT_RANKS, 1, 600, body_split, NULL), 0);
}
END_TEST

/* ---- shrink --------------------------------------------------------------------------
 * 3 ranks on one node; the last one (forked, harness_fork_victim) SIGKILLs itself a few
 * tens of ms into a loop of one-shot CUDA all-reduces. The survivors loop (call,
 * synchronise) until a call fails with SYMCOLL_ERR_PEER_FAILED, shrink (timeout 20 s in
 * params; called again after a failure during it, 3 times at most) to a communicator of
 * 2 ranks in the old order, whose float32 sums on device memory are exact; the old one
 * fails every call and is destroyed. */
#define SHRINK_RANKS 3
#define SHRINK_VICTIM (SHRINK_RANKS - 1)
#define SHRINK_COUNT ((size_t)64 << 10) /* float32: one-shot */
#define SHRINK_DELAY_US 50000

typedef struct shrink_shared {
    _Atomic int64_t kill_ns;
    _Atomic int64_t fail_ns[SHRINK_RANKS];
    _Atomic int64_t ready_ns[SHRINK_RANKS];
    _Atomic int status[SHRINK_RANKS];
    _Atomic int attempts[SHRINK_RANKS];
    _Atomic long calls[SHRINK_RANKS];
} shrink_shared_t;

static void *shrink_kill_self(void *arg)
{
    shrink_shared_t *d = arg;
    usleep(SHRINK_DELAY_US);
    atomic_store(&d->kill_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

static void body_shrink(int rank, int nranks, void *arg)
{
    shrink_shared_t *d = arg;
    symcoll_comm_params_t p;
    symcoll_comm_h comm, nc = NULL;
    symcoll_status_t st = SYMCOLL_OK;
    cudaStream_t s;
    void *buf, *host;
    long calls = 0;
    int a, salt = 500000;

    setenv("SYMCOLL_TIMEOUT", "30", 1);
    if (rank == SHRINK_VICTIM && !harness_fork_victim())
        return; /* CUDA not touched in this process: the victim is its child */
    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc(&buf, SHRINK_COUNT * 4));
    host = malloc(SHRINK_COUNT * 4);
    gpu_fill(buf, NULL, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++salt, host,
             s);
    CK_SC(symcoll_allreduce(buf, buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    gpu_verify(buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
               "before the kill");
    CK_CUDA(cudaMemsetAsync(buf, 0, SHRINK_COUNT * 4, s));
    if (rank == SHRINK_VICTIM) {
        pthread_t th;
        /* the timer starts once a further call completed: it needed everyone's data, so
         * every survivor is past the checked call above */
        symcoll_allreduce(buf, buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        cudaStreamSynchronize(s);
        if (pthread_create(&th, NULL, shrink_kill_self, d))
            harness_fail("pthread_create");
        for (;;) {
            symcoll_allreduce(buf, buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            cudaStreamSynchronize(s);
        }
    }
    while (st == SYMCOLL_OK && calls++ < 1000000) {
        st = symcoll_allreduce(buf, buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        if (st == SYMCOLL_OK)
            CK_CUDA(cudaStreamSynchronize(s));
    }
    atomic_store(&d->fail_ns[rank], mono_ns());
    atomic_store(&d->status[rank], (int)st);
    atomic_store(&d->calls[rank], calls);
    if (st != SYMCOLL_ERR_PEER_FAILED)
        harness_fail("after the kill, %ld calls: %s, expected %s", calls,
                     symcoll_status_string(st), symcoll_status_string(SYMCOLL_ERR_PEER_FAILED));

    memset(&p, 0, sizeof(p));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TIMEOUT;
    p.timeout_sec = 20;
    for (a = 1; a <= 3; a++) {
        st = symcoll_comm_shrink(comm, &p, &nc);
        if (st == SYMCOLL_OK || (st != SYMCOLL_ERR_PEER_FAILED && st != SYMCOLL_ERR_TIMED_OUT &&
                                 st != SYMCOLL_ERR_BOOTSTRAP))
            break;
    }
    if (st != SYMCOLL_OK || !nc)
        harness_fail("symcoll_comm_shrink: %s after %d attempt(s)", symcoll_status_string(st),
                     a);
    atomic_store(&d->ready_ns[rank], mono_ns());
    atomic_store(&d->attempts[rank], a);
    expect_place(nc, rank, nranks - 1, "after the shrink");
    salt = ar_exact(nc, s, 1, salt, "after the shrink");
    CK_SC(symcoll_barrier(nc, s));
    CK_CUDA(cudaStreamSynchronize(s));

    /* the old one is good only for destroy */
    st = symcoll_allreduce(buf, buf, SHRINK_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
    if (st == SYMCOLL_OK)
        harness_fail("an all-reduce on the failed communicator returned %s",
                     symcoll_status_string(st));
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    CK_SC(symcoll_comm_destroy(nc));
    CK_CUDA(cudaFree(buf));
    CK_CUDA(cudaStreamDestroy(s));
    free(host);
}

START_TEST(t_shrink_3ranks)
{
    shrink_shared_t *d =
        mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert(d != MAP_FAILED);
    memset(d, 0, sizeof(*d));
    ck_assert_int_eq(harness_run(SHRINK_RANKS, 1, 300, body_shrink, d), 0);
    for (int r = 0; r < SHRINK_RANKS; r++) {
        if (r == SHRINK_VICTIM)
            continue;
        fprintf(stderr,
                "CUDA shrink: rank %d got %s after %ld calls, %.3f s after the kill; "
                "2-rank communicator %.3f s after the kill (%d attempt(s))\n",
                r, symcoll_status_string((symcoll_status_t)atomic_load(&d->status[r])),
                atomic_load(&d->calls[r]),
                (double)(atomic_load(&d->fail_ns[r]) - atomic_load(&d->kill_ns)) / 1e9,
                (double)(atomic_load(&d->ready_ns[r]) - atomic_load(&d->kill_ns)) / 1e9,
                atomic_load(&d->attempts[r]));
    }
    munmap(d, sizeof(*d));
}
END_TEST

/* ---- cases ------------------------------------------------------------------------- */

void cuda_split_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"split", t_split_4ranks, 1},
        {"shrink", t_shrink_3ranks, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
