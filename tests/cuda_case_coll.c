/* test_cuda's cases of reduce-scatter, all-gather, broadcast and the stream barrier on
 * one node: on 2 and 3 ranks, captured in a graph, the barrier's ordering, and the
 * collectives' own kernels (each forced, few blocks) against their composition from the
 * all-reduce, every datatype x operator, captured, and ranks that disagree. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda/sig.h"
#include "cuda_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* ---- reduce-scatter, all-gather, broadcast, the stream barrier ---------------------- */

static void body_coll(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    cudaStream_t s;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    (void)gpu_coll_sweep(comm, rank, nranks, s, 1, 0, 100000, "one node");
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

START_TEST(t_coll_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll, NULL), 0);
}
END_TEST

START_TEST(t_coll_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 900, body_coll, NULL), 0);
}
END_TEST

static void body_barrier(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;

    gpu_set_device(rank);
    comm = harness_comm_create();
    gpu_barrier_order(comm, rank, nranks, arg, SYMCOLL_ERR_IN_PROGRESS);
    CK_SC(symcoll_comm_destroy(comm));
}

START_TEST(t_barrier_3ranks)
{
    gpu_bar_shared_t *sh = gpu_bar_shared_new();
    ck_assert_ptr_nonnull(sh);
    ck_assert_int_eq(harness_run(3, 1, 600, body_barrier, sh), 0);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* The four collectives captured in one CUDA graph after a warm-up, replayed with new
 * inputs; a reduce-scatter whose scratch would grow is refused inside a capture. */
#define CG_COUNT 1001

typedef struct {
    float *rs_send, *rs_recv, *ag, *bc;
    uint8_t *h;
} cg_bufs_t;

static uint8_t cg_byte(int r, size_t j, int salt)
{
    return (uint8_t)((j * 131 + (size_t)r * 29 + (size_t)salt * 7) % 251 + 1);
}

static void cg_fill(const cg_bufs_t *b, int rank, int nranks, int salt, cudaStream_t s)
{
    size_t n = (size_t)nranks;
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, (uint64_t)salt, 0};

    refcheck_fill(&spec, rank, b->h, CG_COUNT * n);
    CK_CUDA(cudaMemcpyAsync(b->rs_send, b->h, CG_COUNT * n * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaStreamSynchronize(s));
    memset(b->h, 0xa5, CG_COUNT * n * 4);
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        b->h[(size_t)rank * CG_COUNT * 4 + j] = cg_byte(rank, j, salt);
    CK_CUDA(cudaMemcpyAsync(b->ag, b->h, CG_COUNT * n * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        b->h[j] = rank == nranks - 1 ? cg_byte(nranks - 1, j, salt + 1) : 0xa5;
    CK_CUDA(cudaMemcpyAsync(b->bc, b->h, CG_COUNT * 4, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaMemsetAsync(b->rs_recv, 0xa5, CG_COUNT * 4, s));
    CK_CUDA(cudaStreamSynchronize(s));
}

static void cg_calls(const cg_bufs_t *b, symcoll_comm_h comm, int rank, int nranks,
                     cudaStream_t s)
{
    CK_SC(symcoll_reduce_scatter(b->rs_send, b->rs_recv, CG_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM,
                                 comm, s));
    CK_SC(symcoll_allgather(b->ag + (size_t)rank * CG_COUNT, b->ag, CG_COUNT, SYMCOLL_FLOAT32,
                            comm, s));
    CK_SC(symcoll_barrier(comm, s));
    CK_SC(symcoll_broadcast(b->bc, b->bc, CG_COUNT, SYMCOLL_FLOAT32, nranks - 1, comm, s));
}

static void cg_verify(const cg_bufs_t *b, int rank, int nranks, int salt, cudaStream_t s,
                      const char *what)
{
    size_t n = (size_t)nranks, bad = 0;
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, (uint64_t)salt, 0};

    CK_CUDA(cudaMemcpyAsync(b->h, b->rs_recv, CG_COUNT * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < CG_COUNT; i++) {
        float e = 0;
        refcheck_store(&e, 0, SYMCOLL_FLOAT32,
                       refcheck_expected(&spec, (size_t)rank * CG_COUNT + i));
        bad += refcheck_load(b->h, i, SYMCOLL_FLOAT32) != refcheck_load(&e, 0, SYMCOLL_FLOAT32);
    }
    if (bad)
        harness_fail("%s: reduce-scatter: %zu wrong", what, bad);
    CK_CUDA(cudaMemcpyAsync(b->h, b->ag, CG_COUNT * n * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4 * n; j++)
        bad += b->h[j] != cg_byte((int)(j / (CG_COUNT * 4)), j % (CG_COUNT * 4), salt);
    if (bad)
        harness_fail("%s: all-gather: %zu wrong bytes", what, bad);
    CK_CUDA(cudaMemcpyAsync(b->h, b->bc, CG_COUNT * 4, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t j = 0; j < CG_COUNT * 4; j++)
        bad += b->h[j] != cg_byte(nranks - 1, j, salt + 1);
    if (bad)
        harness_fail("%s: broadcast: %zu wrong bytes", what, bad);
}

static void body_coll_graph(int rank, int nranks, void *arg)
{
    /* past every one-shot size: a reduce-scatter of it needs more of the pool */
    const size_t n = (size_t)nranks, big = (size_t)1 << 22;
    symcoll_comm_h comm;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cg_bufs_t b;
    void *bsend, *brecv;
    symcoll_status_t st;
    int salt = 7000;

    if (arg) /* "SYMCOLL_ALGO=..." */
        putenv((char *)arg);
    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc((void **)&b.rs_send, CG_COUNT * n * 4));
    CK_CUDA(cudaMalloc((void **)&b.rs_recv, CG_COUNT * 4));
    CK_SC(symcoll_mem_alloc(comm, CG_COUNT * n * 4, SYMCOLL_MEM_CUDA, (void **)&b.ag));
    CK_CUDA(cudaMalloc((void **)&b.bc, CG_COUNT * 4));
    b.h = malloc(CG_COUNT * n * 4);

    /* warm-up: the pool's scratch and staging for these sizes */
    cg_fill(&b, rank, nranks, salt, s);
    cg_calls(&b, comm, rank, nranks, s);
    cg_verify(&b, rank, nranks, salt, s, "warm-up");

    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cg_calls(&b, comm, rank, nranks, s);
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int it = 0; it < 4; it++) {
        salt += 2;
        cg_fill(&b, rank, nranks, salt, s);
        CK_CUDA(cudaGraphLaunch(ge, s));
        cg_verify(&b, rank, nranks, salt, s, "graph replay");
    }
    /* an eager call between replays, then one more replay */
    salt += 2;
    cg_fill(&b, rank, nranks, salt, s);
    cg_calls(&b, comm, rank, nranks, s);
    cg_verify(&b, rank, nranks, salt, s, "eager after replays");
    salt += 2;
    cg_fill(&b, rank, nranks, salt, s);
    CK_CUDA(cudaGraphLaunch(ge, s));
    cg_verify(&b, rank, nranks, salt, s, "graph replay after an eager call");

    /* a larger reduce-scatter needs more scratch: refused inside a capture */
    CK_CUDA(cudaMalloc(&bsend, big * n * 4));
    CK_CUDA(cudaMalloc(&brecv, big * 4));
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    st = symcoll_reduce_scatter(bsend, brecv, big, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
    {
        cudaGraph_t g2 = NULL;
        if (cudaStreamEndCapture(s, &g2) == cudaSuccess && g2)
            cudaGraphDestroy(g2);
        (void)cudaGetLastError();
    }
    if (st != SYMCOLL_ERR_IN_PROGRESS)
        harness_fail("a reduce-scatter growing its scratch in a capture returned %s, "
                     "expected %s",
                     symcoll_status_string(st), symcoll_status_string(SYMCOLL_ERR_IN_PROGRESS));
    /* and works outside it */
    CK_CUDA(cudaMemsetAsync(bsend, 0, big * n * 4, s));
    CK_SC(symcoll_reduce_scatter(bsend, brecv, big, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));

    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    CK_CUDA(cudaFree(bsend));
    CK_CUDA(cudaFree(brecv));
    CK_CUDA(cudaFree(b.rs_send));
    CK_CUDA(cudaFree(b.rs_recv));
    CK_CUDA(cudaFree(b.bc));
    CK_SC(symcoll_mem_free(comm, b.ag));
    CK_SC(symcoll_comm_destroy(comm));
    free(b.h);
}

START_TEST(t_coll_graph_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, NULL), 0);
}
END_TEST

/* the same with the collectives' own kernels forced one-shot, then two-shot, and run as
 * all-reduces */
START_TEST(t_coll_graph_native)
{
    static char one[] = "SYMCOLL_ALGO=oneshot", two[] = "SYMCOLL_ALGO=twoshot",
                composed[] = "SYMCOLL_CUDA_COLL=allreduce";
    setenv("SYMCOLL_CUDA_COLL", "auto", 1); /* the ranks' own kernels (not the default) */
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, one), 0);
    ck_assert_int_eq(harness_run(3, 1, 600, body_coll_graph, two), 0);
    ck_assert_int_eq(harness_run(2, 1, 600, body_coll_graph, composed), 0);
}
END_TEST

/* ---- the collectives' own kernels against their composition from the all-reduce -----
 * Each configuration (environment of the ranks) runs the sweep of gpu_coll_sweep and
 * every datatype x operator (gpu_coll_types): the automatic choice, each kernel forced,
 * each with 4 blocks (one-shot: several chunks a block; two-shot: several strides a
 * thread), and the composition from the all-reduce. */
static const char *const native_cfgs[][3] = {
    /* SYMCOLL_ALGO, SYMCOLL_CUDA_NBLOCKS, SYMCOLL_CUDA_COLL */
    {"auto", "0", "auto"},    {"oneshot", "0", "auto"}, {"twoshot", "0", "auto"},
    {"oneshot", "4", "auto"}, {"twoshot", "4", "auto"}, {"auto", "0", "allreduce"},
};

static void body_coll_native(int rank, int nranks, void *arg)
{
    const size_t first = arg ? *(const size_t *)arg : 0;
    const size_t ncfg = sizeof(native_cfgs) / sizeof(native_cfgs[0]);
    int salt = 300000;
    cudaStream_t s;

    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t c = first; c < ncfg; c++) {
        char where[96];
        symcoll_comm_h comm;

        setenv("SYMCOLL_ALGO", native_cfgs[c][0], 1);
        setenv("SYMCOLL_CUDA_NBLOCKS", native_cfgs[c][1], 1);
        setenv("SYMCOLL_CUDA_COLL", native_cfgs[c][2], 1);
        snprintf(where, sizeof(where), "algo %s, %s blocks, %s:", native_cfgs[c][0],
                 native_cfgs[c][1], native_cfgs[c][2]);
        comm = harness_comm_create();
        salt = gpu_coll_sweep(comm, rank, nranks, s, 1, 0, salt, where);
        salt = gpu_coll_types(comm, rank, nranks, s, salt, where);
        CK_CUDA(cudaStreamSynchronize(s));
        CK_SC(symcoll_comm_destroy(comm));
    }
    CK_CUDA(cudaStreamDestroy(s));
}

