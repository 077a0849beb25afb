/* The pool's collective protocol: the checked exchange, segments created, exported over
 * the node's fd channel and imported, and the growth and trim of the data segments. */
#include "pool/pool_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"

/* ---- exchange ---------------------------------------------------------------------- */

/* 63 bits of FNV-1a over the header's fields that must agree. */
static int64_t pool_xhdr_hash(const pool_xhdr_t *h)
{
    const uint64_t f[8] = {h->magic, h->seq, h->kind, (uint64_t)h->seg,
                           h->a,     h->b,   h->c,    h->seqh};
    uint64_t x = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < 8; i++)
        for (int k = 0; k < 64; k += 8)
            x = (x ^ ((f[i] >> k) & 0xff)) * 0x100000001b3ull;
    return (int64_t)(x >> 1);
}

/* Agrees on this rank's header: one all-reduce (O(log n) rounds on the TCP bootstrap)
 * of the hash of the fields that must agree, the first failed rank and hdr->vote, which
 * comes back as the smallest any rank sent. Returns the first failure status of any rank,
 * SYMCOLL_ERR_MISMATCH on disagreement, else SYMCOLL_OK. Only where a rank failed or the
 * hashes differ are the headers gathered (into pool->xbuf), to tell who and why. */
symcoll_status_t pool_exchange(pool_t *pool, pool_xhdr_t *hdr)
{
    comm_t *comm = pool->comm;
    symcoll_status_t status;
    int64_t h, v[4];

    hdr->magic = POOL_XMAGIC;
    hdr->seq = ++pool->xseq;
    /* only pools whose allocations may skip the exchange compare their sequences: host
     * allocations agree on their offsets at once, as they always did */
    hdr->seqh = pool->be->commit ? 0 : pool_seq_value(pool);
    h = pool_xhdr_hash(hdr);
    v[0] = h;
    v[1] = -h;
    v[2] = hdr->status != SYMCOLL_OK ? comm->rank : comm->nranks;
    v[3] = hdr->vote;
    status = bootstrap_allreduce(comm->bootstrap, v, 4, BOOTSTRAP_OP_MIN);
    if (status != SYMCOLL_OK) {
        log_error("pool: exchange %llu failed: %s", (unsigned long long)hdr->seq,
                  symcoll_status_string(status));
        return status;
    }
    hdr->vote = v[3];
    if (v[0] == -v[1] && v[2] == comm->nranks) {
        pool->unchecked = 0; /* every rank made the same allocations up to here */
        return SYMCOLL_OK;
    }
    /* sent from its own buffer (allocated with the pool: nothing here can fail before
     * we take part, so peers never wait for us in vain) */
    memset(pool->xsend, 0, pool->xmsg);
    memcpy(pool->xsend, hdr, sizeof(*hdr));
    status = bootstrap_allgather(comm->bootstrap, pool->xsend, pool->xbuf, pool->xmsg);
    if (status != SYMCOLL_OK) {
        log_error("pool: exchange %llu failed: %s", (unsigned long long)hdr->seq,
                  symcoll_status_string(status));
        return status;
    }
    /* a rank that failed may not have been able to compute the same arguments: its
     * failure is the answer, not a mismatch */
    for (int r = 0; r < comm->nranks; r++) {
        pool_xhdr_t x;
        memcpy(&x, pool->xbuf + (size_t)r * pool->xmsg, sizeof(x));
        if (x.magic == POOL_XMAGIC && x.seq == hdr->seq && x.status != SYMCOLL_OK)
            return (symcoll_status_t)x.status;
    }
    for (int r = 0; r < comm->nranks; r++) {
        pool_xhdr_t x;
        memcpy(&x, pool->xbuf + (size_t)r * pool->xmsg, sizeof(x));
        if (x.magic == POOL_XMAGIC && x.seq == hdr->seq && x.seqh != hdr->seqh) {
            pool->diverged = true;
            log_error("pool %s: rank %d made other allocations or frees than this rank "
                      "since the pool was created (exchange %llu, kind %u here and %u "
                      "there; %llu allocation(s) without an exchange here): ranks made "
                      "different pool calls",
                      pool->be->name, r, (unsigned long long)hdr->seq, hdr->kind, x.kind,
                      (unsigned long long)pool->unchecked);
            return SYMCOLL_ERR_MISMATCH;
        }
        if (x.magic != POOL_XMAGIC || x.seq != hdr->seq || x.kind != hdr->kind ||
            x.seg != hdr->seg || x.a != hdr->a || x.b != hdr->b || x.c != hdr->c) {
            log_error("pool %s: rank %d disagrees (exchange %llu kind %u args %llu/%llu/%llu, "
                      "here %llu kind %u args %llu/%llu/%llu): ranks made different pool calls",
                      pool->be->name, r, (unsigned long long)x.seq, x.kind,
                      (unsigned long long)x.a, (unsigned long long)x.b, (unsigned long long)x.c,
                      (unsigned long long)hdr->seq, hdr->kind, (unsigned long long)hdr->a,
                      (unsigned long long)hdr->b, (unsigned long long)hdr->c);
            return SYMCOLL_ERR_MISMATCH;
        }
    }
    /* the vote disagreed but the gathered headers agree: a rank's own header changed
     * between the two, which no caller does */
    log_error("internal: pool %s: exchange %llu: the vote and the headers disagree",
              pool->be->name, (unsigned long long)hdr->seq);
    return SYMCOLL_ERR_INTERNAL;
}

