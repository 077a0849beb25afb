/* Host leaders of the built-in TCP rendezvous: the ranks of one host meet on an abstract
 * Unix socket, the first to bind it leads, and only the leader connects to rank 0, which
 * then serves one connection per host instead of one per rank (the protocol is in
 * bs_int.h). A member runs the joiner's side of the rendezvous against its leader as it
 * would against rank 0: the leader knows the job's secret, so the proofs are the same. */
#define _GNU_SOURCE
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pause between attempts while another rank of the host is between binding the name
 * and listening on it, or its listen queue is full (ms). */
#define BS_ELECT_RETRY_MS 1

typedef struct bs_lead_member {
    int rank;
    uint8_t proof[BS_MAC_LEN]; /* the leader's answer to its challenge */
} bs_lead_member_t;

struct bs_lead {
    int *slots; /* by rank: a member's connection, -1 for the others */
    bs_lead_member_t *m;
    int nm, cap;
    unsigned char *out; /* MEMBER messages not yet sent to rank 0 */
    size_t nout, capout;
    const deadline_t *dl;
    symcoll_status_t failed; /* passing a member on to rank 0 failed */
    bool told;               /* the members had their welcome (or the failure) */
};

/* The abstract name of the rendezvous of one host: the job's secret, rank 0's address,
 * the job size and the group (SYMCOLL_HOST_ID) under SHA-256, so that another job, or a
 * simulated node of this one, meets elsewhere, and with a secret nobody outside the job
 * can take the name first. */
static socklen_t bs_host_name(const bootstrap_t *bs, const char *addr, const char *group,
                              struct sockaddr_un *sa)
{
    static const char label[] = "symcoll rendezvous of a host";
    uint8_t tag[BS_SHA256_LEN], n[4];
    bs_hmac_t m;
    int len;

    for (int i = 0; i < 4; i++)
        n[i] = (uint8_t)((uint32_t)bs->nranks >> (8 * i));
    bs_hmac_init(&m, bs->secret, bs->secret_len);
    bs_hmac_update(&m, label, sizeof(label));
    bs_hmac_update(&m, addr, strlen(addr) + 1);
    bs_hmac_update(&m, n, sizeof(n));
    bs_hmac_update(&m, group, strlen(group) + 1);
    bs_hmac_final(&m, tag);
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    len = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "symcoll-rdv-");
    for (int i = 0; i < 16; i++)
        len += snprintf(sa->sun_path + 1 + len, sizeof(sa->sun_path) - 1 - (size_t)len,
                        "%02x", tag[i]);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* A socket whose local address is the interface that reaches rank 0: a connected UDP
 * socket (connect sends nothing). */
static symcoll_status_t bs_route_socket(const char *addr, int *fd_p)
{
    struct addrinfo *res = NULL;
    symcoll_status_t status = bs_resolve_addr(addr, &res);
    int err = 0;

    if (status != SYMCOLL_OK)
        return status;
    *fd_p = -1;
    for (struct addrinfo *ai = res; ai && *fd_p < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            *fd_p = fd;
        else {
            err = errno;
            if (fd >= 0)
                close(fd);
        }
    }
    freeaddrinfo(res);
    if (*fd_p >= 0)
        return SYMCOLL_OK;
    log_error("bootstrap: no route to rank 0 at %s: %s", addr, strerror(err));
    return SYMCOLL_ERR_BOOTSTRAP;
}

