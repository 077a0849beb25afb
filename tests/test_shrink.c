/* symcoll_comm_shrink: real processes, real UCX over TCP, one node and simulated nodes. A
 * rank killed (SIGKILL) or stopped (SIGSTOP) in the middle of all-reduces, or an abort
 * from one rank: the survivors shrink to a communicator of the live ranks in the old
 * order, whose collectives are exact. A second rank killed during the shrink; a child
 * shrunk while its parent and its sibling live on. Each trial prints the time from the
 * fault to the new communicator (SHRINK_TRIALS sets the number of trials). */
#define _GNU_SOURCE
#include <check.h>
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

#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#define RUN_TIMEOUT 90.0
#define COUNT 4096
#define MAX_RANKS 8

typedef enum { F_KILL, F_STOP, F_ABORT } fault_t;

typedef struct trial {
    fault_t fault;
    int victim;       /* rank of the fault */
    int second;       /* a rank killed during the shrink, or -1 */
    unsigned stopped; /* F_STOP: the ranks stopped (bit r: rank r) */
    double delay_s;   /* from the first all-reduce to the fault */
    int after_call;   /* kill_later: the delay starts once the rank's next call succeeded */
    unsigned long calls_before; /* ... its count of successful calls when it was started */
    _Atomic int64_t fault_ns;
    _Atomic int64_t ready_ns[MAX_RANKS];
    _Atomic int attempts[MAX_RANKS];
    _Atomic int done;
} trial_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void shrink_env(const char *timeout)
{
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", timeout, 1);
}

/* One checked float32 sum all-reduce; returns its status (a wrong result fails). */
/* all-reduces of this process that succeeded (each rank is a process) */
static _Atomic unsigned long ar_succeeded;

