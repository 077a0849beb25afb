/* The reduction of CUDA memory across nodes on the direct path
 * (algo/cuda_net/cuda_net_direct_stream.c): one kernel that reduces, element by element in rank
 * order, the sources the peers put into this rank's CUDA pool with UCX, plus this rank's own
 * input, into the result. Plain C, shared by the glue and the CUDA source. */
#ifndef SYMCOLL_CUDA_NET_DIRECT_H
#define SYMCOLL_CUDA_NET_DIRECT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most sources of one reduction: the ranks of a communicator the direct path serves. */
#define CUDA_NET_REDUCE_MAX 16

typedef struct cuda_net_reduce_args {
    void *dst;                            /* count elements; may be one of the sources */
    const void *src[CUDA_NET_REDUCE_MAX]; /* in rank order (of the group that reduces):
                                             every rank sums alike */
    int nsrc;                             /* 2 .. CUDA_NET_REDUCE_MAX */
    size_t count;
    int dtype;   /* symcoll_dtype_t */
    int op;      /* symcoll_op_t */
    int divisor; /* of avg: the communicator's size (more than nsrc when hierarchical) */
} cuda_net_reduce_args_t;

/* Queues the reduction on stream (cudaStream_t); returns a cudaError_t. */
int cuda_net_reduce_launch(const cuda_net_reduce_args_t *args, void *stream);

/* Queues on stream a wait until the host-mapped word (its device address) reaches value
 * (32-bit wrap-safe), as a kernel of one thread rather than cuStreamWaitValue32: where a
 * GPU serves several ranks, a stream blocked in a wait-value command kept the copies that
 * UCX queues from the same process on that GPU from running while another rank's kernel
 * ran there (one H200 shared by 4 ranks). Ends when the word gets there,
 * or when node_word (device address of a host-mapped word, or NULL) is raised: a rank of
 * the node gave up. Returns a cudaError_t. */
int cuda_net_wait_launch(const void *word, unsigned value, const void *node_word, void *stream);

/* Loads every kernel of this file (the wait too) into the current context
 * (cuda_kernels_load); returns a cudaError_t. */
int cuda_net_reduce_preload(void);

#ifdef __cplusplus
}
#endif

#endif
