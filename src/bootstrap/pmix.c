/* PMIx rendezvous: under a launcher's PMIx server (mpirun, srun --mpi=pmix) the rank, job
 * size and node come from PMIx, and the job's key-value store is the address book:
 * every rank puts where it listens for its mesh partners, rank 0 also a fresh secret,
 * the job id and the name seed; after one fence each rank gets rank 0's values and the
 * addresses of the ceil(log2 n) ranks it sends to, and the authenticated mesh of
 * mesh.c connects with no TCP rendezvous through rank 0. */
#include "bootstrap/bs_int.h"

#ifdef HAVE_PMIX

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <pmix.h>

/* PMIx is initialised once, by the first communicator that needs it, and finalised
 * when the process exits (or the library is unloaded), not when the last such
 * communicator goes: under Open MPI 4.1's mpirun a process that finalises and
 * initialises again while its peers are in a fence breaks that fence (PMIx reports
 * partial success or invalid arguments), and a process that initialised PMIx and
 * exits without finalising it fails the whole job. PMIx counts its own
 * initialisations, so a program's MPI_Init and MPI_Finalize around ours do not
 * disturb it. pmix_lock guards pmix_ready, pmix_me and pmix_rendezvous_count. */
static pthread_mutex_t pmix_lock = PTHREAD_MUTEX_INITIALIZER;
static bool pmix_ready;
static pmix_proc_t pmix_me;
/* Rendezvous done in this process: names each one's key. Every rank of a job creates
 * its communicators in the same order, so the n-th ones agree on the key. */
static unsigned pmix_rendezvous_count;

extern char **environ;

bool bootstrap_pmix_built(void)
{
    return true;
}

bool bootstrap_pmix_present(void)
{
    bool uri = false;

    if (!getenv("PMIX_NAMESPACE") || !getenv("PMIX_RANK"))
        return false;
    for (char **e = environ; e && *e && !uri; e++)
        uri = !strncmp(*e, "PMIX_SERVER_URI", 15);
    return uri;
}

static symcoll_status_t bs_pmix_init(void)
{
    symcoll_status_t status = SYMCOLL_OK;

    pthread_mutex_lock(&pmix_lock);
    if (!pmix_ready) {
        pmix_status_t rc = PMIx_Init(&pmix_me, NULL, 0);
        if (rc == PMIX_SUCCESS) {
            pmix_ready = true;
        } else {
            log_warn("bootstrap: PMIx_Init failed under the PMIx server of namespace %s: %s",
                     getenv("PMIX_NAMESPACE") ? getenv("PMIX_NAMESPACE") : "?",
                     PMIx_Error_string(rc));
            status = SYMCOLL_ERR_BOOTSTRAP;
        }
    }
    pthread_mutex_unlock(&pmix_lock);
    return status;
}

__attribute__((destructor)) static void bs_pmix_fini(void)
{
    pthread_mutex_lock(&pmix_lock);
    if (pmix_ready)
        PMIx_Finalize(NULL, 0);
    pmix_ready = false;
    pthread_mutex_unlock(&pmix_lock);
}

/* A proc of this process's namespace (rank PMIX_RANK_WILDCARD: the job itself). */
static pmix_proc_t bs_pmix_proc(pmix_rank_t rank)
{
    pmix_proc_t p;

    memset(&p, 0, sizeof(p));
    memcpy(p.nspace, pmix_me.nspace, sizeof(p.nspace));
    p.rank = rank;
    return p;
}

