/* Bootstrap wire layer: header validation and a poll-driven engine that moves any set
 * of messages (with optional SCM_RIGHTS descriptors) over non-blocking sockets, each
 * wait bounded by the deadline and the abort flag. */
#define _GNU_SOURCE /* accept4, struct ucred, MSG_CMSG_CLOEXEC */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Poll in slices this long (ms) so an abort is seen promptly. */
#define BS_POLL_SLICE_MS 50

static const char *bs_type_name(unsigned type)
{
    switch (type) {
    case BS_MSG_HELLO:
        return "hello";
    case BS_MSG_WELCOME:
        return "welcome";
    case BS_MSG_DATA:
        return "data";
    case BS_MSG_LOCAL_HELLO:
        return "local hello";
    case BS_MSG_LOCAL_DATA:
        return "local data";
    case BS_MSG_CHALLENGE:
        return "challenge";
    case BS_MSG_AUTH:
        return "auth";
    case BS_MSG_PEERS:
        return "peers";
    case BS_MSG_MESH_HELLO:
        return "mesh hello";
    case BS_MSG_MESH_WELCOME:
        return "mesh welcome";
    case BS_MSG_REJECT:
        return "reject";
    case BS_MSG_MEMBER:
        return "member";
    case BS_MSG_GROUP_PEERS:
        return "group peers";
    default:
        return "unknown";
    }
}

void bs_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

symcoll_status_t bs_random_bytes(void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = getrandom((char *)buf + got, len - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            log_error("getrandom failed: %s", strerror(errno));
            return SYMCOLL_ERR_SYSTEM;
        }
        got += (size_t)r;
    }
    return SYMCOLL_OK;
}

symcoll_status_t bs_random64(uint64_t *out)
{
    uint64_t v = 0;

    while (v == 0) {
        symcoll_status_t status = bs_random_bytes(&v, sizeof(v));
        if (status != SYMCOLL_OK)
            return status;
    }
    *out = v;
    return SYMCOLL_OK;
}

static void bs_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void bs_proof(const bootstrap_t *bs, bool from_rank0, const uint8_t n0[BS_NONCE_LEN],
              const uint8_t nr[BS_NONCE_LEN], uint32_t rank, uint8_t out[BS_MAC_LEN])
{
    /* the labels keep a proof of one side from passing as one of the other */
    static const char joiner[] = "symcoll bootstrap v2 joiner";
    static const char rank0[] = "symcoll bootstrap v2 rank0";
    uint8_t ints[8];
    bs_hmac_t m;

    bs_put32(ints, rank);
    bs_put32(ints + 4, (uint32_t)bs->nranks);
    bs_hmac_init(&m, bs->secret, bs->secret_len);
    if (from_rank0)
        bs_hmac_update(&m, rank0, sizeof(rank0));
    else
        bs_hmac_update(&m, joiner, sizeof(joiner));
    bs_hmac_update(&m, n0, BS_NONCE_LEN);
    bs_hmac_update(&m, nr, BS_NONCE_LEN);
    bs_hmac_update(&m, ints, sizeof(ints));
    bs_hmac_final(&m, out);
}

void bs_mesh_proof(const bootstrap_t *bs, bool from_listener, const uint8_t nd[BS_NONCE_LEN],
                   uint32_t dialer, uint32_t listener, uint32_t round, uint8_t out[BS_MAC_LEN])
{
    static const char dial[] = "symcoll bootstrap v3 mesh dialer";
    static const char lis[] = "symcoll bootstrap v3 mesh listener";
    uint8_t ints[24];
    bs_hmac_t m;

    bs_put32(ints, (uint32_t)bs->job_id);
    bs_put32(ints + 4, (uint32_t)(bs->job_id >> 32));
    bs_put32(ints + 8, dialer);
    bs_put32(ints + 12, listener);
    bs_put32(ints + 16, round);
    bs_put32(ints + 20, (uint32_t)bs->nranks);
    bs_hmac_init(&m, bs->secret, bs->secret_len);
    if (from_listener)
        bs_hmac_update(&m, lis, sizeof(lis));
    else
        bs_hmac_update(&m, dial, sizeof(dial));
    bs_hmac_update(&m, nd, BS_NONCE_LEN);
    bs_hmac_update(&m, ints, sizeof(ints));
    bs_hmac_final(&m, out);
}