static symcoll_status_t ar_checked(symcoll_comm_h comm, uint64_t seed, int pool)
{
    refcheck_spec_t spec = {SYMCOLL_FLOAT32, SYMCOLL_SUM, 0, seed, 0};
    static float plain_in[COUNT], plain_out[COUNT];
    float *in = plain_in, *out = plain_out;
    symcoll_status_t st;
    size_t first = 0, bad;
    int r;

    ck_assert_int_eq(symcoll_comm_rank(comm, &r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_size(comm, &spec.nranks), SYMCOLL_OK);
    if (pool) {
        st = symcoll_mem_alloc(comm, 2 * sizeof(plain_in), SYMCOLL_MEM_HOST, (void **)&in);
        if (st != SYMCOLL_OK)
            return st;
        out = in + COUNT;
    }
    refcheck_fill(&spec, r, in, COUNT);
    st = symcoll_allreduce(in, out, COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL);
    if (st == SYMCOLL_OK && (bad = refcheck_compare(&spec, out, COUNT, &first)))
        harness_fail("all-reduce on %d ranks: %zu wrong, first at %zu", spec.nranks, bad,
                     first);
    if (pool)
        (void)symcoll_mem_free(comm, in);
    if (st == SYMCOLL_OK)
        atomic_fetch_add(&ar_succeeded, 1);
    return st;
}

/* With after_call, the delay starts once one more call of this rank succeeded: that call
 * needed every rank's data, so no survivor is still in a call the test checks for success
 * (a slow one could be, a delay after the victim's own checked call). */
static void *kill_later(void *arg)
{
    trial_t *t = arg;
    while (t->after_call && atomic_load(&ar_succeeded) == t->calls_before)
        usleep(1000);
    usleep((useconds_t)(t->delay_s * 1e6));
    atomic_store(&t->fault_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

/* All-reduces until one fails (the fault), within a bound. */
static symcoll_status_t until_failure(symcoll_comm_h comm)
{
    symcoll_status_t st = SYMCOLL_OK;
    for (uint64_t i = 1; st == SYMCOLL_OK && i < 100000; i++)
        st = ar_checked(comm, i, (int)(i & 1));
    return st;
}

/* Shrink until it gives a communicator (a second failure during one fails it: call
 * again), at most 3 times; then exact all-reduces on it. */
static symcoll_comm_h shrink_ok(symcoll_comm_h comm, double timeout, int *attempts_p)
{
    symcoll_comm_params_t p;
    symcoll_comm_h nc = NULL;
    symcoll_status_t st = SYMCOLL_ERR_INTERNAL;
    int a;

    memset(&p, 0, sizeof(p));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TIMEOUT;
    p.timeout_sec = timeout;
    for (a = 1; a <= 3; a++) {
        st = symcoll_comm_shrink(comm, &p, &nc);
        if (st == SYMCOLL_OK)
            break;
        if (st != SYMCOLL_ERR_PEER_FAILED && st != SYMCOLL_ERR_TIMED_OUT &&
            st != SYMCOLL_ERR_BOOTSTRAP)
            break;
    }
    if (st != SYMCOLL_OK || !nc)
        harness_fail("symcoll_comm_shrink: %s after %d attempt(s)", symcoll_status_string(st),
                     a);
    *attempts_p = a;
    return nc;
}

static void body_fault(int rank, int nranks, void *arg)
{
    trial_t *t = arg;
    symcoll_comm_h comm, nc;
    symcoll_status_t st;
    pthread_t th;
    pid_t stopped = -1;
    int attempts = 0, want_n, want_r, nr = -1, nn = -1;

    shrink_env(t->fault == F_STOP ? "2" : "20");
    if (t->fault == F_STOP && (t->stopped >> rank & 1)) {
        /* the rank goes on in a child that stops itself; this process kills it once the
         * others are done */
        stopped = fork();
        if (stopped > 0) {
            while (atomic_load(&t->done) < nranks - __builtin_popcount(t->stopped))
                usleep(2000);
            kill(stopped, SIGKILL);
            waitpid(stopped, NULL, 0);
            return;
        }
    }
    if ((t->fault == F_KILL && rank == t->victim) || rank == t->second)
        if (!harness_fork_victim())
            return;
    comm = harness_comm_create();
    ck_assert_int_eq(ar_checked(comm, 999, 0), SYMCOLL_OK);
    if (t->fault == F_KILL && rank == t->victim) {
        t->calls_before = atomic_load(&ar_succeeded);
        ck_assert_int_eq(pthread_create(&th, NULL, kill_later, t), 0);
    }
    if (t->fault == F_STOP && (t->stopped >> rank & 1)) {
        /* one more call, as until_failure's first: it needs every rank's data, so no
         * survivor is still in the checked call above when this rank stops */
        (void)ar_checked(comm, 1, 1);
        usleep((useconds_t)(t->delay_s * 1e6));
        atomic_store(&t->fault_ns, mono_ns());
        raise(SIGSTOP);
        for (;;)
            pause();
    }
    if (t->fault == F_ABORT) {
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(ar_checked(comm, (uint64_t)i + 3, i & 1), SYMCOLL_OK);
        if (rank == t->victim) {
            /* as for a stop: the others are past their checked calls first */
            (void)ar_checked(comm, 1, 1);
            atomic_store(&t->fault_ns, mono_ns());
            ck_assert_int_eq(symcoll_comm_abort(comm), SYMCOLL_OK);
        }
    }
    st = until_failure(comm);
    if (st == SYMCOLL_OK)
        harness_fail("no failure seen");
    if (rank == t->second) {
        /* dies while the others agree (its own record: the trial's is the first fault's) */
        static trial_t own;
        own.delay_s = 0.004;
        ck_assert_int_eq(pthread_create(&th, NULL, kill_later, &own), 0);
    }
    nc = shrink_ok(comm, t->fault == F_STOP ? 6.0 : 10.0, &attempts);
    atomic_store(&t->ready_ns[rank], mono_ns());
    atomic_store(&t->attempts[rank], attempts);
    /* the live ranks in the old order */
    want_n = nranks - (t->fault == F_KILL) - (t->second >= 0) -
             (t->fault == F_STOP ? __builtin_popcount(t->stopped) : 0);
    want_r = rank;
    for (int r = 0; r < rank; r++)
        want_r -= (r == t->victim && t->fault == F_KILL) || r == t->second ||
                  (t->fault == F_STOP && (t->stopped >> r & 1));
    ck_assert_int_eq(symcoll_comm_rank(nc, &nr), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_size(nc, &nn), SYMCOLL_OK);
    if (nr != want_r || nn != want_n)
        harness_fail("after the shrink: rank %d of %d, expected %d of %d", nr, nn, want_r,
                     want_n);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(ar_checked(nc, 5000 + (uint64_t)i, i & 1), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_barrier(nc, NULL), SYMCOLL_OK);
    /* the old one is good only for destroy */
    ck_assert_int_ne(ar_checked(comm, 1, 0), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(nc), SYMCOLL_OK);
    atomic_fetch_add(&t->done, 1);
}

static int trials(int dflt)
{
    const char *v = getenv("SHRINK_TRIALS");
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

/* (bound_s > 0: the fault to the new communicator must take at most this long) */
static void run_trials_stop(const char *what, fault_t fault, int n, int nodes, int victim,
                            int second, unsigned stopped_more, int ntrials, double bound_s)
{
    trial_t *t =
        mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(t, MAP_FAILED);
    for (int k = 0; k < ntrials; k++) {
        double worst = 0;
        int most = 0;
        memset(t, 0, sizeof(*t));
        t->fault = fault;
        t->victim = victim;
        t->second = second;
        t->stopped = fault == F_STOP ? (victim >= 0 ? 1u << victim : 0) | stopped_more : 0;
        t->delay_s = 0.05 + 0.01 * k;
        t->after_call = fault == F_KILL;
        ck_assert_int_eq(harness_run(n, nodes, RUN_TIMEOUT, body_fault, t), 0);
        for (int r = 0; r < n; r++) {
            int64_t ready = atomic_load(&t->ready_ns[r]);
            if (ready && (double)(ready - t->fault_ns) / 1e9 > worst)
                worst = (double)(ready - t->fault_ns) / 1e9;
            if (atomic_load(&t->attempts[r]) > most)
                most = atomic_load(&t->attempts[r]);
        }
        fprintf(stderr,
                "# shrink %s, trial %d: fault to new communicator %.3f s, %d attempt(s)\n",
                what, k + 1, worst, most);
        ck_assert_msg(bound_s <= 0 || worst <= bound_s, "shrink %s took %.3f s, over %.1f s",
                      what, worst, bound_s);
    }
    munmap(t, sizeof(*t));
}

static void run_trials(const char *what, fault_t fault, int n, int nodes, int victim,
                       int second, int ntrials)
{
    run_trials_stop(what, fault, n, nodes, victim, second, 0, ntrials, 0);
}

START_TEST(test_kill_1node)
{
    run_trials("after SIGKILL, 4 ranks on 1 node", F_KILL, 4, 1, 2, -1, trials(2));
}
END_TEST

START_TEST(test_kill_2x2)
{
    run_trials("after SIGKILL, 2 x 2 nodes", F_KILL, 4, 2, 1, -1, trials(2));
}
END_TEST

START_TEST(test_kill_rank0)
{
    /* the coordinator is the lowest live rank */
    run_trials("after SIGKILL of rank 0, 3 ranks", F_KILL, 3, 1, 0, -1, 1);
}
END_TEST

START_TEST(test_stop)
{
    run_trials("after SIGSTOP, 4 ranks on 1 node", F_STOP, 4, 1, 3, -1, 1);
    run_trials("after SIGSTOP of rank 0, 2 x 2 nodes", F_STOP, 4, 2, 0, -1, 1);
    /* a hung node below every survivor: its 3 ranks cost one probe window together (2 s
     * to see the stop, T/4 = 1.5 s, and a margin; one window each would be 6.5 s) */
    run_trials_stop("after SIGSTOP of node 0 (ranks 0-2), 2 x 3 nodes", F_STOP, 6, 2, 0, -1,
                    0x7, 1, 5.0);
}
END_TEST

START_TEST(test_abort)
{
    run_trials("after an abort, 3 ranks", F_ABORT, 3, 1, 1, -1, 1);
}
END_TEST

START_TEST(test_second_failure)
{
    run_trials("with a second kill during it, 5 ranks on 2 nodes", F_KILL, 5, 2, 4, 1,
               trials(2));
}
END_TEST

/* ---- a child shrunk while its parent and its sibling live on --------------------------
 * 6 ranks split by parity; rank 5 dies: the odd child's survivors shrink it, the even
 * child goes on unharmed, and the parent (failed) is destroyed last. */
static void body_child(int rank, int nranks, void *arg)
{
    symcoll_comm_h world, child, nc;
    trial_t t;
    pthread_t th;
    int attempts, nn = 0;

    (void)arg;
    (void)nranks;
    shrink_env("20");
    if (rank == 5 && !harness_fork_victim())
        return;
    world = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_split(world, rank % 2, rank, NULL, &child), SYMCOLL_OK);
    ck_assert_int_eq(ar_checked(child, 1, 0), SYMCOLL_OK);
    if (rank == 5) {
        memset(&t, 0, sizeof(t));
        t.delay_s = 0.05;
        t.after_call = 1;
        t.calls_before = atomic_load(&ar_succeeded);
        ck_assert_int_eq(pthread_create(&th, NULL, kill_later, &t), 0);
    }
    if (rank % 2 == 0) {
        for (int i = 0; i < 50; i++)
            ck_assert_int_eq(ar_checked(child, 10 + (uint64_t)i, i & 1), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
        return;
    }
    ck_assert_int_ne(until_failure(child), SYMCOLL_OK);
    nc = shrink_ok(child, 10.0, &attempts);
    ck_assert_int_eq(symcoll_comm_size(nc, &nn), SYMCOLL_OK);
    ck_assert_int_eq(nn, 2);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(ar_checked(nc, 100 + (uint64_t)i, i & 1), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(child), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(nc), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_child)
{
    ck_assert_int_eq(harness_run(6, 2, RUN_TIMEOUT, body_child, NULL), 0);
}
END_TEST

/* ---- arguments, and a shrink with nobody gone ---------------------------------------- */
static void body_args(int rank, int nranks, void *arg)
{
    symcoll_comm_params_t p;
    symcoll_comm_h world, nc = (symcoll_comm_h)(uintptr_t)1;
    int attempts, r = -1;

    (void)arg;
    shrink_env("20");
    world = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_shrink(NULL, NULL, &nc), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_shrink(world, NULL, NULL), SYMCOLL_ERR_INVALID_PARAM);
    memset(&p, 0, sizeof(p));
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_NRANKS;
    ck_assert_int_eq(symcoll_comm_shrink(world, &p, &nc), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_ptr_null(nc); /* set, not left as it was */
    /* nothing done: the communicator still works */
    ck_assert_int_eq(ar_checked(world, 6, 0), SYMCOLL_OK);
    nc = shrink_ok(world, 10.0, &attempts);
    ck_assert_int_eq(symcoll_comm_rank(nc, &r), SYMCOLL_OK);
    ck_assert_int_eq(r, rank);
    (void)nranks;
    ck_assert_int_eq(ar_checked(nc, 7, 1), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(nc), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(world), SYMCOLL_OK);
}

START_TEST(test_args)
{
    ck_assert_int_eq(harness_run(3, 1, RUN_TIMEOUT, body_args, NULL), 0);
}
END_TEST

static Suite *shrink_suite(void)
{
    Suite *s = suite_create("shrink");
    TCase *tc = tcase_create("shrink");

    tcase_set_timeout(tc, RUN_TIMEOUT * 4);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_kill_1node);
    tcase_add_test(tc, test_kill_2x2);
    tcase_add_test(tc, test_kill_rank0);
    tcase_add_test(tc, test_stop);
    tcase_add_test(tc, test_abort);
    tcase_add_test(tc, test_second_failure);
    tcase_add_test(tc, test_child);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(shrink_suite());
}
