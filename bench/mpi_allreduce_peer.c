/* MPI peer of symcoll_perf: times MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
 * MPI_Bcast and MPI_Barrier (--coll) with the same options, inputs, check and output
 * (tools/perf_engine.h), so both can be compared row by row in the same run. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_engine.h"

typedef struct mp_ctx {
    MPI_Comm comm;
    double t0;
} mp_ctx_t;

static int mp_datatype(symcoll_dtype_t t, MPI_Datatype *mt)
{
    switch (t) {
    case SYMCOLL_INT8:
        *mt = MPI_INT8_T;
        return 0;
    case SYMCOLL_UINT8:
        *mt = MPI_UINT8_T;
        return 0;
    case SYMCOLL_INT32:
        *mt = MPI_INT32_T;
        return 0;
    case SYMCOLL_UINT32:
        *mt = MPI_UINT32_T;
        return 0;
    case SYMCOLL_INT64:
        *mt = MPI_INT64_T;
        return 0;
    case SYMCOLL_UINT64:
        *mt = MPI_UINT64_T;
        return 0;
    case SYMCOLL_FLOAT32:
        *mt = MPI_FLOAT;
        return 0;
    case SYMCOLL_FLOAT64:
        *mt = MPI_DOUBLE;
        return 0;
    default:
        return -1; /* no standard MPI type for float16 and bfloat16 */
    }
}

static int mp_op(symcoll_op_t op, MPI_Op *mo)
{
    switch (op) {
    case SYMCOLL_SUM:
        *mo = MPI_SUM;
        return 0;
    case SYMCOLL_PROD:
        *mo = MPI_PROD;
        return 0;
    case SYMCOLL_MIN:
        *mo = MPI_MIN;
        return 0;
    case SYMCOLL_MAX:
        *mo = MPI_MAX;
        return 0;
    default:
        return -1; /* MPI has no average */
    }
}

static int mp_supports(void *ctx, symcoll_dtype_t t, symcoll_op_t op)
{
    MPI_Datatype mt;
    MPI_Op mo;
    (void)ctx;
    return !mp_datatype(t, &mt) && !mp_op(op, &mo);
}

static int mp_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    (void)ctx;
    return posix_memalign(ptr_p, 4096, bytes) ? MPI_ERR_NO_MEM : 0;
}

static void mp_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static int mp_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t t, symcoll_op_t op)
{
    mp_ctx_t *c = ctx;
    MPI_Datatype mt;
    MPI_Op mo;

    if (mp_datatype(t, &mt) || mp_op(op, &mo))
        return MPI_ERR_TYPE;
    if (count > (size_t)0x7fffffff)
        return MPI_ERR_COUNT;
    return MPI_Allreduce(sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf, recvbuf, (int)count, mt,
                         mo, c->comm);
}

/* The copying collectives move bytes: an unsigned integer type of the element's size
 * (so float16 and bfloat16 go too). */
static int mp_bytes_type(symcoll_dtype_t t, MPI_Datatype *mt)
{
    switch (t) {
    case SYMCOLL_INT8:
    case SYMCOLL_UINT8:
        *mt = MPI_UINT8_T;
        return 0;
    case SYMCOLL_FLOAT16:
    case SYMCOLL_BFLOAT16:
        *mt = MPI_UINT16_T;
        return 0;
    case SYMCOLL_INT32:
    case SYMCOLL_UINT32:
    case SYMCOLL_FLOAT32:
        *mt = MPI_UINT32_T;
        return 0;
    case SYMCOLL_INT64:
    case SYMCOLL_UINT64:
    case SYMCOLL_FLOAT64:
        *mt = MPI_UINT64_T;
        return 0;
    default:
        return -1;
    }
}

/* In place (recvbuf is this rank's block of sendbuf, NCCL's layout) MPI takes the input
 * from recvbuf's start and leaves the block there: it is moved to this rank's block
 * after the call (no move on rank 0). */
static int mp_reduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t recvcount,
                             symcoll_dtype_t t, symcoll_op_t op)
{
    mp_ctx_t *c = ctx;
    MPI_Datatype mt;
    MPI_Op mo;
    int rank, rc, size;

    if (mp_datatype(t, &mt) || mp_op(op, &mo))
        return MPI_ERR_TYPE;
    if (recvcount > (size_t)0x7fffffff)
        return MPI_ERR_COUNT;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Type_size(mt, &size);
    if ((const char *)recvbuf !=
        (const char *)sendbuf + (size_t)rank * recvcount * (size_t)size)
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, mt, mo, c->comm);
    rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, (void *)(uintptr_t)sendbuf, (int)recvcount, mt,
                                  mo, c->comm);
    if (rc == MPI_SUCCESS && rank)
        memmove(recvbuf, sendbuf, recvcount * (size_t)size);
    return rc;
}