/* An integer value of key for proc; -1 when it is missing or not an integer. */
static int bs_pmix_get_long(pmix_rank_t rank, const char *key, long *out)
{
    pmix_proc_t p = bs_pmix_proc(rank);
    pmix_value_t *v = NULL;
    int ret = 0;

    if (PMIx_Get(&p, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
        return -1;
    switch (v->type) {
    case PMIX_UINT32:
        *out = (long)v->data.uint32;
        break;
    case PMIX_UINT16:
        *out = (long)v->data.uint16;
        break;
    case PMIX_INT:
        *out = (long)v->data.integer;
        break;
    case PMIX_UINT:
        *out = (long)v->data.uint;
        break;
    case PMIX_PROC_RANK:
        *out = (long)v->data.rank;
        break;
    case PMIX_SIZE:
        *out = (long)v->data.size;
        break;
    default:
        ret = -1;
    }
    PMIX_VALUE_RELEASE(v);
    return ret;
}

/* A string value of key for proc, with optional info; -1 when missing or not a string. */
static int bs_pmix_get_string(pmix_rank_t rank, const char *key, const pmix_info_t *info,
                              size_t ninfo, char *buf, size_t len)
{
    pmix_proc_t p = bs_pmix_proc(rank);
    pmix_value_t *v = NULL;
    int ret = -1;

    if (PMIx_Get(&p, key, info, ninfo, &v) != PMIX_SUCCESS || !v)
        return -1;
    if (v->type == PMIX_STRING && v->data.string) {
        snprintf(buf, len, "%s", v->data.string);
        ret = 0;
    }
    PMIX_VALUE_RELEASE(v);
    return ret;
}

/* The ranks of this job on this node (PMIX_LOCAL_PEERS): how many, and whether rank
 * `who` is one of them. 0: not known. */
static int bs_pmix_local_peers(long who, bool *has_who)
{
    char peers[4096], *save = NULL;
    int n = 0;

    *has_who = false;
    if (bs_pmix_get_string(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, NULL, 0, peers, sizeof(peers)))
        return 0;
    for (char *t = strtok_r(peers, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        n++;
        if (strtol(t, NULL, 10) == who)
            *has_who = true;
    }
    return n;
}

symcoll_status_t bootstrap_pmix_job(bootstrap_pmix_job_t *job)
{
    symcoll_status_t status = bs_pmix_init();
    char host[64] = "";
    long size, lrank, nodeid;
    bool me_local;

    if (status != SYMCOLL_OK)
        return status;
    memset(job, 0, sizeof(*job));
    job->rank = (int)pmix_me.rank;
    if (bs_pmix_get_long(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size) || size <= 0 ||
        size > 0x7fffffffL || job->rank < 0 || job->rank >= size) {
        log_error("bootstrap: the PMIx server of namespace %s does not give the job size "
                  "(PMIX_JOB_SIZE) or places rank %d outside it",
                  pmix_me.nspace, job->rank);
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    job->nranks = (int)size;
    job->local_rank = bs_pmix_get_long(pmix_me.rank, PMIX_LOCAL_RANK, &lrank) ? -1 : (int)lrank;
    job->local_size = bs_pmix_local_peers(job->rank, &me_local);
    if (!me_local)
        job->local_size = 0;
    if (bs_pmix_get_string(pmix_me.rank, PMIX_HOSTNAME, NULL, 0, host, sizeof(host)))
        host[0] = 0;
    if (bs_pmix_get_long(pmix_me.rank, PMIX_NODEID, &nodeid))
        nodeid = -1;
    if (host[0] || nodeid >= 0)
        snprintf(job->node_id, sizeof(job->node_id), "pmix:%s#%ld", host, nodeid);
    log_debug("bootstrap: PMIx namespace %s: rank %d of %d, local rank %d of %d, node %s",
              pmix_me.nspace, job->rank, job->nranks, job->local_rank, job->local_size,
              job->node_id[0] ? job->node_id : "(not known)");
    return SYMCOLL_OK;
}

/* ---- the fence, waited for under the deadline ----------------------------- */

/* Shared by the waiter and PMIx's callback; the last of the two to let go frees it, so
 * a waiter that gives up at its deadline leaves the callback something valid. */
typedef struct bs_pmix_wait {
    atomic_int refs;
    atomic_int status; /* of the operation, once the callback ran */
    int efd;           /* eventfd the callback signals */
    pmix_info_t info;  /* the fence's attribute, valid until the callback */
} bs_pmix_wait_t;

static void bs_pmix_wait_put(bs_pmix_wait_t *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1) {
        PMIX_INFO_DESTRUCT(&w->info);
        close(w->efd);
        free(w);
    }
}

static void bs_pmix_fence_done(pmix_status_t st, void *cbdata)
{
    bs_pmix_wait_t *w = cbdata;
    uint64_t one = 1;

    atomic_store(&w->status, st);
    if (write(w->efd, &one, sizeof(one)) < 0) {
        /* an eventfd counter cannot overflow from one write */
    }
    bs_pmix_wait_put(w);
}

/* A fence over the whole namespace that collects the data put so far. */
static symcoll_status_t bs_pmix_fence(const deadline_t *dl)
{
    bs_pmix_wait_t *w = calloc(1, sizeof(*w));
    symcoll_status_t status;
    bool collect = true;
    pmix_status_t rc;

    if (!w)
        return SYMCOLL_ERR_NO_MEMORY;
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd < 0) {
        log_error("bootstrap: eventfd: %s", strerror(errno));
        free(w);
        return SYMCOLL_ERR_SYSTEM;
    }
    atomic_init(&w->refs, 2);
    atomic_init(&w->status, PMIX_SUCCESS);
    PMIX_INFO_CONSTRUCT(&w->info);
    PMIX_INFO_LOAD(&w->info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence_nb(NULL, 0, &w->info, 1, bs_pmix_fence_done, w);
    if (rc != PMIX_SUCCESS) {
        /* no callback will come: done at once, or refused */
        bs_pmix_wait_put(w);
#ifdef PMIX_OPERATION_SUCCEEDED
        if (rc == PMIX_OPERATION_SUCCEEDED)
            rc = PMIX_SUCCESS;
#endif
        atomic_store(&w->status, rc);
        status = SYMCOLL_OK;
    } else {
        status = bs_poll_one(w->efd, POLLIN, dl);
    }
    if (status == SYMCOLL_OK) {
        rc = atomic_load(&w->status);
        if (rc != PMIX_SUCCESS) {
            log_error("bootstrap: PMIx_Fence failed: %s", PMIx_Error_string(rc));
            status = SYMCOLL_ERR_BOOTSTRAP;
        }
    } else if (status == SYMCOLL_ERR_TIMED_OUT) {
        log_error("bootstrap: timed out in the PMIx fence of namespace %s: some rank of the "
                  "job did not create its communicator",
                  pmix_me.nspace);
    }
    bs_pmix_wait_put(w);
    return status;
}

/* ---- rank 0's address ------------------------------------------------------ */

/* This host's IPv4 addresses other than loopback, comma-separated ("-": none). */
static void bs_pmix_my_ips(char *buf, size_t len)
{
    struct ifaddrs *ifa = NULL;
    size_t off = 0;

    buf[0] = 0;
    if (getifaddrs(&ifa) == 0) {
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
            char ip[INET_ADDRSTRLEN];
            int n;
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                (i->ifa_flags & IFF_LOOPBACK))
                continue;
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
            n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", ip);
            if (n < 0 || (size_t)n >= len - off) {
                buf[off] = 0;
                break;
            }
            off += (size_t)n;
        }
        freeifaddrs(ifa);
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

/* Of rank 0's addresses, the first on a subnet of one of this host's interfaces. */
static bool bs_pmix_pick_ip(const char *ips, char *out, size_t len)
{
    struct ifaddrs *ifa = NULL;
    char list[1024], *save = NULL;
    bool found = false;

    if (getifaddrs(&ifa))
        return false;
    snprintf(list, sizeof(list), "%s", ips);
    for (char *t = strtok_r(list, ",", &save); t && !found; t = strtok_r(NULL, ",", &save)) {
        struct in_addr a;
        if (inet_pton(AF_INET, t, &a) != 1)
            continue;
        for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
            uint32_t mine, mask;
            if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET ||
                !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                continue;
            mine = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
            mask = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
            if (((mine ^ a.s_addr) & mask) == 0) {
                snprintf(out, len, "%s", t);
                found = true;
            }
        }
    }
    freeifaddrs(ifa);
    return found;
}

/* An IPv4 address of host name `host`. */
static bool bs_pmix_resolve(const char *host, struct in_addr *in)
{
    struct addrinfo hints, *res = NULL;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (!strcmp(host, "-") || getaddrinfo(host, NULL, &hints, &res) || !res)
        return false;
    *in = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return true;
}

/* The address to dial for a rank whose card says "port host ips": the loopback address
 * on a one-node job, else one of its addresses on a subnet of this host, else its host
 * name, else its first address. */
static bool bs_pmix_card_addr(const char *card, bool loopback, bs_addr_t *a)
{
    char host[256], ips[1024], ip[64] = "";
    struct in_addr in;
    unsigned port;

    if (sscanf(card, "%u %255s %1023s", &port, host, ips) != 3 || port == 0 || port > 65535)
        return false;
    if (loopback)
        snprintf(ip, sizeof(ip), "127.0.0.1");
    else if (!bs_pmix_pick_ip(ips, ip, sizeof(ip)) && !bs_pmix_resolve(host, &in))
        snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(ips, ","), ips);
    if (ip[0] && inet_pton(AF_INET, ip, &in) != 1)
        return false;
    memset(a, 0, sizeof(*a));
    a->family = AF_INET;
    a->port = htons((uint16_t)port);
    memcpy(a->ip, &in, 4);
    return true;
}

static void bs_hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static bool bs_unhex(const char *s, uint8_t *p, size_t n)
{
    if (strlen(s) != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return false;
        p[i] = (uint8_t)v;
    }
    return true;
}

static symcoll_status_t bs_pmix_put(const char *key, char *val)
{
    pmix_value_t v;
    pmix_status_t rc;

    memset(&v, 0, sizeof(v));
    v.type = PMIX_STRING;
    v.data.string = val;
    rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS) {
        log_error("bootstrap: PMIx_Put of %s: %s", key, PMIx_Error_string(rc));
        return SYMCOLL_ERR_BOOTSTRAP;
    }
    return SYMCOLL_OK;
}

