/* test_cuda's cases of allocation during CUDA stream capture: after symcoll_pool_reserve,
 * symcoll_mem_alloc and symcoll_mem_free inside a capture of each mode (no exchange, no
 * CUDA call), the captured all-reduce on those buffers replayed with new inputs and
 * exact; growth inside a global-mode capture either refused with SYMCOLL_ERR_IN_PROGRESS
 * and nothing changed or, where the driver allows it, done with the capture intact;
 * ranks that allocated different sizes without an exchange told SYMCOLL_ERR_MISMATCH by
 * their next collective call, every rank, bounded. */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "symcoll.h"

#define CA_COUNT ((size_t)(1 << 20) + 3) /* floats a buffer: 4 MiB and a bit */
#define CA_BYTES (CA_COUNT * 4)

static symcoll_pool_attr_t ca_query(symcoll_comm_h comm)
{
    symcoll_pool_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = SYMCOLL_POOL_ATTR_FIELD_MAPPED | SYMCOLL_POOL_ATTR_FIELD_IN_USE |
                   SYMCOLL_POOL_ATTR_FIELD_GROWTHS;
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &a));
    return a;
}

static void body_capture_alloc(int rank, int nranks, void *arg)
{
    static const enum cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal,
                                                       cudaStreamCaptureModeThreadLocal,
                                                       cudaStreamCaptureModeRelaxed};
    static const char *const names[] = {"global", "thread-local", "relaxed"};
    symcoll_comm_h comm;
    symcoll_pool_attr_t a0, a1;
    cudaStream_t s;
    void *warm_in, *warm_out, *in = NULL, *out = NULL, *host;
    int salt = 71000;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host = malloc(CA_BYTES);
    /* the room the captures allocate from, and a warm-up of the captured call's shape on
     * pool buffers (the staging it needs exists before any capture) */
    CK_SC(symcoll_mem_alloc(comm, CA_BYTES, SYMCOLL_MEM_CUDA, &warm_in));
    CK_SC(symcoll_mem_alloc(comm, CA_BYTES, SYMCOLL_MEM_CUDA, &warm_out));
    gpu_fill(warm_in, warm_out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++salt,
             host, s);
    CK_SC(
        symcoll_allreduce(warm_in, warm_out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    gpu_verify(warm_out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
               "warm-up");
    CK_SC(symcoll_pool_reserve(comm, 2 * CA_BYTES + 4096, SYMCOLL_MEM_CUDA));
    CK_CUDA(cudaStreamSynchronize(s));
    a0 = ca_query(comm);

    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        void *was_in = in;

        CK_CUDA(cudaStreamBeginCapture(s, modes[m]));
        /* the previous mode's buffers go back inside this capture, and the new ones take
         * their place: every rank derives the same offsets from the same calls */
        if (in) {
            CK_SC(symcoll_mem_free(comm, in));
            CK_SC(symcoll_mem_free(comm, out));
        }
        CK_SC(symcoll_mem_alloc(comm, CA_BYTES, SYMCOLL_MEM_CUDA, &in));
        CK_SC(symcoll_mem_alloc(comm, CA_BYTES, SYMCOLL_MEM_CUDA, &out));
        CK_SC(symcoll_allreduce(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        CK_CUDA(cudaStreamEndCapture(s, &g));
        if (was_in && in != was_in)
            harness_fail("%s capture: the freed range was not reused (%p, then %p)", names[m],
                         was_in, in);
        CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
        for (int it = 0; it < 5; it++) {
            gpu_fill(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++salt,
                     host, s);
            CK_CUDA(cudaGraphLaunch(ge, s));
            gpu_verify(out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
                       names[m]);
        }
        CK_CUDA(cudaStreamSynchronize(s));
        CK_CUDA(cudaGraphExecDestroy(ge));
        CK_CUDA(cudaGraphDestroy(g));
        a1 = ca_query(comm);
        if (a1.growths != a0.growths || a1.mapped != a0.mapped)
            harness_fail("%s capture: the pool grew (growths %llu -> %llu)", names[m],
                         (unsigned long long)a0.growths, (unsigned long long)a1.growths);
        /* an eager call on them after the capture: the allocations were compared */
        gpu_fill(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++salt, host,
                 s);
        CK_SC(symcoll_allreduce(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        gpu_verify(out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
                   "eager after a capture");
    }

    /* growth inside a global-mode capture: where the driver refuses cuMemCreate then, the
     * call fails on every rank with nothing changed; where it allows it (CUDA 13 on the
     * H100 does), the pool grows and the capture stays valid */
    {
        size_t big = (size_t)a0.mapped + (64 << 20);
        void *p = NULL;
        symcoll_status_t st;
        cudaGraph_t g = NULL;
        cudaError_t end;

        a0 = ca_query(comm);
        CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        st = symcoll_mem_alloc(comm, big, SYMCOLL_MEM_CUDA, &p);
        end = cudaStreamEndCapture(s, &g);
        (void)cudaGetLastError();
        if (g)
            cudaGraphDestroy(g);
        a1 = ca_query(comm);
        if (st == SYMCOLL_ERR_IN_PROGRESS) {
            if (p || a1.growths != a0.growths || a1.mapped != a0.mapped ||
                a1.in_use != a0.in_use)
                harness_fail("refused growth in a capture changed the pool");
            CK_SC(symcoll_mem_alloc(comm, big, SYMCOLL_MEM_CUDA, &p));
        } else if (st == SYMCOLL_OK) {
            if (end != cudaSuccess)
                harness_fail("growth inside a global capture broke the capture: %s",
                             cudaGetErrorString(end));
            if (a1.growths != a0.growths + 1)
                harness_fail("growth inside a global capture: growths %llu -> %llu",
                             (unsigned long long)a0.growths, (unsigned long long)a1.growths);
        } else {
            harness_fail("growth inside a global capture: %s", symcoll_status_string(st));
        }
        if (rank == 0)
            printf("growth inside a global capture: %s\n", symcoll_status_string(st));
        /* the grown buffer works */
        gpu_fill(p, p, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++salt, host, s);
        CK_SC(symcoll_allreduce(p, p, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        gpu_verify(p, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
                   "the buffer a growth made");
        CK_SC(symcoll_mem_free(comm, p));
    }

    /* what an allocation costs without the exchange (CUDA, fitting) and with it (host),
     * printed for the performance page: 200 pairs of 4 KiB each */
    {
        void *p;
        double t0, t_cuda, t_host;

        CK_SC(symcoll_mem_alloc(comm, 4096, SYMCOLL_MEM_HOST, &p)); /* the host pool */
        CK_SC(symcoll_mem_free(comm, p));
        t0 = mono_sec();
        for (int k = 0; k < 200; k++) {
            CK_SC(symcoll_mem_alloc(comm, 4096, SYMCOLL_MEM_CUDA, &p));
            CK_SC(symcoll_mem_free(comm, p));
        }
        t_cuda = (mono_sec() - t0) / 200;
        t0 = mono_sec();
        for (int k = 0; k < 200; k++) {
            CK_SC(symcoll_mem_alloc(comm, 4096, SYMCOLL_MEM_HOST, &p));
            CK_SC(symcoll_mem_free(comm, p));
        }
        t_host = (mono_sec() - t0) / 200;
        /* the CUDA allocations are compared here, in one exchange */
        CK_SC(symcoll_allreduce(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        if (rank == 0)
            printf("alloc+free of 4 KiB: CUDA without an exchange %.2f us, host with its "
                   "exchange %.2f us (mean of 200)\n",
                   t_cuda * 1e6, t_host * 1e6);
    }

    /* different sizes, both fitting: no exchange at the allocation, MISMATCH at the next
     * collective call, on every rank, well before the timeout */
    {
        void *p;
        double t0;
        symcoll_status_t st;

        CK_SC(symcoll_mem_alloc(comm, rank == 0 ? 4096 : 8192, SYMCOLL_MEM_CUDA, &p));
        t0 = mono_sec();
        st = symcoll_allreduce(in, out, CA_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        if (st != SYMCOLL_ERR_MISMATCH)
            harness_fail("allocations of different sizes: the next all-reduce returned %s, "
                         "expected %s",
                         symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_MISMATCH));
        if (mono_sec() - t0 > 5.0)
            harness_fail("the mismatch took %.1f s to tell", mono_sec() - t0);
    }
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    CK_CUDA(cudaStreamDestroy(s));
    free(host);
    (void)arg;
}

START_TEST(t_capture_alloc_2ranks)
{
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    ck_assert_int_eq(harness_run(2, 1, 300, body_capture_alloc, NULL), 0);
}
END_TEST

void cuda_capture_alloc_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {{"capture_alloc", t_capture_alloc_2ranks, 1}};
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
