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

/* The asking is over: its connections close (the states stay, for sh_next). */
void sh_ask_end(sh_t *s)
{
    s->asking = false;
    for (int r = 0; r < s->bs->rank; r++)
        bs_close(&s->probe[r]);
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
              s->role == SH_LEAD     ? "coordinating"
              : s->role == SH_MEMBER ? "member"
                                     : "looking",
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
            sh_take_member(s, i, r);
        } else {
            sh_in_drop(s, i);
        }
        break;
    }
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
