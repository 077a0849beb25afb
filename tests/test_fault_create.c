/* A rank killed while every rank is inside symcoll_comm_create: real processes, the
 * built-in TCP bootstrap, UCX over TCP, one node and simulated nodes.
 *
 * The last rank is the victim. It forks: the child is the rank and starts a thread that
 * SIGKILLs it delay_us after the child entered symcoll_comm_create; the fork's parent
 * reaps it. The delays of the trials step through a creation's length, so the kill
 * lands in the rendezvous, the mesh, the node channel, the topology and pool votes or
 * the UCX set-up, or just after. Every survivor must come out of its creation without
 * a hang: with PEER_FAILED soon after the kill (the victim's connections close),
 * TIMED_OUT at the deadline only when the victim died before it joined at rank 0 (rank
 * 0 then tells the ranks that joined), or OK when the victim had finished its part, and
 * then its first all-reduce must fail with PEER_FAILED. Destroy (or nothing, after a failed create) leaves no descriptor. */
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
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "symcoll.h"

#define MAX_RANKS 8
#define RUN_TIMEOUT 60.0
/* the deadline of every rank's creation; a survivor that saw the victim's sockets close
 * must answer well before it */
#define TIMEOUT_SEC 6.0
#define SEEN_SEC 2.0

typedef struct create_shared {
    unsigned delay_us;
    _Atomic int64_t kill_ns;             /* just before its kill */
    _Atomic int64_t done_ns[MAX_RANKS];  /* when a survivor had its answer */
    _Atomic int status[MAX_RANKS];       /* that answer: the create's, or the call's */
    _Atomic int created[MAX_RANKS];      /* the create itself succeeded */
    _Atomic int fds_left[MAX_RANKS];     /* descriptors above the count before create */
} create_shared_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *self_kill(void *arg)
{
    create_shared_t *d = arg;
    usleep(d->delay_us);
    atomic_store(&d->kill_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

static void body_create_kill(int rank, int n, void *arg)
{
    create_shared_t *d = arg;
    symcoll_comm_h comm = NULL;
    symcoll_status_t st;
    double buf[8] = {0};
    int fds0;

    if (rank == n - 1) {
        pthread_t th;

        if (!harness_fork_victim())
            return;
        pthread_create(&th, NULL, self_kill, d);
        st = symcoll_comm_create(NULL, &comm);
        /* the kill comes; the victim's own answer does not matter */
        for (;;)
            pause();
    }
    fds0 = harness_count_fds();
    st = symcoll_comm_create(NULL, &comm);
    atomic_store(&d->created[rank], st == SYMCOLL_OK);
    if (st == SYMCOLL_OK) {
        st = symcoll_allreduce(buf, buf, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st == SYMCOLL_OK)
            harness_fail("an all-reduce with a dead rank succeeded");
    }
    atomic_store(&d->done_ns[rank], mono_ns());
    atomic_store(&d->status[rank], (int)st);
    if (comm && symcoll_comm_destroy(comm) != SYMCOLL_OK)
        harness_fail("destroy after the failure failed");
    atomic_store(&d->fds_left[rank], harness_count_fds() - fds0);
}

/* Trials with the kill at 1 ms, then every step_ms, after the victim entered its create. */
static void create_kill_trials(const char *what, int nranks, int nnodes, unsigned step_ms,
                               int trials)
{
    create_shared_t *d =
        mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int seen[-SYMCOLL_ERR_LAST] = {0}, created = 0, inside = 0;
    char tmo[16];

    ck_assert(d != MAP_FAILED);
    snprintf(tmo, sizeof(tmo), "%g", TIMEOUT_SEC);
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    setenv("SYMCOLL_TIMEOUT", tmo, 1);
    for (int t = 0; t < trials; t++) {
        memset(d, 0, sizeof(*d));
        d->delay_us = 1000 + step_ms * 1000 * (unsigned)t;
        ck_assert_int_eq(harness_run(nranks, nnodes, RUN_TIMEOUT, body_create_kill, d), 0);
        for (int r = 0; r < nranks - 1; r++) {
            symcoll_status_t st = (symcoll_status_t)atomic_load(&d->status[r]);
            double dt = (double)(atomic_load(&d->done_ns[r]) - atomic_load(&d->kill_ns)) / 1e9;
            int made = atomic_load(&d->created[r]);

            fprintf(stderr, "%s, kill at %.1f ms: rank %d %s %s %.3f s after the kill\n", what,
                    d->delay_us / 1e3, r, made ? "created, then its all-reduce got" : "create got",
                    symcoll_status_string(st), dt);
            ck_assert_msg(made ? st == SYMCOLL_ERR_PEER_FAILED
                               : st == SYMCOLL_ERR_PEER_FAILED || st == SYMCOLL_ERR_TIMED_OUT,
                          "%s: rank %d got %s", what, r, symcoll_status_string(st));
            /* a closed socket is seen at once; only a victim that never reached the
             * rendezvous leaves the others to their deadline */
            ck_assert_msg(st == SYMCOLL_ERR_TIMED_OUT ? dt < TIMEOUT_SEC + SEEN_SEC
                                                      : dt < SEEN_SEC,
                          "%s: rank %d answered %.3f s after the kill", what, r, dt);
            ck_assert_msg(atomic_load(&d->fds_left[r]) == 0, "%s: rank %d left %d descriptors",
                          what, r, atomic_load(&d->fds_left[r]));
            seen[-st]++;
            created += made;
            inside += !made && st != SYMCOLL_ERR_TIMED_OUT;
        }
    }
    fprintf(stderr,
            "%s: %d answers: %d PEER_FAILED, %d TIMED_OUT; %d creates failed promptly, %d "
            "succeeded\n",
            what, trials * (nranks - 1), seen[-SYMCOLL_ERR_PEER_FAILED],
            seen[-SYMCOLL_ERR_TIMED_OUT], inside, created);
    /* the steps are shorter than a creation: some kills land inside one */
    ck_assert_msg(inside > 0, "%s: no kill landed inside a creation", what);
    munmap(d, sizeof(*d));
}

START_TEST(test_create_kill_3)
{
    create_kill_trials("kill in create, 3 ranks", 3, 1, 4, 8);
}
END_TEST

START_TEST(test_create_kill_2x2)
{
    create_kill_trials("kill in create, 2 x 2 ranks", 4, 2, 4, 12);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fault_create");
    TCase *tc = tcase_create("kill_in_create");

    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_create_kill_3);
    tcase_add_test(tc, test_create_kill_2x2);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
