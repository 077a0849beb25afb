/* CUDA all-reduce of the algorithm layer: one-shot and two-shot kernels over the CUDA
 * pool's peer mappings (src/cuda/allreduce.cu), ordered on the caller's stream. */
#ifndef SYMCOLL_ALGO_CUDA_H
#define SYMCOLL_ALGO_CUDA_H

#include "core/core.h"
#include "pool/pool.h"

/* All-reduce of CUDA memory (count > 0, arguments checked). pool is the CUDA pool, NULL
 * for a single-rank communicator. Called with comm->lock held. */
symcoll_status_t algo_cuda_allreduce(comm_t *comm, pool_t *pool, const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op, void *stream);

/* Frees the staging space (after the device finished with it), for pool_trim. */
void algo_cuda_release(pool_t *pool);

#endif
