/* GPU tests of the CUDA path on one node: every datatype x operator on 1 and 2 ranks (one
 * GPU each when there are enough), in and out of place, plain and pool buffers, staging
 * growth, CUDA graph capture and replay, growth refused inside a capture, bf16 sums of
 * random data bit for bit, ranks that call with different arguments, and a rank killed
 * while the others wait in a kernel; reduce-scatter, all-gather, broadcast and the stream
 * barrier on 2 and 3 ranks, captured in a graph, and the barrier's ordering; the
 * collectives' own kernels (each forced, few blocks) against their composition from the
 * all-reduce, every datatype x operator, captured, and ranks that disagree. Exit 77
 * without GPUs (after the checks of the
 * signature the kernels compare, which need none). The cases across simulated nodes are
 * tests/test_cuda_net.c. */
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

#include <cuda_runtime_api.h>

#include "cuda/sig.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* ---- every datatype x operator -------------------------------------------------- */

static const size_t small_sizes[] = {1, 7, 4099};

static void body_types(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    cudaStream_t s;
    size_t max_count = (1u << 20) + 3; /* elements */
    void *a, *b, *host;
    int salt = 0;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&a, max_count * 8 + 64));
    CK_CUDA(cudaMalloc(&b, max_count * 8 + 64));
    host = malloc(max_count * 8);
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
        for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
            size_t esize = symcoll_dtype_size((symcoll_dtype_t)t);
            for (size_t k = 0; k <= (sizeof(small_sizes) / sizeof(small_sizes[0])); k++) {
                /* the last size, 1 MiB + 3 elements of this type, for sum and max only */
                size_t count = k < (sizeof(small_sizes) / sizeof(small_sizes[0]))
                                   ? small_sizes[k]
                                   : (1u << 20) / esize + 3;
                if (k == (sizeof(small_sizes) / sizeof(small_sizes[0])) && op != SYMCOLL_SUM &&
                    op != SYMCOLL_MAX)
                    continue;
                for (int inplace = 0; inplace < 2; inplace++) {
                    void *out = inplace ? a : b;
                    salt++;
                    gpu_fill(a, out, count, t, op, rank, nranks, salt, host, s);
                    CK_SC(symcoll_allreduce(a, out, count, t, op, comm, s));
                    gpu_verify(out, count, t, op, nranks, salt, host, s,
                               inplace ? "in place" : "out of place");
                }
            }
            /* misaligned (but element-aligned) buffers take the element-wise path */
            if (esize < 16) {
                size_t count = 4099;
                char *ma = (char *)a + esize, *mb = (char *)b + 3 * esize;
                salt++;
                gpu_fill(ma, mb, count, t, op, rank, nranks, salt, host, s);
                CK_SC(symcoll_allreduce(ma, mb, count, t, op, comm, s));
                gpu_verify(mb, count, t, op, nranks, salt, host, s, "misaligned");
            }
        }
    }
    /* count 0 is a no-op */
    CK_SC(symcoll_allreduce(a, b, 0, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    free(host);
    cudaFree(a);
    cudaFree(b);
    (void)arg;
}

START_TEST(t_types_1rank)
{
    ck_assert_int_eq(harness_run(1, 1, 600, body_types, NULL), 0);
}
END_TEST

START_TEST(t_types_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 900, body_types, NULL), 0);
}
END_TEST

/* ---- pool buffers, big sizes, growth ----------------------------------------- */

