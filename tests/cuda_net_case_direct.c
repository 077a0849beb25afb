/* test_cuda_net's cases of the direct path (a UCX with CUDA puts into the peers' CUDA
 * pool): flat and as the hierarchical algorithm's inter-node step, right results,
 * failures, the automatic choice and its refusal with one hardware queue. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_net_cases.h"
#include "cuda_net_testlib.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* ---- the direct path: UCX puts into the peers' CUDA pool ------------------------------
 * Only where the UCX in use reaches CUDA memory (a UCX built with CUDA, UCX_TLS with
 * cuda_copy): the cases force SYMCOLL_CUDA_NET_PATH=direct, so a probe that fails makes
 * the call that ran it (the first that creates the CUDA pool) fail with
 * SYMCOLL_ERR_UNSUPPORTED, and after the body, a report shows the plans and the probe per
 * peer. */

/* The communicator's topology report and decision table, printed and returned (free) */
static char *net_reports(symcoll_comm_h comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(f);
    CK_SC(symcoll_comm_print_topology(comm, f));
    CK_SC(symcoll_comm_print_decisions(comm, f));
    fclose(f);
    printf("%s", text);
    return text;
}

/* every rank: one call (an average); rank 0: the reports name the direct family and a
 * landed probe put to each rank of another node. arg: non-NULL for 2 nodes x 2 ranks
 * (ranks 0 and 1 on node 0), hierarchical with the direct inter-node step (each rank's
 * slice of its node's sum put into the CUDA pool of the rank of its local index on the
 * other node); NULL for one rank a node */
static const int net_report_hier = 1;

static void body_net_direct_report(int rank, int nranks, void *arg)
{
    const bool hier = arg != NULL;
    net_rank_t r;
    char *text;

    net_setup(&r, rank, 3, 1 << 20);
    net_run(&r, r.d[0], r.d[1], r.d[2], 4099, SYMCOLL_FLOAT32, SYMCOLL_AVG, rank, nranks, 777,
            "direct report call");
    if (rank == 0) {
        text = net_reports(r.comm);
        for (int p = hier ? nranks / 2 : 1; p < nranks; p++) {
            char want[96];
            snprintf(want, sizeof(want), "direct path to rank %d (node %d): yes", p,
                     hier ? 1 : p);
            ck_assert_msg(strstr(text, want), "the topology report lacks '%s'", want);
        }
        ck_assert_msg(strstr(text, hier ? "net-cuda-hier-direct" : "net-cuda-direct"),
                      "no plan of the direct family");
        free(text);
    }
    net_teardown(&r, 1);
}

static void net_direct(int nranks, int limit, void (*body)(int, int, void *), void *arg)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(nranks, nranks, limit, body, arg), 0);
    ck_assert_int_eq(harness_run(nranks, nranks, 120, body_net_direct_report, NULL), 0);
}

/* every type x operator, 0, 1, 4099 elements and 16 MiB (16 chunks over 3 slots), in and
 * out of place, 3 nodes; with 256K chunks (64 chunks) on 2 */
START_TEST(t_net_direct_types_3x1)
{
    net_direct(3, 900, body_net_types, NULL);
}
END_TEST

START_TEST(t_net_direct_chunks_2x1)
{
    setenv("SYMCOLL_CUDA_NET_CHUNK", "256K", 1);
    net_direct(2, 900, body_net_types, NULL);
}
END_TEST

START_TEST(t_net_direct_pool_2x1)
{
    net_direct(2, 600, body_net_pool, NULL);
}
END_TEST

START_TEST(t_net_direct_mixed_2x1)
{
    net_direct(2, 600, body_net_mixed, NULL);
}
END_TEST

START_TEST(t_net_direct_coll_3x1)
{
    net_direct(3, 900, body_net_coll, (void *)&net_coll_full);
}
END_TEST

START_TEST(t_net_direct_kill_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_abort_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_timeout_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(2, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout, NULL), 0);
}
END_TEST

static void net_direct_hier(int limit, void (*body)(int, int, void *), void *arg)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(harness_run(4, 2, limit, body, arg), 0);
    /* a hierarchical call creates the CUDA pool, whose creation runs the probe */
    setenv("SYMCOLL_ALGO", "hier", 1);
    ck_assert_int_eq(harness_run(4, 2, 120, body_net_direct_report, (void *)&net_report_hier),
                     0);
}

/* every type x operator as net_direct_types, every call hierarchical */
START_TEST(t_net_direct_hier_types_2x2)
{
    setenv("SYMCOLL_ALGO", "hier", 1);
    net_direct_hier(900, body_net_types, NULL);
}
END_TEST

/* as net_hier: hierarchical direct from 16M (a GPU serves two ranks here), below it flat
 * and staged (two ranks a node) on the same channels; pool buffers, trims behind a call */
START_TEST(t_net_direct_hier_mixed_2x2)
{
    net_direct_hier(900, body_net_hier, NULL);
}
END_TEST

/* the failure cases of 2 x 2, every call hierarchical with the direct step */
static void net_direct_hier_fail(void (*body)(int, int, void *), int limit)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    setenv("SYMCOLL_ALGO", "hier", 1);
    ck_assert_int_eq(harness_run(4, 2, limit, body, NULL), 0);
}

START_TEST(t_net_direct_hier_kill_2x2)
{
    net_direct_hier_fail(body_net_kill, NET_FAIL_TIMEOUT * 4 + 60);
}
END_TEST

START_TEST(t_net_direct_hier_timeout_2x2)
{
    net_direct_hier_fail(body_net_timeout, NET_SHORT_TIMEOUT * 6 + 60);
}
END_TEST

