/* CUDA memory across nodes, the family's entry as the algorithm layer's dispatch sees
 * it: set-up, the probe of the direct path, the call, draining and teardown. */
#ifndef SYMCOLL_ALGO_CUDA_NET_H
#define SYMCOLL_ALGO_CUDA_NET_H

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"

/* Sets up CUDA memory across nodes before a call runs (comm->lock held): the engine on
 * the first call, and its host staging and channels (threads, each with a UCX channel of its
 * own that connects to its peers: collective) on the first call and the first after a
 * trim. A failure breaks the communicator. */
symcoll_status_t algo_cuda_net_prepare(comm_t *comm, pool_t *host_pool);

/* The same for the direct path (TOPO_FAMILY_NET_CUDA_DIRECT): also its probe if it has
 * not run, and its buffers. Where the probe failed (or found the path unusable: topo_shape_t's
 * net_direct_one_queue) the call runs staged (auto), or fails with SYMCOLL_ERR_UNSUPPORTED
 * (SYMCOLL_CUDA_NET_PATH=direct); either way the later calls are planned staged. */
symcoll_status_t algo_cuda_net_prepare_direct(comm_t *comm, pool_t *host_pool,
                                              pool_t *cuda_pool);

/* The probe of the direct path (collective, when the CUDA pool is created across nodes
 * with a UCX that reaches CUDA memory on every rank, and the host pool exists): one put
 * from every rank into every peer's CUDA pool, bounded in time; the result goes to the
 * topology (symcoll_info -t, the selector). Fails only where the ranks cannot agree. */
symcoll_status_t algo_cuda_net_probe(comm_t *comm, pool_t *host_pool, pool_t *cuda_pool);

/* Staged through pinned host memory of host_pool by channels of progress threads, ordered
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

/* Drains, then frees the direct path's scratch in the CUDA pool (its trim). */
void algo_cuda_net_release_direct(comm_t *comm);

/* Drains, stops the channels and frees everything (communicator destroy). */
void algo_cuda_net_destroy(comm_t *comm);

/* symcoll_comm_abort (any thread): queued operations fail, and every channel, busy or idle,
 * tells the peers' matching channels, so that their waits end now. */
void algo_cuda_net_abort(comm_t *comm);

#endif
