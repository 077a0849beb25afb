/* Benchmark engine shared by symcoll_perf and the MPI and NCCL peer drivers: the same
 * options, inputs, reference checks, timing method and output for every implementation
 * and collective timed. */
#include "perf_engine.h"
#include "refcheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PERF_AUTO_BYTES                                                                        \
    (256UL << 20) /* auto iteration count: about this much data per size                       \
                   */
#define PERF_AUTO_ITERS_MIN 3
#define PERF_AUTO_ITERS_MAX 1000

static const char *const perf_dtypes[SYMCOLL_DTYPE_LAST] = {
    [SYMCOLL_INT8] = "int8",       [SYMCOLL_UINT8] = "uint8",
    [SYMCOLL_INT32] = "int32",     [SYMCOLL_UINT32] = "uint32",
    [SYMCOLL_INT64] = "int64",     [SYMCOLL_UINT64] = "uint64",
    [SYMCOLL_FLOAT16] = "float16", [SYMCOLL_BFLOAT16] = "bfloat16",
    [SYMCOLL_FLOAT32] = "float32", [SYMCOLL_FLOAT64] = "float64",
};

static const char *const perf_ops[SYMCOLL_OP_LAST] = {
    [SYMCOLL_SUM] = "sum", [SYMCOLL_PROD] = "prod", [SYMCOLL_MIN] = "min",
    [SYMCOLL_MAX] = "max", [SYMCOLL_AVG] = "avg",
};

const char *perf_dtype_name(symcoll_dtype_t dtype)
{
    return (unsigned)dtype < SYMCOLL_DTYPE_LAST ? perf_dtypes[dtype] : "?";
}

const char *perf_op_name(symcoll_op_t op)
{
    return (unsigned)op < SYMCOLL_OP_LAST ? perf_ops[op] : "?";
}

int perf_dtype_from_name(const char *s, symcoll_dtype_t *dtype_p)
{
    static const struct {
        const char *alias;
        symcoll_dtype_t dtype;
    } aliases[] = {
        {"float", SYMCOLL_FLOAT32}, {"double", SYMCOLL_FLOAT64}, {"half", SYMCOLL_FLOAT16},
        {"bf16", SYMCOLL_BFLOAT16}, {"int", SYMCOLL_INT32},      {"uint", SYMCOLL_UINT32},
        {"fp32", SYMCOLL_FLOAT32},  {"fp64", SYMCOLL_FLOAT64},   {"fp16", SYMCOLL_FLOAT16},
    };
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
        if (!strcasecmp(s, perf_dtypes[t])) {
            *dtype_p = (symcoll_dtype_t)t;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (!strcasecmp(s, aliases[i].alias)) {
            *dtype_p = aliases[i].dtype;
            return 0;
        }
    }
    return -1;
}

