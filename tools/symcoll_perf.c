/* symcoll_perf: benchmark of symcoll's collectives in the style of nccl-tests, run under
 * symcoll_run (or any launcher that sets SYMCOLL_RANK/NRANKS/ADDR or the Open MPI, PMI,
 * Slurm ones). */
#include "symcoll_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "symcoll.h"
#include "local_rank.h"
#include "perf_engine.h"

/* CUDA errors are returned as PERF_CUDA_RC + cudaError_t, symcoll ones as their status */
#define PERF_CUDA_RC 100000

/* long options without a letter (the engine's letters are nccl-tests'; -a is its
 * averaging mode) */
#define SP_OPT_ALGO 1000

typedef struct sp_ctx {
    symcoll_comm_h comm;
    symcoll_mem_type_t mem;
    int pool; /* buffers from symcoll_mem_alloc */
    const char *mem_name;
    const char *algo;
    double t0;
    struct {
        int coll; /* perf_coll_t */
        size_t bytes;
        char algo[24]; /* the all-reduce's algorithm, or the other collectives' path */
    } dec[192];        /* the library's decision rows for this memory type */
    int ndec;
    char algo_buf[72];
#ifdef HAVE_CUDA
    cudaStream_t stream;
    cudaEvent_t ev_start, ev_stop;
    int graph;             /* -G: time replays of a graph of ITERS captured calls */
    cudaGraphExec_t gexec; /* the graph of the last (buffers, count, type, op, iters) */
    struct {
        void *in0, *in1, *out;
        size_t count;
        int dtype, op;
        long iters;
    } gkey;
#endif
} sp_ctx_t;

static double sp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *sp_stream(sp_ctx_t *c)
{
#ifdef HAVE_CUDA
    if (c->mem == SYMCOLL_MEM_CUDA)
        return c->stream;
#endif
    (void)c;
    return NULL;
}

static const char *sp_strerror(void *ctx, int rc)
{
    (void)ctx;
#ifdef HAVE_CUDA
    if (rc >= PERF_CUDA_RC)
        return cudaGetErrorString((cudaError_t)(rc - PERF_CUDA_RC));
#endif
    if (rc > 0)
        return "host allocation failed";
    return symcoll_status_string((symcoll_status_t)rc);
}

static int sp_supports(void *ctx, symcoll_dtype_t dtype, symcoll_op_t op)
{
    (void)ctx;
    return (unsigned)dtype < SYMCOLL_DTYPE_LAST && (unsigned)op < SYMCOLL_OP_LAST;
}

static int sp_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    sp_ctx_t *c = ctx;

    if (c->pool)
        return symcoll_mem_alloc(c->comm, bytes, c->mem, ptr_p);
#ifdef HAVE_CUDA
    if (c->mem == SYMCOLL_MEM_CUDA) {
        cudaError_t e = cudaMalloc(ptr_p, bytes);
        return e == cudaSuccess ? 0 : PERF_CUDA_RC + (int)e;
    }
#endif
    /* page-aligned, as a real application's large buffers usually are */
    return posix_memalign(ptr_p, 4096, bytes) ? 1 : 0;
}

static void sp_free(void *ctx, void *ptr)
{
    sp_ctx_t *c = ctx;

    if (c->pool) {
        symcoll_status_t s = symcoll_mem_free(c->comm, ptr);
        if (s != SYMCOLL_OK)
            fprintf(stderr, "symcoll_mem_free: %s\n", symcoll_status_string(s));
        return;
    }
#ifdef HAVE_CUDA
    if (c->mem == SYMCOLL_MEM_CUDA) {
        cudaFree(ptr);
        return;
    }
#endif
    free(ptr);
}

#ifdef HAVE_CUDA
static int sp_copy(sp_ctx_t *c, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, k, c->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(c->stream);
    return e == cudaSuccess ? 0 : PERF_CUDA_RC + (int)e;
}
#endif

static int sp_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
#ifdef HAVE_CUDA
    return sp_copy(ctx, dst, src, bytes, cudaMemcpyHostToDevice);
#else
    (void)ctx, (void)dst, (void)src, (void)bytes;
    return SYMCOLL_ERR_UNSUPPORTED;
