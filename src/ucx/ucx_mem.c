/* UCX layer: memory regions registered with the shared context, their blobs and the
 * peers' rkeys, and the pool listener that registers every pool segment. */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "pool/pool.h"
#include "ucx/ucx_int.h"

size_t ucx_region_blob_max(const ucx_ctx_t *ucx)
{
    return ucx->shared->blob_max;
}

ucx_region_t *ucx_region_find(ucx_ctx_t *ucx, const char *addr, size_t len)
{
    const ucx_shared_t *shared = ucx->shared;

    for (size_t k = 0; k < shared->nregions; k++) {
        size_t i = (ucx->last_region + k) % shared->nregions;
        ucx_region_t *reg = shared->regions[i];
        if (addr >= reg->addr && (size_t)(addr - reg->addr) <= reg->size &&
            len <= reg->size - (size_t)(addr - reg->addr)) {
            ucx->last_region = i;
            return reg;
        }
    }
    return NULL;
}

/* mem_type < 0: let UCX detect it */
/* soft: a failed ucp_mem_map is expected to be survived (logged as a warning that says
 * so, by the caller) */
static symcoll_status_t ucx_region_register_typed(ucx_ctx_t *ucx, void *addr, size_t size,
                                                  int mem_type, bool soft, void *blob,
                                                  size_t max_blob, size_t *len_p,
                                                  ucx_region_t **reg_p);

symcoll_status_t ucx_region_register(ucx_ctx_t *ucx, void *addr, size_t size, void *blob,
                                     size_t max_blob, size_t *len_p, ucx_region_t **reg_p)
{
    return ucx_region_register_typed(ucx, addr, size, -1, false, blob, max_blob, len_p, reg_p);
}

static symcoll_status_t ucx_region_register_typed(ucx_ctx_t *ucx, void *addr, size_t size,
                                                  int mem_type, bool soft, void *blob,
                                                  size_t max_blob, size_t *len_p,
                                                  ucx_region_t **reg_p)
{
    ucp_mem_map_params_t mp;
    ucx_region_t *reg;
    ucx_blob_hdr_t hdr;
    void *rkey_buf = NULL;
    size_t rkey_len = 0;
    ucs_status_t s;
    symcoll_status_t status;

    if (ucx->shared->nregions == ucx->shared->cap_regions) {
        size_t cap = ucx->shared->cap_regions ? 2 * ucx->shared->cap_regions : 16;
        ucx_region_t **r = realloc(ucx->shared->regions, cap * sizeof(*r));
        if (!r)
            return SYMCOLL_ERR_NO_MEMORY;
        ucx->shared->regions = r;
        ucx->shared->cap_regions = cap;
    }
    reg = calloc(1, sizeof(*reg));
    if (!reg)
        return SYMCOLL_ERR_NO_MEMORY;
    reg->remote = calloc((size_t)ucx->nranks, sizeof(*reg->remote));
    if (!reg->remote) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err_free;
    }
    reg->addr = addr;
    reg->size = size;
    reg->cuda = mem_type == SYMCOLL_MEM_CUDA;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = addr;
    mp.length = size;
    if (mem_type >= 0) {
        /* no detection: a CUDA-enabled UCX would query the driver from whichever thread
         * grows the pool (the CUDA staging thread must never call CUDA) */
        mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        mp.memory_type =
            mem_type == SYMCOLL_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    }
    s = ucp_mem_map(ucx->shared->context, &mp, &reg->memh);
    if (s != UCS_OK) {
        if (soft)
            log_warn("UCX cannot register the CUDA pool (ucp_mem_map of %zu bytes: %s): CUDA "
                     "memory across nodes stays staged through host memory",
                     size, ucs_status_string(s));
        else
            log_error("ucp_mem_map(%p, %zu): %s", addr, size, ucs_status_string(s));
        status = ucx_status_of(ucx, s);
        goto err_free;
    }
    s = ucp_rkey_pack(ucx->shared->context, reg->memh, &rkey_buf, &rkey_len);
    if (s != UCS_OK) {
        log_error("ucp_rkey_pack: %s", ucs_status_string(s));
        status = ucx_status_of(ucx, s);
        goto err_unmap;
    }
    if (sizeof(hdr) + rkey_len > max_blob) {
        log_error("packed rkey of %zu bytes does not fit the %zu-byte exchange slot", rkey_len,
                  max_blob);
        status = SYMCOLL_ERR_INTERNAL;
        goto err_rkey;
    }
    hdr.addr = (uint64_t)(uintptr_t)addr;
    hdr.size = size;
    hdr.rkey_len = rkey_len;
    memcpy(blob, &hdr, sizeof(hdr));
    memcpy((char *)blob + sizeof(hdr), rkey_buf, rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
    *len_p = sizeof(hdr) + rkey_len;
    ucx->shared->regions[ucx->shared->nregions++] = reg;
    *reg_p = reg;
    return SYMCOLL_OK;

err_rkey:
    ucp_rkey_buffer_release(rkey_buf);
err_unmap:
    ucp_mem_unmap(ucx->shared->context, reg->memh);
err_free:
    free(reg->remote);
    free(reg);
    return status;
}