static void body_pool(int rank, int nranks, void *arg)
{
    const size_t big = (size_t)256 << 20; /* bytes */
    symcoll_comm_h comm;
    symcoll_pool_attr_t attr = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS |
                                              SYMCOLL_POOL_ATTR_FIELD_MAPPED};
    cudaStream_t s;
    void *pa, *pb, *plain, *host;
    uint64_t growths0;
    int salt = 1000;
    static const size_t counts[] = {4099, (1u << 20) + 3};

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    host = malloc(big);
    /* pool buffers: reduced in place and out of place with no staging */
    CK_SC(symcoll_mem_alloc(comm, 8 << 20, SYMCOLL_MEM_CUDA, &pa));
    CK_SC(symcoll_mem_alloc(comm, 8 << 20, SYMCOLL_MEM_CUDA, &pb));
    for (size_t k = 0; k < 2; k++) {
        for (int t = SYMCOLL_FLOAT16; t <= SYMCOLL_FLOAT32; t++) {
            salt++;
            gpu_fill(pa, pb, counts[k], t, SYMCOLL_SUM, rank, nranks, salt, host, s);
            CK_SC(symcoll_allreduce(pa, pb, counts[k], t, SYMCOLL_SUM, comm, s));
            gpu_verify(pb, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s,
                       "pool out of place");
            salt++;
            gpu_fill(pa, pa, counts[k], t, SYMCOLL_MAX, rank, nranks, salt, host, s);
            CK_SC(symcoll_allreduce(pa, pa, counts[k], t, SYMCOLL_MAX, comm, s));
            gpu_verify(pa, counts[k], t, SYMCOLL_MAX, nranks, salt, host, s, "pool in place");
            /* pool input, plain output and the reverse */
            salt++;
            CK_CUDA(cudaMalloc(&plain, counts[k] * 4));
            gpu_fill(pa, plain, counts[k], t, SYMCOLL_SUM, rank, nranks, salt, host, s);
            CK_SC(symcoll_allreduce(pa, plain, counts[k], t, SYMCOLL_SUM, comm, s));
            gpu_verify(plain, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s,
                       "pool to plain");
            salt++;
            gpu_fill(plain, pb, counts[k], t, SYMCOLL_SUM, rank, nranks, salt, host, s);
            CK_SC(symcoll_allreduce(plain, pb, counts[k], t, SYMCOLL_SUM, comm, s));
            gpu_verify(pb, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s, "plain to pool");
            CK_CUDA(cudaFree(plain));
        }
    }
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &attr));
    growths0 = attr.growths;

    /* growth across calls: plain buffers of rising size make the staging grow */
    CK_CUDA(cudaMalloc(&plain, big));
    {
        static const size_t rising[] = {64 << 10, 4 << 20, 64 << 20, (size_t)256 << 20};
        for (size_t k = 0; k < (sizeof(rising) / sizeof(rising[0])); k++) {
            size_t count = rising[k] / 2;
            salt++;
            gpu_fill(plain, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks, salt,
                     host, s);
            CK_SC(
                symcoll_allreduce(plain, plain, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
            gpu_verify(plain, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host, s,
                       "rising size");
        }
    }
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &attr));
    if (nranks > 1 && attr.growths <= growths0)
        harness_fail("the pool did not grow for 256 MiB of staging (%llu growths)",
                     (unsigned long long)attr.growths);
    /* 256 MiB: float32 sum out of place, plain buffers; then a 256 MiB pool buffer */
    {
        void *out;
        size_t count = big / 4;
        CK_CUDA(cudaMalloc(&out, big));
        salt++;
        gpu_fill(plain, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, salt, host, s);
        CK_SC(symcoll_allreduce(plain, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        gpu_verify(out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s, "256 MiB");
        CK_CUDA(cudaFree(out));
    }
    {
        void *pbig;
        size_t count = big / 2;
        CK_SC(symcoll_mem_alloc(comm, big, SYMCOLL_MEM_CUDA, &pbig));
        salt++;
        gpu_fill(pbig, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks, salt, host, s);
        CK_SC(symcoll_allreduce(pbig, pbig, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        gpu_verify(pbig, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host, s,
                   "256 MiB pool in place");
        CK_CUDA(cudaStreamSynchronize(s));
        CK_SC(symcoll_mem_free(comm, pbig));
    }
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_mem_free(comm, pa));
    CK_SC(symcoll_mem_free(comm, pb));
    CK_SC(symcoll_comm_destroy(comm));
    cudaFree(plain);
    free(host);
    (void)arg;
}

START_TEST(t_pool_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 900, body_pool, NULL), 0);
}
END_TEST

/* ---- CUDA graphs ------------------------------------------------------------------ */

static void body_graph(int rank, int nranks, void *arg)
{
    static const size_t counts[] = {8 << 10, (2 << 20) + 5}; /* bf16: one-shot, two-shot */
    symcoll_comm_h comm;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    void *in[2], *out[2], *host;
    int salt = 5000;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host = malloc(counts[1] * 2);
    for (int k = 0; k < 2; k++) {
        CK_CUDA(cudaMalloc(&in[k], counts[k] * 2));
        CK_CUDA(cudaMalloc(&out[k], counts[k] * 2));
        /* warm-up: sizes the staging before the capture */
        CK_SC(symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm,
                                s));
    }
    CK_CUDA(cudaStreamSynchronize(s));

    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 2; k++)
        CK_SC(symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm,
                                s));
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));

    for (int it = 0; it < 300; it++) {
        int check = it % 50 == 0 || it == 299;
        salt++;
        /* new inputs each replay, so a replay that did nothing shows */
        for (int k = 0; k < 2; k++)
            gpu_fill(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
                     salt, host, s);
        CK_CUDA(cudaGraphLaunch(ge, s));
        if (check)
            for (int k = 0; k < 2; k++)
                gpu_verify(out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host,
                           s, "graph replay");
        if (it % 7 == 0) {
            /* eager calls between replays: same and other sizes */
            salt++;
            gpu_fill(in[0], out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, rank, nranks, salt,
                     host, s);
            CK_SC(
                symcoll_allreduce(in[0], out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, comm, s));
            if (check)
                gpu_verify(out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, nranks, salt, host, s,
                           "eager between replays");
        }
    }
    CK_CUDA(cudaStreamSynchronize(s));

    /* a size that needs more staging: refused inside the capture, works after it */
    if (nranks > 1) {
        size_t count = (size_t)64 << 20;
        void *bigbuf;
        symcoll_status_t st;
        cudaGraph_t g2;
        CK_CUDA(cudaMalloc(&bigbuf, count * 2));
        CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        st = symcoll_allreduce(bigbuf, bigbuf, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s);
        /* the capture may come back invalidated: the check looked at the legacy stream */
        if (cudaStreamEndCapture(s, &g2) != cudaSuccess)
            g2 = NULL;
        (void)cudaGetLastError();
        if (st != SYMCOLL_ERR_IN_PROGRESS)
            harness_fail("growth inside a capture returned %s, expected %s",
                         symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_IN_PROGRESS));
        if (g2)
            cudaGraphDestroy(g2);
        salt++;
        gpu_fill(bigbuf, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks, salt,
                 malloc(count * 2), s);
        CK_SC(symcoll_allreduce(bigbuf, bigbuf, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        CK_CUDA(cudaStreamSynchronize(s));
        CK_CUDA(cudaFree(bigbuf));
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    CK_SC(symcoll_comm_destroy(comm));
    free(host);
    (void)arg;
}

START_TEST(t_graph_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_graph, NULL), 0);
}
END_TEST

/* ---- random data: every rank gets the same bits, equal to a float32 reference ----- */