#endif
}

static int sp_download(void *ctx, void *dst, const void *src, size_t bytes)
{
#ifdef HAVE_CUDA
    return sp_copy(ctx, dst, src, bytes, cudaMemcpyDeviceToHost);
#else
    (void)ctx, (void)dst, (void)src, (void)bytes;
    return SYMCOLL_ERR_UNSUPPORTED;
#endif
}

static int sp_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t dtype, symcoll_op_t op)
{
    sp_ctx_t *c = ctx;
    return symcoll_allreduce(sendbuf, recvbuf, count, dtype, op, c->comm, sp_stream(c));
}

static int sp_reduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t recvcount,
                             symcoll_dtype_t dtype, symcoll_op_t op)
{
    sp_ctx_t *c = ctx;
    return symcoll_reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, c->comm,
                                  sp_stream(c));
}

static int sp_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t sendcount,
                        symcoll_dtype_t dtype)
{
    sp_ctx_t *c = ctx;
    return symcoll_allgather(sendbuf, recvbuf, sendcount, dtype, c->comm, sp_stream(c));
}

static int sp_broadcast(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t dtype, int root)
{
    sp_ctx_t *c = ctx;
    return symcoll_broadcast(sendbuf, recvbuf, count, dtype, root, c->comm, sp_stream(c));
}

/* the host barrier (the stream-ordered one is not timed here: -m cuda refuses it) */
static int sp_barrier_coll(void *ctx)
{
    sp_ctx_t *c = ctx;
    return symcoll_barrier(c->comm, NULL);
}

#ifdef HAVE_CUDA
/* -G: the ITERS calls of one timing are captured into a CUDA graph once (after one eager
 * call, which sizes the library's staging: growth is refused under capture) and every
 * timing replays it; per-call time = replay time / ITERS, as nccl-tests -G measures. */
static int sp_allreduce_loop(void *ctx, void *const in[2], void *recvbuf, size_t count,
                             symcoll_dtype_t dtype, symcoll_op_t op, long iters)
{
    sp_ctx_t *c = ctx;
    cudaGraph_t g;
    cudaError_t e;
    int rc;

    if (!c->gexec || c->gkey.in0 != in[0] || c->gkey.in1 != in[1] || c->gkey.out != recvbuf ||
        c->gkey.count != count || c->gkey.dtype != (int)dtype || c->gkey.op != (int)op ||
        c->gkey.iters != iters) {
        if (c->gexec) {
            cudaGraphExecDestroy(c->gexec);
            c->gexec = NULL;
        }
        rc = symcoll_allreduce(in[0], recvbuf, count, dtype, op, c->comm, c->stream);
        if (rc)
            return rc;
        if ((e = cudaStreamSynchronize(c->stream)) != cudaSuccess ||
            (e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal)) !=
                cudaSuccess)
            return PERF_CUDA_RC + (int)e;
        for (long it = 0; it < iters; it++) {
            rc = symcoll_allreduce(in[it & 1], recvbuf, count, dtype, op, c->comm, c->stream);
            if (rc) {
                if (cudaStreamEndCapture(c->stream, &g) == cudaSuccess)
                    cudaGraphDestroy(g);
                return rc;
            }
        }
        if ((e = cudaStreamEndCapture(c->stream, &g)) != cudaSuccess)
            return PERF_CUDA_RC + (int)e;
        e = cudaGraphInstantiate(&c->gexec, g, 0);
        cudaGraphDestroy(g);
        if (e != cudaSuccess)
            return PERF_CUDA_RC + (int)e;
        c->gkey.in0 = in[0];
        c->gkey.in1 = in[1];
        c->gkey.out = recvbuf;
        c->gkey.count = count;
        c->gkey.dtype = (int)dtype;
        c->gkey.op = (int)op;
        c->gkey.iters = iters;
    }
    e = cudaGraphLaunch(c->gexec, c->stream);
    return e == cudaSuccess ? 0 : PERF_CUDA_RC + (int)e;
}
#endif

/* The engine's barrier between timings: an all-reduce of one word (no rank can leave it
 * before every rank has entered), the same call whichever collective is timed. */
