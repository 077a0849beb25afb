/* Shrink: the ranks of a bootstrap that are still alive agree on who they are and
 * connect a bootstrap of their own, with no rendezvous and no help from the failed
 * mesh.
 *
 * Since bootstrap_shrink_prepare every rank listens on a socket of its own ("repair
 * listener") whose address every rank knows. A survivor that calls bootstrap_shrink
 * looks for the coordinator: it first PROBEs every rank below it at once; a rank whose
 * listener refuses is dead, one that accepts but says nothing within the probe window
 * (stopped, hung, or not in its shrink yet) is passed over, one in its shrink answers
 * at once. It then JOINs the lowest that answered (SEEKING while that one looks itself,
 * then COORD or MEMBER_OF), going up when one goes away. A survivor that passed over
 * every lower rank coordinates: it takes the JOINs of the higher ranks and PROBEs the
 * others until each higher rank joined or refused (dead), or its window ends (the rest
 * are left out as too late). A rank that comes late (after the others passed it over)
 * may coordinate too; a PROBE from a lower coordinator makes whoever gets it go there: a
 * seeker, a member of a higher coordinator, and a higher coordinator, which sends its
 * members there as well; a coordinator told of a lower one goes to it. So the lowest
 * coordinator that is alive wins while the others agree. It then sends every member the
 * RESULT: the members
 * in parent order, where each listens for the new mesh, and a fresh nonce from which
 * every member derives the new bootstrap's identity. A member whose coordinator goes
 * away looks again above it; a member that goes away is probed again (dead or not).
 * Every message carries an HMAC keyed with the parent's name key, which only the
 * parent's ranks hold. */
#define _GNU_SOURCE
#include "bootstrap/bs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SH_MAGIC 0x314b4853u /* "SHK1" */
#define SH_LABEL "symcoll shrink"
/* how often a coordinator dials the listeners of the ranks that have not joined */
#define SH_PROBE_EVERY_SEC 0.1
#define SH_MAX_REDIRECTS 16

enum sh_type { SH_JOIN = 1, SH_SEEKING, SH_COORD, SH_MEMBER_OF, SH_LATE, SH_RESULT, SH_PROBE };

typedef struct sh_msg {
    uint32_t magic;
    uint16_t type;
    uint16_t flag;   /* JOIN: the sender's flag; RESULT: the AND of the members' */
    uint64_t job_id; /* the parent's */
    int32_t from;    /* sender's rank in the parent */
    int32_t arg;     /* MEMBER_OF: the coordinator; RESULT: the number of members */
    uint64_t nonce;  /* RESULT: names the new bootstrap */
    bs_addr_t addr;  /* JOIN and RESULT: where the sender listens for the new mesh */
    uint8_t mac[BS_SHA256_LEN];
} sh_msg_t;

/* RESULT's body: one record a member, in parent order */
typedef struct sh_member {
    int32_t rank;
    int32_t reserved;
    bs_addr_t addr;
} sh_member_t;

/* a connection and the message being read from it */
typedef struct sh_conn {
    int fd;
    int rank; /* the sender, once its JOIN came; -1 before */
    size_t got;
    sh_msg_t in;
} sh_conn_t;

typedef enum { SH_SEEK, SH_MEMBER, SH_LEAD } sh_role_t;
enum { SH_ASK_UNKNOWN, SH_ASK_ANSWERED, SH_ASK_DEAD, SH_ASK_SILENT };

