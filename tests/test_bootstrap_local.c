/* Tests of the bootstrap's node-local descriptor channel (descriptor passing on one and
 * two simulated nodes, foreign users, connections and names refused, bad arguments) and
 * of the communicator created over it. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <poll.h>
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
#include <unistd.h>

#include "bootstrap/bs_int.h"
#include "bootstrap_testlib.h"
#include "harness.h"
#include "core/core.h"

/* ---- node-local descriptor channel --------------------------------------- */

static int memfd_with(long value)
{
    int fd = memfd_create("bs-test", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &value, sizeof(value), 0), (ssize_t)sizeof(value));
    return fd;
}

static long memfd_value(int fd)
{
    long v = -1;
    if (pread(fd, &v, sizeof(v), 0) != (ssize_t)sizeof(v))
        harness_fail("pread from a received descriptor failed: %s", strerror(errno));
    return v;
}

/* Open the local channel among the ranks listed, then pass two memfds per rank and
 * check every value through the received descriptors. */
static void local_exchange(bootstrap_t *bs, int lrank, int lsize, const int *lranks)
{
    int fds[2], *all = malloc(sizeof(int) * 2 * (size_t)lsize);
    int *data = malloc(sizeof(int) * (size_t)lsize), me = lranks[lrank];
    enum { BIG = 600 * 1024 };
    char *big = malloc(BIG), *bigall = malloc((size_t)BIG * (size_t)lsize);

    ck_assert_int_eq(bootstrap_local_init(bs, lrank, lsize, lranks), SYMCOLL_OK);
    fds[0] = memfd_with(me);
    fds[1] = memfd_with(1000L * me + 1);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, fds, 2, &me, sizeof(me), all, data),
                     SYMCOLL_OK);
    for (int i = 0; i < lsize; i++) {
        ck_assert_int_eq(data[i], lranks[i]);
        ck_assert_int_eq(memfd_value(all[2 * i]), lranks[i]);
        ck_assert_int_eq(memfd_value(all[2 * i + 1]), 1000L * lranks[i] + 1);
        /* own slot holds copies, not the originals */
        ck_assert(all[2 * i] != fds[0] && all[2 * i + 1] != fds[1]);
    }
    /* the descriptors name the same files: write into the next rank's memfd, read
     * what the previous rank wrote into ours */
    {
        int next = (lrank + 1) % lsize, prev = (lrank + lsize - 1) % lsize;
        long v = 7000L + me, got = -1;
        ck_assert_int_eq(pwrite(all[2 * next], &v, sizeof(v), 64), (ssize_t)sizeof(v));
        ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
        ck_assert_int_eq(pread(fds[0], &got, sizeof(got), 64), (ssize_t)sizeof(got));
        ck_assert_int_eq(got, 7000L + lranks[prev]);
    }
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    for (int i = 0; i < 2 * lsize; i++)
        close(all[i]);
    close(fds[0]);
    close(fds[1]);
    /* data larger than a socket buffer (partial sends) with a descriptor on its first
     * byte; the sequence number moves on */
    memset(big, me, BIG);
    fds[0] = memfd_with(-me);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, fds, 1, big, BIG, all, bigall),
                     SYMCOLL_OK);
    for (int i = 0; i < lsize; i++) {
        ck_assert_int_eq(memfd_value(all[i]), -lranks[i]);
        close(all[i]);
        for (size_t k = 0; k < BIG; k++)
            if (bigall[(size_t)i * BIG + k] != (char)lranks[i])
                harness_fail("local data of local rank %d is wrong at byte %zu", i, k);
    }
    close(fds[0]);
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    free(all);
    free(data);
    free(big);
    free(bigall);
}

static void body_local(int rank, int nranks, void *arg)
{
    int fds0 = harness_count_fds(), *lranks = malloc(sizeof(int) * (size_t)nranks);
    bootstrap_t *bs;
    (void)arg;

    for (int i = 0; i < nranks; i++)
        lranks[i] = i;
    bs = env_bootstrap();
    local_exchange(bs, rank, nranks, lranks);
    /* the global channel still works alongside */
    check_job_id(bs, nranks);
    bootstrap_destroy(bs);
    expect_fds(fds0);
    free(lranks);
}

RANKS_TEST(test_local_fd_passing, 4, 1, body_local)

/* Two simulated nodes: the node map comes from SYMCOLL_HOST_ID through the global
 * allgather, and each node's channel holds exactly that node's ranks. */
static void body_two_nodes(int rank, int nranks, void *arg)
{
    char id[64] = {0}, *ids = calloc((size_t)nranks, sizeof(id));
    int *lranks = malloc(sizeof(int) * (size_t)nranks), lsize = 0, lrank = -1;
    bootstrap_t *bs = env_bootstrap();
    (void)arg;

    snprintf(id, sizeof(id), "%s", getenv("SYMCOLL_HOST_ID"));
    ck_assert_int_eq(bootstrap_allgather(bs, id, ids, sizeof(id)), SYMCOLL_OK);
    for (int r = 0; r < nranks; r++) {
        if (strcmp(ids + (size_t)r * sizeof(id), id))
            continue;
        if (r == rank)
            lrank = lsize;
        lranks[lsize++] = r;
    }
    for (int i = 0; i < lsize; i++)
        ck_assert_int_eq(harness_node_of(lranks[i], nranks, 2),
                         harness_node_of(rank, nranks, 2));
    ck_assert_int_lt(lsize, nranks);
    local_exchange(bs, lrank, lsize, lranks);
    /* the job stays whole until every node is done (see bootstrap_local_init) */
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
    free(ids);
    free(lranks);
}