void bs_hdr_fill(const bootstrap_t *bs, bs_hdr_t *h, uint16_t type, uint64_t seq, uint64_t len,
                 uint32_t nfds)
{
    memset(h, 0, sizeof(*h));
    h->magic = BS_MAGIC;
    h->version = BS_VERSION;
    h->type = type;
    h->session = bs->job_id;
    h->rank = (uint32_t)bs->rank;
    h->nfds = nfds;
    h->seq = seq;
    h->len = len;
}

symcoll_status_t bs_hdr_check(const bootstrap_t *bs, const bs_hdr_t *h, uint16_t type, int rank,
                              uint64_t seq, uint64_t len, uint32_t nfds, bool any_session,
                              const char *what)
{
    if (h->magic != BS_MAGIC) {
        log_error("bootstrap: %s: bad magic 0x%08x (not a symcoll bootstrap message)", what,
                  h->magic);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (h->version != BS_VERSION) {
        log_error("bootstrap: %s: protocol version %u, expected %u", what, h->version,
                  BS_VERSION);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (!any_session && h->session != bs->job_id) {
        log_error("bootstrap: %s: wrong session (a message from another job or a stray "
                  "connection)",
                  what);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (h->type != type) {
        log_error("bootstrap: %s: message type %u (%s), expected %s", what, h->type,
                  bs_type_name(h->type), bs_type_name(type));
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (rank >= 0 && h->rank != (uint32_t)rank) {
        log_error("bootstrap: %s: message claims rank %u, expected rank %d", what, h->rank,
                  rank);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (h->len > BS_MAX_PAYLOAD) {
        log_error("bootstrap: %s: announced length %llu is too large", what,
                  (unsigned long long)h->len);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (h->nfds != nfds) {
        log_error("bootstrap: %s: %u descriptors announced, expected %u", what, h->nfds, nfds);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    if (h->seq != seq) {
        log_error("bootstrap: %s: sequence number %llu, expected %llu (ranks called "
                  "collectives in different orders)",
                  what, (unsigned long long)h->seq, (unsigned long long)seq);
        return SYMCOLL_ERR_MISMATCH;
    }
    if (h->len != len) {
        log_error("bootstrap: %s: %llu bytes, expected %llu (ranks passed different sizes)",
                  what, (unsigned long long)h->len, (unsigned long long)len);
        return SYMCOLL_ERR_MISMATCH;
    }
    return SYMCOLL_OK;
}

/* Whether a socket error says the process at the other end is gone: it closed or
 * reset the connection, or nobody listens any more where it did (a dial to a dead
 * partner fails on the first send with ECONNREFUSED). */
static bool bs_errno_peer_gone(int e)
{
    return e == EPIPE || e == ECONNRESET || e == ECONNREFUSED || e == ENOTCONN;
}

static symcoll_status_t bs_poll_ms(struct pollfd *p, nfds_t n, const deadline_t *dl,
                                   int slice_ms)
{
    symcoll_status_t status = deadline_check(dl);
    double left_ms = (dl->end - time_now()) * 1e3;
    int ms = left_ms < slice_ms ? (int)left_ms + 1 : slice_ms;

    if (status != SYMCOLL_OK)
        return status;
    for (nfds_t i = 0; i < n; i++)
        p[i].revents = 0;
    if (poll(p, n, ms) < 0) {
        if (errno == EINTR)
            return SYMCOLL_OK;
        log_error("bootstrap: poll failed: %s", strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    return SYMCOLL_OK;
}

symcoll_status_t bs_poll_slice(struct pollfd *p, nfds_t n, const deadline_t *dl)
{
    return bs_poll_ms(p, n, dl, BS_POLL_SLICE_MS);
}

symcoll_status_t bs_poll_turn(const bootstrap_t *bs, struct pollfd *p, nfds_t n,
                              const deadline_t *dl)
{
    symcoll_status_t status;
    bool idle = true;

    if (!bs->progress)
        return bs_poll_ms(p, n, dl, BS_POLL_SLICE_MS);
    /* the hook only where the sockets kept us waiting: the busy path stays as it was */
    status = bs_poll_ms(p, n, dl, BOOTSTRAP_PROGRESS_MS);
    for (nfds_t i = 0; i < n && idle; i++)
        idle = p[i].revents == 0;
    if (status == SYMCOLL_OK && idle)
        bs->progress(bs->progress_arg);
    return status;
}

symcoll_status_t bs_poll_one(int fd, short events, const deadline_t *dl)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        symcoll_status_t status = bs_poll_slice(&p, 1, dl);
        if (status != SYMCOLL_OK || p.revents)
            return status;
    }
}

/* Store received descriptors; any beyond the expected count are closed. */
static symcoll_status_t bs_take_fds(bs_xfer_t *x, struct msghdr *mh)
{
    symcoll_status_t status = SYMCOLL_OK;

    if (mh->msg_flags & MSG_CTRUNC) {
        log_error("bootstrap: descriptors from rank %d were truncated", x->peer);
        status = SYMCOLL_ERR_BOOTSTRAP;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        int nf;
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        nf = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < nf; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            /* descriptors are accepted only with the first byte of a header that
             * announces exactly this many */
            if (x->rnfds_got < x->rnfds && x->roff == 0) {
                x->rfds[x->rnfds_got++] = fd;
            } else {
                close(fd);
                if (status == SYMCOLL_OK)
                    log_error("bootstrap: unexpected descriptors from rank %d", x->peer);
                status = SYMCOLL_ERR_BOOTSTRAP;
            }
        }
    }
    return status;
}

static symcoll_status_t bs_xfer_send(bs_xfer_t *x)
{
    size_t hl = sizeof(x->shdr), total = hl + (size_t)x->shdr.len;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * BS_MAX_FDS)];
    } ctl;
    struct iovec iov[2];
    struct msghdr mh;
    int niov = 0;
    ssize_t r;

    memset(&mh, 0, sizeof(mh));
    if (x->soff < hl) {
        iov[niov].iov_base = (char *)&x->shdr + x->soff;
        iov[niov++].iov_len = hl - x->soff;
    }
    if (x->shdr.len) {
        size_t poff = x->soff > hl ? x->soff - hl : 0;
        iov[niov].iov_base = (char *)x->sbuf + poff;
        iov[niov++].iov_len = (size_t)x->shdr.len - poff;
    }
    mh.msg_iov = iov;
    mh.msg_iovlen = (size_t)niov;
    if (x->soff == 0 && x->shdr.nfds) {
        struct cmsghdr *c;
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * x->shdr.nfds);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * x->shdr.nfds);
        memcpy(CMSG_DATA(c), x->sfds, sizeof(int) * x->shdr.nfds);
    }
    r = sendmsg(x->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return SYMCOLL_OK;
        log_error("bootstrap: sending to rank %d failed: %s", x->peer, strerror(errno));
        return bs_errno_peer_gone(errno) ? SYMCOLL_ERR_PEER_FAILED : SYMCOLL_ERR_SYSTEM;
    }
    x->soff += (size_t)r;
    if (x->soff >= total)
        x->send = false;
    return SYMCOLL_OK;
}

static symcoll_status_t bs_xfer_recv(bootstrap_t *bs, bs_xfer_t *x)
{
    size_t hl = sizeof(x->rhdr);
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * BS_MAX_FDS)];
    } ctl;
    struct iovec iov;
    struct msghdr mh;
    symcoll_status_t status;
    ssize_t r;

    /* read the header alone first: the payload length is trusted only once checked */
    if (x->roff < hl) {
        iov.iov_base = (char *)&x->rhdr + x->roff;
        iov.iov_len = hl - x->roff;
    } else {
        iov.iov_base = (char *)x->rbuf + (x->roff - hl);
        iov.iov_len = x->rlen - (x->roff - hl);
    }
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    r = recvmsg(x->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return SYMCOLL_OK;
        log_error("bootstrap: receiving from rank %d failed: %s", x->peer, strerror(errno));
        return bs_errno_peer_gone(errno) ? SYMCOLL_ERR_PEER_FAILED : SYMCOLL_ERR_SYSTEM;
    }
    status = bs_take_fds(x, &mh);
    if (status != SYMCOLL_OK)
        return status;
    if (r == 0) {
        log_error("bootstrap: rank %d closed its connection%s", x->peer,
                  x->roff ? " in the middle of a message (truncated)" : "");
        return SYMCOLL_ERR_PEER_FAILED;
    }
    x->roff += (size_t)r;
    if (x->roff == hl) {
        char what[64];
        snprintf(what, sizeof(what), "message from rank %d", x->peer);
        status = bs_hdr_check(bs, &x->rhdr, x->rtype, x->peer, x->rseq, x->rlen,
                              (uint32_t)x->rnfds, x->any_session, what);
        if (status != SYMCOLL_OK)
            return status;
        if (x->rnfds_got != x->rnfds) {
            log_error("bootstrap: rank %d announced %d descriptors but sent %d", x->peer,
                      x->rnfds, x->rnfds_got);
            return SYMCOLL_ERR_BOOTSTRAP;
        }
    }
    if (x->roff >= hl + x->rlen)
        x->recv = false;
    return SYMCOLL_OK;
}

