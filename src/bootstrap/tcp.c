/* Built-in TCP rendezvous: rank 0 listens on SYMCOLL_ADDR, every other rank connects
 * (retrying until the deadline), and each side proves to the other that it knows the
 * job's secret (challenge-response, see bs_int.h). Rank 0 is only the address book:
 * each rank tells it where it listens and hears back where its mesh partners listen
 * (O(log n) addresses), then both close the connection and the mesh (mesh.c) carries
 * the collectives. */
#define _GNU_SOURCE /* accept4, struct ucred, MSG_CMSG_CLOEXEC */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* Pause between connection attempts while rank 0 is not listening yet (ms). */
#define BS_RETRY_MS 20
/* Descriptors rank 0 keeps free beyond the rendezvous's and the mesh's own (logs, the
 * other layers' first ones). */
#define BS_FD_SPARE 64

/* Descriptors open in this process now (0 if /proc cannot tell). */
static int bs_fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* Rank 0 holds a connection to every other rank until the address book is out: room
 * for them under RLIMIT_NOFILE, whose soft limit is often 1024. Raises the soft limit as
 * far as needed (up to the hard one), or says at once why it cannot: otherwise accept
 * fails with EMFILE somewhere past a thousand ranks. */
static symcoll_status_t bs_fd_room(int nranks)
{
    long need = (long)bs_fds_open() + nranks + 2L * bs_mesh_rounds(nranks) + BS_FD_SPARE;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)need)
        return SYMCOLL_OK;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need) {
        log_error("bootstrap: rank 0 of the TCP rendezvous holds a connection to each of the "
                  "%d ranks until it has sent the address book, and needs %ld descriptors; "
                  "the hard limit is %llu (ulimit -Hn): raise it, or start the job under a "
                  "PMIx launcher (mpirun, srun), where nothing goes through rank 0",
                  nranks, need, (unsigned long long)rl.rlim_max);
        return SYMCOLL_ERR_SYSTEM;
    }
    log_debug("bootstrap: raising the soft limit of descriptors from %llu to %ld",
              (unsigned long long)rl.rlim_cur, need);
    rl.rlim_cur = (rlim_t)need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        log_error("bootstrap: rank 0 needs %ld descriptors for %d ranks; setrlimit: %s", need,
                  nranks, strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    return SYMCOLL_OK;
}

/* Split "host:port" or "[v6addr]:port" into its parts. */
static symcoll_status_t bs_parse_addr(const char *addr, char *host, size_t hlen, char *port,
                                      size_t plen)
{
    const char *colon, *h = addr;
    size_t n;
    char *end;
    long p;

    if (!addr || !*addr) {
        log_error("bootstrap: SYMCOLL_ADDR is not set: the built-in bootstrap needs rank 0's "
                  "host:port (or run under symcoll_run)");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    colon = strrchr(addr, ':');
    if (!colon)
        goto bad;
    n = (size_t)(colon - addr);
    if (addr[0] == '[') {
        if (n < 2 || addr[n - 1] != ']')
            goto bad;
        h = addr + 1;
        n -= 2;
    }
    if (n == 0 || n >= hlen)
        goto bad;
    memcpy(host, h, n);
    host[n] = 0;
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p <= 0 || p > 65535)
        goto bad;
    snprintf(port, plen, "%ld", p);
    return SYMCOLL_OK;
bad:
    log_error("bootstrap: SYMCOLL_ADDR '%s' is not host:port", addr);
    return SYMCOLL_ERR_INVALID_PARAM;
}

