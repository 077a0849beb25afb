/* Shrink's messages (an HMAC keyed with the parent's name key on each) and its
 * connections: dial, read, write, and the PROBE conversation (see shrink.c). */
#define _GNU_SOURCE
#include "bootstrap/shrink_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void sh_mac(const bootstrap_t *bs, const sh_msg_t *m, const void *body, size_t len,
            uint8_t out[BS_SHA256_LEN])
{
    bs_hmac_t h;

    bs_hmac_init(&h, bs->name_key, sizeof(bs->name_key));
    bs_hmac_update(&h, SH_LABEL, sizeof(SH_LABEL));
    bs_hmac_update(&h, m, offsetof(sh_msg_t, mac));
    if (len)
        bs_hmac_update(&h, body, len);
    bs_hmac_final(&h, out);
}

symcoll_status_t sh_write(int fd, const void *buf, size_t len, const deadline_t *dl)
{
    const char *p = buf;

    while (len) {
        ssize_t k = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            symcoll_status_t st = bs_poll_one(fd, POLLOUT, dl);
            if (st != SYMCOLL_OK)
                return st;
        } else {
            return SYMCOLL_ERR_PEER_FAILED;
        }
    }
    return SYMCOLL_OK;
}

symcoll_status_t sh_send(const sh_t *s, int fd, uint16_t type, int32_t arg, uint64_t nonce,
                         const void *body, size_t len)
{
    sh_msg_t m;
    symcoll_status_t st;

    memset(&m, 0, sizeof(m));
    m.magic = SH_MAGIC;
    m.type = type;
    m.flag = s->flag;
    m.job_id = s->bs->job_id;
    m.from = s->bs->rank;
    m.arg = arg;
    m.nonce = nonce;
    m.addr = s->mine;
    sh_mac(s->bs, &m, body, len, m.mac);
    st = sh_write(fd, &m, sizeof(m), s->dl);
    if (st == SYMCOLL_OK && len)
        st = sh_write(fd, body, len, s->dl);
    return st;
}

/* Reads what is there: 1 with a whole message in c->in, 0 for more to come, -1 for the
 * end of the connection or a message that is not the parent's. A RESULT's MAC covers its
 * body, which sh_result reads; every other message is checked here. */
int sh_read(const sh_t *s, sh_conn_t *c)
{
    uint8_t want[BS_SHA256_LEN];
    ssize_t k = recv(c->fd, (char *)&c->in + c->got, sizeof(c->in) - c->got, MSG_DONTWAIT);

    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        return -1;
    if (k < 0)
        return 0;
    c->got += (size_t)k;
    if (c->got < sizeof(c->in))
        return 0;
    c->got = 0;
    if (c->in.magic != SH_MAGIC || c->in.job_id != s->bs->job_id || c->in.from < 0 ||
        c->in.from >= s->bs->nranks || c->in.from == s->bs->rank)
        return -1;
    if (c->in.type == SH_RESULT)
        return 1;
    sh_mac(s->bs, &c->in, NULL, 0, want);
    return bs_ct_equal(c->in.mac, want, sizeof(want)) ? 1 : -1;
}

/* A non-blocking connection to rank r's repair listener: the descriptor; -1 where the
 * rank has none or refused at once (dead); -2 for a local failure (descriptors or
 * buffers short: nothing known of the rank). */
int sh_dial(const sh_t *s, int r)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd;

    if (!bs_addr_sockaddr(&s->bs->repair_addrs[r], &ss, &sl))
        return -1;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -2;
    if (connect(fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return e == ECONNREFUSED || e == ENETUNREACH || e == EHOSTUNREACH ? -1 : -2;
    }
    return fd;
}

/* The outcome of a non-blocking connect that polled writable: true when connected. */
bool sh_connected(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);

    return !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && err == 0;
}

/* Drop connection i of the accepted ones. */
void sh_in_drop(sh_t *s, int i)
{
    bs_close(&s->in[i].fd);
    s->in[i] = s->in[--s->nin];
}

/* One step of PROBE conversation r, its descriptor polled ready: once connected the
 * PROBE goes out (0); then its answer is read (1: in probe_in[r].in) or is not all
 * there yet (0). -1: refused (*refused) or gone. The descriptor is closed unless 0. */
int sh_probe_step(sh_t *s, int r, bool *refused)
{
    int rc;

    *refused = false;
    if (!s->probe_sent[r]) {
        bool up = sh_connected(s->probe[r]); /* SO_ERROR reads once: it is cleared */
        if (up && sh_send(s, s->probe[r], SH_PROBE, 0, 0, NULL, 0) == SYMCOLL_OK) {
            s->probe_sent[r] = true;
            return 0;
        }
        *refused = !up;
        bs_close(&s->probe[r]);
        return -1;
    }
    s->probe_in[r].fd = s->probe[r];
    rc = sh_read(s, &s->probe_in[r]);
    if (rc == 0)
        return 0;
    bs_close(&s->probe[r]);
    return rc;
}
