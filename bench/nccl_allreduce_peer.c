/* NCCL peer of symcoll_perf: times ncclAllReduce (or, with --coll, ncclReduceScatter,
 * ncclAllGather, ncclBroadcast; NCCL has no barrier) with the same options, inputs, check
 * and output (tools/perf_engine.h), eager or under a CUDA graph (-G, all-reduce), on plain
 * cudaMalloc buffers or NCCL symmetric windows (-W: ncclMemAlloc + ncclCommWindowRegister with
 * NCCL_WIN_COLL_SYMMETRIC). Run under symcoll_run (SYMCOLL_RANK, SYMCOLL_NRANKS,
 * SYMCOLL_ADDR): rank 0 passes NCCL's unique id to the others through a file named after
 * SYMCOLL_ADDR, so no MPI is needed. One GPU per rank (rank modulo the devices). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_engine.h"

#define NP_CUDA_RC 100000 /* CUDA errors are NP_CUDA_RC + cudaError_t, NCCL ones as is */

typedef struct np_ctx {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ev_start, ev_stop;
    int window, graph;
    void *scratch; /* 8 device bytes for barrier and the small reductions */
    struct {
        void *ptr;
        ncclWindow_t win;
    } wins[8];
    cudaGraphExec_t gexec;
    struct {
        void *in0, *in1, *out;
        size_t count;
        int dtype, op;
        long iters;
    } gkey;
} np_ctx_t;

static const char *np_strerror(void *ctx, int rc)
{
    (void)ctx;
    if (rc >= NP_CUDA_RC)
        return cudaGetErrorString((cudaError_t)(rc - NP_CUDA_RC));
    return ncclGetErrorString((ncclResult_t)rc);
}

#define NP_CU(x)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess)                                                                 \
            return NP_CUDA_RC + (int)e_;                                                       \
    } while (0)

static int np_type(symcoll_dtype_t t, ncclDataType_t *nt)
{
    static const ncclDataType_t map[SYMCOLL_DTYPE_LAST] = {
        ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,  ncclInt64,
        ncclUint64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
    if ((unsigned)t >= SYMCOLL_DTYPE_LAST)
        return -1;
    *nt = map[t];
    return 0;
}

static int np_op(symcoll_op_t op, ncclRedOp_t *no)
{
    static const ncclRedOp_t map[SYMCOLL_OP_LAST] = {ncclSum, ncclProd, ncclMin, ncclMax,
                                                     ncclAvg};
    if ((unsigned)op >= SYMCOLL_OP_LAST)
        return -1;
    *no = map[op];
    return 0;
}

static int np_supports(void *ctx, symcoll_dtype_t t, symcoll_op_t op)
{
    ncclDataType_t nt;
    ncclRedOp_t no;
    (void)ctx;
    return !np_type(t, &nt) && !np_op(op, &no);
}

static int np_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    np_ctx_t *c = ctx;
    if (!c->window) {
        NP_CU(cudaMalloc(ptr_p, bytes));
        return 0;
    }
    for (int i = 0; i < 8; i++) {
        if (!c->wins[i].ptr) {
            ncclResult_t r = ncclMemAlloc(&c->wins[i].ptr, bytes);
            if (r != ncclSuccess)
                return (int)r;
            r = ncclCommWindowRegister(c->comm, c->wins[i].ptr, bytes, &c->wins[i].win,
                                       NCCL_WIN_COLL_SYMMETRIC);
            if (r != ncclSuccess) {
                ncclMemFree(c->wins[i].ptr);
                c->wins[i].ptr = NULL;
                return (int)r;
            }
            *ptr_p = c->wins[i].ptr;
            return 0;
        }
    }
    return (int)ncclInternalError;
}

static void np_free(void *ctx, void *ptr)
{
    np_ctx_t *c = ctx;
    if (!c->window) {
        cudaFree(ptr);
        return;
    }
    for (int i = 0; i < 8; i++) {
        if (c->wins[i].ptr == ptr) {
            ncclCommWindowDeregister(c->comm, c->wins[i].win);
            ncclMemFree(ptr);
            c->wins[i].ptr = NULL;
        }
    }
}

static int np_upload(void *ctx, void *dst, const void *src, size_t bytes)
{
    np_ctx_t *c = ctx;
    NP_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
    NP_CU(cudaStreamSynchronize(c->stream));
    return 0;
}

static int np_download(void *ctx, void *dst, const void *src, size_t bytes)
{
    np_ctx_t *c = ctx;
    NP_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    NP_CU(cudaStreamSynchronize(c->stream));
    return 0;
}

static int np_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t t, symcoll_op_t op)
{
    np_ctx_t *c = ctx;
    ncclDataType_t nt;
    ncclRedOp_t no;
    if (np_type(t, &nt) || np_op(op, &no))
        return (int)ncclInvalidArgument;
    return (int)ncclAllReduce(sendbuf, recvbuf, count, nt, no, c->comm, c->stream);
}