RANKS_TEST(test_local_two_nodes, 5, 2, body_two_nodes)

/* 12 ranks on one node: each holds sockets to its 6 partners l +- 1, 2, 4, 8 (mod 12)
 * only, not to the 11 others, and an all-gather of 24 descriptors a rank, more than one
 * message carries once forwarded (4 ranks' worth in the last round), delivers every
 * descriptor to every rank. */
static void body_local_partners(int rank, int nranks, void *arg)
{
    enum { NFD = 24 };
    int lranks[12], fds[NFD], *all = malloc(sizeof(int) * NFD * 12), data[12], open_socks = 0;
    int fds0 = harness_count_fds();
    bootstrap_t *bs;
    (void)arg;

    ck_assert_int_eq(nranks, 12);
    for (int i = 0; i < nranks; i++)
        lranks[i] = i;
    bs = env_bootstrap();
    ck_assert_int_eq(bootstrap_local_init(bs, rank, nranks, lranks), SYMCOLL_OK);
    for (int i = 0; i < nranks; i++) {
        int d = (i - rank + nranks) % nranks;
        bool partner = d == 1 || d == 2 || d == 4 || d == 8 || d == 11 || d == 10;
        if (bs->local_fds[i] >= 0)
            open_socks++;
        if ((bs->local_fds[i] >= 0) != partner)
            harness_fail("rank %d: socket to local rank %d %s", rank, i,
                         partner ? "missing" : "not expected");
    }
    ck_assert_int_eq(open_socks, 6);
    for (int k = 0; k < NFD; k++)
        fds[k] = memfd_with(100L * rank + k);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, fds, NFD, &rank, sizeof(rank), all, data),
                     SYMCOLL_OK);
    for (int i = 0; i < nranks; i++) {
        ck_assert_int_eq(data[i], i);
        for (int k = 0; k < NFD; k++) {
            if (memfd_value(all[i * NFD + k]) != 100L * i + k)
                harness_fail("rank %d: descriptor %d of local rank %d reads %ld", rank, k, i,
                             memfd_value(all[i * NFD + k]));
            close(all[i * NFD + k]);
        }
    }
    for (int k = 0; k < NFD; k++)
        close(fds[k]);
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
    expect_fds(fds0);
    free(all);
}

RANKS_TEST(test_local_partners, 12, 1, body_local_partners)

/* Another user can neither join a node's channel nor pose as a rank's listener. */
static int become_nobody(void)
{
    struct passwd *pw = getpwnam("nobody");
    uid_t uid = pw ? pw->pw_uid : 65534;
    return setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0 ? 0 : -1;
}

static void body_foreign_uid(int rank, int nranks, void *arg)
{
    int lranks[2] = {0, 1}, pfd[2];
    bootstrap_t *bs;
    struct sockaddr_un sa;
    socklen_t sl;
    pid_t pid = -1;
    (void)nranks;
    (void)arg;

    bs = env_bootstrap();
    sl = bs_local_name(bs, 0, &sa);
    if (geteuid() != 0) {
        /* not root: cannot act as another user; nothing to test */
        bootstrap_destroy(bs);
        return;
    }
    if (rank == 0) {
        char c = 0;
        ck_assert_int_eq(pipe(pfd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            /* squat rank 0's name as another user */
            int fd = socket(AF_UNIX, SOCK_STREAM, 0);
            c = 1;
            if (become_nobody() || fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) ||
                listen(fd, 8))
                c = 0;
            if (write(pfd[1], &c, 1) != 1)
                _exit(2);
            sleep(30);
            _exit(0);
        }
        ck_assert_int_eq(read(pfd[0], &c, 1), 1);
        ck_assert_int_eq(c, 1);
    }
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    /* rank 0 cannot take its name, rank 1 finds a listener of another uid */
    ck_assert_int_eq(bootstrap_local_init(bs, rank, 2, lranks), SYMCOLL_ERR_BOOTSTRAP);
    /* the squatter lives until rank 1 has met it */
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    if (rank == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(pfd[0]);
        close(pfd[1]);
    }
    bootstrap_destroy(bs);
}

RANKS_TEST(test_local_foreign_uid, 2, 1, body_foreign_uid)

/* Rank 1 of another uid connects to rank 0's listener first: dropped on SO_PEERCRED
 * even though it knows the name and the session; then the real rank 1 joins. */