static symcoll_status_t bs_resolve(const char *addr, struct addrinfo **res_p)
{
    char host[256], port[16];
    struct addrinfo hints, *res = NULL;
    symcoll_status_t status;
    int r;

    status = bs_parse_addr(addr, host, sizeof(host), port, sizeof(port));
    if (status != SYMCOLL_OK)
        return status;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    r = getaddrinfo(host, port, &hints, &res);
    if (r) {
        log_error("bootstrap: cannot resolve '%s': %s", host, gai_strerror(r));
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    *res_p = res;
    return SYMCOLL_OK;
}

int bs_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

/* Bind to the address SYMCOLL_ADDR names, so a job on 127.0.0.1 is not reachable
 * from the network; only if that address is not on this host (a name resolving to
 * an external address behind NAT), fall back to the wildcard address. */
static symcoll_status_t bs_listen(const char *addr, int *fd_p)
{
    struct addrinfo *res = NULL;
    symcoll_status_t status;
    int fd = -1, one = 1, err = 0;
    unsigned short port = 0;
    int family = AF_INET;

    status = bs_resolve(addr, &res);
    if (status != SYMCOLL_OK)
        return status;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (!bind(fd, ai->ai_addr, ai->ai_addrlen))
            break;
        err = errno;
        family = ai->ai_family;
        port = family == AF_INET6 ? ((struct sockaddr_in6 *)ai->ai_addr)->sin6_port
                                  : ((struct sockaddr_in *)ai->ai_addr)->sin_port;
        bs_close(&fd);
    }
    if (fd < 0 && err == EADDRNOTAVAIL) {
        struct sockaddr_storage ss;
        socklen_t sl;
        memset(&ss, 0, sizeof(ss));
        if (family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            s6->sin6_family = AF_INET6;
            s6->sin6_addr = in6addr_any;
            s6->sin6_port = port;
            sl = sizeof(*s6);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            s4->sin_family = AF_INET;
            s4->sin_addr.s_addr = htonl(INADDR_ANY);
            s4->sin_port = port;
            sl = sizeof(*s4);
        }
        log_info("bootstrap: %s is not an address of this host; listening on all addresses",
                 addr);
        fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (bind(fd, (struct sockaddr *)&ss, sl)) {
                err = errno;
                bs_close(&fd);
            }
        } else {
            err = errno;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        log_error("bootstrap: rank 0 cannot listen on %s: %s", addr, strerror(err));
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (listen(fd, SOMAXCONN)) {
        log_error("bootstrap: listen on %s failed: %s", addr, strerror(errno));
        close(fd);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    *fd_p = fd;
    return SYMCOLL_OK;
}

/* What rank 0 reads from a joiner before judging it: HELLO, then AUTH. */
#define BS_JOIN_LEN (2 * sizeof(bs_hdr_t) + sizeof(bs_hello_t) + BS_MAC_LEN)

/* A header of the rendezvous as the joiner must send it (the session is not known to
 * it yet and is not checked). */
static bool bs_join_hdr_ok(const bs_hdr_t *h, uint16_t type, uint32_t rank, uint64_t len)
{
    return h->magic == BS_MAGIC && h->version == BS_VERSION && h->type == type &&
           h->rank == rank && h->nfds == 0 && h->seq == 0 && h->len == len;
}

/* What rank 0 learns in the rendezvous: per rank, its welcome (proof filled in by the
 * judge) and the address where it listens for its mesh partners. */
typedef struct bs_book {
    bs_welcome_t *welcomes;
    bs_addr_t *addrs;
} bs_book_t;

/* Judge a joiner's HELLO and AUTH against the challenge it got: the rank it proved to
 * be, or -1 (logged at info level: anyone may connect). ctx: the book. */
static int bs_hello_judge(bootstrap_t *bs, const void *msg, const uint8_t *n0, const char *from,
                          void *ctx)
{
    bs_book_t *book = ctx;
    const unsigned char *p = msg;
    uint8_t proof[BS_MAC_LEN], want[BS_MAC_LEN];
    bs_hdr_t h, ah;
    bs_hello_t hello;
    int r;

    memcpy(&h, p, sizeof(h));
    p += sizeof(h);
    memcpy(&hello, p, sizeof(hello));
    p += sizeof(hello);
    memcpy(&ah, p, sizeof(ah));
    p += sizeof(ah);
    memcpy(proof, p, sizeof(proof));
    r = (int)h.rank;
    if (h.rank == 0 || h.rank >= (uint32_t)bs->nranks) {
        log_info("bootstrap: connection from %s claims rank %u of %d; dropped", from, h.rank,
                 bs->nranks);
        return -1;
    }
    if (!bs_join_hdr_ok(&h, BS_MSG_HELLO, h.rank, sizeof(hello)) ||
        !bs_join_hdr_ok(&ah, BS_MSG_AUTH, h.rank, BS_MAC_LEN)) {
        log_info("bootstrap: connection from %s claiming rank %d sent a malformed hello or "
                 "answer; dropped",
                 from, r);
        return -1;
    }
    if (hello.nranks != (uint32_t)bs->nranks) {
        log_info("bootstrap: connection from %s: rank %d believes the job has %u ranks, "
                 "rank 0 has %d; dropped",
                 from, r, hello.nranks, bs->nranks);
        return -1;
    }
    bs_proof(bs, false, n0, hello.nonce, h.rank, want);
    if (!bs_ct_equal(proof, want, sizeof(want))) {
        log_info("bootstrap: connection from %s claiming rank %d did not prove that it knows "
                 "the job's secret (%s); dropped",
                 from, r,
                 bs->secret_len ? "its SYMCOLL_COOKIE differs, or it has none"
                                : "it has a SYMCOLL_COOKIE, rank 0 has none");
        return -1;
    }
    if (bs->peer_fds[r] >= 0) {
        log_error("bootstrap: rank %d connected a second time (from %s); dropped%s", r, from,
                  bs->secret_len ? ": two processes were given the same rank"
                                 : ": without SYMCOLL_COOKIE, whoever connects first gets "
                                   "the rank");
        return -1;
    }
    if ((hello.listen.family != AF_INET && hello.listen.family != AF_INET6) ||
        hello.listen.port == 0) {
        log_info("bootstrap: rank %d (from %s) sent a malformed mesh address; dropped", r,
                 from);
        return -1;
    }
    book->addrs[r] = hello.listen;
    bs_proof(bs, true, n0, hello.nonce, h.rank, book->welcomes[r].proof);
    return r;
}

/* Rank > 0: connect to rank 0, retrying while it is not listening yet. */
static symcoll_status_t bs_tcp_dial(const char *addr, const deadline_t *dl, int *fd_p)
{
    struct addrinfo *res = NULL;
    symcoll_status_t status;
    int last_err = 0;

    status = bs_resolve(addr, &res);
    if (status != SYMCOLL_OK)
        return status;
    for (;;) {
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int err = 0;
            socklen_t el = sizeof(err);
            if (fd < 0) {
                last_err = errno;
                continue;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
                last_err = errno;
                close(fd);
                continue;
            }
            status = bs_poll_one(fd, POLLOUT, dl);
            if (status != SYMCOLL_OK) {
                close(fd);
                goto out;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
                last_err = err ? err : errno;
                close(fd);
                continue;
            }
            bs_tune(fd);
            *fd_p = fd;
            status = SYMCOLL_OK;
            goto out;
        }
        status = deadline_check(dl);
        if (status != SYMCOLL_OK)
            break;
        poll(NULL, 0, BS_RETRY_MS);
    }
out:
    if (status == SYMCOLL_ERR_TIMED_OUT)
        log_error("bootstrap: timed out connecting to rank 0 at %s (last error: %s)", addr,
                  last_err ? strerror(last_err) : "none");
    freeaddrinfo(res);
    return status;
}

symcoll_status_t bs_tcp_listen_any(bool loopback, int *fd_p, unsigned *port_p)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    socklen_t sl;
    int fd = -1, zero = 0;

    /* every address: one IPv6 socket that takes IPv4 too, or IPv4 alone without IPv6 */
    if (!loopback) {
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)))
            bs_close(&fd);
        if (fd >= 0) {
            memset(&ss, 0, sizeof(ss));
            s6->sin6_family = AF_INET6;
            s6->sin6_addr = in6addr_any;
            if (bind(fd, (struct sockaddr *)s6, sizeof(*s6)))
                bs_close(&fd);
        }
    }
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            goto fail;
        memset(&ss, 0, sizeof(ss));
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
        if (bind(fd, (struct sockaddr *)s4, sizeof(*s4)))
            goto fail;
    }
    sl = sizeof(ss);
    if (listen(fd, SOMAXCONN) || getsockname(fd, (struct sockaddr *)&ss, &sl))
        goto fail;
    *port_p = ntohs(ss.ss_family == AF_INET6 ? s6->sin6_port : s4->sin_port);
    *fd_p = fd;
    return SYMCOLL_OK;