typedef struct sh {
    bootstrap_t *bs;
    const deadline_t *dl;
    double probe_sec, lead_sec;
    bs_addr_t mine; /* where this rank listens for the new mesh */
    sh_role_t role;
    /* SEEK and MEMBER: the rank dialled and the connection to it */
    int cand, redirects;
    sh_conn_t c;
    bool cand_connected, cand_answered;
    double cand_until;
    /* connections accepted on the repair listener, whose JOIN is awaited or, while
     * seeking, whose answer waits for this rank's role */
    sh_conn_t *in;
    int nin, maxin;
    /* LEAD: per rank of the parent, its connection once joined (-1), where it listens,
     * whether its listener refused, and the probe under way */
    int *joined;
    bs_addr_t *addr_of;
    bool *dead;
    int *probe;
    sh_conn_t *probe_in; /* the probe's answer being read (fd unused) */
    bool *probe_sent;
    double lead_since, next_probe;
    bool changed; /* the role or a connection changed in this turn: poll again first */
    bool flag;    /* this rank's flag (bootstrap_shrink) */
    /* SEEK, first: every rank below is PROBEd at once (ask[r]: SH_ASK_*), so that the
     * silent ones cost one probe window together, not one each */
    bool asking;
    double ask_until;
    signed char *ask;
    bool *flag_of; /* LEAD: each joined rank's */
} sh_t;

static void sh_mac(const bootstrap_t *bs, const sh_msg_t *m, const void *body, size_t len,
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

static symcoll_status_t sh_write(int fd, const void *buf, size_t len, const deadline_t *dl)
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

static symcoll_status_t sh_send(const sh_t *s, int fd, uint16_t type, int32_t arg,
                                uint64_t nonce, const void *body, size_t len)
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
static int sh_read(const sh_t *s, sh_conn_t *c)
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
static int sh_dial(const sh_t *s, int r)
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
static bool sh_connected(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);

    return !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && err == 0;
}

/* Drop connection i of the accepted ones. */
static void sh_in_drop(sh_t *s, int i)
{
    bs_close(&s->in[i].fd);
    s->in[i] = s->in[--s->nin];
}

/* The asking is over: its connections close (the states stay, for sh_next). */
static void sh_ask_end(sh_t *s)
{
    s->asking = false;
    for (int r = 0; r < s->bs->rank; r++)
        bs_close(&s->probe[r]);
}

/* Become the coordinator: the ranks that asked while this rank looked are answered. */
static void sh_lead(sh_t *s)
{
    s->changed = true;
    s->role = SH_LEAD;
    log_debug("shrink: rank %d coordinates", s->bs->rank);
    sh_ask_end(s);
    s->lead_since = time_now();
    s->next_probe = 0;
    bs_close(&s->c.fd);
    for (int i = 0; i < s->nin; i++)
        if (s->in[i].rank >= 0) {
            int r = s->in[i].rank;
            bool up = r > s->bs->rank &&
                      sh_send(s, s->in[i].fd, SH_COORD, 0, 0, NULL, 0) == SYMCOLL_OK;
            if (!up) {
                if (r < s->bs->rank)
                    (void)sh_send(s, s->in[i].fd, SH_LATE, 0, 0, NULL, 0);
                sh_in_drop(s, i--);
                continue;
            }
            bs_close(&s->joined[r]);
            s->joined[r] = s->in[i].fd;
            s->addr_of[r] = s->in[i].in.addr;
            s->flag_of[r] = s->in[i].in.flag != 0;
            s->dead[r] = false;
            s->in[i] = s->in[--s->nin];
            i--;
        }
}

/* Dial the next candidate above the one that failed (or the coordinator named). */
static void sh_next(sh_t *s, int cand)
{
    s->changed = true;
    bs_close(&s->c.fd);
    s->role = SH_SEEK;
    for (s->cand = cand; s->cand < s->bs->rank; s->cand++) {
        if (s->ask[s->cand] == SH_ASK_DEAD || s->ask[s->cand] == SH_ASK_SILENT)
            continue;
        s->c.fd = sh_dial(s, s->cand);
        if (s->c.fd >= 0)
            break;
        s->c.fd = -1;
    }
    if (s->cand >= s->bs->rank) {
        sh_lead(s);
        return;
    }
    s->c.got = 0;
    s->cand_connected = false;
    s->cand_answered = false;
    s->cand_until = time_now() + s->probe_sec;
}

/* Go to the coordinator `to`, below this rank's current one (or this rank, leading): a
 * coordinator sends its members there first. */
