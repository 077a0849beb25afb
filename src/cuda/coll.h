/* Arguments of the reduce-scatter, all-gather and broadcast kernels on CUDA memory inside
 * a node (src/cuda/coll.cu), shared by the C glue and the CUDA source (plain C). */
#ifndef SYMCOLL_CUDA_COLL_H
#define SYMCOLL_CUDA_COLL_H

#include "cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The fields of ar mean what they mean for the all-reduce, except:
 * - count: elements of one rank's block (reduce-scatter: received, all-gather: sent), or
 *   the whole message (broadcast);
 * - algo: CUDA_AR_ONESHOT (small messages, over the all-reduce one-shot's staging, flags
 *   and epochs) or CUDA_AR_TWOSHOT (large, over the two-shot's flags and epochs and the
 *   collectives' staging);
 * - stage (two-shot): every rank's collectives' staging, where a rank whose source is not
 *   in the pool copies it before the start barrier;
 * - recv_info (two-shot): where this rank's source lies, as a pool offset + 1 (its send
 *   buffer or its staging; 0 for a broadcast's non-root), published at the start barrier;
 * - op: the operator of a reduce-scatter, SYMCOLL_SUM otherwise;
 * - sig: cuda_ar_sig_coll with the collective and root. */
typedef struct cuda_coll_args {
    cuda_ar_args_t ar;
    int coll;      /* CUDA_AR_COLL_REDUCE_SCATTER, _ALLGATHER or _BROADCAST (cuda/sig.h) */
    int root;      /* broadcast: the root's local rank */
    int stage_src; /* two-shot: this rank's source is not in the pool: copy it to stage */
} cuda_coll_args_t;

/* Load every kernel of this file into the current context (cuda_kernels_load). Returns a
 * cudaError_t. */
int cuda_coll_preload(void);

/* Launch the kernel of args on stream (cudaStream_t). Returns a cudaError_t. */
int cuda_coll_launch(const cuda_coll_args_t *args, void *stream);

#ifdef __cplusplus
}
#endif

#endif
