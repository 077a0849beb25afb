/* Tests of the bootstrap: allgather and barrier over real processes (built-in TCP and
 * a callback), bad addresses, deadlines and abort, and the harness's own failure
 * reports. Hostile peers are tests/test_bootstrap_malformed.c, the node-local
 * descriptor channel tests/test_bootstrap_local.c. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bootstrap/bs_int.h"
#include "bootstrap_testlib.h"
#include "harness.h"
#include "core/core.h"

/* ---- allgather over the built-in TCP bootstrap ------------------------ */

static void body_tcp_allgather(int rank, int nranks, void *arg)
{
    int fds0 = harness_count_fds();
    bootstrap_t *bs;
    (void)arg;

    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    check_job_id(bs, nranks);
    /* the local channel holds this rank alone until it is opened */
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
    expect_fds(fds0);
}

static const int tcp_sizes[] = {1, 2, 3, 4, 7};

START_TEST(test_tcp_allgather)
{
    ck_assert_int_eq(harness_run(tcp_sizes[_i], 1, RUN_TIMEOUT, body_tcp_allgather, NULL), 0);
}
END_TEST

/* Without SYMCOLL_COOKIE the ranks still find each other (unauthenticated). */
static void body_no_cookie(int rank, int nranks, void *arg)
{
    bootstrap_t *bs;
    (void)arg;
    unsetenv("SYMCOLL_COOKIE");
    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    bootstrap_destroy(bs);
}

RANKS_TEST(test_tcp_no_cookie, 3, 1, body_no_cookie)

/* SYMCOLL_ADDR may name the host instead of an address. */
static void body_hostname(int rank, int nranks, void *arg)
{
    char addr[64];
    const char *port = strrchr(getenv("SYMCOLL_ADDR"), ':');
    bootstrap_t *bs;
    (void)arg;
    snprintf(addr, sizeof(addr), "localhost%s", port);
    setenv("SYMCOLL_ADDR", addr, 1);
    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    bootstrap_destroy(bs);
}

RANKS_TEST(test_tcp_hostname, 2, 1, body_hostname)

/* ---- the mesh: O(log n) connections and bytes spread evenly ---------------- */

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The distinct ranks r +- 2^k (mod n), k < ceil(log2 n): the mesh partners of rank r,
 * one connection each. */
static int mesh_partners(int rank, int nranks)
{
    int cnt = 0;
    char *seen = calloc((size_t)nranks, 1);

    ck_assert(seen);
    for (long d = 1; d < nranks; d *= 2) {
        int to = (int)((rank - d + nranks) % nranks), from = (int)((rank + d) % nranks);
        cnt += !seen[to];
        seen[to] = 1;
        cnt += !seen[from];
        seen[from] = 1;
    }
    free(seen);
    return cnt;
}

/* Every rank holds one socket per mesh partner; allgathers of every size and
 * all-reduces are right; an allgather of 4 KiB costs every rank (n - 1) blocks and one
 * header per round, so the busiest rank moves no more than twice the median. */