static int mp_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t sendcount,
                        symcoll_dtype_t t)
{
    mp_ctx_t *c = ctx;
    MPI_Datatype mt;
    int rank, size;

    if (mp_bytes_type(t, &mt))
        return MPI_ERR_TYPE;
    if (sendcount > (size_t)0x7fffffff)
        return MPI_ERR_COUNT;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Type_size(mt, &size);
    if ((const char *)sendbuf ==
        (const char *)recvbuf + (size_t)rank * sendcount * (size_t)size)
        return MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, (int)sendcount, mt,
                             c->comm);
    return MPI_Allgather(sendbuf, (int)sendcount, mt, recvbuf, (int)sendcount, mt, c->comm);
}

/* MPI_Bcast has one buffer: out of place, the root copies sendbuf to recvbuf after it
 * (what an application needing both would do) */
static int mp_broadcast(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        symcoll_dtype_t t, int root)
{
    mp_ctx_t *c = ctx;
    MPI_Datatype mt;
    int rank, rc, size;

    if (mp_bytes_type(t, &mt))
        return MPI_ERR_TYPE;
    if (count > (size_t)0x7fffffff)
        return MPI_ERR_COUNT;
    MPI_Comm_rank(c->comm, &rank);
    if (rank != root || sendbuf == recvbuf)
        return MPI_Bcast(recvbuf, (int)count, mt, root, c->comm);
    rc = MPI_Bcast((void *)(uintptr_t)sendbuf, (int)count, mt, root, c->comm);
    MPI_Type_size(mt, &size);
    if (rc == MPI_SUCCESS)
        memcpy(recvbuf, sendbuf, count * (size_t)size);
    return rc;
}

static int mp_barrier(void *ctx)
{
    return MPI_Barrier(((mp_ctx_t *)ctx)->comm);
}

static int mp_max_double(void *ctx, double *v)
{
    return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_MAX, ((mp_ctx_t *)ctx)->comm);
}

static int mp_sum_u64(void *ctx, uint64_t *v)
{
    return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_UINT64_T, MPI_SUM, ((mp_ctx_t *)ctx)->comm);
}

static double mp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mp_timer_start(void *ctx)
{
    ((mp_ctx_t *)ctx)->t0 = mp_now();
    return 0;
}

static int mp_timer_stop(void *ctx, double *sec_p)
{
    *sec_p = mp_now() - ((mp_ctx_t *)ctx)->t0;
    return 0;
}

static const char *mp_strerror(void *ctx, int rc)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    (void)ctx;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", rc);
    return text;
}

static void mp_abort(void *ctx)
{
    MPI_Abort(((mp_ctx_t *)ctx)->comm, 2);
}

int main(int argc, char **argv)
{
    mp_ctx_t c = {.comm = MPI_COMM_WORLD};
    perf_backend_t be = {0};
    perf_opts_t opts;
    char banner[256], version[MPI_MAX_LIBRARY_VERSION_STRING];
    int rc, len = 0;

    MPI_Init(&argc, &argv);
    /* errors come back as codes, so a failure is reported like symcoll_perf's */
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
    rc = perf_parse_args(argc, argv, "mpi_allreduce_peer", &opts, NULL);
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    MPI_Comm_rank(c.comm, &be.rank);
    MPI_Comm_size(c.comm, &be.nranks);
    be.ctx = &c;
    be.supports = mp_supports;
    be.alloc = mp_alloc;
    be.free = mp_free;
    be.allreduce = mp_allreduce;
    be.barrier = mp_barrier;
    be.reduce_scatter = mp_reduce_scatter;
    be.allgather = mp_allgather;
    be.broadcast = mp_broadcast;
    be.barrier_coll = mp_barrier;
    be.max_double = mp_max_double;
    be.sum_u64 = mp_sum_u64;
    be.timer_start = mp_timer_start;
    be.timer_stop = mp_timer_stop;
    be.strerror = mp_strerror;
    be.abort = mp_abort;

    MPI_Get_library_version(version, &len);
    version[strcspn(version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
    {
        static const char *const fns[PERF_COLL_LAST] = {
            [PERF_COLL_ALLREDUCE] = "MPI_Allreduce",
            [PERF_COLL_REDUCE_SCATTER] = "MPI_Reduce_scatter_block",
            [PERF_COLL_ALLGATHER] = "MPI_Allgather",
            [PERF_COLL_BROADCAST] = "MPI_Bcast",
            [PERF_COLL_BARRIER] = "MPI_Barrier",
        };
        snprintf(banner, sizeof(banner), "mpi_allreduce_peer: %s, %.160s", fns[opts.coll],
                 version);
    }
    opts.banner = banner;
    opts.algo = "mpi";

    rc = perf_run(&opts, &be);
    MPI_Finalize();
    return rc;
}