static void sh_go_to(sh_t *s, int to)
{
    s->changed = true;
    log_debug("shrink: rank %d (%s) goes to rank %d", s->bs->rank,
              s->role == SH_LEAD ? "coordinating" : s->role == SH_MEMBER ? "member" : "looking",
              to);
    if (s->role == SH_LEAD)
        for (int r = 0; r < s->bs->nranks; r++) {
            if (s->joined[r] >= 0)
                (void)sh_send(s, s->joined[r], SH_MEMBER_OF, to, 0, NULL, 0);
            bs_close(&s->joined[r]);
            bs_close(&s->probe[r]);
            s->dead[r] = false;
        }
    sh_ask_end(s);
    bs_close(&s->c.fd);
    s->role = SH_SEEK;
    s->redirects++;
    s->c.fd = sh_dial(s, to);
    if (s->c.fd < 0) {
        s->c.fd = -1;
        sh_next(s, to + 1);
        return;
    }
    s->cand = to;
    s->c.got = 0;
    s->cand_connected = false;
    s->cand_answered = false;
    s->cand_until = time_now() + s->probe_sec;
}

/* An answer from the candidate (or, as a member, from the coordinator). SYMCOLL_OK to go
 * on; SYMCOLL_ERR_TIMED_OUT when told this rank is too late. */
static symcoll_status_t sh_answer(sh_t *s, const sh_msg_t *m)
{
    switch (m->type) {
    case SH_SEEKING:
        /* alive and looking too: wait for its role, as long as the whole shrink may */
        s->cand_answered = true;
        s->cand_until = s->dl->end;
        return SYMCOLL_OK;
    case SH_COORD:
        log_debug("shrink: rank %d joined rank %d", s->bs->rank, s->cand);
        s->role = SH_MEMBER;
        s->cand_until = s->dl->end;
        /* the ranks that asked this one are told whom to join */
        for (int i = 0; i < s->nin; i++)
            if (s->in[i].rank >= 0) {
                (void)sh_send(s, s->in[i].fd, SH_MEMBER_OF, s->cand, 0, NULL, 0);
                sh_in_drop(s, i--);
            }
        return SYMCOLL_OK;
    case SH_MEMBER_OF:
        if (m->arg >= 0 && m->arg < s->bs->rank && m->arg != s->cand &&
            s->redirects < SH_MAX_REDIRECTS) {
            sh_go_to(s, m->arg);
            return SYMCOLL_OK;
        }
        sh_next(s, s->cand + 1);
        return SYMCOLL_OK;
    case SH_LATE:
        log_error("shrink: rank %d coordinates the shrink and says this rank came too late "
                  "(after its window closed)",
                  m->from);
        return SYMCOLL_ERR_TIMED_OUT;
    default:
        sh_next(s, s->cand + 1);
        return SYMCOLL_OK;
    }
}

/* A JOIN on an accepted connection i. */
static void sh_join(sh_t *s, int i)
{
    int r = s->in[i].in.from;

    if (s->in[i].in.type == SH_PROBE) {
        /* from a coordinator below: say where this rank stands, and go there if it is
         * lower than where this rank was going */
        int mine = s->role == SH_LEAD ? s->bs->rank : s->cand;
        uint16_t say = s->role == SH_LEAD     ? SH_COORD
                       : s->role == SH_MEMBER ? SH_MEMBER_OF
                                              : SH_SEEKING;
        if (r < mine && r < s->bs->rank && s->redirects < SH_MAX_REDIRECTS) {
            say = SH_SEEKING;
            (void)sh_send(s, s->in[i].fd, say, 0, 0, NULL, 0);
            sh_in_drop(s, i);
            sh_go_to(s, r);
            return;
        }
        (void)sh_send(s, s->in[i].fd, say, s->cand, 0, NULL, 0);
        sh_in_drop(s, i);
        return;
    }
    if (s->in[i].in.type != SH_JOIN) {
        sh_in_drop(s, i);
        return;
    }
    s->in[i].rank = r;
    switch (s->role) {
    case SH_SEEK:
        /* answered at once (alive), and for good once this rank knows its role */
        if (sh_send(s, s->in[i].fd, SH_SEEKING, 0, 0, NULL, 0) != SYMCOLL_OK)
            sh_in_drop(s, i);
        break;
    case SH_MEMBER:
        (void)sh_send(s, s->in[i].fd, SH_MEMBER_OF, s->cand, 0, NULL, 0);
        sh_in_drop(s, i);
        break;
    case SH_LEAD:
        if (r < s->bs->rank) {
            (void)sh_send(s, s->in[i].fd, SH_LATE, 0, 0, NULL, 0);
            sh_in_drop(s, i);
        } else if (sh_send(s, s->in[i].fd, SH_COORD, 0, 0, NULL, 0) == SYMCOLL_OK) {
            bs_close(&s->joined[r]);
            s->joined[r] = s->in[i].fd;
            s->addr_of[r] = s->in[i].in.addr;
            s->flag_of[r] = s->in[i].in.flag != 0;
            s->dead[r] = false;
            s->in[i] = s->in[--s->nin];
        } else {
            sh_in_drop(s, i);
        }
        break;
    }
}

