/* Listener side of both channels: accept connections, challenge each one (TCP) and read
 * its hello with a non-blocking reader of its own, so a silent, slow, malformed or
 * unauthenticated peer is dropped (with an info log: strangers must not flood the error
 * log) without holding up the real ranks. */
#define _GNU_SOURCE /* accept4, struct ucred */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connections kept while they have not yet introduced themselves; when full the
 * oldest is dropped, so a flood of idle connections cannot lock real ranks out. */
#define BS_MAX_PENDING 64
/* A full table evicts its oldest connection only once it has waited this long for its
 * hello; before that, new connections wait in the kernel's listen queue. Many ranks
 * connect at once (hundreds on a few cores: their hellos come late, but they come); a
 * stranger that holds a slot without speaking is gone after this. */
#define BS_PENDING_GRACE_SEC 2.0
#define BS_HELLO_MAX 256 /* bytes of the largest hello with what follows it */

typedef struct bs_pending {
    int fd;
    size_t off;
    union {
        bs_hdr_t hdr;
        unsigned char bytes[BS_HELLO_MAX];
    } msg;
    uint8_t nonce[BS_NONCE_LEN]; /* the challenge it got */
    double since;                /* accepted at (time_now) */
    char from[64];
} bs_pending_t;

/* "address:port" of a TCP peer, "pid N" of a Unix one: for the logs only. */
static void bs_peer_name(int fd, char *out, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[64] = "?", port[16] = "?";

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_UNIX) {
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0)
            snprintf(out, len, "pid %d", (int)cr.pid);
        else
            snprintf(out, len, "a local process");
        return;
    }
    if (sl)
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, "%s:%s", host, port);
}

/* Read what a pending connection sent; returns the slot it fills (>= 0), -1 to keep
 * waiting, -2 when it is dropped. */
static int bs_pending_read(bootstrap_t *bs, const bs_acceptor_t *a, bs_pending_t *p)
{
    ssize_t r = recv(p->fd, p->msg.bytes + p->off, a->msg_len - p->off, MSG_DONTWAIT);
    const bs_hdr_t *h = &p->msg.hdr;
    int slot;

    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return -1;
        log_info("bootstrap: connection from %s failed: %s; dropped", p->from, strerror(errno));
        return -2;
    }
    if (r == 0) {
        log_info("bootstrap: connection from %s closed after %zu of %zu bytes of its "
                 "hello (truncated); dropped",
                 p->from, p->off, a->msg_len);
        return -2;
    }
    p->off += (size_t)r;
    if (a->tcp)
        bs->stats.tcp_bytes_recv += (uint64_t)r;
    /* judge the header as soon as it is in, before waiting for more */
    if (p->off >= sizeof(bs_hdr_t) && p->off - (size_t)r < sizeof(bs_hdr_t) &&
        (h->magic != BS_MAGIC || h->version != BS_VERSION || h->type != a->type ||
         h->len != a->hello_len)) {
        log_info("bootstrap: connection from %s sent a malformed hello (magic 0x%08x, "
                 "version %u, type %u, length %llu); dropped",
                 p->from, h->magic, h->version, h->type, (unsigned long long)h->len);
        return -2;
    }
    if (p->off < a->msg_len)
        return -1;
    slot = a->judge(bs, p->msg.bytes, a->challenge ? p->nonce : NULL, p->from, a->ctx);
    if (slot < 0)
        return -2;
    if (a->slots[slot] >= 0) {
        log_error("bootstrap: connection from %s: rank %u is already connected "
                  "(duplicate); dropped",
                  p->from, h->rank);
        return -2;
    }
    return slot;
}

/* Send a fresh connection its challenge: a header and a nonce, which fit in the empty
 * socket buffer at once. *sent false: drop the connection; an error: getrandom failed. */
static symcoll_status_t bs_send_challenge(bootstrap_t *bs, const bs_acceptor_t *a,
                                          bs_pending_t *p, bool *sent)
{
    struct {
        bs_hdr_t hdr;
        uint8_t nonce[BS_NONCE_LEN];
    } m;
    symcoll_status_t status = bs_random_bytes(p->nonce, sizeof(p->nonce));
    ssize_t r;

    *sent = false;
    if (status != SYMCOLL_OK)
        return status;
    bs_hdr_fill(bs, &m.hdr, BS_MSG_CHALLENGE, 0, sizeof(m.nonce), 0);
    memcpy(m.nonce, p->nonce, sizeof(m.nonce));
    r = send(p->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r != (ssize_t)sizeof(m)) {
        log_info("bootstrap: connection from %s: cannot send its challenge (%s); dropped",
                 p->from, r < 0 ? strerror(errno) : "short write");
        return SYMCOLL_OK;
    }
    *sent = true;
    if (a->tcp) {
        bs->stats.tcp_bytes_sent += sizeof(m);
        bs->stats.tcp_msgs_sent++;
    }
    return SYMCOLL_OK;
}