static const char *const perf_colls[PERF_COLL_LAST] = {
    [PERF_COLL_ALLREDUCE] = "allreduce", [PERF_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [PERF_COLL_ALLGATHER] = "allgather", [PERF_COLL_BROADCAST] = "broadcast",
    [PERF_COLL_BARRIER] = "barrier",
};

const char *perf_coll_name(perf_coll_t coll)
{
    return (unsigned)coll < PERF_COLL_LAST ? perf_colls[coll] : "?";
}

int perf_coll_from_name(const char *s, perf_coll_t *coll_p)
{
    for (int k = 0; k < PERF_COLL_LAST; k++) {
        if (!strcasecmp(s, perf_colls[k])) {
            *coll_p = (perf_coll_t)k;
            return 0;
        }
    }
    return -1;
}

/* the collectives that reduce (the others copy bytes: -o does not apply) */
static int perf_coll_reduces(perf_coll_t coll)
{
    return coll == PERF_COLL_ALLREDUCE || coll == PERF_COLL_REDUCE_SCATTER;
}

void perf_coll_shape(perf_coll_t coll, size_t size, size_t esize, int nranks, perf_shape_t *sh)
{
    size_t elems = esize ? size / esize : 0, n = nranks > 0 ? (size_t)nranks : 1;

    memset(sh, 0, sizeof(*sh));
    switch (coll) {
    case PERF_COLL_REDUCE_SCATTER:
        sh->count = elems / n;
        sh->send_elems = sh->count * n;
        sh->recv_elems = sh->count;
        sh->bytes = sh->send_elems * esize;
        break;
    case PERF_COLL_ALLGATHER:
        sh->count = elems / n;
        sh->send_elems = sh->count;
        sh->recv_elems = sh->count * n;
        sh->bytes = sh->recv_elems * esize;
        break;
    case PERF_COLL_BARRIER:
        break;
    default: /* all-reduce, broadcast */
        sh->count = sh->send_elems = sh->recv_elems = elems;
        sh->bytes = elems * esize;
        break;
    }
}

double perf_busbw_factor(perf_coll_t coll, int nranks)
{
    double n = nranks;

    if (nranks < 1)
        return 0;
    switch (coll) {
    case PERF_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case PERF_COLL_REDUCE_SCATTER:
    case PERF_COLL_ALLGATHER:
        return (n - 1) / n;
    case PERF_COLL_BROADCAST:
        return 1.0;
    default:
        return 0;
    }
}

int perf_op_from_name(const char *s, symcoll_op_t *op_p)
{
    for (int o = 0; o < SYMCOLL_OP_LAST; o++) {
        if (!strcasecmp(s, perf_ops[o])) {
            *op_p = (symcoll_op_t)o;
            return 0;
        }
    }
    return -1;
}

int perf_parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (!*s || *s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

static void perf_usage(FILE *f, const char *prog, const perf_extra_opts_t *extra)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  -b MINBYTES   smallest message size (default 8; K, M, G suffixes)\n"
            "  -e MAXBYTES   largest message size (default 64M)\n"
            "  -f FACTOR     size multiplier between steps (default 2)\n"
            "  -d TYPE       int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32\n"
            "                float64 (default float32, as nccl-tests)\n"
            "  -o OP         sum prod min max avg (default sum)\n"
            "  -n ITERS      timed calls per repeat (default auto: about 256 MiB moved per\n"
            "                size, between 3 and 1000 calls)\n"
            "  -w WARMUP     untimed calls before the repeats (default auto: ITERS/10, 2..20)\n"
            "  -r REPEATS    timed repeats; the time reported is their median (default 5)\n"
            "  -c 0|1        check every repeat's result (default 1); with 0 the wrong\n"
            "                column is N/A\n"
            "  -a 0|1|2|3    time_us over ranks, as nccl-tests: 0 rank 0's, 1 the mean,\n"
            "                2 the minimum, 3 the maximum (default 3, the slowest rank;\n"
            "                nccl-tests' default is 1)\n"
            "  --coll COLL   the collective timed: allreduce (default), reduce_scatter,\n"
            "                allgather, broadcast or barrier\n"
            "  --root ROOT   broadcast's root rank (default 0)\n"
            "  --inplace     also run in place (rows with placement 'in'; reduce_scatter:\n"
            "                recv = send + rank x count, allgather: send = recv + rank x\n"
            "                count, broadcast: send == recv; none for barrier); out of place\n"
            "                always runs\n"
            "  --same-buffer out of place, every call sends the same buffer and receives\n"
            "                into the same buffer, as OSU's benchmarks do (default: two\n"
            "                input buffers in turn)\n"
            "  --csv         print CSV: size,count,type,redop,algo,placement,time_us,\n"
            "                algbw_GBs,busbw_GBs,wrong,min_us,max_us (wrong empty with -c 0)\n"
            "  --json        print one JSON document: the run's parameters and a 'rows' array\n"
            "                with the CSV columns (wrong null with -c 0)\n"
            "%s"
            "  -h, --help    this text\n"
            "Timing: out of place, every rank starts a repeat together (barrier) and runs\n"
            "ITERS calls back to back, rotating between two input buffers (one with\n"
            "--same-buffer); in place, every call restores its input (untimed), passes a\n"
            "barrier and is timed alone. Each rank's per-call mean of a repeat is combined\n"
            "over ranks as -a says (time_us), and as the minimum (min_us) and maximum\n"
            "(max_us) over ranks, as OSU's benchmarks print them; each column is the\n"
            "median over repeats.\n"
            "Sizes as nccl-tests: size is the larger buffer's bytes (reduce_scatter: send,\n"
            "allgather: receive), count the call's count (reduce_scatter and allgather: per\n"
            "rank); barrier has one row of size 0 and prints time only.\n"
            "algbw = size / time_us, busbw = algbw x 2(n-1)/n for allreduce, (n-1)/n for\n"
            "reduce_scatter and allgather, 1 for broadcast (GB/s, 1e9).\n"
            "Checking: inputs are exact small integers from (rank, index, seed) with a fresh\n"
            "seed every repeat (out of place: a different one for each input buffer), byte\n"
            "patterns of (rank, seed) for allgather and broadcast; the result of the last\n"
            "call of every repeat is compared bitwise with a reference computed locally\n"
            "(reduce_scatter: this rank's block of the reference reduction). wrong = wrong\n"
            "elements summed over ranks and repeats.\n"
            "Exit status: 0 all right, 1 a wrong result, 2 a failed call or bad option.\n",
            prog, extra && extra->usage ? extra->usage : "");
}

