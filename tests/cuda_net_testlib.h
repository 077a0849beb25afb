/* The stream-order harness of the GPU tests across simulated nodes
 * (test_cuda_net): per-rank setup, calls queued between stream work that
 * writes their input late and overwrites it early, their checks, bounded waits. */
#ifndef SYMCOLL_TESTS_CUDA_NET_TESTLIB_H
#define SYMCOLL_TESTS_CUDA_NET_TESTLIB_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "symcoll.h"

/* Ranks on different simulated nodes reach each other only through UCX (TCP here), so
 * GPU buffers are staged through host memory or reached by rkeys; the call returns once
 * queued and the stream waits for the result. Every call net_enqueue queues sits
 * between earlier stream work that writes its input behind a delay and later stream
 * work that overwrites it: a call that runs ahead of its stream reads poison, one that
 * finishes behind it leaves the copy taken after it wrong. */

#define NET_BIG ((size_t)16 << 20) /* bytes: the large size of the cases */
#define NET_SLACK 256              /* bytes past every buffer: odd counts and the guard */
#define NET_GUARD 64               /* bytes after every result that must stay untouched */
#define NET_MAX_BUFS 6

/* seconds on CLOCK_MONOTONIC */
double now_sec(void);

/* A wait that never returns ends the rank with its name instead of the harness timeout:
 * net_watch arms SIGALRM for @a sec seconds (alarm(0) disarms it). */
void net_watch(const char *what, unsigned sec);

/* SYMCOLL_TIMEOUT for the communicators created after it */
void net_set_timeout(int sec);

/* malloc, or the end of the rank */
void *net_host(size_t bytes);

/* What a cross-node body works with: its GPU (rank % GPUs), the communicator, a
 * non-blocking stream, nbuf device buffers and one host buffer of bytes + NET_SLACK. */
typedef struct {
    symcoll_comm_h comm;
    cudaStream_t s;
    void *d[NET_MAX_BUFS];
    int nbuf;
    void *host;
} net_rank_t;

void net_setup(net_rank_t *r, int rank, int nbuf, size_t bytes);

/* destroy: 0 where the body destroyed the communicator itself */
void net_teardown(net_rank_t *r, int destroy);

/* in: the call's input; out: its output (in for in place); copy: the input's values
 * before the call, the output's right after it */
typedef struct {
    void *in, *out, *copy;
} net_bufs_t;

/* Queues one all-reduce of rank @a rank's inputs for @a salt on @a s (NULL: the legacy
 * default stream) between the stream work described above, and a guard after the
 * output. */
void net_enqueue(symcoll_comm_h comm, const net_bufs_t *b, size_t count, symcoll_dtype_t t,
                 symcoll_op_t op, int rank, int nranks, int salt, void *host, cudaStream_t s);

/* Checks what net_enqueue queued: the copy taken right after the call holds the
 * reference, and the guard after the output is untouched. */
void net_check(const net_bufs_t *b, size_t count, symcoll_dtype_t t, symcoll_op_t op,
               int nranks, int salt, void *host, cudaStream_t s, const char *what);

/* net_enqueue then net_check, on the body's stream */
void net_run(net_rank_t *r, void *in, void *out, void *copy, size_t count, symcoll_dtype_t t,
             symcoll_op_t op, int rank, int nranks, int salt, const char *what);

#endif