static int np_reduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t recvcount,
                             symcoll_dtype_t t, symcoll_op_t op)
{
    np_ctx_t *c = ctx;
    ncclDataType_t nt;
    ncclRedOp_t no;
    if (np_type(t, &nt) || np_op(op, &no))
        return (int)ncclInvalidArgument;
    return (int)ncclReduceScatter(sendbuf, recvbuf, recvcount, nt, no, c->comm, c->stream);
}

static int np_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t sendcount,
                        symcoll_dtype_t t)
{
    np_ctx_t *c = ctx;
    ncclDataType_t nt;
    if (np_type(t, &nt))
        return (int)ncclInvalidArgument;
    return (int)ncclAllGather(sendbuf, recvbuf, sendcount, nt, c->comm, c->stream);
}

static int np_broadcast(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t t, int root)
{
    np_ctx_t *c = ctx;
    ncclDataType_t nt;
    if (np_type(t, &nt))
        return (int)ncclInvalidArgument;
    return (int)ncclBroadcast(sendbuf, recvbuf, count, nt, root, c->comm, c->stream);
}

/* -G: capture ITERS calls into one graph (after an eager call) and replay it */
static int np_allreduce_loop(void *ctx, void *const in[2], void *recvbuf, size_t count,
                             symcoll_dtype_t t, symcoll_op_t op, long iters)
{
    np_ctx_t *c = ctx;
    cudaGraph_t g;
    int rc;

    if (!c->gexec || c->gkey.in0 != in[0] || c->gkey.in1 != in[1] || c->gkey.out != recvbuf ||
        c->gkey.count != count || c->gkey.dtype != (int)t || c->gkey.op != (int)op ||
        c->gkey.iters != iters) {
        if (c->gexec) {
            cudaGraphExecDestroy(c->gexec);
            c->gexec = NULL;
        }
        if ((rc = np_allreduce(ctx, in[0], recvbuf, count, t, op)))
            return rc;
        NP_CU(cudaStreamSynchronize(c->stream));
        NP_CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
        for (long it = 0; it < iters; it++) {
            if ((rc = np_allreduce(ctx, in[it & 1], recvbuf, count, t, op))) {
                if (cudaStreamEndCapture(c->stream, &g) == cudaSuccess)
                    cudaGraphDestroy(g);
                return rc;
            }
        }
        NP_CU(cudaStreamEndCapture(c->stream, &g));
        rc = (int)cudaGraphInstantiate(&c->gexec, g, 0);
        cudaGraphDestroy(g);
        if (rc)
            return NP_CUDA_RC + rc;
        c->gkey.in0 = in[0];
        c->gkey.in1 = in[1];
        c->gkey.out = recvbuf;
        c->gkey.count = count;
        c->gkey.dtype = (int)t;
        c->gkey.op = (int)op;
        c->gkey.iters = iters;
    }
    NP_CU(cudaGraphLaunch(c->gexec, c->stream));
    return 0;
}

/* small synchronous reductions through the scratch word */
static int np_small(np_ctx_t *c, void *v, size_t size, ncclDataType_t t, ncclRedOp_t op)
{
    ncclResult_t r;
    NP_CU(cudaMemcpyAsync(c->scratch, v, size, cudaMemcpyHostToDevice, c->stream));
    r = ncclAllReduce(c->scratch, c->scratch, 1, t, op, c->comm, c->stream);
    if (r != ncclSuccess)
        return (int)r;
    NP_CU(cudaMemcpyAsync(v, c->scratch, size, cudaMemcpyDeviceToHost, c->stream));
    NP_CU(cudaStreamSynchronize(c->stream));
    return 0;
}

static int np_barrier(void *ctx)
{
    int32_t one = 1;
    return np_small(ctx, &one, sizeof(one), ncclInt32, ncclSum);
}

static int np_max_double(void *ctx, double *v)
{
    return np_small(ctx, v, sizeof(*v), ncclFloat64, ncclMax);
}

static int np_sum_u64(void *ctx, uint64_t *v)
{
    return np_small(ctx, v, sizeof(*v), ncclUint64, ncclSum);
}

static int np_timer_start(void *ctx)
{
    np_ctx_t *c = ctx;
    NP_CU(cudaEventRecord(c->ev_start, c->stream));
    return 0;
}

static int np_timer_stop(void *ctx, double *sec_p)
{
    np_ctx_t *c = ctx;
    float ms = 0;
    NP_CU(cudaEventRecord(c->ev_stop, c->stream));
    NP_CU(cudaEventSynchronize(c->ev_stop));
    NP_CU(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop));
    *sec_p = 1e-3 * ms;
    return 0;
}

static void np_abort(void *ctx)
{
    ncclCommAbort(((np_ctx_t *)ctx)->comm);
}

