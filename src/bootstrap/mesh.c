/* The TCP mesh of the built-in bootstrap and the global collectives over it. With n
 * ranks and K = ceil(log2 n) rounds, in round k rank r sends to (r - 2^k) mod n and
 * receives from (r + 2^k) mod n, one connection per distinct partner: the earlier of
 * two rounds j < k with 2^j + 2^k = n connects (r dials r - 2^j, accepts r + 2^j) and the
 * later one uses those two connections the other way round; in a round that is its own
 * twin (n = 2^(k+1)) the partner is the same rank both ways, and the lower rank dials.
 * So 2K sockets per rank, less 2 for each twin pair j < k and 1 for a self-twin (3
 * ranks: 2; 64: 11; 96: 12), and no rank carries more than the others. Each connection
 * starts with a mutual proof of the job's secret (see bs_int.h). Allgather is Bruck's
 * (round k forwards the min(2^k, n - 2^k) blocks gathered so far; every rank sends
 * (n - 1) blocks in all, then rotates them into rank order); all-reduce is the
 * dissemination pattern with the operation applied on receipt (MIN and MAX are
 * idempotent, so blocks counted twice when n is not a power of two do no harm). Each
 * direction of a connection carries at most one message per round, so messages of
 * shared connections keep their rounds' order. */
#define _GNU_SOURCE
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int bs_mesh_rounds(int nranks)
{
    int k = 0;

    while ((1L << k) < nranks)
        k++;
    return k;
}

int bs_mesh_to(const bootstrap_t *bs, int k)
{
    long n = bs->nranks;
    return (int)((bs->rank - (1L << k) % n + n) % n);
}

int bs_mesh_from(const bootstrap_t *bs, int k)
{
    return (int)((bs->rank + (1L << k)) % bs->nranks);
}

/* The round j whose pair of ranks is round k's reversed, or -1. Rank r's partners of
 * round k are r - 2^k and r + 2^k; with 2^j, 2^k < n two rounds' partners coincide only
 * when n = 2^k + 2^j (then r - 2^k = r + 2^j): one connection serves both rounds. */
static int bs_mesh_twin(int nranks, int k)
{
    long rest = (long)nranks - (1L << k);
    int j = 0;

    if (rest <= 0 || (rest & (rest - 1)))
        return -1;
    while ((1L << j) < rest)
        j++;
    return j;
}

enum { BS_MESH_DIAL = 1, BS_MESH_ACCEPT = 2 };

/* What this rank opens for round k: a dialed connection to bs_mesh_to, an accepted one
 * from bs_mesh_from, both, or neither (round k uses its twin's, reversed). Of twin
 * rounds the earlier connects; in a round that is its own twin (n = 2^(k+1), the
 * partner is the same rank both ways) the lower rank dials. */
static int bs_mesh_role(const bootstrap_t *bs, int k)
{
    int j = bs_mesh_twin(bs->nranks, k);

    if (j < 0 || j > k)
        return BS_MESH_DIAL | BS_MESH_ACCEPT;
    if (j < k)
        return 0;
    return bs->rank < bs_mesh_to(bs, k) ? BS_MESH_DIAL : BS_MESH_ACCEPT;
}

bool bs_mesh_owns(const bootstrap_t *bs, int k, bool send)
{
    return bs_mesh_role(bs, k) & (send ? BS_MESH_DIAL : BS_MESH_ACCEPT);
}

/* Every round's descriptors once the owned ones are connected. */
static void bs_mesh_share(bootstrap_t *bs)
{
    for (int k = 0; k < bs->nrounds; k++) {
        int role = bs_mesh_role(bs, k), j = bs_mesh_twin(bs->nranks, k);

        if (role == 0) {
            bs->send_fds[k] = bs->recv_fds[j];
            bs->recv_fds[k] = bs->send_fds[j];
        } else if (role == BS_MESH_DIAL) {
            bs->recv_fds[k] = bs->send_fds[k];
        } else if (role == BS_MESH_ACCEPT) {
            bs->send_fds[k] = bs->recv_fds[k];
        }
    }
}

