/* test_cuda's cases of a CUDA graph's lifetime against its communicator's: a pool trim
 * under a live graph keeps what the graph uses (replays stay exact) and releases it once
 * the graphs are gone; a communicator destroyed while a graph that captured it lives
 * keeps its CUDA memory mapped, a replay then does nothing and ends at once, and the
 * memory goes back once the graphs are destroyed; a first capture needs no warm-up where
 * the pool has room (symcoll_pool_reserve); an abort during a replay that waits for
 * a peer ends the replay at once and the calls after it fail on every rank, bounded. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "symcoll.h"

#define GL_COUNT ((size_t)(1 << 20) + 3) /* floats a buffer: 4 MiB and a bit */
#define GL_BYTES (GL_COUNT * 4)
#define GL_BIG ((size_t)256 << 20) /* a buffer whose release shows in the device's memory */

static size_t gl_in_use(symcoll_comm_h comm)
{
    symcoll_pool_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = SYMCOLL_POOL_ATTR_FIELD_IN_USE;
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &a));
    return a.in_use;
}

static size_t gl_free_mem(void)
{
    size_t free_b = 0, total = 0;
    CK_CUDA(cudaMemGetInfo(&free_b, &total));
    return free_b;
}

/* An all-reduce of in into out on comm, warmed up, then captured: *ge replays it. */
static void gl_capture(symcoll_comm_h comm, void *in, void *out, cudaStream_t s, int rank,
                       int nranks, int *salt, void *host, cudaGraph_t *g, cudaGraphExec_t *ge)
{
    gpu_fill(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++*salt, host, s);
    CK_SC(symcoll_allreduce(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    gpu_verify(out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, *salt, host, s, "warm-up");
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK_SC(symcoll_allreduce(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamEndCapture(s, g));
    CK_CUDA(cudaGraphInstantiate(ge, *g, 0));
}

static void gl_replay(cudaGraphExec_t ge, void *in, void *out, cudaStream_t s, int rank,
                      int nranks, int *salt, void *host, const char *what)
{
    gpu_fill(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++*salt, host, s);
    CK_CUDA(cudaGraphLaunch(ge, s));
    gpu_verify(out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, *salt, host, s, what);
}

/* Trim with a live graph, then without. */
static void gl_trim(symcoll_comm_h comm, void *in, void *out, cudaStream_t s, int rank,
                    int nranks, int *salt, void *host)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    size_t used0, used1;
    double t0;

    gl_capture(comm, in, out, s, rank, nranks, salt, host, &g, &ge);
    CK_CUDA(cudaStreamSynchronize(s));
    used0 = gl_in_use(comm);
    CK_SC(symcoll_pool_trim(comm, SYMCOLL_MEM_CUDA));
    used1 = gl_in_use(comm);
    if (used1 != used0)
        harness_fail("trim under a live graph released %zu bytes of the pool", used0 - used1);
    for (int it = 0; it < 3; it++)
        gl_replay(ge, in, out, s, rank, nranks, salt, host, "replay after a trim");
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
    /* CUDA tells the library of the graphs' end from a thread of its own, a little later:
     * trim until the staging goes (every rank sees the same pool, so the loop ends alike) */
    t0 = mono_sec();
    for (;;) {
        CK_SC(symcoll_pool_trim(comm, SYMCOLL_MEM_CUDA));
        used1 = gl_in_use(comm);
        if (used1 < used0)
            break;
        if (mono_sec() - t0 > 10.0)
            harness_fail("trim after the graphs were destroyed still keeps the staging");
        usleep(50000);
    }
    if (rank == 0)
        printf(
            "trim: %zu bytes in use with a live graph, %zu after it was destroyed (%.2f s)\n",
            used0, used1, mono_sec() - t0);
}

/* Destroy a communicator (a split of comm) while a graph that captured it lives. */
static void gl_destroy(symcoll_comm_h comm, cudaStream_t s, int rank, int nranks, int *salt,
                       void *host)
{
    symcoll_comm_h child;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    void *in, *out, *big;
    size_t free0, free1, mapped;
    symcoll_pool_attr_t a;
    double t0, dt;
    cudaError_t err;

    CK_SC(symcoll_comm_split(comm, 0, rank, NULL, &child));
    CK_SC(symcoll_mem_alloc(child, GL_BIG, SYMCOLL_MEM_CUDA, &big));
    CK_CUDA(cudaMemset(big, 0, GL_BIG));
    CK_SC(symcoll_mem_alloc(child, GL_BYTES, SYMCOLL_MEM_CUDA, &in));
    CK_SC(symcoll_mem_alloc(child, GL_BYTES, SYMCOLL_MEM_CUDA, &out));
    gl_capture(child, in, out, s, rank, nranks, salt, host, &g, &ge);
    gl_replay(ge, in, out, s, rank, nranks, salt, host, "replay before the destroy");
    CK_CUDA(cudaStreamSynchronize(s));
    memset(&a, 0, sizeof(a));
    a.field_mask = SYMCOLL_POOL_ATTR_FIELD_MAPPED;
    CK_SC(symcoll_pool_query(child, SYMCOLL_MEM_CUDA, &a));
    mapped = a.mapped; /* this rank's; a GPU that serves both ranks gets both back */
    CK_SC(symcoll_barrier(comm, NULL));
    free0 = gl_free_mem();
    CK_SC(symcoll_barrier(comm, NULL));

    t0 = mono_sec();
    CK_SC(symcoll_comm_destroy(child));
    dt = mono_sec() - t0;
    if (dt > 2.0)
        harness_fail("destroy with a live graph took %.2f s", dt);
    /* a replay of the destroyed communicator's graph: its kernels stop at once */
    t0 = mono_sec();
    CK_CUDA(cudaGraphLaunch(ge, s));
    err = cudaStreamSynchronize(s);
    dt = mono_sec() - t0;
    if (err != cudaSuccess)
        harness_fail("replay after the destroy: %s", cudaGetErrorString(err));
    if (dt > 5.0)
        harness_fail("replay after the destroy took %.2f s", dt);
    CK_SC(symcoll_barrier(comm, NULL));
    free1 = gl_free_mem();
    if (free1 > free0 + mapped / 4)
        harness_fail("the destroyed communicator's memory went while a graph lived "
                     "(free %zu -> %zu MiB)",
                     free0 >> 20, free1 >> 20);
    CK_SC(symcoll_barrier(comm, NULL));

    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
    CK_SC(symcoll_barrier(comm, NULL));
    /* both ranks' memory (each maps the other's): back once both let go */
    t0 = mono_sec();
    for (;;) {
        free1 = gl_free_mem();
        if (free1 >= free0 + mapped - mapped / 8)
            break;
        if (mono_sec() - t0 > 10.0)
            harness_fail("the destroyed communicator's memory stays after its graphs went "
                         "(free %zu -> %zu MiB)",
                         free0 >> 20, free1 >> 20);
        usleep(50000);
    }
    if (rank == 0)
        printf("destroy with a live graph: a replay after it ended at once; %zu MiB came "
               "back %.2f s after the graphs were destroyed\n",
               (free1 - free0) >> 20, mono_sec() - t0);
    CK_SC(symcoll_barrier(comm, NULL));
}

/* A capture with no warm-up: a split of comm whose pool was reserved; the first
 * all-reduce and the first stream barrier are captured directly (their staging carved
 * with no exchange); a larger all-reduce in a capture then needs the staging to grow:
 * refused, with nothing changed; the same call outside the capture grows the staging,
 * and the graph still replays exactly on the staging it captured. */
static void gl_first_capture(symcoll_comm_h comm, cudaStream_t s, int rank, int nranks,
                             int *salt, void *host)
{
    symcoll_comm_h child;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    void *in, *out, *big;
    size_t used0;
    symcoll_status_t st;

    CK_SC(symcoll_comm_split(comm, 0, rank, NULL, &child));
    CK_SC(symcoll_pool_reserve(child, (size_t)64 << 20, SYMCOLL_MEM_CUDA));
    CK_SC(symcoll_mem_alloc(child, GL_BYTES, SYMCOLL_MEM_CUDA, &in));
    CK_SC(symcoll_mem_alloc(child, GL_BYTES, SYMCOLL_MEM_CUDA, &out));
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK_SC(symcoll_barrier(child, s));
    /* two-shot, whose staging grows with the size, whatever the thresholds here */
    CK_SC(symcoll_comm_set_algo(child, "twoshot"));
    CK_SC(symcoll_allreduce(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, child, s));
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    for (int it = 0; it < 3; it++)
        gl_replay(ge, in, out, s, rank, nranks, salt, host, "a capture with no warm-up");
    CK_CUDA(cudaStreamSynchronize(s));

    /* four times the size: the staging must grow, which a capture cannot hold */
    CK_SC(symcoll_mem_alloc(child, 4 * GL_BYTES, SYMCOLL_MEM_CUDA, &big));
    used0 = gl_in_use(child);
    {
        cudaGraph_t g2 = NULL;
        CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        st = symcoll_allreduce(big, big, 4 * GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, child, s);
        CK_CUDA(cudaStreamEndCapture(s, &g2));
        if (g2)
            CK_CUDA(cudaGraphDestroy(g2));
    }
    if (st != SYMCOLL_ERR_IN_PROGRESS)
        harness_fail("a capture that needs the staging to grow: %s", symcoll_status_string(st));
    if (gl_in_use(child) != used0)
        harness_fail("the refused capture changed the pool");
    /* the communicator goes on: the same call outside a capture, and the graph again */
    gpu_fill(big, big, 4 * GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, ++*salt, host,
             s);
    CK_SC(symcoll_allreduce(big, big, 4 * GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, child, s));
    gpu_verify(big, 4 * GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, *salt, host, s,
               "eager after the refused capture");
    /* that call grew the staging: the graph keeps the staging it captured */
    for (int it = 0; it < 2; it++)
        gl_replay(ge, in, out, s, rank, nranks, salt, host, "replay after the staging grew");
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
    CK_SC(symcoll_comm_set_algo(child, NULL));
    CK_SC(symcoll_comm_destroy(child));
    if (rank == 0)
        printf("first capture with no warm-up after a reservation: exact; a capture that "
               "needs growth: %s\n",
               symcoll_status_string(st));
}

static void *gl_abort_later(void *arg)
{
    usleep(500000);
    CK_SC(symcoll_comm_abort((symcoll_comm_h)arg));
    return NULL;
}

/* Rank 0 replays alone (rank 1 never joins) and aborts during the replay. */
static void gl_abort(symcoll_comm_h comm, void *in, void *out, cudaStream_t s, int rank,
                     int nranks, int *salt, void *host)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    symcoll_status_t st = SYMCOLL_OK;
    double t0, dt;

    gl_capture(comm, in, out, s, rank, nranks, salt, host, &g, &ge);
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_barrier(comm, NULL));
    t0 = mono_sec();
    if (rank == 0) {
        pthread_t th;
        if (pthread_create(&th, NULL, gl_abort_later, comm))
            harness_fail("pthread_create");
        CK_CUDA(cudaGraphLaunch(ge, s));
        CK_CUDA(cudaStreamSynchronize(s));
        dt = mono_sec() - t0;
        pthread_join(th, NULL);
        if (dt > 5.0) /* the timeout is 20 s */
            harness_fail("the replay took %.2f s to end after the abort at 0.5 s", dt);
        st = symcoll_allreduce(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the call after the aborted replay returned %s",
                         symcoll_status_string(st));
        printf("abort during a replay: the replay ended %.2f s after it began\n", dt);
    } else {
        /* the peer's kernels gave up: a call here fails (at once, or the next one) */
        usleep(1500000);
        for (int k = 0; k < 3 && st == SYMCOLL_OK; k++) {
            st = symcoll_allreduce(in, out, GL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            (void)cudaStreamSynchronize(s);
        }
        dt = mono_sec() - t0;
        if (st != SYMCOLL_ERR_PEER_FAILED && st != SYMCOLL_ERR_ABORTED &&
            st != SYMCOLL_ERR_MISMATCH)
            harness_fail("the peer's calls after the aborted replay: %s",
                         symcoll_status_string(st));
        if (dt > 8.0)
            harness_fail("the peer took %.2f s to hear of the abort", dt);
    }
    CK_CUDA(cudaGraphExecDestroy(ge));
    CK_CUDA(cudaGraphDestroy(g));
}

static void body_graph_life(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    cudaStream_t s;
    void *in, *out, *host;
    int salt = 83000;

    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host = malloc(4 * GL_BYTES);
    CK_SC(symcoll_mem_alloc(comm, GL_BYTES, SYMCOLL_MEM_CUDA, &in));
    CK_SC(symcoll_mem_alloc(comm, GL_BYTES, SYMCOLL_MEM_CUDA, &out));

    gl_trim(comm, in, out, s, rank, nranks, &salt, host);
    gl_first_capture(comm, s, rank, nranks, &salt, host);
    gl_destroy(comm, s, rank, nranks, &salt, host);
    gl_abort(comm, in, out, s, rank, nranks, &salt, host);

    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    CK_CUDA(cudaStreamDestroy(s));
    free(host);
    (void)arg;
}

START_TEST(t_graph_life_2ranks)
{
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    ck_assert_int_eq(harness_run(2, 1, 300, body_graph_life, NULL), 0);
}
END_TEST

void cuda_graph_life_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {{"graph_life", t_graph_life_2ranks, 1}};
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