static void body_mesh(int rank, int nranks, void *arg)
{
    enum { AG = 4096, CNT = 5 };
    int K = ceil_log2(nranks), fds0 = harness_count_fds(), P = mesh_partners(rank, nranks);
    bootstrap_stats_t st0, st1, *all;
    uint64_t *moved;
    unsigned char *src, *dst;
    bootstrap_t *bs;
    (void)arg;

    bs = env_bootstrap();
    bootstrap_stats(bs, &st0);
    if (st0.tcp_conns != P)
        harness_fail("%d sockets after creation, not one per mesh partner (%d)", st0.tcp_conns, P);
    check_allgathers(bs, rank, nranks);

    for (int op = 0; op < 2; op++) {
        int64_t v[CNT], want[CNT];
        for (int i = 0; i < CNT; i++) {
            /* each element has its extreme at another rank */
            v[i] = (int64_t)((rank + 3 * i) % nranks) * (i & 1 ? -1000 : 1000) + i;
            want[i] = v[i];
        }
        for (int r = 0; r < nranks; r++)
            for (int i = 0; i < CNT; i++) {
                int64_t x = (int64_t)((r + 3 * i) % nranks) * (i & 1 ? -1000 : 1000) + i;
                if (op == BOOTSTRAP_OP_MIN ? x < want[i] : x > want[i])
                    want[i] = x;
            }
        bootstrap_stats(bs, &st1);
        ck_assert_int_eq(bootstrap_allreduce(bs, v, CNT, (bootstrap_op_t)op), SYMCOLL_OK);
        for (int i = 0; i < CNT; i++)
            if (v[i] != want[i])
                harness_fail("allreduce op %d: element %d is %lld, expected %lld", op, i,
                             (long long)v[i], (long long)want[i]);
        bootstrap_stats(bs, &st0);
        ck_assert_int_eq(st0.rounds - st1.rounds, K);
        ck_assert_int_eq(st0.tcp_bytes_sent - st1.tcp_bytes_sent,
                         K * (sizeof(bs_hdr_t) + CNT * sizeof(int64_t)));
    }
    {
        int64_t one = rank;
        ck_assert_int_eq(bootstrap_allreduce(bs, &one, 1, BOOTSTRAP_OP_MAX), SYMCOLL_OK);
        ck_assert_int_eq(one, nranks - 1);
    }

    src = malloc(AG);
    dst = malloc((size_t)AG * (size_t)nranks);
    ck_assert(src && dst);
    for (size_t i = 0; i < AG; i++)
        src[i] = pattern(rank, i, AG);
    bootstrap_stats(bs, &st0);
    ck_assert_int_eq(bootstrap_allgather(bs, src, dst, AG), SYMCOLL_OK);
    bootstrap_stats(bs, &st1);
    ck_assert_int_eq(st1.rounds - st0.rounds, K);
    ck_assert_int_eq(st1.exchanges - st0.exchanges, 1);
    ck_assert_int_eq(st1.tcp_bytes_sent - st0.tcp_bytes_sent,
                     (size_t)(nranks - 1) * AG + (size_t)K * sizeof(bs_hdr_t));
    ck_assert_int_eq(st1.tcp_bytes_recv - st0.tcp_bytes_recv,
                     (size_t)(nranks - 1) * AG + (size_t)K * sizeof(bs_hdr_t));
    if (st1.tcp_conns != P)
        harness_fail("%d sockets, not one per mesh partner (%d)", st1.tcp_conns, P);

    /* over the whole life of the channel, rendezvous included */
    all = calloc((size_t)nranks, sizeof(*all));
    moved = calloc((size_t)nranks, sizeof(*moved));
    ck_assert(all && moved);
    ck_assert_int_eq(bootstrap_allgather(bs, &st1, all, sizeof(st1)), SYMCOLL_OK);
    for (int r = 0; r < nranks; r++)
        moved[r] = all[r].tcp_bytes_sent + all[r].tcp_bytes_recv;
    qsort(moved, (size_t)nranks, sizeof(*moved), cmp_u64);
    if (moved[nranks - 1] > 2 * moved[nranks / 2])
        harness_fail("the busiest rank moved %llu bytes, the median %llu",
                     (unsigned long long)moved[nranks - 1],
                     (unsigned long long)moved[nranks / 2]);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
    free(all);
    free(moved);
    free(src);
    free(dst);
    expect_fds(fds0);
}

static const int mesh_sizes[] = {2, 3, 5, 6, 8, 12, 13};

START_TEST(test_mesh)
{
    ck_assert_int_eq(harness_run(mesh_sizes[_i], 1, RUN_TIMEOUT, body_mesh, NULL), 0);
}
END_TEST

/* One rank aborts: it fails at once with SYMCOLL_ERR_ABORTED, and the failure spreads
 * through the mesh (every rank that fails shuts its connections) so every other rank's
 * allgather, and the all-reduce after it, fails long before the deadline, while the
 * aborted rank still holds its bootstrap (arg: a shared count of the ranks done). */
