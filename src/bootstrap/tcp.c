/* Built-in TCP rendezvous: rank 0 listens on SYMCOLL_ADDR, every other rank connects
 * (retrying until the deadline), and each side proves to the other that it knows the
 * job's secret (challenge-response, see bs_int.h). Rank 0 is only the address book:
 * each rank tells it where it listens and hears back where its mesh partners listen
 * (O(log n) addresses), then both close the connection and the mesh (mesh.c) carries
 * the collectives. */
#define _GNU_SOURCE /* accept4, struct ucred, MSG_CMSG_CLOEXEC */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/epoll.h>
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

/* Rank 0 holds a connection to every rank that dials it until the address book is out:
 * one per host with host leaders, but any rank may dial it itself (its
 * SYMCOLL_RENDEZVOUS_LEADERS=0, a host of its own), so room for one per rank under
 * RLIMIT_NOFILE, whose soft limit is often 1024. Raises the soft limit as far as needed
 * (up to the hard one), or says at once why it cannot: otherwise accept fails with
 * EMFILE somewhere past a thousand ranks. */
static symcoll_status_t bs_fd_room(int nranks)
{
    long need = (long)bs_fds_open() + nranks + 2L * bs_mesh_rounds(nranks) + BS_FD_SPARE;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)need)
        return SYMCOLL_OK;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need) {
        log_error("bootstrap: rank 0 of the TCP rendezvous may hold a connection to each of "
                  "the %d ranks until it has sent the address book, and needs %ld descriptors; "
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

symcoll_status_t bs_resolve_addr(const char *addr, struct addrinfo **res_p)
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

    status = bs_resolve_addr(addr, &res);
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

/* A launcher may hand rank 0 the socket it already listens on (SYMCOLL_LISTEN_FD, set
 * by symcoll_run), so that no other process can take the port between the launcher's
 * choice and rank 0's bind. The descriptor is taken once per process (a further
 * communicator binds the port itself), and only if it is a listening TCP
 * socket on addr's port; otherwise it is left alone and rank 0 binds. Processes that
 * ran between the launcher and us (a wrapper that did not exec, timeout(1)) may hold
 * copies of it: its end (bs_rdv_close) shuts it down for all of them. */
static atomic_bool bs_inherited_taken;

static int bs_take_inherited_listener(const char *addr, int fd)
{
    char host[256], port[16];
    bs_addr_t a;
    int on = 0, fl;
    socklen_t ol = sizeof(on);

    if (fd < 3 || atomic_load(&bs_inherited_taken) ||
        bs_parse_addr(addr, host, sizeof(host), port, sizeof(port)))
        return -1;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) || !on ||
        bs_sock_addr(fd, &a) != SYMCOLL_OK)
        return -1;
    if (!a.family || ntohs(a.port) != strtol(port, NULL, 10) || (fl = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC)) {
        log_info("bootstrap: SYMCOLL_LISTEN_FD %d does not listen on %s; binding it anew", fd,
                 addr);
        return -1;
    }
    if (atomic_exchange(&bs_inherited_taken, true))
        return -1; /* another thread's communicator took it meanwhile */
    log_debug("bootstrap: rank 0 listens on the socket its launcher opened (fd %d)", fd);
    return fd;
}

/* How long a host leader whose deadline passed still waits for rank 0's verdict (rank 0
 * sends it at its own deadline, within 0.5 s: bs_tcp_give_up). */
#define BS_VERDICT_GRACE_SEC 1.0

/* A header of the rendezvous as the joiner must send it (the session is not known to
 * it yet and is not checked). */
static bool bs_join_hdr_ok(const bs_hdr_t *h, uint16_t type, uint32_t rank, uint64_t len)
{
    return h->magic == BS_MAGIC && h->version == BS_VERSION && h->type == type &&
           h->rank == rank && h->nfds == 0 && h->seq == 0 && h->len == len;
}

