/* A bootstrap for a part of a job, made over the bootstrap of the whole (the ranks of
 * one color of symcoll_comm_split): no rendezvous. Every rank of the parent opens a
 * listener for its part's mesh and all-gathers {color, key, where it listens} over the
 * parent; each part then connects its own mesh among its ranks, authenticated with a
 * secret derived from the parent's name key (a secret-derived key only the parent's
 * ranks hold) and the split's place in the parent's sequence of exchanges. */
#define _GNU_SOURCE
#include "bootstrap/bs_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each rank of the parent contributes. */
typedef struct bs_split_card {
    int32_t color; /* < 0: in no part */
    int32_t key;
    int32_t flag; /* bootstrap_split's flag */
    int32_t reserved;
    bs_addr_t listen; /* family 0: no listener (a part of one rank) */
} bs_split_card_t;

/* A listener for the part's mesh, and the address to give its partners: on the
 * interface one of the parent's mesh connections uses; a parent without a mesh (the
 * caller's allgather) listens on every address and names this host's first IPv4
 * address that is up and not loopback (else 127.0.0.1). */
symcoll_status_t bs_part_listen(const bootstrap_t *parent, int *lfd_p, bs_addr_t *addr)
{
    struct ifaddrs *ifa = NULL;
    unsigned port = 0;
    symcoll_status_t status;

    for (int k = 0; k < parent->nrounds; k++) {
        if (parent->send_fds && parent->send_fds[k] >= 0)
            return bs_mesh_listen(parent->send_fds[k], lfd_p, addr);
        if (parent->recv_fds && parent->recv_fds[k] >= 0)
            return bs_mesh_listen(parent->recv_fds[k], lfd_p, addr);
    }
    status = bs_tcp_listen_any(false, lfd_p, &port);
    if (status != SYMCOLL_OK)
        return status;
    memset(addr, 0, sizeof(*addr));
    addr->family = AF_INET;
    addr->port = htons((uint16_t)port);
    addr->ip[0] = 127;
    addr->ip[3] = 1;
    if (getifaddrs(&ifa) == 0) {
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                !(i->ifa_flags & IFF_LOOPBACK)) {
                memcpy(addr->ip, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
                break;
            }
        freeifaddrs(ifa);
    }
    return SYMCOLL_OK;
}

void bs_part_identity(const bootstrap_t *parent, const char *label, const void *in,
                      size_t in_len, bootstrap_t *child)
{
    static const char hexd[] = "0123456789abcdef";
    uint8_t ids[BS_SHA256_LEN], sec[BS_SHA256_LEN];
    bs_hmac_t m;

    bs_hmac_init(&m, parent->name_key, sizeof(parent->name_key));
    bs_hmac_update(&m, label, strlen(label) + 1);
    bs_hmac_update(&m, &parent->job_id, sizeof(parent->job_id));
    bs_hmac_update(&m, in, in_len);
    bs_hmac_update(&m, "ids", 3);
    bs_hmac_final(&m, ids);
    bs_hmac_init(&m, parent->name_key, sizeof(parent->name_key));
    bs_hmac_update(&m, label, strlen(label) + 1);
    bs_hmac_update(&m, &parent->job_id, sizeof(parent->job_id));
    bs_hmac_update(&m, in, in_len);
    bs_hmac_update(&m, "secret", 6);
    bs_hmac_final(&m, sec);
    memcpy(&child->job_id, ids, sizeof(child->job_id));
    if (!child->job_id)
        child->job_id = 1;
    memcpy(child->name_seed, ids + 8, sizeof(child->name_seed));
    /* the secret is hex digits, as SYMCOLL_COOKIE's; a leading zero digit is fine here:
     * every rank of the part derives the same string */
    for (size_t i = 0; i < sizeof(sec) && 2 * i + 1 < sizeof(child->secret); i++) {
        child->secret[2 * i] = hexd[sec[i] >> 4];
        child->secret[2 * i + 1] = hexd[sec[i] & 15];
    }
    child->secret_len = 2 * sizeof(sec) < sizeof(child->secret) ? 2 * sizeof(sec)
                                                                 : sizeof(child->secret);
    bs_wipe(sec, sizeof(sec));
    bs_wipe(ids, sizeof(ids));
}

