/* What the GPU test programs share: device buffers filled and checked with the inputs
 * and reference of tools/refcheck.c, and main's GPU count and skip (cuda_testlib.h). */
#define _GNU_SOURCE
#include "cuda_testlib.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void gpu_set_device(int rank)
{
    int n = 0;
    CK_CUDA(cudaGetDeviceCount(&n));
    CK_CUDA(cudaSetDevice(rank % n));
}

/* symcoll's avg rule (no REFCHECK_AVG_EXACT): integer averages truncate, float ones
 * keep their fractions, and the tests check that the library does so */
static refcheck_spec_t gpu_spec(symcoll_dtype_t t, symcoll_op_t op, int nranks, int salt)
{
    refcheck_spec_t spec = {t, op, nranks, (uint64_t)salt, 0};
    return spec;
}

void gpu_host_fill(void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
                   int nranks, int salt)
{
    refcheck_spec_t spec = gpu_spec(t, op, nranks, salt);
    refcheck_fill(&spec, rank, buf, count);
}

void gpu_host_verify(const void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                     int nranks, int salt, const char *what)
{
    refcheck_spec_t spec = gpu_spec(t, op, nranks, salt);
    size_t first = 0, wrong = refcheck_compare(&spec, buf, count, &first);

    if (wrong)
        harness_fail("%s: %s %s count %zu: element %zu is %g, expected %g (%zu wrong)", what,
                     symcoll_dtype_name(t), symcoll_op_name(op), count, first,
                     refcheck_load(buf, first, t), refcheck_expected(&spec, first), wrong);
}

int gpu_poison(symcoll_dtype_t t)
{
    return t == SYMCOLL_INT8    ? REFCHECK_POISON_INT8
           : t == SYMCOLL_UINT8 ? REFCHECK_POISON_UINT8
                                : GPU_POISON;
}

void gpu_fill(void *dev, void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
              int nranks, int salt, void *host, cudaStream_t s)
{
    size_t bytes = count * refcheck_dtype_size(t);

    gpu_host_fill(host, count, t, op, rank, nranks, salt);
    CK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    if (out && out != dev)
        CK_CUDA(cudaMemsetAsync(out, gpu_poison(t), bytes, s));
}

void gpu_verify(const void *dev, size_t count, symcoll_dtype_t t, symcoll_op_t op, int nranks,
                int salt, void *host, cudaStream_t s, const char *what)
{
    CK_CUDA(
        cudaMemcpyAsync(host, dev, count * refcheck_dtype_size(t), cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    gpu_host_verify(host, count, t, op, nranks, salt, what);
}

static void body_nogpu(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    double x = 1.0 + rank, y = 0;
    void *p = NULL;
    symcoll_status_t s = symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_CUDA, &p);

    if (s != SYMCOLL_ERR_UNSUPPORTED || p)
        harness_fail("symcoll_mem_alloc(CUDA) without a GPU returned %s, expected %s",
                     symcoll_status_string(s), symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
    CK_SC(symcoll_allreduce(&x, &y, 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL));
    if (y != nranks * (nranks + 1) / 2.0)
        harness_fail("host all-reduce after a refused CUDA request: %g", y);
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

static int count_gpus(void)
{
    int fds[2], n = 0;
    pid_t pid;
    if (pipe(fds))
        return 0;
    pid = fork();
    if (pid == 0) {
        int c = 0;
        if (cudaGetDeviceCount(&c) != cudaSuccess)
            c = 0;
        if (write(fds[1], &c, sizeof(c)) != sizeof(c))
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    if (pid < 0 || read(fds[0], &n, sizeof(n)) != sizeof(n))
        n = 0;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return n;
}

int gpu_tests_main(Suite *(*make_suite)(int ngpus), int nogpu_nnodes)
{
    int ngpus;

    /* (Not UCX_WARN_UNUSED_ENV_VARS: libucs reads it when it loads, before main, and then
     * warns that the variable set here went unused.) */
    setenv("UCX_TLS", "tcp,self", 0);
    ngpus = count_gpus();
    if (ngpus < 1) {
        if (harness_run(2, nogpu_nnodes, 120, body_nogpu, NULL)) {
            printf("no CUDA device: CUDA requests were not refused cleanly (%d simulated "
                   "node(s))\n",
                   nogpu_nnodes);
            return 1;
        }
        printf("no CUDA device: CUDA memory refused with SYMCOLL_ERR_UNSUPPORTED, host "
               "all-reduce works (%d simulated node(s)); GPU tests skipped\n",
               nogpu_nnodes);
        return 77;
    }
    printf("%d CUDA device(s)\n", ngpus);
    return harness_main(make_suite(ngpus));
}