START_TEST(t_net_direct_hier_abort_2x2)
{
    net_direct_hier_fail(body_net_abort, NET_FAIL_TIMEOUT * 4 + 60);
}
END_TEST

/* SYMCOLL_CUDA_NET_PATH=auto, plain buffers (the first call creates the CUDA pool and
 * runs the probe): where UCX's lanes call the CUDA driver (cuda_ipc, cuda_copy) every call
 * stays staged, so a blocking copy into pageable memory right behind a call on its
 * stream returns (on the direct path it would wait for ever: README) */
static void body_net_direct_auto(int rank, int nranks, void *arg)
{
    const size_t count = 4099;
    net_rank_t r;
    char *text;

    net_setup(&r, rank, 3, 1 << 20);
    for (int i = 0; i < 3; i++) {
        net_bufs_t b = {r.d[0], r.d[1], r.d[2]};
        net_enqueue(r.comm, &b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, 910 + i,
                    r.host, NULL);
        CK_CUDA(cudaMemcpy(r.host, b.copy, count * sizeof(float), cudaMemcpyDeviceToHost));
        gpu_host_verify(r.host, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, 910 + i,
                        "auto, blocking copy behind the call");
    }
    if (rank == 0) {
        text = net_reports(r.comm);
        if (strstr(text, "transports that call the CUDA driver from the channel"))
            ck_assert_msg(!strstr(text, "net-cuda-direct"),
                          "auto plans the direct path over lanes that call the CUDA driver");
        free(text);
    }
    net_teardown(&r, 1);
    (void)arg;
}

START_TEST(t_net_direct_auto_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "auto", 1);
    ck_assert_int_eq(harness_run(2, 2, 300, body_net_direct_auto, NULL), 0);
}
END_TEST

START_TEST(t_net_direct_mismatch_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_dtype),
        0);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_count),
        0);
}
END_TEST

/* CUDA_DEVICE_MAX_CONNECTIONS=1 (in the ranks' environment before they create their CUDA
 * contexts) with the direct path forced, over lanes that call the CUDA driver (TCP with
 * cuda_copy, or cuda_ipc: every UCX_TLS these tests use): the probe reports the direct path
 * not available, so the first call fails at once with SYMCOLL_ERR_UNSUPPORTED on every
 * rank instead of waiting for its deadline (the channel's copies would queue behind the
 * stream's wait for them); the next call is planned staged and runs */
static void body_net_direct_one_queue(int rank, int nranks, void *arg)
{
    const size_t count = 4099;
    net_rank_t r;
    symcoll_status_t st;
    cudaError_t e;
    double t0, sec;
    char *text;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_setup(&r, rank, 3, 1 << 20);
    net_watch("a forced direct call with one hardware queue", NET_FAIL_TIMEOUT + 15);
    t0 = now_sec();
    st = symcoll_allreduce(r.d[0], r.d[1], count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    sec = now_sec() - t0;
    alarm(0);
    fprintf(stderr, "rank %d: forced direct call with one hardware queue: %s after %.1f s\n",
            rank, symcoll_status_string(st), sec);
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after the refused call: %s", cudaGetErrorString(e));
    if (st != SYMCOLL_ERR_UNSUPPORTED)
        harness_fail("a forced direct call with CUDA_DEVICE_MAX_CONNECTIONS=1 returned %s",
                     symcoll_status_string(st));
    if (sec > NET_FAIL_TIMEOUT / 2)
        harness_fail("the refusal took %.1f s (the call's deadline is %d s)", sec,
                     NET_FAIL_TIMEOUT);
    net_run(&r, r.d[0], r.d[1], r.d[2], count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, 4321,
            "the staged call after the refusal");
    if (rank == 0) {
        text = net_reports(r.comm);
        ck_assert_msg(strstr(text, "CUDA_DEVICE_MAX_CONNECTIONS=1"),
                      "the reports do not say why the direct path is not available");
        ck_assert_msg(!strstr(text, "net-cuda-direct"), "a plan of the direct family");
        ck_assert_msg(!strstr(text, "): yes"), "a peer listed as reached directly");
        free(text);
    }
    net_teardown(&r, 1);
    (void)arg;
}

START_TEST(t_net_direct_one_queue_2x1)
{
    setenv("SYMCOLL_CUDA_NET_PATH", "direct", 1);
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_direct_one_queue, NULL), 0);
}
END_TEST

/* ---- cases ------------------------------------------------------------------------- */

void cuda_net_direct_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"net_direct_types", t_net_direct_types_3x1, 1},
        {"net_direct_chunks", t_net_direct_chunks_2x1, 1},
        {"net_direct_pool", t_net_direct_pool_2x1, 1},
        {"net_direct_mixed", t_net_direct_mixed_2x1, 1},
        {"net_direct_coll", t_net_direct_coll_3x1, 1},
        {"net_direct_kill", t_net_direct_kill_2x1, 1},
        {"net_direct_abort", t_net_direct_abort_2x1, 1},
        {"net_direct_timeout", t_net_direct_timeout_2x1, 1},
        {"net_direct_mismatch", t_net_direct_mismatch_2x1, 1},
        {"net_direct_auto", t_net_direct_auto_2x1, 1},
        {"net_direct_one_queue", t_net_direct_one_queue_2x1, 1},
        {"net_direct_hier_types", t_net_direct_hier_types_2x2, 1},
        {"net_direct_hier_mixed", t_net_direct_hier_mixed_2x2, 1},
        {"net_direct_hier_kill", t_net_direct_hier_kill_2x2, 1},
        {"net_direct_hier_abort", t_net_direct_hier_abort_2x2, 1},
        {"net_direct_hier_timeout", t_net_direct_hier_timeout_2x2, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, "net");
}