static void body_bits(int rank, int nranks, void *arg)
{
    const size_t count = (3u << 20) + 5;
    symcoll_comm_h comm;
    cudaStream_t s;
    uint16_t *hin, *hout;
    void *d;
    uint64_t h = 1469598103934665603ull, hmin, hmax;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    hin = malloc(count * 2);
    hout = malloc(count * 2);
    CK_CUDA(cudaMalloc(&d, count * 2));
    for (size_t k = 0; k < 2; k++) {
        size_t c = k ? count : 4099;
        for (size_t i = 0; i < c; i++) {
            uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503u + 17);
            hin[i] = refcheck_f32_to_bf16(((float)(x % 100000) - 50000.0f) / 977.0f);
        }
        CK_CUDA(cudaMemcpy(d, hin, c * 2, cudaMemcpyHostToDevice));
        CK_SC(symcoll_allreduce(d, d, c, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        CK_CUDA(cudaMemcpyAsync(hout, d, c * 2, cudaMemcpyDeviceToHost, s));
        CK_CUDA(cudaStreamSynchronize(s));
        for (size_t i = 0; i < c; i++) {
            float acc = 0;
            for (int q = 0; q < nranks; q++) {
                uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(q * 40503u + 17);
                acc += refcheck_bf16_to_f32(
                    refcheck_f32_to_bf16(((float)(x % 100000) - 50000.0f) / 977.0f));
            }
            if (hout[i] != refcheck_f32_to_bf16(acc))
                harness_fail("bf16 sum element %zu: 0x%04x, float32 reference 0x%04x", i,
                             hout[i], refcheck_f32_to_bf16(acc));
            h = (h ^ hout[i]) * 1099511628211ull;
        }
    }
    /* the same hash on every rank (through the host path) */
    CK_SC(symcoll_allreduce(&h, &hmin, 1, SYMCOLL_UINT64, SYMCOLL_MIN, comm, NULL));
    CK_SC(symcoll_allreduce(&h, &hmax, 1, SYMCOLL_UINT64, SYMCOLL_MAX, comm, NULL));
    if (hmin != hmax)
        harness_fail("ranks got different bits");
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

START_TEST(t_bits_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 300, body_bits, NULL), 0);
}
END_TEST

/* ---- ranks that call with different arguments --------------------------------------
 * One communicator per case (a mismatch breaks it): every size class is warmed up (and
 * checked) so that no staging grows, then the last rank calls with another count,
 * datatype or operator, or a size that takes another kernel. The call is queued; after
 * the stream passed it the next call returns SYMCOLL_ERR_MISMATCH on every rank, and so
 * do later ones; destroy returns at once. */

#define MM_LL 1024               /* float32: 4 KB, the LL kernel */
#define MM_ONE (64u << 10)       /* float32: 256 KB, one-shot */
#define MM_TWO ((size_t)4 << 20) /* float32: 16 MB, two-shot */
#define MM_TIMEOUT "20"          /* SYMCOLL_TIMEOUT: a mismatch not seen would cost this */

typedef struct mm_case {
    const char *name;
    size_t count[2]; /* agreeing ranks, the last rank */
    symcoll_dtype_t dtype[2];
    symcoll_op_t op[2];
} mm_case_t;

static const mm_case_t mm_cases[] = {
    {"LL count",
     {MM_LL, MM_LL - 2},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"one-shot datatype",
     {MM_ONE, MM_ONE},
     {SYMCOLL_FLOAT32, SYMCOLL_INT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"one-shot operator",
     {MM_ONE, MM_ONE},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_MAX}},
    {"one-shot count",
     {MM_ONE, MM_ONE + 4096},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot count",
     {MM_TWO, MM_TWO - 1000},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot datatype",
     {2 * MM_TWO, 2 * MM_TWO},
     {SYMCOLL_BFLOAT16, SYMCOLL_FLOAT16},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot operator",
     {MM_TWO, MM_TWO},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_MIN, SYMCOLL_MAX}},
    {"LL against two-shot",
     {MM_LL, MM_TWO},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
};

static double mono_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void body_mismatch(int rank, int nranks, void *arg)
{
    const int odd = rank == nranks - 1;
    void *a, *host;
    cudaStream_t s;
    int salt = 7000;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&a, MM_TWO * 4 + 64));
    host = malloc(MM_TWO * 4);
    for (size_t c = 0; c < sizeof(mm_cases) / sizeof(mm_cases[0]); c++) {
        const mm_case_t *m = &mm_cases[c];
        static const size_t warm[] = {MM_LL, MM_ONE, MM_TWO};
        symcoll_comm_h comm = harness_comm_create();
        symcoll_status_t st[3];
        double t;

        for (size_t k = 0; k < 3; k++) {
            salt++;
            gpu_fill(a, NULL, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, salt, host,
                     s);
            CK_SC(symcoll_allreduce(a, a, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
            gpu_verify(a, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
                       "warm-up before a mismatch");
        }
        t = mono_sec();
        /* the mismatched call, then two more, each after the stream passed the last */
        st[0] = symcoll_allreduce(a, a, m->count[odd], m->dtype[odd], m->op[odd], comm, s);
        CK_CUDA(cudaStreamSynchronize(s));
        for (int k = 1; k < 3; k++) {
            st[k] = symcoll_allreduce(a, a, MM_LL, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            CK_CUDA(cudaStreamSynchronize(s));
        }
        fprintf(stderr, "mismatch %s: rank %d got %s, %s, %s in %.3f s\n", m->name, rank,
                symcoll_status_string(st[0]), symcoll_status_string(st[1]),
                symcoll_status_string(st[2]), mono_sec() - t);
        if (st[0] != SYMCOLL_OK && st[0] != SYMCOLL_ERR_MISMATCH)
            harness_fail("mismatch %s: the call returned %s", m->name,
                         symcoll_status_string(st[0]));
        if (st[1] != SYMCOLL_ERR_MISMATCH || st[2] != SYMCOLL_ERR_MISMATCH)
            harness_fail("mismatch %s: the calls after it returned %s and %s, expected %s",
                         m->name, symcoll_status_string(st[1]), symcoll_status_string(st[2]),
                         symcoll_status_string(SYMCOLL_ERR_MISMATCH));
        t = mono_sec();
        CK_SC(symcoll_comm_destroy(comm));
        if (mono_sec() - t > 1.0)
            harness_fail("mismatch %s: destroy took %.3f s", m->name, mono_sec() - t);
    }
    free(host);
    cudaFree(a);
}

START_TEST(t_mismatch_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 600, body_mismatch, NULL), 0);
}
END_TEST