symcoll_status_t bs_host_join(bootstrap_t *bs, const char *addr, const char *group,
                              const deadline_t *dl)
{
    struct sockaddr_un sa;
    socklen_t sl = bs_host_name(bs, addr, group, &sa);
    symcoll_status_t status;

    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;
        if (fd < 0)
            goto sys;
        if (connect(fd, (struct sockaddr *)&sa, sl) == 0) {
            int route = -1;
            status = bs_route_socket(addr, &route);
            if (status == SYMCOLL_OK) {
                log_debug("bootstrap: rank %d joins through its host's leader", bs->rank);
                status = bs_tcp_join_on(bs, addr, fd, -1, route, dl);
            } else {
                close(fd);
            }
            bs_close(&route);
            return status;
        }
        err = errno;
        close(fd);
        if (err == ECONNREFUSED) { /* nobody listens: lead, unless another rank binds first */
            fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0)
                goto sys;
            if (bind(fd, (struct sockaddr *)&sa, sl) == 0 && listen(fd, SOMAXCONN) == 0) {
                int rfd = -1;
                log_debug("bootstrap: rank %d leads its host's ranks in the rendezvous",
                          bs->rank);
                status = bs_tcp_dial_rank0(addr, dl, &rfd);
                if (status != SYMCOLL_OK) {
                    close(fd);
                    return status;
                }
                return bs_tcp_join_on(bs, addr, rfd, fd, -1, dl);
            }
            err = errno;
            close(fd);
            if (err != EADDRINUSE) {
                errno = err;
                goto sys;
            }
        } else if (err != EAGAIN) {
            errno = err;
            goto sys;
        }
        status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            if (status == SYMCOLL_ERR_TIMED_OUT)
                log_error("bootstrap: timed out meeting this host's ranks for the "
                          "rendezvous");
            return status;
        }
        poll(NULL, 0, BS_ELECT_RETRY_MS);
    }
sys:
    log_error("bootstrap: the rendezvous of this host's ranks: %s", strerror(errno));
    return SYMCOLL_ERR_SYSTEM;
}

/* A member's HELLO and AUTH: checked as rank 0 would, then passed on to rank 0. */
static int bs_lead_judge(bootstrap_t *bs, const void *msg, const uint8_t *n0, const char *from,
                         void *ctx)
{
    bs_lead_t *l = ctx;
    bs_hello_t hello;
    bs_member_t rec;
    bs_hdr_t h;
    int r;

    if (!bs_join_verify(bs, msg, n0, from, &r, &hello))
        return -1;
    if (r == bs->rank || l->slots[r] >= 0) {
        log_error("bootstrap: rank %d met its host's leader a second time (from %s); "
                  "dropped: two processes were given the same rank",
                  r, from);
        return -1;
    }
    if (l->nm == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        bs_lead_member_t *m = realloc(l->m, (size_t)cap * sizeof(*m));
        if (!m) {
            l->failed = SYMCOLL_ERR_NO_MEMORY;
            return -1;
        }
        l->m = m;
        l->cap = cap;
    }
    if (l->nout + sizeof(h) + sizeof(rec) > l->capout) {
        size_t cap = l->capout ? 2 * l->capout : 16 * (sizeof(h) + sizeof(rec));
        unsigned char *out = realloc(l->out, cap);
        if (!out) {
            l->failed = SYMCOLL_ERR_NO_MEMORY;
            return -1;
        }
        l->out = out;
        l->capout = cap;
    }
    /* queued: the members that proved themselves in one turn of the loop go to rank 0
     * together (bs_lead_fill) */
    memset(&rec, 0, sizeof(rec));
    rec.rank = (uint32_t)r;
    rec.nranks = (uint32_t)bs->nranks;
    rec.listen = hello.listen;
    bs_hdr_fill(bs, &h, BS_MSG_MEMBER, 0, sizeof(rec), 0);
    h.session = 0; /* before the welcome, as the joiner's own messages */
    memcpy(l->out + l->nout, &h, sizeof(h));
    memcpy(l->out + l->nout + sizeof(h), &rec, sizeof(rec));
    l->nout += sizeof(h) + sizeof(rec);
    l->m[l->nm].rank = r;
    bs_proof(bs, true, n0, hello.nonce, (uint32_t)r, l->m[l->nm].proof);
    l->nm++;
    return r;
}

/* The leader waits on its members' listener and on rank 0's connection, whose first
 * word (the welcome, or its end) ends the wait. */
