/* Inputs and reference checks of the benchmark engine: the reductions' come from
 * tools/refcheck.c (exact avg), the copying collectives' are byte patterns. */
#include "perf_engine.h"
#include "refcheck.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What the engine fills and checks: exact avg, since other libraries are timed too. */
static refcheck_spec_t perf_spec(symcoll_dtype_t t, symcoll_op_t op, int nranks, uint64_t seed)
{
    refcheck_spec_t s = {t, op, nranks, seed, REFCHECK_AVG_EXACT};
    return s;
}

void perf_fill(void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
               int nranks, uint64_t seed)
{
    refcheck_spec_t s = perf_spec(t, op, nranks, seed);
    refcheck_fill(&s, rank < 0 ? REFCHECK_EXPECTED : rank, buf, count);
}

size_t perf_check(const void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
                  int nranks, uint64_t seed, const char *what)
{
    refcheck_spec_t s = perf_spec(t, op, nranks, seed);
    size_t first = 0, wrong = refcheck_compare(&s, buf, count, &first);

    if (wrong) {
        uint64_t w = 0;
        refcheck_store(&w, 0, t, refcheck_expected(&s, first));
        fprintf(stderr,
                "%s: rank %d: %zu of %zu elements wrong; first at index %zu: got %.9g, "
                "expected %.9g\n",
                what, rank, wrong, count, first, refcheck_load(buf, first, t),
                refcheck_load(&w, 0, t));
    }
    return wrong;
}

/* splitmix64's finaliser: every bit of the input moves every bit of the output */
static uint64_t perf_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t perf_pattern_word(int rank, uint64_t seed, size_t w)
{
    return perf_mix(perf_mix(seed ^ ((uint64_t)(unsigned)rank << 48)) + (uint64_t)w);
}

void perf_pattern_fill(void *buf, size_t bytes, int rank, uint64_t seed)
{
    unsigned char *p = buf;
    size_t w;

    for (w = 0; (w + 1) * 8 <= bytes; w++) {
        uint64_t v = perf_pattern_word(rank, seed, w);
        memcpy(p + w * 8, &v, 8);
    }
    if (w * 8 < bytes) {
        uint64_t v = perf_pattern_word(rank, seed, w);
        memcpy(p + w * 8, &v, bytes - w * 8);
    }
}

size_t perf_pattern_check(const void *buf, size_t count, size_t esize, int rank, uint64_t seed,
                          const char *what)
{
    const unsigned char *p = buf;
    size_t wrong = 0, first = 0, bytes = count * esize;
    unsigned char want[64]; /* every datatype's size divides it: no element straddles two */

    for (size_t off = 0; esize && off < bytes; off += sizeof(want)) {
        size_t len = bytes - off < sizeof(want) ? bytes - off : sizeof(want);
        for (size_t w = 0; w * 8 < len; w++) {
            uint64_t v = perf_pattern_word(rank, seed, off / 8 + w);
            memcpy(want + w * 8, &v, 8);
        }
        if (!memcmp(p + off, want, len))
            continue;
        for (size_t b = 0; b < len; b += esize)
            if (memcmp(p + off + b, want + b, esize) && !wrong++)
                first = (off + b) / esize;
    }
    if (wrong)
        fprintf(stderr,
                "%s: %zu of %zu elements differ from rank %d's bytes; first at element %zu\n",
                what, wrong, count, rank, first);
    return wrong;
}

size_t perf_check_block(const void *buf, size_t count, size_t first, symcoll_dtype_t t,
                        symcoll_op_t op, int rank, int nranks, uint64_t seed, const char *what)
{
    refcheck_spec_t s = perf_spec(t, op, nranks, seed);
    const size_t es = refcheck_dtype_size(t);
    const uint64_t sign = es == 8 ? 0x8000000000000000ULL : 1ULL << (8 * es - 1);
    const int is_float = refcheck_is_float(t);
    size_t wrong = 0, at = 0;

    for (size_t i = 0; i < count; i++) {
        uint64_t got = 0, want = 0;
        refcheck_store(&want, 0, t, refcheck_expected(&s, first + i));
        memcpy(&got, (const char *)buf + i * es, es);
        if (got == want || (is_float && !((got | want) & ~sign)))
            continue;
        if (!wrong++)
            at = i;
    }
    if (wrong) {
        uint64_t w = 0;
        refcheck_store(&w, 0, t, refcheck_expected(&s, first + at));
        fprintf(stderr,
                "%s: rank %d: %zu of %zu elements of its block wrong; first at index %zu: "
                "got %.9g, expected %.9g\n",
                what, rank, wrong, count, first + at, refcheck_load(buf, at, t),
                refcheck_load(&w, 0, t));
    }
    return wrong;
}