/* ---- a rank killed while the others wait in a kernel ---------------------------------
 * The last rank forks: its child is the rank (the victim) and SIGKILLs itself a few ms
 * into a loop of one-shot calls; the fork's parent reaps it at once, or (zombie) only
 * once the survivors are done. The survivors loop (call, synchronise) until a call
 * fails: it must be SYMCOLL_ERR_PEER_FAILED within 1 s of the kill, and destroy must
 * return within 1 s. */

#define KILL_RANKS 3
#define KILL_TRIALS 2                 /* of each kind */
#define KILL_COUNT ((size_t)64 << 10) /* float32: one-shot */
#define KILL_TIMEOUT "30"             /* SYMCOLL_TIMEOUT: a death not seen costs this */
#define KILL_RUN_TIMEOUT 120.0
#define KILL_SEEN_SEC 1.0

typedef struct kill_shared {
    int zombie;
    unsigned delay_us;
    _Atomic int64_t kill_ns;
    _Atomic int64_t fail_ns[KILL_RANKS];
    _Atomic int64_t destroy_ns[KILL_RANKS]; /* how long destroy took */
    _Atomic int status[KILL_RANKS];
    _Atomic int done;
    _Atomic int zombie_seen;
} kill_shared_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *kill_self(void *arg)
{
    kill_shared_t *d = arg;
    usleep(d->delay_us);
    atomic_store(&d->kill_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

static void kill_parent(kill_shared_t *d, pid_t pid, int n)
{
    int64_t end = mono_ns() + (int64_t)(KILL_RUN_TIMEOUT * 1e9);
    siginfo_t si;
    int ws;

    if (d->zombie) {
        while (atomic_load(&d->done) < n - 1 && mono_ns() < end)
            usleep(1000);
        /* the survivors are done and the victim is not reaped: it must exit (a process
         * that held a GPU context can take a while to go after SIGKILL, long after its
         * sockets closed), and stay there unreaped, until the deadline */
        while (!atomic_load(&d->zombie_seen) && mono_ns() < end) {
            memset(&si, 0, sizeof(si));
            if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid)
                atomic_store(&d->zombie_seen, 1);
            else
                usleep(1000);
        }
    }
    if (waitpid(pid, &ws, 0) != pid)
        harness_fail("waitpid: %s", strerror(errno));
    if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
        harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
}

static void body_kill(int rank, int n, void *arg)
{
    kill_shared_t *d = arg;
    symcoll_comm_h comm;
    symcoll_status_t st = SYMCOLL_OK;
    cudaStream_t s;
    void *buf;
    long calls = 0;
    int64_t t;

    if (rank == n - 1) {
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            kill_parent(d, pid, n);
            return;
        }
    }
    setenv("SYMCOLL_TIMEOUT", KILL_TIMEOUT, 1);
    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&buf, KILL_COUNT * 4));
    CK_CUDA(cudaMemset(buf, 0, KILL_COUNT * 4));
    CK_SC(symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));
    if (rank == n - 1) {
        pthread_t th;
        pthread_create(&th, NULL, kill_self, d);
        for (;;) {
            symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            cudaStreamSynchronize(s);
        }
    }
    while (st == SYMCOLL_OK && calls++ < 1000000) {
        st = symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        if (st == SYMCOLL_OK)
            CK_CUDA(cudaStreamSynchronize(s));
    }
    atomic_store(&d->fail_ns[rank], mono_ns());
    atomic_store(&d->status[rank], (int)st);
    t = mono_ns();
    symcoll_comm_destroy(comm);
    atomic_store(&d->destroy_ns[rank], mono_ns() - t);
    atomic_fetch_add(&d->done, 1);
    cudaFree(buf);
}

static void kill_trials(int zombie)
{
    const char *what = zombie ? "zombie" : "reaped";
    kill_shared_t *d =
        mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double worst = 0, worst_destroy = 0;

    ck_assert(d != MAP_FAILED);
    for (int trial = 0; trial < KILL_TRIALS; trial++) {
        memset(d, 0, sizeof(*d));
        d->zombie = zombie;
        d->delay_us = 20000 + 30000 * (unsigned)trial;
        ck_assert_int_eq(harness_run(KILL_RANKS, 1, KILL_RUN_TIMEOUT, body_kill, d), 0);
        ck_assert_msg(!zombie || atomic_load(&d->zombie_seen),
                      "the victim had not exited when the survivors were done (within %.0f s)",
                      KILL_RUN_TIMEOUT);
        for (int r = 0; r < KILL_RANKS - 1; r++) {
            double dt = (double)(atomic_load(&d->fail_ns[r]) - atomic_load(&d->kill_ns)) / 1e9;
            double dd = (double)atomic_load(&d->destroy_ns[r]) / 1e9;
            symcoll_status_t st = (symcoll_status_t)atomic_load(&d->status[r]);

            fprintf(stderr,
                    "CUDA kill (%s), trial %d: rank %d got %s %.3f s after the kill, "
                    "destroy %.3f s\n",
                    what, trial, r, symcoll_status_string(st), dt, dd);
            ck_assert_msg(st == SYMCOLL_ERR_PEER_FAILED, "%s trial %d: rank %d got %s", what,
                          trial, r, symcoll_status_string(st));
            ck_assert_msg(dt >= 0 && dt < KILL_SEEN_SEC,
                          "%s trial %d: rank %d saw the death after %.3f s", what, trial, r,
                          dt);
            ck_assert_msg(dd < 1.0, "%s trial %d: rank %d: destroy took %.3f s", what, trial, r,
                          dd);
            worst = dt > worst ? dt : worst;
            worst_destroy = dd > worst_destroy ? dd : worst_destroy;
        }
    }
    fprintf(stderr,
            "CUDA kill (%s): max %.3f s to PEER_FAILED, destroy max %.3f s, %d trials\n", what,
            worst, worst_destroy, KILL_TRIALS);
    munmap(d, sizeof(*d));
}

