/* test_cuda's failure cases on one node: ranks that call with different arguments, and
 * a rank killed while the others wait in a kernel (reaped or left a zombie). */
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

/* ---- ranks that call with different arguments --------------------------------------
 * One communicator per case (a mismatch breaks it): every size class is warmed up (and
 * checked) so that no staging grows, then the last rank calls with another count,
 * datatype or operator, or a size that takes another kernel. The call is queued; after
 * the stream passed it the next call returns SYMCOLL_ERR_MISMATCH on every rank, and so
 * do later ones; destroy returns at once. */

#define MM_LL 1024               /* float32: 4 KB, the LL kernel */
#define MM_ONE (64u << 10)       /* float32: 256 KB, one-shot */
#define MM_TWO ((size_t)4 << 20) /* float32: 16 MB, two-shot */

typedef struct mm_case {
    const char *name;
    size_t count[2]; /* agreeing ranks, the last rank */
    symcoll_dtype_t dtype[2];
    symcoll_op_t op[2];
} mm_case_t;

static const mm_case_t mm_cases[] = {
    {"LL count",
     {MM_LL, MM_LL - 2},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"one-shot datatype",
     {MM_ONE, MM_ONE},
     {SYMCOLL_FLOAT32, SYMCOLL_INT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"one-shot operator",
     {MM_ONE, MM_ONE},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_MAX}},
    {"one-shot count",
     {MM_ONE, MM_ONE + 4096},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot count",
     {MM_TWO, MM_TWO - 1000},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot datatype",
     {2 * MM_TWO, 2 * MM_TWO},
     {SYMCOLL_BFLOAT16, SYMCOLL_FLOAT16},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
    {"two-shot operator",
     {MM_TWO, MM_TWO},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_MIN, SYMCOLL_MAX}},
    {"LL against two-shot",
     {MM_LL, MM_TWO},
     {SYMCOLL_FLOAT32, SYMCOLL_FLOAT32},
     {SYMCOLL_SUM, SYMCOLL_SUM}},
};