symcoll_status_t bs_sock_addr(int fd, bs_addr_t *addr)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    memset(addr, 0, sizeof(*addr));
    if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
        log_error("bootstrap: getsockname failed: %s", strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        addr->family = AF_INET;
        addr->port = s4->sin_port;
        memcpy(addr->ip, &s4->sin_addr, 4);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        addr->port = s6->sin6_port;
        if (!memcmp(s6->sin6_addr.s6_addr, mapped, sizeof(mapped))) {
            addr->family = AF_INET;
            memcpy(addr->ip, s6->sin6_addr.s6_addr + 12, 4);
        } else {
            addr->family = AF_INET6;
            memcpy(addr->ip, s6->sin6_addr.s6_addr, 16);
        }
    } else {
        log_error("bootstrap: a TCP socket of address family %d", (int)ss.ss_family);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    return SYMCOLL_OK;
}

/* A socket address from a bs_addr; false when the family is neither IPv4 nor IPv6. */
bool bs_addr_sockaddr(const bs_addr_t *a, struct sockaddr_storage *ss, socklen_t *sl)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        s4->sin_port = a->port;
        memcpy(&s4->sin_addr, a->ip, 4);
        *sl = sizeof(*s4);
        return true;
    }
    if (a->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = a->port;
        memcpy(s6->sin6_addr.s6_addr, a->ip, 16);
        *sl = sizeof(*s6);
        return true;
    }
    return false;
}

symcoll_status_t bs_mesh_listen(int fd, int *lfd_p, bs_addr_t *addr_p)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    bs_addr_t a;
    symcoll_status_t status = bs_sock_addr(fd, &a);
    int lfd, zero = 0;

    if (status != SYMCOLL_OK)
        return status;
    a.port = 0;
    bs_addr_sockaddr(&a, &ss, &sl);
    lfd = socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        goto fail;
    /* a wildcard IPv6 address takes IPv4 partners too, as rank 0's listener does */
    if (a.family == AF_INET6)
        (void)setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, SOMAXCONN))
        goto fail;
    status = bs_sock_addr(lfd, addr_p);
    if (status != SYMCOLL_OK) {
        close(lfd);
        return status;
    }
    *lfd_p = lfd;
    return SYMCOLL_OK;
fail:
    log_error("bootstrap: cannot listen for the mesh partners: %s", strerror(errno));
    if (lfd >= 0)
        close(lfd);
    return SYMCOLL_ERR_BOOTSTRAP;
}

/* What the listener of a mesh connection needs for its answer: the dialers' nonces,
 * by round. */
typedef struct bs_mesh_ctx {
    uint8_t (*nonces)[BS_NONCE_LEN];
} bs_mesh_ctx_t;

/* Judge a mesh hello: the round it fills, or -1 (logged at info level). */
static int bs_mesh_judge(bootstrap_t *bs, const void *msg, const uint8_t *nonce,
                         const char *from, void *ctx)
{
    bs_mesh_ctx_t *c = ctx;
    uint8_t want[BS_MAC_LEN];
    bs_mesh_hello_t mh;
    bs_hdr_t h;
    (void)nonce;

    memcpy(&h, msg, sizeof(h));
    memcpy(&mh, (const char *)msg + sizeof(h), sizeof(mh));
    if (h.session != bs->job_id || h.nfds || h.seq || mh.nranks != (uint32_t)bs->nranks ||
        mh.round >= (uint32_t)bs->nrounds || !bs_mesh_owns(bs, (int)mh.round, false) ||
        h.rank != (uint32_t)bs_mesh_from(bs, (int)mh.round)) {
        log_info("bootstrap: mesh connection from %s (claiming rank %u, round %u) is not "
                 "one this rank expects; dropped",
                 from, h.rank, mh.round);
        return -1;
    }
    bs_mesh_proof(bs, false, mh.nonce, h.rank, (uint32_t)bs->rank, mh.round, want);
    if (!bs_ct_equal(mh.proof, want, sizeof(want))) {
        log_info("bootstrap: mesh connection from %s claiming rank %u did not prove that it "
                 "knows the job's secret; dropped",
                 from, h.rank);
        return -1;
    }
    memcpy(c->nonces[mh.round], mh.nonce, BS_NONCE_LEN);
    return (int)mh.round;
}