/* The coordinator's probes of the ranks above it that neither joined nor refused. */
static void sh_probe(sh_t *s)
{
    double now = time_now();

    if (now < s->next_probe)
        return;
    s->next_probe = now + SH_PROBE_EVERY_SEC;
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] < 0 && !s->dead[r] && s->probe[r] < 0) {
            s->probe[r] = sh_dial(s, r);
            s->probe_sent[r] = false;
            s->probe_in[r].got = 0;
            s->dead[r] = s->probe[r] == -1; /* -2: tried again at the next round */
            if (s->probe[r] < 0)
                s->probe[r] = -1;
        }
}

/* Is the coordinator done: every rank above it joined or dead, or its window over? */
static bool sh_lead_done(const sh_t *s)
{
    if (time_now() - s->lead_since > s->lead_sec)
        return true;
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] < 0 && !s->dead[r])
            return false;
    return true;
}

/* The coordinator's RESULT to every member; the member list in *list_p. */
static symcoll_status_t sh_lead_result(sh_t *s, sh_member_t **list_p, int *m_p,
                                       uint64_t *nonce_p)
{
    int m = 1, pending = 0;
    sh_member_t *list;
    symcoll_status_t st;

    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++) {
        m += s->joined[r] >= 0;
        pending += s->joined[r] < 0 && !s->dead[r];
    }
    if (m == 1 && pending) {
        log_error("shrink: no rank joined within %.1f s, while %d rank(s) above this one did "
                  "not refuse: this rank comes too late, or the others are stopped",
                  s->lead_sec, pending);
        return SYMCOLL_ERR_TIMED_OUT;
    }
    if (pending)
        log_warn("shrink: %d rank(s) that did not join within %.1f s are left out", pending,
                 s->lead_sec);
    list = calloc((size_t)m, sizeof(*list));
    if (!list)
        return SYMCOLL_ERR_NO_MEMORY;
    st = bs_random64(nonce_p);
    if (st != SYMCOLL_OK) {
        free(list);
        return st;
    }
    /* the members' flags, agreed: the RESULT carries their AND */
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] >= 0)
            s->flag = s->flag && s->flag_of[r];
    m = 0;
    list[m].rank = s->bs->rank;
    list[m++].addr = s->mine;
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] >= 0) {
            list[m].rank = r;
            list[m++].addr = s->addr_of[r];
        }
    /* a member that fails to take it fails the new mesh's connection, and so the call
     * on every member: they call again */
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] >= 0)
            (void)sh_send(s, s->joined[r], SH_RESULT, m, *nonce_p, list,
                          (size_t)m * sizeof(*list));
    *list_p = list;
    *m_p = m;
    return SYMCOLL_OK;
}