/* The connections this rank already holds to partners (the mesh, the node channel),
 * watched while it accepts others: a partner that dies meanwhile closes them, and this
 * rank then fails at once instead of waiting for a dialer that will never come. Only a
 * hangup or an error counts: a partner's early message stays unread. Descriptors in
 * skip[0..nskip) are left out. Returns how many it put in w (at most the mesh's and the
 * node channel's slots). */
static int bs_watch_fill(const bootstrap_t *bs, struct pollfd *w, int *peers, const int *skip,
                         int nskip)
{
    int nw = 0;

    for (int k = 0; k < bs->nrounds; k++)
        for (int dir = 0; dir < 2; dir++) {
            int *fds = dir ? bs->recv_fds : bs->send_fds;
            if (fds && fds[k] >= 0 && bs_mesh_owns(bs, k, dir == 0)) {
                w[nw].fd = fds[k];
                peers[nw++] = dir ? bs_mesh_from(bs, k) : bs_mesh_to(bs, k);
            }
        }
    for (int i = 0; bs->local_fds && i < bs->local_size; i++)
        if (bs->local_fds[i] >= 0) {
            w[nw].fd = bs->local_fds[i];
            peers[nw++] = bs->local_ranks ? bs->local_ranks[i] : -1;
        }
    for (int i = 0; i < nw; i++) {
        w[i].events = POLLRDHUP;
        for (int j = 0; j < nskip; j++)
            if (skip[j] == w[i].fd)
                w[i].fd = -1; /* poll ignores it */
    }
    return nw;
}

/* PEER_FAILED (logged) if one of the nw watched connections hung up with nothing left
 * to read; the message says this rank waited for `missing` `who` (missing < 0: for
 * `who`). A partner that closed after sending what this rank has still to read (a mesh
 * welcome: it finished its own part and destroyed its bootstrap) is not a failure: its
 * descriptor goes into skip (*nskip grows; skip has room for nw) and the read of that
 * message sees the rest. */
