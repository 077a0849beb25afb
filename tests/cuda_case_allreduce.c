/* test_cuda's all-reduce cases on one node: every datatype x operator on 1 and 2 ranks,
 * in and out of place, plain and pool buffers, staging growth, CUDA graph capture and
 * replay (growth refused inside a capture), and bf16 sums of random data bit for bit. */
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
#include "cuda_cases.h"
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

/* ---- cases ------------------------------------------------------------------------- */

void cuda_allreduce_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"types1", t_types_1rank, 1},  {"bits", t_bits_2ranks, 1}, {"graph", t_graph_2ranks, 1},
        {"types2", t_types_2ranks, 1}, {"pool", t_pool_2ranks, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
