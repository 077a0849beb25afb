/* test_cuda's case of the canonical reduction order on device memory inside a node: the
 * CUDA kernels (LL, one-shot, two-shot, chosen and forced) give every element the bits of
 * the canonical tree (tests/order_ref.h), the same as host memory (tests/test_order.c),
 * for 2 to 5 ranks, float32/float64/bfloat16/float16, sum/prod/avg, sizes across the
 * kernels' thresholds, plain and pool buffers, in and out of place, eager and (inside a
 * node) replayed from a CUDA graph; a reduce-scatter's block is the all-reduce's slice.
 * Rank 0 prints one hash per rank count, datatype and operator of the first 25000
 * elements: equal to test_order's (host memory, any layout). */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda_cases.h"
#include "cuda_net_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "order_ref.h"
#include "symcoll.h"

static const symcoll_dtype_t o_dtypes[] = {SYMCOLL_FLOAT32, SYMCOLL_FLOAT64, SYMCOLL_BFLOAT16,
                                           SYMCOLL_FLOAT16};
static const symcoll_op_t o_ops[] = {SYMCOLL_SUM, SYMCOLL_PROD, SYMCOLL_AVG};
/* elements: the LL kernel's range, one-shot's and two-shot's (thresholds below) */
static const size_t o_sizes[] = {1, 7, 1000, 30000, 200000};
#define O_NSIZES (sizeof(o_sizes) / sizeof(o_sizes[0]))
#define O_MAX 200000
#define O_RS_BLOCK 3000
#define O_HASHED 25000 /* tests/test_order.c's largest size */

static void o_check(int rank, int n, const char *algo, const char *what, symcoll_dtype_t dt,
                    symcoll_op_t op, size_t first, size_t count, const void *got)
{
    size_t es = symcoll_dtype_size(dt), bad = 0, first_bad = 0, last_bad = 0;
    char want[8], first_want[8];

    for (size_t k = 0; k < count; k++) {
        order_expect(dt, op, n, first + k, want);
        if (memcmp(want, (const char *)got + k * es, es)) {
            if (!bad++) {
                first_bad = k;
                memcpy(first_want, want, es);
            }
            last_bad = k;
        }
    }
    if (bad) {
        /* how many and where: a whole range says a missing step, scattered ones an order */
        unsigned long long g = 0, w = 0;
        memcpy(&g, (const char *)got + first_bad * es, es);
        memcpy(&w, first_want, es);
        harness_fail("rank %d, %d ranks, CUDA %s, %s %s %s, %zu elements: %zu elements differ "
                     "from the canonical tree, %zu to %zu (element %zu: got %#llx, want %#llx)",
                     rank, n, algo, what, symcoll_dtype_name(dt), symcoll_op_name(op), count,
                     bad, first + first_bad, first + last_bad, first + first_bad, g, w);
    }
}

/* Inside a node (t_order): the same call captured into a CUDA graph and replayed (its
 * eager twin just ran, so nothing needs setting up) gives the same bits; the result is
 * cleared first, so a replay that did nothing shows. */
static int o_graph;

static void o_graph_check(symcoll_comm_h comm, cudaStream_t s, int rank, int nranks,
                          const char *algo, const char *what, symcoll_dtype_t dt,
                          symcoll_op_t op, const void *in, void *res, size_t count,
                          void *host_out)
{
    size_t es = symcoll_dtype_size(dt);
    char name[64];
    cudaGraph_t g;
    cudaGraphExec_t ge;

    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK_SC(symcoll_allreduce(in, res, count, dt, op, comm, s));
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int replay = 0; replay < 2; replay++) {
        CK_CUDA(cudaMemsetAsync(res, 0x5a, count * es, s));
        CK_CUDA(cudaGraphLaunch(ge, s));
        CK_CUDA(cudaMemcpyAsync(host_out, res, count * es, cudaMemcpyDeviceToHost, s));
        CK_CUDA(cudaStreamSynchronize(s));
        snprintf(name, sizeof(name), "%s, graph replay %d", what, replay);
        o_check(rank, nranks, algo, name, dt, op, 0, count, host_out);
    }
    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
}

