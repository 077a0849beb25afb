/* The algorithm layer's entry, used by src/api: the context of a communicator, its
 * pools, and the one run of a call by the selector's plan. */
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

/* Sets up the algorithms' state on a pool just created (collective, like pool_create:
 * the inter-node flags are allocated and zeroed here; the CUDA kernels' grid is agreed),
 * so that calls find it. A failure breaks the communicator (algo_check_usable). */
symcoll_status_t algo_pool_attach(comm_t *comm, pool_t *pool);

/* The plan size of a call (topo_plan's bytes): the whole buffer of n blocks for
 * reduce-scatter and all-gather, which a call that runs as one all-reduce reduces as a
 * whole; 1 for the barrier. */
size_t algo_plan_bytes(const comm_t *comm, const algo_args_t *a);

/* Runs one call by the selector's plan (topo_plan of algo_plan_bytes), arguments checked,
 * count > 0 or a barrier, comm->lock held: refuses on an aborted communicator (telling
 * the peers), checks what depends on the plan (CUDA alignment, stream capture), waits for
 * queued CUDA calls across nodes where the family does not run behind them, creates the
 * pools the family needs, prepares its state, and runs the plan's cell of the
 * collective x family table. fn names the entry point in log lines. */
symcoll_status_t algo_run(comm_t *comm, const char *fn, const topo_plan_t *plan,
                          const algo_args_t *a);

/* The pool of mem_type, created on first use (collective), with the algorithms' state on
 * it (algo_pool_attach). Called with comm->lock held. */
symcoll_status_t algo_pool_get(comm_t *comm, symcoll_mem_type_t mem_type, pool_t **pool_p);

/* Releases what the algorithms keep in the pool (staging space) so that pool_trim can
 * unmap it; it comes back on the next all-reduce. Collective, like pool_trim. */
void algo_pool_release(comm_t *comm, pool_t *pool);
/* algo_pool_release for symcoll_pool_trim, unless live CUDA graphs on some rank captured
 * calls that use that staging (a vote over the ranks: all keep it or none). */
symcoll_status_t algo_pool_trim_release(comm_t *comm, pool_t *pool);

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
/* Tell the peers that comm is aborted, as a call on an aborted communicator does: the
 * background work quiesced, the pools of memory type mem (every type for mem < 0) given
 * up (node peers waiting on this rank's signals stop), the bootstrap shut. Under the
 * communicator's lock. */
void algo_tell_aborted(comm_t *comm, int mem);

#endif
