/* The algorithm layer's entry, used by src/api: the context of a communicator, the
 * checks of a call that depend on its memory, and one table from the selector's plan to
 * the function that runs it. */
#ifndef SYMCOLL_ALGO_H
#define SYMCOLL_ALGO_H

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"

/* Creates comm->algo (after the topology probe and UCX); nothing collective. */
symcoll_status_t algo_comm_init(comm_t *comm);

/* Stops what runs in the background for comm and frees comm->algo; first in teardown,
 * before the pools and UCX go. NULL comm->algo is ignored. */
void algo_comm_release(comm_t *comm);

/* Memory type of a call's buffers (CUDA when the CUDA layer is built and the driver
 * says so; host otherwise); mixed types are an invalid argument. */
symcoll_status_t algo_mem_type(const void *sendbuf, const void *recvbuf,
                               symcoll_mem_type_t *mem_type_p);

/* Checks of an all-reduce that depend on its plan (CUDA: buffers aligned to the element
 * size; no stream capture across nodes, nor while a pool the call needs is missing,
 * since creating it is a rendezvous). pools_missing: some pool the plan needs is not
 * created yet. No side effect. */
symcoll_status_t algo_check_call(const comm_t *comm, const topo_plan_t *plan,
                                 const void *sendbuf, const void *recvbuf,
                                 symcoll_dtype_t dtype, void *stream, bool pools_missing);

/* The pools (bit 1 << memory type) that a family's calls use. */
unsigned algo_family_pools(topo_family_t family);

/* Whether a family's calls run behind the queued CUDA all-reduces across nodes (their
 * own family) or must wait for them first (every other call that reaches the peers). */
bool algo_family_queued(topo_family_t family);

/* Sets up the algorithms' state on a pool just created (collective, like pool_create:
 * the inter-node flags are allocated and zeroed here; the CUDA kernels' grid is agreed),
 * so that calls find it. A failure breaks the communicator (algo_check_usable). */
symcoll_status_t algo_pool_attach(comm_t *comm, pool_t *pool);

/* Runs one all-reduce by its plan (count > 0, arguments checked, pools of
 * algo_family_pools(plan->family) in pools[], comm->lock held). */
symcoll_status_t algo_allreduce(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const void *sendbuf,
                                void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                symcoll_op_t op, void *stream);

/* Bytes of the all-reduce whose plan serves a call (the selector plans all-reduces): the
 * whole buffer of n blocks for reduce-scatter and all-gather, which a call that does not
 * run natively reduces as a whole (algo_collective); 1 for the barrier. */
size_t algo_plan_bytes(const comm_t *comm, const algo_args_t *a);

/* Runs one reduce-scatter, all-gather, broadcast or barrier by the plan of
 * algo_plan_bytes (count > 0 or a barrier, arguments checked, pools of the plan's family
 * in pools[], comm->lock held). Host memory inside a node runs native algorithms over
 * the host pool (host_coll.c); host memory across nodes runs native rings and chains
 * over UCX (net_coll.c) where the plan is the ring or hierarchical above recursive
 * doubling's sizes. Every other case runs as one all-reduce of the plan (a broadcast or
 * an all-gather as the bytewise maximum of the root's or each rank's bytes and zeros,
 * which is exact; a reduce-scatter as the whole reduction, of which each rank keeps its
 * block). */
symcoll_status_t algo_collective(comm_t *comm, const topo_plan_t *plan,
                                 pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a);

/* Releases what the algorithms keep in the pool (staging space) so that pool_trim can
 * unmap it; it comes back on the next all-reduce. Collective, like pool_trim. */
void algo_pool_release(comm_t *comm, pool_t *pool);

/* Waits until the CUDA all-reduces across nodes queued on comm finished, and returns the
 * status of the first that failed. Called (comm->lock held) by every entry point that
 * reaches the other ranks, except those all-reduces themselves. */
symcoll_status_t algo_quiesce(comm_t *comm);

/* symcoll_comm_abort (any thread): wakes what runs in the background so that it tells
 * the peers. */
void algo_comm_abort(comm_t *comm);

/* The communicator was aborted: tells the local peers (signal pad) and the remote ones
 * (UCX) that this rank gave up, so that their waits end now rather than at their
 * deadline, and refuses further calls. */
void algo_pool_abort(comm_t *comm, pool_t *pool);

#endif
