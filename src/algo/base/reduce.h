/* Element-wise reductions for every datatype and operator, shared by the host algorithms
 * and the inter-node ones: sources are combined in one fixed tree of their count (below),
 * so every rank that reduces the same sources gets the same bits (NaNs aside: see
 * reduce.c), and so do the algorithms that build the same tree in steps (recursive
 * doubling across nodes: net_rd.c). */
#ifndef SYMCOLL_ALGO_REDUCE_H
#define SYMCOLL_ALGO_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "symcoll.h"

/*
 * dst[k] = the canonical reduction of srcs[0][k] .. srcs[nsrc-1][k], for k < count: with
 * p2 the largest power of two <= nsrc and rem = nsrc - p2, leaf v (0 <= v < p2) is
 * srcs[2v] op srcs[2v+1] for v < rem and srcs[v + rem] otherwise, and the leaves combine
 * pairwise, neighbours first: (l0 op l1) op (l2 op l3), and so on up ("left op right";
 * + and * of IEEE floats are commutative, so only the grouping matters). Two sources:
 * s0 op s1; three: (s0 op s1) op s2; five: ((s0 op s1) op s2) op (s3 op s4). Any alignment.
 * dst may be one of the sources (same address, not a partial overlap). Integers accumulate
 * in 64 bits (sum and prod wrap like the element type); float16/bfloat16 accumulate in
 * float32 and are rounded once, float32 in float32, float64 in float64. SYMCOLL_AVG: the
 * sum, then divided by avg_div when avg_div > 0 (integers: truncated toward zero);
 * avg_div == 0 leaves the plain sum, for partial reductions whose division comes later.
 * nsrc >= 1.
 */
void algo_reduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                 symcoll_dtype_t dtype, symcoll_op_t op, int avg_div);

/* dst[k] = src[k] / div for SYMCOLL_AVG's final step after partial sums. */
void algo_reduce_avg_finish(void *dst, const void *src, size_t count, symcoll_dtype_t dtype,
                            int div);

/* float16 or bfloat16 (dtype) to float32 (exact) and back (rounded to nearest even),
 * count elements. */
void algo_widen(float *dst, const void *src, size_t count, symcoll_dtype_t dtype);
void algo_narrow(void *dst, const float *src, size_t count, symcoll_dtype_t dtype);

/* float16 / bfloat16 <-> float32, round to nearest even; NaN stays NaN. */
float algo_half_to_float(uint16_t h);
uint16_t algo_float_to_half(float f);
float algo_bf16_to_float(uint16_t h);
uint16_t algo_float_to_bf16(float f);

#endif
