/* Multi-rank tests of the symmetric pool through the public API: growth in the middle
 * of a sequence of calls, failure at the ceiling or on one rank followed by a working
 * smaller call, trim, mismatched collective calls, no file in /dev/shm, descriptors and
 * mappings released, two communicators used from two threads, a rank killed in the
 * middle of a call, the table of bad arguments, and symcoll_mem_free refusing every
 * pointer it does not own. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "pool_tests.h"
#include "symcoll.h"

#define RUN_TIMEOUT 120.0
#define MiB ((size_t)1 << 20)

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static symcoll_pool_attr_t query(symcoll_comm_h comm)
{
    symcoll_pool_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = SYMCOLL_POOL_ATTR_FIELD_RESERVED | SYMCOLL_POOL_ATTR_FIELD_MAPPED |
                   SYMCOLL_POOL_ATTR_FIELD_IN_USE | SYMCOLL_POOL_ATTR_FIELD_PEAK |
                   SYMCOLL_POOL_ATTR_FIELD_GROWTHS | SYMCOLL_POOL_ATTR_FIELD_SEGMENTS;
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &a), SYMCOLL_OK);
    return a;
}

/* Every mapping of this process that is shared memory must be a memfd: nothing of
 * ours may live in /dev/shm. */
static void check_no_shm_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    ck_assert(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "/dev/shm/"))
            harness_fail("mapping of a /dev/shm file: %s", line);
    fclose(f);
}

/* Number of memfd mappings of the pool in this process. */
static int count_pool_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    ck_assert(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "memfd:symcoll-pool"))
            n++;
    fclose(f);
    return n;
}

/* ---- growth in the middle of a sequence ---------------------------------------------- */

static void body_growth(int rank, int n, void *arg)
{
    static const size_t sizes[] = {4096, 60000, 300000, 1 * MiB, 3 * MiB, 6 * MiB};
    double *bufs[sizeof(sizes) / sizeof(sizes[0])];
    symcoll_pool_attr_t a0, a;
    symcoll_comm_h comm;
    int fds0 = harness_count_fds(), maps0 = count_pool_mappings();
    (void)arg;

    setenv("SYMCOLL_POOL_MIN_SIZE", "256K", 1);
    comm = harness_comm_create();
    a0 = query(comm);
    ck_assert_uint_eq(a0.mapped, 0);
    uint64_t growths_after_first = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        uint64_t growths = query(comm).growths;
        ck_assert_int_eq(symcoll_mem_alloc(comm, sizes[k], SYMCOLL_MEM_HOST, (void **)&bufs[k]),
                         SYMCOLL_OK);
        a = query(comm);
        ck_assert_uint_ge(a.mapped, sizes[k]);
        ck_assert_uint_ge(a.in_use, sizes[k]);
        if (k > 0)
            growths_after_first += a.growths - growths;
        /* zero copy on the new buffer, staged calls on a plain one in between */
        reduce_check(comm, bufs[k], sizes[k] / sizeof(double), n, rank);
        double *plain = malloc(sizes[k]);
        reduce_check(comm, plain, sizes[k] / sizeof(double), n, rank);
        free(plain);
        /* earlier buffers did not move and kept their contents */
        for (size_t j = 0; j < k; j++) {
            size_t cnt = sizes[j] / sizeof(double);
            if (bufs[j][cnt - 1] != n * (n + 1) / 2.0 + n * (double)((cnt - 1) % 7))
                harness_fail("buffer %zu lost its contents after growth %zu", j, k);
        }
    }
    a = query(comm);
    /* the pool grew while earlier buffers were live, and they were checked above */
    ck_assert_uint_ge(growths_after_first, 2);
    ck_assert_uint_eq(a.segments, a.growths);
    ck_assert_uint_ge(a.peak, a.in_use);
    ck_assert_uint_ge(a.reserved, a.mapped);
    check_no_shm_mappings();
    /* every local peer's view of every segment is mapped here */
    ck_assert_int_ge(count_pool_mappings() - maps0, (int)(a.segments + 1) * n);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        ck_assert_int_eq(symcoll_mem_free(comm, bufs[k]), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    ck_assert_int_eq(harness_count_fds(), fds0);
    ck_assert_int_eq(count_pool_mappings(), maps0);
}

