/* Benchmark engine shared by symcoll_perf and the MPI and NCCL peer drivers: the timing
 * loop and the sweep (perf_run). Options are in perf_args.c, inputs and reference checks
 * in perf_check.c, output in perf_output.c. */
#include "perf_engine.h"
#include "perf_int.h"
#include "refcheck.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PERF_AUTO_BYTES                                                                        \
    (256UL << 20) /* auto iteration count: about this much data per size                       \
                   */
#define PERF_AUTO_ITERS_MIN 3
#define PERF_AUTO_ITERS_MAX 1000

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