static void body_foreign_connect(int rank, int nranks, void *arg)
{
    int lranks[2] = {0, 1};
    bootstrap_t *bs = env_bootstrap();
    (void)nranks;
    (void)arg;

    if (rank == 1 && geteuid() == 0) {
        pid_t pid = fork();
        int status = -1;
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            struct sockaddr_un sa;
            socklen_t sl;
            bs_hdr_t h;
            int fd = -1, ok = 0;
            double end = time_now() + BS_TIMEOUT;
            sl = bs_local_name(bs, 0, &sa);
            bs_hdr_fill(bs, &h, BS_MSG_LOCAL_HELLO, 0, 0, 0);
            if (become_nobody())
                _exit(3);
            while (time_now() < end) {
                fd = socket(AF_UNIX, SOCK_STREAM, 0);
                if (!connect(fd, (struct sockaddr *)&sa, sl))
                    break;
                close(fd);
                fd = -1;
                usleep(5000);
            }
            /* rank 0 may have dropped us before the hello: a failed send is fine */
            if (fd >= 0) {
                (void)!send(fd, &h, sizeof(h), MSG_NOSIGNAL);
                ok = raw_dropped(fd, BS_TIMEOUT);
            }
            _exit(ok ? 0 : 1);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "the foreign connection was not dropped (status 0x%x)", status);
    }
    ck_assert_int_eq(bootstrap_local_init(bs, rank, 2, lranks), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
}

RANKS_TEST(test_local_foreign_connect, 2, 1, body_foreign_connect)

/* Another process holds the names a rank would have used before (the job id and the
 * rank, both public) before the channel opens: the names in use now are unguessable,
 * so the channel opens all the same. The holder runs as another user where possible. */
static void body_stolen_name(int rank, int nranks, void *arg)
{
    int lranks[2] = {0, 1}, pfd[2];
    bootstrap_t *bs = env_bootstrap();
    pid_t pid = -1;
    char c = 0;
    (void)arg;

    if (rank == 0) {
        ck_assert_int_eq(pipe(pfd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            c = 1;
            if (geteuid() == 0 && become_nobody())
                c = 0;
            for (int r = 0; r < nranks; r++) {
                struct sockaddr_un sa;
                int fd = socket(AF_UNIX, SOCK_STREAM, 0), n;
                memset(&sa, 0, sizeof(sa));
                sa.sun_family = AF_UNIX;
                n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "symcoll-%016llx-%d",
                             (unsigned long long)bootstrap_job_id(bs), r);
                if (fd < 0 ||
                    bind(fd, (struct sockaddr *)&sa,
                         (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ||
                    listen(fd, 8))
                    c = 0;
            }
            if (write(pfd[1], &c, 1) != 1)
                _exit(2);
            sleep(30);
            _exit(0);
        }
        ck_assert_int_eq(read(pfd[0], &c, 1), 1);
        ck_assert_int_eq(c, 1);
    }
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    local_exchange(bs, rank, 2, lranks);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    if (rank == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(pfd[0]);
        close(pfd[1]);
    }
    bootstrap_destroy(bs);
}

RANKS_TEST(test_local_stolen_name, 2, 1, body_stolen_name)

START_TEST(test_local_bad_args)
{
    bootstrap_params_t p;
    bootstrap_t *bs = NULL;
    int lr[3] = {0, 0, 1}, fds[1] = {-1}, all[1];
    memset(&p, 0, sizeof(p));
    p.rank = 0;
    p.nranks = 1;
    p.timeout_sec = 5;
    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_local_init(bs, 0, 2, lr), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_local_init(bs, 1, 1, lr), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_local_init(bs, 0, 1, NULL), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, fds, 1, NULL, 0, all, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, fds, -1, NULL, 0, all, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_local_fd_allgather(bs, NULL, 0, NULL, 4, NULL, NULL),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(bootstrap_allgather(bs, NULL, all, 4), SYMCOLL_ERR_INVALID_PARAM);
    /* rejected calls changed nothing */
    ck_assert_int_eq(bootstrap_local_init(bs, 0, 1, lr), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_local_barrier(bs), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    bootstrap_destroy(bs);
}
END_TEST

/* ---- through the communicator -------------------------------------------- */

static void body_comm(int rank, int nranks, void *arg)
{
    int fds0 = harness_count_fds(), r = -1, n = -1;
    symcoll_comm_h comm;
    (void)arg;
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_rank(comm, &r), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_size(comm, &n), SYMCOLL_OK);
    ck_assert_int_eq(r, rank);
    ck_assert_int_eq(n, nranks);
    ck_assert_int_eq(bootstrap_local_barrier(comm->bootstrap), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    expect_fds(fds0);
}

RANKS_TEST(test_comm_create, 3, 1, body_comm)

/* ---- suite -------------------------------------------------------------- */

static Suite *bootstrap_suite(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("local");

    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_local_fd_passing);
    tcase_add_test(tc, test_local_two_nodes);
    tcase_add_test(tc, test_local_partners);
    tcase_add_test(tc, test_local_foreign_uid);
    tcase_add_test(tc, test_local_foreign_connect);
    tcase_add_test(tc, test_local_stolen_name);
    tcase_add_test(tc, test_local_bad_args);
    tcase_add_test(tc, test_comm_create);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(bootstrap_suite());
}
