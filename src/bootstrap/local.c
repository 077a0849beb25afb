/* Node-local channel: abstract-namespace Unix sockets among the ranks of one node,
 * carrying data and file descriptors (SCM_RIGHTS). Each local rank l connects to the
 * ranks l +- 2^k (mod L) only, at most 2 ceil(log2 L) sockets (5 at 8 ranks a node, 15 at
 * 256), and the all-gather runs over them in ceil(log2 L) rounds
 * (Bruck's dissemination: in round k a rank sends what it holds of the first 2^k ranks
 * from itself to l - 2^k and gets as much from l + 2^k), descriptors forwarded hop by hop.
 * The socket names are unguessable outside the job; both ends of every connection check
 * the other's uid (SO_PEERCRED) and the job's session. */
#define _GNU_SOURCE /* accept4, struct ucred, MSG_CMSG_CLOEXEC */
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void bs_local_name_key(bootstrap_t *bs)
{
    static const char label[] = "symcoll local socket names";
    bs_hmac_t m;

    bs_hmac_init(&m, bs->secret, bs->secret_len);
    bs_hmac_update(&m, label, sizeof(label));
    bs_hmac_update(&m, bs->name_seed, sizeof(bs->name_seed));
    bs_hmac_final(&m, bs->name_key);
}

/* Abstract name: no file to clean up after a crash. 128 bits of an HMAC keyed with the
 * name key, which comes from rank 0's random seed (and the job's secret when there is
 * one): nobody outside the job can name a rank's socket before that rank has bound it,
 * so nobody can take the name first. Once bound, a name is visible in /proc/net/unix;
 * the SO_PEERCRED checks keep other users out all the same. */
socklen_t bs_local_name(const bootstrap_t *bs, int grank, struct sockaddr_un *sa)
{
    static const char label[] = "symcoll local socket of rank";
    uint8_t tag[BS_SHA256_LEN], r[4];
    bs_hmac_t m;
    int n = 0;

    for (int i = 0; i < 4; i++)
        r[i] = (uint8_t)((uint32_t)grank >> (8 * i));
    bs_hmac_init(&m, bs->name_key, sizeof(bs->name_key));
    bs_hmac_update(&m, label, sizeof(label));
    bs_hmac_update(&m, r, sizeof(r));
    bs_hmac_final(&m, tag);
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "symcoll-");
    for (int i = 0; i < 16; i++)
        n += snprintf(sa->sun_path + 1 + n, sizeof(sa->sun_path) - 1 - (size_t)n, "%02x",
                      tag[i]);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* The process on the other end must run as our effective uid. */
static symcoll_status_t bs_check_peer_uid(int fd, const char *what)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
        log_error("bootstrap: SO_PEERCRED on %s failed: %s", what, strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    if (cr.uid != geteuid()) {
        log_error("bootstrap: %s belongs to uid %u (pid %d), not to us (uid %u); rejected",
                  what, (unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid());
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    return SYMCOLL_OK;
}

void bs_local_close(bootstrap_t *bs)
{
    if (!bs->local_fds)
        return;
    for (int i = 0; i < bs->local_size; i++)
        bs_close(&bs->local_fds[i]);
    bs->local_ready = false;
}

/* Whether local ranks a and b are partners of the channel: b = a +- 2^k (mod L). The
 * relation is symmetric. */
static bool bs_local_partner(int L, int a, int b)
{
    int d = ((b - a) % L + L) % L;

    for (long p = 1; a != b && p < L; p <<= 1)
        if (d == p || d == L - p)
            return true;
    return false;
}

static int bs_local_index(const bootstrap_t *bs, int grank)
{
    for (int i = 0; i < bs->local_size; i++)
        if (bs->local_ranks[i] == grank)
            return i;
    return -1;
}

/* Connect to a lower local rank, retrying until it listens. */
static symcoll_status_t bs_local_dial(bootstrap_t *bs, int peer, const deadline_t *dl)
{
    struct sockaddr_un sa;
    socklen_t sl = bs_local_name(bs, bs->local_ranks[peer], &sa);
    char what[64];
    symcoll_status_t status;
    bs_hdr_t h;
    int fd;

    snprintf(what, sizeof(what), "the socket of local rank %d", peer);
    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            log_error("bootstrap: socket(AF_UNIX) failed: %s", strerror(errno));
            return SYMCOLL_ERR_SYSTEM;
        }
        if (!connect(fd, (struct sockaddr *)&sa, sl))
            break;
        if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN) {
            log_error("bootstrap: connecting to %s failed: %s", what, strerror(errno));
            close(fd);
            return SYMCOLL_ERR_BOOTSTRAP;
        }
        close(fd);
        status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            if (status == SYMCOLL_ERR_TIMED_OUT)
                log_error("bootstrap: timed out connecting to local rank %d (global rank %d)",
                          peer, bs->local_ranks[peer]);
            return status;
        }
        /* a partner that died while this rank waits ends the wait */
        status = bs_watch_sleep(bs, 5, "a lower local rank to listen");
        if (status != SYMCOLL_OK)
            return status;
    }
    /* whoever holds the name must be one of ours (another uid that learnt it is not) */
    status = bs_check_peer_uid(fd, what);
    if (status != SYMCOLL_OK)
        goto err;
    bs_hdr_fill(bs, &h, BS_MSG_LOCAL_HELLO, 0, 0, 0);
    /* a fresh socket has room for a header: this does not block */
    if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
        log_error("bootstrap: hello to local rank %d failed: %s", peer, strerror(errno));
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto err;
    }
    bs->local_fds[peer] = fd;
    return SYMCOLL_OK;