/* Destroys the rkeys of region reg unpacked by worker index w (-1: every worker). */
void ucx_region_drop_rkeys(ucx_region_t *reg, int nranks, int w)
{
    for (int r = 0; r < nranks; r++) {
        for (int i = 0; i < UCX_WORKERS_MAX; i++) {
            if ((w < 0 || i == w) && reg->remote[r].rkey[i]) {
                ucp_rkey_destroy(reg->remote[r].rkey[i]);
                reg->remote[r].rkey[i] = NULL;
            }
        }
    }
}

symcoll_status_t ucx_region_connect(ucx_ctx_t *ucx, ucx_region_t *reg, const void *blobs,
                                    size_t stride, const size_t *lens)
{
    for (int r = 0; r < ucx->nranks; r++) {
        const char *b = (const char *)blobs + (size_t)r * stride;
        ucx_blob_hdr_t hdr;
        ucx_remote_t *rm = &reg->remote[r];

        if (!ucx_is_remote(ucx, r))
            continue;
        if (lens[r] < sizeof(hdr))
            goto err_bad;
        memcpy(&hdr, b, sizeof(hdr));
        if (hdr.rkey_len != lens[r] - sizeof(hdr) || hdr.size != reg->size)
            goto err_bad;
        free(rm->rkey_buf);
        rm->rkey_buf = malloc(hdr.rkey_len);
        if (!rm->rkey_buf)
            return SYMCOLL_ERR_NO_MEMORY;
        memcpy(rm->rkey_buf, b + sizeof(hdr), hdr.rkey_len);
        rm->rkey_len = hdr.rkey_len;
        rm->addr = hdr.addr;
        rm->size = hdr.size;
        continue;
    err_bad:
        log_error("malformed region blob from rank %d (%zu bytes, region of %zu bytes)", r,
                  lens[r], reg->size);
        return SYMCOLL_ERR_MISMATCH;
    }
    reg->connected = true;
    return SYMCOLL_OK;
}

void ucx_region_release(ucx_ctx_t *ucx, ucx_region_t *reg)
{
    if (!reg)
        return;
    if (!ucx->closed) {
        /* Our puts may still read from this memory until they complete locally. Puts
         * into it need no flush: every one of them is a message its receiver waited
         * for, so all have landed before the last call that used the region returned
         * (and a flush here could need peers' progress that a trim does not give). */
        deadline_t dl = deadline_make(ucx->comm->timeout_sec, NULL);
        (void)ucx_wait_all(ucx, &dl);
    }
    ucx_region_drop_rkeys(reg, ucx->nranks, -1);
    ucp_mem_unmap(ucx->shared->context, reg->memh);
    for (int r = 0; r < ucx->nranks; r++)
        free(reg->remote[r].rkey_buf);
    for (size_t i = 0; i < ucx->shared->nregions; i++) {
        if (ucx->shared->regions[i] == reg) {
            ucx->shared->regions[i] = ucx->shared->regions[--ucx->shared->nregions];
            break;
        }
    }
    ucx->last_region = 0;
    free(reg->remote);
    free(reg);
}