static int sp_barrier(void *ctx)
{
    sp_ctx_t *c = ctx;
    int32_t word = 1;
    return symcoll_allreduce(&word, &word, 1, SYMCOLL_INT32, SYMCOLL_SUM, c->comm, NULL);
}

static int sp_max_double(void *ctx, double *v)
{
    sp_ctx_t *c = ctx;
    return symcoll_allreduce(v, v, 1, SYMCOLL_FLOAT64, SYMCOLL_MAX, c->comm, NULL);
}

static int sp_sum_u64(void *ctx, uint64_t *v)
{
    sp_ctx_t *c = ctx;
    return symcoll_allreduce(v, v, 1, SYMCOLL_UINT64, SYMCOLL_SUM, c->comm, NULL);
}

static int sp_timer_start(void *ctx)
{
    sp_ctx_t *c = ctx;
#ifdef HAVE_CUDA
    if (c->mem == SYMCOLL_MEM_CUDA) {
        cudaError_t e = cudaEventRecord(c->ev_start, c->stream);
        return e == cudaSuccess ? 0 : PERF_CUDA_RC + (int)e;
    }
#endif
    c->t0 = sp_now();
    return 0;
}

static int sp_timer_stop(void *ctx, double *sec_p)
{
    sp_ctx_t *c = ctx;
#ifdef HAVE_CUDA
    if (c->mem == SYMCOLL_MEM_CUDA) {
        float ms = 0;
        cudaError_t e = cudaEventRecord(c->ev_stop, c->stream);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(c->ev_stop);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop);
        *sec_p = 1e-3 * ms;
        return e == cudaSuccess ? 0 : PERF_CUDA_RC + (int)e;
    }
#endif
    *sec_p = sp_now() - c->t0;
    return 0;
}

static void sp_abort(void *ctx)
{
    sp_ctx_t *c = ctx;
    symcoll_comm_abort(c->comm);
}

/* The algorithm column: the library's own decision rows (symcoll_comm_print_decisions,
 * the selector every call asks), which list powers of two; other sizes show the row below
 * them, marked '~' where the path follows the row's all-reduce algorithm. All-reduce rows
 * name the algorithm; the other collectives' (at the size column's bytes, one byte for
 * barrier) the path: "native" (host memory inside a node), "ucx:eager", "ucx:exchange",
 * "ucx:ring", "ucx:hier" (host memory across nodes, native), "native:ALGO" (CUDA kernels
 * of their own), or "ar:" and the algorithm of the one all-reduce they run as. */
static void sp_load_decisions(sp_ctx_t *c)
{
    static const char *const colls[PERF_COLL_LAST] = {[PERF_COLL_REDUCE_SCATTER] =
                                                          "reduce-scatter",
                                                      [PERF_COLL_ALLGATHER] = "all-gather",
                                                      [PERF_COLL_BROADCAST] = "broadcast",
                                                      [PERF_COLL_BARRIER] = "barrier"};
    char *text = NULL, *save = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return;
    if (symcoll_comm_print_decisions(c->comm, f) != SYMCOLL_OK) {
        fclose(f);
        free(text);
        return;
    }
    fclose(f);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char w1[16], w2[16], w3[24], w4[24], w5[24];
        size_t bytes;
        int coll = -1;
        if (line[0] == '#' || c->ndec >= (int)(sizeof(c->dec) / sizeof(c->dec[0])))
            continue;
        if (sscanf(line, "%15s %zu %15s %23s", w1, &bytes, w3, w4) == 4 &&
            !strcmp(w1, c->mem_name)) {
            coll = PERF_COLL_ALLREDUCE; /* MEM BYTES HUMAN ALGO FAMILY ORDER REASON */
        } else if (sscanf(line, "%15s %15s %zu %23s %23s", w1, w2, &bytes, w5, w4) == 5 &&
                   !strcmp(w2, c->mem_name)) {
            for (int k = 0; k < PERF_COLL_LAST; k++) /* COLL MEM BYTES HUMAN PATH ... */
                if (colls[k] && !strcmp(colls[k], w1))
                    coll = k;
        }
        if (coll < 0)
            continue;
        c->dec[c->ndec].coll = coll;
        c->dec[c->ndec].bytes = bytes;
        snprintf(c->dec[c->ndec].algo, sizeof(c->dec[0].algo), "%s", w4);
        c->ndec++;
    }
    free(text);
}