/* Dial the listener of every round and send it the hello. */
static symcoll_status_t bs_mesh_dial(bootstrap_t *bs, const bs_addr_t *to,
                                     bs_mesh_hello_t *hellos, const deadline_t *dl)
{
    int K = bs->nrounds, nx = 0;
    bs_xfer_t *x = calloc((size_t)K, sizeof(*x));
    symcoll_status_t status = SYMCOLL_OK;

    if (!x)
        return SYMCOLL_ERR_NO_MEMORY;
    for (int k = 0; k < K; k++) {
        struct sockaddr_storage ss;
        socklen_t sl;
        int peer = bs_mesh_to(bs, k), fd;

        if (!bs_mesh_owns(bs, k, true))
            continue;
        if (!bs_addr_sockaddr(&to[k], &ss, &sl) || to[k].port == 0) {
            log_error("bootstrap: rank 0 sent a malformed address for rank %d", peer);
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto out;
        }
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || (connect(fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS)) {
            log_error("bootstrap: cannot connect to mesh partner rank %d: %s", peer,
                      strerror(errno));
            if (fd >= 0)
                close(fd);
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto out;
        }
        bs_tune(fd);
        bs->send_fds[k] = fd;
        hellos[k].nranks = (uint32_t)bs->nranks;
        hellos[k].round = (uint32_t)k;
        status = bs_random_bytes(hellos[k].nonce, BS_NONCE_LEN);
        if (status != SYMCOLL_OK)
            goto out;
        bs_mesh_proof(bs, false, hellos[k].nonce, (uint32_t)bs->rank, (uint32_t)peer,
                      (uint32_t)k, hellos[k].proof);
        x[nx].fd = fd;
        x[nx].peer = peer;
        x[nx].send = true;
        bs_hdr_fill(bs, &x[nx].shdr, BS_MSG_MESH_HELLO, 0, sizeof(hellos[k]), 0);
        x[nx].sbuf = &hellos[k];
        nx++;
    }
    /* the partners' kernels complete the connections before they accept them */
    status = bs_xfer_run(bs, x, nx, dl);
out:
    free(x);
    return status;
}

symcoll_status_t bs_mesh_connect(bootstrap_t *bs, int lfd, const bs_addr_t *to,
                                 const deadline_t *dl)
{
    int K = bs_mesh_rounds(bs->nranks);
    bs_mesh_hello_t *hellos = calloc((size_t)K, sizeof(*hellos));
    uint8_t(*nonces)[BS_NONCE_LEN] = calloc((size_t)K, BS_NONCE_LEN);
    uint8_t(*proofs)[BS_MAC_LEN] = calloc((size_t)K * 2, BS_MAC_LEN);
    bs_xfer_t *x = calloc((size_t)K * 2, sizeof(*x));
    bs_mesh_ctx_t ctx = {nonces};
    int naccept = 0, nx = 0;
    bs_acceptor_t acceptor = {.type = BS_MSG_MESH_HELLO,
                              .hello_len = sizeof(bs_mesh_hello_t),
                              .msg_len = sizeof(bs_hdr_t) + sizeof(bs_mesh_hello_t),
                              .challenge = false,
                              .tcp = true,
                              .admit = bs_tune,
                              .judge = bs_mesh_judge,
                              .ctx = &ctx,
                              .who = "mesh partner(s)"};
    symcoll_status_t status;

    bs->nrounds = K;
    bs->send_fds = malloc((size_t)K * sizeof(int) + 1);
    bs->recv_fds = malloc((size_t)K * sizeof(int) + 1);
    if (!hellos || !nonces || !proofs || !x || !bs->send_fds || !bs->recv_fds) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (int k = 0; k < K; k++)
        bs->send_fds[k] = bs->recv_fds[k] = -1;
    status = bs_mesh_dial(bs, to, hellos, dl);
    if (status != SYMCOLL_OK)
        goto out;
    acceptor.slots = bs->recv_fds;
    for (int k = 0; k < K; k++)
        naccept += bs_mesh_owns(bs, k, false);
    status = bs_accept_hellos(bs, lfd, &acceptor, naccept, dl);
    bs_close(&lfd);
    if (status != SYMCOLL_OK)
        goto out;
    /* answer every dialer, hear every listener */
    for (int k = 0; k < K; k++) {
        if (bs_mesh_owns(bs, k, false)) {
            bs_xfer_t *xs = &x[nx++];
            int from = bs_mesh_from(bs, k);
            bs_mesh_proof(bs, true, nonces[k], (uint32_t)from, (uint32_t)bs->rank,
                          (uint32_t)k, proofs[2 * k]);
            xs->fd = bs->recv_fds[k];
            xs->peer = from;
            xs->send = true;
            bs_hdr_fill(bs, &xs->shdr, BS_MSG_MESH_WELCOME, 0, BS_MAC_LEN, 0);
            xs->sbuf = proofs[2 * k];
        }
        if (bs_mesh_owns(bs, k, true)) {
            bs_xfer_t *xr = &x[nx++];
            xr->fd = bs->send_fds[k];
            xr->peer = bs_mesh_to(bs, k);
            xr->recv = true;
            xr->rtype = BS_MSG_MESH_WELCOME;
            xr->rlen = BS_MAC_LEN;
            xr->rbuf = proofs[2 * k + 1];
        }
    }
    status = bs_xfer_run(bs, x, nx, dl);
    for (int k = 0; status == SYMCOLL_OK && k < K; k++) {
        uint8_t want[BS_MAC_LEN];
        int peer = bs_mesh_to(bs, k);
        if (!bs_mesh_owns(bs, k, true))
            continue;
        bs_mesh_proof(bs, true, hellos[k].nonce, (uint32_t)bs->rank, (uint32_t)peer,
                      (uint32_t)k, want);
        if (!bs_ct_equal(proofs[2 * k + 1], want, sizeof(want))) {
            log_error("bootstrap: the mesh listener of rank %d did not prove that it knows "
                      "the job's secret; refused",
                      peer);
            status = SYMCOLL_ERR_BOOTSTRAP;
        }
    }
    if (status == SYMCOLL_OK)
        bs_mesh_share(bs);
out:
    bs_close(&lfd);
    free(hellos);
    free(nonces);
    free(proofs);
    free(x);
    return status;
}

