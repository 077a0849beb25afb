/* test_cuda_net's failure cases across simulated nodes: a peer killed, aborting (busy
 * or idle) or absent (the deadline), and ranks calling with different arguments. */
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

/* The failure cases: two buffers, and one checked 16 MiB call so that everyone is
 * connected and warm before the failure. */
static void net_failure_setup(net_rank_t *r, int rank, int nranks, int salt, const char *what)
{
    net_setup(r, rank, 2, NET_BIG);
    net_run(r, r->d[0], r->d[0], r->d[1], NET_BIG / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
            nranks, salt, what);
}

/* Queue large calls until one fails, each followed by a bounded stream wait. Returns the
 * first non-OK status (SYMCOLL_OK if max_calls all succeeded); *ncalls: calls made. */
static symcoll_status_t net_until_failure(net_rank_t *r, size_t count, int max_calls,
                                          int *ncalls)
{
    symcoll_status_t st = SYMCOLL_OK;
    int it;

    for (it = 0; it < max_calls && st == SYMCOLL_OK; it++) {
        cudaError_t e;
        /* queued or not, the call and then the stream must come back */
        net_watch("symcoll_allreduce and cudaStreamSynchronize on a failing communicator",
                  NET_FAIL_TIMEOUT + 15);
        st = symcoll_allreduce(r->d[0], r->d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm,
                               r->s);
        e = cudaStreamSynchronize(r->s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("cudaStreamSynchronize after a call that returned %s: %s",
                         symcoll_status_string(st), cudaGetErrorString(e));
    }
    *ncalls = it;
    return st;
}

/* After a failure: the call that saw it said so or the next one does, with one of the
 * failure codes; the stream was never left waiting; later calls fail at once; the stream
 * takes work again and destroy returns. loop_status: what net_until_failure returned. */
static void net_after_failure(net_rank_t *r, symcoll_status_t loop_status, int rank, int ncalls,
                              double t0)
{
    symcoll_status_t st;
    double t;

    if (loop_status == SYMCOLL_OK)
        harness_fail("%d calls succeeded after the failure", ncalls);
    if (loop_status != SYMCOLL_ERR_PEER_FAILED && loop_status != SYMCOLL_ERR_ABORTED &&
        loop_status != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("after the failure symcoll_allreduce returned %s",
                     symcoll_status_string(loop_status));
    fprintf(stderr, "rank %d: %s after %d calls, %.2f s\n", rank,
            symcoll_status_string(loop_status), ncalls, now_sec() - t0);
    net_watch("a call and the stream after the failure", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r->d[0], r->d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm, r->s);
    if (st == SYMCOLL_OK)
        harness_fail("a call after %s returned OK", symcoll_status_string(loop_status));
    CK_CUDA(cudaMemsetAsync(r->d[0], 0, 64, r->s));
    CK_CUDA(cudaStreamSynchronize(r->s));
    net_watch("symcoll_comm_destroy after the failure", NET_FAIL_TIMEOUT + 15);
    t = now_sec();
    st = symcoll_comm_destroy(r->comm);
    alarm(0);
    fprintf(stderr, "rank %d: symcoll_comm_destroy: %s in %.2f s\n", rank,
            symcoll_status_string(st), now_sec() - t);
}

static void *net_killer(void *arg)
{
    (void)arg;
    usleep(50000);
    raise(SIGKILL);
    return NULL;
}

/* The last rank forks: its child is the rank and kills itself while 16 MiB calls are in
 * flight; the harness's process only checks that it died by SIGKILL. */
void body_net_kill(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    if (rank == nranks - 1) {
        int ws;
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            if (waitpid(pid, &ws, 0) != pid)
                harness_fail("waitpid: %s", strerror(errno));
            if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
                harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
            return;
        }
    }
    net_failure_setup(&r, rank, nranks, 50000, "before the kill");
    if (rank == nranks - 1) {
        pthread_t th;
        /* the timer starts once a further call completed: it needed everyone's data, so
         * every survivor is past the checked calls of the set-up */
        symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s);
        cudaStreamSynchronize(r.s);
        pthread_create(&th, NULL, net_killer, NULL);
        for (;;) {
            symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                              r.s);
            cudaStreamSynchronize(r.s);
        }
    }
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    /* a death is reported as one, on every survivor (not as an abort) */
    if (st != SYMCOLL_ERR_PEER_FAILED)
        harness_fail("a survivor of the kill got %s", symcoll_status_string(st));
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_kill_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)

/* One rank queues a call with another datatype of the same size, or another count: the
 * channels' agreement sees it on every rank. A queued call returns before its channels run, so
 * the verdict shows at the latest in the next call; it is a failure of the communicator
 * here (the channels of ranks with other counts are out of step), never success: every
 * rank's next call fails with a failure code and MISMATCH is logged, the streams are
 * released, and destroy returns. */