bool bs_join_verify(const bootstrap_t *bs, const void *msg, const uint8_t *n0, const char *from,
                    int *rank_p, bs_hello_t *hello)
{
    const unsigned char *p = msg;
    uint8_t proof[BS_MAC_LEN], want[BS_MAC_LEN];
    bs_hdr_t h, ah;
    int r;

    memcpy(&h, p, sizeof(h));
    p += sizeof(h);
    memcpy(hello, p, sizeof(*hello));
    p += sizeof(*hello);
    memcpy(&ah, p, sizeof(ah));
    p += sizeof(ah);
    memcpy(proof, p, sizeof(proof));
    r = (int)h.rank;
    if (h.rank == 0 || h.rank >= (uint32_t)bs->nranks) {
        log_info("bootstrap: connection from %s claims rank %u of %d; dropped", from, h.rank,
                 bs->nranks);
        return false;
    }
    if (!bs_join_hdr_ok(&h, BS_MSG_HELLO, h.rank, sizeof(*hello)) ||
        !bs_join_hdr_ok(&ah, BS_MSG_AUTH, h.rank, BS_MAC_LEN)) {
        log_info("bootstrap: connection from %s claiming rank %d sent a malformed hello or "
                 "answer; dropped",
                 from, r);
        return false;
    }
    if (hello->nranks != (uint32_t)bs->nranks) {
        log_info("bootstrap: connection from %s: rank %d believes the job has %u ranks, "
                 "this one %d; dropped",
                 from, r, hello->nranks, bs->nranks);
        return false;
    }
    bs_proof(bs, false, n0, hello->nonce, h.rank, want);
    if (!bs_ct_equal(proof, want, sizeof(want))) {
        log_info("bootstrap: connection from %s claiming rank %d did not prove that it knows "
                 "the job's secret (%s); dropped",
                 from, r,
                 bs->secret_len ? "its SYMCOLL_COOKIE differs, or it has none"
                                : "it has a SYMCOLL_COOKIE, this rank has none");
        return false;
    }
    if ((hello->listen.family != AF_INET && hello->listen.family != AF_INET6) ||
        hello->listen.port == 0) {
        log_info("bootstrap: rank %d (from %s) sent a malformed mesh address; dropped", r,
                 from);
        return false;
    }
    *rank_p = r;
    return true;
}

/* One MEMBER message on the wire. */
#define BS_MEMBER_MSG (sizeof(bs_hdr_t) + sizeof(bs_member_t))
/* MEMBER messages rank 0 reads at once: what a leader sent while rank 0 was busy costs
 * one recv, not one each. */
#define BS_MEMBER_BATCH 64

/* A host leader's stream of MEMBER messages, as rank 0 reads it: the start of a message
 * that has not come in whole. */
typedef struct bs_stream {
    int rank; /* the leader's */
    size_t off;
    unsigned char msg[BS_MEMBER_MSG];
} bs_stream_t;

/* What rank 0 learns in the rendezvous: per rank, its welcome (proof filled in by the
 * judge), the address where it listens for its mesh partners and the connection it came
 * through (its own or its host leader's); per host leader, its stream. */
typedef struct bs_book {
    bs_welcome_t *welcomes;
    bs_addr_t *addrs;
    int *via;             /* rank whose connection brought rank r in; -1: not yet */
    bs_stream_t *leads;   /* nleads host leaders, in the order they proved themselves */
    int nleads, nwatched; /* leads[0..nwatched) are in epfd */
    int epfd;
} bs_book_t;

static int bs_hello_judge(bootstrap_t *bs, const void *msg, const uint8_t *n0, const char *from,
                          void *ctx)
{
    bs_book_t *book = ctx;
    bs_hello_t hello;
    int r;

    if (!bs_join_verify(bs, msg, n0, from, &r, &hello))
        return -1;
    if (book->via[r] >= 0) {
        log_error("bootstrap: rank %d connected a second time (from %s); dropped%s", r, from,
                  bs->secret_len ? ": two processes were given the same rank"
                                 : ": without SYMCOLL_COOKIE, whoever connects first gets "
                                   "the rank");
        return -1;
    }
    book->addrs[r] = hello.listen;
    book->via[r] = r;
    bs_proof(bs, true, n0, hello.nonce, (uint32_t)r, book->welcomes[r].proof);
    if (hello.flags & BS_HELLO_LEADER)
        book->leads[book->nleads++] = (bs_stream_t){.rank = r};
    return r;
}

/* Rank 0 watches its host leaders' streams through one epoll descriptor: a poll over
 * every leader's socket would cost O(hosts) per wake-up. */
