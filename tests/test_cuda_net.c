/* GPU tests of CUDA memory across simulated nodes (UCX over TCP): stream order, pool
 * growth, 2 nodes x 2 ranks (hierarchical over each node's GPUs, and flat), a killed,
 * aborted or absent peer, ranks calling with different arguments, capture refused, host
 * calls between queued GPU calls; reduce-scatter, all-gather, broadcast and the stream
 * barrier, staged and hierarchical; the direct path (net_direct_*: a UCX with CUDA), flat
 * and as the hierarchical algorithm's inter-node step (net_direct_hier_*). Exit 77
 * without GPUs. Every case carries the Check tag "net" (CK_INCLUDE_TAGS=net). This file
 * holds stream order (capture refused, host calls between queued GPU calls), the
 * collectives besides all-reduce, the suite and main; tests/cuda_net_case_*.c the other
 * topics. */
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
void body_net_mixed(int rank, int nranks, void *arg)
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
void body_net_coll(int rank, int nranks, void *arg)
{
    net_rank_t r;
    const int *quick = arg;

    net_setup(&r, rank, 1, 1 << 20);
    (void)gpu_coll_sweep(r.comm, rank, nranks, r.s, 1, *quick, 40000, "across nodes");
    CK_CUDA(cudaStreamSynchronize(r.s));
    net_teardown(&r, 1);
}

const int net_coll_full = 0, net_coll_quick = 1;

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

static Suite *cuda_net_suite(int ngpus)
{
    /* one case per test, so that CK_RUN_CASE=net_mixed (say) runs one of them */
    const gpu_case_t first[] = {
        {"net_capture", t_net_capture_2x1, 1},
        {"net_mixed", t_net_mixed_2x1, 1},
    };
    const gpu_case_t coll[] = {
        {"net_coll", t_net_coll_3x2, 1},
        {"net_coll_hier", t_net_coll_hier_2x2, 1},
        {"net_barrier", t_net_barrier_3x2, 1},
    };
    Suite *su = suite_create("cuda_net");

    gpu_add_cases(su, first, sizeof(first) / sizeof(first[0]), ngpus, "net");
    cuda_net_faults_cases(su, ngpus);
    cuda_net_staged_cases(su, ngpus);
    cuda_net_order_cases(su, ngpus);
    gpu_add_cases(su, coll, sizeof(coll) / sizeof(coll[0]), ngpus, "net");
    cuda_net_direct_cases(su, ngpus);
    return su;
}

int main(void)
{
    return gpu_tests_main(cuda_net_suite, 2);
}
