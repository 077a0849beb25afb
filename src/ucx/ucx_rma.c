/* UCX layer: the data path: put, put_signal and flag puts (RMA, or active messages the
 * receiver copies), fence, the receive hook and the abort notice. */
#include <string.h>

#include "ucx/ucx_int.h"

symcoll_status_t ucx_target(ucx_ctx_t *ucx, int peer, const char *sym, size_t len, bool rma,
                            ucx_where_t *w)
{
    ucx_region_t *reg = ucx_region_find(ucx, sym, 1);
    ucx_remote_t *rm;

    if (!reg || !reg->connected) {
        log_error("internal: remote target %p lies in no registered region", (const void *)sym);
        return SYMCOLL_ERR_INTERNAL;
    }
    w->key = reg->key;
    w->off = (uint64_t)(sym - reg->addr);
    w->piece = len < reg->size - w->off ? len : reg->size - w->off;
    w->raddr = 0;
    w->rkey = NULL;
    if (!rma)
        return SYMCOLL_OK;
    rm = atomic_load_explicit(&reg->remote[peer], memory_order_acquire);
    if (!rm) {
        symcoll_status_t status = ucx_rkey_fetch(ucx, reg, peer, &rm);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (!rm->rkey[ucx->index]) {
        ucp_ep_h ep;
        ucs_status_t s;
        symcoll_status_t status = ucx_ep_get(ucx, peer, &ep);
        if (status != SYMCOLL_OK)
            return status;
        s = ucp_ep_rkey_unpack(ep, rm->rkey_buf, &rm->rkey[ucx->index]);
        if (s != UCS_OK) {
            log_error("ucp_ep_rkey_unpack (rank %d): %s", peer, ucs_status_string(s));
            return ucx_status_of(ucx, s);
        }
    }
    w->raddr = rm->addr + w->off;
    w->rkey = rm->rkey[ucx->index];
    return SYMCOLL_OK;
}

/* One transfer inside one region of the peer: data at *d (piece bytes, may be 0), then
 * the flag at *f if f is not NULL; by RMA where rma is set, else as one active message.
 * *op_p: the operation that releases src. */
static symcoll_status_t ucx_emit(ucx_ctx_t *ucx, int peer, const void *src,
                                 const ucx_where_t *d, const ucx_where_t *f,
                                 uint64_t flag_value, uint64_t seq, bool rma, ucx_op_t **op_p)
{
    ucp_ep_h ep = ucx->peers[peer].ep;
    ucp_request_param_t param = {0};
    ucx_op_t *op = NULL, *fop;
    size_t len = d->piece;
    symcoll_status_t status;

    if (!rma) {
        /* one message: the receiver copies the payload, then raises the flag */
        status = ucx_op_new(ucx, &op);
        if (status != SYMCOLL_OK)
            return status;
        op->hdr.key = len ? d->key : 0;
        op->hdr.off = d->off;
        op->hdr.flag_key = f ? f->key : 0;
        op->hdr.flag_off = f ? f->off : 0;
        op->hdr.flag_value = flag_value;
        op->hdr.seq = seq;
        op->hdr.sender = ucx->rank;
        /* eager only: the rendezvous would need replies from a peer that may be gone.
         * Fast completion: UCX copies the payload into its send buffer (one TCP segment,
         * see SYMCOLL_NET_TCP_SEG_SIZE) and completes once it is copied. Without it newer UCX
         * sends from src (zero-copy) from the first byte on over TCP, which makes the
         * ring across nodes about twice as slow (UCX 1.22, 2 simulated nodes over TCP). */
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FAST_CMPL;
        param.flags = UCP_AM_SEND_FLAG_EAGER;
        status = ucx_op_track(
            ucx, op,
            ucp_am_send_nbx(ep, UCX_AM_WRITE, &op->hdr, sizeof(op->hdr), src, len, &param),
            "ucp_am_send_nbx", peer);
        *op_p = op;
        return status;
    }
    if (len) {
        status = ucx_op_new(ucx, &op);
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_op_track(ucx, op, ucp_put_nbx(ep, src, len, d->raddr, d->rkey, &param),
                              "ucp_put_nbx", peer);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (f) {
        if (len) {
            status = ucx_fence(ucx);
            if (status != SYMCOLL_OK)
                return status;
        }
        status = ucx_op_new(ucx, &fop);
        if (status != SYMCOLL_OK)
            return status;
        fop->value = flag_value;
        status = ucx_op_track(
            ucx, fop,
            ucp_put_nbx(ep, &fop->value, sizeof(fop->value), f->raddr, f->rkey, &param),
            "ucp_put_nbx (flag)", peer);
        if (status != SYMCOLL_OK)
            return status;
        if (!op)
            op = fop;
    }
    *op_p = op;
    return SYMCOLL_OK;
}

static symcoll_status_t ucx_put_signal_as(ucx_ctx_t *ucx, int peer, const void *src,
                                          size_t len, void *sym_dst, uint64_t *sym_flag,
                                          uint64_t flag_value, bool rma, ucx_req_t *req_p)
{
    const char *s = src, *d = sym_dst;
    ucx_where_t flag;
    symcoll_status_t status;
    ucp_ep_h ep;

    *req_p = NULL;
    status = ucx_ep_get(ucx, peer, &ep);
    if (status != SYMCOLL_OK)
        return status;
    if (atomic_load_explicit(&ucx->peers[peer].failed, memory_order_relaxed))
        return SYMCOLL_ERR_PEER_FAILED;
    if (sym_flag) {
        status = ucx_target(ucx, peer, (const char *)sym_flag, sizeof(uint64_t), rma, &flag);
        if (status != SYMCOLL_OK)
            return status;
    }
    do {
        ucx_where_t w = {0};
        ucx_op_t *op;
        bool last, boundary;

        if (len) {
            status = ucx_target(ucx, peer, d, len, rma, &w);
            if (status != SYMCOLL_OK)
                return status;
        }
        boundary = w.piece < len;
        if (!rma && w.piece > ucx->shared->am_piece)
            w.piece = ucx->shared->am_piece;
        last = w.piece == len;
        status = ucx_emit(ucx, peer, s, &w, last && sym_flag ? &flag : NULL, flag_value,
                          flag_value, rma, &op);
        if (status != SYMCOLL_OK)
            return status;
        if (!last && boundary) {
            /* the caller tracks one operation: finish the pieces before a region
             * boundary (rare: once per pool growth). Pieces of one region need not
             * wait: an endpoint sends its messages in order, so the last completing
             * means all did. */
            deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
            status = ucx_op_finish(ucx, op, &dl);
            if (status != SYMCOLL_OK)
                return status;
        } else if (op) {
            *req_p = ucx_op_handle(ucx, op);
        }
        s += w.piece;
        d += w.piece;
        len -= w.piece;
    } while (len > 0);
    return SYMCOLL_OK;
}

symcoll_status_t ucx_put_signal(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                                void *sym_dst, uint64_t *sym_flag, uint64_t flag_value,
                                ucx_req_t *req_p)
{
    return ucx_put_signal_as(ucx, peer, src, len, sym_dst, sym_flag, flag_value,
                             ucx->shared->native_rma, req_p);
}

symcoll_status_t ucx_put_flag_am(ucx_ctx_t *ucx, int peer, uint64_t value, uint64_t *sym_flag)
{
    ucx_req_t req;
    return ucx_put_signal_as(ucx, peer, NULL, 0, NULL, sym_flag, value, false, &req);
}

symcoll_status_t ucx_put(ucx_ctx_t *ucx, int peer, const void *src, size_t len, void *sym_dst,
                         ucx_req_t *req_p)
{
    *req_p = NULL;
    if (len == 0)
        return SYMCOLL_OK;
    return ucx_put_signal(ucx, peer, src, len, sym_dst, NULL, 0, req_p);
}

symcoll_status_t ucx_put_flag(ucx_ctx_t *ucx, int peer, uint64_t value, uint64_t *sym_flag)
{
    ucx_req_t req;
    return ucx_put_signal(ucx, peer, NULL, 0, NULL, sym_flag, value, &req);
}

symcoll_status_t ucx_put_flag_after(ucx_ctx_t *ucx, int peer, uint64_t value,
                                    uint64_t *sym_flag)
{
    /* active messages of one endpoint are handled in the order sent; RMA puts are not
     * ordered without a fence */
    if (ucx->shared->native_rma) {
        symcoll_status_t status = ucx_fence(ucx);
        if (status != SYMCOLL_OK)
            return status;
    }
    return ucx_put_flag(ucx, peer, value, sym_flag);
}

symcoll_status_t ucx_fence(ucx_ctx_t *ucx)
{
    ucs_status_t s = ucp_worker_fence(ucx->worker);
    if (s != UCS_OK) {
        log_error("ucp_worker_fence: %s", ucs_status_string(s));
        return ucx_status_of(ucx, s);
    }
    return SYMCOLL_OK;
}

void ucx_set_recv_hook(ucx_ctx_t *ucx, ucx_recv_hook_t hook, void *arg)
{
    ucx->hook = hook;
    ucx->hook_arg = arg;
}

/* Where (key, off) of a write from a peer of this job lies here, with len bytes from
 * there inside its region; NULL (logged) if not. */
static char *ucx_write_where(ucx_ctx_t *ucx, uint64_t key, uint64_t off, size_t len,
                             const char *what)
{
    ucx_region_t *reg = ucx_region_by_key(ucx, key);

    if (!reg || off > reg->size || len > reg->size - off) {
        log_error("UCX: %s of %zu bytes at %llu in region %#llx, outside every region", what,
                  len, (unsigned long long)off, (unsigned long long)key);
        return NULL;
    }
    return reg->addr + off;
}

/* Receiver side of a write carried by an active message (see ucx_emit). */
ucs_status_t ucx_write_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    ucx_am_hdr_t h;

    if (header_length != sizeof(h) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        log_error("UCX: malformed write message (header %zu bytes, attr 0x%llx)", header_length,
                  (unsigned long long)param->recv_attr);
        return UCS_OK;
    }
    memcpy(&h, header, sizeof(h));
    if (length) {
        char *dst = ucx_write_where(ucx, h.key, h.off, length, "write");
        if (!dst)
            return UCS_OK;
        if (!ucx->hook || !ucx->hook(ucx->hook_arg, (int)h.sender, h.seq, dst, data, length))
            memcpy(dst, data, length);
    }
    if (h.flag_key) {
        char *flag = ucx_write_where(ucx, h.flag_key, h.flag_off, sizeof(uint64_t), "flag");
        if (!flag)
            return UCS_OK;
        atomic_store_explicit((_Atomic uint64_t *)(void *)flag, h.flag_value,
                              memory_order_release);
    }
    return UCS_OK;
}

/* A peer's status as it reaches us: what ended its call, never success (a mismatch: a
 * receiver of an eager broadcast saw other arguments). */
static symcoll_status_t ucx_give_up_status(int32_t s)
{
    switch (s) {
    case SYMCOLL_ERR_ABORTED:
    case SYMCOLL_ERR_TIMED_OUT:
    case SYMCOLL_ERR_PEER_FAILED:
    case SYMCOLL_ERR_MISMATCH:
        return (symcoll_status_t)s;
    default:
        return SYMCOLL_ERR_PEER_FAILED;
    }
}

ucs_status_t ucx_abort_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    int32_t h[2] = {-1, SYMCOLL_ERR_ABORTED};
    int none = SYMCOLL_OK;
    symcoll_status_t status;

    if (header_length == sizeof(h))
        memcpy(h, header, sizeof(h));
    status = ucx_give_up_status(h[1]);
    /* before any error of its endpoint, which the sender closes after this notice */
    if (h[0] >= 0 && h[0] < ucx->nranks && h[0] != ucx->rank)
        atomic_store(&ucx->peers[h[0]].gave_up, 1);
    /* the first notice tells what happened; later ones follow from it */
    if (atomic_compare_exchange_strong(&ucx->remote_abort, &none, (int)status)) {
        if (ucx->abort_sent) /* its answer to ours */
            log_debug("rank %d gave up too: %s", (int)h[0], symcoll_status_string(status));
        else if (status == SYMCOLL_ERR_ABORTED)
            log_error("rank %d aborted the communicator", (int)h[0]);
        else
            log_error("rank %d gave up: %s", (int)h[0], symcoll_status_string(status));
    }
    return UCS_OK;
}

