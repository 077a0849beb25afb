/* The canonical order's test inputs and reference (tests/test_order.c, and the CUDA
 * case tests/cuda_case_order.c): inputs whose float sum depends on the order, and the
 * canonical tree computed from its definition, with the conversions of tools/refcheck.c
 * (written apart from the library's). */
#ifndef SYMCOLL_TESTS_ORDER_REF_H
#define SYMCOLL_TESTS_ORDER_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "refcheck.h"
#include "symcoll.h"

#define ORDER_MAX_RANKS 8

static inline uint64_t order_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Rank r's value at element k, exact in dt. */
static inline double order_input(symcoll_dtype_t dt, symcoll_op_t op, int r, size_t k)
{
    uint64_t h = order_mix((uint64_t)r << 40 ^ (uint64_t)k << 4 ^ (uint64_t)op);
    double sign = (h & 1) ? -1.0 : 1.0, v;
    /* float16: 2^-12 .. 2^13, so that 5 ranks' sums stay finite and float32 sums of them
     * still round (their mantissas span more than float32's) */
    int span = dt == SYMCOLL_FLOAT16 ? 12 : 24;

    if (op == SYMCOLL_PROD)
        v = sign * (1.0 + (double)(h >> 8 & 0xfffff) / 1048576.0) * ((h >> 2 & 1) ? 0.5 : 1.0);
    else
        v = sign * (1.0 + (double)(h >> 8 & 0xfffff) / 1048576.0) *
            ldexp(1.0, (int)(h >> 32 & 0xffff) % (2 * span + 1) - span);
    switch (dt) {
    case SYMCOLL_FLOAT32:
        return (float)v;
    case SYMCOLL_BFLOAT16:
        return refcheck_bf16_to_f32(refcheck_f32_to_bf16((float)v));
    case SYMCOLL_FLOAT16:
        return refcheck_f16_to_f32(refcheck_f32_to_f16((float)v));
    default:
        return v;
    }
}

static inline void order_store(symcoll_dtype_t dt, void *buf, size_t k, double v)
{
    switch (dt) {
    case SYMCOLL_FLOAT32: {
        float f = (float)v;
        memcpy((char *)buf + 4 * k, &f, 4);
        break;
    }
    case SYMCOLL_FLOAT64:
        memcpy((char *)buf + 8 * k, &v, 8);
        break;
    default: {
        uint16_t h = dt == SYMCOLL_BFLOAT16 ? refcheck_f32_to_bf16((float)v)
                                            : refcheck_f32_to_f16((float)v);
        memcpy((char *)buf + 2 * k, &h, 2);
        break;
    }
    }
}

/* The canonical tree from its definition: leaves are the pairs of the first 2 rem values
 * and the rest alone; halves of the leaves combine recursively. acc_double: float64
 * accumulates in double, every other float type in float. */
static inline double order_comb(symcoll_op_t op, bool acc_double, double a, double b)
{
    if (acc_double)
        return op == SYMCOLL_PROD ? a * b : a + b;
    return op == SYMCOLL_PROD ? (double)((float)a * (float)b) : (double)((float)a + (float)b);
}

static inline double order_pairs(symcoll_op_t op, bool d, const double *leaf, int n)
{
    if (n == 1)
        return leaf[0];
    return order_comb(op, d, order_pairs(op, d, leaf, n / 2),
                      order_pairs(op, d, leaf + n / 2, n / 2));
}

static inline double order_tree(symcoll_dtype_t dt, symcoll_op_t op, const double *x, int n)
{
    bool d = dt == SYMCOLL_FLOAT64;
    double leaf[ORDER_MAX_RANKS], v;
    int p2 = 1, rem;

    while (2 * p2 <= n)
        p2 *= 2;
    rem = n - p2;
    for (int i = 0; i < p2; i++)
        leaf[i] = i < rem ? order_comb(op, d, x[2 * i], x[2 * i + 1]) : x[i + rem];
    v = order_pairs(op, d, leaf, p2);
    if (op == SYMCOLL_AVG)
        v = d ? v / n : (double)((float)v / (float)n);
    return v;
}

/* The expected result of element k, stored in dt into want. */
static inline void order_expect(symcoll_dtype_t dt, symcoll_op_t op, int n, size_t k,
                                void *want)
{
    double x[ORDER_MAX_RANKS];
    for (int r = 0; r < n; r++)
        x[r] = order_input(dt, op, r, k);
    order_store(dt, want, 0, order_tree(dt, op, x, n));
}

static inline uint64_t order_fnv(const void *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

#endif
