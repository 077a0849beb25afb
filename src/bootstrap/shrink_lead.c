/* Shrink: the coordinator's side (see shrink.c): taking the lead, PROBEs of the ranks
 * that have not joined, when the wait is over, and the RESULT sent to every member. */
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

/* Accepted connection i, whose JOIN came from rank r, becomes r's. */
void sh_take_member(sh_t *s, int i, int r)
{
    bs_close(&s->joined[r]);
    s->joined[r] = s->in[i].fd;
    s->addr_of[r] = s->in[i].in.addr;
    s->flag_of[r] = s->in[i].in.flag != 0;
    s->dead[r] = false;
    s->in[i] = s->in[--s->nin];
}

/* Become the coordinator: the ranks that asked while this rank looked are answered. */
void sh_lead(sh_t *s)
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
            sh_take_member(s, i--, r);
        }
}

/* The coordinator's probes of the ranks above it that neither joined nor refused. */
void sh_probe(sh_t *s)
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
bool sh_lead_done(const sh_t *s)
{
    if (time_now() - s->lead_since > s->lead_sec)
        return true;
    for (int r = s->bs->rank + 1; r < s->bs->nranks; r++)
        if (s->joined[r] < 0 && !s->dead[r])
            return false;
    return true;
}

/* The coordinator's RESULT to every member; the member list in *list_p. */
symcoll_status_t sh_lead_result(sh_t *s, sh_member_t **list_p, int *m_p, uint64_t *nonce_p)
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
