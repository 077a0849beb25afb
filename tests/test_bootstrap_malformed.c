/* Tests of the bootstrap against hostile peers: bogus connections to rank 0 (with and
 * without a cookie), strangers and impostors, and malformed messages on established
 * connections; none may pass for a rank, leak the secret or hang a real one. */
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

/* ---- bogus connections to rank 0 ------------------------------------------ */

static int raw_connect(void)
{
    const char *addr = getenv("SYMCOLL_ADDR");
    struct sockaddr_in sa;
    double end = time_now() + BS_TIMEOUT;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (time_now() < end) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
            return fd;
        close(fd);
        usleep(10000);
    }
    harness_fail("rank 0 never listened");
}

/* Whether bytes seen on the wire contain the secret, spelled as SYMCOLL_COOKIE spells
 * it or as a 64-bit number of either byte order. */
static int has_secret(const unsigned char *buf, size_t n, const char *cookie)
{
    uint64_t v = strtoull(cookie, NULL, 16), w = __builtin_bswap64(v);
    return memmem(buf, n, cookie, strlen(cookie)) || memmem(buf, n, &v, sizeof(v)) ||
           memmem(buf, n, &w, sizeof(w));
}

/* HELLO and AUTH as a joiner sends them. */
typedef struct hello_msg {
    bs_hdr_t hdr;
    bs_hello_t hello;
    bs_hdr_t ahdr;
    uint8_t proof[BS_MAC_LEN];
} hello_msg_t;

/* A join message of rank `rank` whose proof answers challenge n0 with secret key. */
static hello_msg_t good_hello(int rank, int nranks, const char *key, const uint8_t *n0)
{
    static const uint8_t zero[BS_NONCE_LEN];
    bootstrap_t *k = calloc(1, sizeof(*k));
    hello_msg_t m;
    ck_assert_ptr_nonnull(k);
    memset(&m, 0, sizeof(m));
    m.hdr.magic = BS_MAGIC;
    m.hdr.version = BS_VERSION;
    m.hdr.type = BS_MSG_HELLO;
    m.hdr.rank = (uint32_t)rank;
    m.hdr.len = sizeof(bs_hello_t);
    m.hello.nranks = (uint32_t)nranks;
    memset(m.hello.nonce, 0x77, sizeof(m.hello.nonce));
    m.ahdr = m.hdr;
    m.ahdr.type = BS_MSG_AUTH;
    m.ahdr.len = BS_MAC_LEN;
    k->nranks = nranks;
    k->secret_len = strlen(key);
    memcpy(k->secret, key, k->secret_len);
    bs_proof(k, false, n0 ? n0 : zero, m.hello.nonce, (uint32_t)rank, m.proof);
    free(k);
    return m;
}