START_TEST(t_kill_reaped)
{
    kill_trials(0);
}
END_TEST

START_TEST(t_kill_zombie)
{
    kill_trials(1);
}
END_TEST

/* ---- reduce-scatter, all-gather, broadcast, the stream barrier ---------------------- */

static void body_coll(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    cudaStream_t s;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    (void)gpu_coll_sweep(comm, rank, nranks, s, 1, 0, 100000, "one node");
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

START_TEST(t_coll_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll, NULL), 0);
}
END_TEST

START_TEST(t_coll_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 900, body_coll, NULL), 0);
}
END_TEST

static void body_barrier(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;

    gpu_set_device(rank);
    comm = harness_comm_create();
    gpu_barrier_order(comm, rank, nranks, arg, SYMCOLL_ERR_IN_PROGRESS);
    CK_SC(symcoll_comm_destroy(comm));
}

START_TEST(t_barrier_3ranks)
{
    gpu_bar_shared_t *sh = gpu_bar_shared_new();
    ck_assert_ptr_nonnull(sh);
    ck_assert_int_eq(harness_run(3, 1, 600, body_barrier, sh), 0);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* The four collectives captured in one CUDA graph after a warm-up, replayed with new
 * inputs; a reduce-scatter whose scratch would grow is refused inside a capture. */
#define CG_COUNT 1001

typedef struct {
    float *rs_send, *rs_recv, *ag, *bc;
    uint8_t *h;
} cg_bufs_t;

static uint8_t cg_byte(int r, size_t j, int salt)
{
    return (uint8_t)((j * 131 + (size_t)r * 29 + (size_t)salt * 7) % 251 + 1);
}

static void cg_fill(const cg_bufs_t *b, int rank, int nranks, int salt, cudaStream_t s)
{
    size_t n = (size_t)nranks;
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, (uint64_t)salt, 0};

    refcheck_fill(&spec, rank, b->h, CG_COUNT * n);
    CK_CUDA(cudaMemcpyAsync(b->rs_send, b->h, CG_COUNT * n * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaStreamSynchronize(s));
    memset(b->h, 0xa5, CG_COUNT * n * 4);
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        b->h[(size_t)rank * CG_COUNT * 4 + j] = cg_byte(rank, j, salt);
    CK_CUDA(cudaMemcpyAsync(b->ag, b->h, CG_COUNT * n * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        b->h[j] = rank == nranks - 1 ? cg_byte(nranks - 1, j, salt + 1) : 0xa5;
    CK_CUDA(cudaMemcpyAsync(b->bc, b->h, CG_COUNT * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaMemsetAsync(b->rs_recv, 0xa5, CG_COUNT * 4, s));
    CK_CUDA(cudaStreamSynchronize(s));
}

static void cg_calls(const cg_bufs_t *b, symcoll_comm_h comm, int rank, int nranks,
                     cudaStream_t s)
{
    CK_SC(symcoll_reduce_scatter(b->rs_send, b->rs_recv, CG_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM,
                                 comm, s));
    CK_SC(symcoll_allgather(b->ag + (size_t)rank * CG_COUNT, b->ag, CG_COUNT, SYMCOLL_FLOAT32,
                            comm, s));
    CK_SC(symcoll_barrier(comm, s));
    CK_SC(symcoll_broadcast(b->bc, b->bc, CG_COUNT, SYMCOLL_FLOAT32, nranks - 1, comm, s));
}

static void cg_verify(const cg_bufs_t *b, int rank, int nranks, int salt, cudaStream_t s,
                      const char *what)
{
    size_t n = (size_t)nranks, bad = 0;
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, (uint64_t)salt, 0};

    CK_CUDA(cudaMemcpyAsync(b->h, b->rs_recv, CG_COUNT * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < CG_COUNT; i++) {
        float e = 0;
        refcheck_store(&e, 0, SYMCOLL_FLOAT32,
                       refcheck_expected(&spec, (size_t)rank * CG_COUNT + i));
        bad += refcheck_load(b->h, i, SYMCOLL_FLOAT32) != refcheck_load(&e, 0, SYMCOLL_FLOAT32);
    }
    if (bad)
        harness_fail("%s: reduce-scatter: %zu wrong", what, bad);
    CK_CUDA(cudaMemcpyAsync(b->h, b->ag, CG_COUNT * n * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4 * n; j++)
        bad += b->h[j] != cg_byte((int)(j / (CG_COUNT * 4)), j % (CG_COUNT * 4), salt);
    if (bad)
        harness_fail("%s: all-gather: %zu wrong bytes", what, bad);
    CK_CUDA(cudaMemcpyAsync(b->h, b->bc, CG_COUNT * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        bad += b->h[j] != cg_byte(nranks - 1, j, salt + 1);
    if (bad)
        harness_fail("%s: broadcast: %zu wrong bytes", what, bad);
}

static void body_coll_graph(int rank, int nranks, void *arg)
{
    /* past every one-shot size: a reduce-scatter of it needs more of the pool */
    const size_t n = (size_t)nranks, big = (size_t)1 << 22;
    symcoll_comm_h comm;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cg_bufs_t b;
    void *bsend, *brecv;
    symcoll_status_t st;
    int salt = 7000;

    if (arg) /* "SYMCOLL_ALGO=..." */
        putenv((char *)arg);
    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc((void **)&b.rs_send, CG_COUNT * n * 4));
    CK_CUDA(cudaMalloc((void **)&b.rs_recv, CG_COUNT * 4));
    CK_SC(symcoll_mem_alloc(comm, CG_COUNT * n * 4, SYMCOLL_MEM_CUDA, (void **)&b.ag));
    CK_CUDA(cudaMalloc((void **)&b.bc, CG_COUNT * 4));
    b.h = malloc(CG_COUNT * n * 4);

    /* warm-up: the pool's scratch and staging for these sizes */
    cg_fill(&b, rank, nranks, salt, s);
    cg_calls(&b, comm, rank, nranks, s);
    cg_verify(&b, rank, nranks, salt, s, "warm-up");

    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cg_calls(&b, comm, rank, nranks, s);
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int it = 0; it < 4; it++) {
        salt += 2;
        cg_fill(&b, rank, nranks, salt, s);
        CK_CUDA(cudaGraphLaunch(ge, s));
        cg_verify(&b, rank, nranks, salt, s, "graph replay");
    }
    /* an eager call between replays, then one more replay */
    salt += 2;
    cg_fill(&b, rank, nranks, salt, s);
    cg_calls(&b, comm, rank, nranks, s);
    cg_verify(&b, rank, nranks, salt, s, "eager after replays");
    salt += 2;
    cg_fill(&b, rank, nranks, salt, s);
    CK_CUDA(cudaGraphLaunch(ge, s));
    cg_verify(&b, rank, nranks, salt, s, "graph replay after an eager call");

    /* a larger reduce-scatter needs more scratch: refused inside a capture */
    CK_CUDA(cudaMalloc(&bsend, big * n * 4));
    CK_CUDA(cudaMalloc(&brecv, big * 4));
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    st = symcoll_reduce_scatter(bsend, brecv, big, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
    {
        cudaGraph_t g2 = NULL;
        if (cudaStreamEndCapture(s, &g2) == cudaSuccess && g2)
            cudaGraphDestroy(g2);
        (void)cudaGetLastError();
    }
    if (st != SYMCOLL_ERR_IN_PROGRESS)
        harness_fail("a reduce-scatter growing its scratch in a capture returned %s, "
                     "expected %s",
                     symcoll_status_string(st), symcoll_status_string(SYMCOLL_ERR_IN_PROGRESS));
    /* and works outside it */
    CK_CUDA(cudaMemsetAsync(bsend, 0, big * n * 4, s));
    CK_SC(symcoll_reduce_scatter(bsend, brecv, big, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));

    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    CK_CUDA(cudaFree(bsend));
    CK_CUDA(cudaFree(brecv));
    CK_CUDA(cudaFree(b.rs_send));
    CK_CUDA(cudaFree(b.rs_recv));
    CK_CUDA(cudaFree(b.bc));
    CK_SC(symcoll_mem_free(comm, b.ag));
    CK_SC(symcoll_comm_destroy(comm));
    free(b.h);
}

START_TEST(t_coll_graph_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, NULL), 0);
}
END_TEST

/* the same with the collectives' own kernels forced one-shot, then two-shot, and run as
 * all-reduces */
START_TEST(t_coll_graph_native)
{
    static char one[] = "SYMCOLL_ALGO=oneshot", two[] = "SYMCOLL_ALGO=twoshot",
                composed[] = "SYMCOLL_CUDA_COLL=allreduce";
    setenv("SYMCOLL_CUDA_COLL", "auto", 1); /* the ranks' own kernels (not the default) */
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, one), 0);
    ck_assert_int_eq(harness_run(3, 1, 600, body_coll_graph, two), 0);
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, composed), 0);
}
END_TEST

