/* A hierarchical call of CUDA memory across nodes queued: the node's kernels over the CUDA
 * pool around a staged or direct call on this rank's slice. */
#include "algo/cuda_net/cuda_net_int.h"

/* Hierarchical: reduce-scatter over the GPUs of the node (a kernel over the CUDA pool's
 * peer mappings), this rank's slice of the node's sum across the nodes among the ranks
 * of its local index (staged by the channels as any staged call, or the direct path),
 * all-gather over the GPUs; all on the stream. Each rank sends only 1/L of the message across
 * nodes, and the host reduces only 1/L of it. */
symcoll_status_t cnet_hier(cuda_net_t *cn, cudaStream_t s, pool_t *cuda_pool,
                           const void *sendbuf, void *recvbuf, size_t count,
                           symcoll_dtype_t dtype, symcoll_op_t op, bool direct)
{
    comm_t *comm = cn->comm;
    CUdeviceptr hw = cn->words_dev + CNET_HIER_LINE(cn) * sizeof(uint32_t);
    symcoll_status_t status = SYMCOLL_OK;
    char *slice = NULL;
    size_t slice_count = 0;
    CUresult res;

    if (!algo_cuda_hier_ready(cuda_pool, count * symcoll_dtype_size(dtype))) {
        /* the CUDA staging is set up or grows (collective pool calls): nothing queued may
         * still use the pool or the staging */
        status = algo_cuda_net_drain(comm);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (cn->hier_seq) {
        status = cnet_stream_wait(cn, s, hw, (uint32_t)cn->hier_seq, 0);
        if (status != SYMCOLL_OK)
            return status;
    }
    status = algo_cuda_hier_rs(comm, cuda_pool, sendbuf, count, dtype, op, cn->node_word_dev, s,
                               &slice, &slice_count);
    if (status != SYMCOLL_OK)
        return status;
    /* the slice is in the CUDA pool's staging: the direct path puts it from there */
    if (slice_count > 0 && direct)
        status = cnet_direct_enqueue(cn, s, slice, slice, slice_count, dtype, op);
    else if (slice_count > 0)
        status =
            cnet_enqueue(cn, s, slice, slice, slice_count, dtype, op, true, TOPO_ALGO_AUTO);
    if (status == SYMCOLL_OK)
        status =
            algo_cuda_hier_ag(comm, cuda_pool, recvbuf, count, dtype, cn->node_word_dev, s);
    if (status != SYMCOLL_OK)
        return status;
    res = cn->drv->stream_write_value32(s, hw, (uint32_t)(cn->hier_seq + 1), 0);
    if (res != CUDA_SUCCESS)
        return cuda_drv_error(res, "cuStreamWriteValue32");
    cn->hier_seq++; /* waited for only once its write is queued */
    return SYMCOLL_OK;
}