static int np_handle_opt(int opt, const char *arg, void *ctx)
{
    np_ctx_t *c = ctx;
    (void)arg;
    switch (opt) {
    case 'W':
        c->window = 1;
        return 0;
    case 'G':
        c->graph = 1;
        return 0;
    default:
        return -1;
    }
}

/* NCCL's unique id from rank 0 to the others, through a file in /tmp */
static int np_exchange_id(int rank, ncclUniqueId *id)
{
    const char *addr = getenv("SYMCOLL_ADDR");
    char path[256], tmp[272];
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/nccl_peer_id.%d.%s", (int)getuid(), addr ? addr : "x");
    if (rank == 0) {
        if (ncclGetUniqueId(id) != ncclSuccess)
            return -1;
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) || rename(tmp, path))
            return -1;
        return 0;
    }
    for (int i = 0; i < 60000; i++) { /* one minute */
        f = fopen(path, "rb");
        if (f) {
            size_t got = fread(id, sizeof(*id), 1, f);
            fclose(f);
            if (got == 1)
                return 0;
        }
        usleep(1000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"window", no_argument, NULL, 'W'},
        {"graph", no_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    np_ctx_t c = {0};
    perf_extra_opts_t extra = {
        .shortopts = "WG",
        .longopts = longopts,
        .handle = np_handle_opt,
        .ctx = &c,
        .usage = "  -W, --window  buffers from ncclMemAlloc, registered as symmetric windows\n"
                 "  -G, --graph   capture the ITERS calls of a timing into a CUDA graph\n"
                 "                (allreduce only)\n",
    };
    perf_backend_t be = {0};
    perf_opts_t opts;
    ncclUniqueId id;
    char banner[256];
    int rc, ndev = 0, version = 0;
    const char *rs = getenv("SYMCOLL_RANK"), *ns = getenv("SYMCOLL_NRANKS");

    rc = perf_parse_args(argc, argv, "nccl_allreduce_peer", &opts, &extra);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (c.graph && opts.coll != PERF_COLL_ALLREDUCE) {
        fprintf(stderr, "nccl_allreduce_peer: -G times allreduce only\n");
        return 2;
    }
    if (!rs || !ns) {
        fprintf(stderr,
                "nccl_allreduce_peer: run under symcoll_run (SYMCOLL_RANK, SYMCOLL_NRANKS)\n");
        return 2;
    }
    be.rank = atoi(rs);
    be.nranks = atoi(ns);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 ||
        cudaSetDevice(be.rank % ndev) != cudaSuccess ||
        cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&c.ev_start) != cudaSuccess ||
        cudaEventCreate(&c.ev_stop) != cudaSuccess ||
        cudaMalloc(&c.scratch, 8) != cudaSuccess) {
        fprintf(stderr, "nccl_allreduce_peer: CUDA setup failed\n");
        return 2;
    }
    if (np_exchange_id(be.rank, &id)) {
        fprintf(stderr, "nccl_allreduce_peer: unique id exchange failed\n");
        return 2;
    }
    if ((rc = ncclCommInitRank(&c.comm, be.nranks, id, be.rank)) != ncclSuccess) {
        fprintf(stderr, "nccl_allreduce_peer: ncclCommInitRank: %s\n", np_strerror(NULL, rc));
        return 2;
    }
    be.ctx = &c;
    be.device_mem = 1;
    be.supports = np_supports;
    be.alloc = np_alloc;
    be.free = np_free;
    be.upload = np_upload;
    be.download = np_download;
    be.allreduce = np_allreduce;
    be.allreduce_loop = c.graph ? np_allreduce_loop : NULL;
    be.reduce_scatter = np_reduce_scatter;
    be.allgather = np_allgather;
    be.broadcast = np_broadcast;
    be.barrier = np_barrier;
    be.max_double = np_max_double;
    be.sum_u64 = np_sum_u64;
    be.timer_start = np_timer_start;
    be.timer_stop = np_timer_stop;
    be.strerror = np_strerror;
    be.abort = np_abort;
    ncclGetVersion(&version);
    snprintf(banner, sizeof(banner), "nccl_allreduce_peer: NCCL %d.%d.%d, %s, %s buffers%s",
             version / 10000, version / 100 % 100, version % 100, perf_coll_name(opts.coll),
             c.window ? "symmetric window" : "plain", c.graph ? ", CUDA graph" : "");
    opts.banner = banner;
    opts.algo = c.window ? "nccl-win" : "nccl";
    rc = perf_run(&opts, &be);
    if (c.gexec)
        cudaGraphExecDestroy(c.gexec);
    ncclCommDestroy(c.comm);
    if (be.rank == 0) {
        char path[256];
        const char *addr = getenv("SYMCOLL_ADDR");
        snprintf(path, sizeof(path), "/tmp/nccl_peer_id.%d.%s", (int)getuid(),
                 addr ? addr : "x");
        unlink(path);
    }
    return rc;
}