/* ---- the collectives' own kernels against their composition from the all-reduce -----
 * Each configuration (environment of the ranks) runs the sweep of gpu_coll_sweep and
 * every datatype x operator (gpu_coll_types): the automatic choice, each kernel forced,
 * each with 4 blocks (one-shot: several chunks a block; two-shot: several strides a
 * thread), and the composition from the all-reduce. */
static const char *const native_cfgs[][3] = {
    /* SYMCOLL_ALGO, SYMCOLL_CUDA_NBLOCKS, SYMCOLL_CUDA_COLL */
    {"auto", "0", "auto"},    {"oneshot", "0", "auto"}, {"twoshot", "0", "auto"},
    {"oneshot", "4", "auto"}, {"twoshot", "4", "auto"}, {"auto", "0", "allreduce"},
};

static void body_coll_native(int rank, int nranks, void *arg)
{
    const size_t first = arg ? *(const size_t *)arg : 0;
    const size_t ncfg = sizeof(native_cfgs) / sizeof(native_cfgs[0]);
    int salt = 300000;
    cudaStream_t s;

    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t c = first; c < ncfg; c++) {
        char where[96];
        symcoll_comm_h comm;

        setenv("SYMCOLL_ALGO", native_cfgs[c][0], 1);
        setenv("SYMCOLL_CUDA_NBLOCKS", native_cfgs[c][1], 1);
        setenv("SYMCOLL_CUDA_COLL", native_cfgs[c][2], 1);
        snprintf(where, sizeof(where), "algo %s, %s blocks, %s:", native_cfgs[c][0],
                 native_cfgs[c][1], native_cfgs[c][2]);
        comm = harness_comm_create();
        salt = gpu_coll_sweep(comm, rank, nranks, s, 1, 0, salt, where);
        salt = gpu_coll_types(comm, rank, nranks, s, salt, where);
        CK_CUDA(cudaStreamSynchronize(s));
        CK_SC(symcoll_comm_destroy(comm));
    }
    CK_CUDA(cudaStreamDestroy(s));
}