static int bs_leads_fill(bootstrap_t *bs, void *ctx, struct pollfd *p)
{
    bs_book_t *book = ctx;

    for (; book->nwatched < book->nleads; book->nwatched++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
                                 .data.u32 = (uint32_t)book->nwatched};
        if (epoll_ctl(book->epfd, EPOLL_CTL_ADD, bs->peer_fds[book->leads[book->nwatched].rank],
                      &ev))
            return -1;
    }
    p->fd = book->epfd;
    p->events = POLLIN;
    return 1;
}

/* One complete MEMBER message from leader s: whether rank 0 took the member (if not,
 * it logs why). */
static bool bs_member_take(bootstrap_t *bs, bs_book_t *book, const bs_stream_t *s,
                           const unsigned char *msg)
{
    bs_member_t m;

    memcpy(&m, msg + sizeof(bs_hdr_t), sizeof(m));
    if (m.rank == 0 || m.rank >= (uint32_t)bs->nranks || m.nranks != (uint32_t)bs->nranks ||
        (m.listen.family != AF_INET && m.listen.family != AF_INET6) || m.listen.port == 0) {
        log_error("bootstrap: host leader rank %d passed on a malformed member (rank %u of "
                  "%u); ignored",
                  s->rank, m.rank, m.nranks);
        return false;
    }
    if (book->via[m.rank] >= 0) {
        log_error("bootstrap: rank %u joined a second time (through host leader rank %d, "
                  "first through rank %d); ignored: two processes were given the same rank",
                  m.rank, s->rank, book->via[m.rank]);
        return false;
    }
    book->addrs[m.rank] = m.listen;
    book->via[m.rank] = s->rank;
    bs->stats.rendezvous_members++;
    return true;
}

/* Read what the ready leaders sent: each MEMBER taken lowers *missing. */
static symcoll_status_t bs_leads_handle(bootstrap_t *bs, void *ctx, const struct pollfd *p,
                                        int n, int *missing)
{
    bs_book_t *book = ctx;
    struct epoll_event ev[64];
    int nev;

    if (n < 1 || !p->revents)
        return SYMCOLL_OK;
    nev = epoll_wait(book->epfd, ev, 64, 0);
    for (int e = 0; e < nev; e++) {
        bs_stream_t *s = &book->leads[ev[e].data.u32];
        int fd = bs->peer_fds[s->rank];
        unsigned char buf[BS_MEMBER_BATCH * BS_MEMBER_MSG];
        for (;;) {
            ssize_t r;
            size_t have, done = 0;
            memcpy(buf, s->msg, s->off);
            r = recv(fd, buf + s->off, sizeof(buf) - s->off, MSG_DONTWAIT);
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                break;
            if (r <= 0) {
                log_error("bootstrap: host leader rank %d closed its connection%s while rank "
                          "0 waited for %d rank(s)",
                          s->rank, r < 0 ? " (error)" : "", *missing);
                return SYMCOLL_ERR_PEER_FAILED;
            }
            bs->stats.tcp_bytes_recv += (uint64_t)r;
            have = s->off + (size_t)r;
            for (; have - done >= BS_MEMBER_MSG; done += BS_MEMBER_MSG) {
                bs_hdr_t h;
                memcpy(&h, buf + done, sizeof(h));
                if (!bs_join_hdr_ok(&h, BS_MSG_MEMBER, (uint32_t)s->rank,
                                    sizeof(bs_member_t))) {
                    log_error("bootstrap: host leader rank %d sent a malformed message (type "
                              "%u) during the rendezvous",
                              s->rank, h.type);
                    return SYMCOLL_ERR_BOOTSTRAP;
                }
                if (bs_member_take(bs, book, s, buf + done))
                    (*missing)--;
            }
            s->off = have - done;
            memcpy(s->msg, buf + done, s->off);
        }
    }
    return SYMCOLL_OK;
}