symcoll_status_t bs_part_connect(bootstrap_t *child, int lfd, bs_addr_t **addrs_p,
                                 const deadline_t *dl)
{
    symcoll_status_t status = SYMCOLL_OK;
    const bs_addr_t *addrs = *addrs_p;
    int m = child->nranks, me = child->rank, keep = -1;

    if (m > 1) {
        int K = bs_mesh_rounds(m);
        bs_addr_t *to = calloc((size_t)K, sizeof(*to));
        /* the mesh's connection closes its listener; a copy stays as the listener a
         * later shrink dials, at the address every member already has */
        keep = fcntl(lfd, F_DUPFD_CLOEXEC, 0);
        if (!to || keep < 0) {
            free(to);
            bs_close(&keep);
            bs_close(&lfd);
            return SYMCOLL_ERR_NO_MEMORY;
        }
        for (int k = 0; k < K; k++)
            to[k] = addrs[(int)(((long)me - (1L << k) % m + m) % m)];
        status = bs_mesh_connect(child, lfd, to, dl);
        free(to);
    } else {
        bs_close(&lfd);
    }
    if (status != SYMCOLL_OK) {
        bs_close(&keep);
        return status;
    }
    if (m > 1) {
        child->repair_lfd = keep;
        child->repair_addrs = *addrs_p;
        *addrs_p = NULL;
    }
    bs_local_name_key(child);
    bs_wipe(child->secret, sizeof(child->secret));
    child->secret_len = 0;
    child->seq = 1;
    return SYMCOLL_OK;
}

/* The members of color `color`, ordered by key then parent rank: a plain insertion into
 * the sorted list (a part is usually small next to the job; n log n would do too). */
static int bs_split_members(const bs_split_card_t *cards, int n, int color, int *members)
{
    int m = 0;

    for (int r = 0; r < n; r++) {
        int i = m;
        if (cards[r].color != color)
            continue;
        while (i > 0 && cards[members[i - 1]].key > cards[r].key) {
            members[i] = members[i - 1];
            i--;
        }
        members[i] = r;
        m++;
    }
    return m;
}

symcoll_status_t bootstrap_split(bootstrap_t *parent, int color, int key, bool flag,
                                 double timeout_sec, const _Atomic int *aborted,
                                 bootstrap_t **child_p, int **members_p, int *nmembers_p,
                                 bool *flag_all_p)
{
    bs_split_card_t mine, *cards = NULL;
    bootstrap_t *child = NULL;
    bs_addr_t *addrs = NULL;
    int *members = NULL, lfd = -1, m, me = -1;
    uint64_t seq;
    deadline_t dl;
    symcoll_status_t status;

    *child_p = NULL;
    *members_p = NULL;
    *nmembers_p = 0;
    cards = calloc((size_t)parent->nranks, sizeof(*cards));
    members = malloc((size_t)parent->nranks * sizeof(*members));
    if (!cards || !members) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    memset(&mine, 0, sizeof(mine));
    mine.color = color < 0 ? -1 : color;
    mine.key = key;
    mine.flag = flag;
    *flag_all_p = false;
    /* a listener before the exchange, so that partners may dial at once after it; one
     * of a part of one rank goes unused (closed below) */
    status = SYMCOLL_OK;
    if (color >= 0 && parent->nranks > 1)
        status = bs_part_listen(parent, &lfd, &mine.listen);
    /* the parent's ranks all take part: one that failed above says so with a color of
     * its own (-2), and every part fails below rather than wait for it */
    if (status != SYMCOLL_OK)
        mine.color = -2;
    seq = parent->seq;
    {
        symcoll_status_t st = bootstrap_allgather(parent, &mine, cards, sizeof(mine));
        if (status == SYMCOLL_OK)
            status = st;
    }
    if (status != SYMCOLL_OK || color < 0)
        goto out;
    m = bs_split_members(cards, parent->nranks, color, members);
    for (int i = 0; i < m; i++)
        if (members[i] == parent->rank)
            me = i;
    for (int r = 0; r < parent->nranks; r++)
        if (cards[r].color == -2) {
            log_error("bootstrap: rank %d of the parent could not take part in the split", r);
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto out;
        }
    if (me < 0) {
        status = SYMCOLL_ERR_INTERNAL;
        goto out;
    }
    child = bs_alloc(me, m, timeout_sec, aborted);
    addrs = calloc((size_t)m, sizeof(*addrs));
    if (!child || !addrs) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    *flag_all_p = true;
    for (int i = 0; i < m; i++) {
        *flag_all_p = *flag_all_p && cards[members[i]].flag;
        addrs[i] = cards[members[i]].listen;
        if (m > 1 && addrs[i].family != AF_INET && addrs[i].family != AF_INET6) {
            log_error("bootstrap: rank %d of the parent gave no address for the split",
                      members[i]);
            status = SYMCOLL_ERR_BOOTSTRAP;
            goto out;
        }
    }
    {
        uint8_t in[12];
        int32_t c = color;
        memcpy(in, &seq, 8);
        memcpy(in + 8, &c, 4);
        bs_part_identity(parent, "symcoll split", in, sizeof(in), child);
    }
    snprintf(child->how, sizeof(child->how), "split (color %d, %d of the parent's %d ranks)",
             color, m, parent->nranks);
    dl = deadline_make(timeout_sec, aborted);
    status = bs_part_connect(child, lfd, &addrs, &dl);
    lfd = -1;
    if (status != SYMCOLL_OK)
        goto out;
    *child_p = child;
    child = NULL;
    *members_p = members;
    *nmembers_p = m;
    members = NULL;
out:
    bs_close(&lfd);
    bootstrap_destroy(child);
    free(addrs);
    free(cards);
    free(members);
    return status;
}
