/* Benchmark engine shared by symcoll_perf and the MPI and NCCL peer drivers (bench/):
 * options, deterministic inputs, the independent reference check, timing loop, output. */
#ifndef SYMCOLL_PERF_ENGINE_H
#define SYMCOLL_PERF_ENGINE_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "symcoll.h" /* only the datatype and operator enums: the engine links no library */

/* The collectives timed (--coll), with nccl-tests' conventions for each. */
typedef enum perf_coll {
    PERF_COLL_ALLREDUCE,
    PERF_COLL_REDUCE_SCATTER,
    PERF_COLL_ALLGATHER,
    PERF_COLL_BROADCAST,
    PERF_COLL_BARRIER,
    PERF_COLL_LAST
} perf_coll_t;

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
    /* Optional: @a iters out-of-place calls, sendbuf in[it & 1], as one unit (both
     * entries the same buffer with --same-buffer) (a CUDA
     * front-end captures them into a graph once and replays it). NULL: the engine loops
     * over allreduce. The engine calls it for the warm-up too, before any timing. */
    int (*allreduce_loop)(void *ctx, void *const in[2], void *recvbuf, size_t count,
                          symcoll_dtype_t dtype, symcoll_op_t op, long iters);
    /* The other collectives, NULL where the implementation has none (--coll then
     * refuses it). Counts are the calls': reduce_scatter's elements per rank received,
     * allgather's elements per rank sent. reduce_scatter is in place when recvbuf ==
     * sendbuf + rank x recvcount elements, allgather when sendbuf == recvbuf + rank x
     * sendcount elements, broadcast when sendbuf == recvbuf (sendbuf is read on the root
     * only). barrier_coll is the barrier timed by --coll barrier. */
    int (*reduce_scatter)(void *ctx, const void *sendbuf, void *recvbuf, size_t recvcount,
                          symcoll_dtype_t dtype, symcoll_op_t op);
    int (*allgather)(void *ctx, const void *sendbuf, void *recvbuf, size_t sendcount,
                     symcoll_dtype_t dtype);
    int (*broadcast)(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                     symcoll_dtype_t dtype, int root);
    int (*barrier_coll)(void *ctx);
    /* name of the algorithm that serves @a coll at @a bytes, the size column (may be
     * NULL: opts.algo is printed) */
    const char *(*algo_name)(void *ctx, perf_coll_t coll, size_t bytes);
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
    int inplace;     /* also run in place */
    int same_buffer; /* --same-buffer: out of place, every call sends the same buffer (OSU) */
    int csv;
    int json;           /* one JSON document on stdout instead of the text table */
    int check;          /* -c: compare every repeat's result with the reference (default 1) */
    int avg_mode;       /* -a, as nccl-tests: the time over ranks is rank 0's (0), the mean (1),
                           the minimum (2) or the maximum (3, the default) */
    perf_coll_t coll;   /* --coll (default all-reduce) */
    int root;           /* --root: broadcast's root (default 0) */
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

const char *perf_coll_name(perf_coll_t coll); /* "allreduce", "reduce_scatter", ... */
int perf_coll_from_name(const char *s, perf_coll_t *coll_p);

/* One size of a collective, as nccl-tests counts it: @a size asked (-b .. -e) gives
 * size / esize elements in all; reduce-scatter and all-gather split them into nranks
 * blocks of count elements (the remainder dropped). */
typedef struct perf_shape {
    size_t count;      /* the call's count argument (nccl-tests' count column) */
    size_t send_elems; /* elements of the send buffer */
    size_t recv_elems; /* elements of the receive buffer */
    size_t bytes;      /* the size column: the larger buffer's bytes (0 for barrier) */
} perf_shape_t;

void perf_coll_shape(perf_coll_t coll, size_t size, size_t esize, int nranks,
                     perf_shape_t *shape);

/* busbw = algbw x this, as nccl-tests: all-reduce 2(n-1)/n, reduce-scatter and
 * all-gather (n-1)/n, broadcast 1; barrier 0 (it moves no data). */
double perf_busbw_factor(perf_coll_t coll, int nranks);

/* Byte patterns of the copying collectives (all-gather, broadcast): @a bytes of rank
 * @a rank's data for @a seed, every byte a function of (rank, seed, position). */
void perf_pattern_fill(void *buf, size_t bytes, int rank, uint64_t seed);

/* Number of the @a count elements of @a esize bytes in @a buf that differ from rank
 * @a rank's pattern; the first difference is reported on stderr, prefixed with @a what. */
size_t perf_pattern_check(const void *buf, size_t count, size_t esize, int rank, uint64_t seed,
                          const char *what);

/* Reduce-scatter's check: the @a count elements of @a buf against the reference
 * reduction at elements first .. first + count - 1 (bitwise, as perf_check). */
size_t perf_check_block(const void *buf, size_t count, size_t first, symcoll_dtype_t dtype,
                        symcoll_op_t op, int rank, int nranks, uint64_t seed, const char *what);

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