fail:
    log_error("bootstrap: cannot listen on a port of its own: %s", strerror(errno));
    bs_close(&fd);
    return SYMCOLL_ERR_BOOTSTRAP;
}

/* Rank 0 did not get every rank: tell those that joined why, in a proven welcome,
 * best effort within a short deadline of its own (its own deadline may be over). */
static void bs_tcp_give_up(bootstrap_t *bs, bs_book_t *book, symcoll_status_t why)
{
    bs_xfer_t *x = calloc((size_t)bs->nranks, sizeof(*x));
    deadline_t dl = deadline_make(0.5, NULL);
    uint32_t missing = 0;
    int nx = 0;

    if (!x)
        return;
    for (int r = 1; r < bs->nranks; r++)
        missing += bs->peer_fds[r] < 0;
    for (int r = 1; r < bs->nranks; r++) {
        if (bs->peer_fds[r] < 0)
            continue;
        book->welcomes[r].job_id = 0;
        book->welcomes[r].gave_up = (int32_t)why;
        book->welcomes[r].missing = missing;
        x[nx].fd = bs->peer_fds[r];
        x[nx].peer = r;
        x[nx].send = true;
        bs_hdr_fill(bs, &x[nx].shdr, BS_MSG_WELCOME, 0, sizeof(bs_welcome_t), 0);
        x[nx].sbuf = &book->welcomes[r];
        nx++;
    }
    /* one at a time: a joiner gone since must not keep the others from their answer */
    for (int i = 0; i < nx; i++)
        (void)bs_xfer_run(bs, &x[i], 1, &dl);
    free(x);
}