static int bs_lead_fill(bootstrap_t *bs, void *ctx, struct pollfd *p)
{
    bs_lead_t *l = ctx;
    size_t off = 0;

    /* the queued MEMBER messages, at once (a full socket buffer: rank 0 reads them while
     * it waits, so this waits for room within the deadline) */
    while (off < l->nout && l->failed == SYMCOLL_OK) {
        ssize_t r = send(bs->root_fd, l->out + off, l->nout - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r > 0) {
            off += (size_t)r;
            bs->stats.tcp_bytes_sent += (uint64_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            l->failed = bs_poll_one(bs->root_fd, POLLOUT, l->dl);
        } else {
            log_error("bootstrap: passing members on to rank 0 failed: %s",
                      r < 0 ? strerror(errno) : "short write");
            l->failed = SYMCOLL_ERR_PEER_FAILED;
        }
    }
    if (off) {
        bs->stats.tcp_msgs_sent++;
        l->nout = 0;
    }
    p->fd = bs->root_fd;
    p->events = POLLIN | POLLRDHUP;
    return 1;
}

static symcoll_status_t bs_lead_handle(bootstrap_t *bs, void *ctx, const struct pollfd *p,
                                       int n, int *missing)
{
    bs_lead_t *l = ctx;

    (void)bs;
    if (l->failed != SYMCOLL_OK)
        return l->failed;
    if (n > 0 && p->revents)
        *missing = 0;
    return SYMCOLL_OK;
}

symcoll_status_t bs_lead_gather(bootstrap_t *bs, int lead, bs_lead_t **lp, const deadline_t *dl)
{
    bs_lead_t *l = calloc(1, sizeof(*l));
    bs_acceptor_t a = {.type = BS_MSG_HELLO,
                       .hello_len = sizeof(bs_hello_t),
                       .msg_len = BS_JOIN_LEN,
                       .challenge = true,
                       .admit = bs_local_admit,
                       .judge = bs_lead_judge,
                       .who = "rank 0's welcome (the whole job to join)",
                       .extra_max = 1,
                       .extra_fill = bs_lead_fill,
                       .extra_handle = bs_lead_handle,
                       .open_ended = true};
    symcoll_status_t status;

    *lp = l;
    if (!l || !(l->slots = malloc((size_t)bs->nranks * sizeof(int)))) {
        close(lead);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    for (int r = 0; r < bs->nranks; r++)
        l->slots[r] = -1;
    l->dl = dl;
    a.ctx = l;
    a.slots = l->slots;
    status = bs_accept_hellos(bs, lead, &a, INT_MAX, dl);
    /* the job is complete (or failed): a late connection is a stray */
    close(lead);
    return status;
}

symcoll_status_t bs_lead_finish(bootstrap_t *bs, bs_lead_t *l, uint32_t members,
                                const deadline_t *dl)
{
    int K = bs_mesh_rounds(bs->nranks);
    size_t rl = bs_group_rec_len(K);
    unsigned char *recs = NULL;
    bs_xfer_t *x = NULL;
    bool *taken = NULL;
    bs_welcome_t *w = NULL;
    symcoll_status_t status = SYMCOLL_OK;
    int nx = 0;

    if (members > (uint32_t)l->nm) {
        log_error("bootstrap: rank 0 names %u members of this host's leader, which has %d",
                  members, l->nm);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    recs = malloc(members ? members * rl : 1);
    x = calloc(members ? members : 1, sizeof(*x));
    w = calloc(members ? members : 1, sizeof(*w));
    taken = calloc((size_t)bs->nranks, sizeof(*taken));
    if (!recs || !x || !w || !taken) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    if (members) {
        bs_xfer_t xi;
        memset(&xi, 0, sizeof(xi));
        xi.fd = bs->root_fd;
        xi.peer = 0;
        xi.recv = true;
        xi.rtype = BS_MSG_GROUP_PEERS;
        xi.rlen = members * rl;
        xi.rbuf = recs;
        status = bs_xfer_run(bs, &xi, 1, dl);
        if (status != SYMCOLL_OK)
            goto out;
    }
    /* every member rank 0 took gets its welcome, then its partners */
    l->told = true;
    for (uint32_t i = 0; i < members; i++) {
        const bs_group_rec_t *g = (const bs_group_rec_t *)(const void *)(recs + i * rl);
        int j = 0;
        if (g->rank >= (uint32_t)bs->nranks || l->slots[g->rank] < 0 || taken[g->rank]) {
            log_error("bootstrap: rank 0 names rank %u as a member of this host's leader, "
                      "which it is not",
                      g->rank);
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto out;
        }
        taken[g->rank] = true;
        while (l->m[j].rank != (int)g->rank)
            j++;
        memcpy(w[i].proof, l->m[j].proof, sizeof(w[i].proof));
        w[i].job_id = bs->job_id;
        memcpy(w[i].name_seed, bs->name_seed, sizeof(w[i].name_seed));
        x[nx].fd = l->slots[g->rank];
        x[nx].peer = (int)g->rank;
        x[nx].send = true;
        x[nx].unix_sock = true;
        bs_hdr_fill(bs, &x[nx].shdr, BS_MSG_WELCOME, 0, sizeof(bs_welcome_t), 0);
        x[nx].sbuf = &w[i];
        nx++;
    }
    status = bs_xfer_run(bs, x, nx, dl);
    if (status != SYMCOLL_OK)
        goto out;
    for (int i = 0; i < nx; i++) {
        const bs_group_rec_t *g = (const bs_group_rec_t *)(const void *)(recs + (size_t)i * rl);
        x[i].send = true; /* a transfer done is off */
        bs_hdr_fill(bs, &x[i].shdr, BS_MSG_PEERS, 0, (size_t)K * sizeof(bs_addr_t), 0);
        x[i].sbuf = g->to;
    }
    status = bs_xfer_run(bs, x, nx, dl);
    if (status != SYMCOLL_OK)
        goto out;
    /* one rank 0 did not take joined as a rank that another process holds */
    for (int i = 0; i < l->nm; i++)
        if (!taken[l->m[i].rank]) {
            bs_hdr_t h;
            bs_hdr_fill(bs, &h, BS_MSG_REJECT, 0, 0, 0);
            (void)send(l->slots[l->m[i].rank], &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
    bs->stats.rendezvous_members = nx;
out:
    free(recs);
    free(x);
    if (w)
        bs_wipe(w, (members ? members : 1) * sizeof(*w));
    free(w);
    free(taken);
    return status;
}

void bs_lead_give_up(bootstrap_t *bs, bs_lead_t *l, symcoll_status_t why, uint32_t missing)
{
    deadline_t dl = deadline_make(0.5, NULL);

    if (!l || l->told)
        return;
    l->told = true;
    /* one at a time: a member gone since must not keep the others from their answer */
    for (int i = 0; i < l->nm; i++) {
        bs_welcome_t w;
        bs_xfer_t x;
        memset(&w, 0, sizeof(w));
        memcpy(w.proof, l->m[i].proof, sizeof(w.proof));
        w.gave_up = (int32_t)why;
        w.missing = missing;
        memset(&x, 0, sizeof(x));
        x.fd = l->slots[l->m[i].rank];
        x.peer = l->m[i].rank;
        x.send = true;
        x.unix_sock = true;
        bs_hdr_fill(bs, &x.shdr, BS_MSG_WELCOME, 0, sizeof(w), 0);
        x.sbuf = &w;
        (void)bs_xfer_run(bs, &x, 1, &dl);
    }
}

void bs_lead_free(bs_lead_t *l)
{
    if (!l)
        return;
    if (l->slots)
        for (int i = 0; i < l->nm; i++)
            bs_close(&l->slots[l->m[i].rank]);
    if (l->m)
        bs_wipe(l->m, (size_t)l->cap * sizeof(*l->m));
    free(l->m);
    free(l->out);
    free(l->slots);
    free(l);
}