void ucx_notify_failure(ucx_ctx_t *ucx, symcoll_status_t status)
{
    ucx_op_t *op;

    if (!ucx || ucx->abort_sent || ucx->closing)
        return;
    ucx->abort_sent = true;
    ucx->give_up[0] = ucx->rank;
    ucx->give_up[1] = (int32_t)status;
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        /* best effort: peers that miss it still end at their deadline. Only the peers
         * we hold endpoints to: they are the ones that exchange with us, and whoever
         * waits for us has opened one (ucx_connect); the others learn it from them */
        if (!ucx->peers[r].ep || atomic_load(&ucx->peers[r].failed))
            continue;
        if (ucx_op_new(ucx, &op) == SYMCOLL_OK)
            (void)ucx_op_track(ucx, op,
                               ucp_am_send_nbx(ucx->peers[r].ep, UCX_AM_ABORT, ucx->give_up,
                                               sizeof(ucx->give_up), NULL, 0, &param),
                               "give-up notice", r);
    }
    for (int i = 0; i < 64; i++)
        ucp_worker_progress(ucx->worker);
}

void ucx_notify_abort(ucx_ctx_t *ucx)
{
    ucx_notify_failure(ucx, SYMCOLL_ERR_ABORTED);
}

void ucx_mark_broken(ucx_ctx_t *ucx)
{
    if (ucx)
        atomic_store(&ucx->shared->broken, 1);
}