static const char *sp_algo_name(void *ctx, perf_coll_t coll, size_t bytes)
{
    sp_ctx_t *c = ctx;
    int best = -1;

    if (coll == PERF_COLL_BARRIER)
        bytes = 1;
    for (int i = 0; i < c->ndec; i++)
        if (c->dec[i].coll == (int)coll && (best < 0 || c->dec[i].bytes <= bytes))
            best = i;
    if (best < 0)
        return c->algo;
    /* '~' where the size is not the row's and the path follows the row's all-reduce
     * algorithm (all but the native host algorithms and the eager broadcast, which the
     * size itself decides) */
    snprintf(c->algo_buf, sizeof(c->algo_buf), "%s%s",
             c->dec[best].bytes != bytes &&
                     (coll == PERF_COLL_ALLREDUCE || (strcmp(c->dec[best].algo, "native") &&
                                                      strcmp(c->dec[best].algo, "ucx:eager")))
                 ? "~"
                 : "",
             c->dec[best].algo);
    return c->algo_buf;
}

static int sp_handle_opt(int opt, const char *arg, void *ctx)
{
    sp_ctx_t *c = ctx;

    switch (opt) {
    case 'm':
        if (!strcmp(arg, "host")) {
            c->mem = SYMCOLL_MEM_HOST;
        } else if (!strcmp(arg, "cuda")) {
            c->mem = SYMCOLL_MEM_CUDA;
        } else {
            return -1;
        }
        c->mem_name = arg;
        return 0;
    case SP_OPT_ALGO:
        if (!*arg)
            return -1;
        c->algo = arg;
        return 0;
    case 'P':
        c->pool = 1;
        return 0;
    case 'G':
#ifdef HAVE_CUDA
        c->graph = 1;
        return 0;
#else
        return -1;
#endif
    default:
        return -1;
    }
}

#ifdef HAVE_CUDA
/* One GPU per rank: the rank on this node if the launcher says it, else the global rank,
 * modulo the devices visible. */
