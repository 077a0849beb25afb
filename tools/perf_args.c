/* What the benchmark engine is asked to run: the collectives, datatypes and operators by
 * name, the shape of one size of a collective and its busbw factor (nccl-tests'
 * conventions), and the options every front-end shares. */
#include "perf_engine.h"
#include "perf_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int perf_coll_reduces(perf_coll_t coll)
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
