/* Reduce-scatter, all-gather and broadcast of CUDA memory inside a node by their own
 * kernels (src/cuda/coll.cu), over the all-reduce's state, staging and scratch. */
#include "algo/cuda/cuda_int.h"

#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/coll.h"
#include "cuda/cuda.h"
#include "cuda/sig.h"

/* The kernels' launch, on the pool's device (as algo_cuda_launch). */
static symcoll_status_t coll_launch(const cuda_algo_state_t *st, const cuda_coll_args_t *a,
                                    void *stream)
{
    int prev = -1;
    cudaError_t err;

    if (cudaGetDevice(&prev) == cudaSuccess && prev != st->device)
        cudaSetDevice(st->device);
    else
        prev = -1;
    err = (cudaError_t)cuda_coll_launch(a, stream);
    if (prev >= 0)
        cudaSetDevice(prev);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "collective kernel launch");
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_coll(comm_t *comm, pool_t *pool, const topo_plan_t *plan,
                                const algo_args_t *a)
{
    const size_t bytes = a->count * symcoll_dtype_size(a->dtype);
    const int coll = (int)a->coll;
    const bool rs = a->coll == TOPO_COLL_REDUCE_SCATTER;
    /* what a rank's peers read from it: the whole input of a reduce-scatter, the block
     * of an all-gather, the root's message of a broadcast */
    const size_t src_bytes = rs ? bytes * (size_t)comm->nranks : bytes;
    const symcoll_op_t op = rs ? a->op : SYMCOLL_SUM;
    const int algo = plan->algo == TOPO_ALGO_ONESHOT ? CUDA_AR_ONESHOT : CUDA_AR_TWOSHOT;
    cuda_algo_state_t *st = NULL;
    cuda_coll_args_t ca;
    symcoll_status_t status = algo_cuda_state_usable(comm, pool, &st);
    size_t off;

    if (status != SYMCOLL_OK)
        return status;
    memset(&ca, 0, sizeof(ca));
    if (algo == CUDA_AR_ONESHOT) {
        /* a slot a source holds one rank's block (the message of a broadcast) */
        status = algo_cuda_stage_ensure(pool, st, CUDA_AR_ONESHOT, bytes, a->stream);
        if (status != SYMCOLL_OK)
            return status;
        algo_cuda_fill_args(comm, pool, st, CUDA_AR_ONESHOT, a->sendbuf, a->recvbuf, a->count,
                            a->dtype, op, &ca.ar);
        ca.ar.recv_info = 0;
    } else {
        void *scratch = NULL;
        /* every rank makes room, whatever its own buffers: the pool's scratch is
         * collective */
        status = algo_cuda_scratch(comm, pool, ALGO_CUDA_SCRATCH_COLL, src_bytes, a->stream,
                                   &scratch);
        if (status != SYMCOLL_OK)
            return status;
        algo_cuda_fill_args(comm, pool, st, CUDA_AR_TWOSHOT, a->sendbuf, a->recvbuf, a->count,
                            a->dtype, op, &ca.ar);
        for (int p = 0; p < st->n; p++)
            ca.ar.stage[p] = pool_peer_addr(pool, p, st->scratch_off[ALGO_CUDA_SCRATCH_COLL]);
        ca.ar.stage_slot = 0;
        ca.ar.stage_out = 0;
        ca.ar.recv_info = 0;
        if (a->coll != TOPO_COLL_BROADCAST || a->root == st->me) {
            if (pool_lookup(pool, a->sendbuf, src_bytes, &off)) {
                ca.ar.recv_info = (uint64_t)off + 1;
            } else {
                ca.ar.recv_info = (uint64_t)st->scratch_off[ALGO_CUDA_SCRATCH_COLL] + 1;
                ca.stage_src = 1;
            }
        }
    }
    ca.ar.sig = cuda_ar_sig_coll(a->count, (int)a->dtype, (int)op, algo, CUDA_AR_PHASE_ALL,
                                 coll, a->root);
    ca.coll = coll;
    ca.root = a->root; /* one node: the local rank */
    return coll_launch(st, &ca, a->stream);
}
