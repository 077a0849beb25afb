/* All-reduce entry of the algorithm layer, called by core/api.c after the argument
 * checks: picks the memory type and the algorithm and runs it over the pool. */
#ifndef SYMCOLL_ALGO_H
#define SYMCOLL_ALGO_H

#include "core/core.h"
#include "pool/pool.h"

/* Memory type of a call's buffers. Without the CUDA layer every pointer is host memory;
 * the CUDA layer (issue 4) provides cuda_ptr_is_device() (cudaPointerGetAttributes). */
symcoll_status_t algo_mem_type(const void *sendbuf, const void *recvbuf,
                               symcoll_mem_type_t *mem_type_p);

/* The all-reduce (count > 0, arguments checked). pool is the pool of mem_type (the host
 * pool for CUDA memory across nodes, which is staged there), or NULL for a single-rank
 * communicator. Called with comm->lock held. */
symcoll_status_t algo_allreduce(comm_t *comm, pool_t *pool, symcoll_mem_type_t mem_type,
                                const void *sendbuf, void *recvbuf, size_t count,
                                symcoll_dtype_t dtype, symcoll_op_t op, void *stream);

/* Releases what the algorithms keep in the pool (staging space) so that pool_trim can
 * unmap it; it comes back on the next all-reduce. Collective, like pool_trim. */
void algo_pool_release(pool_t *pool);

/* Waits until the CUDA all-reduces across nodes queued on comm finished, and returns the
 * status of the first that failed. Called by every entry point (comm->lock held) that
 * reaches the other ranks, except those all-reduces themselves. */
symcoll_status_t algo_quiesce(comm_t *comm);

/* Whether an all-reduce of bytes of CUDA memory across nodes also needs the CUDA pool
 * (the hierarchical algorithm over each node's GPUs); it always needs the host pool. */
bool algo_cuda_across_uses_pool(const comm_t *comm, size_t bytes);

/* Stops what runs in the background for comm (before its pools and UCX go). */
void algo_comm_release(comm_t *comm);

/* Tells the local peers through the signal pad that this rank gave up (abort), so that
 * their waits end now rather than at their deadline. */
void algo_pool_abort(pool_t *pool);

#endif