START_TEST(t_coll_native_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 1200, body_coll_native, NULL), 0);
}
END_TEST

START_TEST(t_coll_native_3ranks)
{
    static const size_t from = 1; /* the forced kernels and the composition */
    ck_assert_int_eq(harness_run(3, 1, 1200, body_coll_native, (void *)&from), 0);
}
END_TEST

/* Ranks that call different collectives, roots or operators with the same count: every
 * rank's call after it returns SYMCOLL_ERR_MISMATCH, on both kernels of the collectives
 * and against the all-reduce's. */
#define CM_COUNT 1001
enum { CM_RS, CM_AG, CM_BC0, CM_BC1, CM_AR };

static const struct {
    const char *name;
    int call[2]; /* the other ranks', the last rank's */
    symcoll_op_t op[2];
} cm_cases[] = {
    {"broadcast root", {CM_BC0, CM_BC1}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"all-gather against broadcast", {CM_AG, CM_BC0}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"reduce-scatter operator", {CM_RS, CM_RS}, {SYMCOLL_SUM, SYMCOLL_MAX}},
    {"reduce-scatter against all-gather", {CM_RS, CM_AG}, {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"reduce-scatter against all-reduce", {CM_RS, CM_AR}, {SYMCOLL_SUM, SYMCOLL_SUM}},
};

static symcoll_status_t cm_call(int call, symcoll_op_t op, float *a, float *b, int rank,
                                int nranks, symcoll_comm_h comm, cudaStream_t s)
{
    switch (call) {
    case CM_RS:
        return symcoll_reduce_scatter(a, b, CM_COUNT, SYMCOLL_FLOAT32, op, comm, s);
    case CM_AG:
        return symcoll_allgather(b + (size_t)rank * CM_COUNT, a, CM_COUNT, SYMCOLL_FLOAT32,
                                 comm, s);
    case CM_BC0:
    case CM_BC1:
        return symcoll_broadcast(a, a, CM_COUNT, SYMCOLL_FLOAT32, call == CM_BC0 ? 0 : 1, comm,
                                 s);
    default:
        return symcoll_allreduce(a, a, CM_COUNT * (size_t)nranks, SYMCOLL_FLOAT32, op, comm, s);
    }
}

static void body_coll_mismatch(int rank, int nranks, void *arg)
{
    static const char *const algos[] = {"oneshot", "twoshot"};
    const int odd = rank == nranks - 1;
    const size_t bytes = CM_COUNT * (size_t)nranks * 4;
    float *a, *b;
    cudaStream_t s;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc((void **)&a, bytes));
    CK_CUDA(cudaMalloc((void **)&b, bytes));
    CK_CUDA(cudaMemset(a, 0, bytes));
    CK_CUDA(cudaMemset(b, 0, bytes));
    for (size_t g = 0; g < 2; g++) {
        for (size_t c = 0; c < sizeof(cm_cases) / sizeof(cm_cases[0]); c++) {
            symcoll_comm_h comm;
            symcoll_status_t st[3];
            double t;

            setenv("SYMCOLL_ALGO", algos[g], 1);
            comm = harness_comm_create();
            /* every staging and scratch at its size first: the mismatched call grows none */
            for (int k = CM_RS; k <= CM_AR; k++)
                CK_SC(cm_call(k, SYMCOLL_SUM, a, b, rank, nranks, comm, s));
            CK_CUDA(cudaStreamSynchronize(s));
            t = mono_sec();
            st[0] = cm_call(cm_cases[c].call[odd], cm_cases[c].op[odd], a, b, rank, nranks,
                            comm, s);
            CK_CUDA(cudaStreamSynchronize(s));
            for (int k = 1; k < 3; k++) {
                st[k] = cm_call(CM_BC0, SYMCOLL_SUM, a, b, rank, nranks, comm, s);
                CK_CUDA(cudaStreamSynchronize(s));
            }
            fprintf(stderr, "collective mismatch %s (%s): rank %d got %s, %s, %s in %.3f s\n",
                    cm_cases[c].name, algos[g], rank, symcoll_status_string(st[0]),
                    symcoll_status_string(st[1]), symcoll_status_string(st[2]), mono_sec() - t);
            if (st[0] != SYMCOLL_OK && st[0] != SYMCOLL_ERR_MISMATCH)
                harness_fail("collective mismatch %s (%s): the call returned %s",
                             cm_cases[c].name, algos[g], symcoll_status_string(st[0]));
            if (st[1] != SYMCOLL_ERR_MISMATCH || st[2] != SYMCOLL_ERR_MISMATCH)
                harness_fail("collective mismatch %s (%s): the calls after it returned %s and "
                             "%s, expected %s",
                             cm_cases[c].name, algos[g], symcoll_status_string(st[1]),
                             symcoll_status_string(st[2]),
                             symcoll_status_string(SYMCOLL_ERR_MISMATCH));
            t = mono_sec();
            CK_SC(symcoll_comm_destroy(comm));
            if (mono_sec() - t > 1.0)
                harness_fail("collective mismatch %s (%s): destroy took %.3f s",
                             cm_cases[c].name, algos[g], mono_sec() - t);
        }
    }
    CK_CUDA(cudaFree(a));
    CK_CUDA(cudaFree(b));
    CK_CUDA(cudaStreamDestroy(s));
}

START_TEST(t_coll_mismatch_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 600, body_coll_mismatch, NULL), 0);
}
END_TEST

/* ---- cases ------------------------------------------------------------------------- */

void cuda_coll_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"coll2", t_coll_2ranks, 1},
        {"coll3", t_coll_3ranks, 1},
        {"coll_graph", t_coll_graph_2ranks, 1},
        {"coll_graph_native", t_coll_graph_native, 1},
        {"coll_native2", t_coll_native_2ranks, 1},
        {"coll_native3", t_coll_native_3ranks, 1},
        {"coll_mismatch", t_coll_mismatch_3ranks, 1},
        {"barrier_stream", t_barrier_3ranks, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
