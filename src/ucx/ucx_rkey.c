/* UCX layer: rkeys on need. A worker that first puts by RMA into a peer's region asks the
 * peer's matching worker for the region's address and packed rkey (an active message
 * naming the region's key), and waits, progressing, for the answer; the peer queues the
 * request in its handler and answers after the progress call that delivered it. A pool
 * growth thus exchanges nothing, and each rank holds the views of the peers it puts
 * into, nobody else's. */
#include <stdlib.h>
#include <string.h>

#include "ucx/ucx_int.h"

ucs_status_t ucx_rkey_ask_cb(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    ucx_rkey_ask_t ask;

    (void)data;
    (void)length;
    (void)param;
    if (header_length != sizeof(ask)) {
        log_error("UCX: malformed rkey request (header of %zu bytes)", header_length);
        return UCS_OK;
    }
    memcpy(&ask, header, sizeof(ask));
    if (ask.rank < 0 || ask.rank >= ucx->nranks || !ucx_is_remote(ucx, (int)ask.rank)) {
        log_error("UCX: rkey request from rank %lld, not a rank of another node",
                  (long long)ask.rank);
        return UCS_OK;
    }
    if (ucx->nasks == ucx->cap_asks) {
        unsigned cap = ucx->cap_asks ? 2 * ucx->cap_asks : 8;
        ucx_rkey_ask_t *a = realloc(ucx->asks, cap * sizeof(*a));
        if (!a) {
            /* the asker times out, which names us */
            log_error("UCX: out of memory queueing the rkey request of rank %lld",
                      (long long)ask.rank);
            return UCS_OK;
        }
        ucx->asks = a;
        ucx->cap_asks = cap;
    }
    ucx->asks[ucx->nasks++] = ask;
    return UCS_OK;
}

/* The answer travels in one buffer (header, then the packed rkey) that the send's
 * completion frees: the region may go before a slow send completes. */
static void ucx_rkey_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status; /* a failed answer ends the asker's wait by its peer failure */
    free(user_data);
    ucp_request_free(request);
}

static void ucx_rkey_answer(ucx_ctx_t *ucx, const ucx_rkey_ask_t *ask)
{
    ucx_region_t *reg = ucx_region_by_key(ucx, ask->key);
    ucx_rkey_answer_t ans = {ask->key, ask->id, 0, 0, SYMCOLL_OK, ucx->rank};
    size_t len = 0;
    ucp_request_param_t param;
    ucs_status_ptr_t req;
    ucp_ep_h ep;
    char *buf;

    if (ucx->closing)
        return; /* a peer still asking has given up, or soon will */
    /* registered is enough: a peer asks once its vote said that every rank registered
     * the region, and ours may still be under way (we sent our part, not yet got all) */
    if (!reg) {
        log_error("UCX: rank %lld asked for the rkey of region %#llx, which is not "
                  "registered here",
                  (long long)ask->rank, (unsigned long long)ask->key);
        ans.status = SYMCOLL_ERR_MISMATCH;
    } else {
        ans.addr = (uint64_t)(uintptr_t)reg->addr;
        ans.size = reg->size;
        len = reg->packed_len;
    }
    if (ucx_ep_get(ucx, (int)ask->rank, &ep) != SYMCOLL_OK)
        return; /* logged; the asker ends its wait on our failure or its deadline */
    buf = malloc(sizeof(ans) + len);
    if (!buf) {
        log_error("UCX: out of memory answering the rkey request of rank %lld",
                  (long long)ask->rank);
        return;
    }
    memcpy(buf, &ans, sizeof(ans));
    if (len)
        memcpy(buf + sizeof(ans), reg->packed, len);
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    param.cb.send = ucx_rkey_sent;
    param.user_data = buf;
    req = ucp_am_send_nbx(ep, UCX_AM_RKEY_ANSWER, buf, sizeof(ans), buf + sizeof(ans), len,
                          &param);
    if (UCS_PTR_IS_ERR(req))
        log_error("UCX: answering the rkey request of rank %lld: %s", (long long)ask->rank,
                  ucs_status_string(UCS_PTR_STATUS(req)));
    else
        ucx->rkeys_served++;
    if (!UCS_PTR_IS_PTR(req))
        free(buf); /* done (or failed) at once: no callback comes */
}

void ucx_rkey_answer_all(ucx_ctx_t *ucx)
{
    /* an answer may open an endpoint, which may progress: requests it delivers wait
     * for the next turn */
    if (ucx->answering)
        return;
    ucx->answering = true;
    for (unsigned i = 0; i < ucx->nasks; i++) {
        ucx_rkey_ask_t ask = ucx->asks[i];
        ucx_rkey_answer(ucx, &ask);
    }
    ucx->nasks = 0;
    ucx->answering = false;
}