static void body_mismatch(int rank, int nranks, void *arg)
{
    const int odd = rank == nranks - 1;
    void *a, *host;
    cudaStream_t s;
    int salt = 7000;

    (void)arg;
    setenv("SYMCOLL_TIMEOUT", MM_TIMEOUT, 1);
    gpu_set_device(rank);
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&a, MM_TWO * 4 + 64));
    host = malloc(MM_TWO * 4);
    for (size_t c = 0; c < sizeof(mm_cases) / sizeof(mm_cases[0]); c++) {
        const mm_case_t *m = &mm_cases[c];
        static const size_t warm[] = {MM_LL, MM_ONE, MM_TWO};
        symcoll_comm_h comm = harness_comm_create();
        symcoll_status_t st[3];
        double t;

        for (size_t k = 0; k < 3; k++) {
            salt++;
            gpu_fill(a, NULL, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, nranks, salt, host,
                     s);
            CK_SC(symcoll_allreduce(a, a, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
            gpu_verify(a, warm[k], SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s,
                       "warm-up before a mismatch");
        }
        t = mono_sec();
        /* the mismatched call, then two more, each after the stream passed the last */
        st[0] = symcoll_allreduce(a, a, m->count[odd], m->dtype[odd], m->op[odd], comm, s);
        CK_CUDA(cudaStreamSynchronize(s));
        for (int k = 1; k < 3; k++) {
            st[k] = symcoll_allreduce(a, a, MM_LL, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            CK_CUDA(cudaStreamSynchronize(s));
        }
        fprintf(stderr, "mismatch %s: rank %d got %s, %s, %s in %.3f s\n", m->name, rank,
                symcoll_status_string(st[0]), symcoll_status_string(st[1]),
                symcoll_status_string(st[2]), mono_sec() - t);
        if (st[0] != SYMCOLL_OK && st[0] != SYMCOLL_ERR_MISMATCH)
            harness_fail("mismatch %s: the call returned %s", m->name,
                         symcoll_status_string(st[0]));
        if (st[1] != SYMCOLL_ERR_MISMATCH || st[2] != SYMCOLL_ERR_MISMATCH)
            harness_fail("mismatch %s: the calls after it returned %s and %s, expected %s",
                         m->name, symcoll_status_string(st[1]), symcoll_status_string(st[2]),
                         symcoll_status_string(SYMCOLL_ERR_MISMATCH));
        t = mono_sec();
        CK_SC(symcoll_comm_destroy(comm));
        if (mono_sec() - t > 1.0)
            harness_fail("mismatch %s: destroy took %.3f s", m->name, mono_sec() - t);
    }
    free(host);
    cudaFree(a);
}

START_TEST(t_mismatch_3ranks)
{
    ck_assert_int_eq(harness_run(3, 1, 600, body_mismatch, NULL), 0);
}
END_TEST

/* ---- a rank killed while the others wait in a kernel ---------------------------------
 * The last rank forks: its child is the rank (the victim) and SIGKILLs itself a few ms
 * into a loop of one-shot calls; the fork's parent reaps it at once, or (zombie) only
 * once the survivors are done. The survivors loop (call, synchronise) until a call
 * fails: it must be SYMCOLL_ERR_PEER_FAILED within 1 s of the kill, and destroy must
 * return within 1 s. */

#define KILL_RANKS 3
#define KILL_TRIALS 2                 /* of each kind */
#define KILL_COUNT ((size_t)64 << 10) /* float32: one-shot */
#define KILL_TIMEOUT "30"             /* SYMCOLL_TIMEOUT: a death not seen costs this */
#define KILL_RUN_TIMEOUT 120.0
#define KILL_SEEN_SEC 1.0

typedef struct kill_shared {
    int zombie;
    unsigned delay_us;
    _Atomic int64_t kill_ns;
    _Atomic int64_t fail_ns[KILL_RANKS];
    _Atomic int64_t destroy_ns[KILL_RANKS]; /* how long destroy took */
    _Atomic int status[KILL_RANKS];
    _Atomic int done;
    _Atomic int zombie_seen;
} kill_shared_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *kill_self(void *arg)
{
    kill_shared_t *d = arg;
    usleep(d->delay_us);
    atomic_store(&d->kill_ns, mono_ns());
    raise(SIGKILL);
    return NULL;
}

static void kill_parent(kill_shared_t *d, pid_t pid, int n)
{
    int64_t end = mono_ns() + (int64_t)(KILL_RUN_TIMEOUT * 1e9);
    siginfo_t si;
    int ws;

    if (d->zombie) {
        while (atomic_load(&d->done) < n - 1 && mono_ns() < end)
            usleep(1000);
        /* the survivors are done and the victim is not reaped: it must exit (a process
         * that held a GPU context can take a while to go after SIGKILL, long after its
         * sockets closed), and stay there unreaped, until the deadline */
        while (!atomic_load(&d->zombie_seen) && mono_ns() < end) {
            memset(&si, 0, sizeof(si));
            if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid)
                atomic_store(&d->zombie_seen, 1);
            else
                usleep(1000);
        }
    }
    if (waitpid(pid, &ws, 0) != pid)
        harness_fail("waitpid: %s", strerror(errno));
    if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
        harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
}

static void body_kill(int rank, int n, void *arg)
{
    kill_shared_t *d = arg;
    symcoll_comm_h comm;
    symcoll_status_t st = SYMCOLL_OK;
    cudaStream_t s;
    void *buf;
    long calls = 0;
    int64_t t;

    if (rank == n - 1) {
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            kill_parent(d, pid, n);
            return;
        }
    }
    setenv("SYMCOLL_TIMEOUT", KILL_TIMEOUT, 1);
    gpu_set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&buf, KILL_COUNT * 4));
    CK_CUDA(cudaMemset(buf, 0, KILL_COUNT * 4));
    CK_SC(symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));
    if (rank == n - 1) {
        pthread_t th;
        /* the timer starts once a further call completed: it needed everyone's data, so
         * every survivor is past the checked call above */
        symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        cudaStreamSynchronize(s);
        pthread_create(&th, NULL, kill_self, d);
        for (;;) {
            symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
            cudaStreamSynchronize(s);
        }
    }
    while (st == SYMCOLL_OK && calls++ < 1000000) {
        st = symcoll_allreduce(buf, buf, KILL_COUNT, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s);
        if (st == SYMCOLL_OK)
            CK_CUDA(cudaStreamSynchronize(s));
    }
    atomic_store(&d->fail_ns[rank], mono_ns());
    atomic_store(&d->status[rank], (int)st);
    t = mono_ns();
    symcoll_comm_destroy(comm);
    atomic_store(&d->destroy_ns[rank], mono_ns() - t);
    atomic_fetch_add(&d->done, 1);
    cudaFree(buf);
}

