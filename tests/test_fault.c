/* The fault suite: real processes, real UCX over TCP, one node and simulated nodes. A rank
 * killed (reaped or left a zombie) or stopped in the middle of a call, an abort from
 * another thread, between calls and during a pool allocation: every other rank gets the
 * status that says what happened, in bounded time, and destroy returns within a second.
 * Nothing of the library's is left behind after a kill, descriptors and memory stay flat
 * over many create/destroy cycles, and trim unmaps the pool across nodes too. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAULT_ASAN 1
#else
#define FAULT_ASAN 0
#endif

#include "harness.h"
#include "symcoll.h"

/* what the issue asks for: a dead local peer seen, and destroy after a failure done */
#define SEEN_SEC 1.0
#define DESTROY_SEC 1.0
#define MAX_RANKS 8
#define RUN_TIMEOUT 60.0

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every rank: UCX over TCP loopback (simulated nodes) and the given deadline. */
static void fault_env(const char *timeout)
{
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", timeout, 1);
}

/* Trials of the death tests; FAULT_TRIALS overrides (docs/performance.md's fault figures use 10). */
static int fault_trials(int dflt)
{
    const char *v = getenv("FAULT_TRIALS");
    int n = v ? atoi(v) : 0;
    return n > 0 ? n : dflt;
}

/* ---- a fault in the middle of a loop of calls -----------------------------------------
 * The last rank is the victim. For a kill or a stop it forks: the child is the rank, the
 * fork's parent injects the fault and reaps the child (at once, or, for a zombie, once
 * every survivor has its answer, as a launcher that reaps late would). For an abort a
 * thread of the last rank calls symcoll_comm_abort while its main thread is in calls.
 * Every other rank records when its call failed, with what, and how long destroy took;
 * the test's process checks it after the run. */

typedef enum { FAULT_KILL, FAULT_STOP, FAULT_ABORT } fault_kind_t;

typedef struct fault_shared {
    fault_kind_t kind;
    int zombie;    /* kill: reap only after the survivors */
    size_t count;  /* doubles per call */
    int allgather; /* the calls are in-place all-gathers of count doubles, not all-reduces */
    unsigned delay_us; /* from the victim's first call to the fault */
    _Atomic int victim_pid;
    _Atomic int victim_ready;              /* the victim made its first call */
    _Atomic int64_t fault_ns;              /* CLOCK_MONOTONIC just before the fault */
    _Atomic int64_t fail_ns[MAX_RANKS];    /* when each rank's call failed */
    _Atomic int64_t destroy_ns[MAX_RANKS]; /* how long its destroy took */
    _Atomic int status[MAX_RANKS];         /* and with what its call failed */
    _Atomic int destroy_status[MAX_RANKS];
    _Atomic int done;        /* ranks that destroyed their comm */
    _Atomic int zombie_seen; /* the parent found the victim dead but not yet reaped */
} fault_shared_t;

static fault_shared_t *fault_map(void)
{
    fault_shared_t *d =
        mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(d != MAP_FAILED);
    memset(d, 0, sizeof(*d));
    return d;
}

