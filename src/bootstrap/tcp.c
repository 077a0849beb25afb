/* Built-in TCP rendezvous: rank 0 listens on SYMCOLL_ADDR, every other rank connects
 * (retrying until the deadline) and introduces itself; collectives then run as a star
 * through rank 0 (gather to rank 0, broadcast back). */
#define _GNU_SOURCE /* accept4, struct ucred, MSG_CMSG_CLOEXEC */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Pause between connection attempts while rank 0 is not listening yet (ms). */
#define BS_RETRY_MS 20

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

/* Small messages go out at once. Also the admission hook of rank 0's listener. */
static int bs_tune(int fd)
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
    if (listen(fd, 128)) {
        log_error("bootstrap: listen on %s failed: %s", addr, strerror(errno));
        close(fd);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    *fd_p = fd;
    return SYMCOLL_OK;
}

/* Judge a complete hello: the rank it introduces, or -1 (logged). */
static int bs_hello_judge(bootstrap_t *bs, const void *msg, const char *from, void *ctx)
{
    const uint64_t env_cookie = *(const uint64_t *)ctx;
    bs_hdr_t h;
    bs_hello_t hello;
    char what[128];
    int r;

    memcpy(&h, msg, sizeof(h));
    memcpy(&hello, (const char *)msg + sizeof(h), sizeof(hello));
    r = (int)h.rank;
    snprintf(what, sizeof(what), "connection from %s", from);
    if (h.rank == 0 || h.rank >= (uint32_t)bs->nranks) {
        log_error("bootstrap: %s claims rank %u of %d; dropped", what, h.rank, bs->nranks);
        return -1;
    }
    /* without SYMCOLL_COOKIE the ranks do not know the cookie yet and send 0 */
    if (h.cookie != env_cookie) {
        log_error("bootstrap: %s: wrong job cookie; dropped", what);
        return -1;
    }
    if (bs_hdr_check(bs, &h, BS_MSG_HELLO, r, 0, sizeof(bs_hello_t), 0, true, what) !=
        SYMCOLL_OK)
        return -1;
    if (hello.nranks != (uint32_t)bs->nranks) {
        log_error("bootstrap: %s: rank %d believes the job has %u ranks, rank 0 has %d; "
                  "dropped",
                  what, r, hello.nranks, bs->nranks);
        return -1;
    }
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

symcoll_status_t bs_tcp_connect(bootstrap_t *bs, const char *addr, uint64_t env_cookie,
                                const deadline_t *dl)
{
    symcoll_status_t status;
    bs_xfer_t *x = NULL;

    if (bs->rank == 0) {
        int lfd = -1;
        uint64_t job_id = bs->job_id;
        bs_acceptor_t acceptor = {BS_MSG_HELLO, sizeof(bs_hdr_t) + sizeof(bs_hello_t),
                                  bs_tune,      bs_hello_judge,
                                  &env_cookie,  NULL,
                                  "rank(s)"};

        bs->peer_fds = malloc((size_t)bs->nranks * sizeof(int));
        x = calloc((size_t)bs->nranks, sizeof(*x));
        if (!bs->peer_fds || !x) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto out;
        }
        for (int r = 0; r < bs->nranks; r++)
            bs->peer_fds[r] = -1;
        acceptor.slots = bs->peer_fds;
        status = bs_listen(addr, &lfd);
        if (status != SYMCOLL_OK)
            goto out;
        status = bs_accept_hellos(bs, lfd, &acceptor, bs->nranks - 1, dl);
        /* nobody else may join: stop listening at once */
        bs_close(&lfd);
        if (status != SYMCOLL_OK)
            goto out;
        for (int r = 1; r < bs->nranks; r++) {
            bs_xfer_t *xi = &x[r - 1];
            xi->fd = bs->peer_fds[r];
            xi->peer = r;
            xi->send = true;
            bs_hdr_fill(bs, &xi->shdr, BS_MSG_WELCOME, 0, sizeof(job_id), 0);
            xi->sbuf = &job_id;
        }
        status = bs_xfer_run(bs, x, bs->nranks - 1, dl);
    } else {
        bs_xfer_t xi;
        bs_hello_t hello = {(uint32_t)bs->nranks, 0};
        uint64_t job_id = 0;

        status = bs_tcp_dial(addr, dl, &bs->root_fd);
        if (status != SYMCOLL_OK)
            goto out;
        memset(&xi, 0, sizeof(xi));
        xi.fd = bs->root_fd;
        xi.peer = 0;
        xi.send = true;
        bs->cookie = env_cookie;
        bs_hdr_fill(bs, &xi.shdr, BS_MSG_HELLO, 0, sizeof(hello), 0);
        xi.sbuf = &hello;
        xi.recv = true;
        xi.rtype = BS_MSG_WELCOME;
        xi.rseq = 0;
        xi.rlen = sizeof(job_id);
        xi.rbuf = &job_id;
        /* with a cookie from the environment the reply must carry it; without one, the
         * reply tells it and every later message must repeat it */
        xi.adopt_cookie = env_cookie == 0;
        status = bs_xfer_run(bs, &xi, 1, dl);
        if (status == SYMCOLL_OK)
            bs->job_id = job_id;
    }
out:
    free(x);
    return status;
}

symcoll_status_t bs_tcp_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size,
                                  const deadline_t *dl)
{
    size_t total = size * (size_t)bs->nranks;
    uint64_t seq = bs->seq;
    symcoll_status_t status;

    if (size)
        memcpy((char *)dst + (size_t)bs->rank * size, src, size);
    if (bs->nranks == 1)
        return SYMCOLL_OK;
    if (bs->rank == 0) {
        int n = bs->nranks - 1;
        bs_xfer_t *x = calloc((size_t)n, sizeof(*x));
        if (!x)
            return SYMCOLL_ERR_NO_MEMORY;
        for (int r = 1; r < bs->nranks; r++) {
            bs_xfer_t *xi = &x[r - 1];
            xi->fd = bs->peer_fds[r];
            xi->peer = r;
            xi->recv = true;
            xi->rtype = BS_MSG_DATA;
            xi->rseq = seq;
            xi->rlen = size;
            xi->rbuf = (char *)dst + (size_t)r * size;
        }
        status = bs_xfer_run(bs, x, n, dl);
        if (status == SYMCOLL_OK) {
            memset(x, 0, (size_t)n * sizeof(*x));
            for (int r = 1; r < bs->nranks; r++) {
                bs_xfer_t *xi = &x[r - 1];
                xi->fd = bs->peer_fds[r];
                xi->peer = r;
                xi->send = true;
                bs_hdr_fill(bs, &xi->shdr, BS_MSG_DATA, seq, total, 0);
                xi->sbuf = dst;
            }
            status = bs_xfer_run(bs, x, n, dl);
        }
        free(x);
    } else {
        bs_xfer_t xi;
        memset(&xi, 0, sizeof(xi));
        xi.fd = bs->root_fd;
        xi.peer = 0;
        xi.send = true;
        bs_hdr_fill(bs, &xi.shdr, BS_MSG_DATA, seq, size, 0);
        xi.sbuf = src;
        xi.recv = true;
        xi.rtype = BS_MSG_DATA;
        xi.rseq = seq;
        xi.rlen = total;
        /* the gathered result overwrites our own slot with the same bytes */
        xi.rbuf = dst;
        status = bs_xfer_run(bs, &xi, 1, dl);
    }
    return status;
}