/* One round: send slen bytes to the round's target, receive rlen from its source. */
static symcoll_status_t bs_mesh_round(bootstrap_t *bs, int k, const void *sbuf, size_t slen,
                                      void *rbuf, size_t rlen, const deadline_t *dl)
{
    bs_xfer_t x[2];

    memset(x, 0, sizeof(x));
    x[0].fd = bs->send_fds[k];
    x[0].peer = bs_mesh_to(bs, k);
    x[0].send = true;
    bs_hdr_fill(bs, &x[0].shdr, BS_MSG_DATA, bs->seq, slen, 0);
    x[0].sbuf = sbuf;
    x[1].fd = bs->recv_fds[k];
    x[1].peer = bs_mesh_from(bs, k);
    x[1].recv = true;
    x[1].rtype = BS_MSG_DATA;
    x[1].rseq = bs->seq;
    x[1].rlen = rlen;
    x[1].rbuf = rbuf;
    bs->stats.rounds++;
    return bs_xfer_run(bs, x, 2, dl);
}

symcoll_status_t bs_mesh_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size,
                                   const deadline_t *dl)
{
    int n = bs->nranks;
    char *tmp = size ? malloc(size * (size_t)n) : NULL;
    symcoll_status_t status = SYMCOLL_OK;

    if (size && !tmp)
        return SYMCOLL_ERR_NO_MEMORY;
    /* tmp holds the blocks of ranks rank, rank + 1, ... in that order */
    if (size)
        memcpy(tmp, src, size);
    for (int k = 0; k < bs->nrounds && status == SYMCOLL_OK; k++) {
        size_t off = (size_t)1 << k, cnt = off < (size_t)n - off ? off : (size_t)n - off;
        status = bs_mesh_round(bs, k, tmp, cnt * size, tmp ? tmp + off * size : NULL,
                               cnt * size, dl);
    }
    if (status == SYMCOLL_OK && size)
        for (int i = 0; i < n; i++)
            memcpy((char *)dst + (size_t)((bs->rank + i) % n) * size, tmp + (size_t)i * size,
                   size);
    free(tmp);
    return status;
}

void bs_combine(int64_t *acc, const int64_t *in, int count, bootstrap_op_t op)
{
    for (int i = 0; i < count; i++)
        if (op == BOOTSTRAP_OP_MIN ? in[i] < acc[i] : in[i] > acc[i])
            acc[i] = in[i];
}

symcoll_status_t bs_mesh_allreduce(bootstrap_t *bs, int64_t *vals, int count, bootstrap_op_t op,
                                   const deadline_t *dl)
{
    int64_t acc[BOOTSTRAP_ALLREDUCE_MAX], in[BOOTSTRAP_ALLREDUCE_MAX];
    size_t len = (size_t)count * sizeof(*vals);
    symcoll_status_t status = SYMCOLL_OK;

    /* after round k, acc covers ranks rank .. rank + 2^(k+1) - 1 (mod n) */
    memcpy(acc, vals, len);
    for (int k = 0; k < bs->nrounds && status == SYMCOLL_OK; k++) {
        status = bs_mesh_round(bs, k, acc, len, in, len, dl);
        if (status == SYMCOLL_OK)
            bs_combine(acc, in, count, op);
    }
    if (status == SYMCOLL_OK)
        memcpy(vals, acc, len);
    return status;
}