/* A member's RESULT: its body read and checked. */
static symcoll_status_t sh_result(sh_t *s, sh_member_t **list_p, int *m_p, uint64_t *nonce_p)
{
    const sh_msg_t *h = &s->c.in;
    uint8_t want[BS_SHA256_LEN];
    sh_member_t *list;
    bool me = false;
    int m = h->arg;
    symcoll_status_t st;

    if (m < 2 || m > s->bs->nranks)
        return SYMCOLL_ERR_BOOTSTRAP;
    list = calloc((size_t)m, sizeof(*list));
    if (!list)
        return SYMCOLL_ERR_NO_MEMORY;
    for (size_t got = 0, len = (size_t)m * sizeof(*list); got < len;) {
        ssize_t k = recv(s->c.fd, (char *)list + got, len - got, MSG_DONTWAIT);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            free(list);
            return SYMCOLL_ERR_PEER_FAILED;
        }
        st = bs_poll_one(s->c.fd, POLLIN, s->dl);
        if (st != SYMCOLL_OK) {
            free(list);
            return st;
        }
    }
    sh_mac(s->bs, h, list, (size_t)m * sizeof(*list), want);
    for (int i = 0; i < m; i++) {
        me |= list[i].rank == s->bs->rank;
        if (list[i].rank < 0 || list[i].rank >= s->bs->nranks ||
            (i && list[i].rank <= list[i - 1].rank))
            me = false, i = m;
    }
    if (!bs_ct_equal(h->mac, want, sizeof(want)) || !me) {
        log_error("shrink: the coordinator's result is not valid");
        free(list);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    *list_p = list;
    *m_p = m;
    *nonce_p = h->nonce;
    s->flag = h->flag != 0;
    return SYMCOLL_OK;
}

/* One step of PROBE conversation r, its descriptor polled ready: once connected the
 * PROBE goes out (0); then its answer is read (1: in probe_in[r].in) or is not all
 * there yet (0). -1: refused (*refused) or gone. The descriptor is closed unless 0. */
static int sh_probe_step(sh_t *s, int r, bool *refused)
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