int perf_parse_args(int argc, char **argv, const char *prog, perf_opts_t *opts,
                    const perf_extra_opts_t *extra)
{
    enum { OPT_INPLACE = 256, OPT_CSV, OPT_JSON, OPT_HELP, OPT_COLL, OPT_ROOT, OPT_SAME };
    static const struct option base_long[] = {
        {"inplace", no_argument, NULL, OPT_INPLACE},
        {"same-buffer", no_argument, NULL, OPT_SAME},
        {"coll", required_argument, NULL, OPT_COLL},
        {"root", required_argument, NULL, OPT_ROOT},
        {"csv", no_argument, NULL, OPT_CSV},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, OPT_HELP},
    };
    const size_t nbase = sizeof(base_long) / sizeof(base_long[0]);
    struct option longopts[32];
    char shortopts[64] = "b:e:f:d:o:n:w:r:c:a:h";
    size_t nlong = 0;
    long v;
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->minbytes = 8;
    opts->maxbytes = 64UL << 20;
    opts->factor = 2;
    opts->dtype = SYMCOLL_FLOAT32;
    opts->op = SYMCOLL_SUM;
    opts->iters = 0;
    opts->warmup = -1;
    opts->repeats = 5;
    opts->check = 1;
    opts->avg_mode = PERF_AVG_MAX;
    opts->algo = "auto";

    for (size_t i = 0; i < nbase; i++)
        longopts[nlong++] = base_long[i];
    if (extra) {
        if (extra->shortopts)
            strncat(shortopts, extra->shortopts, sizeof(shortopts) - strlen(shortopts) - 1);
        for (const struct option *lo = extra->longopts; lo && lo->name && nlong < 31; lo++)
            longopts[nlong++] = *lo;
    }
    memset(&longopts[nlong], 0, sizeof(longopts[0]));

    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (perf_parse_size(optarg, &opts->minbytes))
                goto bad;
            break;
        case 'e':
            if (perf_parse_size(optarg, &opts->maxbytes))
                goto bad;
            break;
        case 'f':
            if (parse_long(optarg, 2, &v))
                goto bad;
            opts->factor = (unsigned long)v;
            break;
        case 'd':
            if (perf_dtype_from_name(optarg, &opts->dtype))
                goto bad;
            break;
        case 'o':
            if (perf_op_from_name(optarg, &opts->op))
                goto bad;
            break;
        case 'n':
            if (parse_long(optarg, 1, &opts->iters))
                goto bad;
            break;
        case 'w':
            if (parse_long(optarg, 0, &opts->warmup))
                goto bad;
            break;
        case 'r':
            if (parse_long(optarg, 1, &opts->repeats))
                goto bad;
            break;
        case 'c':
            if (parse_long(optarg, 0, &v) || v > 1)
                goto bad;
            opts->check = (int)v;
            break;
        case 'a':
            if (parse_long(optarg, 0, &v) || v > PERF_AVG_MAX)
                goto bad;
            opts->avg_mode = (int)v;
            break;
        case OPT_INPLACE:
            opts->inplace = 1;
            break;
        case OPT_SAME:
            opts->same_buffer = 1;
            break;
        case OPT_COLL:
            if (perf_coll_from_name(optarg, &opts->coll))
                goto bad;
            break;
        case OPT_ROOT:
            if (parse_long(optarg, 0, &v) || v > 0x7fffffff)
                goto bad;
            opts->root = (int)v;
            break;
        case OPT_CSV:
            opts->csv = 1;
            break;
        case OPT_JSON:
            opts->json = 1;
            break;
        case 'h':
        case OPT_HELP:
            perf_usage(stdout, prog, extra);
            return 1;
        case '?':
            perf_usage(stderr, prog, extra);
            return -1;
        default:
            if (extra && extra->handle && !extra->handle(c, optarg, extra->ctx))
                break;
            goto bad;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
        return -1;
    }
    if (opts->csv && opts->json) {
        fprintf(stderr, "%s: --csv and --json exclude each other\n", prog);
        return -1;
    }
    if (opts->minbytes > opts->maxbytes) {
        fprintf(stderr, "%s: -b %zu is larger than -e %zu\n", prog, opts->minbytes,
                opts->maxbytes);
        return -1;
    }
    return 0;
bad:
    if (c < 256)
        fprintf(stderr, "%s: bad value '%s' for option -%c (see --help)\n", prog,
                optarg ? optarg : "", c);
    else
        fprintf(stderr, "%s: bad value '%s' for option --%s (see --help)\n", prog,
                optarg ? optarg : "",
                c == OPT_COLL   ? "coll"
                : c == OPT_ROOT ? "root"
                                : "(a long option)");
    return -1;
}

/* ---- inputs and reference: tools/refcheck.c ----------------------------------------- */

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

/* ---- timing loop -------------------------------------------------------------------- */

typedef struct perf_state {
    const perf_opts_t *o;
    perf_backend_t *be;
    void *in[2]; /* out-of-place inputs, rotated every call */
    void *out;
    void *stage; /* host copy for fill and check when buffers are device memory */
    uint64_t seed;
    size_t esize;
} perf_state_t;