static int sp_cuda_setup(sp_ctx_t *c, int *device_p)
{
    int ndev = 0, dev;
    cudaError_t e = cudaGetDeviceCount(&ndev);

    if (e != cudaSuccess || ndev == 0) {
        fprintf(stderr, "symcoll_perf: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    dev = tools_local_rank() % ndev;
    if ((e = cudaSetDevice(dev)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreate(&c->ev_start)) != cudaSuccess ||
        (e = cudaEventCreate(&c->ev_stop)) != cudaSuccess) {
        fprintf(stderr, "symcoll_perf: CUDA setup on device %d failed: %s\n", dev,
                cudaGetErrorString(e));
        return -1;
    }
    *device_p = dev;
    return 0;
}
#endif

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pool", no_argument, NULL, 'P'},
        {"graph", no_argument, NULL, 'G'},
        {"mem", required_argument, NULL, 'm'},
        {"algo", required_argument, NULL, SP_OPT_ALGO},
        {NULL, 0, NULL, 0},
    };
    sp_ctx_t c = {.mem = SYMCOLL_MEM_HOST, .mem_name = "host", .algo = "auto"};
    perf_extra_opts_t extra = {
        .shortopts = "m:PG",
        .longopts = longopts,
        .handle = sp_handle_opt,
        .ctx = &c,
        .usage = "  -m MEM        host or cuda: where the buffers live (default host)\n"
                 "  --algo ALGO   force an algorithm (sets SYMCOLL_ALGO before the\n"
                 "                communicator is created; default auto, the library chooses)\n"
                 "  -P, --pool    use buffers from symcoll_mem_alloc (no staging copy)\n"
                 "  -G, --graph   CUDA: capture the ITERS calls of a timing into a CUDA graph\n"
                 "                and time its replays (allreduce, out of place only)\n"
                 "The algo column is the library's choice for that size, from its all-reduce\n"
                 "decision table (symcoll_comm_print_decisions); '~' marks a size between\n"
                 "two rows. Other collectives: 'native' (host memory inside a node),\n"
                 "'ucx:eager', 'ucx:exchange', 'ucx:ring', 'ucx:hier' (host memory across\n"
                 "nodes), 'native:ALGO' (CUDA kernels), or 'ar:' and the algorithm of the one\n"
                 "all-reduce they run as (symcoll_info -a).\n",
    };
    symcoll_comm_params_t params = {0};
    perf_backend_t be = {0};
    perf_opts_t opts;
    symcoll_status_t s;
    char banner[256];
    int rc;

    rc = perf_parse_args(argc, argv, "symcoll_perf", &opts, &extra);
    if (rc)
        return rc > 0 ? 0 : 2;

    if (c.mem == SYMCOLL_MEM_CUDA) {
#ifdef HAVE_CUDA
        int dev;
        if (sp_cuda_setup(&c, &dev))
            return 2;
        params.field_mask |= SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE;
        params.cuda_device = dev;
#else
        fprintf(stderr, "symcoll_perf: -m cuda: cuda not built (configure found no CUDA "
                        "toolkit)\n");
        return 2;
#endif
    }
    /* the library reads its configuration once, at communicator creation */
    if (strcmp(c.algo, "auto") && setenv("SYMCOLL_ALGO", c.algo, 1)) {
        perror("setenv");
        return 2;
    }
    s = symcoll_comm_create(&params, &c.comm);
    if (s != SYMCOLL_OK) {
        fprintf(stderr, "symcoll_perf: symcoll_comm_create: %s\n", symcoll_status_string(s));
        return 2;
    }
    symcoll_comm_rank(c.comm, &be.rank);
    symcoll_comm_size(c.comm, &be.nranks);

    be.ctx = &c;
    be.device_mem = c.mem == SYMCOLL_MEM_CUDA;
    be.supports = sp_supports;
    be.alloc = sp_alloc;
    be.free = sp_free;
    be.upload = sp_upload;
    be.download = sp_download;
    be.allreduce = sp_allreduce;
    be.barrier = sp_barrier;
    be.max_double = sp_max_double;
    be.sum_u64 = sp_sum_u64;
    be.timer_start = sp_timer_start;
    be.timer_stop = sp_timer_stop;
    be.strerror = sp_strerror;
    be.abort = sp_abort;
    be.algo_name = sp_algo_name;
    be.reduce_scatter = sp_reduce_scatter;
    be.allgather = sp_allgather;
    be.broadcast = sp_broadcast;
    be.barrier_coll = c.mem == SYMCOLL_MEM_HOST ? sp_barrier_coll : NULL;
#ifdef HAVE_CUDA
    if (c.graph) {
        if (c.mem != SYMCOLL_MEM_CUDA || opts.coll != PERF_COLL_ALLREDUCE) {
            fprintf(stderr, "symcoll_perf: -G needs -m cuda and --coll allreduce\n");
            symcoll_comm_destroy(c.comm);
            return 2;
        }
        be.allreduce_loop = sp_allreduce_loop;
    }
#endif

    /* the header shows what was asked (auto or forced), the rows what the library picks */
    sp_load_decisions(&c);
    opts.algo = c.algo;
    snprintf(banner, sizeof(banner), "symcoll_perf: symcoll %s, memory %s, %s buffers%s",
             symcoll_version_string(), c.mem_name,
             c.pool ? "pool (symcoll_mem_alloc)" : "plain",
#ifdef HAVE_CUDA
             c.graph ? ", CUDA graph" :
#endif
                     "");
    opts.banner = banner;

    rc = perf_run(&opts, &be);

    s = symcoll_comm_destroy(c.comm);
    if (s != SYMCOLL_OK) {
        fprintf(stderr, "symcoll_perf: symcoll_comm_destroy: %s\n", symcoll_status_string(s));
        if (!rc)
            rc = 2;
    }
#ifdef HAVE_CUDA
    if (c.mem == SYMCOLL_MEM_CUDA) {
        if (c.gexec)
            cudaGraphExecDestroy(c.gexec);
        cudaEventDestroy(c.ev_start);
        cudaEventDestroy(c.ev_stop);
        cudaStreamDestroy(c.stream);
    }
#endif
    return rc;
}