/* ---- failure at the ceiling, failure on one rank ------------------------------------- */

static void body_ceiling(int rank, int n, void *arg)
{
    symcoll_pool_attr_t before, after;
    symcoll_comm_h comm;
    void *p = NULL, *q = NULL;
    (void)arg;

    setenv("SYMCOLL_POOL_MIN_SIZE", "1M", 1);
    setenv("SYMCOLL_POOL_MAX_SIZE", "8M", 1);
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(comm, 1 * MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    reduce_check(comm, p, MiB / 8, n, rank);
    before = query(comm);
    /* above the ceiling: refused on every rank, pool unchanged */
    ck_assert_int_eq(symcoll_mem_alloc(comm, 16 * MiB, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_ERR_NO_MEMORY);
    ck_assert_ptr_null(q);
    after = query(comm);
    ck_assert_uint_eq(after.mapped, before.mapped);
    ck_assert_uint_eq(after.in_use, before.in_use);
    ck_assert_uint_eq(after.segments, before.segments);
    /* the next smaller call works, and the old buffer still does */
    ck_assert_int_eq(symcoll_mem_alloc(comm, 2 * MiB, SYMCOLL_MEM_HOST, &q), SYMCOLL_OK);
    reduce_check(comm, q, 2 * MiB / 8, n, rank);
    reduce_check(comm, p, MiB / 8, n, rank);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    q = NULL;

    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);

    /* Growth that fails on the last rank only: its memfd cannot be sized past
     * RLIMIT_FSIZE. Every rank must report the failure and keep its pool as it was. */
    unsetenv("SYMCOLL_POOL_MAX_SIZE");
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(comm, 1 * MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    reduce_check(comm, p, MiB / 8, n, rank);
    before = query(comm);
    q = NULL;
    struct rlimit old;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    if (rank == n - 1) {
        struct rlimit rl = {2 * MiB, old.rlim_max}; /* soft limit only: we lift it again */
        signal(SIGXFSZ, SIG_IGN);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    }
    ck_assert_int_eq(symcoll_mem_alloc(comm, 5 * MiB, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_ERR_NO_MEMORY);
    ck_assert_ptr_null(q);
    after = query(comm);
    ck_assert_uint_eq(after.mapped, before.mapped);
    ck_assert_uint_eq(after.segments, before.segments);
    ck_assert_uint_eq(after.growths, before.growths);
    reduce_check(comm, p, MiB / 8, n, rank);
    if (rank == n - 1)
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 5 * MiB, SYMCOLL_MEM_HOST, &q), SYMCOLL_OK);
    reduce_check(comm, q, 5 * MiB / 8, n, rank);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ---- trim ------------------------------------------------------------------------------ */

static void body_trim(int rank, int n, void *arg)
{
    symcoll_pool_attr_t a, b;
    symcoll_comm_h comm;
    void *p, *q, *r;
    (void)arg;

    setenv("SYMCOLL_POOL_MIN_SIZE", "1M", 1);
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(comm, 512 * 1024, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 3 * MiB, SYMCOLL_MEM_HOST, &q), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 9 * MiB, SYMCOLL_MEM_HOST, &r), SYMCOLL_OK);
    reduce_check(comm, r, 9 * MiB / 8, n, rank);
    a = query(comm);
    ck_assert_uint_ge(a.segments, 3);
    /* segments that hold live buffers stay (only the all-reduce staging may go) */
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    b = query(comm);
    ck_assert_uint_ge(b.segments, 3);
    ck_assert_uint_ge(b.mapped, (512 + 3 * 1024 + 9 * 1024) * 1024);
    reduce_check(comm, r, 9 * MiB / 8, n, rank);
    reduce_check(comm, q, 3 * MiB / 8, n, rank);
    a = query(comm);
    ck_assert_int_eq(symcoll_mem_free(comm, r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    b = query(comm);
    ck_assert_uint_lt(b.mapped, a.mapped);
    ck_assert_uint_lt(b.segments, a.segments);
    ck_assert_uint_ge(b.mapped, 512 * 1024);
    /* the remaining buffer and the pool keep working, and grow again */
    reduce_check(comm, p, 512 * 1024 / 8, n, rank);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 6 * MiB, SYMCOLL_MEM_HOST, &q), SYMCOLL_OK);
    reduce_check(comm, q, 6 * MiB / 8, n, rank);
    double *plain = malloc(MiB);
    reduce_check(comm, plain, MiB / 8, n, rank);
    free(plain);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    /* everything free: trim unmaps every data segment */
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    b = query(comm);
    ck_assert_uint_eq(b.mapped, 0);
    ck_assert_uint_eq(b.segments, 0);
    ck_assert_uint_eq(b.in_use, 0);
    plain = malloc(MiB);
    reduce_check(comm, plain, MiB / 8, n, rank);
    free(plain);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ---- ranks that disagree --------------------------------------------------------------- */

static void body_mismatch(int rank, int n, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    void *p = NULL;
    (void)arg;
    (void)n;
    ck_assert_int_eq(symcoll_mem_alloc(comm, rank == 0 ? MiB : 2 * MiB, SYMCOLL_MEM_HOST, &p),
                     SYMCOLL_ERR_MISMATCH);
    ck_assert_ptr_null(p);
    ck_assert_uint_eq(query(comm).in_use, 0);
    /* all-reduce with different counts: a mismatch, not a hang nor a wrong result */
    double x[64] = {0};
    ck_assert_int_eq(
        symcoll_allreduce(x, x, rank == 0 ? 8 : 9, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
        SYMCOLL_ERR_MISMATCH);
    /* and the communicator still works */
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    reduce_check(comm, p, MiB / 8, n, rank);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ---- /dev/shm stays empty -------------------------------------------------------------- */

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int k = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            k++;
    closedir(d);
    return k;
}

static void body_shm(int rank, int n, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    void *p;
    ck_assert_int_eq(symcoll_mem_alloc(comm, 3 * MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    reduce_check(comm, p, 3 * MiB / 8, n, rank);
    double *plain = malloc(64 * 1024);
    reduce_check(comm, plain, 8 * 1024, n, rank);
    free(plain);
    check_no_shm_mappings();
    if (*(int *)arg && count_dir("/dev/shm") != 0)
        harness_fail("a file appeared in /dev/shm");
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* A private, empty /dev/shm for the ranks when we may mount one (root), so that other
 * programs on the machine cannot disturb the check; else the real one, which must not
 * gain an entry. */
START_TEST(test_no_dev_shm_4)
{
    int private = !unshare(CLONE_NEWNS) && !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
                  !mount("none", "/dev/shm", "tmpfs", 0, NULL);
    int before = count_dir("/dev/shm");
    ck_assert_int_ge(before, 0);
    ck_assert_int_eq(harness_run(4, 1, RUN_TIMEOUT, body_shm, &private), 0);
    ck_assert_int_le(count_dir("/dev/shm"), before);
    if (private)
        ck_assert_int_eq(count_dir("/dev/shm"), 0);
}
END_TEST

/* ---- two communicators, two threads ---------------------------------------------------- */

typedef struct thread_arg {
    symcoll_comm_h comm;
    int rank, n, id;
    _Atomic int *stop;
    int failed;
} thread_arg_t;

static void *thread_reduce(void *p)
{
    thread_arg_t *t = p;
    size_t max = 300000;
    double *buf = malloc(max * sizeof(double)), *pb = NULL;
    if (symcoll_mem_alloc(t->comm, MiB, SYMCOLL_MEM_HOST, (void **)&pb) != SYMCOLL_OK)
        t->failed = 1;
    for (int it = 0; it < 40 && !t->failed; it++) {
        size_t count = 1 + (size_t)((it * 7919 + t->id * 104729) % (int)max);
        double *b = it % 3 == 0 ? pb : buf;
        if (b == pb && count > MiB / 8)
            count = MiB / 8;
        for (size_t i = 0; i < count; i++)
            b[i] = t->rank * (t->id + 1) + (double)(i % 5);
        if (symcoll_allreduce(b, b, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, t->comm, NULL) !=
            SYMCOLL_OK) {
            t->failed = 2;
            break;
        }
        for (size_t i = 0; i < count; i++)
            if (b[i] != (t->id + 1) * t->n * (t->n - 1) / 2.0 + t->n * (double)(i % 5)) {
                t->failed = 3;
                break;
            }
    }
    symcoll_mem_free(t->comm, pb);
    free(buf);
    return NULL;
}

/* Reads pool statistics of both communicators while they work. */
static void *thread_query(void *p)
{
    thread_arg_t *t = p;
    while (!atomic_load(t->stop)) {
        symcoll_pool_attr_t a;
        memset(&a, 0, sizeof(a));
        a.field_mask = SYMCOLL_POOL_ATTR_FIELD_MAPPED | SYMCOLL_POOL_ATTR_FIELD_IN_USE;
        if (symcoll_pool_query(t[0].comm, SYMCOLL_MEM_HOST, &a) != SYMCOLL_OK ||
            symcoll_pool_query(t[1].comm, SYMCOLL_MEM_HOST, &a) != SYMCOLL_OK)
            t->failed = 4;
        sched_yield();
    }
    return NULL;
}

static void body_threads(int rank, int n, void *arg)
{
    thread_arg_t t[2];
    pthread_t th[3];
    _Atomic int stop = 0;
    (void)arg;
    /* created one after the other, the same order on every rank */
    for (int i = 0; i < 2; i++) {
        t[i].comm = harness_comm_create();
        t[i].rank = rank;
        t[i].n = n;
        t[i].id = i;
        t[i].stop = &stop;
        t[i].failed = 0;
    }
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_reduce, &t[i]), 0);
    ck_assert_int_eq(pthread_create(&th[2], NULL, thread_query, t), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(th[2], NULL);
    for (int i = 0; i < 2; i++) {
        if (t[i].failed)
            harness_fail("thread %d failed (%d)", i, t[i].failed);
        ck_assert_int_eq(symcoll_comm_destroy(t[i].comm), SYMCOLL_OK);
    }
}

/* ---- a rank killed in the middle of a call ---------------------------------------------- */

static void *killer(void *p)
{
    (void)p;
    usleep(30000);
    raise(SIGKILL);
    return NULL;
}

/* The last rank's process forks: the child is the rank (creates the communicator) and
 * kills itself while it is inside large all-reduces; the harness's process only waits
 * for it, so the harness sees success. The survivors must get an error, not hang. */
static void body_killed(int rank, int n, void *arg)
{
    size_t count = 4 * MiB / 8;
    double *buf = malloc(count * sizeof(double));
    symcoll_comm_h comm;
    symcoll_status_t st = SYMCOLL_OK;
    double t0;
    int it;
    (void)arg;

    setenv("SYMCOLL_TIMEOUT", "60", 1);
    if (rank == n - 1) {
        pid_t pid = fork();
        int ws;
        ck_assert_int_ge(pid, 0);
        if (pid > 0) {
            ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
            if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
                harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
            free(buf);
            return;
        }
        comm = harness_comm_create();
        pthread_t th;
        for (int k = 0; k < 2; k++)
            reduce_check(comm, buf, count, n, rank);
        /* the timer starts once a further call returned: that call needed everyone's
         * data, so every survivor is past its checked calls */
        symcoll_allreduce(buf, buf, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        pthread_create(&th, NULL, killer, NULL);
        for (;;)
            symcoll_allreduce(buf, buf, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    }
    comm = harness_comm_create();
    for (int k = 0; k < 2; k++)
        reduce_check(comm, buf, count, n, rank);
    t0 = now_sec();
    for (it = 0; it < 100000 && st == SYMCOLL_OK; it++)
        st = symcoll_allreduce(buf, buf, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    if (st != SYMCOLL_ERR_PEER_FAILED && st != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("survivor got %s", symcoll_status_string(st));
    /* well before the 60 s deadline: the death was noticed, not waited out */
    fprintf(stderr, "rank %d: error after %d calls, %.2f s: %s\n", rank, it, now_sec() - t0,
            symcoll_status_string(st));
    /* later calls fail at once; destroy works */
    ck_assert_int_ne(symcoll_allreduce(buf, buf, 10, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(buf);
}

/* ---- a peer that does not come ---------------------------------------------------------- */

/* Rank 1 arrives long after SYMCOLL_TIMEOUT: rank 0 times out (it never hangs) and says
 * so in its signal pad, so rank 1's call fails at once, with the same timeout, instead of
 * succeeding alone or waiting in turn. */
static void body_timeout(int rank, int n, void *arg)
{
    double x[16] = {0}, t0;
    symcoll_status_t st;
    symcoll_comm_h comm;
    (void)arg;

    setenv("SYMCOLL_TIMEOUT", "0.5", 1);
    comm = harness_comm_create();
    reduce_check(comm, x, 16, n, rank);
    if (rank == 1)
        usleep(3000000);
    t0 = now_sec();
    st = symcoll_allreduce(x, x, 16, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    if (rank == 0 && st != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("the waiting rank got %s", symcoll_status_string(st));
    if (rank == 1 && st != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("the late rank got %s", symcoll_status_string(st));
    fprintf(stderr, "rank %d: %s after %.2f s\n", rank, symcoll_status_string(st),
            now_sec() - t0);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ---- abort ------------------------------------------------------------------------------ */

static void body_abort(int rank, int n, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    double x[16] = {0};
    symcoll_status_t st;
    (void)arg;
    (void)n;
    reduce_check(comm, x, 16, n, rank);
    if (rank == 0) {
        ck_assert_int_eq(symcoll_comm_abort(comm), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_allreduce(x, x, 16, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                         SYMCOLL_ERR_ABORTED);
    } else {
        /* rank 0 will never join: its abort word ends our wait */
        st = symcoll_allreduce(x, x, 16, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st == SYMCOLL_OK || st == SYMCOLL_ERR_TIMED_OUT)
            harness_fail("peer of an aborted rank got %s", symcoll_status_string(st));
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ---- bad arguments ----------------------------------------------------------------------- */

static void body_bad_args(int rank, int n, void *arg)
{
    symcoll_comm_h comm = harness_comm_create(), dead;
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    symcoll_pool_attr_t a0, a;
    void *p = NULL;
    (void)arg;

    /* a destroyed communicator (collective create and destroy first) */
    dead = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_destroy(dead), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    reduce_check(comm, p, 16, n, rank);
    a0 = query(comm);

    static const struct {
        int send_null, recv_null;
        size_t count;
        int dtype, op, comm;
    } table[] = {
        {0, 0, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 0}, /* NULL communicator */
        {0, 0, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 1}, /* destroyed communicator */
        {1, 0, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 2}, /* NULL sendbuf */
        {0, 1, 8, SYMCOLL_FLOAT64, SYMCOLL_SUM, 2}, /* NULL recvbuf */
        {0, 0, 8, -1, SYMCOLL_SUM, 2},              /* datatype below range */
        {0, 0, 8, SYMCOLL_DTYPE_LAST, SYMCOLL_SUM, 2},
        {0, 0, 8, SYMCOLL_FLOAT64, -1, 2}, /* operator out of range */
        {0, 0, 8, SYMCOLL_FLOAT64, SYMCOLL_OP_LAST, 2},
        {0, 0, SIZE_MAX / 4, SYMCOLL_FLOAT64, SYMCOLL_SUM, 2}, /* bytes overflow */
        {0, 0, SIZE_MAX, SYMCOLL_INT8, SYMCOLL_SUM, 2},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        symcoll_comm_h c = table[i].comm == 0 ? NULL : table[i].comm == 1 ? dead : comm;
        memcpy(y, x, sizeof(y));
        symcoll_status_t st = symcoll_allreduce(
            table[i].send_null ? NULL : x, table[i].recv_null ? NULL : y, table[i].count,
            (symcoll_dtype_t)table[i].dtype, (symcoll_op_t)table[i].op, c, NULL);
        if (st != SYMCOLL_ERR_INVALID_PARAM)
            harness_fail("bad-argument row %zu: got %s", i, symcoll_status_string(st));
        if (memcmp(x, y, sizeof(y)))
            harness_fail("bad-argument row %zu wrote the output", i);
    }
    /* count 0 with NULL buffers is fine */
    ck_assert_int_eq(symcoll_allreduce(NULL, NULL, 0, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    /* pool calls */
    void *q = (void *)0x1;
    ck_assert_int_eq(symcoll_mem_alloc(NULL, MiB, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_alloc(dead, MiB, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_alloc(comm, 0, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, SYMCOLL_MEM_HOST, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, (symcoll_mem_type_t)7, &q),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_ptr_eq(q, (void *)0x1);
    ck_assert_int_eq(symcoll_mem_free(comm, x), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_free(comm, (char *)p + 8), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_free(dead, p), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_mem_free(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_pool_query(NULL, SYMCOLL_MEM_HOST, &a), SYMCOLL_ERR_INVALID_PARAM);
    a.field_mask = 1ULL << 40;
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &a), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_LAST), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_pool_trim(dead, SYMCOLL_MEM_HOST), SYMCOLL_ERR_INVALID_PARAM);

    /* none of it changed anything, and the next valid calls work */
    a = query(comm);
    ck_assert_uint_eq(a.mapped, a0.mapped);
    ck_assert_uint_eq(a.in_use, a0.in_use);
    ck_assert_uint_eq(a.growths, a0.growths);
    reduce_check(comm, p, MiB / 8, n, rank);
    reduce_check(comm, x, 8, n, rank);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_ERR_INVALID_PARAM);
}

/* ---- symcoll_mem_free frees only live buffers of symcoll_mem_alloc ---------------------- */

/* symcoll_mem_free(comm, ptr) with stderr captured: it must fail with
 * SYMCOLL_ERR_INVALID_PARAM and log exactly one line, which names the case (contains
 * what). The line is echoed to the real stderr. */
static void free_refused(symcoll_comm_h comm, void *ptr, const char *what)
{
    char first[1024] = "", line[1024];
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO), lines = 0;
    symcoll_status_t st;

    ck_assert(tmp && saved >= 0);
    fflush(stderr);
    ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
    st = symcoll_mem_free(comm, ptr);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    rewind(tmp);
    while (fgets(line, sizeof(line), tmp))
        if (lines++ == 0)
            memcpy(first, line, sizeof(first));
    fclose(tmp);
    fputs(first, stderr);
    if (st != SYMCOLL_ERR_INVALID_PARAM)
        harness_fail("symcoll_mem_free of %s: got %s", what, symcoll_status_string(st));
    if (lines != 1 || !strstr(first, what))
        harness_fail("symcoll_mem_free of %s: %d log lines, the first: %s", what, lines, first);
}

static void body_mem_free(int rank, int n, void *arg)
{
    const size_t size = 64 * 1024, count = size / sizeof(double);
    symcoll_comm_h comm, other;
    symcoll_pool_attr_t a0;
    double *p, *q, *r, *o, x[4];
    double *plain = malloc(size);
    (void)arg;

    ck_assert(plain);
    comm = harness_comm_create();

    /* The library's own staging: p is the first allocation of the new pool; once it is
     * freed, the staging of the next all-reduce of a plain buffer takes the same first
     * fit, so the stale pointer now points at staging. */
    ck_assert_int_eq(symcoll_mem_alloc(comm, size, SYMCOLL_MEM_HOST, (void **)&p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    reduce_check(comm, plain, count, n, rank);
    a0 = query(comm);
    ck_assert_uint_gt(a0.in_use, 0);
    free_refused(comm, p, "staging");
    ck_assert_uint_eq(query(comm).in_use, a0.in_use);
    /* the staging stayed the library's: a new buffer does not land on it, and all-reduces
     * through the staging and on the new buffer are right */
    ck_assert_int_eq(symcoll_mem_alloc(comm, size, SYMCOLL_MEM_HOST, (void **)&q), SYMCOLL_OK);
    ck_assert_ptr_ne(q, p);
    reduce_check(comm, q, count, n, rank);
    reduce_check(comm, plain, count, n, rank);
    reduce_check(comm, q, count, n, rank);

    /* a double free */
    ck_assert_int_eq(symcoll_mem_alloc(comm, size, SYMCOLL_MEM_HOST, (void **)&r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, r), SYMCOLL_OK);
    a0 = query(comm);
    free_refused(comm, r, "double free");
    ck_assert_uint_eq(query(comm).in_use, a0.in_use);

    /* a pointer inside a live buffer: the buffer stays live and freeable */
    free_refused(comm, q + 1, "inside");
    free_refused(comm, (char *)q + size - 1, "inside");
    ck_assert_uint_eq(query(comm).in_use, a0.in_use);
    reduce_check(comm, q, count, n, rank);

    /* memory that is not the pool's: the stack, the heap, another communicator's pool */
    free_refused(comm, x, "not in any pool");
    free_refused(comm, plain, "not in any pool");
    other = harness_comm_create();
    ck_assert_int_eq(symcoll_mem_alloc(other, size, SYMCOLL_MEM_HOST, (void **)&o), SYMCOLL_OK);
    free_refused(comm, o, "not in any pool");
    ck_assert_uint_eq(query(comm).in_use, a0.in_use);
    reduce_check(other, o, count, n, rank);
    ck_assert_int_eq(symcoll_mem_free(other, o), SYMCOLL_OK);
    free_refused(other, o, "double free");
    ck_assert_int_eq(symcoll_comm_destroy(other), SYMCOLL_OK);

    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    reduce_check(comm, plain, count, n, rank);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(plain);
}

RANKS_TEST(test_growth_1, body_growth, 1)
RANKS_TEST(test_growth_3, body_growth, 3)
RANKS_TEST(test_ceiling_3, body_ceiling, 3)
RANKS_TEST(test_trim_2, body_trim, 2)
RANKS_TEST(test_mismatch_2, body_mismatch, 2)
RANKS_TEST(test_two_threads_3, body_threads, 3)
RANKS_TEST(test_killed_3, body_killed, 3)
RANKS_TEST(test_timeout_2, body_timeout, 2)
RANKS_TEST(test_abort_2, body_abort, 2)
RANKS_TEST(test_bad_args_2, body_bad_args, 2)
RANKS_TEST(test_mem_free_2, body_mem_free, 2)
RANKS_TEST(test_mem_free_3, body_mem_free, 3)

int main(void)
{
    Suite *s = suite_create("pool");

    ADD_CASE(s, test_growth_1);
    ADD_CASE(s, test_growth_3);
    ADD_CASE(s, test_ceiling_3);
    ADD_CASE(s, test_trim_2);
    ADD_CASE(s, test_mismatch_2);
    ADD_CASE(s, test_no_dev_shm_4);
    ADD_CASE(s, test_two_threads_3);
    ADD_CASE(s, test_killed_3);
    ADD_CASE(s, test_timeout_2);
    ADD_CASE(s, test_abort_2);
    ADD_CASE(s, test_bad_args_2);
    ADD_CASE(s, test_mem_free_2);
    ADD_CASE(s, test_mem_free_3);
    return harness_main(s);
}