/* CPU time of the calling thread, s (rank 0's rendezvous cost, for the stats) */
static double bs_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rank 0's side of the rendezvous on a listening socket, which it closes; then the
 * mesh. */
static symcoll_status_t bs_tcp_serve(bootstrap_t *bs, int lfd, const deadline_t *dl)
{
    int n = bs->nranks - 1, K = bs_mesh_rounds(bs->nranks), mlfd = -1;
    double cpu0;
    bs_book_t book = {calloc((size_t)bs->nranks, sizeof(bs_welcome_t)),
                      calloc((size_t)bs->nranks, sizeof(bs_addr_t))};
    bs_addr_t *peers = calloc((size_t)bs->nranks * (size_t)K, sizeof(bs_addr_t));
    bs_xfer_t *x = calloc((size_t)n, sizeof(*x));
    bs_acceptor_t acceptor = {.type = BS_MSG_HELLO,
                              .hello_len = sizeof(bs_hello_t),
                              .msg_len = BS_JOIN_LEN,
                              .challenge = true,
                              .tcp = true,
                              .admit = bs_tune,
                              .judge = bs_hello_judge,
                              .ctx = &book,
                              .who = "rank(s)"};
    symcoll_status_t status;

    bs->peer_fds = malloc((size_t)bs->nranks * sizeof(int));
    if (!bs->peer_fds || !x || !book.welcomes || !book.addrs || !peers) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (int r = 0; r < bs->nranks; r++)
        bs->peer_fds[r] = -1;
    /* rank 0's mesh listener sits on the address of its rendezvous listener */
    status = bs_mesh_listen(lfd, &mlfd, &book.addrs[0]);
    if (status != SYMCOLL_OK)
        goto out;
    cpu0 = bs_thread_cpu();
    acceptor.slots = bs->peer_fds;
    status = bs_accept_hellos(bs, lfd, &acceptor, n, dl);
    /* nobody else may join: stop listening at once */
    bs_close(&lfd);
    if (status != SYMCOLL_OK) {
        bs_tcp_give_up(bs, &book, status);
        goto out;
    }
    for (int r = 1; r < bs->nranks; r++) {
        bs_xfer_t *xi = &x[r - 1];
        book.welcomes[r].job_id = bs->job_id;
        memcpy(book.welcomes[r].name_seed, bs->name_seed, sizeof(bs->name_seed));
        xi->fd = bs->peer_fds[r];
        xi->peer = r;
        xi->send = true;
        bs_hdr_fill(bs, &xi->shdr, BS_MSG_WELCOME, 0, sizeof(bs_welcome_t), 0);
        xi->sbuf = &book.welcomes[r];
    }
    status = bs_xfer_run(bs, x, n, dl);
    if (status != SYMCOLL_OK)
        goto out;
    /* every rank hears where the ranks it sends to listen; rank 0's own address is the
     * one that rank reached it at */
    for (int r = 0; r < bs->nranks; r++) {
        for (int k = 0; k < K; k++) {
            int to = (int)((r - (1L << k) % bs->nranks + bs->nranks) % bs->nranks);
            bs_addr_t *a = &peers[(size_t)r * (size_t)K + (size_t)k];
            *a = book.addrs[to];
            if (to == 0 && r != 0) {
                status = bs_sock_addr(bs->peer_fds[r], a);
                if (status != SYMCOLL_OK)
                    goto out;
                a->port = book.addrs[0].port;
            }
        }
        if (r == 0)
            continue;
        memset(&x[r - 1], 0, sizeof(x[r - 1]));
        x[r - 1].fd = bs->peer_fds[r];
        x[r - 1].peer = r;
        x[r - 1].send = true;
        bs_hdr_fill(bs, &x[r - 1].shdr, BS_MSG_PEERS, 0, (size_t)K * sizeof(bs_addr_t), 0);
        x[r - 1].sbuf = &peers[(size_t)r * (size_t)K];
    }
    status = bs_xfer_run(bs, x, n, dl);
    if (status != SYMCOLL_OK)
        goto out;
    /* the address book is out: the rendezvous connections are done with */
    for (int r = 1; r < bs->nranks; r++)
        bs_close(&bs->peer_fds[r]);
    bs->stats.rendezvous_cpu_s = bs_thread_cpu() - cpu0;
    bs->stats.rendezvous_bytes = bs->stats.tcp_bytes_sent + bs->stats.tcp_bytes_recv;
    status = bs_mesh_connect(bs, mlfd, peers, dl);
    mlfd = -1;
out:
    bs_close(&lfd);
    bs_close(&mlfd);
    free(x);
    free(peers);
    if (book.welcomes)
        bs_wipe(book.welcomes, (size_t)bs->nranks * sizeof(bs_welcome_t));
    free(book.welcomes);
    free(book.addrs);
    return status;
}