/* One turn: poll every connection, act on what came. */
static symcoll_status_t sh_turn(sh_t *s, bool *have_result)
{
    int n = s->bs->nranks, np = 0;
    bool refused;
    struct pollfd *p = calloc((size_t)(2 * n + s->nin + 2), sizeof(*p));
    int *who = calloc((size_t)(2 * n + s->nin + 2), sizeof(*who)); /* what each entry is */
    symcoll_status_t st = SYMCOLL_OK;

    if (!p || !who) {
        free(p);
        free(who);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    /* who: 0 listener, 1 candidate, 2 + i accepted i, -1 - r joined r, -1 - n - r probe r */
    p[np].fd = s->bs->repair_lfd;
    p[np].events = POLLIN;
    who[np++] = 0;
    if (s->role != SH_LEAD && s->c.fd >= 0) {
        p[np].fd = s->c.fd;
        p[np].events = s->cand_connected ? POLLIN : POLLOUT;
        who[np++] = 1;
    }
    for (int i = 0; i < s->nin; i++) {
        p[np].fd = s->in[i].fd;
        p[np].events = POLLIN;
        who[np++] = 2 + i;
    }
    for (int r = 0; r < n; r++) {
        if (s->role == SH_LEAD && s->joined[r] >= 0) {
            p[np].fd = s->joined[r];
            p[np].events = POLLIN;
            who[np++] = -1 - r;
        }
        /* the coordinator's probes of the ranks above, a seeker's asks of those below */
        if (s->probe[r] >= 0) {
            p[np].fd = s->probe[r];
            p[np].events = s->probe_sent[r] ? POLLIN : POLLOUT;
            who[np++] = -1 - n - r;
        }
    }
    st = bs_poll_slice(p, (nfds_t)np, s->dl);
    if (st != SYMCOLL_OK)
        goto out;
    s->changed = false;
    /* accepted connections first, from the end so that drops keep the indices valid */
    for (int e = np - 1; e >= 0; e--) {
        if (!p[e].revents || who[e] < 2)
            continue;
        int i = who[e] - 2, rc = sh_read(s, &s->in[i]);
        if (rc < 0)
            sh_in_drop(s, i);
        else if (rc > 0)
            sh_join(s, i);
        /* a PROBE may have moved this rank (and compacted the array): next turn */
        if (s->changed)
            goto out;
    }
    for (int e = 0; e < np; e++) {
        /* descriptors closed in this turn may be numbers of new ones already */
        if (s->changed)
            break;
        if (!p[e].revents)
            continue;
        if (who[e] == 0) {
            int fd = accept4(s->bs->repair_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd >= 0 && s->nin < s->maxin) {
                s->in[s->nin].fd = fd;
                s->in[s->nin].rank = -1;
                s->in[s->nin++].got = 0;
            } else if (fd >= 0) {
                close(fd);
            } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                       errno == ENOMEM) {
                usleep(10000); /* out of descriptors: the listener stays readable */
            }
        } else if (who[e] == 1 && p[e].fd == s->c.fd && s->role != SH_LEAD) {
            if (!s->cand_connected) {
                if (!sh_connected(s->c.fd) ||
                    sh_send(s, s->c.fd, SH_JOIN, 0, 0, NULL, 0) != SYMCOLL_OK) {
                    sh_next(s, s->cand + 1);
                    continue;
                }
                s->cand_connected = true;
                continue;
            }
            int rc = sh_read(s, &s->c);
            if (rc < 0) {
                /* the candidate or the coordinator went away: look above it */
                sh_next(s, s->cand + 1);
            } else if (rc > 0 && s->c.in.from == s->cand) {
                if (s->c.in.type == SH_RESULT && s->role == SH_MEMBER) {
                    *have_result = true;
                    goto out;
                }
                st = sh_answer(s, &s->c.in);
                if (st != SYMCOLL_OK)
                    goto out;
            }
        } else if (who[e] < 0 && who[e] >= -n && s->role == SH_LEAD &&
                   p[e].fd == s->joined[-1 - who[e]]) {
            /* a member says nothing until the result: data or an end means it went */
            int r = -1 - who[e];
            bs_close(&s->joined[r]);
        } else if (who[e] < -n && s->asking && -1 - n - who[e] < s->bs->rank &&
                   p[e].fd == s->probe[-1 - n - who[e]]) {
            /* an ask: any answer says the rank is alive and in its shrink */
            int r = -1 - n - who[e], rc = sh_probe_step(s, r, &refused);
            if (rc != 0)
                s->ask[r] = rc > 0 ? SH_ASK_ANSWERED : SH_ASK_DEAD;
        } else if (who[e] < -n && s->role == SH_LEAD && -1 - n - who[e] > s->bs->rank &&
                   p[e].fd == s->probe[-1 - n - who[e]]) {
            /* refused: dead; answered or gone: probed again later; no answer yet: r is
             * not in its shrink (or never will be: pending) */
            int r = -1 - n - who[e], rc = sh_probe_step(s, r, &refused);
            if (rc < 0)
                s->dead[r] = refused;
            if (rc > 0 && s->probe_in[r].in.type == SH_MEMBER_OF &&
                s->probe_in[r].in.arg >= 0 && s->probe_in[r].in.arg < s->bs->rank &&
                s->redirects < SH_MAX_REDIRECTS) {
                /* a coordinator below this one: go there, with the members */
                sh_go_to(s, s->probe_in[r].in.arg);
                goto out;
            }
        }
    }
    if (s->role != SH_LEAD && s->c.fd >= 0 && !s->cand_answered && s->role == SH_SEEK &&
        time_now() > s->cand_until)
        sh_next(s, s->cand + 1); /* accepted, said nothing: stopped, or not in its shrink */
out:
    free(p);
    free(who);
    return st;
}

/* Start looking: every rank below is dialled and PROBEd at once. */
static void sh_ask_start(sh_t *s)
{
    s->role = SH_SEEK;
    s->asking = true;
    s->ask_until = time_now() + s->probe_sec;
    for (int r = 0; r < s->bs->rank; r++) {
        int fd = sh_dial(s, r);
        s->probe[r] = fd >= 0 ? fd : -1;
        s->probe_sent[r] = false;
        s->probe_in[r].got = 0;
        /* -2, a local failure: nothing known, treated as silent */
        s->ask[r] = fd >= 0 ? SH_ASK_UNKNOWN : fd == -1 ? SH_ASK_DEAD : SH_ASK_SILENT;
    }
}