static void kill_trials(int zombie)
{
    const char *what = zombie ? "zombie" : "reaped";
    kill_shared_t *d =
        mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double worst = 0, worst_destroy = 0;

    ck_assert(d != MAP_FAILED);
    for (int trial = 0; trial < KILL_TRIALS; trial++) {
        memset(d, 0, sizeof(*d));
        d->zombie = zombie;
        d->delay_us = 20000 + 30000 * (unsigned)trial;
        ck_assert_int_eq(harness_run(KILL_RANKS, 1, KILL_RUN_TIMEOUT, body_kill, d), 0);
        ck_assert_msg(!zombie || atomic_load(&d->zombie_seen),
                      "the victim had not exited when the survivors were done (within %.0f s)",
                      KILL_RUN_TIMEOUT);
        for (int r = 0; r < KILL_RANKS - 1; r++) {
            double dt = (double)(atomic_load(&d->fail_ns[r]) - atomic_load(&d->kill_ns)) / 1e9;
            double dd = (double)atomic_load(&d->destroy_ns[r]) / 1e9;
            symcoll_status_t st = (symcoll_status_t)atomic_load(&d->status[r]);

            fprintf(stderr,
                    "CUDA kill (%s), trial %d: rank %d got %s %.3f s after the kill, "
                    "destroy %.3f s\n",
                    what, trial, r, symcoll_status_string(st), dt, dd);
            ck_assert_msg(st == SYMCOLL_ERR_PEER_FAILED, "%s trial %d: rank %d got %s", what,
                          trial, r, symcoll_status_string(st));
            ck_assert_msg(dt >= 0 && dt < KILL_SEEN_SEC,
                          "%s trial %d: rank %d saw the death after %.3f s", what, trial, r,
                          dt);
            ck_assert_msg(dd < 1.0, "%s trial %d: rank %d: destroy took %.3f s", what, trial, r,
                          dd);
            worst = dt > worst ? dt : worst;
            worst_destroy = dd > worst_destroy ? dd : worst_destroy;
        }
    }
    fprintf(stderr,
            "CUDA kill (%s): max %.3f s to PEER_FAILED, destroy max %.3f s, %d trials\n", what,
            worst, worst_destroy, KILL_TRIALS);
    munmap(d, sizeof(*d));
}

START_TEST(t_kill_reaped)
{
    kill_trials(0);
}
END_TEST

START_TEST(t_kill_zombie)
{
    kill_trials(1);
}
END_TEST

/* ---- cases ------------------------------------------------------------------------- */

void cuda_faults_cases(Suite *su, int ngpus)
{
    const gpu_case_t cases[] = {
        {"mismatch", t_mismatch_3ranks, 1},
        {"kill_reaped", t_kill_reaped, 1},
        {"kill_zombie", t_kill_zombie, 1},
    };
    gpu_add_cases(su, cases, sizeof(cases) / sizeof(cases[0]), ngpus, NULL);
}
