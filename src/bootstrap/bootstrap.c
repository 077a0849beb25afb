/* Bootstrap object and global collectives: the caller's allgather callback or the
 * built-in TCP mesh, both wrapped so every contribution is checked (session, rank,
 * sequence number, length) before it is used. */
#include "bootstrap/bs_int.h"

#include <ctype.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SYMCOLL_COOKIE: 1 to 64 hex digits, not all zero. The secret is its value written in
 * lowercase without leading zeros, so spellings of one number agree. */
static symcoll_status_t bs_parse_cookie(bootstrap_t *bs, const char *s)
{
    size_t n = s ? strlen(s) : 0, i = 0;

    bs->secret_len = 0;
    if (n == 0)
        return SYMCOLL_OK;
    if (n > BS_SECRET_MAX)
        goto bad;
    for (size_t k = 0; k < n; k++)
        if (!isxdigit((unsigned char)s[k]))
            goto bad;
    while (i < n && s[i] == '0')
        i++;
    if (i == n)
        goto bad;
    for (; i < n; i++)
        bs->secret[bs->secret_len++] = (char)tolower((unsigned char)s[i]);
    return SYMCOLL_OK;
bad:
    /* the value is a secret: do not echo it */
    log_error("SYMCOLL_COOKIE must be 1 to %d hexadecimal digits, not all zero", BS_SECRET_MAX);
    return SYMCOLL_ERR_INVALID_PARAM;
}

/* Once per process: without a secret, anyone who reaches rank 0 first can join. */
static void bs_warn_no_cookie(const char *addr)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;

    if (atomic_flag_test_and_set(&warned))
        return;
    log_warn("bootstrap: SYMCOLL_COOKIE is not set: the TCP bootstrap cannot authenticate "
             "ranks, and whoever reaches %s first can join as any rank; set SYMCOLL_COOKIE "
             "to the same random value on every rank (symcoll_run does), e.g. "
             "od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'",
             addr ? addr : "rank 0");
}

/* Several ranks and nothing to find each other with: say what would do. */
static void bs_no_way(const bootstrap_t *bs)
{
    if (getenv("PMIX_NAMESPACE") && !bootstrap_pmix_built())
        log_error("bootstrap: %d ranks cannot find each other: this process runs under a "
                  "PMIx server, but this symcoll was built without PMIx (configure "
                  "--with-pmix, e.g. with libpmix-dev installed); otherwise set "
                  "SYMCOLL_ADDR=host:port of rank 0 and SYMCOLL_COOKIE on every rank",
                  bs->nranks);
    else
        log_error("bootstrap: %d ranks cannot find each other: start them with a PMIx "
                  "launcher (mpirun, srun --mpi=pmix)%s or with symcoll_run, or set "
                  "SYMCOLL_ADDR=host:port where rank 0 listens (and SYMCOLL_COOKIE, the same "
                  "random value) on every rank, or pass an allgather callback",
                  bs->nranks, bootstrap_pmix_built() ? "" : " with a symcoll built with PMIx");
}

/* PMIx: the job's key-value store is the address book and carries rank 0's fresh
 * secret; the ranks then connect the mesh, authenticated with that secret. */
static symcoll_status_t bs_pmix_connect(bootstrap_t *bs, const deadline_t *dl)
{
    char secret[BS_SECRET_MAX + 1] = "", where[64] = "";
    symcoll_status_t status = SYMCOLL_OK;
    bs_addr_t to[32];
    int lfd = -1;

    status = bs_pmix_rendezvous(bs, dl, to, secret, sizeof(secret), &lfd, where, sizeof(where));
    if (status == SYMCOLL_OK && bs->nranks > 1) {
        status = bs_parse_cookie(bs, secret);
        bs_wipe(secret, sizeof(secret));
        if (status == SYMCOLL_OK)
            status = bs_mesh_connect(bs, lfd, to, dl);
        else
            bs_close(&lfd);
    }
    snprintf(bs->how, sizeof(bs->how), "pmix (namespace %.64s, mesh on %s)",
             bs_pmix_namespace(), where[0] ? where : "nothing: one rank");
    return status;
}

/* Callback path: every contribution travels behind a header that is checked; the first
 * exchange hands out rank 0's job id, which every later header must carry. */