START_TEST(t_coll_native_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 1200, body_coll_native, NULL), 0);
}
END_TEST

START_TEST(t_coll_native_3ranks)
{
    static const size_t from = 1; /* the forced kernels and the composition */
    ck_assert_int_eq(harness_run(3, 1, 1200, body_coll_native, (void *)&from), 0);
}
END_TEST

/* Ranks that call different collectives, roots or operators with the same count: every
 * rank's call after it returns SYMCOLL_ERR_MISMATCH, on both kernels of the collectives
 * and against the all-reduce's. */
#define CM_COUNT 1001
enum { CM_RS, CM_AG, CM_BC0, CM_BC1, CM_AR };

static const struct {
    const char *name;
    int call[2]; /* the other ranks', the last rank's */
    symcoll_op_t op[2];
} cm_cases[] = {
    {"broadcast root", {CM_BC0, CM_BC1}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"all-gather against broadcast", {CM_AG, CM_BC0}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"reduce-scatter operator", {CM_RS, CM_RS}, {SYMCOLL_SUM, SYMCOLL_MAX}},
    {"reduce-scatter against all-gather", {CM_RS, CM_AG}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"reduce-scatter against all-reduce", {CM_RS, CM_AR}, {SYMCOLL_SUM, SYMCOLL_SUM}},
};

static symcoll_status_t cm_call(int call, symcoll_op_t op, float *a, float *b, int rank,
                                int nranks, symcoll_comm_h comm, cudaStream_t s)
{
    switch (call) {
    case CM_RS:
        return symcoll_reduce_scatter(a, b, CM_COUNT, SYMCOLL_FLOAT32, op, comm, s);
    case CM_AG:
        return symcoll_allgather(b + (size_t)rank * CM_COUNT, a, CM_COUNT, SYMCOLL_FLOAT32,
                                 comm, s);
    case CM_BC0:
    case CM_BC1:
        return symcoll_broadcast(a, a, CM_COUNT, SYMCOLL_FLOAT32, call == CM_BC0 ? 0 : 1, comm,
                                 s);
    default:
        return symcoll_allreduce(a, a, CM_COUNT * (size_t)nranks, SYMCOLL_FLOAT32, op, comm, s);
    }
}

static void body_coll_mismatch(int rank, int nranks, void *arg)
{
    static const char *const algos[] = {"oneshot", "twoshot"};
    const int odd = rank == nranks - 1;
    const size_t bytes = CM_COUNT * (size_t)nranks * 4;
    float *a, *b;
    cudaStream_t s;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc((void **)&a, bytes));
    CK_CUDA(cudaMalloc((void **)&b, bytes));
    CK_CUDA(cudaMemset(a, 0, bytes));
    CK_CUDA(cudaMemset(b, 0, bytes));
    for (size_t g = 0; g < 2; g++) {
        for (size_t c = 0; c < sizeof(cm_cases) / sizeof(cm_cases[0]); c++) {
            symcoll_comm_h comm;
            symcoll_status_t st[3];
            double t;

            setenv("SYMCOLL_ALGO", algos[g], 1);
            comm = harness_comm_create();
            /* every staging and scratch at its size first: the mismatched call grows none */
            for (int k = CM_RS; k <= CM_AR; k++)
                CK_SC(cm_call(k, SYMCOLL_SUM, a, b, rank, nranks, comm, s));
            CK_CUDA(cudaStreamSynchronize(s));
            t = mono_sec();
            st[0] = cm_call(cm_cases[c].call[odd], cm_cases[c].op[odd], a, b, rank, nranks,
                            comm, s);
            CK_CUDA(cudaStreamSynchronize(s));
            for (int k = 1; k < 3; k++) {
                st[k] = cm_call(CM_BC0, SYMCOLL_SUM, a, b, rank, nranks, comm, s);
                CK_CUDA(cudaStreamSynchronize(s));
            }
            fprintf(stderr, "collective mismatch %s (%s): rank %d got %s, %s, %s in %.3f s\n",
                    cm_cases[c].name, algos[g], rank, symcoll_status_string(st[0]),
                    symcoll_status_string(st[1]), symcoll_status_string(st[2]), mono_sec() - t);
            if (st[0] != SYMCOLL_OK && st[0] != SYMCOLL_ERR_MISMATCH)
                harness_fail("collective mismatch %s (%s): the call returned %s",
                             cm_cases[c].name, algos[g], symcoll_status_string(st[0]));
            if (st[1] != SYMCOLL_ERR_MISMATCH || st[2] != SYMCOLL_ERR_MISMATCH)
                harness_fail("collective mismatch %s (%s): the calls after it returned %s and "
                             "%s, expected %s",
                             cm_cases[c].name, algos[g], symcoll_status_string(st[1]),
                             symcoll_status_string(st[2]),
                             symcoll_status_string(SYMCOLL_ERR_MISMATCH));
            t = mono_sec();
            CK_SC(symcoll_comm_destroy(comm));
            if (mono_sec() - t > 1.0)
                harness_fail("collective mismatch %s (%s): destroy took %.3f s",
                             cm_cases[c].name, algos[g], mono_sec() - t);
        }
    }
    CK_CUDA(cudaFree(a));
    CK_CUDA(cudaFree(b));
    CK_CUDA(cudaStreamDestroy(s));
}