/* Rank > 0: say hello, answer rank 0's challenge, and check rank 0's proof before
 * anything else of its welcome is used. */
static symcoll_status_t bs_tcp_join(bootstrap_t *bs, const char *addr, const deadline_t *dl)
{
    uint8_t n0[BS_NONCE_LEN], proof[BS_MAC_LEN], want[BS_MAC_LEN];
    int K = bs_mesh_rounds(bs->nranks), mlfd = -1;
    bs_addr_t peers[32];
    bs_hello_t hello;
    bs_welcome_t welcome;
    symcoll_status_t status;
    bs_xfer_t xi;

    memset(&hello, 0, sizeof(hello));
    hello.nranks = (uint32_t)bs->nranks;
    status = bs_random_bytes(hello.nonce, sizeof(hello.nonce));
    if (status != SYMCOLL_OK)
        return status;
    status = bs_tcp_dial(addr, dl, &bs->root_fd);
    if (status != SYMCOLL_OK)
        return status;
    /* listen for the mesh partners on the interface that reaches rank 0 */
    status = bs_mesh_listen(bs->root_fd, &mlfd, &hello.listen);
    if (status != SYMCOLL_OK)
        goto out;
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = 0;
    xi.send = true;
    bs_hdr_fill(bs, &xi.shdr, BS_MSG_HELLO, 0, sizeof(hello), 0);
    xi.sbuf = &hello;
    xi.recv = true;
    xi.rtype = BS_MSG_CHALLENGE;
    xi.rlen = sizeof(n0);
    xi.rbuf = n0;
    xi.any_session = true;
    status = bs_xfer_run(bs, &xi, 1, dl);
    if (status != SYMCOLL_OK)
        goto out;

    bs_proof(bs, false, n0, hello.nonce, (uint32_t)bs->rank, proof);
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = 0;
    xi.send = true;
    bs_hdr_fill(bs, &xi.shdr, BS_MSG_AUTH, 0, sizeof(proof), 0);
    xi.sbuf = proof;
    xi.recv = true;
    xi.rtype = BS_MSG_WELCOME;
    xi.rlen = sizeof(welcome);
    xi.rbuf = &welcome;
    xi.any_session = true;
    status = bs_xfer_run(bs, &xi, 1, dl);
    if (status != SYMCOLL_OK && xi.rhdr.magic == BS_MAGIC && xi.rhdr.type == BS_MSG_REJECT) {
        log_error("bootstrap: rank 0 at %s dropped rank %d: its SYMCOLL_COOKIE differs from "
                  "this rank's (or one of them has none), or another process joined as rank "
                  "%d first",
                  addr, bs->rank, bs->rank);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (status == SYMCOLL_ERR_PEER_FAILED) {
        log_error("bootstrap: rank 0 at %s closed the connection before it welcomed rank "
                  "%d: it died, or it is not a symcoll rank 0",
                  addr, bs->rank);
        goto out;
    }
    if (status != SYMCOLL_OK)
        goto out;
    bs_proof(bs, true, n0, hello.nonce, (uint32_t)bs->rank, want);
    if (!bs_ct_equal(welcome.proof, want, sizeof(want))) {
        log_error("bootstrap: the listener at %s did not prove that it knows the job's "
                  "secret: it is not this job's rank 0, or its SYMCOLL_COOKIE differs; "
                  "refused",
                  addr);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (welcome.job_id == 0 && welcome.gave_up < 0 && welcome.gave_up > SYMCOLL_ERR_LAST) {
        log_error("bootstrap: rank 0 at %s gave up the rendezvous (%s): %u rank(s) never "
                  "joined",
                  addr, symcoll_status_string((symcoll_status_t)welcome.gave_up),
                  welcome.missing);
        status = (symcoll_status_t)welcome.gave_up;
        goto out;
    }
    if (welcome.job_id == 0 || xi.rhdr.session != welcome.job_id) {
        log_error("bootstrap: rank 0 sent a malformed welcome");
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    bs->job_id = welcome.job_id;
    memcpy(bs->name_seed, welcome.name_seed, sizeof(bs->name_seed));

    /* where the ranks this one sends to listen; then rank 0 is done with us */
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = 0;
    xi.recv = true;
    xi.rtype = BS_MSG_PEERS;
    xi.rlen = (size_t)K * sizeof(bs_addr_t);
    xi.rbuf = peers;
    status = bs_xfer_run(bs, &xi, 1, dl);
    if (status != SYMCOLL_OK)
        goto out;
    bs_close(&bs->root_fd);
    bs->stats.rendezvous_bytes = bs->stats.tcp_bytes_sent + bs->stats.tcp_bytes_recv;
    status = bs_mesh_connect(bs, mlfd, peers, dl);
    mlfd = -1;
out:
    bs_close(&mlfd);
    return status;
}

symcoll_status_t bs_tcp_connect(bootstrap_t *bs, const char *addr, const deadline_t *dl)
{
    symcoll_status_t status;
    int lfd = -1;

    if (bs->rank != 0)
        return bs_tcp_join(bs, addr, dl);
    /* before listening: joiners that find nobody keep trying until their deadline */
    status = bs_fd_room(bs->nranks);
    if (status != SYMCOLL_OK)
        return status;
    status = bs_listen(addr, &lfd);
    return status == SYMCOLL_OK ? bs_tcp_serve(bs, lfd, dl) : status;
}
