/* Tests of the bootstrap: allgather and barrier over real processes (built-in TCP and
 * a callback), rejection of bogus or malformed peers, the node-local descriptor
 * channel, and descriptor hygiene. */
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
#include "harness.h"
#include "core/core.h"

#define RUN_TIMEOUT 25.0 /* harness deadline; Check's is above it */
#define BS_TIMEOUT 15.0  /* bootstrap deadline inside the ranks */

/* ---- helpers ----------------------------------------------------------- */

static bootstrap_params_t env_params(double timeout)
{
    bootstrap_params_t p;
    memset(&p, 0, sizeof(p));
    p.rank = atoi(getenv("SYMCOLL_RANK"));
    p.nranks = atoi(getenv("SYMCOLL_NRANKS"));
    p.addr = getenv("SYMCOLL_ADDR");
    p.cookie = getenv("SYMCOLL_COOKIE");
    p.timeout_sec = timeout;
    return p;
}

static bootstrap_t *env_bootstrap(void)
{
    bootstrap_params_t p = env_params(BS_TIMEOUT);
    log_set_rank(p.rank);
    bootstrap_t *bs = NULL;
    symcoll_status_t st = bootstrap_create(&p, &bs);
    if (st != SYMCOLL_OK)
        harness_fail("bootstrap_create: %s", symcoll_status_string(st));
    return bs;
}

static unsigned char pattern(int rank, size_t i, size_t size)
{
    return (unsigned char)(rank * 131 + i * 7 + size * 3 + 1);
}

/* Descriptors must come back to what they were before a create/destroy cycle. */
static void expect_fds(int fds0)
{
    int now = harness_count_fds();
    if (now != fds0)
        harness_fail("descriptors leaked: %d open before, %d after", fds0, now);
}

/* A test that runs a body on n ranks over `nodes` simulated nodes. */
#define RANKS_TEST(_name, _n, _nodes, _body)                                                   \
    START_TEST(_name)                                                                          \
    {                                                                                          \
        ck_assert_int_eq(harness_run((_n), (_nodes), RUN_TIMEOUT, (_body), NULL), 0);          \
    }                                                                                          \
    END_TEST

/* Allgather of several sizes up to max; every rank checks every other rank's bytes. */
static void check_allgathers_max(bootstrap_t *bs, int rank, int nranks, size_t max)
{
    /* the largest exceeds the socket buffers: partial reads and writes */
    static const size_t sizes[] = {0, 1, 13, 4096 + 7, 3000, (1 << 20) + 3};
    for (size_t s = 0; s < SC_ARRAY_SIZE(sizes); s++) {
        size_t size = sizes[s];
        unsigned char *src, *dst;
        if (size > max)
            continue;
        src = malloc(size + 1);
        dst = malloc(size * (size_t)nranks + 1);
        symcoll_status_t st;
        ck_assert(src && dst);
        for (size_t i = 0; i < size; i++)
            src[i] = pattern(rank, i, size);
        memset(dst, 0xee, size * (size_t)nranks);
        st = bootstrap_allgather(bs, src, dst, size);
        ck_assert_int_eq(st, SYMCOLL_OK);
        for (int r = 0; r < nranks; r++)
            for (size_t i = 0; i < size; i++)
                if (dst[(size_t)r * size + i] != pattern(r, i, size))
                    harness_fail("size %zu: byte %zu of rank %d is %u, expected %u", size, i, r,
                                 dst[(size_t)r * size + i], pattern(r, i, size));
        free(src);
        free(dst);
    }
}

static void check_allgathers(bootstrap_t *bs, int rank, int nranks)
{
    check_allgathers_max(bs, rank, nranks, SIZE_MAX);
}

static void check_job_id(bootstrap_t *bs, int nranks)
{
    uint64_t id = bootstrap_job_id(bs), *ids = calloc((size_t)nranks, sizeof(*ids));
    ck_assert(ids);
    ck_assert(id != 0);
    ck_assert_int_eq(bootstrap_allgather(bs, &id, ids, sizeof(id)), SYMCOLL_OK);
    for (int r = 0; r < nranks; r++)
        ck_assert(ids[r] == id);
    free(ids);
}

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

/* Bytes of rank 0's challenge, which every connection gets. */
#define CHALLENGE_LEN (sizeof(bs_hdr_t) + BS_NONCE_LEN)

/* Reads what arrives until the peer closes or `timeout` passes; returns the bytes kept
 * (at most cap) and sets *eof when the peer closed. */
static size_t read_all(int fd, unsigned char *buf, size_t cap, double timeout, int *eof)
{
    double end = time_now() + timeout;
    size_t n = 0;
    *eof = 0;
    while (time_now() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        unsigned char tmp[512];
        ssize_t r;
        if (poll(&p, 1, 50) <= 0)
            continue;
        r = recv(fd, tmp, sizeof(tmp), 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) {
            *eof = 1;
            break;
        }
        if (r < 0)
            continue;
        for (ssize_t i = 0; i < r && n < cap; i++)
            buf[n++] = tmp[i];
    }
    return n;
}

/* True once the other side has closed the connection (it dropped us) having sent at
 * most its challenge. */
static int raw_dropped(int fd, double timeout)
{
    unsigned char buf[1024];
    int eof;
    size_t n = read_all(fd, buf, sizeof(buf), timeout, &eof);
    return eof && n <= CHALLENGE_LEN; /* more: rank 0 answered a bogus peer */
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
        ck_assert_int_eq(send(bs->root_fd, &h, sizeof(h) - 5, MSG_NOSIGNAL),
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
    bootstrap_destroy(bs);
    free(ids);
    free(lranks);
}

RANKS_TEST(test_local_two_nodes, 5, 2, body_two_nodes)

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
    tcase_add_test(tc, test_bad_addr);
    tcase_add_test(tc, test_deadline_and_abort);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_bogus_connections);
    tcase_add_test(tc, test_bogus_no_cookie);
    tcase_add_test(tc, test_stranger_first);
    tcase_add_test(tc, test_fake_rank0);
    tcase_add_loop_test(tc, test_break_established, BREAK_SESSION, BREAK_TRUNCATE + 1);
    suite_add_tcase(s, tc);

    tc = tcase_create("callback");
    tcase_set_timeout(tc, 40);
    tcase_add_loop_test(tc, test_callback, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("local");
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_local_fd_passing);
    tcase_add_test(tc, test_local_two_nodes);
    tcase_add_test(tc, test_local_foreign_uid);
    tcase_add_test(tc, test_local_foreign_connect);
    tcase_add_test(tc, test_local_stolen_name);
    tcase_add_test(tc, test_local_bad_args);
    tcase_add_test(tc, test_comm_create);
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