START_TEST(t_coll_mismatch_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 600, body_coll_mismatch, NULL), 0);
}
END_TEST

/* ---- the signature the kernels compare (no GPU needed) ----------------------------- */

static int check_signatures(void)
{
    static const size_t counts[] = {
        1, 2, 1023, 1024, ((size_t)1 << 40) + 5, ((size_t)1 << 45) - 1};
    int bad = 0;
    char buf[160];

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
            for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
                for (int algo = 0; algo < CUDA_AR_NALGOS; algo++) {
                    for (int ph = 0; ph < 3; ph++) {
                        uint64_t sig = cuda_ar_sig(counts[c], t, op, algo, ph), n;
                        int t2, op2, algo2, ph2;
                        cuda_ar_sig_unpack(sig, &n, &t2, &op2, &algo2, &ph2);
                        if (!sig || n != counts[c] || t2 != t || op2 != op || algo2 != algo ||
                            ph2 != ph) {
                            fprintf(stderr, "signature of %s does not unpack\n",
                                    cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                            bad = 1;
                        }
                        /* any one field changed changes the signature */
                        if (sig == cuda_ar_sig(counts[c] + 1, t, op, algo, ph) ||
                            sig == cuda_ar_sig(counts[c], (t + 1) % SYMCOLL_DTYPE_LAST, op,
                                               algo, ph) ||
                            sig == cuda_ar_sig(counts[c], t, (op + 1) % SYMCOLL_OP_LAST, algo,
                                               ph) ||
                            sig == cuda_ar_sig(counts[c], t, op, (algo + 1) % CUDA_AR_NALGOS,
                                               ph)) {
                            fprintf(stderr, "signature of %s does not tell a field apart\n",
                                    cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                            bad = 1;
                        }
                    }
                }
            }
        }
    }
    /* the collective an all-reduce serves and its root: packed whole, told apart */
    for (int coll = 0; coll <= CUDA_AR_COLL_BARRIER; coll++) {
        for (int root = 0; root < 16; root++) {
            uint64_t sig = cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT,
                                            0, coll, root),
                     n;
            int t2, op2, algo2, ph2, coll2, root2;
            cuda_ar_sig_unpack_coll(sig, &n, &t2, &op2, &algo2, &ph2, &coll2, &root2);
            if (n != 40009 || t2 != SYMCOLL_UINT8 || op2 != SYMCOLL_MAX ||
                algo2 != CUDA_AR_TWOSHOT || ph2 != 0 || coll2 != coll || root2 != root ||
                (coll == 0 && root == 0 &&
                 sig != cuda_ar_sig(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0)) ||
                sig == cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0,
                                        (coll + 1) % (CUDA_AR_COLL_BARRIER + 1), root) ||
                sig == cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0,
                                        coll, (root + 1) % 16)) {
                fprintf(stderr, "signature of %s does not keep its collective\n",
                        cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                bad = 1;
            }
        }
    }
    cuda_ar_sig_describe(cuda_ar_sig_coll(7, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_ONESHOT, 0,
                                          CUDA_AR_COLL_BROADCAST, 3),
                         buf, sizeof(buf));
    if (strcmp(buf, "count 7, uint8, max, one-shot, for a broadcast from root 3")) {
        fprintf(stderr, "signature described as \"%s\"\n", buf);
        bad = 1;
    }
    cuda_ar_sig_describe(cuda_ar_sig(1024, SYMCOLL_BFLOAT16, SYMCOLL_MAX, CUDA_AR_LL, 0), buf,
                         sizeof(buf));
    if (strcmp(buf, "count 1024, bfloat16, max, LL")) {
        fprintf(stderr, "signature described as \"%s\"\n", buf);
        bad = 1;
    }
    return bad;
}

static Suite *cuda_suite(int ngpus)
{
    /* one case per test, so that CK_RUN_CASE=graph (say) runs one of them */
    const struct {
        const char *name;
        const TTest *test;
        int min_gpus;
    } cases[] = {
        {"types1", t_types_1rank, 1},
        {"bits", t_bits_2ranks, 1},
        {"graph", t_graph_2ranks, 1},
        {"types2", t_types_2ranks, 1},
        {"pool", t_pool_2ranks, 1},
        {"mismatch", t_mismatch_3ranks, 1},
        {"kill_reaped", t_kill_reaped, 1},
        {"kill_zombie", t_kill_zombie, 1},
        {"coll2", t_coll_2ranks, 1},
        {"coll3", t_coll_3ranks, 1},
        {"coll_graph", t_coll_graph_2ranks, 1},
        {"coll_graph_native", t_coll_graph_native, 1},
        {"coll_native2", t_coll_native_2ranks, 1},
        {"coll_native3", t_coll_native_3ranks, 1},
        {"coll_mismatch", t_coll_mismatch_3ranks, 1},
        {"barrier_stream", t_barrier_3ranks, 1},
    };
    Suite *su = suite_create("cuda");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc;
        if (ngpus < cases[i].min_gpus)
            continue;
        tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 1200);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(su, tc);
    }
    return su;
}

int main(void)
{
    if (check_signatures())
        return 1;
    return gpu_tests_main(cuda_suite, 1);
}