static void o_body(int rank, int nranks, void *arg)
{
    const char *algo = arg;
    size_t max_bytes = O_MAX * 8;
    char *host_in = malloc(max_bytes), *host_out = malloc(max_bytes);
    void *plain_in = NULL, *plain_out = NULL, *pool_in = NULL, *pool_out = NULL;
    symcoll_comm_h comm;
    cudaStream_t s;

    gpu_set_device(rank);
    setenv("SYMCOLL_ALGO", algo, 1);
    setenv("SYMCOLL_CUDA_LL_MAX", "8K", 1);
    setenv("SYMCOLL_CUDA_ONESHOT_MAX", "256K", 1);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc(&plain_in, max_bytes));
    CK_CUDA(cudaMalloc(&plain_out, max_bytes));
    CK_SC(symcoll_mem_alloc(comm, max_bytes, SYMCOLL_MEM_CUDA, &pool_in));
    CK_SC(symcoll_mem_alloc(comm, max_bytes, SYMCOLL_MEM_CUDA, &pool_out));
    ck_assert(host_in && host_out);
    /* ORDER_CUDA_TYPES=2: float32 and float64 only (the auto order across nodes) */
    size_t ntypes = getenv("ORDER_CUDA_TYPES") ? 2 : sizeof(o_dtypes) / sizeof(o_dtypes[0]);
    for (size_t di = 0; di < ntypes; di++)
        for (size_t oi = 0; oi < sizeof(o_ops) / sizeof(o_ops[0]); oi++) {
            symcoll_dtype_t dt = o_dtypes[di];
            symcoll_op_t op = o_ops[oi];
            size_t es = symcoll_dtype_size(dt);
            for (size_t si = 0; si < O_NSIZES; si++)
                for (int place = 0; place < 4; place++) {
                    static const char *const names[4] = {"plain", "plain in place", "pool",
                                                         "pool in place"};
                    size_t count = o_sizes[si];
                    char *in = place < 2 ? plain_in : pool_in;
                    char *res = place % 2 ? in : (place < 2 ? plain_out : pool_out);
                    for (size_t k = 0; k < count; k++)
                        order_store(dt, host_in, k, order_input(dt, op, rank, k));
                    /* all on s: a cudaMemcpy from pageable memory may return before its
                     * DMA lands, and s does not wait for the legacy stream */
                    CK_CUDA(
                        cudaMemcpyAsync(in, host_in, count * es, cudaMemcpyHostToDevice, s));
                    CK_SC(symcoll_allreduce(in, res, count, dt, op, comm, s));
                    CK_CUDA(
                        cudaMemcpyAsync(host_out, res, count * es, cudaMemcpyDeviceToHost, s));
                    CK_CUDA(cudaStreamSynchronize(s));
                    o_check(rank, nranks, algo, names[place], dt, op, 0, count, host_out);
                    if (o_graph && place % 2 == 0)
                        o_graph_check(comm, s, rank, nranks, algo, names[place], dt, op, in,
                                      res, count, host_out);
                    /* the hash of the first O_HASHED elements: test_order's largest call,
                     * whose hash it prints (element k does not depend on the size) */
                    if (rank == 0 && si == O_NSIZES - 1 && place == 0)
                        printf("order hash: %d ranks, CUDA %s: %s %s %016llx\n", nranks, algo,
                               symcoll_dtype_name(dt), symcoll_op_name(op),
                               (unsigned long long)order_fnv(host_out, O_HASHED * es));
                }
            for (size_t k = 0; k < (size_t)nranks * O_RS_BLOCK; k++)
                order_store(dt, host_in, k, order_input(dt, op, rank, k));
            CK_CUDA(cudaMemcpyAsync(pool_in, host_in, (size_t)nranks * O_RS_BLOCK * es,
                                    cudaMemcpyHostToDevice, s));
            CK_SC(symcoll_reduce_scatter(pool_in, pool_out, O_RS_BLOCK, dt, op, comm, s));
            CK_CUDA(cudaMemcpyAsync(host_out, pool_out, O_RS_BLOCK * es, cudaMemcpyDeviceToHost,
                                    s));
            CK_CUDA(cudaStreamSynchronize(s));
            o_check(rank, nranks, algo, "reduce-scatter", dt, op, (size_t)rank * O_RS_BLOCK,
                    O_RS_BLOCK, host_out);
        }
    fflush(stdout);
    CK_SC(symcoll_mem_free(comm, pool_in));
    CK_SC(symcoll_mem_free(comm, pool_out));
    CK_CUDA(cudaFree(plain_in));
    CK_CUDA(cudaFree(plain_out));
    CK_CUDA(cudaStreamDestroy(s));
    CK_SC(symcoll_comm_destroy(comm));
    free(host_in);
    free(host_out);
}

START_TEST(t_order)
{
    static const char *const algos[] = {"auto", "oneshot", "twoshot"};
    o_graph = 1;
    for (int n = 2; n <= 5; n++)
        for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++)
            ck_assert_msg(harness_run(n, 1, 300, o_body, (void *)algos[a]) == 0,
                          "%d ranks, CUDA %s", n, algos[a]);
}
END_TEST

/* Across 2 simulated nodes (test_cuda_net): the staged path, its chunks' host algorithms
 * chosen and forced, and the hierarchical one over the GPUs (2 x 2); 32 and 64-bit floats
 * keep the canonical bits in the default order (auto), 16-bit ones in canonical
 * (SYMCOLL_REDUCTION_ORDER=canonical, set by the case). */
START_TEST(t_net_order)
{
    static const char *const algos[] = {"auto", "rd", "rhd"};
    setenv("SYMCOLL_REDUCTION_ORDER", "canonical", 1);
    for (int n = 2; n <= 5; n++)
        for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++)
            ck_assert_msg(harness_run(n, 2, 300, o_body, (void *)algos[a]) == 0,
                          "%d ranks on 2 nodes, CUDA %s", n, algos[a]);
    /* auto with the hierarchical algorithm over the GPUs of each node (2 x 2) */
    setenv("SYMCOLL_REDUCTION_ORDER", "auto", 1);
    setenv("ORDER_CUDA_TYPES", "2", 1);
    ck_assert_msg(harness_run(4, 2, 300, o_body, (void *)"hier") == 0, "2 x 2, CUDA hier");
    unsetenv("ORDER_CUDA_TYPES");
    unsetenv("SYMCOLL_REDUCTION_ORDER");
}
END_TEST

void cuda_order_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"order", t_order, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}

void cuda_net_order_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"net_order", t_net_order, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
