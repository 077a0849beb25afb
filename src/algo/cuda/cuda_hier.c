/* The node's part of the hierarchical all-reduce of CUDA memory across nodes: the two
 * halves of the two-shot kernel around the step across nodes (algo/cuda_net). */
#include "algo/cuda/cuda_int.h"

#include "cuda/kernels.h"
#include "cuda/sig.h"

bool algo_cuda_hier_ready(pool_t *pool, size_t bytes)
{
    const cuda_algo_state_t *st = pool_comm(pool)->algo->cuda;
    return st && algo_cuda_stage_fits(pool_comm(pool), st, CUDA_AR_TWOSHOT, bytes);
}

symcoll_status_t algo_cuda_hier_rs(comm_t *comm, pool_t *pool, const void *sendbuf,
                                   size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                   const volatile uint32_t *node_word, void *stream,
                                   char **slice_p, size_t *slice_count_p)
{
    const size_t esize = symcoll_dtype_size(dtype), bytes = count * esize;
    const size_t v = 16 / esize;
    cuda_algo_state_t *st = NULL;
    cuda_ar_args_t a;
    symcoll_status_t status;
    size_t nvec = count / v, lo, len;
    char *res;

    status = algo_cuda_state_usable(comm, pool, &st);
    if (status == SYMCOLL_OK)
        status = algo_cuda_stage_ensure(pool, st, CUDA_AR_TWOSHOT, bytes, stream);
    if (status != SYMCOLL_OK)
        return status;
    res = (char *)pool_peer_addr(pool, st->me, st->stage_off[CUDA_AR_TWOSHOT]) + st->stage_out;
    /* the slices of the kernel: 16-byte vectors split evenly, the tail to the last rank;
     * an average divides once, across nodes, by the communicator's size */
    algo_cuda_fill_args(comm, pool, st, CUDA_AR_TWOSHOT, sendbuf, res, count, dtype,
                        op == SYMCOLL_AVG ? SYMCOLL_SUM : op, &a);
    a.phase = CUDA_AR_PHASE_RS;
    a.sig =
        algo_cuda_call_sig(comm, count, (int)dtype, a.op, CUDA_AR_TWOSHOT, CUDA_AR_PHASE_RS);
    a.recv_info = 0;
    a.node_word = node_word;
    lo = nvec * (size_t)st->me / (size_t)st->n;
    len = nvec * (size_t)(st->me + 1) / (size_t)st->n - lo;
    *slice_p = res + lo * 16;
    *slice_count_p = len * v + (st->me == st->n - 1 ? count - nvec * v : 0);
    return algo_cuda_launch(st, &a, stream);
}

symcoll_status_t algo_cuda_hier_ag(comm_t *comm, pool_t *pool, void *recvbuf, size_t count,
                                   symcoll_dtype_t dtype, const volatile uint32_t *node_word,
                                   void *stream)
{
    cuda_algo_state_t *st = comm->algo->cuda;
    cuda_ar_args_t a;

    algo_cuda_fill_args(comm, pool, st, CUDA_AR_TWOSHOT, NULL, recvbuf, count, dtype,
                        SYMCOLL_SUM, &a);
    a.phase = CUDA_AR_PHASE_AG;
    a.sig = algo_cuda_call_sig(comm, count, (int)dtype, SYMCOLL_SUM, CUDA_AR_TWOSHOT,
                               CUDA_AR_PHASE_AG);
    a.recv_info = 0;
    a.node_word = node_word;
    return algo_cuda_launch(st, &a, stream);
}