ucs_status_t ucx_rkey_answer_cb(void *arg, const void *header, size_t header_length,
                                void *data, size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    ucx_rkey_answer_t ans;
    ucx_region_t *reg;
    ucx_remote_t *rm, *none = NULL;

    if (header_length != sizeof(ans) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        log_error("UCX: malformed rkey answer (header of %zu bytes)", header_length);
        return UCS_OK;
    }
    memcpy(&ans, header, sizeof(ans));
    if (ans.rank < 0 || ans.rank >= ucx->nranks) {
        log_error("UCX: rkey answer from rank %lld, not a rank", (long long)ans.rank);
        return UCS_OK;
    }
    if (ans.id != ucx->rkey_waiting) {
        /* an ask we gave up on, or whose view another worker of ours published first */
        log_debug("UCX: late rkey answer %llu from rank %lld dropped",
                  (unsigned long long)ans.id, (long long)ans.rank);
        return UCS_OK;
    }
    if (ans.status != SYMCOLL_OK) {
        ucx->rkey_error = (int)ans.status;
        return UCS_OK;
    }
    reg = ucx_region_by_key(ucx, ans.key);
    if (!reg || ans.size != reg->size) {
        log_error("UCX: rank %lld answered for region %#llx of %llu bytes, which does not "
                  "match ours",
                  (long long)ans.rank, (unsigned long long)ans.key,
                  (unsigned long long)ans.size);
        ucx->rkey_error = SYMCOLL_ERR_MISMATCH;
        return UCS_OK;
    }
    if (atomic_load(&reg->remote[ans.rank]))
        return UCS_OK; /* another worker of ours asked too, and was answered first */
    rm = calloc(1, sizeof(*rm) + length);
    if (!rm) {
        ucx->rkey_error = SYMCOLL_ERR_NO_MEMORY;
        return UCS_OK;
    }
    rm->addr = ans.addr;
    rm->size = ans.size;
    memcpy(rm->rkey_buf, data, length);
    if (!atomic_compare_exchange_strong(&reg->remote[ans.rank], &none, rm))
        free(rm);
    return UCS_OK;
}

ucx_remote_t *ucx_rkey_known(const ucx_region_t *reg, int peer)
{
    return atomic_load_explicit(&reg->remote[peer], memory_order_acquire);
}

symcoll_status_t ucx_rkey_fetch(ucx_ctx_t *ucx, ucx_region_t *reg, int peer,
                                ucx_remote_t **rm_p)
{
    static _Atomic uint64_t ids; /* process-wide: a worker's ids never repeat */
    deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
    ucp_request_param_t param = {0};
    ucx_remote_t *rm = NULL;
    ucx_op_t *op;
    ucp_ep_h ep;
    unsigned iter = 0;
    symcoll_status_t status = ucx_ep_get(ucx, peer, &ep);

    if (status == SYMCOLL_OK)
        status = ucx_op_new(ucx, &op);
    if (status != SYMCOLL_OK)
        return status;
    /* the request's header lives in the operation until it completes */
    op->ask.key = reg->key;
    op->ask.rank = ucx->rank;
    op->ask.id = atomic_fetch_add(&ids, 1) + 1;
    ucx->rkey_waiting = op->ask.id;
    ucx->rkey_error = SYMCOLL_OK;
    status = ucx_op_track(ucx, op,
                          ucp_am_send_nbx(ep, UCX_AM_RKEY_ASK, &op->ask, sizeof(op->ask), NULL,
                                          0, &param),
                          "rkey request", peer);
    if (status == SYMCOLL_OK)
        ucx->rkeys_fetched++;
    /* another worker of ours may publish the view first: that ends our wait too */
    while (status == SYMCOLL_OK && !(rm = ucx_rkey_known(reg, peer))) {
        status = (symcoll_status_t)ucx->rkey_error;
        if (status == SYMCOLL_OK)
            status = ucx_wait_turn(ucx, &dl, &iter);
    }
    ucx->rkey_waiting = 0;
    if (status != SYMCOLL_OK) {
        log_error("UCX: no rkey of rank %d's region %#llx: %s", peer,
                  (unsigned long long)reg->key, symcoll_status_string(status));
        return status;
    }
    *rm_p = rm;
    return SYMCOLL_OK;
}

void ucx_rkey_counts(const ucx_ctx_t *ucx, uint64_t *asked_p, uint64_t *answered_p)
{
    *asked_p = ucx ? ucx->rkeys_fetched : 0;
    *answered_p = ucx ? ucx->rkeys_served : 0;
}