symcoll_status_t bs_pmix_rendezvous(bootstrap_t *bs, const deadline_t *dl, bs_addr_t *to,
                                    char *secret, size_t secret_len, int *lfd_p, char *where,
                                    size_t where_len)
{
    char key0[64], key[64], card[1400], ips[1024], host[256] = "";
    char sec[2 * BS_NONCE_LEN + 1] = "", job[17], seed[2 * BS_NONCE_LEN + 1];
    int K = bs_mesh_rounds(bs->nranks), nlocal, tmo;
    symcoll_status_t status;
    unsigned port = 0, n;
    bool with_rank0, loopback;
    pmix_info_t info;
    pmix_status_t rc;
    double left;

    *lfd_p = -1;
    status = bs_pmix_init();
    if (status != SYMCOLL_OK || bs->nranks == 1)
        return status;
    pthread_mutex_lock(&pmix_lock);
    n = pmix_rendezvous_count++;
    pthread_mutex_unlock(&pmix_lock);
    snprintf(key0, sizeof(key0), "symcoll.bootstrap.%u", n);
    snprintf(key, sizeof(key), "symcoll.mesh.%u", n);
    nlocal = bs_pmix_local_peers(0, &with_rank0);
    /* one node: nothing outside it needs to reach any rank */
    loopback = nlocal == bs->nranks && with_rank0;

    /* every rank: where it listens for its mesh partners */
    status = bs_tcp_listen_any(loopback, lfd_p, &port);
    if (status != SYMCOLL_OK)
        goto out;
    gethostname(host, sizeof(host) - 1);
    bs_pmix_my_ips(ips, sizeof(ips));
    snprintf(card, sizeof(card), "%u %s %s", port, host[0] ? host : "-", ips);
    status = bs_pmix_put(key, card);
    if (status != SYMCOLL_OK)
        goto out;
    if (bs->rank == 0) {
        /* and rank 0: a fresh secret, the job id and the name seed */
        uint8_t raw[BS_NONCE_LEN];
        status = bs_random_bytes(raw, sizeof(raw));
        if (status != SYMCOLL_OK)
            goto out;
        bs_hex(raw, sizeof(raw), sec);
        bs_wipe(raw, sizeof(raw));
        snprintf(job, sizeof(job), "%016llx", (unsigned long long)bs->job_id);
        bs_hex(bs->name_seed, sizeof(bs->name_seed), seed);
        snprintf(card, sizeof(card), "%s %s %s", sec, job, seed);
        status = bs_pmix_put(key0, card);
        if (status != SYMCOLL_OK)
            goto out;
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        log_error("bootstrap: PMIx_Commit: %s", PMIx_Error_string(rc));
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    status = bs_pmix_fence(dl);
    if (status != SYMCOLL_OK)
        goto out;

    left = dl->end - time_now();
    tmo = left < 1 ? 1 : left > 1e6 ? 1000000 : (int)left;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &tmo, PMIX_INT);
    if (bs->rank != 0) {
        unsigned long long id = 0;
        if (bs_pmix_get_string(0, key0, &info, 1, card, sizeof(card)) ||
            sscanf(card, "%32s %16s %32s", sec, job, seed) != 3 ||
            sscanf(job, "%16llx", &id) != 1 || id == 0 ||
            !bs_unhex(seed, bs->name_seed, sizeof(bs->name_seed))) {
            log_error("bootstrap: rank 0's card (%s) is missing from the PMIx store of "
                      "namespace %s or malformed",
                      key0, pmix_me.nspace);
            status = SYMCOLL_ERR_BOOTSTRAP;
        }
        bs->job_id = id;
    }
    /* only the ranks this one sends to: ceil(log2 n) look-ups */
    for (int k = 0; k < K && status == SYMCOLL_OK; k++) {
        long p = ((long)bs->rank - (1L << k) % bs->nranks + bs->nranks) % bs->nranks;
        if (bs_pmix_get_string((pmix_rank_t)p, key, &info, 1, card, sizeof(card)) ||
            !bs_pmix_card_addr(card, loopback, &to[k])) {
            log_error("bootstrap: the mesh address of rank %ld (%s) is missing from the PMIx "
                      "store of namespace %s or malformed",
                      p, key, pmix_me.nspace);
            status = SYMCOLL_ERR_BOOTSTRAP;
        }
    }
    PMIX_INFO_DESTRUCT(&info);
    if (status != SYMCOLL_OK)
        goto out;
    snprintf(secret, secret_len, "%s", sec);
    snprintf(where, where_len, "%s", loopback ? "127.0.0.1" : "every address");
    log_debug("bootstrap: PMIx namespace %s, key %s: mesh listener on port %u", pmix_me.nspace,
              key, port);
out:
    bs_wipe(sec, sizeof(sec));
    bs_wipe(card, sizeof(card));
    if (status != SYMCOLL_OK)
        bs_close(lfd_p);
    return status;
}

const char *bs_pmix_namespace(void)
{
    return pmix_me.nspace;
}

#else /* !HAVE_PMIX */

bool bootstrap_pmix_built(void)
{
    return false;
}

bool bootstrap_pmix_present(void)
{
    return false;
}

symcoll_status_t bootstrap_pmix_job(bootstrap_pmix_job_t *job)
{
    (void)job;
    return SYMCOLL_ERR_UNSUPPORTED;
}

symcoll_status_t bs_pmix_rendezvous(bootstrap_t *bs, const deadline_t *dl, bs_addr_t *to,
                                    char *secret, size_t secret_len, int *lfd_p, char *where,
                                    size_t where_len)
{
    *lfd_p = -1;
    log_error("bootstrap: this symcoll was built without PMIx (configure --with-pmix)");
    return SYMCOLL_ERR_UNSUPPORTED;
}

const char *bs_pmix_namespace(void)
{
    return "";
}

#endif