static void body_mesh_abort(int rank, int nranks, void *arg)
{
    _Atomic int *done = arg;
    uint64_t v = (uint64_t)rank, *all = calloc((size_t)nranks, sizeof(*all));
    int64_t one = rank;
    bootstrap_t *bs;
    double t0;

    ck_assert_ptr_nonnull(all);
    bs = env_bootstrap();
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    t0 = time_now();
    if (rank == nranks / 2) {
        bootstrap_abort(bs);
        ck_assert_int_eq(bootstrap_allgather(bs, &v, all, sizeof(v)), SYMCOLL_ERR_ABORTED);
        /* keep the sockets until the others are done: only the abort may tell them */
        while (atomic_load(done) < nranks - 1 && time_now() - t0 < BS_TIMEOUT)
            usleep(1000);
    } else {
        ck_assert_int_ne(bootstrap_allgather(bs, &v, all, sizeof(v)), SYMCOLL_OK);
        atomic_fetch_add(done, 1);
    }
    ck_assert_int_ne(bootstrap_allreduce(bs, &one, 1, BOOTSTRAP_OP_MAX), SYMCOLL_OK);
    if (time_now() - t0 > BS_TIMEOUT / 3)
        harness_fail("the abort took %.1f s to reach rank %d", time_now() - t0, rank);
    bootstrap_destroy(bs);
    free(all);
}

static const int abort_sizes[] = {2, 5, 8};

START_TEST(test_mesh_abort)
{
    _Atomic int *done =
        mmap(NULL, sizeof(*done), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(done != MAP_FAILED);
    atomic_init(done, 0);
    ck_assert_int_eq(harness_run(abort_sizes[_i], 1, RUN_TIMEOUT, body_mesh_abort, done), 0);
    munmap(done, sizeof(*done));
}
END_TEST

/* ---- bad addresses, deadlines and abort (one process) ------------------- */

START_TEST(test_bad_addr)
{
    static const char *const bad[] = {"",
                                      "127.0.0.1",
                                      "127.0.0.1:",
                                      ":5000",
                                      "127.0.0.1:0",
                                      "127.0.0.1:65536",
                                      "127.0.0.1:12x",
                                      "[::1:5000",
                                      "no.such.host.invalid:5000"};
    bootstrap_params_t p;
    bootstrap_t *bs = NULL;
    memset(&p, 0, sizeof(p));
    p.rank = 1;
    p.nranks = 2;
    p.timeout_sec = 2;
    for (size_t i = 0; i < SC_ARRAY_SIZE(bad); i++) {
        symcoll_status_t st;
        p.addr = bad[i];
        st = bootstrap_create(&p, &bs);
        ck_assert_msg(st == SYMCOLL_ERR_INVALID_PARAM || st == SYMCOLL_ERR_BOOTSTRAP,
                      "address '%s' gave %d", bad[i], st);
        ck_assert_ptr_null(bs);
    }
    p.addr = NULL;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    /* bad cookies are refused before anything happens */
    p.addr = "127.0.0.1:5000";
    p.cookie = "xyz";
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    p.cookie = "00000000";
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    p.cookie = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0";
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    /* and bad ranks */
    p.cookie = NULL;
    p.rank = 2;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    p.rank = 0;
    p.timeout_sec = 0;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_ptr_null(bs);
}
END_TEST

/* A rank alone times out (rank 0 waiting for others, rank 1 with nobody listening)
 * or stops at once when aborted; either way it leaves no descriptor behind. */
static void body_alone(int rank, int nranks, void *arg)
{
    static _Atomic int aborted = 1;
    bootstrap_params_t p = env_params(0.5);
    bootstrap_t *bs = NULL;
    int fds0 = harness_count_fds();
    double t0;
    (void)rank;
    (void)nranks;
    (void)arg;

    p.nranks = 2;
    for (int r = 0; r < 2; r++) {
        p.rank = r;
        ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_TIMED_OUT);
        ck_assert_ptr_null(bs);
        ck_assert_int_eq(harness_count_fds(), fds0);
    }
    p.aborted = &aborted;
    p.timeout_sec = 60;
    t0 = time_now();
    for (int r = 0; r < 2; r++) {
        p.rank = r;
        ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_ABORTED);
    }
    ck_assert(time_now() - t0 < 10);
    ck_assert_int_eq(harness_count_fds(), fds0);
}