#define PERF_CALL(st, what, expr)                                                              \
    do {                                                                                       \
        int rc_ = (expr);                                                                      \
        if (rc_) {                                                                             \
            fprintf(stderr, "rank %d: %s failed: %s\n", (st)->be->rank, (what),                \
                    (st)->be->strerror((st)->be->ctx, rc_));                                   \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* The buffers of one call: in place, both are parts of out (see perf_backend_t). */
static void perf_buffers(const perf_state_t *st, const perf_shape_t *sh, int inplace, int input,
                         const void **send_p, void **recv_p)
{
    char *out = st->out;
    size_t block = sh->count * st->esize * (size_t)st->be->rank;

    if (!inplace) {
        *send_p = st->in[input];
        *recv_p = out;
        return;
    }
    *send_p = out;
    *recv_p = out;
    if (st->o->coll == PERF_COLL_REDUCE_SCATTER)
        *recv_p = out + block;
    else if (st->o->coll == PERF_COLL_ALLGATHER)
        *send_p = out + block;
}

static int perf_call(perf_state_t *st, const perf_shape_t *sh, const void *send, void *recv)
{
    const perf_opts_t *o = st->o;
    perf_backend_t *be = st->be;

    switch (o->coll) {
    case PERF_COLL_REDUCE_SCATTER:
        return be->reduce_scatter(be->ctx, send, recv, sh->count, o->dtype, o->op);
    case PERF_COLL_ALLGATHER:
        return be->allgather(be->ctx, send, recv, sh->count, o->dtype);
    case PERF_COLL_BROADCAST:
        return be->broadcast(be->ctx, send, recv, sh->count, o->dtype, o->root);
    case PERF_COLL_BARRIER:
        return be->barrier_coll(be->ctx);
    default:
        return be->allreduce(be->ctx, send, recv, sh->count, o->dtype, o->op);
    }
}

/* Writes this rank's input of @a seed into @a buf: an out-of-place input buffer, or
 * (in place) out, where the input is laid out as perf_buffers places it and the rest
 * of the receive buffer is poisoned. */
static int perf_fill_input(perf_state_t *st, const perf_shape_t *sh, int inplace, void *buf,
                           uint64_t seed)
{
    const perf_opts_t *o = st->o;
    perf_backend_t *be = st->be;
    const size_t es = st->esize, block = sh->count * es;
    char *host = be->device_mem ? st->stage : buf;
    size_t bytes = 0;

    switch (o->coll) {
    case PERF_COLL_ALLREDUCE:
    case PERF_COLL_REDUCE_SCATTER:
        bytes = sh->send_elems * es;
        perf_fill(host, sh->send_elems, o->dtype, o->op, be->rank, be->nranks, seed);
        break;
    case PERF_COLL_ALLGATHER:
        if (inplace) {
            bytes = sh->recv_elems * es;
            memset(host, 0xa5, bytes);
            perf_pattern_fill(host + block * (size_t)be->rank, block, be->rank, seed);
        } else {
            bytes = block;
            perf_pattern_fill(host, block, be->rank, seed);
        }
        break;
    case PERF_COLL_BROADCAST:
        if (be->rank == o->root) {
            bytes = block;
            perf_pattern_fill(host, block, o->root, seed);
        } else if (inplace) {
            bytes = block;
            memset(host, 0xa5, bytes);
        } /* else: sendbuf is not read off the root */
        break;
    default:
        break;
    }
    if (be->device_mem && bytes)
        PERF_CALL(st, "upload", be->upload(be->ctx, buf, host, bytes));
    return 0;
}

static int perf_poison(perf_state_t *st, void *buf, size_t count)
{
    perf_backend_t *be = st->be;
    void *host = be->device_mem ? st->stage : buf;

    memset(host, 0xa5, count * st->esize);
    if (be->device_mem && count)
        PERF_CALL(st, "upload", be->upload(be->ctx, buf, host, count * st->esize));
    return 0;
}

/* Compares the result of the inputs of @a seed in @a recv with the reference. */
static int perf_check_result(perf_state_t *st, const perf_shape_t *sh, const void *recv,
                             uint64_t seed, const char *placement, size_t *wrong_p)
{
    const perf_opts_t *o = st->o;
    perf_backend_t *be = st->be;
    const size_t es = st->esize, block = sh->count * es;
    const unsigned char *host = recv;
    char what[96];

    *wrong_p = 0;
    if (o->coll == PERF_COLL_BARRIER)
        return 0;
    if (be->device_mem && sh->recv_elems) {
        PERF_CALL(st, "download", be->download(be->ctx, st->stage, recv, sh->recv_elems * es));
        host = st->stage;
    }
    snprintf(what, sizeof(what), "%s size %zu %s", perf_coll_name(o->coll), sh->bytes,
             placement);
    switch (o->coll) {
    case PERF_COLL_REDUCE_SCATTER:
        *wrong_p = perf_check_block(host, sh->count, sh->count * (size_t)be->rank, o->dtype,
                                    o->op, be->rank, be->nranks, seed, what);
        break;
    case PERF_COLL_ALLGATHER:
        for (int q = 0; q < be->nranks; q++)
            *wrong_p +=
                perf_pattern_check(host + block * (size_t)q, sh->count, es, q, seed, what);
        break;
    case PERF_COLL_BROADCAST:
        *wrong_p = perf_pattern_check(host, sh->count, es, o->root, seed, what);
        break;
    default:
        *wrong_p =
            perf_check(host, sh->count, o->dtype, o->op, be->rank, be->nranks, seed, what);
        break;
    }
    return 0;
}

static int perf_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double perf_median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof(*v), perf_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Combines this rank's per-call time @a t over the ranks: as -a says (into agg_p), and
 * the minimum and maximum. The mean is a sum of picoseconds (exact to 1 ps, up to
 * 5 hours per call summed over ranks): the backends sum integers only. */
static int perf_over_ranks(perf_backend_t *be, int mode, double t, double *agg_p, double *min_p,
                           double *max_p)
{
    double mx = t, neg = -t;
    uint64_t ps = (uint64_t)(t * 1e12 + 0.5);
    int rc;

    if ((rc = be->max_double(be->ctx, &mx)) || (rc = be->max_double(be->ctx, &neg)))
        return rc;
    if (mode == PERF_AVG_MEAN && (rc = be->sum_u64(be->ctx, &ps)))
        return rc;
    *min_p = -neg;
    *max_p = mx;
    switch (mode) {
    case PERF_AVG_RANK0:
        *agg_p = t;
        break; /* rank 0 prints its own */
    case PERF_AVG_MEAN:
        *agg_p = (double)ps * 1e-12 / be->nranks;
        break;
    case PERF_AVG_MIN:
        *agg_p = -neg;
        break;
    default:
        *agg_p = mx;
        break;
    }
    return 0;
}

/* One size and placement: warm-up, repeats, check. Writes the median times (seconds;
 * over ranks as -a says, their minimum and maximum) and the wrong count (summed over
 * ranks and repeats; UINT64_MAX with -c 0 and for barrier, which has nothing to check). */
static int perf_measure(perf_state_t *st, const perf_shape_t *sh, int inplace, double time_p[3],
                        uint64_t *wrong_p)
{
    const perf_opts_t *o = st->o;
    perf_backend_t *be = st->be;
    const size_t bytes = sh->bytes;
    const char *name = perf_coll_name(o->coll);
    const int check = o->check && o->coll != PERF_COLL_BARRIER;
    /* the graph hook times all-reduce only */
    const int loop = be->allreduce_loop && o->coll == PERF_COLL_ALLREDUCE;
    /* out of place, call it sends in[it & alt] */
    const int alt = o->same_buffer ? 0 : 1;
    void *const ins[2] = {st->in[0], st->in[alt]};
    long iters = o->iters, warmup = o->warmup;
    double *times, t, sum;
    uint64_t wrong_total = 0;
    const void *send;
    void *recv;

    if (!iters) {
        iters = (long)(PERF_AUTO_BYTES / (bytes ? bytes : 1));
        iters = iters < PERF_AUTO_ITERS_MIN   ? PERF_AUTO_ITERS_MIN
                : iters > PERF_AUTO_ITERS_MAX ? PERF_AUTO_ITERS_MAX
                                              : iters;
    }
    if (warmup < 0) {
        warmup = iters / 10;
        warmup = warmup < 2 ? 2 : warmup > 20 ? 20 : warmup;
    }
    times = calloc(3 * (size_t)o->repeats, sizeof(*times)); /* agg, min, max */
    if (!times) {
        fprintf(stderr, "rank %d: out of memory\n", be->rank);
        return -1;
    }

#define MEASURE_CALL(what, expr)                                                               \
    do {                                                                                       \
        int rc_ = (expr);                                                                      \
        if (rc_) {                                                                             \
            fprintf(stderr, "rank %d: %s (size %zu, %s) failed: %s\n", be->rank, (what),       \
                    bytes, inplace ? "in" : "out", be->strerror(be->ctx, rc_));                \
            free(times);                                                                       \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

    if (inplace) {
        perf_buffers(st, sh, 1, 0, &send, &recv);
        for (long w = 0; w < warmup; w++) {
            if (perf_fill_input(st, sh, 1, st->out, ++st->seed))
                goto err;
            MEASURE_CALL(name, perf_call(st, sh, send, recv));
        }
    } else {
        perf_buffers(st, sh, 0, 0, &send, &recv);
        if (perf_fill_input(st, sh, 0, st->in[0], ++st->seed))
            goto err;
        if (loop)
            MEASURE_CALL(name, be->allreduce_loop(be->ctx, ins, st->out, sh->count, o->dtype,
                                                  o->op, iters));
        else
            for (long w = 0; w < warmup; w++)
                MEASURE_CALL(name, perf_call(st, sh, send, recv));
    }

    for (long r = 0; r < o->repeats; r++) {
        uint64_t seed_last, wrong = 0;
        size_t wrong_local = 0;

        if (inplace) {
            perf_buffers(st, sh, 1, 0, &send, &recv);
            sum = 0;
            for (long it = 0; it < iters; it++) {
                if (perf_fill_input(st, sh, 1, st->out, ++st->seed))
                    goto err;
                MEASURE_CALL("barrier", be->barrier(be->ctx));
                MEASURE_CALL("timer", be->timer_start(be->ctx));
                MEASURE_CALL(name, perf_call(st, sh, send, recv));
                MEASURE_CALL("timer", be->timer_stop(be->ctx, &t));
                sum += t;
            }
            seed_last = st->seed;
        } else {
            uint64_t seeds[2];
            seeds[0] = ++st->seed;
            seeds[1] = ++st->seed;
            /* unchecked, the inputs of the first repeat serve every repeat */
            if ((check || r == 0) &&
                (perf_fill_input(st, sh, 0, st->in[0], seeds[0]) ||
                 (alt && perf_fill_input(st, sh, 0, st->in[1], seeds[1])) ||
                 perf_poison(st, st->out, sh->recv_elems)))
                goto err;
            MEASURE_CALL("barrier", be->barrier(be->ctx));
            MEASURE_CALL("timer", be->timer_start(be->ctx));
            if (loop) {
                MEASURE_CALL(name, be->allreduce_loop(be->ctx, ins, st->out, sh->count,
                                                      o->dtype, o->op, iters));
            } else {
                for (long it = 0; it < iters; it++) {
                    perf_buffers(st, sh, 0, (int)(it & alt), &send, &recv);
                    MEASURE_CALL(name, perf_call(st, sh, send, recv));
                }
            }
            MEASURE_CALL("timer", be->timer_stop(be->ctx, &sum));
            seed_last = seeds[(iters - 1) & alt];
            perf_buffers(st, sh, 0, 0, &send, &recv);
        }
        if (check &&
            perf_check_result(st, sh, recv, seed_last, inplace ? "in" : "out", &wrong_local))
            goto err;
        MEASURE_CALL("time over ranks",
                     perf_over_ranks(be, o->avg_mode, sum / (double)iters, &times[r],
                                     &times[o->repeats + r], &times[2 * o->repeats + r]));
        if (check) {
            wrong = wrong_local;
            MEASURE_CALL("sum over ranks", be->sum_u64(be->ctx, &wrong));
            wrong_total += wrong;
        }
    }
#undef MEASURE_CALL

    for (int k = 0; k < 3; k++)
        time_p[k] = perf_median(times + k * o->repeats, o->repeats);
    *wrong_p = check ? wrong_total : UINT64_MAX;
    free(times);
    return 0;
err:
    free(times);
    return -1;
}

static const char *const perf_avg_names[] = {"rank0", "mean", "min", "max"};

/* a JSON string (the banner and names hold no control characters, but may hold quotes) */
static void perf_json_string(const char *v)
{
    putchar('"');
    for (const char *c = v ? v : ""; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if ((unsigned char)*c < 0x20)
            printf("\\u%04x", (unsigned)(unsigned char)*c);
        else
            putchar(*c);
    }
    putchar('"');
}

/* the redop column: "none" for the collectives that do not reduce, as nccl-tests */
static const char *perf_redop_name(const perf_opts_t *o)
{
    return perf_coll_reduces(o->coll) ? perf_op_name(o->op) : "none";
}

static void perf_print_header(const perf_opts_t *o, const perf_backend_t *be)
{
    if (o->csv) {
        printf("size,count,type,redop,algo,placement,time_us,algbw_GBs,busbw_GBs,wrong,"
               "min_us,max_us\n");
    } else if (o->json) {
        printf("{\n  \"banner\": ");
        perf_json_string(o->banner);
        printf(",\n  \"coll\": \"%s\",\n", perf_coll_name(o->coll));
        if (o->coll == PERF_COLL_BROADCAST)
            printf("  \"root\": %d,\n", o->root);
        printf("  \"ranks\": %d,\n  \"type\": \"%s\",\n  \"redop\": \"%s\",\n"
               "  \"algo\": ",
               be->nranks, perf_dtype_name(o->dtype), perf_redop_name(o));
        perf_json_string(o->algo);
        printf(",\n  \"minbytes\": %zu,\n  \"maxbytes\": %zu,\n  \"factor\": %lu,\n",
               o->minbytes, o->maxbytes, o->factor);
        /* null: chosen per size (auto) */
        if (o->iters)
            printf("  \"iters\": %ld,\n", o->iters);
        else
            printf("  \"iters\": null,\n");
        if (o->warmup >= 0)
            printf("  \"warmup\": %ld,\n", o->warmup);
        else
            printf("  \"warmup\": null,\n");
        printf("  \"repeats\": %ld,\n  \"check\": %s,\n  \"same_buffer\": %s,\n"
               "  \"time_over_ranks\": \"%s\",\n  \"rows\": [",
               o->repeats, o->check ? "true" : "false", o->same_buffer ? "true" : "false",
               perf_avg_names[o->avg_mode]);
    } else {
        printf("# %s\n", o->banner ? o->banner : "");
        char iters[32] = "auto", warmup[32] = "auto";
        if (o->iters)
            snprintf(iters, sizeof(iters), "%ld", o->iters);
        if (o->warmup >= 0)
            snprintf(warmup, sizeof(warmup), "%ld", o->warmup);
        char root[24] = "";
        if (o->coll == PERF_COLL_BROADCAST)
            snprintf(root, sizeof(root), " (root %d)", o->root);
        printf("# collective %s%s, ranks %d, type %s, op %s, algo %s, sizes %zu..%zu x%lu, "
               "iters %s, warmup %s, repeats %ld, check %s%s\n",
               perf_coll_name(o->coll), root, be->nranks, perf_dtype_name(o->dtype),
               perf_redop_name(o), o->algo, o->minbytes, o->maxbytes, o->factor, iters, warmup,
               o->repeats, o->check ? "on" : "off", o->same_buffer ? ", same buffer" : "");
        printf("# time_us: median over repeats of the per-call mean, %s over ranks (-a %d); "
               "min_us, max_us: min and max over ranks\n",
               perf_avg_names[o->avg_mode], o->avg_mode);
        printf("#%11s %12s %9s %6s %10s %5s %12s %12s %12s %10s %10s %7s\n", "size", "count",
               "type", "redop", "algo", "place", "time_us", "min_us", "max_us", "algbw_GBs",
               "busbw_GBs", "#wrong");
    }
    fflush(stdout);
}

/* sec[3]: time over ranks as -a says, min and max over ranks; wrong UINT64_MAX: -c 0 */
static void perf_print_row(const perf_opts_t *o, const perf_backend_t *be, size_t bytes,
                           size_t count, int inplace, const double sec[3], uint64_t wrong,
                           int first)
{
    const char *algo = be->algo_name ? be->algo_name(be->ctx, o->coll, bytes) : o->algo;
    double algbw = sec[0] > 0 ? (double)bytes / sec[0] / 1e9 : 0;
    double busbw = algbw * perf_busbw_factor(o->coll, be->nranks);
    char wtext[24];

    if (o->csv) {
        if (wrong == UINT64_MAX)
            wtext[0] = '\0';
        else
            snprintf(wtext, sizeof(wtext), "%" PRIu64, wrong);
        printf("%zu,%zu,%s,%s,%s,%s,%.3f,%.4f,%.4f,%s,%.3f,%.3f\n", bytes, count,
               perf_dtype_name(o->dtype), perf_redop_name(o), algo, inplace ? "in" : "out",
               sec[0] * 1e6, algbw, busbw, wtext, sec[1] * 1e6, sec[2] * 1e6);
    } else if (o->json) {
        if (wrong == UINT64_MAX)
            snprintf(wtext, sizeof(wtext), "null");
        else
            snprintf(wtext, sizeof(wtext), "%" PRIu64, wrong);
        printf("%s\n    {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", "
               "\"algo\": ",
               first ? "" : ",", bytes, count, perf_dtype_name(o->dtype), perf_redop_name(o));
        perf_json_string(algo);
        printf(", \"placement\": \"%s\", \"time_us\": %.3f, \"min_us\": %.3f, "
               "\"max_us\": %.3f, \"algbw_GBs\": %.4f, \"busbw_GBs\": %.4f, \"wrong\": %s}",
               inplace ? "in" : "out", sec[0] * 1e6, sec[1] * 1e6, sec[2] * 1e6, algbw, busbw,
               wtext);
    } else {
        if (wrong == UINT64_MAX)
            snprintf(wtext, sizeof(wtext), "N/A");
        else
            snprintf(wtext, sizeof(wtext), "%" PRIu64, wrong);
        printf(" %11zu %12zu %9s %6s %10s %5s %12.2f %12.2f %12.2f %10.3f %10.3f %7s\n", bytes,
               count, perf_dtype_name(o->dtype), perf_redop_name(o), algo,
               inplace ? "in" : "out", sec[0] * 1e6, sec[1] * 1e6, sec[2] * 1e6, algbw, busbw,
               wtext);
    }
    fflush(stdout);
}

int perf_run(const perf_opts_t *o, perf_backend_t *be)
{
    perf_state_t st = {.o = o, .be = be, .esize = refcheck_dtype_size(o->dtype)};
    size_t maxcount = o->coll == PERF_COLL_BARRIER ? 1 : o->maxbytes / st.esize;
    size_t allocbytes = (maxcount ? maxcount : 1) * st.esize;
    int result = 0, nrows = 0, header = 0;
    double busbw_sum = 0;
    uint64_t wrong_sum = 0;

    const int missing = (o->coll == PERF_COLL_REDUCE_SCATTER && !be->reduce_scatter) ||
                        (o->coll == PERF_COLL_ALLGATHER && !be->allgather) ||
                        (o->coll == PERF_COLL_BROADCAST && !be->broadcast) ||
                        (o->coll == PERF_COLL_BARRIER && !be->barrier_coll);

    if (missing) {
        if (be->rank == 0)
            fprintf(stderr, "%s is not supported by this implementation\n",
                    perf_coll_name(o->coll));
        return 2;
    }
    /* the copying collectives move bytes: the operator does not matter to them */
    if (perf_coll_reduces(o->coll) && !be->supports(be->ctx, o->dtype, o->op)) {
        if (be->rank == 0)
            fprintf(stderr, "%s %s is not supported by this implementation\n",
                    perf_dtype_name(o->dtype), perf_op_name(o->op));
        return 2;
    }
    if (o->coll == PERF_COLL_BROADCAST && o->root >= be->nranks) {
        if (be->rank == 0)
            fprintf(stderr, "--root %d: there are %d ranks\n", o->root, be->nranks);
        return 2;
    }
    if (be->nranks > REFCHECK_MAX_EXACT_RANKS && be->rank == 0)
        fprintf(stderr,
                "warning: inputs are exact only up to %d ranks; wrong counts above "
                "that may be rounding\n",
                REFCHECK_MAX_EXACT_RANKS);
    /* a fixed starting seed per process: every rank draws the same sequence */
    st.seed = 0x5eed;
    for (int b = 0; b < 2; b++) {
        if (be->alloc(be->ctx, allocbytes, &st.in[b])) {
            fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", be->rank, allocbytes);
            result = 2;
            goto out;
        }
    }
    if (be->alloc(be->ctx, allocbytes, &st.out)) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", be->rank, allocbytes);
        result = 2;
        goto out;
    }
    if (be->device_mem && !(st.stage = malloc(allocbytes))) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", be->rank, allocbytes);
        result = 2;
        goto out;
    }
    if (be->rank == 0)
        perf_print_header(o, be);
    header = 1;

    for (size_t size = o->minbytes;;) {
        /* barrier has no in-place form */
        const int places = o->inplace && o->coll != PERF_COLL_BARRIER ? 2 : 1;
        size_t next;
        perf_shape_t sh;

        perf_coll_shape(o->coll, size, st.esize, be->nranks, &sh);
        for (int inplace = 0; inplace < places; inplace++) {
            double sec[3];
            uint64_t wrong;
            if (perf_measure(&st, &sh, inplace, sec, &wrong)) {
                result = 2;
                if (be->abort)
                    be->abort(be->ctx);
                goto out;
            }
            if (wrong && wrong != UINT64_MAX && result == 0)
                result = 1;
            if (be->rank == 0)
                perf_print_row(o, be, sh.bytes, sh.count, inplace, sec, wrong, nrows == 0);
            if (sec[0] > 0)
                busbw_sum +=
                    (double)sh.bytes / sec[0] / 1e9 * perf_busbw_factor(o->coll, be->nranks);
            if (wrong != UINT64_MAX)
                wrong_sum += wrong;
            nrows++;
        }
        /* barrier: one row, its size does not vary */
        if (size >= o->maxbytes || o->coll == PERF_COLL_BARRIER)
            break;
        next = size ? size * o->factor : st.esize;
        if (next > o->maxbytes || (size && next / o->factor != size))
            break;
        size = next;
    }
    if (be->rank == 0 && !o->csv && !o->json) {
        if (o->check && o->coll == PERF_COLL_BARRIER)
            printf("# %d rows (barrier: time only, nothing to check)\n", nrows);
        else if (o->check)
            printf("# %d rows, average busbw %.3f GB/s, wrong elements %" PRIu64 "%s\n", nrows,
                   nrows ? busbw_sum / nrows : 0.0, wrong_sum, wrong_sum ? " (FAILED)" : "");
        else
            printf("# %d rows, average busbw %.3f GB/s, results not checked (-c 0)\n", nrows,
                   nrows ? busbw_sum / nrows : 0.0);
    }
out:
    /* the document is closed also after a failure: "status" says what happened */
    if (be->rank == 0 && o->json && header) {
        printf("%s  ],\n  \"average_busbw_GBs\": %.4f,\n  \"wrong\": ", nrows ? "\n" : "",
               nrows ? busbw_sum / nrows : 0.0);
        if (o->check)
            printf("%" PRIu64, wrong_sum);
        else
            printf("null");
        printf(",\n  \"status\": \"%s\"\n}\n", result == 2   ? "failed"
                                               : result == 1 ? "wrong"
                                                             : "ok");
        fflush(stdout);
    }
    if (st.out)
        be->free(be->ctx, st.out);
    for (int b = 1; b >= 0; b--)
        if (st.in[b])
            be->free(be->ctx, st.in[b]);
    free(st.stage);
    return result;
}