/* What the asks say so far: the lowest rank below that answered is where the JOINs
 * start, once every rank below it is dead or silent (unanswered when the window
 * closed); none: this rank coordinates. */
static void sh_ask_resolve(sh_t *s)
{
    bool over = time_now() > s->ask_until;

    for (int r = 0; r < s->bs->rank; r++) {
        if (s->ask[r] == SH_ASK_DEAD || s->ask[r] == SH_ASK_SILENT)
            continue;
        if (s->ask[r] == SH_ASK_UNKNOWN) {
            if (!over)
                return; /* wait for it */
            s->ask[r] = SH_ASK_SILENT;
            continue;
        }
        sh_ask_end(s);
        sh_next(s, r);
        return;
    }
    sh_ask_end(s); /* (sh_lead does too) */
    sh_lead(s);
}

symcoll_status_t bootstrap_shrink_prepare(bootstrap_t *bs)
{
    bs_addr_t mine;
    symcoll_status_t st;

    if (bs->nranks < 2 || bs->repair_addrs)
        return SYMCOLL_OK;
    bs->repair_addrs = calloc((size_t)bs->nranks, sizeof(*bs->repair_addrs));
    if (!bs->repair_addrs)
        return SYMCOLL_ERR_NO_MEMORY;
    memset(&mine, 0, sizeof(mine));
    if (bs_part_listen(bs, &bs->repair_lfd, &mine) != SYMCOLL_OK) {
        log_warn("bootstrap: no listener for a later shrink: this rank will count as dead "
                 "to one");
        memset(&mine, 0, sizeof(mine));
    }
    st = bootstrap_allgather(bs, &mine, bs->repair_addrs, sizeof(mine));
    if (st != SYMCOLL_OK) {
        bs_close(&bs->repair_lfd);
        free(bs->repair_addrs);
        bs->repair_addrs = NULL;
    }
    return st;
}

