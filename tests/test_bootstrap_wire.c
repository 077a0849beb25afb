/* In-process tests of the bootstrap's wire layer: SHA-256 and HMAC-SHA256 against the
 * published test vectors, the message parser fuzzed over socket pairs (every changed
 * header byte must be rejected, nothing may leak), and the listener's acceptor driven
 * with real, bogus and duplicate clients. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/bs_int.h"
#include "harness.h"

/* ---- SHA-256 and HMAC-SHA256 ------------------------------------------- */

static void expect_hex(const uint8_t *d, const char *hex)
{
    char got[2 * BS_SHA256_LEN + 1];
    for (int i = 0; i < BS_SHA256_LEN; i++)
        snprintf(got + 2 * i, 3, "%02x", d[i]);
    ck_assert_str_eq(got, hex);
}

/* FIPS 180-4 examples: one block, the empty message, and the 448-bit message whose
 * padding needs a second block; fed whole and split at every byte. */
START_TEST(test_sha256_vectors)
{
    static const char *const vec[][2] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
    uint8_t d[BS_SHA256_LEN];

    for (size_t v = 0; v < SC_ARRAY_SIZE(vec); v++) {
        size_t len = strlen(vec[v][0]);
        bs_sha256(vec[v][0], len, d);
        expect_hex(d, vec[v][1]);
        for (size_t cut = 0; cut <= len; cut++) {
            bs_sha256_t s;
            bs_sha256_init(&s);
            bs_sha256_update(&s, vec[v][0], cut);
            bs_sha256_update(&s, vec[v][0] + cut, len - cut);
            bs_sha256_final(&s, d);
            expect_hex(d, vec[v][1]);
        }
    }
}
END_TEST