/* ---- segments ---------------------------------------------------------------------- */

static void pool_unmap_views(pool_t *pool, void **views, size_t off, size_t size,
                             const uint64_t *handles, const bool *mapped)
{
    for (int r = 0; r < pool->local_size; r++)
        if (mapped[r])
            pool->be->seg_unmap(pool->be_ctx, (char *)views[r] + off, size, handles[r]);
}

/*
 * Collective: create this rank's segment [off, off+size) in the views, export it to the
 * local peers, import theirs, and let the listener register and exchange it. On success
 * *handles_p holds one handle per local rank. On failure every rank has rolled back.
 */
symcoll_status_t pool_add_segment(pool_t *pool, void **views, int seg, size_t off, size_t size,
                                  symcoll_status_t pre, uint64_t **handles_p)
{
    comm_t *comm = pool->comm;
    const pool_backend_t *be = pool->be;
    int n = pool->local_size, me = pool->local_rank;
    uint64_t *handles = calloc((size_t)n, sizeof(*handles));
    bool *mapped = calloc((size_t)n, sizeof(*mapped));
    int *all_fds = calloc((size_t)n, sizeof(*all_fds));
    bool listened = false, registered = false;
    int fd = -1;
    pool_xhdr_t hdr;
    symcoll_status_t status = pre, st2;

    if (!handles || !mapped || !all_fds) {
        log_error("pool: out of memory adding a segment");
        status = SYMCOLL_ERR_NO_MEMORY;
    }
    if (status == SYMCOLL_OK && be->grow_allowed)
        status = be->grow_allowed(pool->be_ctx);
    if (status == SYMCOLL_OK) {
        status = be->seg_create(pool->be_ctx, size, (char *)views[me] + off, &handles[me], &fd);
        mapped[me] = status == SYMCOLL_OK;
    }
    if (status == SYMCOLL_OK && seg == POOL_SEG_SIGNAL)
        /* zeroed before anyone else can see it, so epochs start from 0 everywhere */
        status = be->memset(pool->be_ctx, (char *)views[me] + off, 0, size);

    memset(&hdr, 0, sizeof(hdr));
    if (status == SYMCOLL_OK && pool->has_listener) {
        status = pool->listener.seg_added(pool->listener.arg, seg, (char *)views[me] + off,
                                          size, &registered);
        listened = status == SYMCOLL_OK;
    }

    /* round 1: did every rank create (and register) its segment? */
    hdr.kind = POOL_X_SEG;
    hdr.status = status;
    hdr.seg = seg;
    hdr.a = off;
    hdr.b = size;
    hdr.vote = registered;
    status = pool_exchange(pool, &hdr);
    if (status != SYMCOLL_OK)
        goto err_rollback;

    if (n > 1) {
        uint64_t desc[2] = {off, size}, *all_desc = calloc((size_t)n, sizeof(desc));
        if (!all_desc) {
            log_error("pool: out of memory adding a segment");
            status = SYMCOLL_ERR_NO_MEMORY;
        } else {
            for (int r = 0; r < n; r++)
                all_fds[r] = -1;
            status = bootstrap_local_fd_allgather(comm->bootstrap, &fd, 1, desc, sizeof(desc),
                                                  all_fds, all_desc);
            for (int r = 0; r < n && status == SYMCOLL_OK; r++) {
                if (all_desc[2 * r] != off || all_desc[2 * r + 1] != size) {
                    log_error("pool: local rank %d sent segment %llu+%llu, expected %zu+%zu", r,
                              (unsigned long long)all_desc[2 * r],
                              (unsigned long long)all_desc[2 * r + 1], off, size);
                    status = SYMCOLL_ERR_MISMATCH;
                }
            }
            for (int r = 0; r < n && status == SYMCOLL_OK; r++) {
                if (r == me)
                    continue;
                status = be->seg_import(pool->be_ctx, all_fds[r], size, (char *)views[r] + off,
                                        &handles[r]);
                mapped[r] = status == SYMCOLL_OK;
            }
            /* the mappings keep the memory: no fd outlives the exchange */
            for (int r = 0; r < n; r++)
                if (all_fds[r] >= 0)
                    close(all_fds[r]);
            free(all_desc);
        }
    }
    if (fd >= 0) {
        close(fd);
        fd = -1;
    }
    if (status == SYMCOLL_OK && listened && pool->listener.seg_agreed)
        status = pool->listener.seg_agreed(pool->listener.arg, seg, hdr.vote != 0);

    /* round 2: did every rank map every peer's segment? */
    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = POOL_X_COMMIT;
    hdr.status = status;
    hdr.seg = seg;
    hdr.a = off;
    hdr.b = size;
    st2 = pool_exchange(pool, &hdr);
    status = st2;
    if (status != SYMCOLL_OK)
        goto err_rollback;

    free(mapped);
    free(all_fds);
    *handles_p = handles;
    return SYMCOLL_OK;

err_rollback:
    if (fd >= 0)
        close(fd);
    if (listened)
        pool->listener.seg_removed(pool->listener.arg, seg);
    if (mapped && handles)
        pool_unmap_views(pool, views, off, size, handles, mapped);
    free(handles);
    free(mapped);
    free(all_fds);
    return status;
}