symcoll_status_t bs_xfer_run(bootstrap_t *bs, bs_xfer_t *x, int n, const deadline_t *dl)
{
    struct pollfd *pfd = NULL;
    int *idx = NULL;
    symcoll_status_t status = SYMCOLL_OK;

    for (int i = 0; i < n; i++) {
        x[i].soff = 0;
        x[i].roff = 0;
        x[i].rnfds_got = 0;
        for (int k = 0; k < x[i].rnfds; k++)
            x[i].rfds[k] = -1;
        /* a message with no payload is complete once its header is in */
    }
    pfd = calloc((size_t)n + 1, sizeof(*pfd));
    idx = calloc((size_t)n + 1, sizeof(*idx));
    if (!pfd || !idx) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (;;) {
        int np = 0;

        for (int i = 0; i < n; i++) {
            short ev = (short)((x[i].send ? POLLOUT : 0) | (x[i].recv ? POLLIN : 0));
            if (!ev)
                continue;
            pfd[np].fd = x[i].fd;
            pfd[np].events = ev;
            pfd[np].revents = 0;
            idx[np++] = i;
        }
        if (!np)
            break;
        status = bs_poll_turn(bs, pfd, (nfds_t)np, dl);
        if (status != SYMCOLL_OK) {
            if (status == SYMCOLL_ERR_TIMED_OUT)
                log_error("bootstrap: timed out waiting for rank %d", x[idx[0]].peer);
            goto out;
        }
        for (int k = 0; k < np; k++) {
            bs_xfer_t *xi = &x[idx[k]];
            short re = pfd[k].revents;
            if (!re)
                continue;
            if (xi->recv && (re & (POLLIN | POLLHUP | POLLERR))) {
                status = bs_xfer_recv(bs, xi);
                if (status != SYMCOLL_OK)
                    goto out;
            }
            if (xi->send && (re & (POLLOUT | POLLHUP | POLLERR))) {
                status = bs_xfer_send(xi);
                if (status != SYMCOLL_OK)
                    goto out;
            }
        }
    }
out:
    for (int i = 0; i < n; i++) {
        /* what crossed TCP (the node-local channel's messages are not counted) */
        bool local = x[i].shdr.type == BS_MSG_LOCAL_HELLO ||
                     x[i].shdr.type == BS_MSG_LOCAL_DATA || x[i].rtype == BS_MSG_LOCAL_HELLO ||
                     x[i].rtype == BS_MSG_LOCAL_DATA;
        if (local || x[i].unix_sock)
            continue;
        bs->stats.tcp_bytes_sent += x[i].soff;
        bs->stats.tcp_bytes_recv += x[i].roff;
        bs->stats.tcp_msgs_sent += x[i].soff ? 1 : 0;
    }
    if (status != SYMCOLL_OK) {
        for (int i = 0; i < n; i++)
            for (int k = 0; k < x[i].rnfds; k++)
                bs_close(&x[i].rfds[k]);
    }
    free(pfd);
    free(idx);
    return status;
}