RANKS_TEST(test_deadline_and_abort, 1, 1, body_alone)

/* A job of 3 where rank 2 never comes: rank 0 gives up at its deadline (1 s) and tells
 * rank 1, which joined, why; rank 1 fails with TIMED_OUT at once, long before its own
 * deadline (30 s), and neither leaves a descriptor behind. */
static void body_never_arrives(int rank, int nranks, void *arg)
{
    bootstrap_params_t p = env_params(rank == 0 ? 1.0 : 30.0);
    bootstrap_t *bs = NULL;
    int fds0 = harness_count_fds();
    double t0 = time_now();
    (void)nranks;
    (void)arg;

    p.nranks = 3;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_TIMED_OUT);
    ck_assert_ptr_null(bs);
    if (time_now() - t0 > 5.0)
        harness_fail("rank %d failed %.1f s after it began, not soon after rank 0's 1 s", rank,
                     time_now() - t0);
    ck_assert_int_eq(harness_count_fds(), fds0);
}

RANKS_TEST(test_never_arrives, 2, 1, body_never_arrives)

static void *kill_self_later(void *arg)
{
    (void)arg;
    usleep(500 * 1000);
    raise(SIGKILL);
    return NULL;
}

/* A job of 3 where rank 2 never comes and rank 0 dies 0.5 s into the rendezvous (a
 * SIGKILL in a child, as a crash would): rank 1, which joined and waits for its
 * welcome, fails with PEER_FAILED at once, not with a cookie complaint and not at its
 * 30 s deadline. */
static void body_rank0_dies(int rank, int nranks, void *arg)
{
    bootstrap_params_t p = env_params(30.0);
    bootstrap_t *bs = NULL;
    double t0 = time_now();
    (void)nranks;
    (void)arg;

    p.nranks = 3;
    if (rank == 0) {
        pthread_t th;
        if (!harness_fork_victim())
            return;
        pthread_create(&th, NULL, kill_self_later, NULL);
        (void)bootstrap_create(&p, &bs);
        _exit(3);
    }
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_PEER_FAILED);
    if (time_now() - t0 > 5.0)
        harness_fail("rank 1 failed %.1f s after it began, not soon after rank 0 died",
                     time_now() - t0);
}

RANKS_TEST(test_rank0_dies, 2, 1, body_rank0_dies)

/* Every rank destroys its bootstrap as soon as its creation returns: a partner that is
 * done (its welcome sent, then its connections closed) while this rank still waits for
 * another dialer is not taken for a dead one. */
static void body_quick_destroy(int rank, int nranks, void *arg)
{
    bootstrap_params_t p = env_params(10.0);
    bootstrap_t *bs = NULL;
    symcoll_status_t st;
    (void)arg;

    if (rank == nranks - 1)
        usleep(2000); /* the last one late: the others finish while it connects */
    st = bootstrap_create(&p, &bs);
    if (st != SYMCOLL_OK)
        harness_fail("rank %d: bootstrap_create: %s", rank, symcoll_status_string(st));
    bootstrap_destroy(bs);
}

/* Rank 0 of the TCP rendezvous holds a connection to every other rank until the address
 * book is out. With a soft limit of descriptors below that (40 here, for 48 ranks; 1024
 * is common, and a job of a few thousand ranks passes it) it raises the limit and the
 * creation succeeds; with a hard limit below it, it fails at once and says why (the
 * others time out). arg: non-NULL for the hard limit. */