static void attack(const void *msg, size_t len, int shut, const char *what)
{
    int fd = raw_connect();
    ck_assert_int_eq(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
    if (shut)
        shutdown(fd, SHUT_WR);
    if (!raw_dropped(fd, BS_TIMEOUT))
        harness_fail("rank 0 did not drop the %s connection", what);
    close(fd);
}

/* A stranger that speaks the protocol: reads its challenge and answers it with a proof
 * made with `key` instead of the job's secret. */
static void attack_answering(int rank, int nranks, const char *key, const char *what)
{
    int fd = raw_connect(), eof;
    unsigned char ch[CHALLENGE_LEN];
    size_t n = read_all(fd, ch, sizeof(ch), 0.5, &eof);
    hello_msg_t m;
    ck_assert_int_eq(n, CHALLENGE_LEN);
    m = good_hello(rank, nranks, key, ch + sizeof(bs_hdr_t));
    ck_assert_int_eq(send(fd, &m, sizeof(m), MSG_NOSIGNAL), (ssize_t)sizeof(m));
    if (!raw_dropped(fd, BS_TIMEOUT))
        harness_fail("rank 0 did not drop the %s connection", what);
    close(fd);
}

/* The last rank first plays an attacker with every kind of bad hello, then joins as
 * itself; rank 0 must drop each bad connection and still finish with everyone. */
static void body_bogus(int rank, int nranks, void *arg)
{
    int fds0 = harness_count_fds(), idle = -1;
    bootstrap_t *bs;
    (void)arg;

    if (rank == nranks - 1) {
        const char *key = getenv("SYMCOLL_COOKIE");
        hello_msg_t m;
        unsigned seed = 12345;

        /* a connection that never speaks must not stop the job */
        idle = raw_connect();
        attack_answering(rank, nranks, "123abc", "wrong secret");
        attack_answering(rank, nranks, "", "no secret");
        /* the right secret but a stale challenge: a replayed answer */
        m = good_hello(rank, nranks, key, NULL);
        attack(&m, sizeof(m), 0, "stale answer");
        attack(&m, 10, 1, "truncated header");
        attack(&m, sizeof(m.hdr) + sizeof(m.hello) - 3, 1, "truncated hello");
        attack(&m, sizeof(m) - 3, 1, "truncated answer");
        m.hdr.magic = 0x41414141;
        attack(&m, sizeof(m), 0, "bad magic");
        m = good_hello(rank, nranks, key, NULL);
        m.hdr.version = 1;
        attack(&m, sizeof(m), 0, "old version");
        m = good_hello(rank, nranks, key, NULL);
        m.hdr.type = BS_MSG_DATA;
        attack(&m, sizeof(m), 0, "wrong type");
        m = good_hello(rank, nranks, key, NULL);
        m.ahdr.type = BS_MSG_HELLO;
        attack(&m, sizeof(m), 0, "wrong answer type");
        m = good_hello(99, nranks, key, NULL);
        attack(&m, sizeof(m), 0, "rank out of range");
        m = good_hello(0, nranks, key, NULL);
        attack(&m, sizeof(m), 0, "rank 0 claim");
        m = good_hello(rank, nranks, key, NULL);
        m.hdr.len = (uint64_t)1 << 40;
        attack(&m, sizeof(m.hdr), 0, "huge length");
        m = good_hello(rank, nranks + 1, key, NULL);
        attack(&m, sizeof(m), 0, "wrong size");
        /* a few random mutations (the proof answers no challenge rank 0 sent, so no
         * change can make it right) and random truncations */
        for (int k = 0; k < 12; k++) {
            hello_msg_t f = good_hello(rank, nranks, key, NULL);
            unsigned char *b = (unsigned char *)&f;
            size_t len = sizeof(f);
            seed = seed * 1103515245u + 12345u;
            b[(seed >> 8) % sizeof(f)] ^= (unsigned char)(1u + (seed >> 20) % 255u);
            if (k % 3 == 2)
                len = (seed >> 4) % sizeof(f);
            attack(&f, len, 1, "fuzzed");
        }
    }
    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    bootstrap_destroy(bs);
    if (idle >= 0) {
        /* once everyone joined rank 0 stopped listening and let go of it */
        if (!raw_dropped(idle, BS_TIMEOUT))
            harness_fail("the idle connection was not closed");
        close(idle);
    }
    expect_fds(fds0);
}

RANKS_TEST(test_bogus_connections, 3, 1, body_bogus)

/* Without SYMCOLL_COOKIE at rank 0, a joiner that proves a secret is dropped. */
static void body_bogus_no_cookie(int rank, int nranks, void *arg)
{
    bootstrap_t *bs;
    (void)arg;
    unsetenv("SYMCOLL_COOKIE");
    if (rank == nranks - 1)
        attack_answering(rank, nranks, "1234", "unexpected secret");
    bs = env_bootstrap();
    check_allgathers(bs, rank, nranks);
    bootstrap_destroy(bs);
}

RANKS_TEST(test_bogus_no_cookie, 2, 1, body_bogus_no_cookie)

/* ---- strangers and impostors --------------------------------------------- */

/* A listener on an ephemeral port of 127.0.0.1; addr gets "127.0.0.1:PORT". */
static int listen_any(char *addr, size_t len)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(addr, len, "127.0.0.1:%d", ntohs(sa.sin_port));
    return fd;
}

static int accept_within(int lfd, double timeout)
{
    struct pollfd p = {lfd, POLLIN, 0};
    if (poll(&p, 1, (int)(timeout * 1000)) <= 0)
        harness_fail("nobody connected to the listener");
    return accept(lfd, NULL, NULL);
}