static symcoll_status_t bs_watch_check(const struct pollfd *w, int nw, const int *peers,
                                       int missing, const char *who, int *skip, int *nskip)
{
    for (int i = 0; i < nw; i++)
        if (w[i].fd >= 0 && (w[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            char what[96], c;
            if (recv(w[i].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
                skip[(*nskip)++] = w[i].fd;
                continue;
            }
            if (missing >= 0)
                snprintf(what, sizeof(what), "%d %s", missing, who);
            else
                snprintf(what, sizeof(what), "%s", who);
            log_error("bootstrap: rank %d closed its connection while this rank waited for "
                      "%s",
                      peers[i], what);
            return SYMCOLL_ERR_PEER_FAILED;
        }
    return SYMCOLL_OK;
}

static int bs_watch_max(const bootstrap_t *bs)
{
    return 2 * bs->nrounds + (bs->local_fds ? bs->local_size : 0);
}

symcoll_status_t bs_watch_sleep(const bootstrap_t *bs, int ms, const char *who)
{
    int maxw = bs_watch_max(bs), nw, nskip = 0;
    struct pollfd *w = calloc((size_t)maxw + 1, sizeof(*w));
    int *peers = calloc((size_t)maxw + 1, sizeof(*peers));
    int *skip = calloc((size_t)maxw + 1, sizeof(*skip));
    symcoll_status_t status = SYMCOLL_OK;

    if (!w || !peers || !skip) {
        status = SYMCOLL_ERR_NO_MEMORY;
    } else {
        nw = bs_watch_fill(bs, w, peers, NULL, 0);
        if (poll(w, (nfds_t)nw, ms) > 0)
            status = bs_watch_check(w, nw, peers, -1, who, skip, &nskip);
        /* a finished partner's hangup stays set: sleep anyway, do not spin */
        if (status == SYMCOLL_OK && nskip > 0)
            (void)poll(NULL, 0, ms);
    }
    free(w);
    free(peers);
    free(skip);
    return status;
}

/* Tell a joiner that rank 0 dropped it (a wrong proof, a rank already taken), so that
 * it can say so rather than take the closed connection for rank 0's death. Best effort:
 * a header into an empty socket buffer. Only the rendezvous (challenge) acceptor does. */
static void bs_reject(bootstrap_t *bs, const bs_acceptor_t *a, int fd)
{
    bs_hdr_t h;

    if (!a->challenge)
        return;
    bs_hdr_fill(bs, &h, BS_MSG_REJECT, 0, 0, 0);
    if (send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(h) && a->tcp)
        bs->stats.tcp_bytes_sent += sizeof(h);
}

symcoll_status_t bs_accept_hellos(bootstrap_t *bs, int lfd, const bs_acceptor_t *a, int missing,
                                  const deadline_t *dl)
{
    bs_pending_t *pend = calloc(BS_MAX_PENDING, sizeof(*pend));
    int maxw = bs_watch_max(bs);
    struct pollfd *pfd =
        calloc((size_t)(BS_MAX_PENDING + 1 + maxw + a->extra_max), sizeof(*pfd));
    int *wpeer = calloc((size_t)maxw + 1, sizeof(*wpeer));
    int *wskip = calloc((size_t)maxw + 1, sizeof(*wskip));
    symcoll_status_t status = SYMCOLL_OK;
    int npend = 0, dropped = 0, nw, nskip = 0, nx = 0;

    if (a->msg_len < sizeof(bs_hdr_t) || a->msg_len > BS_HELLO_MAX) {
        log_error("bootstrap: internal: hello of %zu bytes", a->msg_len);
        status = SYMCOLL_ERR_INTERNAL;
        goto out;
    }
    if (!pend || !pfd || !wpeer || !wskip) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    while (missing > 0) {
        pfd[0].fd = lfd;
        /* a full table within its grace leaves the listen queue alone (no busy loop) */
        pfd[0].events =
            npend < BS_MAX_PENDING || time_now() - pend[0].since >= BS_PENDING_GRACE_SEC
                ? POLLIN
                : 0;
        for (int i = 0; i < npend; i++) {
            pfd[i + 1].fd = pend[i].fd;
            pfd[i + 1].events = POLLIN;
        }
        nw = bs_watch_fill(bs, &pfd[npend + 1], wpeer, wskip, nskip);
        if (a->extra_fill) {
            nx = a->extra_fill(bs, a->ctx, &pfd[npend + 1 + nw]);
            if (nx < 0) {
                log_error("bootstrap: cannot watch a connection: %s", strerror(errno));
                status = SYMCOLL_ERR_SYSTEM;
                goto out;
            }
        }
        status = bs_poll_slice(pfd, (nfds_t)(npend + 1 + nw + nx), dl);
        if (status == SYMCOLL_OK)
            status = bs_watch_check(&pfd[npend + 1], nw, wpeer, missing, a->who, wskip, &nskip);
        if (status == SYMCOLL_OK && a->extra_handle)
            status = a->extra_handle(bs, a->ctx, &pfd[npend + 1 + nw], nx, &missing);
        if (status != SYMCOLL_OK) {
            if (status == SYMCOLL_ERR_TIMED_OUT && a->open_ended)
                log_debug("bootstrap: timed out waiting for %s", a->who);
            else if (status == SYMCOLL_ERR_TIMED_OUT)
                log_error("bootstrap: timed out: %d %s never connected%s", missing, a->who,
                          dropped ? " (connections were dropped; SYMCOLL_LOG_LEVEL=info "
                                    "says why)"
                                  : "");
            goto out;
        }
        /* pending connections first: slots may free up before accepting more */
        for (int i = npend - 1; i >= 0; i--) {
            int slot;
            if (!pfd[i + 1].revents)
                continue;
            slot = bs_pending_read(bs, a, &pend[i]);
            if (slot == -1)
                continue;
            if (slot >= 0) {
                a->slots[slot] = pend[i].fd;
                missing--;
            } else {
                bs_reject(bs, a, pend[i].fd);
                close(pend[i].fd);
                dropped++;
            }
            npend--;
            memmove(&pend[i], &pend[i + 1], (size_t)(npend - i) * sizeof(pend[0]));
        }
        if (!(pfd[0].revents & POLLIN))
            continue;
        for (;;) {
            int fd;
            if (npend == BS_MAX_PENDING && time_now() - pend[0].since < BS_PENDING_GRACE_SEC)
                break; /* the rest wait in the listen queue until slots free up */
            fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                break;
            if (a->admit && a->admit(fd)) {
                close(fd);
                dropped++;
                continue;
            }
            if (npend == BS_MAX_PENDING) {
                log_info("bootstrap: too many connections that have not said hello; "
                         "dropping the oldest (from %s, silent for %.1f s)",
                         pend[0].from, time_now() - pend[0].since);
                close(pend[0].fd);
                dropped++;
                npend--;
                memmove(&pend[0], &pend[1], (size_t)npend * sizeof(pend[0]));
            }
            memset(&pend[npend], 0, sizeof(pend[npend]));
            pend[npend].fd = fd;
            pend[npend].since = time_now();
            bs_peer_name(fd, pend[npend].from, sizeof(pend[npend].from));
            if (a->challenge) {
                bool sent;
                status = bs_send_challenge(bs, a, &pend[npend], &sent);
                if (status != SYMCOLL_OK) {
                    close(fd);
                    goto out;
                }
                if (!sent) {
                    close(fd);
                    dropped++;
                    continue;
                }
            }
            npend++;
        }
    }
out:
    for (int i = 0; i < npend; i++)
        close(pend[i].fd);
    free(pend);
    free(pfd);
    free(wpeer);
    free(wskip);
    return status;
}