/* RFC 4231 test cases 1 and 2; the constant-time comparison. */
START_TEST(test_hmac_vectors)
{
    uint8_t key1[20], d[BS_SHA256_LEN];
    bs_hmac_t m;

    memset(key1, 0x0b, sizeof(key1));
    bs_hmac_init(&m, key1, sizeof(key1));
    bs_hmac_update(&m, "Hi There", 8);
    bs_hmac_final(&m, d);
    expect_hex(d, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    bs_hmac_init(&m, "Jefe", 4);
    bs_hmac_update(&m, "what do ya want ", 16);
    bs_hmac_update(&m, "for nothing?", 12);
    bs_hmac_final(&m, d);
    expect_hex(d, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    ck_assert(bs_ct_equal("abcd", "abcd", 4));
    ck_assert(!bs_ct_equal("abcd", "abce", 4));
    ck_assert(bs_ct_equal("x", "y", 0));
}
END_TEST

/* Each side's proof depends on the secret, the side, both nonces, the rank and the job
 * size; without a secret it is still well defined (an empty key). */
START_TEST(test_proof)
{
    bootstrap_t *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    uint8_t n0[BS_NONCE_LEN], nr[BS_NONCE_LEN], p[BS_MAC_LEN], q[BS_MAC_LEN];

    ck_assert(a && b);
    a->nranks = b->nranks = 4;
    memset(n0, 1, sizeof(n0));
    memset(nr, 2, sizeof(nr));
    memcpy(a->secret, "c0ffee", 6);
    a->secret_len = 6;
    memcpy(b->secret, "c0ffee", 6);
    b->secret_len = 6;
    bs_proof(a, false, n0, nr, 2, p);
    bs_proof(b, false, n0, nr, 2, q);
    ck_assert(!memcmp(p, q, sizeof(p)));
    bs_proof(b, true, n0, nr, 2, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    bs_proof(b, false, nr, n0, 2, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    bs_proof(b, false, n0, nr, 3, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    b->nranks = 5;
    bs_proof(b, false, n0, nr, 2, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    b->nranks = 4;
    b->secret[5] = 'f';
    bs_proof(b, false, n0, nr, 2, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    b->secret_len = 0;
    bs_proof(b, false, n0, nr, 2, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    free(a);
    free(b);
}
END_TEST

/* A mesh proof depends on the secret, the side, the job id, the dialer's nonce, both
 * ranks, the round and the job size, and differs from any rendezvous proof. */
START_TEST(test_mesh_proof)
{
    bootstrap_t *b = calloc(1, sizeof(*b));
    uint8_t nd[BS_NONCE_LEN], p[BS_MAC_LEN], q[BS_MAC_LEN];

    ck_assert_ptr_nonnull(b);
    b->nranks = 5;
    b->job_id = 0x1122334455667788ull;
    memcpy(b->secret, "c0ffee", 6);
    b->secret_len = 6;
    memset(nd, 3, sizeof(nd));
    bs_mesh_proof(b, false, nd, 1, 0, 0, p);
    bs_mesh_proof(b, false, nd, 1, 0, 0, q);
    ck_assert(!memcmp(p, q, sizeof(p)));
    bs_mesh_proof(b, true, nd, 1, 0, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    bs_mesh_proof(b, false, nd, 0, 1, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    bs_mesh_proof(b, false, nd, 1, 0, 1, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    nd[7] ^= 1;
    bs_mesh_proof(b, false, nd, 1, 0, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    nd[7] ^= 1;
    b->job_id ^= (uint64_t)1 << 40;
    bs_mesh_proof(b, false, nd, 1, 0, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    b->job_id ^= (uint64_t)1 << 40;
    b->nranks = 6;
    bs_mesh_proof(b, false, nd, 1, 0, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    b->nranks = 5;
    b->secret[0] = 'd';
    bs_mesh_proof(b, false, nd, 1, 0, 0, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    bs_proof(b, false, nd, nd, 1, q);
    ck_assert(memcmp(p, q, sizeof(p)));
    free(b);
}
END_TEST

/* ---- the message parser ------------------------------------------------- */

/* A bootstrap object as rank `rank` of `nranks` would hold it, without sockets. */
static bootstrap_t *fake_bs(int rank, int nranks, uint64_t session)
{
    bootstrap_t *bs = calloc(1, sizeof(*bs));
    ck_assert_ptr_nonnull(bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->job_id = session;
    bs->timeout_sec = 5;
    bs->root_fd = -1;
    return bs;
}

static int memfd_with(long v)
{
    int fd = memfd_create("wire", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &v, sizeof(v), 0), (ssize_t)sizeof(v));
    return fd;
}

/* A transfer that expects one local data message of len bytes and nfds descriptors
 * from rank 1 with sequence number 5. */
static bs_xfer_t recv_xfer(int fd, void *buf, size_t len, int *fds, int nfds)
{
    bs_xfer_t x;
    memset(&x, 0, sizeof(x));
    x.fd = fd;
    x.peer = 1;
    x.recv = true;
    x.rtype = BS_MSG_LOCAL_DATA;
    x.rseq = 5;
    x.rlen = len;
    x.rbuf = buf;
    x.rfds = fds;
    x.rnfds = nfds;
    return x;
}

/* Writes raw bytes, with descriptors attached to the first byte when nfds > 0. */
static void raw_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } ctl;
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh;

    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds) {
        struct cmsghdr *c;
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ck_assert_int_eq(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

/* Sends header h, 16 payload bytes and (if send_fds) two memfds, closes the sending
 * end, and lets the receiver parse it expecting exactly that well-formed message
 * from rank 1. Returns the receiver's status; got_fds gets what was accepted. */
static symcoll_status_t parse_one(bootstrap_t *rx, const bs_hdr_t *h, int send_fds,
                                  int *got_fds)
{
    int sv[2], fds[2] = {memfd_with(11), memfd_with(22)};
    unsigned char msg[sizeof(*h) + 16], buf[16];
    bs_xfer_t x;
    deadline_t dl = deadline_make(2.0, NULL);
    symcoll_status_t st;

    memcpy(msg, h, sizeof(*h));
    memset(msg + sizeof(*h), 0x5a, 16);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    raw_send(sv[0], msg, sizeof(msg), fds, send_fds ? 2 : 0);
    close(sv[0]);
    close(fds[0]);
    close(fds[1]);
    x = recv_xfer(sv[1], buf, sizeof(buf), got_fds, 2);
    st = bs_xfer_run(rx, &x, 1, &dl);
    close(sv[1]);
    if (st == SYMCOLL_OK)
        for (int i = 0; i < 16; i++)
            ck_assert_int_eq(buf[i], 0x5a);
    return st;
}

static bs_hdr_t good_hdr(uint64_t session)
{
    bs_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = BS_MAGIC;
    h.version = BS_VERSION;
    h.type = BS_MSG_LOCAL_DATA;
    h.session = session;
    h.rank = 1;
    h.nfds = 2;
    h.seq = 5;
    h.len = 16;
    return h;
}

START_TEST(test_parse_good)
{
    bootstrap_t *rx = fake_bs(0, 2, 0xabcdef);
    int got[2] = {-1, -1}, fds0 = harness_count_fds();
    bs_hdr_t h = good_hdr(0xabcdef);
    long v = 0;

    ck_assert_int_eq(parse_one(rx, &h, 1, got), SYMCOLL_OK);
    ck_assert_int_eq(pread(got[0], &v, sizeof(v), 0), (ssize_t)sizeof(v));
    ck_assert_int_eq(v, 11);
    ck_assert_int_eq(pread(got[1], &v, sizeof(v), 0), (ssize_t)sizeof(v));
    ck_assert_int_eq(v, 22);
    close(got[0]);
    close(got[1]);
    ck_assert_int_eq(harness_count_fds(), fds0);
    free(rx);
}
END_TEST

/* Every change of a header byte is caught; no descriptor survives a rejection. */
START_TEST(test_parse_fuzz)
{
    bootstrap_t *rx = fake_bs(0, 2, 0xabcdef);
    int fds0 = harness_count_fds();
    unsigned seed = 0x5eed;

    for (int it = 0; it < 400; it++) {
        bs_hdr_t h = good_hdr(0xabcdef);
        unsigned char *b = (unsigned char *)&h;
        int got[2] = {-1, -1}, nflip = 1 + it % 3;
        symcoll_status_t st;

        for (int k = 0; k < nflip; k++) {
            seed = seed * 1103515245u + 12345u;
            b[(seed >> 8) % sizeof(h)] ^= (unsigned char)(1u + (seed >> 16) % 255u);
        }
        {
            bs_hdr_t g = good_hdr(0xabcdef);
            if (!memcmp(&g, &h, sizeof(h)))
                continue; /* the flips cancelled out */
        }
        st = parse_one(rx, &h, 1, got);
        ck_assert_msg(st != SYMCOLL_OK, "iteration %d: a changed header was accepted", it);
        ck_assert_int_eq(got[0], -1);
        ck_assert_int_eq(got[1], -1);
    }
    ck_assert_int_eq(harness_count_fds(), fds0);
    free(rx);
}
END_TEST

/* A message cut anywhere is an error, not a hang, and leaks nothing. */
START_TEST(test_parse_truncated)
{
    bootstrap_t *rx = fake_bs(0, 2, 7);
    int fds0 = harness_count_fds();
    bs_hdr_t h = good_hdr(7);
    unsigned char msg[sizeof(h) + 16];

    h.nfds = 0;
    memcpy(msg, &h, sizeof(h));
    memset(msg + sizeof(h), 1, 16);
    for (size_t cut = 0; cut < sizeof(msg); cut++) {
        int sv[2], got[2] = {-1, -1};
        unsigned char buf[16];
        bs_xfer_t x;
        deadline_t dl = deadline_make(2.0, NULL);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(write(sv[0], msg, cut), (ssize_t)cut);
        close(sv[0]);
        x = recv_xfer(sv[1], buf, sizeof(buf), got, 0);
        ck_assert_int_eq(bs_xfer_run(rx, &x, 1, &dl), SYMCOLL_ERR_PEER_FAILED);
        close(sv[1]);
    }
    ck_assert_int_eq(harness_count_fds(), fds0);
    free(rx);
}
END_TEST

/* A peer that says nothing costs the deadline, then a timeout; an abort ends it at
 * once. */
START_TEST(test_parse_silent)
{
    static _Atomic int aborted = 0;
    bootstrap_t *rx = fake_bs(0, 2, 7);
    int sv[2];
    unsigned char buf[4];
    bs_xfer_t x;
    deadline_t dl = deadline_make(0.3, &aborted);

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    x = recv_xfer(sv[1], buf, sizeof(buf), NULL, 0);
    ck_assert_int_eq(bs_xfer_run(rx, &x, 1, &dl), SYMCOLL_ERR_TIMED_OUT);
    aborted = 1;
    dl = deadline_make(60, &aborted);
    x.recv = true;
    ck_assert_int_eq(bs_xfer_run(rx, &x, 1, &dl), SYMCOLL_ERR_ABORTED);
    close(sv[0]);
    close(sv[1]);
    free(rx);
}
END_TEST

/* ---- rank 0's acceptor --------------------------------------------------- */

static int judge_rank(bootstrap_t *bs, const void *msg, const uint8_t *nonce, const char *from,
                      void *ctx)
{
    bs_hdr_t h;
    (void)nonce;
    (void)from;
    (void)ctx;
    memcpy(&h, msg, sizeof(h));
    if (h.session != bs->job_id || h.rank == 0 || h.rank >= (uint32_t)bs->nranks)
        return -1;
    return (int)h.rank;
}

static int client(int port, const bs_hdr_t *h, size_t len)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (len)
        ck_assert_int_eq(send(fd, h, len, MSG_NOSIGNAL), (ssize_t)len);
    return fd;
}

static int closed_by_peer(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    char c;
    if (poll(&p, 1, 2000) <= 0)
        return 0;
    return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Real ranks 1 and 2 get their slots; a duplicate of rank 1, a wrong session, a bad
 * magic, a truncated hello and a silent connection are all dropped, and more
 * connections than the pending table holds do not lock the real ranks out. */
START_TEST(test_acceptor)
{
    bootstrap_t *bs = fake_bs(0, 3, 99);
    int slots[3] = {-1, -1, -1}, lfd, port, fds0 = harness_count_fds();
    int c1, c1dup, cbad, cmagic, ctrunc, c2, flood[70];
    bs_acceptor_t a = {.type = BS_MSG_LOCAL_HELLO,
                       .msg_len = sizeof(bs_hdr_t),
                       .judge = judge_rank,
                       .slots = slots,
                       .who = "rank(s)"};
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    bs_hdr_t h;
    deadline_t dl = deadline_make(10, NULL);

    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(lfd, 256), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    port = ntohs(sa.sin_port);

    bs_hdr_fill(bs, &h, BS_MSG_LOCAL_HELLO, 0, 0, 0);
    for (int i = 0; i < 70; i++)
        flood[i] = client(port, &h, 0);
    h.rank = 1;
    c1 = client(port, &h, sizeof(h));
    h.session = 98;
    cbad = client(port, &h, sizeof(h));
    h.session = 99;
    h.magic = 0;
    cmagic = client(port, &h, sizeof(h));
    h.magic = BS_MAGIC;
    ctrunc = client(port, &h, 7);
    shutdown(ctrunc, SHUT_WR);
    h.rank = 2;
    c2 = client(port, &h, sizeof(h));

    ck_assert_int_eq(bs_accept_hellos(bs, lfd, &a, 2, &dl), SYMCOLL_OK);
    ck_assert_int_ge(slots[1], 0);
    ck_assert_int_ge(slots[2], 0);
    ck_assert(closed_by_peer(cbad));
    ck_assert(closed_by_peer(cmagic));
    ck_assert(closed_by_peer(ctrunc));
    /* pending connections left when the slots were full are let go */
    for (int i = 0; i < 70; i++)
        ck_assert(closed_by_peer(flood[i]));

    /* a second round: rank 1 is taken, its duplicate is dropped, the deadline ends it */
    h.rank = 1;
    c1dup = client(port, &h, sizeof(h));
    dl = deadline_make(0.5, NULL);
    {
        int slots2[3] = {-1, slots[1], -1};
        a.slots = slots2;
        ck_assert_int_eq(bs_accept_hellos(bs, lfd, &a, 1, &dl), SYMCOLL_ERR_TIMED_OUT);
        ck_assert_int_eq(slots2[2], -1);
    }
    ck_assert(closed_by_peer(c1dup));

    for (int i = 0; i < 70; i++)
        close(flood[i]);
    close(c1);
    close(c1dup);
    close(cbad);
    close(cmagic);
    close(ctrunc);
    close(c2);
    close(slots[1]);
    close(slots[2]);
    close(lfd);
    ck_assert_int_eq(harness_count_fds(), fds0);
    free(bs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bootstrap_wire");
    TCase *tc = tcase_create("wire");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_sha256_vectors);
    tcase_add_test(tc, test_hmac_vectors);
    tcase_add_test(tc, test_proof);
    tcase_add_test(tc, test_mesh_proof);
    tcase_add_test(tc, test_parse_good);
    tcase_add_test(tc, test_parse_fuzz);
    tcase_add_test(tc, test_parse_truncated);
    tcase_add_test(tc, test_parse_silent);
    tcase_add_test(tc, test_acceptor);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
