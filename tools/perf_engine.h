/* Benchmark engine shared by symcoll_perf and the MPI peer driver (bench/): options,
 * deterministic inputs, the independent reference check, timing loop and output. */
#ifndef SYMCOLL_PERF_ENGINE_H
#define SYMCOLL_PERF_ENGINE_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "symcoll.h" /* only the datatype and operator enums: the engine links no library */

/* What a front-end (symcoll, MPI) provides. Every int-returning hook returns 0 on
 * success; on failure, strerror(ctx, rc) says why. */
typedef struct perf_backend {
    void *ctx;
    int rank;
    int nranks;
    int device_mem; /* buffers are not host-accessible: fill and check through upload/download
                     */
    int (*supports)(void *ctx, symcoll_dtype_t dtype, symcoll_op_t op); /* 1 if it can run */
    int (*alloc)(void *ctx, size_t bytes, void **ptr_p);
    void (*free)(void *ctx, void *ptr);
    int (*upload)(void *ctx, void *dst, const void *src, size_t bytes);   /* device_mem only */
    int (*download)(void *ctx, void *dst, const void *src, size_t bytes); /* device_mem only */
    int (*allreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                     symcoll_dtype_t dtype, symcoll_op_t op);
    int (*barrier)(void *ctx);
    int (*max_double)(void *ctx, double *value); /* in place, over all ranks */
    int (*sum_u64)(void *ctx, uint64_t *value);  /* in place, over all ranks */
    int (*timer_start)(void *ctx);
    int (*timer_stop)(void *ctx, double *seconds_p); /* waits for the work started since */
    const char *(*strerror)(void *ctx, int rc);
    void (*abort)(void *ctx); /* after a failure: make peers fail fast (may be NULL) */
    /* Optional: @a iters out-of-place calls, sendbuf in[it & 1], as one unit (a CUDA
     * front-end captures them into a graph once and replays it). NULL: the engine loops
     * over allreduce. The engine calls it for the warm-up too, before any timing. */
    int (*allreduce_loop)(void *ctx, void *const in[2], void *recvbuf, size_t count,
                          symcoll_dtype_t dtype, symcoll_op_t op, long iters);
    /* name of the algorithm that serves @a bytes (may be NULL: opts.algo is printed) */
    const char *(*algo_name)(void *ctx, size_t bytes);
} perf_backend_t;

typedef struct perf_opts {
    size_t minbytes;
    size_t maxbytes;
    unsigned long factor;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    long iters;  /* 0: auto (about 256 MiB per size and placement, 3..1000 calls) */
    long warmup; /* -1: auto (iters / 10, 2..20) */
    long repeats;
    int inplace; /* also run in place */
    int csv;
    int json;           /* one JSON document on stdout instead of the text table */
    int check;          /* -c: compare every repeat's result with the reference (default 1) */
    int avg_mode;       /* -a, as nccl-tests: the time over ranks is rank 0's (0), the mean (1),
                           the minimum (2) or the maximum (3, the default) */
    const char *algo;   /* printed in the algo column */
    const char *banner; /* printed in the header of the text output */
} perf_opts_t;

/* Extra options of one front-end: getopt short letters (appended), long options
 * (terminated by a zero entry) and a handler returning 0 if the option was valid. */
typedef struct perf_extra_opts {
    const char *shortopts;
    const struct option *longopts;
    int (*handle)(int opt, const char *arg, void *ctx);
    void *ctx;
    const char *usage; /* lines added to the help text */
} perf_extra_opts_t;

/* Parses argv into opts (defaults first). Returns 0 to run, 1 if help was printed,
 * -1 on a bad option (message printed). */
int perf_parse_args(int argc, char **argv, const char *prog, perf_opts_t *opts,
                    const perf_extra_opts_t *extra);

/* "8", "64K", "1M", "2G" (binary multiples). 0 on success. */
int perf_parse_size(const char *s, size_t *out);

int perf_dtype_from_name(const char *s, symcoll_dtype_t *dtype_p);
int perf_op_from_name(const char *s, symcoll_op_t *op_p);
const char *perf_dtype_name(symcoll_dtype_t dtype);
const char *perf_op_name(symcoll_op_t op);

/* -a values */
enum { PERF_AVG_RANK0 = 0, PERF_AVG_MEAN = 1, PERF_AVG_MIN = 2, PERF_AVG_MAX = 3 };

/* Runs the sweep. Returns 0 if every call succeeded and every result was right (or
 * -c 0), 1 if a result was wrong, 2 if a call failed. Collective over the backend's
 * ranks. */
int perf_run(const perf_opts_t *opts, perf_backend_t *be);

/* The inputs and reference of tools/refcheck.h, with REFCHECK_AVG_EXACT (any library's
 * avg is right): fills @a buf with rank @a rank's inputs, or with the reference result
 * (the reduction over all ranks, computed here) when @a rank is -1. */
void perf_fill(void *buf, size_t count, symcoll_dtype_t dtype, symcoll_op_t op, int rank,
               int nranks, uint64_t seed);

/* Number of elements of @a buf that differ from the reference (bitwise; +0 == -0).
 * The first difference is reported on stderr, prefixed with @a what. */
size_t perf_check(const void *buf, size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                  int rank, int nranks, uint64_t seed, const char *what);

#endif
