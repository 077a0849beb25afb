/* Signature of an all-reduce launch on CUDA memory inside a node: what every rank's
 * launch of one call must agree on, packed into the 64 bits the kernels compare. */
#ifndef SYMCOLL_CUDA_SIG_H
#define SYMCOLL_CUDA_SIG_H

#include <stdint.h>
#include <stdio.h>

#include "symcoll.h"
#include "cuda/kernels.h"

/* Count (the low 52 bits), datatype, operator, algorithm (CUDA_AR_*) and phase
 * (CUDA_AR_PHASE_*), each field whole so that a log line can name it. Never 0 for
 * count > 0. Counts that differ by a multiple of 2^52 elements (32 PiB and more) pack
 * alike, which no device holds. */
static inline uint64_t cuda_ar_sig(size_t count, int dtype, int op, int algo, int phase)
{
    return ((uint64_t)count << 12) | ((uint64_t)(dtype & 31) << 7) | ((uint64_t)(op & 7) << 4) |
           ((uint64_t)(algo & 3) << 2) | (uint64_t)(phase & 3);
}

static inline void cuda_ar_sig_unpack(uint64_t sig, uint64_t *count, int *dtype, int *op,
                                      int *algo, int *phase)
{
    *count = sig >> 12;
    *dtype = (int)(sig >> 7) & 31;
    *op = (int)(sig >> 4) & 7;
    *algo = (int)(sig >> 2) & 3;
    *phase = (int)sig & 3;
}

/* "count 1024, float32, sum, LL" (a hierarchical phase as well); buf of len bytes. */
static inline const char *cuda_ar_sig_describe(uint64_t sig, char *buf, size_t len)
{
    static const char *const algos[] = {"one-shot", "two-shot", "LL", "?"};
    static const char *const phases[] = {"", ", reduce-scatter of a call across nodes",
                                         ", all-gather of a call across nodes", ", ?"};
    uint64_t count;
    int dtype, op, algo, phase;
    const char *dn, *on;

    cuda_ar_sig_unpack(sig, &count, &dtype, &op, &algo, &phase);
    dn = symcoll_dtype_name((symcoll_dtype_t)dtype);
    on = symcoll_op_name((symcoll_op_t)op);
    snprintf(buf, len, "count %llu, %s, %s, %s%s", (unsigned long long)count, dn ? dn : "?",
             on ? on : "?", algos[algo], phases[phase]);
    return buf;
}

#endif
