/* Bootstrap object and global collectives: the caller's allgather callback or the
 * built-in TCP star, both wrapped so every contribution is checked (cookie, rank,
 * sequence number, length) before it is used. */
#include "bootstrap/bs_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* SYMCOLL_COOKIE: 1 to 16 hex digits, not zero. */
static symcoll_status_t bs_parse_cookie(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = s ? strlen(s) : 0;

    *out = 0;
    if (n == 0)
        return SYMCOLL_OK;
    if (n > 16)
        goto bad;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (!isxdigit(c))
            goto bad;
        v = (v << 4) | (uint64_t)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
    }
    if (v == 0)
        goto bad;
    *out = v;
    return SYMCOLL_OK;
bad:
    /* the value is a secret: do not echo it */
    log_error("SYMCOLL_COOKIE must be 1 to 16 hexadecimal digits, not all zero");
    return SYMCOLL_ERR_INVALID_PARAM;
}

/* Callback path: every contribution travels behind a header that is checked. */
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
    /* the first exchange hands out rank 0's cookie; it is checked from then on */
    if (first)
        memcpy(&bs->cookie, all + offsetof(bs_hdr_t, cookie), sizeof(bs->cookie));
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

symcoll_status_t bootstrap_create(const bootstrap_params_t *params, bootstrap_t **bs_p)
{
    bootstrap_t *bs;
    uint64_t env_cookie = 0;
    symcoll_status_t status;
    deadline_t dl;

    if (!params || !bs_p || params->nranks <= 0 || params->rank < 0 ||
        params->rank >= params->nranks || !(params->timeout_sec > 0)) {
        log_error("bootstrap_create: invalid parameters");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (!params->allgather) {
        status = bs_parse_cookie(params->cookie, &env_cookie);
        if (status != SYMCOLL_OK)
            return status;
    }
    bs = calloc(1, sizeof(*bs));
    if (!bs)
        return SYMCOLL_ERR_NO_MEMORY;
    bs->rank = params->rank;
    bs->nranks = params->nranks;
    bs->allgather = params->allgather;
    bs->allgather_ctx = params->allgather_ctx;
    bs->timeout_sec = params->timeout_sec;
    bs->aborted = params->aborted;
    bs->root_fd = -1;
    bs->local_rank = 0;
    bs->local_size = 1;
    bs->local_ranks = malloc(sizeof(int));
    bs->local_fds = malloc(sizeof(int));
    if (!bs->local_ranks || !bs->local_fds) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err_free;
    }
    bs->local_ranks[0] = bs->rank;
    bs->local_fds[0] = -1;

    /* every rank draws; the values of rank 0 win */
    status = bs_random64(&bs->cookie);
    if (status == SYMCOLL_OK)
        status = bs_random64(&bs->job_id);
    if (status != SYMCOLL_OK)
        goto err_free;
    if (env_cookie)
        bs->cookie = env_cookie;

    dl = deadline_make(bs->timeout_sec, bs->aborted);
    if (bs->allgather) {
        uint64_t *ids = malloc(sizeof(uint64_t) * (size_t)bs->nranks);
        if (!ids) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto err_free;
        }
        status = bs_cb_exchange(bs, &bs->job_id, ids, sizeof(uint64_t), BS_MSG_WELCOME, true);
        if (status == SYMCOLL_OK)
            bs->job_id = ids[0];
        free(ids);
    } else if (bs->nranks > 1) {
        status = bs_tcp_connect(bs, params->addr, env_cookie, &dl);
    }
    if (status != SYMCOLL_OK)
        goto err_free;
    bs->seq = 1;
    log_debug("bootstrap: rank %d of %d connected (%s)", bs->rank, bs->nranks,
              bs->allgather    ? "callback"
              : bs->nranks > 1 ? "tcp"
                               : "single rank");
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
    free(bs->peer_fds);
    free(bs->local_ranks);
    free(bs->local_fds);
    /* the cookie is a secret: do not leave it in freed memory */
    bs->cookie = 0;
    free(bs);
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
    if (bs->failed != SYMCOLL_OK) {
        log_error("bootstrap: an earlier exchange failed; the channel is unusable");
        return bs->failed;
    }
    dl = deadline_make(bs->timeout_sec, bs->aborted);
    status = deadline_check(&dl);
    if (status != SYMCOLL_OK)
        return status;
    if (bs->allgather)
        status = bs_cb_exchange(bs, src, dst, size, BS_MSG_DATA, false);
    else
        status = bs_tcp_allgather(bs, src, dst, size, &dl);
    /* a failed exchange leaves the streams out of step */
    if (status != SYMCOLL_OK)
        bs->failed = status;
    bs->seq++;
    return status;
}

symcoll_status_t bootstrap_barrier(bootstrap_t *bs)
{
    return bootstrap_allgather(bs, NULL, NULL, 0);
}

uint64_t bootstrap_job_id(const bootstrap_t *bs)
{
    return bs ? bs->job_id : 0;
}
