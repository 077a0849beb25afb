/* Deterministic all-reduce inputs and their reference, shared by the benchmark engine
 * (tools/perf_check.c), the bench drivers and the tests: encodings, fill and check. */
#ifndef SYMCOLL_REFCHECK_H
#define SYMCOLL_REFCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "symcoll.h" /* only the datatype and operator enums: this code links no library */

/* The inputs reduce exactly in every datatype up to this many ranks. */
#define REFCHECK_MAX_EXACT_RANKS 64

/* Byte patterns that no input or result of a 1-byte datatype takes (int8 -128, uint8
 * 255), for poisoning outputs so that an element left unwritten always shows. */
#define REFCHECK_POISON_INT8 0x80
#define REFCHECK_POISON_UINT8 0xff

/* refcheck_fill's rank that writes the expected result instead of an input */
#define REFCHECK_EXPECTED (-1)

/* refcheck_spec_t.flags: the last rank lifts every sum to a multiple of nranks, so avg
 * is an integer whatever rule an implementation divides by (for benchmarks that time
 * other libraries). Without it, avg follows symcoll's rule: floats divide (the quotient
 * rounded once, to the type), integers truncate toward zero. */
#define REFCHECK_AVG_EXACT 1u

/* One all-reduce's inputs: rank r's element i is a function of (dtype, op, nranks, seed,
 * flags, r, i) alone, small integers whose every partial reduction is exact in the type;
 * a new seed gives unrelated values, so a stale or misplaced result shows. */
typedef struct refcheck_spec {
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    int nranks;
    uint64_t seed;
    unsigned flags; /* REFCHECK_AVG_EXACT or 0 */
} refcheck_spec_t;

size_t refcheck_dtype_size(symcoll_dtype_t dtype); /* 0 for an unknown datatype */
int refcheck_is_float(symcoll_dtype_t dtype);
int refcheck_is_unsigned(symcoll_dtype_t dtype);

/* IEEE binary16 and bfloat16, rounded to nearest even (NaN stays NaN, overflow goes to
 * infinity); written independently of the library's conversions. */
uint16_t refcheck_f32_to_f16(float f);
float refcheck_f16_to_f32(uint16_t h);
uint16_t refcheck_f32_to_bf16(float f);
float refcheck_bf16_to_f32(uint16_t b);

/* Element @a i of @a buf as datatype @a dtype. Store: integers take the value's low bits
 * (from an int64_t), floats round to nearest even. Load: the element's exact value. */
void refcheck_store(void *buf, size_t i, symcoll_dtype_t dtype, double value);
double refcheck_load(const void *buf, size_t i, symcoll_dtype_t dtype);

/* One step of the reduction in double (sum and avg add), and its end: avg divides by
 * @a nranks, truncating toward zero for integer datatypes. Exact for values below 2^53. */
double refcheck_combine(symcoll_op_t op, double acc, double value);
double refcheck_finish(symcoll_dtype_t dtype, symcoll_op_t op, double acc, int nranks);

/* Rank @a rank's input at element @a index, and the expected result there. */
double refcheck_input(const refcheck_spec_t *spec, int rank, size_t index);
double refcheck_expected(const refcheck_spec_t *spec, size_t index);

/* Writes rank @a rank's @a count inputs to @a buf, or the expected result where @a rank
 * is REFCHECK_EXPECTED. */
void refcheck_fill(const refcheck_spec_t *spec, int rank, void *buf, size_t count);

/* Number of the @a count elements of @a buf that differ from the expected result, bit
 * for bit (floats: +0 and -0 are equal); *first_p (may be NULL) is the first of them's
 * index, where any differs. */
size_t refcheck_compare(const refcheck_spec_t *spec, const void *buf, size_t count,
                        size_t *first_p);

#endif
