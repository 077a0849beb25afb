/* CUDA all-reduce of the algorithm layer: one-shot and two-shot kernels over the CUDA
 * pool's peer mappings (src/cuda/allreduce.cu), ordered on the caller's stream. */
#ifndef SYMCOLL_ALGO_CUDA_H
#define SYMCOLL_ALGO_CUDA_H

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"

/* Sets up the kernels' state when the CUDA pool is created (collective: the ranks
 * agree on the grid from the node's smallest SM count). */
symcoll_status_t algo_cuda_attach(comm_t *comm, pool_t *pool);
void algo_cuda_free(comm_t *comm);
/* Before a call of comm is queued on stream: if stream is being captured, the graph
 * holds comm's CUDA memory from now on (algo_cuda_free keeps it mapped while such
 * graphs live). */
symcoll_status_t algo_cuda_note_capture(comm_t *comm, void *stream);
/* Captured calls of comm held by live graphs on this rank. */
int algo_cuda_graphs(comm_t *comm);

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

/* ---- reduce-scatter, all-gather and broadcast by their own kernels (cuda/coll.cu) ------
 * where the selector says so (topo_select_coll_plan: the CUDA family inside a node,
 * one-shot or two-shot, SYMCOLL_CUDA_COLL=auto). algo_cuda_coll runs it (count > 0,
 * arguments checked, the kernels' state set up, comm->lock held):
 * one-shot over the all-reduce one-shot's staging, two-shot straight from the peers'
 * pool buffers (a source outside the pool is first copied into the pool scratch
 * ALGO_CUDA_SCRATCH_COLL, which grows as algo_cuda_scratch says: refused while the stream
 * is captured). Queued on stream; failures as algo_cuda_allreduce's. */
symcoll_status_t algo_cuda_coll(comm_t *comm, pool_t *pool, const topo_plan_t *plan,
                                const algo_args_t *a);

/* ---- the other collectives, run as all-reduces (algo/coll.c) ---------------------------
 * Every step is queued on stream, in stream order with the all-reduce around it, so the
 * calls stay capturable where the all-reduce is. */

/* Zeroes bytes at buf on stream (none: nothing). */
symcoll_status_t algo_cuda_zero(void *buf, size_t bytes, void *stream);

/* Scratch of the CUDA pool (pool; a call inside a node) that a collective keeps for the
 * life of the pool: which one, at least bytes, its start (this rank's view) in *p.
 * Checks first that the kernels can run (as algo_cuda_allreduce does). Growing it is
 * collective (every rank makes the same call, so it gets the same offset, and the
 * all-reduce into it writes straight into the peers' scratch): it synchronises stream
 * first (this rank's kernels may still use the old space), and it is refused while
 * stream is being captured (SYMCOLL_ERR_IN_PROGRESS: warm up with the same call). */
typedef enum {
    ALGO_CUDA_SCRATCH_REDUCE = 0, /* reduce-scatter: the whole all-reduce's result */
    ALGO_CUDA_SCRATCH_BARRIER,    /* the stream barrier's byte */
    ALGO_CUDA_SCRATCH_COLL,       /* the native kernels' two-shot: sources outside the pool */
    ALGO_CUDA_SCRATCH_N
} algo_cuda_scratch_t;
symcoll_status_t algo_cuda_scratch(comm_t *comm, pool_t *pool, algo_cuda_scratch_t which,
                                   size_t bytes, void *stream, void **p);

/* Device memory of comm's device for one call (calls across nodes, which no graph
 * captures): allocated and freed in stream order (cudaMallocAsync, cudaFreeAsync). */
symcoll_status_t algo_cuda_stream_alloc(comm_t *comm, size_t bytes, void *stream, void **p);
symcoll_status_t algo_cuda_stream_free(void *p, void *stream);

/* Hierarchical all-reduce of CUDA memory across nodes, the node's part over the CUDA
 * pool (the two halves of two-shot around the step across nodes,
 * algo/cuda_net/cuda_net_hier.c): _rs queues the intra-node reduce-scatter on stream and
 * returns this rank's slice of the node's sum (in its staging; slice_count elements, possibly
 * 0), _ag the intra-node all-gather of every rank's slice into recvbuf. _ready: the staging
 * already holds a message of bytes (else _rs makes it grow: collective, and only while nothing
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

/* Frees the staging space and the collectives' scratch (after the device finished with
 * them), for pool_trim. */
void algo_cuda_release(comm_t *comm, pool_t *pool);

#endif