static void body_fd_limit(int rank, int nranks, void *arg)
{
    bool hard = arg != NULL;
    bootstrap_params_t p = env_params(hard ? 3.0 : 30.0);
    bootstrap_t *bs = NULL;
    struct rlimit rl;
    symcoll_status_t st;
    double t0;

    if (rank == 0) {
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
        rl.rlim_cur = 40;
        if (hard)
            rl.rlim_max = 40;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    t0 = time_now();
    st = bootstrap_create(&p, &bs);
    if (!hard) {
        if (st != SYMCOLL_OK)
            harness_fail("rank %d: bootstrap_create: %s", rank, symcoll_status_string(st));
        if (rank == 0) {
            ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
            ck_assert_uint_gt(rl.rlim_cur, (rlim_t)nranks);
        }
        bootstrap_destroy(bs);
    } else if (rank == 0) {
        ck_assert_int_eq(st, SYMCOLL_ERR_SYSTEM);
        if (time_now() - t0 > 1.0)
            harness_fail("rank 0 took %.1f s to see that the limit is too low",
                         time_now() - t0);
    } else {
        ck_assert_int_ne(st, SYMCOLL_OK);
    }
}

START_TEST(test_fd_limit)
{
    static int hard = 1;
    ck_assert_int_eq(harness_run(48, 1, RUN_TIMEOUT, body_fd_limit, NULL), 0);
    ck_assert_int_eq(harness_run(48, 1, RUN_TIMEOUT, body_fd_limit, &hard), 0);
}
END_TEST

START_TEST(test_quick_destroy)
{
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(harness_run(24, 1, RUN_TIMEOUT, body_quick_destroy, NULL), 0);
}
END_TEST

/* ---- host leaders of the rendezvous ------------------------------------------ */

/* 12 ranks on 3 simulated nodes: with host leaders rank 0 serves one connection per
 * node (its own node's other ranks elect one too) and hears of the 8 other ranks
 * through them; without (arg non-NULL), one connection per rank. Either way every
 * rank's allgather is exact. */
static void body_host_leaders(int rank, int nranks, void *arg)
{
    bootstrap_params_t p = env_params(BS_TIMEOUT);
    bootstrap_stats_t st;
    bootstrap_t *bs = NULL;
    int fds0 = harness_count_fds();
    symcoll_status_t s;

    p.no_host_leaders = arg != NULL;
    s = bootstrap_create(&p, &bs);
    if (s != SYMCOLL_OK)
        harness_fail("rank %d: bootstrap_create: %s", rank, symcoll_status_string(s));
    check_allgathers(bs, rank, nranks);
    bootstrap_stats(bs, &st);
    if (rank == 0) {
        ck_assert_int_eq(st.rendezvous_conns, arg ? nranks - 1 : 3);
        ck_assert_int_eq(st.rendezvous_members, arg ? 0 : nranks - 1 - 3);
    } else {
        /* a leader counts its members: 2 on node 0 (of ranks 1-3), 3 on the others */
        ck_assert_int_le(st.rendezvous_members, 3);
    }
    bootstrap_destroy(bs);
    expect_fds(fds0);
}

START_TEST(test_host_leaders)
{
    static int direct = 1;
    ck_assert_int_eq(harness_run(12, 3, RUN_TIMEOUT, body_host_leaders, NULL), 0);
    ck_assert_int_eq(harness_run(12, 3, RUN_TIMEOUT, body_host_leaders, &direct), 0);
}
END_TEST

/* 6 ranks on 2 simulated nodes (0-2, 3-5), rank 5 never comes, and the leader of node 1
 * (rank 3: it starts first, rank 4 200 ms later) dies 0.5 s into the rendezvous: its
 * member (rank 4) sees it die, rank 0 sees its connection end and gives up, and tells
 * node 0's leader, which tells its member: every one fails with PEER_FAILED in a few
 * seconds, not at its 30 s deadline, and leaves no descriptor behind. */
static void body_leader_dies(int rank, int nranks, void *arg)
{
    bootstrap_params_t p = env_params(30.0);
    bootstrap_t *bs = NULL;
    int fds0 = harness_count_fds();
    double t0;
    (void)nranks;
    (void)arg;

    if (rank == 5)
        return;
    if (rank == 3) {
        pthread_t th;
        if (!harness_fork_victim())
            return;
        pthread_create(&th, NULL, kill_self_later, NULL);
        (void)bootstrap_create(&p, &bs);
        _exit(3);
    }
    if (rank == 4)
        usleep(200 * 1000);
    t0 = time_now();
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_ERR_PEER_FAILED);
    if (time_now() - t0 > 6.0)
        harness_fail("rank %d failed %.1f s after it began, not soon after the leader died",
                     rank, time_now() - t0);
    ck_assert_int_eq(harness_count_fds(), fds0);
}