symcoll_status_t bs_tcp_dial_rank0(const char *addr, const deadline_t *dl, int *fd_p)
{
    struct addrinfo *res = NULL;
    symcoll_status_t status;
    int last_err = 0;

    status = bs_resolve_addr(addr, &res);
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

/* Rank 0 did not get every rank: tell those that joined why (host leaders pass it on),
 * in a proven welcome, best effort within a short deadline of its own (its own deadline
 * may be over). */
static void bs_tcp_give_up(bootstrap_t *bs, bs_book_t *book, symcoll_status_t why)
{
    bs_xfer_t *x = calloc((size_t)bs->nranks, sizeof(*x));
    deadline_t dl = deadline_make(0.5, NULL);
    uint32_t missing = 0;
    int nx = 0;

    if (!x)
        return;
    for (int r = 1; r < bs->nranks; r++)
        missing += book->via[r] < 0;
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

/* The partners of rank r, in round order: the address of (r - 2^k) mod n; rank 0's
 * own is the one that r's connection (its own or its leader's) reached it at. */
static symcoll_status_t bs_partners(bootstrap_t *bs, const bs_book_t *book, int r, int K,
                                    bs_addr_t *out)
{
    for (int k = 0; k < K; k++) {
        int to = (int)((r - (1L << k) % bs->nranks + bs->nranks) % bs->nranks);
        out[k] = book->addrs[to];
        if (to == 0 && r != 0) {
            symcoll_status_t status = bs_sock_addr(bs->peer_fds[book->via[r]], &out[k]);
            if (status != SYMCOLL_OK)
                return status;
            out[k].port = book->addrs[0].port;
        }
    }
    return SYMCOLL_OK;
}

/* Closes rank 0's rendezvous listener; shut down first, so that it stops listening
 * also where another process holds a copy (an inherited one, see
 * bs_take_inherited_listener): joiners are then refused, not left in its backlog, and the
 * port can be bound again. */
static void bs_rdv_close(int *lfd)
{
    if (*lfd >= 0)
        (void)shutdown(*lfd, SHUT_RDWR);
    bs_close(lfd);
}

/* Rank 0's side of the rendezvous on a listening socket, which it closes; then the
 * mesh. */
static symcoll_status_t bs_tcp_serve(bootstrap_t *bs, int lfd, const deadline_t *dl)
{
    int n = bs->nranks - 1, K = bs_mesh_rounds(bs->nranks), mlfd = -1, nx;
    size_t rl = bs_group_rec_len(K);
    double cpu0;
    bs_book_t book = {.welcomes = calloc((size_t)bs->nranks, sizeof(bs_welcome_t)),
                      .addrs = calloc((size_t)bs->nranks, sizeof(bs_addr_t)),
                      .via = malloc((size_t)bs->nranks * sizeof(int)),
                      .leads = calloc((size_t)bs->nranks, sizeof(bs_stream_t)),
                      .epfd = epoll_create1(EPOLL_CLOEXEC)};
    bs_addr_t *peers = calloc((size_t)bs->nranks * (size_t)K, sizeof(bs_addr_t));
    bs_xfer_t *x = calloc((size_t)n, sizeof(*x));
    unsigned char **group = calloc((size_t)bs->nranks, sizeof(*group));
    uint32_t *nmem = calloc((size_t)bs->nranks, sizeof(*nmem));
    bs_acceptor_t acceptor = {.type = BS_MSG_HELLO,
                              .hello_len = sizeof(bs_hello_t),
                              .msg_len = BS_JOIN_LEN,
                              .challenge = true,
                              .tcp = true,
                              .admit = bs_tune,
                              .judge = bs_hello_judge,
                              .ctx = &book,
                              .who = "rank(s)",
                              .extra_max = 1,
                              .extra_fill = bs_leads_fill,
                              .extra_handle = bs_leads_handle};
    symcoll_status_t status;

    bs->peer_fds = malloc((size_t)bs->nranks * sizeof(int));
    if (!bs->peer_fds || !x || !book.welcomes || !book.addrs || !book.via || !book.leads ||
        !peers || !group || !nmem) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (int r = 0; r < bs->nranks; r++) {
        bs->peer_fds[r] = -1;
        book.via[r] = -1;
    }
    book.via[0] = 0;
    if (book.epfd < 0) {
        log_error("bootstrap: epoll_create1: %s", strerror(errno));
        status = SYMCOLL_ERR_SYSTEM;
        goto out;
    }
    /* rank 0's mesh listener sits on the address of its rendezvous listener */
    status = bs_mesh_listen(lfd, &mlfd, &book.addrs[0]);
    if (status != SYMCOLL_OK)
        goto out;
    cpu0 = bs_thread_cpu();
    acceptor.slots = bs->peer_fds;
    status = bs_accept_hellos(bs, lfd, &acceptor, n, dl);
    /* nobody else may join: stop listening at once (for every process holding a copy of
     * an inherited listener too) */
    bs_rdv_close(&lfd);
    if (status != SYMCOLL_OK) {
        bs_tcp_give_up(bs, &book, status);
        goto out;
    }
    /* every rank's partners; a host leader's members' go to it in one message */
    for (int r = 1; r < bs->nranks; r++)
        if (book.via[r] != r)
            nmem[book.via[r]]++;
    for (int i = 0; i < book.nleads; i++) {
        int L = book.leads[i].rank;
        group[L] = calloc(nmem[L] ? nmem[L] : 1, rl);
        if (!group[L]) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto out;
        }
        nmem[L] = 0; /* counted again as filled */
    }
    for (int r = 0; r < bs->nranks; r++) {
        bs_addr_t *to = &peers[(size_t)r * (size_t)K];
        status = bs_partners(bs, &book, r, K, to);
        if (status != SYMCOLL_OK)
            goto out;
        if (r != 0 && book.via[r] != r) {
            int L = book.via[r];
            bs_group_rec_t *g = (bs_group_rec_t *)(void *)(group[L] + (size_t)nmem[L]++ * rl);
            g->rank = (uint32_t)r;
            memcpy(g->to, to, (size_t)K * sizeof(bs_addr_t));
        }
    }
    nx = 0;
    for (int r = 1; r < bs->nranks; r++) {
        bs_xfer_t *xi;
        if (bs->peer_fds[r] < 0)
            continue;
        xi = &x[nx++];
        book.welcomes[r].job_id = bs->job_id;
        book.welcomes[r].members = nmem[r];
        memcpy(book.welcomes[r].name_seed, bs->name_seed, sizeof(bs->name_seed));
        xi->fd = bs->peer_fds[r];
        xi->peer = r;
        xi->send = true;
        bs_hdr_fill(bs, &xi->shdr, BS_MSG_WELCOME, 0, sizeof(bs_welcome_t), 0);
        xi->sbuf = &book.welcomes[r];
    }
    status = bs_xfer_run(bs, x, nx, dl);
    if (status != SYMCOLL_OK)
        goto out;
    /* every rank hears where the ranks it sends to listen */
    for (int i = 0; i < nx; i++) {
        int r = x[i].peer;
        memset(&x[i], 0, sizeof(x[i]));
        x[i].fd = bs->peer_fds[r];
        x[i].peer = r;
        x[i].send = true;
        bs_hdr_fill(bs, &x[i].shdr, BS_MSG_PEERS, 0, (size_t)K * sizeof(bs_addr_t), 0);
        x[i].sbuf = &peers[(size_t)r * (size_t)K];
    }
    status = bs_xfer_run(bs, x, nx, dl);
    if (status != SYMCOLL_OK)
        goto out;
    nx = 0;
    for (int i = 0; i < book.nleads; i++) {
        int L = book.leads[i].rank;
        if (!nmem[L])
            continue;
        memset(&x[nx], 0, sizeof(x[nx]));
        x[nx].fd = bs->peer_fds[L];
        x[nx].peer = L;
        x[nx].send = true;
        bs_hdr_fill(bs, &x[nx].shdr, BS_MSG_GROUP_PEERS, 0, (size_t)nmem[L] * rl, 0);
        x[nx].sbuf = group[L];
        nx++;
    }
    status = bs_xfer_run(bs, x, nx, dl);
    if (status != SYMCOLL_OK)
        goto out;
    /* the address book is out: the rendezvous connections are done with */
    for (int r = 1; r < bs->nranks; r++)
        if (bs->peer_fds[r] >= 0) {
            bs->stats.rendezvous_conns++;
            bs_close(&bs->peer_fds[r]);
        }
    bs->stats.rendezvous_cpu_s = bs_thread_cpu() - cpu0;
    bs->stats.rendezvous_bytes = bs->stats.tcp_bytes_sent + bs->stats.tcp_bytes_recv;
    status = bs_mesh_connect(bs, mlfd, peers, dl);
    mlfd = -1;
out:
    bs_rdv_close(&lfd);
    bs_close(&mlfd);
    bs_close(&book.epfd);
    free(x);
    free(peers);
    if (book.welcomes)
        bs_wipe(book.welcomes, (size_t)bs->nranks * sizeof(bs_welcome_t));
    free(book.welcomes);
    free(book.addrs);
    free(book.via);
    free(book.leads);
    for (int r = 0; group && r < bs->nranks; r++)
        free(group[r]);
    free(group);
    free(nmem);
    return status;
}

/* Who sent the joiner its CHALLENGE: rank 0, or (to a member) a host leader, a rank
 * > 0 other than this one. */
static bool bs_join_from_ok(const bootstrap_t *bs, uint32_t from, bool member)
{
    if (!member)
        return from == 0;
    return from > 0 && from < (uint32_t)bs->nranks && from != (uint32_t)bs->rank;
}

symcoll_status_t bs_tcp_join_on(bootstrap_t *bs, const char *addr, int fd, int lead, int route,
                                const deadline_t *dl)
{
    uint8_t n0[BS_NONCE_LEN], proof[BS_MAC_LEN], want[BS_MAC_LEN];
    int K = bs_mesh_rounds(bs->nranks), mlfd = -1, via = route >= 0 ? -1 : 0;
    bool member = route >= 0;
    bs_addr_t peers[32];
    bs_hello_t hello;
    bs_welcome_t welcome;
    bs_lead_t *l = NULL;
    deadline_t grace;
    const deadline_t *wdl = dl; /* for rank 0's welcome */
    char who[128];
    symcoll_status_t status;
    bs_xfer_t xi;

    bs->root_fd = fd;
    snprintf(who, sizeof(who), "rank 0 at %s", addr);
    memset(&hello, 0, sizeof(hello));
    hello.nranks = (uint32_t)bs->nranks;
    hello.flags = lead >= 0 ? BS_HELLO_LEADER : 0;
    status = bs_random_bytes(hello.nonce, sizeof(hello.nonce));
    if (status != SYMCOLL_OK)
        goto out;
    /* listen for the mesh partners on the interface that reaches rank 0 */
    status = bs_mesh_listen(member ? route : bs->root_fd, &mlfd, &hello.listen);
    if (status != SYMCOLL_OK)
        goto out;
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = via;
    xi.send = true;
    bs_hdr_fill(bs, &xi.shdr, BS_MSG_HELLO, 0, sizeof(hello), 0);
    xi.sbuf = &hello;
    xi.recv = true;
    xi.rtype = BS_MSG_CHALLENGE;
    xi.rlen = sizeof(n0);
    xi.rbuf = n0;
    xi.any_session = true;
    xi.unix_sock = member;
    status = bs_xfer_run(bs, &xi, 1, dl);
    if (status != SYMCOLL_OK) {
        if (member && status == SYMCOLL_ERR_PEER_FAILED)
            log_error("bootstrap: this host's leader of the rendezvous closed the "
                      "connection before it challenged rank %d: it died",
                      bs->rank);
        goto out;
    }
    if (!bs_join_from_ok(bs, xi.rhdr.rank, member)) {
        log_error("bootstrap: the challenge of %s claims rank %u",
                  member ? "this host's leader" : who, xi.rhdr.rank);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (member) {
        via = (int)xi.rhdr.rank;
        snprintf(who, sizeof(who),
                 "rank %d (this host's leader of the rendezvous with rank 0 at %s)", via, addr);
    }

    bs_proof(bs, false, n0, hello.nonce, (uint32_t)bs->rank, proof);
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = via;
    xi.send = true;
    bs_hdr_fill(bs, &xi.shdr, BS_MSG_AUTH, 0, sizeof(proof), 0);
    xi.sbuf = proof;
    xi.unix_sock = member;
    status = bs_xfer_run(bs, &xi, 1, dl);
    /* a host leader takes its members until rank 0's welcome comes */
    if (status == SYMCOLL_OK && lead >= 0) {
        status = bs_lead_gather(bs, lead, &l, dl);
        lead = -1;
        /* rank 0's deadline is as near as ours, and at it rank 0 says why it gave up
         * (which ranks never came): worth a moment's wait, for the members too, rather
         * than a hangup rank 0 would take for this leader's death */
        if (status == SYMCOLL_ERR_TIMED_OUT) {
            grace = deadline_make(BS_VERDICT_GRACE_SEC, bs->aborted);
            wdl = &grace;
            status = SYMCOLL_OK;
        }
    }
    if (status != SYMCOLL_OK)
        goto out;
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = via;
    xi.recv = true;
    xi.rtype = BS_MSG_WELCOME;
    xi.rlen = sizeof(welcome);
    xi.rbuf = &welcome;
    xi.any_session = true;
    xi.unix_sock = member;
    status = bs_xfer_run(bs, &xi, 1, wdl);
    if (status != SYMCOLL_OK && xi.rhdr.magic == BS_MAGIC && xi.rhdr.type == BS_MSG_REJECT) {
        log_error("bootstrap: %s dropped rank %d: its SYMCOLL_COOKIE differs from this "
                  "rank's (or one of them has none), or another process joined as rank %d "
                  "first",
                  who, bs->rank, bs->rank);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (status == SYMCOLL_ERR_PEER_FAILED) {
        log_error("bootstrap: %s closed the connection before it welcomed rank %d: it died, "
                  "or it is not a symcoll rank",
                  who, bs->rank);
        goto out;
    }
    if (status != SYMCOLL_OK)
        goto out;
    bs_proof(bs, true, n0, hello.nonce, (uint32_t)bs->rank, want);
    if (!bs_ct_equal(welcome.proof, want, sizeof(want))) {
        log_error("bootstrap: %s did not prove that it knows the job's secret: it is not of "
                  "this job, or its SYMCOLL_COOKIE differs; refused",
                  who);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (welcome.job_id == 0 && welcome.gave_up < 0 && welcome.gave_up > SYMCOLL_ERR_LAST) {
        log_error("bootstrap: rank 0 at %s gave up the rendezvous (%s): %u rank(s) never "
                  "joined",
                  addr, symcoll_status_string((symcoll_status_t)welcome.gave_up),
                  welcome.missing);
        status = (symcoll_status_t)welcome.gave_up;
        if (l)
            bs_lead_give_up(bs, l, status, welcome.missing);
        goto out;
    }
    if (welcome.job_id == 0 || xi.rhdr.session != welcome.job_id ||
        (!l && welcome.members != 0)) {
        log_error("bootstrap: %s sent a malformed welcome", who);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    bs->job_id = welcome.job_id;
    memcpy(bs->name_seed, welcome.name_seed, sizeof(bs->name_seed));

    /* where the ranks this one sends to listen; then rank 0 is done with us */
    memset(&xi, 0, sizeof(xi));
    xi.fd = bs->root_fd;
    xi.peer = via;
    xi.recv = true;
    xi.rtype = BS_MSG_PEERS;
    xi.rlen = (size_t)K * sizeof(bs_addr_t);
    xi.rbuf = peers;
    xi.unix_sock = member;
    status = bs_xfer_run(bs, &xi, 1, dl);
    if (status == SYMCOLL_OK && l)
        status = bs_lead_finish(bs, l, welcome.members, dl);
    if (status != SYMCOLL_OK)
        goto out;
    bs_close(&bs->root_fd);
    bs->stats.rendezvous_bytes = bs->stats.tcp_bytes_sent + bs->stats.tcp_bytes_recv;
    status = bs_mesh_connect(bs, mlfd, peers, dl);
    mlfd = -1;
out:
    if (status != SYMCOLL_OK && l)
        bs_lead_give_up(bs, l, status, 0);
    bs_lead_free(l);
    bs_close(&lead);
    bs_close(&mlfd);
    return status;
}

symcoll_status_t bs_tcp_connect(bootstrap_t *bs, const char *addr, int listen_fd, bool leaders,
                                const char *group, const deadline_t *dl)
{
    symcoll_status_t status;
    int lfd = -1, fd = -1;

    if (bs->rank != 0) {
        if (leaders)
            return bs_host_join(bs, addr, group, dl);
        status = bs_tcp_dial_rank0(addr, dl, &fd);
        return status == SYMCOLL_OK ? bs_tcp_join_on(bs, addr, fd, -1, -1, dl) : status;
    }
    /* before listening: joiners that find nobody keep trying until their deadline */
    status = bs_fd_room(bs->nranks);
    if (status != SYMCOLL_OK)
        return status;
    lfd = bs_take_inherited_listener(addr, listen_fd);
    status = lfd >= 0 ? SYMCOLL_OK : bs_listen(addr, &lfd);
    return status == SYMCOLL_OK ? bs_tcp_serve(bs, lfd, dl) : status;
}
