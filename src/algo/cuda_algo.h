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

/* ---- CUDA memory across nodes (cuda_net.c) --------------------------------------------
 * Staged through pinned host memory of host_pool by lanes of progress threads, ordered
 * on stream; returns once the operation is queued. Called with comm->lock held. */
symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, pool_t *host_pool, const void *sendbuf,
                                         void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                         symcoll_op_t op, void *stream);

/* Waits until every queued operation finished (bounded by the communicator's timeout);
 * returns the status of the first that failed, if any. Every entry point that reaches
 * the other ranks by another way calls it first, so that only one thread talks to them. */
symcoll_status_t algo_cuda_net_drain(comm_t *comm);

/* Drains, then frees the host staging (pool trim). */
void algo_cuda_net_release(comm_t *comm);

/* Drains, stops the lanes and frees everything (communicator destroy). */
void algo_cuda_net_destroy(comm_t *comm);

/* symcoll_comm_abort (any thread): queued operations fail, and every lane, busy or idle,
 * tells the peers' matching lanes, so that their waits end now. */
void algo_cuda_net_abort(comm_t *comm);

#endif