RANKS_TEST(test_leader_dies, 6, 2, body_leader_dies)

/* ---- callback path ---------------------------------------------------------- */

/* A process-shared memory allgather, independent of the TCP code: a region mapped
 * before fork, a generation barrier, one slot per rank. */
#define SHM_SLOT 8192
typedef struct shm_ag {
    _Atomic unsigned arrived;
    _Atomic unsigned generation;
    int nranks;
    unsigned char data[];
} shm_ag_t;

typedef struct cb_ctx {
    shm_ag_t *shm;
    int rank;
    int calls;
    int corrupt_call; /* flip the session in this call's contribution (0: never) */
    int fail_call;    /* return an error on this call (0: never) */
} cb_ctx_t;

static int shm_barrier(shm_ag_t *s)
{
    unsigned gen = atomic_load(&s->generation);
    double end = time_now() + BS_TIMEOUT;
    if (atomic_fetch_add(&s->arrived, 1) + 1 == (unsigned)s->nranks) {
        atomic_store(&s->arrived, 0);
        atomic_fetch_add(&s->generation, 1);
        return 0;
    }
    while (atomic_load(&s->generation) == gen)
        if (time_now() > end)
            return -1;
        else
            usleep(100);
    return 0;
}

static int shm_allgather(const void *src, void *dst, size_t size, void *ctx)
{
    cb_ctx_t *c = ctx;
    shm_ag_t *s = c->shm;
    c->calls++;
    if (size > SHM_SLOT || c->calls == c->fail_call)
        return -1;
    if (shm_barrier(s))
        return -1;
    memcpy(s->data + (size_t)c->rank * SHM_SLOT, src, size);
    if (c->calls == c->corrupt_call)
        s->data[(size_t)c->rank * SHM_SLOT + offsetof(bs_hdr_t, session)] ^= 0x40;
    if (shm_barrier(s))
        return -1;
    for (int r = 0; r < s->nranks; r++)
        memcpy((char *)dst + (size_t)r * size, s->data + (size_t)r * SHM_SLOT, size);
    return 0;
}

static shm_ag_t *shm_create(int nranks)
{
    size_t len = sizeof(shm_ag_t) + (size_t)nranks * SHM_SLOT;
    shm_ag_t *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(s != MAP_FAILED);
    memset(s, 0, len);
    s->nranks = nranks;
    return s;
}

enum { CB_OK, CB_CORRUPT, CB_FAIL };

