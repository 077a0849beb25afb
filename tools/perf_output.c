/* The benchmark engine's output on rank 0: the header and one row per size and
 * placement, as a text table, CSV or the rows of one JSON document. */
#include "perf_engine.h"
#include "perf_int.h"

#include <inttypes.h>
#include <stdio.h>

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

void perf_print_header(const perf_opts_t *o, const perf_backend_t *be)
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

void perf_print_row(const perf_opts_t *o, const perf_backend_t *be, size_t bytes, size_t count,
                    int inplace, const double sec[3], uint64_t wrong, int first)
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
