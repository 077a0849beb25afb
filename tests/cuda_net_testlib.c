/* The stream-order harness of the GPU tests across simulated nodes
 * (cuda_net_testlib.h). */
#define _GNU_SOURCE
#include "cuda_net_testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_testlib.h"
#include "harness.h"

double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *net_waiting = ""; /* what net_watch waits for */

static void net_alarm(int sig)
{
    static const char m[] = "FAIL: this wait did not return in time: ";
    (void)sig;
    if (write(2, m, sizeof(m) - 1) < 0 || write(2, net_waiting, strlen(net_waiting)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(1);
    _exit(1);
}

void net_watch(const char *what, unsigned sec)
{
    net_waiting = what;
    signal(SIGALRM, net_alarm);
    alarm(sec);
}

static void CUDART_CB net_stream_delay(void *arg)
{
    (void)arg;
    usleep(20000);
}

void net_set_timeout(int sec)
{
    char buf[16];
    snprintf(buf, sizeof(buf), "%d", sec);
    setenv("SYMCOLL_TIMEOUT", buf, 1);
}

void *net_host(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p)
        harness_fail("out of host memory (%zu bytes)", bytes);
    return p;
}

void net_setup(net_rank_t *r, int rank, int nbuf, size_t bytes)
{
    gpu_set_device(rank);
    r->comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
    r->nbuf = nbuf;
    for (int i = 0; i < nbuf; i++)
        CK_CUDA(cudaMalloc(&r->d[i], bytes + NET_SLACK));
    r->host = net_host(bytes + NET_SLACK);
}

void net_teardown(net_rank_t *r, int destroy)
{
    if (destroy) {
        CK_CUDA(cudaStreamSynchronize(r->s));
        CK_SC(symcoll_comm_destroy(r->comm));
    }
    CK_CUDA(cudaStreamDestroy(r->s));
    for (int i = 0; i < r->nbuf; i++)
        CK_CUDA(cudaFree(r->d[i]));
    free(r->host);
}

void net_enqueue(symcoll_comm_h comm, const net_bufs_t *b, size_t count, symcoll_dtype_t t,
                 symcoll_op_t op, int rank, int nranks, int salt, void *host, cudaStream_t s)
{
    size_t bytes = count * symcoll_dtype_size(t);

    gpu_fill(b->copy, b->out, count, t, op, rank, nranks, salt, host, s);
    CK_CUDA(cudaMemsetAsync(b->in, 0x11, bytes, s));
    CK_CUDA(cudaMemsetAsync((char *)b->out + bytes, 0x5c, NET_GUARD, s));
    CK_CUDA(cudaLaunchHostFunc(s, net_stream_delay, NULL));
    CK_CUDA(cudaMemcpyAsync(b->in, b->copy, bytes, cudaMemcpyDeviceToDevice, s));
    CK_SC(symcoll_allreduce(b->in, b->out, count, t, op, comm, s));
    CK_CUDA(cudaMemcpyAsync(b->copy, b->out, bytes, cudaMemcpyDeviceToDevice, s));
    CK_CUDA(cudaMemsetAsync(b->in, 0x22, bytes, s));
}

void net_check(const net_bufs_t *b, size_t count, symcoll_dtype_t t, symcoll_op_t op,
               int nranks, int salt, void *host, cudaStream_t s, const char *what)
{
    size_t bytes = count * symcoll_dtype_size(t);
    unsigned char g[NET_GUARD];

    gpu_verify(b->copy, count, t, op, nranks, salt, host, s, what);
    CK_CUDA(cudaMemcpyAsync(g, (char *)b->out + bytes, NET_GUARD, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < NET_GUARD; i++)
        if (g[i] != 0x5c)
            harness_fail("%s: %s %s count %zu: byte %zu past the end of the output changed",
                         what, symcoll_dtype_name(t), symcoll_op_name(op), count, i);
}

void net_run(net_rank_t *r, void *in, void *out, void *copy, size_t count, symcoll_dtype_t t,
             symcoll_op_t op, int rank, int nranks, int salt, const char *what)
{
    net_bufs_t b = {in, out, copy};
    net_enqueue(r->comm, &b, count, t, op, rank, nranks, salt, r->host, r->s);
    net_check(&b, count, t, op, nranks, salt, r->host, r->s, what);
}