/* A real rank `rank` of `nranks` ranks with SYMCOLL_COOKIE=cookie, in a child, joins
 * at addr for at most `timeout` s; the child exits 0 iff bootstrap_create failed with
 * want. */
static pid_t start_joiner(const char *addr, int rank, int nranks, const char *cookie,
                          double timeout, symcoll_status_t want)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        bootstrap_params_t p;
        bootstrap_t *bs = NULL;
        memset(&p, 0, sizeof(p));
        p.rank = rank;
        p.nranks = nranks;
        p.addr = addr;
        p.cookie = cookie;
        p.timeout_sec = timeout;
        _exit(bootstrap_create(&p, &bs) == want ? 0 : 1);
    }
    return pid;
}

static void expect_child(pid_t pid, const char *what)
{
    int status = -1;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        harness_fail("%s (status 0x%x)", what, status);
}

/* A listener that says nothing records what a real rank sends it (which holds no
 * secret); the rank fails once the listener hangs up. */
static size_t record_joiner(int rank, int nranks, const char *cookie, unsigned char *buf,
                            size_t cap)
{
    char addr[64];
    int lfd = listen_any(addr, sizeof(addr)), fd, eof;
    pid_t pid = start_joiner(addr, rank, nranks, cookie, 5.0, SYMCOLL_ERR_PEER_FAILED);
    size_t n;

    fd = accept_within(lfd, 5.0);
    ck_assert_int_ge(fd, 0);
    n = read_all(fd, buf, cap, 1.0, &eof);
    close(fd);
    close(lfd);
    expect_child(pid, "a rank joined a silent listener");
    return n;
}

/* Strangers claiming rank k connect before the real rank k: one replays the bytes a
 * real rank k sent to another listener, one runs the library with a wrong secret, one
 * with none. Rank 0 drops each, the real rank k joins, the job works, and nothing a
 * stranger receives holds the secret. */
static void body_stranger_first(int rank, int nranks, void *arg)
{
    (void)arg;
    if (rank == nranks - 1) {
        const char *cookie = getenv("SYMCOLL_COOKIE");
        unsigned char cap[512];
        size_t ncap = record_joiner(rank, nranks, cookie, cap, sizeof(cap));
        int pfd[2];
        char c = 0;
        pid_t replay;
        bootstrap_params_t p = env_params(5.0);
        bootstrap_t *bs = NULL;

        ck_assert_int_gt(ncap, 0);
        ck_assert_int_eq(pipe(pfd), 0);
        replay = fork();
        ck_assert_int_ge(replay, 0);
        if (replay == 0) {
            unsigned char got[4096];
            int fd = raw_connect(), eof;
            size_t n;
            if (send(fd, cap, ncap, MSG_NOSIGNAL) != (ssize_t)ncap ||
                write(pfd[1], "x", 1) != 1)
                _exit(3);
            /* rank 0 lets go of it once the real ranks are in */
            n = read_all(fd, got, sizeof(got), BS_TIMEOUT + 2, &eof);
            _exit(has_secret(got, n, cookie) ? 1 : !eof ? 2 : 0);
        }
        ck_assert_int_eq(read(pfd[0], &c, 1), 1);
        close(pfd[0]);
        close(pfd[1]);
        p.cookie = strcmp(cookie, "5ec2e7") ? "5ec2e7" : "5ec2e8";
        ck_assert_int_ne(bootstrap_create(&p, &bs), SYMCOLL_OK);
        p.cookie = NULL;
        ck_assert_int_ne(bootstrap_create(&p, &bs), SYMCOLL_OK);
        ck_assert_ptr_null(bs);
        bs = env_bootstrap();
        check_allgathers(bs, rank, nranks);
        bootstrap_destroy(bs);
        expect_child(replay, "the replaying stranger got the secret (1) or was kept (2)");
        return;
    }
    {
        bootstrap_t *bs = env_bootstrap();
        check_allgathers(bs, rank, nranks);
        bootstrap_destroy(bs);
    }
}

RANKS_TEST(test_stranger_first, 3, 1, body_stranger_first)

/* A listener that is not the job's rank 0: what a real rank sends it holds no secret,
 * and one that speaks the protocol but does not know the secret is refused, whether it
 * makes its proof with another secret or sends the rank's own answer back. */