static void *fault_self_kill(void *arg)
{
    fault_shared_t *d = arg;
    usleep(d->delay_us);
    atomic_store(&d->fault_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

typedef struct abort_arg {
    fault_shared_t *d;
    symcoll_comm_h comm;
} abort_arg_t;

static void *fault_abort(void *arg)
{
    abort_arg_t *a = arg;
    usleep(a->d->delay_us);
    atomic_store(&a->d->fault_ns, mono_ns());
    if (symcoll_comm_abort(a->comm) != SYMCOLL_OK)
        harness_fail("symcoll_comm_abort failed");
    return NULL;
}

/* The victim's parent: injects a stop, and reaps the victim. */
static void fault_parent(fault_shared_t *d, pid_t pid, int n)
{
    int64_t end = mono_ns() + (int64_t)(RUN_TIMEOUT * 1e9);
    siginfo_t si;
    int ws;

    if (d->kind == FAULT_STOP) {
        while (!atomic_load(&d->victim_ready) && mono_ns() < end)
            usleep(1000);
        usleep(d->delay_us);
        atomic_store(&d->fault_ns, mono_ns());
        kill(pid, SIGSTOP);
    }
    if (d->zombie || d->kind == FAULT_STOP) {
        while (atomic_load(&d->done) < n - 1 && mono_ns() < end)
            usleep(1000);
        /* dead, and still there to be reaped (nobody reaps it before the waitpid below).
         * A SIGKILLed process can take a moment to become a zombie after its peers saw it
         * gone (under the sanitizers its exit unmaps a large shadow): look for 5 s. */
        for (int64_t until = mono_ns() + 5000000000LL;
             d->zombie && !atomic_load(&d->zombie_seen) && mono_ns() < until; usleep(1000)) {
            memset(&si, 0, sizeof(si));
            if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid)
                atomic_store(&d->zombie_seen, 1);
        }
    }
    if (d->kind == FAULT_STOP)
        kill(pid, SIGKILL);
    if (waitpid(pid, &ws, 0) != pid)
        harness_fail("waitpid: %s", strerror(errno));
    if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
        harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
}

static void fault_record(fault_shared_t *d, int rank, symcoll_comm_h comm, symcoll_status_t st)
{
    int64_t t0;
    symcoll_status_t ds;

    atomic_store(&d->fail_ns[rank], mono_ns());
    atomic_store(&d->status[rank], (int)st);
    t0 = mono_ns();
    ds = symcoll_comm_destroy(comm);
    atomic_store(&d->destroy_ns[rank], mono_ns() - t0);
    atomic_store(&d->destroy_status[rank], (int)ds);
    atomic_fetch_add(&d->done, 1);
}

/* One call of the loop: an all-reduce, or an all-gather (native across nodes). */
static symcoll_status_t fault_call(const fault_shared_t *d, double *buf, int rank, int n,
                                   symcoll_comm_h comm)
{
    size_t block = d->count / (size_t)n;

    if (d->allgather)
        return symcoll_allgather(buf + (size_t)rank * block, buf, block, SYMCOLL_FLOAT64, comm,
                                 NULL);
    return symcoll_allreduce(buf, buf, d->count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
}

static void body_fault(int rank, int n, void *arg)
{
    fault_shared_t *d = arg;
    symcoll_comm_h comm;
    symcoll_status_t st = SYMCOLL_OK;
    bool victim = rank == n - 1;
    double *buf;
    long calls = 0;

    if (victim && d->kind != FAULT_ABORT) {
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            fault_parent(d, pid, n);
            return;
        }
    }
    comm = harness_comm_create();
    buf = calloc(d->count, sizeof(double));
    if (!buf)
        harness_fail("out of memory");
    st = fault_call(d, buf, rank, n, comm);
    /* a rank leaves a ring all-gather once it has every block, maybe long before the
     * others: the barrier keeps the fault out of the others' all-gather */
    if (st == SYMCOLL_OK && d->allgather)
        st = symcoll_barrier(comm, NULL);
    /* The victim's first call (the barrier) may end before another rank's: the fault
     * then ends that rank's, which is checked as any other call the fault ended. Before
     * the victim's call is done nothing may fail. */
    if (st != SYMCOLL_OK && (victim || !atomic_load(&d->victim_ready)))
        harness_fail("the first call: %s", symcoll_status_string(st));
    if (victim) {
        pthread_t th;
        abort_arg_t a = {d, comm};
        atomic_store(&d->victim_ready, 1);
        if (d->kind == FAULT_KILL)
            pthread_create(&th, NULL, fault_self_kill, d);
        else if (d->kind == FAULT_ABORT)
            pthread_create(&th, NULL, fault_abort, &a);
        while (st == SYMCOLL_OK)
            st = fault_call(d, buf, rank, n, comm);
        /* only an abort gets here */
        pthread_join(th, NULL);
    }
    while (st == SYMCOLL_OK && calls++ < 10000000)
        st = fault_call(d, buf, rank, n, comm);
    /* the communicator is broken for good, and says so at once */
    if (symcoll_allreduce(buf, buf, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL) != st)
        harness_fail("a later call did not repeat %s", symcoll_status_string(st));
    fault_record(d, rank, comm, st);
    free(buf);
}

/* Runs trials of a fault on nranks over nnodes; every survivor must fail with want
 * within [lo, hi] seconds of the fault and destroy within DESTROY_SEC. */
static void fault_trials_run_coll(const char *what, fault_kind_t kind, int zombie, size_t count,
                                  int allgather, int nranks, int nnodes, const char *timeout,
                                  symcoll_status_t want, double lo, double hi, int trials)
{
    fault_shared_t *d = fault_map();
    double worst = 0, worst_destroy = 0;
    /* the victim's rank has an answer too when it aborted */
    int answered = kind == FAULT_ABORT ? nranks : nranks - 1;

    fault_env(timeout);
    for (int trial = 0; trial < trials; trial++) {
        memset(d, 0, sizeof(*d));
        d->kind = kind;
        d->zombie = zombie;
        d->count = count;
        d->allgather = allgather;
        d->delay_us = 5000 + 9000 * (unsigned)trial;
        ck_assert_int_eq(harness_run(nranks, nnodes, RUN_TIMEOUT, body_fault, d), 0);
        ck_assert_msg(!zombie || atomic_load(&d->zombie_seen),
                      "the victim was reaped before the survivors were done");
        for (int r = 0; r < answered; r++) {
            double dt = (double)(atomic_load(&d->fail_ns[r]) - atomic_load(&d->fault_ns)) / 1e9;
            double ds = (double)atomic_load(&d->destroy_ns[r]) / 1e9;
            symcoll_status_t st = (symcoll_status_t)atomic_load(&d->status[r]);

            fprintf(stderr,
                    "%s, trial %d: rank %d got %s %.3f s after the fault; destroy "
                    "%.3f s\n",
                    what, trial, r, symcoll_status_string(st), dt, ds);
            ck_assert_msg(st == want, "%s trial %d: rank %d got %s, not %s", what, trial, r,
                          symcoll_status_string(st), symcoll_status_string(want));
            ck_assert_msg(dt >= lo && dt < hi,
                          "%s trial %d: rank %d failed %.3f s after the "
                          "fault, not in [%.1f, %.1f)",
                          what, trial, r, dt, lo, hi);
            ck_assert_msg(atomic_load(&d->destroy_status[r]) == SYMCOLL_OK,
                          "%s trial %d: rank %d: destroy failed", what, trial, r);
            ck_assert_msg(ds < DESTROY_SEC, "%s trial %d: rank %d: destroy took %.3f s", what,
                          trial, r, ds);
            if (dt > worst)
                worst = dt;
            if (ds > worst_destroy)
                worst_destroy = ds;
        }
    }
    fprintf(stderr, "%s: max %.3f s to fail, max %.3f s to destroy, %d trials of %d ranks\n",
            what, worst, worst_destroy, trials, answered);
    munmap(d, sizeof(*d));
}

static void fault_trials_run(const char *what, fault_kind_t kind, int zombie, size_t count,
                             int nranks, int nnodes, const char *timeout, symcoll_status_t want,
                             double lo, double hi, int trials)
{
    fault_trials_run_coll(what, kind, zombie, count, 0, nranks, nnodes, timeout, want, lo, hi,
                          trials);
}

#define SMALL_COUNT ((size_t)8)
#define DEATH_COUNT ((size_t)1 << 15)
#define LARGE_COUNT ((size_t)1 << 19)

/* a kill is seen in well under a second; a deadline of 10 s would show if it is not */
START_TEST(test_kill_zombie_3)
{
    fault_trials_run("kill (zombie), 3 ranks", FAULT_KILL, 1, DEATH_COUNT, 3, 1, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, fault_trials(5));
}
END_TEST

START_TEST(test_kill_reaped_3)
{
    fault_trials_run("kill (reaped), 3 ranks", FAULT_KILL, 0, DEATH_COUNT, 3, 1, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, fault_trials(5));
}
END_TEST

START_TEST(test_kill_small_3)
{
    fault_trials_run("kill, small calls, 3 ranks", FAULT_KILL, 1, SMALL_COUNT, 3, 1, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 2);
}
END_TEST

START_TEST(test_kill_large_3)
{
    fault_trials_run("kill, large calls, 3 ranks", FAULT_KILL, 0, LARGE_COUNT, 3, 1, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 2);
}
END_TEST

START_TEST(test_kill_small_2x2)
{
    fault_trials_run("kill, small calls, 2 nodes x 2", FAULT_KILL, 1, SMALL_COUNT, 4, 2, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 2);
}
END_TEST

START_TEST(test_kill_large_2x2)
{
    fault_trials_run("kill, large calls, 2 nodes x 2", FAULT_KILL, 0, LARGE_COUNT, 4, 2, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 2);
}
END_TEST

/* a stopped rank is a timeout: every other rank times out, none reports an abort */
START_TEST(test_stop_small_3)
{
    fault_trials_run("stop, small calls, 3 ranks", FAULT_STOP, 0, SMALL_COUNT, 3, 1, "1.5",
                     SYMCOLL_ERR_TIMED_OUT, 1.0, 8.0, 1);
}
END_TEST

START_TEST(test_stop_large_3)
{
    fault_trials_run("stop, large calls, 3 ranks", FAULT_STOP, 0, LARGE_COUNT, 3, 1, "1.5",
                     SYMCOLL_ERR_TIMED_OUT, 1.0, 8.0, 1);
}
END_TEST

START_TEST(test_stop_small_2x2)
{
    fault_trials_run("stop, small calls, 2 nodes x 2", FAULT_STOP, 0, SMALL_COUNT, 4, 2, "1.5",
                     SYMCOLL_ERR_TIMED_OUT, 1.0, 8.0, 1);
}
END_TEST

START_TEST(test_stop_large_2x2)
{
    fault_trials_run("stop, large calls, 2 nodes x 2", FAULT_STOP, 0, LARGE_COUNT, 4, 2, "1.5",
                     SYMCOLL_ERR_TIMED_OUT, 1.0, 8.0, 1);
}
END_TEST

/* an abort from another thread: every rank's call ends with ABORTED, promptly */
START_TEST(test_abort_thread_3)
{
    fault_trials_run("abort from a thread, 3 ranks", FAULT_ABORT, 0, LARGE_COUNT, 3, 1, "30",
                     SYMCOLL_ERR_ABORTED, 0, 5.0, 2);
}
END_TEST

START_TEST(test_abort_thread_2x2)
{
    fault_trials_run("abort from a thread, 2 nodes x 2", FAULT_ABORT, 0, LARGE_COUNT, 4, 2,
                     "30", SYMCOLL_ERR_ABORTED, 0, 5.0, 2);
}
END_TEST

/* the native ring all-gather across nodes: a peer's death and an abort end it too */
START_TEST(test_kill_allgather_2x2)
{
    fault_trials_run_coll("kill, large all-gathers, 2 nodes x 2", FAULT_KILL, 0, LARGE_COUNT, 1,
                          4, 2, "10", SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 2);
}
END_TEST

START_TEST(test_abort_allgather_3)
{
    fault_trials_run_coll("abort from a thread, large all-gathers, 2 nodes, 3 ranks",
                          FAULT_ABORT, 0, LARGE_COUNT, 1, 3, 2, "30", SYMCOLL_ERR_ABORTED, 0,
                          5.0, 2);
}
END_TEST

/* ---- an abort, then another call on the aborting rank ----------------------------------
 * Rank 0 aborts, either between calls or from another thread while its call waits for
 * the others (who come late), and then makes one more call. Every peer's matching call
 * must fail with ABORTED: none may complete as if rank 0 had taken part, whatever rank
 * 0's later call does. */
static void *abort_later(void *arg)
{
    usleep(200000);
    if (symcoll_comm_abort((symcoll_comm_h)arg) != SYMCOLL_OK)
        harness_fail("symcoll_comm_abort failed");
    return NULL;
}

static void body_abort_then_call(int rank, int n, void *arg)
{
    const int in_call = *(const int *)arg;
    double buf[64] = {0};
    symcoll_comm_h comm;
    symcoll_status_t st;
    pthread_t th;
    (void)n;

    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_allreduce(buf, buf, 64, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    if (rank == 0) {
        if (in_call) {
            pthread_create(&th, NULL, abort_later, comm);
        } else {
            /* the peers' first calls are over (an abort ends those still running too) */
            usleep(300000);
            ck_assert_int_eq(symcoll_comm_abort(comm), SYMCOLL_OK);
        }
        st = symcoll_allreduce(buf, buf, 64, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the aborting rank's call returned %s", symcoll_status_string(st));
        if (in_call)
            pthread_join(th, NULL);
        /* the next call, before the peers made their matching one */
        st = symcoll_allreduce(buf, buf, 64, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the aborting rank's next call returned %s",
                         symcoll_status_string(st));
    } else {
        /* late: rank 0 waits for us in its call when the abort comes */
        usleep(in_call ? 1000000 : 600000);
        st = symcoll_allreduce(buf, buf, 64, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the call matching the aborted one returned %s",
                         symcoll_status_string(st));
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

#define ABORT_CALL_TEST(name, nr, nn, in_call)                                                 \
    START_TEST(name)                                                                           \
    {                                                                                          \
        int mode = in_call;                                                                    \
        fault_env("20");                                                                       \
        ck_assert_int_eq(harness_run(nr, nn, RUN_TIMEOUT, body_abort_then_call, &mode), 0);    \
    }                                                                                          \
    END_TEST

ABORT_CALL_TEST(test_abort_between_2, 2, 1, 0)
ABORT_CALL_TEST(test_abort_between_2x2, 4, 2, 0)
ABORT_CALL_TEST(test_abort_in_call_2, 2, 1, 1)
ABORT_CALL_TEST(test_abort_in_call_3, 3, 1, 1)
ABORT_CALL_TEST(test_abort_in_call_2x2, 4, 2, 1)

/* ---- an abort during a pool allocation -------------------------------------------------
 * The last rank aborts from another thread while every rank is in (or about to enter) a
 * loop of symcoll_mem_alloc / free: the peers must not wait for it until their deadline
 * (30 s here), nor for its destroy. */
static void *abort_soon(void *arg)
{
    usleep(20000);
    if (symcoll_comm_abort((symcoll_comm_h)arg) != SYMCOLL_OK)
        harness_fail("symcoll_comm_abort failed");
    return NULL;
}

static void body_abort_alloc(int rank, int n, void *arg)
{
    symcoll_comm_h comm;
    symcoll_status_t st = SYMCOLL_OK;
    pthread_t th;
    int64_t t0;
    void *p;
    (void)arg;

    comm = harness_comm_create();
    if (rank == n - 1)
        pthread_create(&th, NULL, abort_soon, comm);
    t0 = mono_ns();
    for (int i = 0; i < 100000 && st == SYMCOLL_OK; i++) {
        t0 = mono_ns();
        st = symcoll_mem_alloc(comm, (size_t)(1 + i % 7) << 20, SYMCOLL_MEM_HOST, &p);
        if (st == SYMCOLL_OK)
            st = symcoll_mem_free(comm, p);
    }
    /* the out-of-band channel carries no reason: its peers see the connection end */
    if (st != SYMCOLL_ERR_ABORTED && (rank == n - 1 || st != SYMCOLL_ERR_PEER_FAILED))
        harness_fail("the allocation ended with %s", symcoll_status_string(st));
    if ((double)(mono_ns() - t0) / 1e9 > 3.0)
        harness_fail("the failing allocation took %.1f s", (double)(mono_ns() - t0) / 1e9);
    if (rank == n - 1) {
        pthread_join(th, NULL);
        /* the peers' calls end without our destroy */
        usleep(4000000);
    }
    t0 = mono_ns();
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    if ((double)(mono_ns() - t0) / 1e9 > DESTROY_SEC)
        harness_fail("destroy took %.3f s", (double)(mono_ns() - t0) / 1e9);
}

START_TEST(test_abort_alloc_2x2)
{
    fault_env("30");
    ck_assert_int_eq(harness_run(4, 2, RUN_TIMEOUT, body_abort_alloc, NULL), 0);
}
END_TEST

START_TEST(test_abort_alloc_3)
{
    fault_env("30");
    ck_assert_int_eq(harness_run(3, 1, RUN_TIMEOUT, body_abort_alloc, NULL), 0);
}
END_TEST

/* ---- nothing left behind after a kill --------------------------------------------------
 * The library names nothing in the file system (pool segments are memfds, the node's
 * sockets are abstract), and neither must UCX over TCP: after a rank is killed in a call
 * and the others destroyed their communicators, no entry of /dev/shm or /tmp that names
 * symcoll or UCX appeared. */
static int hygiene_list(const char *dir, char names[][512], int max)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!dd)
        return 0;
    while ((e = readdir(dd)) && n < max) {
        const char *dot = strrchr(e->d_name, '.');
        if (!strcasestr(e->d_name, "symcoll") && !strcasestr(e->d_name, "ucx"))
            continue;
        /* the shell tests' own directories (tests/testlib.sh: mktemp symcoll-NAME.XXXXXX),
         * which other test programs running at the same time create */
        if (!strncmp(e->d_name, "symcoll-", 8) && dot && strlen(dot) == 7)
            continue;
        snprintf(names[n++], 512, "%s/%s", dir, e->d_name);
    }
    closedir(dd);
    return n;
}

static int hygiene_snapshot(char names[][512], int max)
{
    int n = hygiene_list("/dev/shm", names, max);
    return n + hygiene_list("/tmp", names + n, max - n);
}

START_TEST(test_hygiene_kill_2x2)
{
    static char before[256][512], after[256][512];
    int nb = hygiene_snapshot(before, 256), na;

    fault_trials_run("kill for hygiene, 2 nodes x 2", FAULT_KILL, 0, LARGE_COUNT, 4, 2, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 1);
    fault_trials_run("kill for hygiene, 3 ranks", FAULT_KILL, 0, LARGE_COUNT, 3, 1, "10",
                     SYMCOLL_ERR_PEER_FAILED, 0, SEEN_SEC, 1);
    na = hygiene_snapshot(after, 256);
    for (int i = 0; i < na; i++) {
        bool old = false;
        for (int j = 0; j < nb && !old; j++)
            old = !strcmp(after[i], before[j]);
        ck_assert_msg(old, "left behind after the kill: %s", after[i]);
    }
}
END_TEST

/* ---- descriptors and memory over many cycles --------------------------------------------
 * Each cycle creates a communicator, makes an all-reduce on a pool buffer and a plain one,
 * and destroys it. After a warm-up (the allocator's and UCX's caches fill: a few MiB in
 * the first ten cycles), the number of open descriptors must not change and the resident
 * memory not grow by more than a slack in all (the heap grows in steps of ~2 MiB now and
 * then across nodes; a leak of a pool segment or a UCX worker a cycle is far above it). */

typedef struct cycles_arg {
    int cycles, warm;
    _Atomic long rss_kib[MAX_RANKS][2];
    _Atomic int fds[MAX_RANKS][2];
} cycles_arg_t;

static void body_cycles(int rank, int n, void *arg)
{
    cycles_arg_t *a = arg;
    double plain[256];
    (void)n;

    for (int i = 0; i < a->cycles; i++) {
        symcoll_comm_h comm = harness_comm_create();
        double *p;
        memset(plain, 0, sizeof(plain));
        ck_assert_int_eq(symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_HOST, (void **)&p),
                         SYMCOLL_OK);
        ck_assert_int_eq(
            symcoll_allreduce(p, p, (1 << 20) / 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
            SYMCOLL_OK);
        ck_assert_int_eq(
            symcoll_allreduce(plain, plain, 256, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
            SYMCOLL_OK);
        ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
        if (i == a->warm - 1 || i == a->cycles - 1) {
            int k = i == a->cycles - 1;
            atomic_store(&a->rss_kib[rank][k], harness_rss_kib());
            atomic_store(&a->fds[rank][k], harness_count_fds());
        }
    }
}

static void cycles_run(int nranks, int nnodes, int cycles, int warm, long slack_kib)
{
    cycles_arg_t *a =
        mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert(a != MAP_FAILED);
    memset(a, 0, sizeof(*a));
    a->cycles = cycles;
    a->warm = warm;
    fault_env("30");
    ck_assert_int_eq(harness_run(nranks, nnodes, 240, body_cycles, a), 0);
    for (int r = 0; r < nranks; r++) {
        long grow = atomic_load(&a->rss_kib[r][1]) - atomic_load(&a->rss_kib[r][0]);
        fprintf(stderr,
                "cycles, %d ranks on %d node(s): rank %d: after %d cycles %ld KiB, %d fds; "
                "after %d: %ld KiB "
                "(%+.1f KiB per cycle), %d fds\n",
                nranks, nnodes, r, warm, atomic_load(&a->rss_kib[r][0]),
                atomic_load(&a->fds[r][0]), cycles, atomic_load(&a->rss_kib[r][1]),
                (double)grow / (cycles - warm), atomic_load(&a->fds[r][1]));
        ck_assert_msg(atomic_load(&a->fds[r][1]) == atomic_load(&a->fds[r][0]),
                      "rank %d: %d fds after %d cycles, %d after %d", r,
                      atomic_load(&a->fds[r][0]), warm, atomic_load(&a->fds[r][1]), cycles);
        /* AddressSanitizer keeps freed memory in quarantine (up to 256 MiB): resident
         * memory then says nothing about leaks, which LeakSanitizer checks instead */
        if (FAULT_ASAN)
            continue;
        ck_assert_msg(grow <= slack_kib,
                      "rank %d: resident memory grew by %ld KiB over %d cycles", r, grow,
                      cycles - warm);
    }
    munmap(a, sizeof(*a));
}

START_TEST(test_cycles_2)
{
    cycles_run(2, 1, 200, 20, 2048);
}
END_TEST

START_TEST(test_cycles_2x1)
{
    cycles_run(2, 2, 60, 15, 4096);
}
END_TEST

/* ---- trim across nodes -----------------------------------------------------------------
 * Once every buffer is freed, trim unmaps the whole pool on a communicator across nodes
 * as on one node (the network layer's own area must not pin a segment). */
static void body_trim(int rank, int n, void *arg)
{
    symcoll_pool_attr_t a = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_MAPPED |
                                           SYMCOLL_POOL_ATTR_FIELD_SEGMENTS |
                                           SYMCOLL_POOL_ATTR_FIELD_IN_USE};
    const size_t count = (32u << 20) / 8;
    symcoll_comm_h comm;
    double *p, *q;
    (void)n;
    (void)rank;

    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(comm, count * 8, SYMCOLL_MEM_HOST, (void **)&p),
                     SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_HOST, (void **)&q),
                     SYMCOLL_OK);
    for (size_t i = 0; i < count; i++)
        p[i] = 1;
    ck_assert_int_eq(symcoll_allreduce(p, p, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    ck_assert(p[0] == n && p[count - 1] == n);
    ck_assert_int_eq(symcoll_allreduce(q, q, 1000, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &a), SYMCOLL_OK);
    if (a.mapped != 0 || a.segments != 0 || a.in_use != 0)
        harness_fail("after trim: %llu bytes mapped in %llu segments, %llu in use",
                     (unsigned long long)a.mapped, (unsigned long long)a.segments,
                     (unsigned long long)a.in_use);
    /* and the pool comes back */
    ck_assert_int_eq(symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_HOST, (void **)&q),
                     SYMCOLL_OK);
    for (size_t i = 0; i < 1000; i++)
        q[i] = rank;
    ck_assert_int_eq(symcoll_allreduce(q, q, 1000, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    ck_assert(q[999] == (double)n * (n - 1) / 2);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(test_trim_2x1)
{
    fault_env("30");
    ck_assert_int_eq(harness_run(2, 2, RUN_TIMEOUT, body_trim, NULL), 0);
}
END_TEST

START_TEST(test_trim_2x2)
{
    fault_env("30");
    ck_assert_int_eq(harness_run(4, 2, RUN_TIMEOUT, body_trim, NULL), 0);
}
END_TEST

#define ADD(s, t, tmo)                                                                         \
    do {                                                                                       \
        TCase *tc_ = tcase_create(#t);                                                         \
        tcase_set_timeout(tc_, tmo);                                                           \
        tcase_add_test(tc_, t);                                                                \
        suite_add_tcase(s, tc_);                                                               \
    } while (0)

int main(void)
{
    Suite *s = suite_create("fault");

    ADD(s, test_kill_zombie_3, 300);
    ADD(s, test_kill_reaped_3, 300);
    ADD(s, test_kill_small_3, 150);
    ADD(s, test_kill_large_3, 150);
    ADD(s, test_kill_small_2x2, 150);
    ADD(s, test_kill_large_2x2, 150);
    ADD(s, test_stop_small_3, 90);
    ADD(s, test_stop_large_3, 90);
    ADD(s, test_stop_small_2x2, 90);
    ADD(s, test_stop_large_2x2, 90);
    ADD(s, test_abort_thread_3, 150);
    ADD(s, test_abort_thread_2x2, 150);
    ADD(s, test_kill_allgather_2x2, 150);
    ADD(s, test_abort_allgather_3, 150);
    ADD(s, test_abort_between_2, 90);
    ADD(s, test_abort_between_2x2, 90);
    ADD(s, test_abort_in_call_2, 90);
    ADD(s, test_abort_in_call_3, 90);
    ADD(s, test_abort_in_call_2x2, 90);
    ADD(s, test_abort_alloc_3, 90);
    ADD(s, test_abort_alloc_2x2, 90);
    ADD(s, test_hygiene_kill_2x2, 150);
    ADD(s, test_cycles_2, 300);
    ADD(s, test_cycles_2x1, 300);
    ADD(s, test_trim_2x1, 90);
    ADD(s, test_trim_2x2, 90);
    return harness_main(s);
}