void body_net_mismatch(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    const int *by_count = arg;
    int odd = rank == nranks - 1;
    net_rank_t r;
    symcoll_status_t st, next;
    cudaError_t e;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 60000, "before the mismatch");
    net_watch("a mismatched call and its stream", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r.d[0], r.d[0], *by_count && odd ? count / 2 + 1 : count,
                           !*by_count && odd ? SYMCOLL_FLOAT16 : SYMCOLL_BFLOAT16, SYMCOLL_SUM,
                           r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    alarm(0);
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after a mismatched call: %s",
                     cudaGetErrorString(e));
    net_watch("the call after a mismatched one", NET_FAIL_TIMEOUT + 15);
    next = symcoll_allreduce(r.d[0], r.d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s);
    e = cudaStreamSynchronize(r.s);
    alarm(0);
    fprintf(stderr, "rank %d: mismatched call: %s, next: %s\n", rank, symcoll_status_string(st),
            symcoll_status_string(next));
    if (e != cudaSuccess)
        harness_fail("cudaStreamSynchronize after the next call: %s", cudaGetErrorString(e));
    if (st == SYMCOLL_OK && next == SYMCOLL_OK)
        harness_fail("a mismatched call and the next one both returned OK");
    if (next != SYMCOLL_ERR_MISMATCH && next != SYMCOLL_ERR_ABORTED &&
        next != SYMCOLL_ERR_PEER_FAILED)
        harness_fail("the call after a mismatched one returned %s",
                     symcoll_status_string(next));
    net_watch("symcoll_comm_destroy after a mismatch", NET_FAIL_TIMEOUT + 15);
    symcoll_comm_destroy(r.comm);
    alarm(0);
    net_teardown(&r, 0);
}

int net_mismatch_dtype = 0, net_mismatch_count = 1;

START_TEST(t_net_mismatch_2x1)
{
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_dtype),
        0);
    ck_assert_int_eq(
        harness_run(2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_mismatch, &net_mismatch_count),
        0);
}
END_TEST

typedef struct {
    symcoll_comm_h comm;
    symcoll_status_t st; /* what symcoll_comm_abort returned */
} net_abort_t;

static void *net_aborter(void *arg)
{
    net_abort_t *ab = arg;
    usleep(100000);
    ab->st = symcoll_comm_abort(ab->comm);
    return NULL;
}

/* The last rank aborts its communicator from another thread while 16 MiB calls are in
 * flight: it gets SYMCOLL_ERR_ABORTED, its peer one of the failure codes. */
void body_net_abort(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    net_abort_t ab;
    pthread_t th;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 51000, "before the abort");
    ab = (net_abort_t){r.comm, SYMCOLL_ERR_INTERNAL};
    if (rank == nranks - 1)
        pthread_create(&th, NULL, net_aborter, &ab);
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    if (rank == nranks - 1) {
        pthread_join(th, NULL);
        if (ab.st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(ab.st));
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the aborted rank got %s, expected %s", symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_ABORTED));
    }
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)

/* The last rank aborts while its channels are idle; the other's next call (8 chunks over
 * the channels) must end soon after, not at its timeout: idle channels tell their peers. */
static void body_net_abort_idle(int rank, int nranks, void *arg)
{
    net_rank_t r;
    symcoll_status_t st;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the abort");
    if (rank == nranks - 1) {
        st = symcoll_comm_abort(r.comm);
        if (st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(st));
        usleep(500000);
    } else {
        usleep(200000);
    }
    t0 = now_sec();
    net_watch("a call while a peer is aborted", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r.d[0], r.d[0], NET_BIG / 2 / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM,
                           r.comm, r.s);
    CK_CUDA(cudaStreamSynchronize(r.s));
    alarm(0);
    if (rank == nranks - 1 && st != SYMCOLL_ERR_ABORTED)
        harness_fail("the aborted rank got %s", symcoll_status_string(st));
    if (now_sec() - t0 > NET_FAIL_TIMEOUT / 2)
        harness_fail(
            "the call and its stream took %.1f s after the peer's abort (timeout %d s)",
            now_sec() - t0, NET_FAIL_TIMEOUT);
    net_after_failure(
        &r,
        rank == nranks - 1
            ? st
            : symcoll_allreduce(r.d[0], r.d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s),
        rank, 1, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_idle_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort_idle)

/* Rank 1 stays alive but makes no call: rank 0's call fails by its deadline and never
 * leaves the stream waiting; later, rank 1's own call fails or is refused in bounded
 * time. */
void body_net_timeout(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_SHORT_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the timeout");
    if (rank == 0) {
        t0 = now_sec();
        st = net_until_failure(&r, count, 2, &ncalls);
        net_after_failure(&r, st, rank, ncalls, t0);
    } else {
        cudaError_t e;
        sleep(2 * NET_SHORT_TIMEOUT + 5);
        net_watch("the late rank's call and stream", NET_SHORT_TIMEOUT + 15);
        st = symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                               r.s);
        e = cudaStreamSynchronize(r.s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("the late rank's stream: %s", cudaGetErrorString(e));
        fprintf(stderr, "rank %d: late call: %s\n", rank, symcoll_status_string(st));
        net_watch("the late rank's symcoll_comm_destroy", NET_SHORT_TIMEOUT + 15);
        symcoll_comm_destroy(r.comm);
        alarm(0);
    }
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_timeout_2x1, 2, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)

/* ---- cases ------------------------------------------------------------------------- */

void cuda_net_faults_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"net_kill", t_net_kill_2x1, 1},
        {"net_mismatch", t_net_mismatch_2x1, 1},
        {"net_abort", t_net_abort_2x1, 1},
        {"net_timeout", t_net_timeout_2x1, 1},
        {"net_abort_idle", t_net_abort_idle_2x1, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, "net");
}