symcoll_status_t ucx_region_create(ucx_ctx_t *ucx, void *addr, size_t size,
                                   ucx_region_t **reg_p)
{
    size_t n = (size_t)ucx->nranks, stride = ucx->shared->blob_max, len = 0;
    uint64_t mylen;
    uint64_t *lens64 = calloc(n, sizeof(*lens64));
    size_t *lens = calloc(n, sizeof(*lens));
    char *blob = calloc(1, stride), *blobs = calloc(n, stride);
    ucx_region_t *reg = NULL;
    symcoll_status_t status = SYMCOLL_ERR_NO_MEMORY;

    if (!lens64 || !lens || !blob || !blobs)
        goto out;
    status = ucx_region_register(ucx, addr, size, blob, stride, &len, &reg);
    if (status != SYMCOLL_OK)
        goto out;
    mylen = len;
    status = bootstrap_allgather(ucx->comm->bootstrap, &mylen, lens64, sizeof(mylen));
    if (status == SYMCOLL_OK)
        status = bootstrap_allgather(ucx->comm->bootstrap, blob, blobs, stride);
    if (status != SYMCOLL_OK)
        goto out;
    for (size_t r = 0; r < n; r++)
        lens[r] = lens64[r] > stride ? stride : (size_t)lens64[r];
    status = ucx_region_connect(ucx, reg, blobs, stride, lens);
out:
    if (status == SYMCOLL_OK)
        *reg_p = reg;
    else if (reg)
        ucx_region_release(ucx, reg);
    free(lens64);
    free(lens);
    free(blob);
    free(blobs);
    return status;
}

/* ---- pool segments ------------------------------------------------------------------ */

static ucx_region_t **ucx_seg_slot(ucx_seg_table_t *t, int seg)
{
    if (seg == POOL_SEG_SIGNAL)
        return &t->signal;
    if (seg < 0)
        return NULL;
    if (seg >= t->nsegs) {
        int n = seg + 8;
        ucx_region_t **s = realloc(t->segs, (size_t)n * sizeof(*s));
        if (!s)
            return NULL;
        memset(s + t->nsegs, 0, (size_t)(n - t->nsegs) * sizeof(*s));
        t->segs = s;
        t->nsegs = n;
    }
    return &t->segs[seg];
}

static symcoll_status_t ucx_seg_added(void *arg, int seg, void *addr, size_t size, void *blob,
                                      size_t *len_p)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);
    symcoll_status_t status;

    if (!slot)
        return SYMCOLL_ERR_NO_MEMORY;
    if (*slot) {
        log_error("internal: pool segment %d registered twice", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    if (t->unregistered) {
        *len_p = 0; /* an earlier segment could not be: nobody puts into this pool */
        return SYMCOLL_OK;
    }
    status = ucx_region_register_typed(t->ucx, addr, size, (int)t->mem_type, t->soft, blob,
                                       t->ucx->shared->blob_max, len_p, slot);
    if (status != SYMCOLL_OK && t->soft) {
        /* the empty blob tells every rank, which all mark the table unregistered */
        *slot = NULL;
        *len_p = 0;
        return SYMCOLL_OK;
    }
    return status;
}

static symcoll_status_t ucx_seg_exchanged(void *arg, int seg, const void *blobs,
                                          const size_t *lens)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);

    if (t->soft && slot) {
        bool missing = t->unregistered || !*slot;
        for (int r = 0; r < t->ucx->nranks && !missing; r++)
            missing = ucx_is_remote(t->ucx, r) && lens[r] == 0;
        if (missing) {
            if (!t->unregistered)
                log_info("UCX: some rank could not register its %s pool: no puts into it, its "
                         "data crosses the nodes staged",
                         t->mem_type == SYMCOLL_MEM_CUDA ? "CUDA" : "host");
            t->unregistered = true;
            return SYMCOLL_OK; /* a registered segment of ours is released at removal */
        }
    }
    if (!slot || !*slot) {
        log_error("internal: pool segment %d exchanged before it was added", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    return ucx_region_connect(t->ucx, *slot, blobs, t->ucx->shared->blob_max, lens);
}

static void ucx_seg_removed(void *arg, int seg)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);

    if (slot && *slot) {
        ucx_region_release(t->ucx, *slot);
        *slot = NULL;
    }
}

void ucx_pool_listener(ucx_ctx_t *ucx, symcoll_mem_type_t mem_type, pool_listener_t *listener)
{
    memset(listener, 0, sizeof(*listener));
    listener->max_blob = ucx->shared->blob_max;
    listener->seg_added = ucx_seg_added;
    listener->seg_exchanged = ucx_seg_exchanged;
    listener->seg_removed = ucx_seg_removed;
    listener->arg = &ucx->shared->segtab[mem_type];
    ucx->shared->segtab[mem_type].listening = true;
    ucx->shared->segtab[mem_type].soft = mem_type == SYMCOLL_MEM_CUDA;
    ucx->shared->segtab[mem_type].unregistered = false;
}

bool ucx_pool_registered(const ucx_ctx_t *ucx, symcoll_mem_type_t mem_type)
{
    const ucx_seg_table_t *t = &ucx->shared->segtab[mem_type];
    return t->listening && !t->unregistered;
}