void pool_remove_segment(pool_t *pool, void **views, int seg, size_t off, size_t size,
                         uint64_t *handles)
{
    bool all[pool->local_size];
    if (pool->has_listener)
        pool->listener.seg_removed(pool->listener.arg, seg);
    for (int r = 0; r < pool->local_size; r++)
        all[r] = true;
    pool_unmap_views(pool, views, off, size, handles, all);
    free(handles);
}

/* ---- growth and trim --------------------------------------------------------------- */

/* Size of the new data segment for a shortfall of need bytes; 0 if over the ceiling. */
size_t pool_growth_size(const pool_t *pool, size_t need)
{
    size_t size, room = pool->max_size - pool->mapped;
    if (pool->mapped == 0) {
        size = need > pool->min_size ? need : pool->min_size;
    } else {
        double g = (double)pool->mapped * pool->growth;
        size_t gs = g >= (double)pool->max_size ? pool->max_size : (size_t)g;
        size = need > gs ? need : gs;
    }
    if (size > room)
        size = room;
    size = round_up(size, pool->gran);
    if (size > room)
        size -= pool->gran;
    return size >= need ? size : 0;
}

/* Unmaps the data segments from index keep on; they must be free (the last free range
 * covers them). Every rank does the same, inside a collective. */
void pool_drop_tail(pool_t *pool, int keep)
{
    while (pool->nsegs > keep) {
        pool_seg_t *s = &pool->segs[--pool->nsegs];
        pool_remove_segment(pool, pool->bases, pool->nsegs, s->off, s->size, s->handles);
        /* the tail free range shrinks by the segment */
        pool_range_t *last = &pool->free[pool->nfree - 1];
        last->size -= s->size;
        if (last->size == 0)
            pool->nfree--;
        pool->mapped = s->off;
    }
    atomic_store(&pool->st_mapped, pool->mapped);
    atomic_store(&pool->st_segments, (uint64_t)pool->nsegs);
}

/* Collective: appends a data segment of size bytes. The caller reserved room in the
 * segment table and the free list, so nothing can fail locally after the exchange. */
symcoll_status_t pool_grow(pool_t *pool, size_t size)
{
    uint64_t *handles;
    symcoll_status_t status;
    int idx = pool->nsegs;

    status = pool_add_segment(pool, pool->bases, idx, pool->mapped, size, SYMCOLL_OK, &handles);
    if (status != SYMCOLL_OK)
        return status;
    pool_free_insert(pool, pool->mapped, size); /* cannot fail: room reserved */
    pool->segs[idx].off = pool->mapped;
    pool->segs[idx].size = size;
    pool->segs[idx].handles = handles;
    pool->nsegs++;
    pool->mapped += size;
    atomic_store(&pool->st_mapped, pool->mapped);
    atomic_fetch_add(&pool->st_growths, 1);
    atomic_store(&pool->st_segments, (uint64_t)pool->nsegs);
    log_debug("pool %s: segment %d of %zu bytes at offset %zu (mapped %zu)", pool->be->name,
              idx, size, pool->segs[idx].off, pool->mapped);
    return SYMCOLL_OK;
}

symcoll_status_t pool_trim(pool_t *pool)
{
    symcoll_status_t status;
    pool_xhdr_t hdr;
    size_t tail_off = pool->mapped;
    int keep;

    pthread_mutex_lock(&pool->lock);
    if (pool->nfree &&
        pool->free[pool->nfree - 1].off + pool->free[pool->nfree - 1].size == pool->mapped)
        tail_off = pool->free[pool->nfree - 1].off;
    keep = pool->nsegs;
    while (keep > 0 && pool->segs[keep - 1].off >= tail_off)
        keep--;

    memset(&hdr, 0, sizeof(hdr));
    hdr.kind = POOL_X_TRIM;
    hdr.a = (uint64_t)keep;
    hdr.b = pool->mapped;
    status = pool_exchange(pool, &hdr);
    if (status != SYMCOLL_OK)
        goto out;

    pool_drop_tail(pool, keep);
out:
    pthread_mutex_unlock(&pool->lock);
    return status;
}
