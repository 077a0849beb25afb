/* Signature of an all-reduce launch on CUDA memory inside a node: what every rank's
 * launch of one call must agree on, packed into the 64 bits the kernels compare. */
#ifndef SYMCOLL_CUDA_SIG_H
#define SYMCOLL_CUDA_SIG_H

#include <stdint.h>
#include <stdio.h>

#include "symcoll.h"
#include "cuda/kernels.h"

/* Count (the high 45 bits), the collective the all-reduce serves and its root (coll:
 * CUDA_AR_COLL_*, the algorithm layer's numbering; root: broadcast only, its low 4 bits),
 * datatype, operator, algorithm (CUDA_AR_*) and phase (CUDA_AR_PHASE_*), each field
 * whole so that a log line can name it. Never 0 for count > 0. Counts that differ by a
 * multiple of 2^45 elements (32 Ti elements) pack alike, which no device holds. */
enum {
    CUDA_AR_COLL_ALLREDUCE = 0,
    CUDA_AR_COLL_REDUCE_SCATTER = 1,
    CUDA_AR_COLL_ALLGATHER = 2,
    CUDA_AR_COLL_BROADCAST = 3,
    CUDA_AR_COLL_BARRIER = 4
};

static inline uint64_t cuda_ar_sig_coll(size_t count, int dtype, int op, int algo, int phase,
                                        int coll, int root)
{
    return ((uint64_t)count << 19) | ((uint64_t)(coll & 7) << 16) |
           ((uint64_t)(root & 15) << 12) | ((uint64_t)(dtype & 31) << 7) |
           ((uint64_t)(op & 7) << 4) | ((uint64_t)(algo & 3) << 2) | (uint64_t)(phase & 3);
}

/* A user's all-reduce. */
static inline uint64_t cuda_ar_sig(size_t count, int dtype, int op, int algo, int phase)
{
    return cuda_ar_sig_coll(count, dtype, op, algo, phase, CUDA_AR_COLL_ALLREDUCE, 0);
}

static inline void cuda_ar_sig_unpack_coll(uint64_t sig, uint64_t *count, int *dtype, int *op,
                                           int *algo, int *phase, int *coll, int *root)
{
    *count = sig >> 19;
    *coll = (int)(sig >> 16) & 7;
    *root = (int)(sig >> 12) & 15;
    *dtype = (int)(sig >> 7) & 31;
    *op = (int)(sig >> 4) & 7;
    *algo = (int)(sig >> 2) & 3;
    *phase = (int)sig & 3;
}

static inline void cuda_ar_sig_unpack(uint64_t sig, uint64_t *count, int *dtype, int *op,
                                      int *algo, int *phase)
{
    int coll, root;
    cuda_ar_sig_unpack_coll(sig, count, dtype, op, algo, phase, &coll, &root);
}

/* "count 1024, float32, sum, LL" (a hierarchical phase as well; a collective other
 * than all-reduce after it: ", for an all-gather"); buf of len bytes. */
static inline const char *cuda_ar_sig_describe(uint64_t sig, char *buf, size_t len)
{
    static const char *const algos[] = {"one-shot", "two-shot", "LL", "?"};
    static const char *const phases[] = {"", ", reduce-scatter of a call across nodes",
                                         ", all-gather of a call across nodes", ", ?"};
    static const char *const colls[] = {"",
                                        ", for a reduce-scatter",
                                        ", for an all-gather",
                                        ", for a broadcast from root ",
                                        ", for a barrier",
                                        ", for ?",
                                        ", for ?",
                                        ", for ?"};
    uint64_t count;
    int dtype, op, algo, phase, coll, root;
    const char *dn, *on;
    char rootbuf[8] = "";

    cuda_ar_sig_unpack_coll(sig, &count, &dtype, &op, &algo, &phase, &coll, &root);
    dn = symcoll_dtype_name((symcoll_dtype_t)dtype);
    on = symcoll_op_name((symcoll_op_t)op);
    if (coll == CUDA_AR_COLL_BROADCAST)
        snprintf(rootbuf, sizeof(rootbuf), "%d", root);
    snprintf(buf, len, "count %llu, %s, %s, %s%s%s%s", (unsigned long long)count, dn ? dn : "?",
             on ? on : "?", algos[algo], phases[phase], colls[coll], rootbuf);
    return buf;
}

#endif
