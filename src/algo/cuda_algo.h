/* CUDA all-reduce of the algorithm layer: one-shot and two-shot kernels over the CUDA
 * pool's peer mappings (src/cuda/allreduce.cu), ordered on the caller's stream. */
#ifndef SYMCOLL_ALGO_CUDA_H
#define SYMCOLL_ALGO_CUDA_H

#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"

/* Sets up the kernels' state when the CUDA pool is created (collective: the ranks
 * agree on the grid from the node's smallest SM count). */
symcoll_status_t algo_cuda_attach(comm_t *comm, pool_t *pool);
void algo_cuda_free(comm_t *comm);

/* All-reduce of CUDA memory inside a node by algo (one-shot or two-shot: the plan's;
 * count > 0, arguments checked). pool is the CUDA pool. Called with comm->lock held.
 * Returns once the kernel is queued. The kernels compare every call's count, datatype,
 * operator and kernel across the ranks (cuda/sig.h) and stop, on every rank, when they
 * differ, when a local peer process is gone (a watcher thread raises the abort word),
 * on an abort or at the deadline; the call after that returns the reason
 * (SYMCOLL_ERR_MISMATCH, _PEER_FAILED, _ABORTED, _TIMED_OUT) and breaks the
 * communicator: kernels already queued behind the failed one may have run, so the
 * ranks' epochs can no longer be known to agree. */
symcoll_status_t algo_cuda_allreduce(comm_t *comm, pool_t *pool, topo_algo_t algo,
                                     const void *sendbuf, void *recvbuf, size_t count,
                                     symcoll_dtype_t dtype, symcoll_op_t op, void *stream);

/* One rank's all-reduce: the input copied to the result on stream (none in place). */
symcoll_status_t algo_cuda_copy(const void *sendbuf, void *recvbuf, size_t bytes, void *stream);

/* Hierarchical all-reduce of CUDA memory across nodes, the node's part over the CUDA
 * pool (the two halves of two-shot around the step across nodes, algo/cuda_net.c):
 * _rs queues the intra-node reduce-scatter on stream and returns this rank's slice of
 * the node's sum (in its staging; slice_count elements, possibly 0), _ag the
 * intra-node all-gather of every rank's slice into recvbuf. _ready: the staging already
 * holds a message of bytes (else _rs makes it grow: collective, and only while nothing
 * else uses the pool). node_word (device view of a host-mapped word, or NULL): the
 * kernels stop waiting once it is non-zero, and the next call fails with
 * SYMCOLL_ERR_PEER_FAILED. */
bool algo_cuda_hier_ready(pool_t *pool, size_t bytes);
symcoll_status_t algo_cuda_hier_rs(comm_t *comm, pool_t *pool, const void *sendbuf,
                                   size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                   const volatile uint32_t *node_word, void *stream,
                                   char **slice_p, size_t *slice_count_p);
symcoll_status_t algo_cuda_hier_ag(comm_t *comm, pool_t *pool, void *recvbuf, size_t count,
                                   symcoll_dtype_t dtype, const volatile uint32_t *node_word,
                                   void *stream);

/* Frees the staging space (after the device finished with it), for pool_trim. */
void algo_cuda_release(comm_t *comm, pool_t *pool);

/* Sets up CUDA memory across nodes before a call runs (comm->lock held): the engine on
 * the first call, and its host staging and lanes (threads, each with a UCX lane of its
 * own that connects to its peers: collective) on the first call and the first after a
 * trim. A failure breaks the communicator. */
symcoll_status_t algo_cuda_net_prepare(comm_t *comm, pool_t *host_pool);

/* ---- CUDA memory across nodes (cuda_net.c) --------------------------------------------
 * Staged through pinned host memory of host_pool by lanes of progress threads, ordered
 * on stream; returns once the operation is queued. Called with comm->lock held. */
symcoll_status_t algo_cuda_net_allreduce(comm_t *comm, const topo_plan_t *plan,
                                         pool_t *host_pool, pool_t *cuda_pool,
                                         const void *sendbuf, void *recvbuf, size_t count,
                                         symcoll_dtype_t dtype, symcoll_op_t op, void *stream);

/* Waits until every queued operation finished, the hierarchical ones' kernels included
 * (bounded by the communicator's timeout);
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