symcoll_status_t bootstrap_shrink(bootstrap_t *parent, bool flag, double timeout_sec,
                                  const _Atomic int *aborted, bootstrap_t **child_p,
                                  int **members_p, int *nmembers_p, bool *flag_all_p)
{
    deadline_t dl = deadline_make(timeout_sec, aborted);
    int n = parent->nranks, lfd = -1, m = 0, me = -1, *members = NULL;
    sh_member_t *list = NULL;
    bs_addr_t *addrs = NULL;
    bootstrap_t *child = NULL;
    uint64_t nonce = 0;
    bool have_result = false;
    sh_t s;
    symcoll_status_t st;

    *child_p = NULL;
    *members_p = NULL;
    *nmembers_p = 0;
    *flag_all_p = false;
    memset(&s, 0, sizeof(s));
    s.bs = parent;
    s.flag = flag;
    s.dl = &dl;
    s.c.fd = -1;
    s.c.rank = -1;
    /* the probe window: long enough for a survivor that saw the failure later than the
     * others (the caller aborted the parent, which the others hear of at once where
     * they wait in one of its calls), short enough to pass over a stopped rank and still
     * agree within the timeout; the coordinator's window covers the others' pass over
     * a stopped lower rank */
    s.probe_sec = timeout_sec / 4;
    s.lead_sec = timeout_sec / 2;
    if (n == 1) {
        m = 1;
        members = malloc(sizeof(int));
        child = bs_alloc(0, 1, timeout_sec, aborted);
        st = members && child ? SYMCOLL_OK : SYMCOLL_ERR_NO_MEMORY;
        if (st == SYMCOLL_OK) {
            members[0] = 0;
            snprintf(child->how, sizeof(child->how), "single rank");
        }
        goto done;
    }
    if (!parent->repair_addrs || parent->repair_lfd < 0) {
        log_error("shrink: this rank has no listener for the agreement");
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    s.maxin = 2 * n + 16;
    s.in = calloc((size_t)s.maxin, sizeof(*s.in));
    s.joined = malloc((size_t)n * sizeof(int));
    s.probe = malloc((size_t)n * sizeof(int));
    for (int r = 0; r < n; r++) {
        if (s.joined)
            s.joined[r] = -1;
        if (s.probe)
            s.probe[r] = -1;
    }
    s.probe_in = calloc((size_t)n, sizeof(*s.probe_in));
    s.probe_sent = calloc((size_t)n, sizeof(bool));
    s.dead = calloc((size_t)n, sizeof(bool));
    s.addr_of = calloc((size_t)n, sizeof(bs_addr_t));
    s.flag_of = calloc((size_t)n, sizeof(bool));
    s.ask = calloc((size_t)n, sizeof(*s.ask));
    if (!s.in || !s.joined || !s.probe || !s.dead || !s.addr_of || !s.probe_in ||
        !s.probe_sent || !s.flag_of || !s.ask) {
        st = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    st = bs_part_listen(parent, &lfd, &s.mine);
    if (st != SYMCOLL_OK)
        goto out;

    sh_ask_start(&s);
    while (!have_result) {
        if (s.role == SH_SEEK && s.asking)
            sh_ask_resolve(&s);
        if (s.role == SH_LEAD) {
            sh_probe(&s);
            if (sh_lead_done(&s)) {
                st = sh_lead_result(&s, &list, &m, &nonce);
                if (st != SYMCOLL_OK)
                    goto out;
                break;
            }
        }
        st = sh_turn(&s, &have_result);
        if (st != SYMCOLL_OK) {
            if (st == SYMCOLL_ERR_TIMED_OUT)
                log_error("shrink: no agreement within %.1f s (%s)", timeout_sec,
                          s.role == SH_LEAD     ? "coordinating"
                          : s.role == SH_MEMBER ? "waiting for the coordinator's result"
                                                : "looking for a coordinator");
            goto out;
        }
    }
    if (have_result) {
        st = sh_result(&s, &list, &m, &nonce);
        if (st != SYMCOLL_OK)
            goto out;
    }
    members = malloc((size_t)m * sizeof(int));
    addrs = calloc((size_t)m, sizeof(*addrs));
    child = NULL;
    if (!members || !addrs) {
        st = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < m; i++) {
        members[i] = list[i].rank;
        addrs[i] = list[i].addr;
        if (members[i] == parent->rank)
            me = i;
    }
    child = bs_alloc(me, m, timeout_sec, aborted);
    if (!child) {
        st = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    bs_part_identity(parent, SH_LABEL " part", &nonce, sizeof(nonce), child);
    snprintf(child->how, sizeof(child->how), "shrink (%d of the parent's %d ranks)", m, n);
    /* the members are told; nobody waits for this rank's listener any more */
    for (int i = 0; i < s.nin; i++)
        bs_close(&s.in[i].fd);
    s.nin = 0;
    st = bs_part_connect(child, lfd, &addrs, &dl);
    lfd = -1;
    if (st != SYMCOLL_OK)
        log_error("shrink: a rank of the new communicator failed before it was connected "
                  "(call symcoll_comm_shrink again)");
done:
    if (st == SYMCOLL_OK) {
        *flag_all_p = s.flag;
        *child_p = child;
        *members_p = members;
        *nmembers_p = m;
        child = NULL;
        members = NULL;
    }
out:
    bs_close(&lfd);
    bs_close(&s.c.fd);
    for (int i = 0; i < s.nin; i++)
        bs_close(&s.in[i].fd);
    for (int r = 0; r < n; r++) {
        if (s.joined)
            bs_close(&s.joined[r]);
        if (s.probe)
            bs_close(&s.probe[r]);
    }
    free(s.in);
    free(s.joined);
    free(s.probe);
    free(s.probe_in);
    free(s.probe_sent);
    free(s.dead);
    free(s.addr_of);
    free(s.flag_of);
    free(s.ask);
    free(list);
    free(addrs);
    free(members);
    bootstrap_destroy(child);
    return st;
}