START_TEST(test_fake_rank0)
{
    const char *cookie = "5ec2e7c0ffee1234";
    unsigned char buf[512];
    size_t n = record_joiner(1, 2, cookie, buf, sizeof(buf));

    ck_assert_int_gt(n, 0);
    ck_assert_msg(!has_secret(buf, n, cookie), "a silent listener learnt the secret");
    for (int mode = 0; mode < 2; mode++) {
        char addr[64];
        int lfd = listen_any(addr, sizeof(addr)), fd, eof;
        pid_t pid = start_joiner(addr, 1, 2, cookie, 10.0, SYMCOLL_ERR_BOOTSTRAP);
        struct {
            bs_hdr_t hdr;
            uint8_t nonce[BS_NONCE_LEN];
        } ch;
        struct {
            bs_hdr_t hdr;
            bs_welcome_t w;
        } wel;
        hello_msg_t m;
        double t0 = time_now();

        memset(&ch, 0, sizeof(ch));
        ch.hdr.magic = BS_MAGIC;
        ch.hdr.version = BS_VERSION;
        ch.hdr.type = BS_MSG_CHALLENGE;
        ch.hdr.session = 42;
        ch.hdr.len = BS_NONCE_LEN;
        memset(ch.nonce, 0x3c, sizeof(ch.nonce));
        fd = accept_within(lfd, 5.0);
        ck_assert_int_eq(send(fd, &ch, sizeof(ch), MSG_NOSIGNAL), (ssize_t)sizeof(ch));
        ck_assert_int_eq(read_all(fd, (unsigned char *)&m, sizeof(m), 2.0, &eof), sizeof(m));
        ck_assert(!has_secret((unsigned char *)&m, sizeof(m), cookie));
        wel.hdr = ch.hdr;
        wel.hdr.type = BS_MSG_WELCOME;
        wel.hdr.len = sizeof(bs_welcome_t);
        memset(&wel.w, 0, sizeof(wel.w));
        wel.w.job_id = 42;
        if (mode == 0) {
            hello_msg_t forged = good_hello(1, 2, "ba5e", ch.nonce);
            memcpy(wel.w.proof, forged.proof, sizeof(wel.w.proof));
        } else {
            memcpy(wel.w.proof, m.proof, sizeof(wel.w.proof));
        }
        ck_assert_int_eq(send(fd, &wel, sizeof(wel), MSG_NOSIGNAL), (ssize_t)sizeof(wel));
        expect_child(pid, "a rank accepted a fake rank 0");
        ck_assert(time_now() - t0 < 9.0); /* refused, not timed out */
        close(fd);
        close(lfd);
    }
}
END_TEST

/* ---- strangers and impostors on the mesh ---------------------------------- */

#define MESH_KEY "c0ffee5ec2e7"
#define MESH_JOB 0x5e55101d2026abcdull

/* A bootstrap object of rank `rank` of 2 after the rendezvous, without sockets, knowing
 * `key` and the job id `job`. */
static bootstrap_t *mesh_bs(int rank, const char *key, uint64_t job)
{
    bootstrap_t *bs = calloc(1, sizeof(*bs));
    ck_assert_ptr_nonnull(bs);
    bs->rank = rank;
    bs->nranks = 2;
    bs->job_id = job;
    bs->seq = 1;
    bs->timeout_sec = 10;
    bs->root_fd = -1;
    bs->secret_len = strlen(key);
    memcpy(bs->secret, key, bs->secret_len);
    return bs;
}

/* A mesh listener on 127.0.0.1, as a rank that reached rank 0 there makes it. */
static int mesh_listener(bs_addr_t *a)
{
    struct sockaddr_in sa;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), lfd = -1;
    ck_assert_int_ge(s, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(bs_mesh_listen(s, &lfd, a), SYMCOLL_OK);
    close(s);
    return lfd;
}

static int mesh_dial(const bs_addr_t *a)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = a->port;
    memcpy(&sa.sin_addr, a->ip, 4);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

typedef struct mesh_hello_msg {
    bs_hdr_t hdr;
    bs_mesh_hello_t h;
} mesh_hello_msg_t;

