/* Element-wise reductions for every datatype and operator, shared by the host algorithms
 * (and usable by the inter-node ones): sources are combined in the order given, so every
 * rank that reduces the same sources gets the same bits (NaNs aside: see reduce.c). */
#ifndef SYMCOLL_ALGO_REDUCE_H
#define SYMCOLL_ALGO_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "symcoll.h"

/*
 * dst[k] = srcs[0][k] op srcs[1][k] op ... op srcs[nsrc-1][k], left to right, for k <
 * count. Any alignment. dst may be one of the sources (same address, not a partial
 * overlap). Integers accumulate in 64 bits (sum and prod wrap like the element type);
 * float16/bfloat16 accumulate in float32, float32 in float32, float64 in float64.
 * SYMCOLL_AVG: the sum, then divided by avg_div when avg_div > 0 (integers: truncated
 * toward zero); avg_div == 0 leaves the plain sum, for partial reductions whose
 * division comes later. nsrc >= 1.
 */
void algo_reduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                 symcoll_dtype_t dtype, symcoll_op_t op, int avg_div);

/* dst[k] = src[k] / div for SYMCOLL_AVG's final step after partial sums. */
void algo_reduce_avg_finish(void *dst, const void *src, size_t count, symcoll_dtype_t dtype,
                            int div);

/* float16 / bfloat16 <-> float32, round to nearest even; NaN stays NaN. */
float algo_half_to_float(uint16_t h);
uint16_t algo_float_to_half(float f);
float algo_bf16_to_float(uint16_t h);
uint16_t algo_float_to_bf16(float f);

#endif