static symcoll_status_t bs_cb_exchange(bootstrap_t *bs, const void *src, void *dst, size_t size,
                                       uint16_t type, bool first)
{
    size_t hl = sizeof(bs_hdr_t), slot = hl + size;
    char *mine, *all;
    symcoll_status_t status = SYMCOLL_OK;
    int rc;

    if (size > BS_MAX_PAYLOAD) {
        log_error("bootstrap: allgather of %zu bytes per rank is too large", size);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    mine = malloc(slot);
    all = malloc(slot * (size_t)bs->nranks);
    if (!mine || !all) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    bs_hdr_fill(bs, (bs_hdr_t *)mine, type, bs->seq, size, 0);
    if (size)
        memcpy(mine + hl, src, size);
    rc = bs->allgather(mine, all, slot, bs->allgather_ctx);
    if (rc) {
        log_error("bootstrap: the allgather callback returned %d", rc);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    if (first)
        memcpy(&bs->job_id, all + offsetof(bs_hdr_t, session), sizeof(bs->job_id));
    for (int r = 0; r < bs->nranks; r++) {
        bs_hdr_t h;
        char what[64];
        memcpy(&h, all + (size_t)r * slot, hl);
        snprintf(what, sizeof(what), "allgather contribution of rank %d", r);
        status = bs_hdr_check(bs, &h, type, r, bs->seq, size, 0, first, what);
        if (status != SYMCOLL_OK)
            goto out;
        if (size)
            memcpy((char *)dst + (size_t)r * size, all + (size_t)r * slot + hl, size);
    }
out:
    free(mine);
    free(all);
    return status;
}

bootstrap_t *bs_alloc(int rank, int nranks, double timeout_sec, const _Atomic int *aborted)
{
    bootstrap_t *bs = calloc(1, sizeof(*bs));

    if (!bs)
        return NULL;
    bs->rank = rank;
    bs->nranks = nranks;
    bs->timeout_sec = timeout_sec;
    bs->aborted = aborted;
    bs->root_fd = -1;
    bs->repair_lfd = -1;
    bs->local_rank = 0;
    bs->local_size = 1;
    bs->local_ranks = malloc(sizeof(int));
    bs->local_fds = malloc(sizeof(int));
    if (!bs->local_ranks || !bs->local_fds) {
        bootstrap_destroy(bs);
        return NULL;
    }
    bs->local_ranks[0] = rank;
    bs->local_fds[0] = -1;
    return bs;
}

symcoll_status_t bootstrap_create(const bootstrap_params_t *params, bootstrap_t **bs_p)
{
    bootstrap_t *bs;
    symcoll_status_t status;
    deadline_t dl;

    if (!params || !bs_p || params->nranks <= 0 || params->rank < 0 ||
        params->rank >= params->nranks || !(params->timeout_sec > 0)) {
        log_error("bootstrap_create: invalid parameters");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    bs = bs_alloc(params->rank, params->nranks, params->timeout_sec, params->aborted);
    if (!bs)
        return SYMCOLL_ERR_NO_MEMORY;
    if (!params->allgather && !params->pmix) {
        status = bs_parse_cookie(bs, params->cookie);
        if (status != SYMCOLL_OK)
            goto err_free;
    }
    bs->allgather = params->allgather;
    bs->allgather_ctx = params->allgather_ctx;

    /* every rank draws; the values of rank 0 win */
    status = bs_random64(&bs->job_id);
    if (status == SYMCOLL_OK)
        status = bs_random_bytes(bs->name_seed, sizeof(bs->name_seed));
    if (status != SYMCOLL_OK)
        goto err_free;

    dl = deadline_make(bs->timeout_sec, bs->aborted);
    if (bs->allgather) {
        bs_welcome_t mine, *all = malloc(sizeof(*all) * (size_t)bs->nranks);
        if (!all) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto err_free;
        }
        /* the callback is trusted: no proof, only rank 0's values */
        memset(&mine, 0, sizeof(mine));
        mine.job_id = bs->job_id;
        memcpy(mine.name_seed, bs->name_seed, sizeof(mine.name_seed));
        status = bs_cb_exchange(bs, &mine, all, sizeof(mine), BS_MSG_WELCOME, true);
        if (status == SYMCOLL_OK)
            memcpy(bs->name_seed, all[0].name_seed, sizeof(bs->name_seed));
        free(all);
        snprintf(bs->how, sizeof(bs->how), "callback (the caller's allgather)");
    } else if (params->pmix) {
        status = bs_pmix_connect(bs, &dl);
    } else if (bs->nranks > 1) {
        if (!params->addr || !params->addr[0]) {
            bs_no_way(bs);
            status = SYMCOLL_ERR_INVALID_PARAM;
            goto err_free;
        }
        if (!bs->secret_len)
            bs_warn_no_cookie(params->addr);
        snprintf(bs->how, sizeof(bs->how), "tcp (rank 0 at SYMCOLL_ADDR %s%s)", params->addr,
                 bs->secret_len ? "" : ", no SYMCOLL_COOKIE");
        status = bs_tcp_connect(bs, params->addr, params->listen_fd, !params->no_host_leaders,
                                params->host_group ? params->host_group : "", &dl);
    } else {
        snprintf(bs->how, sizeof(bs->how), "single rank");
    }
    if (status != SYMCOLL_OK)
        goto err_free;
    bs_local_name_key(bs);
    /* the handshake is over: nothing needs the secret any more */
    bs_wipe(bs->secret, sizeof(bs->secret));
    bs->secret_len = 0;
    bs->seq = 1;
    log_debug("bootstrap: rank %d of %d connected: %s", bs->rank, bs->nranks, bs->how);
    *bs_p = bs;
    return SYMCOLL_OK;

err_free:
    bootstrap_destroy(bs);
    return status;
}

void bootstrap_destroy(bootstrap_t *bs)
{
    if (!bs)
        return;
    bs_local_close(bs);
    if (bs->peer_fds)
        for (int r = 0; r < bs->nranks; r++)
            bs_close(&bs->peer_fds[r]);
    bs_close(&bs->root_fd);
    bs_close(&bs->repair_lfd);
    free(bs->repair_addrs);
    for (int k = 0; k < bs->nrounds; k++) {
        if (bs->send_fds && bs_mesh_owns(bs, k, true))
            bs_close(&bs->send_fds[k]);
        if (bs->recv_fds && bs_mesh_owns(bs, k, false))
            bs_close(&bs->recv_fds[k]);
    }
    free(bs->send_fds);
    free(bs->recv_fds);
    free(bs->peer_fds);
    free(bs->local_ranks);
    free(bs->local_fds);
    /* do not leave secrets in freed memory */
    bs_wipe(bs->secret, sizeof(bs->secret));
    bs_wipe(bs->name_key, sizeof(bs->name_key));
    free(bs);
}

static void bs_shut(int fd)
{
    if (fd >= 0)
        (void)shutdown(fd, SHUT_RDWR);
}

void bs_shut_all(bootstrap_t *bs)
{
    bs_shut(bs->root_fd);
    for (int k = 0; k < bs->nrounds; k++) {
        if (bs->send_fds)
            bs_shut(bs->send_fds[k]);
        if (bs->recv_fds)
            bs_shut(bs->recv_fds[k]);
    }
    for (int r = 0; bs->peer_fds && r < bs->nranks; r++)
        if (bs->peer_fds[r] >= 0)
            (void)shutdown(bs->peer_fds[r], SHUT_RDWR);
    for (int i = 0; bs->local_fds && i < bs->local_size; i++)
        if (bs->local_fds[i] >= 0)
            (void)shutdown(bs->local_fds[i], SHUT_RDWR);
}

void bootstrap_set_progress(bootstrap_t *bs, void (*fn)(void *arg), void *arg)
{
    bs->progress = fn;
    bs->progress_arg = arg;
}

/* Whether the channel is still in step (an earlier exchange may have failed). */
static symcoll_status_t bs_usable(const bootstrap_t *bs)
{
    if (bs->failed != SYMCOLL_OK)
        log_error("bootstrap: an earlier exchange failed; the channel is unusable");
    return bs->failed;
}

/* Start a global collective: the deadline starts now. */
static symcoll_status_t bs_begin(const bootstrap_t *bs, deadline_t *dl)
{
    *dl = deadline_make(bs->timeout_sec, bs->aborted);
    return deadline_check(dl);
}

/* End a global collective that began: a failed exchange leaves the streams out of step,
 * and the peers in it stop too. */
static symcoll_status_t bs_end(bootstrap_t *bs, symcoll_status_t status)
{
    if (status != SYMCOLL_OK) {
        bs->failed = status;
        bs_shut_all(bs);
    }
    bs->seq++;
    bs->stats.exchanges++;
    return status;
}

symcoll_status_t bootstrap_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size)
{
    symcoll_status_t status;
    deadline_t dl;

    if (!bs || (size && (!src || !dst))) {
        log_error("bootstrap_allgather: invalid arguments");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (size > BS_MAX_PAYLOAD || size * (size_t)bs->nranks > BS_MAX_PAYLOAD) {
        log_error("bootstrap_allgather: %zu bytes per rank on %d ranks is too large", size,
                  bs->nranks);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    status = bs_usable(bs);
    if (status != SYMCOLL_OK)
        return status;
    status = bs_begin(bs, &dl);
    if (status == SYMCOLL_OK && bs->allgather) {
        status = bs_cb_exchange(bs, src, dst, size, BS_MSG_DATA, false);
        bs->stats.rounds++;
    } else if (status == SYMCOLL_OK && bs->nranks > 1) {
        status = bs_mesh_allgather(bs, src, dst, size, &dl);
    } else if (status == SYMCOLL_OK && size) {
        memcpy(dst, src, size);
    }
    return bs_end(bs, status);
}

/* A zero-byte allgather over the mesh is the dissemination barrier. */
symcoll_status_t bootstrap_barrier(bootstrap_t *bs)
{
    return bootstrap_allgather(bs, NULL, NULL, 0);
}

symcoll_status_t bootstrap_allreduce(bootstrap_t *bs, int64_t *vals, int count,
                                     bootstrap_op_t op)
{
    int64_t all[BOOTSTRAP_ALLREDUCE_MAX], *gathered;
    symcoll_status_t status;
    deadline_t dl;

    if (!bs || !vals || count < 1 || count > BOOTSTRAP_ALLREDUCE_MAX ||
        (op != BOOTSTRAP_OP_MIN && op != BOOTSTRAP_OP_MAX)) {
        log_error("bootstrap_allreduce: invalid arguments");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (!bs->allgather) {
        status = bs_usable(bs);
        if (status != SYMCOLL_OK)
            return status;
        status = bs_begin(bs, &dl);
        if (status == SYMCOLL_OK && bs->nranks > 1)
            status = bs_mesh_allreduce(bs, vals, count, op, &dl);
        return bs_end(bs, status);
    }
    /* the caller's allgather: gather every rank's values and combine them here */
    gathered = malloc((size_t)bs->nranks * (size_t)count * sizeof(*gathered));
    if (!gathered)
        return SYMCOLL_ERR_NO_MEMORY;
    status = bootstrap_allgather(bs, vals, gathered, (size_t)count * sizeof(*vals));
    if (status == SYMCOLL_OK) {
        memcpy(all, gathered, (size_t)count * sizeof(*all));
        for (int r = 1; r < bs->nranks; r++)
            bs_combine(all, gathered + (size_t)r * (size_t)count, count, op);
        memcpy(vals, all, (size_t)count * sizeof(*vals));
    }
    free(gathered);
    return status;
}

void bootstrap_stats(const bootstrap_t *bs, bootstrap_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!bs)
        return;
    *out = bs->stats;
    out->tcp_conns = bs->root_fd >= 0 ? 1 : 0;
    for (int r = 0; bs->peer_fds && r < bs->nranks; r++)
        out->tcp_conns += bs->peer_fds[r] >= 0;
    for (int k = 0; k < bs->nrounds; k++)
        out->tcp_conns += (bs->send_fds && bs_mesh_owns(bs, k, true) && bs->send_fds[k] >= 0) +
                          (bs->recv_fds && bs_mesh_owns(bs, k, false) && bs->recv_fds[k] >= 0);
}

symcoll_status_t bootstrap_failed(const bootstrap_t *bs)
{
    return bs ? bs->failed : SYMCOLL_OK;
}

void bootstrap_abort(bootstrap_t *bs)
{
    if (!bs || bs->failed != SYMCOLL_OK)
        return;
    bs->failed = SYMCOLL_ERR_ABORTED;
    bs_shut_all(bs);
}

uint64_t bootstrap_job_id(const bootstrap_t *bs)
{
    return bs ? bs->job_id : 0;
}

const char *bootstrap_describe(const bootstrap_t *bs)
{
    return bs && bs->how[0] ? bs->how : "none";
}

int bootstrap_rank(const bootstrap_t *bs)
{
    return bs->rank;
}

int bootstrap_size(const bootstrap_t *bs)
{
    return bs->nranks;
}