/* The hello of `as` dialing rank `to` in `round`, its proof made with as's secret. */
static mesh_hello_msg_t mesh_hello(const bootstrap_t *as, int to, uint32_t round)
{
    mesh_hello_msg_t m;
    memset(&m, 0, sizeof(m));
    bs_hdr_fill(as, &m.hdr, BS_MSG_MESH_HELLO, 0, sizeof(m.h), 0);
    m.h.nranks = (uint32_t)as->nranks;
    m.h.round = round;
    memset(m.h.nonce, 0x5a, sizeof(m.h.nonce));
    bs_mesh_proof(as, false, m.h.nonce, (uint32_t)as->rank, (uint32_t)to, round, m.h.proof);
    return m;
}

/* Rank `rank` of 2 (in a child) connects the mesh on lfd towards `to` and runs an
 * allgather over it; exits 0 iff both end with `want` (the allgather only when the
 * mesh came up). */
static pid_t start_mesh_rank(int rank, int lfd, const bs_addr_t *to, symcoll_status_t want)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        bootstrap_t *bs = mesh_bs(rank, MESH_KEY, MESH_JOB);
        deadline_t dl = deadline_make(8.0, NULL);
        uint64_t v = 100 + (uint64_t)rank, all[2] = {0, 0};
        symcoll_status_t st = bs_mesh_connect(bs, lfd, to, &dl);
        if (st == SYMCOLL_OK)
            st = bs_mesh_allgather(bs, &v, all, sizeof(v), &dl);
        if (st == SYMCOLL_OK && (all[0] != 100 || all[1] != 101))
            _exit(3);
        bootstrap_destroy(bs);
        _exit(st == want ? 0 : 1);
    }
    return pid;
}

/* Strangers reach a mesh listener before the real partner: an idle connection, hellos
 * made with another secret, for another job, for a round or from a rank the listener
 * does not expect, and garbage. Each is dropped; the real partners still connect. With
 * 2 ranks the one round pairs rank 0 and rank 1 both ways: rank 0 dials, rank 1
 * listens. */
START_TEST(test_mesh_strangers)
{
    bs_addr_t a0, a1;
    int l0 = mesh_listener(&a0), l1 = mesh_listener(&a1), fds[7], nf = 0;
    bootstrap_t *wrong_key = mesh_bs(0, "ba5e", MESH_JOB);
    bootstrap_t *wrong_job = mesh_bs(0, MESH_KEY, MESH_JOB ^ 1);
    bootstrap_t *right = mesh_bs(0, MESH_KEY, MESH_JOB), *as1 = mesh_bs(1, MESH_KEY, MESH_JOB);
    mesh_hello_msg_t m[5] = {mesh_hello(wrong_key, 1, 0), mesh_hello(wrong_job, 1, 0),
                             mesh_hello(right, 1, 1), mesh_hello(as1, 1, 0),
                             mesh_hello(right, 1, 0)};
    pid_t p0, p1;

    m[4].hdr.magic = 0x41414141; /* garbage */
    fds[nf++] = mesh_dial(&a1);  /* idle */
    for (int i = 0; i < 5; i++) {
        fds[nf] = mesh_dial(&a1);
        ck_assert_int_eq(send(fds[nf], &m[i], sizeof(m[i]), MSG_NOSIGNAL),
                         (ssize_t)sizeof(m[i]));
        nf++;
    }
    p0 = start_mesh_rank(0, l0, &a1, SYMCOLL_OK);
    p1 = start_mesh_rank(1, l1, &a0, SYMCOLL_OK);
    close(l0);
    close(l1);
    for (int i = 0; i < nf; i++) {
        if (!raw_dropped(fds[i], BS_TIMEOUT))
            harness_fail("stranger %d on the mesh was not dropped", i);
        close(fds[i]);
    }
    expect_child(p0, "rank 0 did not connect the mesh past the strangers");
    expect_child(p1, "rank 1 did not connect the mesh past the strangers");
    free(wrong_key);
    free(wrong_job);
    free(right);
    free(as1);
}
END_TEST

