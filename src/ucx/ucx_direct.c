/* UCX layer: puts into a peer's registered pool memory with its rkey, whatever protocol
 * the host transfers use: the direct path of CUDA memory across nodes, where an active
 * message would make the receiver's CPU copy into GPU memory. */
#include "ucx/ucx_int.h"

symcoll_status_t ucx_put_rma(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                             void *sym_dst)
{
    const char *s = src, *d = sym_dst;
    ucp_ep_h ep;
    symcoll_status_t status = ucx_ep_get(ucx, peer, &ep);

    if (status != SYMCOLL_OK)
        return status;
    if (atomic_load_explicit(&ucx->peers[peer].failed, memory_order_relaxed))
        return SYMCOLL_ERR_PEER_FAILED;
    while (len > 0) {
        ucp_request_param_t param = {0};
        ucx_region_t *local;
        ucx_where_t w;
        size_t piece;
        ucx_op_t *op;

        status = ucx_target(ucx, peer, d, len, true, &w);
        if (status != SYMCOLL_OK)
            return status;
        piece = w.piece;
        /* the source's registration, when it has one: UCX need not find out what memory
         * it is (VMM memory is not in UCX's memory type cache). A pool buffer may span
         * two segments, each registered on its own: a piece ends where either side's
         * segment ends. */
        local = ucx_region_find(ucx, s, 1);
        if (local) {
            size_t left = local->size - (size_t)(s - local->addr);
            if (piece > left)
                piece = left;
            param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
            param.memh = local->memh;
            param.memory_type = local->cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
        }
        status = ucx_op_new(ucx, &op);
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_op_track(ucx, op, ucp_put_nbx(ep, s, piece, w.raddr, w.rkey, &param),
                              "ucp_put_nbx", peer);
        if (status != SYMCOLL_OK)
            return status;
        s += piece;
        d += piece;
        len -= piece;
    }
    return SYMCOLL_OK;
}