err:
    close(fd);
    return status;
}

/* Another user's process may not join: dropped before it is read. */
int bs_local_admit(int fd)
{
    return bs_check_peer_uid(fd, "an accepted local connection") != SYMCOLL_OK;
}

/* A complete hello: the local index of the higher rank it introduces, or -1. */
static int bs_local_judge(bootstrap_t *bs, const void *msg, const uint8_t *nonce,
                          const char *from, void *ctx)
{
    bs_hdr_t h;
    char what[96];
    int idx;

    (void)nonce;
    (void)ctx;
    memcpy(&h, msg, sizeof(h));
    idx = h.rank < (uint32_t)bs->nranks ? bs_local_index(bs, (int)h.rank) : -1;
    snprintf(what, sizeof(what), "local connection from %s", from);
    if (idx <= bs->local_rank || !bs_local_partner(bs->local_size, bs->local_rank, idx)) {
        log_error("bootstrap: %s claims rank %u, which is not a higher partner of this "
                  "node's channel; dropped",
                  what, h.rank);
        return -1;
    }
    if (bs_hdr_check(bs, &h, BS_MSG_LOCAL_HELLO, (int)h.rank, 0, 0, 0, false, what) !=
        SYMCOLL_OK)
        return -1;
    return idx;
}

symcoll_status_t bootstrap_local_init(bootstrap_t *bs, int local_rank, int local_size,
                                      const int *local_ranks)
{
    int *ranks = NULL, *fds = NULL, lfd = -1, higher = 0;
    bs_xfer_t *x = NULL;
    symcoll_status_t status;
    struct sockaddr_un sa;
    socklen_t sl;
    deadline_t dl;
    int nx = 0;

    if (!bs || local_size < 1 || local_size > bs->nranks || local_rank < 0 ||
        local_rank >= local_size || !local_ranks || local_ranks[local_rank] != bs->rank) {
        log_error("bootstrap_local_init: invalid arguments");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    for (int i = 0; i < local_size; i++) {
        if (local_ranks[i] < 0 || local_ranks[i] >= bs->nranks)
            goto err_arg;
        for (int k = 0; k < i; k++)
            if (local_ranks[k] == local_ranks[i])
                goto err_arg;
    }
    if (bs->local_ready) {
        log_error("bootstrap_local_init: the local channel is already open");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    ranks = malloc((size_t)local_size * sizeof(int));
    fds = malloc((size_t)local_size * sizeof(int));
    x = calloc((size_t)local_size, sizeof(*x));
    if (!ranks || !fds || !x) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err;
    }
    memcpy(ranks, local_ranks, (size_t)local_size * sizeof(int));
    for (int i = 0; i < local_size; i++)
        fds[i] = -1;
    free(bs->local_ranks);
    free(bs->local_fds);
    bs->local_ranks = ranks;
    bs->local_fds = fds;
    bs->local_rank = local_rank;
    bs->local_size = local_size;
    bs->local_seq = 1;
    ranks = fds = NULL;
    if (local_size == 1) {
        bs->local_ready = true;
        free(x);
        return SYMCOLL_OK;
    }

    dl = deadline_make(bs->timeout_sec, bs->aborted);
    for (int i = local_rank + 1; i < local_size; i++)
        higher += bs_local_partner(local_size, local_rank, i);
    if (higher) {
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (lfd < 0) {
            log_error("bootstrap: socket(AF_UNIX) failed: %s", strerror(errno));
            status = SYMCOLL_ERR_SYSTEM;
            goto err;
        }
        sl = bs_local_name(bs, bs->rank, &sa);
        if (bind(lfd, (struct sockaddr *)&sa, sl) || listen(lfd, local_size + 8)) {
            log_error("bootstrap: cannot listen on the local socket @%s: %s", sa.sun_path + 1,
                      strerror(errno));
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto err;
        }
    }
    /* lower partners are dialled (the kernel queues the connection until they accept),
     * higher partners accepted: no ordering between ranks is needed */
    for (int i = 0; i < local_rank; i++) {
        if (!bs_local_partner(local_size, local_rank, i))
            continue;
        status = bs_local_dial(bs, i, &dl);
        if (status != SYMCOLL_OK)
            goto err;
    }
    if (lfd >= 0) {
        bs_acceptor_t acceptor = {.type = BS_MSG_LOCAL_HELLO,
                                  .hello_len = 0,
                                  .msg_len = sizeof(bs_hdr_t),
                                  .admit = bs_local_admit,
                                  .judge = bs_local_judge,
                                  .slots = bs->local_fds,
                                  .who = "local rank(s)"};
        status = bs_accept_hellos(bs, lfd, &acceptor, higher, &dl);
        bs_close(&lfd);
        if (status != SYMCOLL_OK)
            goto err;
    }
    /* answer the higher partners so they know the listener is of this job */
    for (int i = 0; i < local_size; i++) {
        bs_xfer_t *xi = &x[nx];
        if (!bs_local_partner(local_size, local_rank, i))
            continue;
        xi->fd = bs->local_fds[i];
        xi->peer = local_ranks[i];
        if (i > local_rank) {
            xi->send = true;
            bs_hdr_fill(bs, &xi->shdr, BS_MSG_LOCAL_HELLO, 0, 0, 0);
        } else {
            xi->recv = true;
            xi->rtype = BS_MSG_LOCAL_HELLO;
            xi->rseq = 0;
        }
        nx++;
    }
    status = bs_xfer_run(bs, x, nx, &dl);
    if (status != SYMCOLL_OK)
        goto err;
    free(x);
    bs->local_ready = true;
    log_debug("bootstrap: local channel open, local rank %d of %d", local_rank, local_size);
    return SYMCOLL_OK;

err_arg:
    log_error("bootstrap_local_init: invalid local rank list");
    return SYMCOLL_ERR_INVALID_PARAM;
err:
    bs_close(&lfd);
    bs_local_close(bs);
    free(ranks);
    free(fds);
    free(x);
    return status;
}

/* One message of a round of bs_local_bruck, both ways: the send to local rank `to` and
 * the receive from `from` (one transfer where they are the same rank). */
static symcoll_status_t bs_local_swap(bootstrap_t *bs, int to, int from, uint64_t seq,
                                      const void *sbuf, void *rbuf, size_t len, const int *sfds,
                                      int *rfds, int nfds, const deadline_t *dl)
{
    bs_xfer_t x[2];
    int n = 0;

    memset(x, 0, sizeof(x));
    x[0].fd = bs->local_fds[to];
    x[0].peer = bs->local_ranks[to];
    x[0].send = true;
    bs_hdr_fill(bs, &x[0].shdr, BS_MSG_LOCAL_DATA, seq, len, (uint32_t)nfds);
    x[0].sbuf = sbuf;
    x[0].sfds = sfds;
    if (from != to) {
        n++;
        x[n].fd = bs->local_fds[from];
        x[n].peer = bs->local_ranks[from];
    }
    x[n].recv = true;
    x[n].rtype = BS_MSG_LOCAL_DATA;
    x[n].rseq = seq;
    x[n].rlen = len;
    x[n].rbuf = rbuf;
    x[n].rfds = nfds ? rfds : NULL;
    x[n].rnfds = nfds;
    return bs_xfer_run(bs, x, n + 1, dl);
}

/* The all-gather of bootstrap_local_fd_allgather over the channel's partners, this
 * rank's own block already in place: round k (d = 2^k) sends the min(d, L - d) blocks
 * held from this rank on (local ranks me .. me + cnt - 1, mod L) to me - d and gets
 * as many, those from me + d on, from me + d. Descriptors go at most BS_MAX_FDS to a
 * message (the first carries the data too). A message's sequence number names the call
 * and the round. Received descriptors are in all_fds, also on failure (the caller
 * closes them). */
static symcoll_status_t bs_local_bruck(bootstrap_t *bs, int nfds, size_t len, int *all_fds,
                                       void *all_data, const deadline_t *dl)
{
    int L = bs->local_size, me = bs->local_rank, half = L / 2 + L % 2;
    char *sbuf = NULL, *rbuf = NULL;
    int *sfds = NULL, *rfds = NULL;
    symcoll_status_t status = SYMCOLL_ERR_NO_MEMORY;
    uint64_t round = 0;

    /* a round moves at most ceil(L / 2) blocks */
    if (len && (!(sbuf = malloc((size_t)half * len)) || !(rbuf = malloc((size_t)half * len))))
        goto out;
    if (nfds && (!(sfds = malloc((size_t)half * (size_t)nfds * sizeof(int))) ||
                 !(rfds = malloc((size_t)half * (size_t)nfds * sizeof(int)))))
        goto out;
    status = SYMCOLL_OK;
    for (int d = 1; d < L && status == SYMCOLL_OK; d <<= 1, round++) {
        int cnt = d < L - d ? d : L - d, to = (me - d + L) % L, from = (me + d) % L;
        int total = cnt * nfds, sent = 0;
        uint64_t seq = (bs->local_seq << 6) | round;

        for (int j = 0; j < cnt; j++) {
            int b = (me + j) % L;
            if (len)
                memcpy(sbuf + (size_t)j * len, (char *)all_data + (size_t)b * len, len);
            for (int f = 0; f < nfds; f++)
                sfds[j * nfds + f] = all_fds[b * nfds + f];
        }
        /* one message at least: the data (or the barrier's empty one) */
        do {
            int m = total - sent < BS_MAX_FDS ? total - sent : BS_MAX_FDS;
            size_t bytes = sent ? 0 : (size_t)cnt * len;
            status = bs_local_swap(bs, to, from, seq, sbuf, rbuf, bytes,
                                   sfds ? sfds + sent : NULL, rfds ? rfds + sent : NULL, m, dl);
            sent += m;
        } while (status == SYMCOLL_OK && sent < total);
        /* what came in goes to its ranks' slots: received descriptors are the caller's
         * to close from here on, also after a failure of a later piece */
        for (int j = 0; j < cnt; j++) {
            int b = (from + j) % L;
            for (int f = 0; f < nfds; f++)
                if (j * nfds + f < sent)
                    all_fds[b * nfds + f] = rfds[j * nfds + f];
            if (len && status == SYMCOLL_OK)
                memcpy((char *)all_data + (size_t)b * len, rbuf + (size_t)j * len, len);
        }
    }
out:
    free(sbuf);
    free(rbuf);
    free(sfds);
    free(rfds);
    return status;
}

symcoll_status_t bootstrap_local_fd_allgather(bootstrap_t *bs, const int *fds, int nfds,
                                              const void *data, size_t len, int *all_fds,
                                              void *all_data)
{
    int ls, me;
    symcoll_status_t status;
    deadline_t dl;

    if (!bs || nfds < 0 || nfds > BS_MAX_FDS || (nfds && (!fds || !all_fds)) ||
        (len && (!data || !all_data)) || len > BS_MAX_PAYLOAD) {
        log_error("bootstrap_local_fd_allgather: invalid arguments");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    for (int k = 0; k < nfds; k++) {
        if (fcntl(fds[k], F_GETFD) < 0) {
            log_error("bootstrap_local_fd_allgather: descriptor %d is not open", fds[k]);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
    }
    if (bs->failed != SYMCOLL_OK) {
        log_error("bootstrap: an earlier exchange failed; the channel is unusable");
        return bs->failed;
    }
    ls = bs->local_size;
    me = bs->local_rank;
    if (ls > 1 && !bs->local_ready) {
        log_error("bootstrap_local_fd_allgather: the local channel is not open");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    /* a round's message carries up to ceil(L / 2) ranks' data */
    if (ls > 1 && len > BS_MAX_PAYLOAD / (uint64_t)(ls / 2 + ls % 2)) {
        log_error("bootstrap_local_fd_allgather: %zu bytes a rank is more than %d local ranks "
                  "can forward in one message",
                  len, ls);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    for (int i = 0; i < ls * nfds; i++)
        all_fds[i] = -1;
    for (int k = 0; k < nfds; k++) {
        all_fds[me * nfds + k] = fcntl(fds[k], F_DUPFD_CLOEXEC, 0);
        if (all_fds[me * nfds + k] < 0) {
            log_error("bootstrap: dup of descriptor %d failed: %s", fds[k], strerror(errno));
            status = SYMCOLL_ERR_SYSTEM;
            goto err;
        }
    }
    if (len)
        memcpy((char *)all_data + (size_t)me * len, data, len);
    if (ls == 1)
        return SYMCOLL_OK;

    dl = deadline_make(bs->timeout_sec, bs->aborted);
    status = bs_local_bruck(bs, nfds, len, all_fds, all_data, &dl);
    bs->local_seq++;
    if (status != SYMCOLL_OK) {
        bs->failed = status;
        bs_shut_all(bs);
        goto err;
    }
    return SYMCOLL_OK;

err:
    for (int i = 0; i < ls * nfds; i++)
        bs_close(&all_fds[i]);
    return status;
}

symcoll_status_t bootstrap_local_barrier(bootstrap_t *bs)
{
    return bootstrap_local_fd_allgather(bs, NULL, 0, NULL, 0, NULL, NULL);
}