/* A mesh listener that cannot prove the secret is refused by the dialer at once. */
START_TEST(test_mesh_fake_listener)
{
    bs_addr_t a0, af;
    int l0 = mesh_listener(&a0), lf = mesh_listener(&af), fd, eof;
    bootstrap_t *fake = mesh_bs(1, "ba5e", MESH_JOB);
    mesh_hello_msg_t got;
    struct {
        bs_hdr_t hdr;
        uint8_t proof[BS_MAC_LEN];
    } wel;
    double t0 = time_now();
    /* rank 0 of 2 dials its one partner, here a listener with another secret */
    pid_t p0 = start_mesh_rank(0, l0, &af, SYMCOLL_ERR_BOOTSTRAP);

    close(l0);
    fd = accept_within(lf, 5.0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read_all(fd, (unsigned char *)&got, sizeof(got), 2.0, &eof), sizeof(got));
    ck_assert(!has_secret((unsigned char *)&got, sizeof(got), MESH_KEY));
    bs_hdr_fill(fake, &wel.hdr, BS_MSG_MESH_WELCOME, 0, BS_MAC_LEN, 0);
    bs_mesh_proof(fake, true, got.h.nonce, 0, 1, 0, wel.proof);
    ck_assert_int_eq(send(fd, &wel, sizeof(wel), MSG_NOSIGNAL), (ssize_t)sizeof(wel));
    expect_child(p0, "rank 0 accepted a mesh listener without the secret");
    ck_assert(time_now() - t0 < 7.0); /* refused, not timed out */
    close(fd);
    close(lf);
    free(fake);
}
END_TEST

/* ---- malformed messages on established connections ----------------------- */

enum { BREAK_SESSION, BREAK_SIZE, BREAK_TRUNCATE };

/* Rank 1 misbehaves after the rendezvous; rank 0 must report it (and not use the
 * data), rank 1 must see the failure instead of hanging. */
static void body_break(int rank, int nranks, void *arg)
{
    int how = *(int *)arg;
    bootstrap_params_t p = env_params(BS_TIMEOUT);
    bootstrap_t *bs = NULL;
    uint64_t v = 7, out[2] = {0, 0};
    symcoll_status_t st;
    (void)nranks;

    ck_assert_int_eq(bootstrap_create(&p, &bs), SYMCOLL_OK);
    ck_assert_int_eq(bootstrap_barrier(bs), SYMCOLL_OK);
    if (rank == 1 && how == BREAK_TRUNCATE) {
        bs_hdr_t h;
        bs_hdr_fill(bs, &h, BS_MSG_DATA, bs->seq, sizeof(v), 0);
        /* on the connection rank 0 receives from in round 0 */
        ck_assert_int_eq(send(bs->send_fds[0], &h, sizeof(h) - 5, MSG_NOSIGNAL),
                         (ssize_t)sizeof(h) - 5);
        bootstrap_destroy(bs);
        return;
    }
    if (rank == 1 && how == BREAK_SESSION)
        bs->job_id ^= 1;
    st = bootstrap_allgather(bs, &v, out, how == BREAK_SIZE && rank == 1 ? 4 : sizeof(v));
    if (rank == 0) {
        symcoll_status_t want = how == BREAK_SESSION ? SYMCOLL_ERR_BOOTSTRAP
                                : how == BREAK_SIZE  ? SYMCOLL_ERR_MISMATCH
                                                     : SYMCOLL_ERR_PEER_FAILED;
        ck_assert_int_eq(st, want);
        ck_assert(out[1] == 0 || how == BREAK_SIZE);
        /* the channel is out of step now: later calls fail too */
        ck_assert_int_eq(bootstrap_barrier(bs), want);
    } else {
        ck_assert_int_ne(st, SYMCOLL_OK);
    }
    bootstrap_destroy(bs);
}

START_TEST(test_break_established)
{
    int how = _i;
    ck_assert_int_eq(harness_run(2, 1, RUN_TIMEOUT, body_break, &how), 0);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *bootstrap_suite(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("malformed");

    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_bogus_connections);
    tcase_add_test(tc, test_bogus_no_cookie);
    tcase_add_test(tc, test_stranger_first);
    tcase_add_test(tc, test_fake_rank0);
    tcase_add_test(tc, test_mesh_strangers);
    tcase_add_test(tc, test_mesh_fake_listener);
    tcase_add_loop_test(tc, test_break_established, BREAK_SESSION, BREAK_TRUNCATE + 1);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(bootstrap_suite());
}