static void body_callback(int rank, int nranks, void *arg)
{
    shm_ag_t *shm = ((void **)arg)[0];
    int mode = *(int *)((void **)arg)[1];
    cb_ctx_t ctx = {shm, rank, 0, 0, 0};
    bootstrap_params_t p;
    bootstrap_t *bs = NULL;
    uint64_t v = (uint64_t)rank, *all = calloc((size_t)nranks, sizeof(*all));

    memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.nranks = nranks;
    p.allgather = shm_allgather;
    p.allgather_ctx = &ctx;
    p.timeout_sec = BS_TIMEOUT;
    if (mode == CB_CORRUPT && rank == 1)
        ctx.corrupt_call = 2;
    if (mode == CB_FAIL && rank == 1)
        ctx.fail_call = 2;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_OK);
    if (mode == CB_OK) {
        check_allgathers_max(bs, rank, nranks, SHM_SLOT - sizeof(bs_hdr_t));
        ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
        check_job_id(bs, nranks);
    } else if (mode == CB_CORRUPT) {
        /* every rank sees rank 1's contribution with a wrong session */
        ck_assert_int_eq(bootstrap_allgather(bs, &v, all, sizeof(v)), SYMCOLL_ERR_BOOTSTRAP);
    } else if (rank == 1) {
        ck_assert_int_eq(bootstrap_allgather(bs, &v, all, sizeof(v)), SYMCOLL_ERR_BOOTSTRAP);
    }
    bootstrap_destroy(bs);
    free(all);
}

START_TEST(test_callback)
{
    static const int modes[] = {CB_OK, CB_OK, CB_CORRUPT, CB_FAIL};
    static const int sizes[] = {1, 3, 3, 2};
    shm_ag_t *shm = shm_create(sizes[_i]);
    void *arg[2] = {shm, (void *)&modes[_i]};
    ck_assert_int_eq(harness_run(sizes[_i], 1, RUN_TIMEOUT, body_callback, arg), 0);
}
END_TEST

/* ---- the harness itself must report failures ------------------------------ */

static void body_exit3(int rank, int nranks, void *arg)
{
    (void)nranks;
    (void)arg;
    if (rank == 1)
        _exit(3);
    sleep(30); /* killed by the harness */
}

static void body_crash(int rank, int nranks, void *arg)
{
    (void)nranks;
    (void)arg;
    if (rank == 0)
        raise(SIGSEGV);
    sleep(30);
}

static void body_hang(int rank, int nranks, void *arg)
{
    (void)rank;
    (void)nranks;
    (void)arg;
    sleep(30);
}

static void body_check_fails(int rank, int nranks, void *arg)
{
    (void)nranks;
    (void)arg;
    ck_assert_int_eq(rank, 0);
}

START_TEST(test_harness_reports)
{
    double t0 = time_now();
    ck_assert_int_ne(harness_run(2, 1, RUN_TIMEOUT, body_exit3, NULL), 0);
    ck_assert_int_ne(harness_run(2, 1, RUN_TIMEOUT, body_crash, NULL), 0);
    ck_assert_int_ne(harness_run(2, 1, 0.5, body_hang, NULL), 0);
    ck_assert_int_ne(harness_run(2, 1, RUN_TIMEOUT, body_check_fails, NULL), 0);
    /* the failing rank ended the run: the sleeping ones were killed, not waited for */
    ck_assert(time_now() - t0 < 20);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *bootstrap_suite(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("tcp");

    tcase_set_timeout(tc, 40);
    tcase_add_loop_test(tc, test_tcp_allgather, 0, (int)SC_ARRAY_SIZE(tcp_sizes));
    tcase_add_test(tc, test_tcp_no_cookie);
    tcase_add_test(tc, test_tcp_hostname);
    tcase_add_loop_test(tc, test_mesh, 0, (int)SC_ARRAY_SIZE(mesh_sizes));
    tcase_add_loop_test(tc, test_mesh_abort, 0, (int)SC_ARRAY_SIZE(abort_sizes));
    tcase_add_test(tc, test_bad_addr);
    tcase_add_test(tc, test_deadline_and_abort);
    tcase_add_test(tc, test_never_arrives);
    tcase_add_test(tc, test_rank0_dies);
    tcase_add_test(tc, test_quick_destroy);
    tcase_add_test(tc, test_fd_limit);
    tcase_add_test(tc, test_host_leaders);
    tcase_add_test(tc, test_leader_dies);
    suite_add_tcase(s, tc);

    tc = tcase_create("callback");
    tcase_set_timeout(tc, 40);
    tcase_add_loop_test(tc, test_callback, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("harness");
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_harness_reports);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(bootstrap_suite());
}
