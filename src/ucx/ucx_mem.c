/* UCX layer: memory regions registered with the shared context, the peers' views of them
 * (fetched on need, ucx_rkey.c), and the pool listener that registers every pool
 * segment. */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "pool/pool.h"
#include "ucx/ucx_int.h"

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

ucx_region_t *ucx_region_by_key(ucx_ctx_t *ucx, uint64_t key)
{
    const ucx_shared_t *shared = ucx->shared;

    for (size_t k = 0; k < shared->nregions; k++) {
        size_t i = (ucx->last_region + k) % shared->nregions;
        if (shared->regions[i]->key == key) {
            ucx->last_region = i;
            return shared->regions[i];
        }
    }
    return NULL;
}

/* Registers [addr, addr + size) under key and packs its rkey. mem_type < 0: let UCX
 * detect it. soft: a failed ucp_mem_map is expected to be survived (logged as a warning
 * that says so). */
static symcoll_status_t ucx_region_register(ucx_ctx_t *ucx, void *addr, size_t size,
                                           int mem_type, bool soft, uint64_t key,
                                           ucx_region_t **reg_p)
{
    ucp_mem_map_params_t mp;
    ucx_region_t *reg;
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
    if (ucx_region_by_key(ucx, key)) {
        log_error("internal: UCX region key %#llx registered twice", (unsigned long long)key);
        return SYMCOLL_ERR_INTERNAL;
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
    reg->key = key;
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
    /* packed once: every peer that asks gets these bytes */
    s = ucp_rkey_pack(ucx->shared->context, reg->memh, &reg->packed, &reg->packed_len);
    if (s != UCS_OK) {
        log_error("ucp_rkey_pack: %s", ucs_status_string(s));
        status = ucx_status_of(ucx, s);
        goto err_unmap;
    }
    ucx->shared->regions[ucx->shared->nregions++] = reg;
    *reg_p = reg;
    return SYMCOLL_OK;

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
        ucx_remote_t *rm = atomic_load(&reg->remote[r]);
        if (!rm)
            continue;
        for (int i = 0; i < UCX_WORKERS_MAX; i++) {
            if ((w < 0 || i == w) && rm->rkey[i]) {
                ucp_rkey_destroy(rm->rkey[i]);
                rm->rkey[i] = NULL;
            }
        }
    }
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
    if (reg->packed)
        ucp_rkey_buffer_release(reg->packed);
    for (int r = 0; r < ucx->nranks; r++)
        free(atomic_load(&reg->remote[r]));
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

/* Keys of regions made by ucx_region_create; pool segments use the memory type + 1 in
 * the high word (ucx_seg_key). */
#define UCX_KEY_PLAIN (1ull << 48)

symcoll_status_t ucx_region_create(ucx_ctx_t *ucx, void *addr, size_t size,
                                   ucx_region_t **reg_p)
{
    uint64_t key = UCX_KEY_PLAIN | ++ucx->shared->plain_regions;
    ucx_region_t *reg = NULL;
    symcoll_status_t status = ucx_region_register(ucx, addr, size, -1, false, key, &reg);
    /* did every rank register its match? (the rkeys travel only to those who ask) The
     * lowest failed rank and the lowest status: every rank returns the same. */
    int64_t v[2] = {status == SYMCOLL_OK ? ucx->nranks : ucx->rank, status}, st2;

    st2 = bootstrap_allreduce(ucx->comm->bootstrap, v, 2, BOOTSTRAP_OP_MIN);
    if (status == SYMCOLL_OK && st2 != SYMCOLL_OK)
        status = st2;
    if (status == SYMCOLL_OK && v[0] < ucx->nranks) {
        log_error("UCX: rank %d could not register its matching region", (int)v[0]);
        status = v[1] < 0 ? (symcoll_status_t)v[1] : SYMCOLL_ERR_UCX;
    }
    if (status != SYMCOLL_OK) {
        ucx_region_release(ucx, reg);
        return status;
    }
    reg->connected = true;
    *reg_p = reg;
    return SYMCOLL_OK;
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

static uint64_t ucx_seg_key(const ucx_seg_table_t *t, int seg)
{
    return ((uint64_t)t->mem_type + 1) << 32 | (uint32_t)seg;
}

static symcoll_status_t ucx_seg_added(void *arg, int seg, void *addr, size_t size,
                                      bool *registered_p)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);
    symcoll_status_t status;

    *registered_p = false;
    if (!slot)
        return SYMCOLL_ERR_NO_MEMORY;
    if (*slot) {
        log_error("internal: pool segment %d registered twice", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    if (t->unregistered)
        return SYMCOLL_OK; /* an earlier segment could not be: nobody puts into this pool */
    status = ucx_region_register(t->ucx, addr, size, (int)t->mem_type, t->soft,
                                 ucx_seg_key(t, seg), slot);
    if (status != SYMCOLL_OK && t->soft) {
        /* the growth's vote tells every rank, which all mark the table unregistered */
        *slot = NULL;
        return SYMCOLL_OK;
    }
    *registered_p = status == SYMCOLL_OK;
    return status;
}

static symcoll_status_t ucx_seg_agreed(void *arg, int seg, bool all_registered)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);

    if (t->soft && slot && (t->unregistered || !all_registered)) {
        if (!t->unregistered)
            log_info("UCX: some rank could not register its %s pool: no puts into it, its "
                     "data crosses the nodes staged",
                     t->mem_type == SYMCOLL_MEM_CUDA ? "CUDA" : "host");
        t->unregistered = true;
        return SYMCOLL_OK; /* a registered segment of ours is released at removal */
    }
    if (!slot || !*slot || !all_registered) {
        log_error("internal: pool segment %d agreed on before every rank registered it", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    (*slot)->connected = true;
    return SYMCOLL_OK;
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
    listener->seg_added = ucx_seg_added;
    listener->seg_agreed = ucx_seg_agreed;
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
