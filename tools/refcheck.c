/* Deterministic all-reduce inputs and their reference: what the benchmark engine and
 * the tests fill buffers with and check results against (see refcheck.h). */
#include "refcheck.h"

#include <string.h>

size_t refcheck_dtype_size(symcoll_dtype_t t)
{
    switch (t) {
    case SYMCOLL_INT8:
    case SYMCOLL_UINT8:
        return 1;
    case SYMCOLL_FLOAT16:
    case SYMCOLL_BFLOAT16:
        return 2;
    case SYMCOLL_INT32:
    case SYMCOLL_UINT32:
    case SYMCOLL_FLOAT32:
        return 4;
    case SYMCOLL_INT64:
    case SYMCOLL_UINT64:
    case SYMCOLL_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

int refcheck_is_unsigned(symcoll_dtype_t t)
{
    return t == SYMCOLL_UINT8 || t == SYMCOLL_UINT32 || t == SYMCOLL_UINT64;
}

int refcheck_is_float(symcoll_dtype_t t)
{
    return t == SYMCOLL_FLOAT16 || t == SYMCOLL_BFLOAT16 || t == SYMCOLL_FLOAT32 ||
           t == SYMCOLL_FLOAT64;
}

/* ---- encodings ---------------------------------------------------------------------- */

uint16_t refcheck_f32_to_f16(float f)
{
    uint32_t x, sign, mant, h, rem;
    int32_t exp;

    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
    mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        uint32_t shift;
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        shift = (uint32_t)(14 - exp);
        h = mant >> shift;
        rem = mant & ((1u << shift) - 1);
        if (rem > (1u << (shift - 1)) || (rem == (1u << (shift - 1)) && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

float refcheck_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    float f;

    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        f = (float)mant / 16777216.0f; /* subnormal: mant * 2^-24 */
        return sign ? -f : f;
    } else {
        x = sign | ((exp + 112) << 23) | (mant << 13);
    }
    memcpy(&f, &x, 4);
    return f;
}

uint16_t refcheck_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float refcheck_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* memcpy: buffers may be misaligned (the tests offset them by a few bytes) */
#define REFCHECK_PUT(T, x) memcpy((char *)buf + i * sizeof(T), &(T){(x)}, sizeof(T))

void refcheck_store(void *buf, size_t i, symcoll_dtype_t t, double v)
{
    switch (t) {
    case SYMCOLL_INT8:
        REFCHECK_PUT(int8_t, (int8_t)(int64_t)v);
        break;
    case SYMCOLL_UINT8:
        REFCHECK_PUT(uint8_t, (uint8_t)(int64_t)v);
        break;
    case SYMCOLL_INT32:
        REFCHECK_PUT(int32_t, (int32_t)(int64_t)v);
        break;
    case SYMCOLL_UINT32:
        REFCHECK_PUT(uint32_t, (uint32_t)(int64_t)v);
        break;
    case SYMCOLL_INT64:
        REFCHECK_PUT(int64_t, (int64_t)v);
        break;
    case SYMCOLL_UINT64:
        REFCHECK_PUT(uint64_t, (uint64_t)(int64_t)v);
        break;
    case SYMCOLL_FLOAT16:
        REFCHECK_PUT(uint16_t, refcheck_f32_to_f16((float)v));
        break;
    case SYMCOLL_BFLOAT16:
        REFCHECK_PUT(uint16_t, refcheck_f32_to_bf16((float)v));
        break;
    case SYMCOLL_FLOAT32:
        REFCHECK_PUT(float, (float)v);
        break;
    case SYMCOLL_FLOAT64:
        REFCHECK_PUT(double, v);
        break;
    default:
        break;
    }
}

double refcheck_load(const void *buf, size_t i, symcoll_dtype_t t)
{
    const size_t es = refcheck_dtype_size(t);
    union {
        int8_t i8;
        uint8_t u8;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        uint16_t half;
        float f32;
        double f64;
    } x;

    if (!es)
        return 0;
    memcpy(&x, (const char *)buf + i * es, es);
    switch (t) {
    case SYMCOLL_INT8:
        return x.i8;
    case SYMCOLL_UINT8:
        return x.u8;
    case SYMCOLL_INT32:
        return x.i32;
    case SYMCOLL_UINT32:
        return x.u32;
    case SYMCOLL_INT64:
        return (double)x.i64;
    case SYMCOLL_UINT64:
        return (double)x.u64;
    case SYMCOLL_FLOAT16:
        return refcheck_f16_to_f32(x.half);
    case SYMCOLL_BFLOAT16:
        return refcheck_bf16_to_f32(x.half);
    case SYMCOLL_FLOAT32:
        return x.f32;
    case SYMCOLL_FLOAT64:
        return x.f64;
    default:
        return 0;
    }
}

/* ---- the reduction ------------------------------------------------------------------- */

double refcheck_combine(symcoll_op_t op, double acc, double v)
{
    switch (op) {
    case SYMCOLL_SUM:
    case SYMCOLL_AVG:
        return acc + v;
    case SYMCOLL_PROD:
        return acc * v;
    case SYMCOLL_MIN:
        return v < acc ? v : acc;
    case SYMCOLL_MAX:
        return v > acc ? v : acc;
    default:
        return acc;
    }
}

double refcheck_finish(symcoll_dtype_t t, symcoll_op_t op, double acc, int n)
{
    if (op != SYMCOLL_AVG || n < 1)
        return acc;
    return refcheck_is_float(t) ? acc / n : (double)((int64_t)acc / n);
}

/* ---- inputs ------------------------------------------------------------------------ */

/* A spec prepared once per buffer: fill and compare run this per element. */
typedef struct refcheck_gen {
    const refcheck_spec_t *spec;
    int n;          /* ranks, at least 1 */
    uint64_t range; /* values of one base input: 2B + 1 (B + 1 if unsigned) */
    int64_t low;    /* the smallest of them: -B (0 if unsigned) */
    int is_unsigned;
    int lift; /* REFCHECK_AVG_EXACT applies */
} refcheck_gen_t;

static inline uint64_t refcheck_mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t refcheck_hash(size_t index, uint64_t seed, uint64_t salt)
{
    return refcheck_mix((uint64_t)index +
                        0x9e3779b97f4a7c15ULL * (seed * 0x10001ULL + salt + 1));
}

/* Largest magnitude B of one input on n ranks: every partial sum, the avg lift of up to
 * n - 1 included, stays inside the type (int8 within +-127, uint8 to 254: REFCHECK_POISON8
 * is never a value) and exact in it (bfloat16 holds integers to 256, float16 to 2048).
 * Few ranks get a wide range, so one rank's input or a stale result rarely matches by
 * chance. */
static int64_t refcheck_input_bound(symcoll_dtype_t t, int n)
{
    int64_t cap, b;

    switch (t) {
    case SYMCOLL_INT8:
        cap = 127;
        break;
    case SYMCOLL_UINT8:
        cap = 254;
        break;
    case SYMCOLL_BFLOAT16:
        cap = 256;
        break;
    case SYMCOLL_FLOAT16:
        cap = 2048;
        break;
    default:
        return 1000;
    }
    b = (cap - (n - 1)) / n;
    return b < 1 ? 1 : b;
}

static void refcheck_gen_init(refcheck_gen_t *g, const refcheck_spec_t *s)
{
    int64_t b;

    g->spec = s;
    g->n = s->nranks > 0 ? s->nranks : 1;
    b = refcheck_input_bound(s->dtype, g->n);
    g->is_unsigned = refcheck_is_unsigned(s->dtype);
    g->range = g->is_unsigned ? (uint64_t)b + 1 : 2 * (uint64_t)b + 1;
    g->low = g->is_unsigned ? 0 : -b;
    g->lift = s->op == SYMCOLL_AVG && (s->flags & REFCHECK_AVG_EXACT);
}

/* Rank r's value before the avg lift: uniform in [low, low + range) (the high half of
 * the hash scaled to the range: no division per element). */
static inline int64_t refcheck_base_value(const refcheck_gen_t *g, int r, size_t index)
{
    uint64_t h = refcheck_hash(index, g->spec->seed, (uint64_t)r + 1);
    return g->low + (int64_t)(((h >> 32) * g->range) >> 32);
}

static double refcheck_gen_input(const refcheck_gen_t *g, int r, size_t index)
{
    const int n = g->n;

    if (g->spec->op == SYMCOLL_PROD) {
        /* one rank contributes 2 or 3, maybe another -1, the rest 1: the product is
         * exact everywhere and every rank's input matters */
        uint64_t h = refcheck_hash(index, g->spec->seed, 0);
        int d = (int)(((h >> 32) * (uint64_t)n) >> 32);
        if (r == d)
            return (double)(2 + (int64_t)(h & 1));
        if (!g->is_unsigned && n > 1 && r == (d + 1) % n && ((h >> 1) & 1))
            return -1;
        return 1;
    }
    if (g->lift && r == n - 1) {
        int64_t sum = 0, m;
        for (int q = 0; q < n; q++)
            sum += refcheck_base_value(g, q, index);
        m = ((sum % n) + n) % n;
        return (double)(refcheck_base_value(g, r, index) + (m ? n - m : 0));
    }
    return (double)refcheck_base_value(g, r, index);
}

static double refcheck_gen_expected(const refcheck_gen_t *g, size_t index)
{
    const symcoll_op_t op = g->spec->op;
    double acc;

    if (op == SYMCOLL_SUM || op == SYMCOLL_AVG) {
        /* the lift only makes the sum a multiple of n: add it once, not per rank */
        int64_t sum = 0;
        for (int r = 0; r < g->n; r++)
            sum += refcheck_base_value(g, r, index);
        if (g->lift && sum % g->n)
            sum += g->n - ((sum % g->n) + g->n) % g->n;
        return refcheck_finish(g->spec->dtype, op, (double)sum, g->n);
    }
    acc = refcheck_gen_input(g, 0, index);
    for (int r = 1; r < g->n; r++)
        acc = refcheck_combine(op, acc, refcheck_gen_input(g, r, index));
    return acc;
}

double refcheck_input(const refcheck_spec_t *s, int r, size_t index)
{
    refcheck_gen_t g;
    refcheck_gen_init(&g, s);
    return refcheck_gen_input(&g, r, index);
}

double refcheck_expected(const refcheck_spec_t *s, size_t index)
{
    refcheck_gen_t g;
    refcheck_gen_init(&g, s);
    return refcheck_gen_expected(&g, index);
}

void refcheck_fill(const refcheck_spec_t *s, int rank, void *buf, size_t count)
{
    refcheck_gen_t g;

    refcheck_gen_init(&g, s);
    for (size_t i = 0; i < count; i++)
        refcheck_store(buf, i, s->dtype,
                       rank == REFCHECK_EXPECTED ? refcheck_gen_expected(&g, i)
                                                 : refcheck_gen_input(&g, rank, i));
}

size_t refcheck_compare(const refcheck_spec_t *s, const void *buf, size_t count,
                        size_t *first_p)
{
    const size_t es = refcheck_dtype_size(s->dtype);
    const int is_float = refcheck_is_float(s->dtype);
    const uint64_t sign = es == 8 ? 0x8000000000000000ULL : 1ULL << (8 * es - 1);
    size_t wrong = 0;
    refcheck_gen_t g;

    if (!es) {
        if (count && first_p)
            *first_p = 0;
        return count;
    }
    refcheck_gen_init(&g, s);
    for (size_t i = 0; i < count; i++) {
        uint64_t got = 0, want = 0;
        refcheck_store(&want, 0, s->dtype, refcheck_gen_expected(&g, i));
        memcpy(&got, (const char *)buf + i * es, es);
        if (got == want || (is_float && !((got | want) & ~sign)))
            continue;
        if (!wrong++ && first_p)
            *first_p = i;
    }
    return wrong;
}
