/* UCX layer: context, worker and endpoints of a communicator; registered regions and their
 * rkeys; put / fence / flag and the progress loops every inter-node wait goes through. */
#include "ucx/ucx.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "bootstrap/bootstrap.h"
#include "pool/pool.h"
#include "topo/topo.h"

#define UCX_AM_HELLO 0x5c01u
#define UCX_AM_WRITE 0x5c02u
#define UCX_AM_ABORT 0x5c03u
/* Operations tracked at once; a slot is reused only after its operation completed. */
#define UCX_OPS 1024
/* Room left in a TCP segment for UCX's and our headers. */
#define UCX_AM_HDR_ROOM 512
#define UCX_TLS_STR_MAX 256
/* Workers of one context: the communicator's own (index 0) and its lanes. */
#define UCX_WORKERS_MAX (UCX_LANES_MAX + 1)

typedef struct ucx_peer {
    ucx_ctx_t *ucx;
    int rank;
    ucp_ep_h ep;        /* NULL for ranks of this node */
    int hello;          /* check messages received: 1 at creation, 2 at close */
    _Atomic int failed; /* set by the endpoint error callback */
} ucx_peer_t;

/* Remote view of a region: one per rank. */
typedef struct ucx_remote {
    uint64_t addr;
    uint64_t size;
    void *rkey_buf; /* packed rkey as received */
    size_t rkey_len;
    ucp_rkey_h rkey[UCX_WORKERS_MAX]; /* per worker (lane): unpacked on first use */
} ucx_remote_t;

struct ucx_region {
    char *addr;
    size_t size;
    ucp_mem_h memh;
    bool connected;
    ucx_remote_t *remote; /* nranks entries */
};

/* Pool segments of one memory type, as the pool listener sees them. */
typedef struct ucx_seg_table {
    ucx_ctx_t *ucx;
    ucx_region_t **segs; /* by segment index */
    int nsegs;
    ucx_region_t *signal;
    symcoll_mem_type_t mem_type; /* of the pool whose segments these are */
} ucx_seg_table_t;

/* Header of a write carried by an active message: where the payload goes, then which
 * flag word gets which value (flag_addr 0: none). Addresses are the receiver's. */
typedef struct ucx_am_hdr {
    uint64_t addr;
    uint64_t flag_addr;
    uint64_t flag_value;
    uint64_t seq;   /* flag value of the message this piece belongs to */
    int64_t sender; /* rank */
} ucx_am_hdr_t;

/* One operation in flight, with what UCX reads until it completes. */
typedef struct ucx_op {
    ucs_status_ptr_t req; /* NULL: complete */
    uint32_t gen;         /* bumped on reuse: stale handles read as complete */
    ucx_am_hdr_t hdr;
    uint64_t value; /* source of a flag put */
} ucx_op_t;

struct ucx_ctx {
    comm_t *comm;
    int rank;
    int nranks;
    /* A lane (ucx_lane_create) has its own worker and endpoints but the owner's context
     * and regions; owner NULL: this is the communicator's own context. */
    ucx_ctx_t *owner;
    int index;           /* 0: the owner; 1..UCX_LANES_MAX: a lane (its rkeys' slot) */
    unsigned lanes_used; /* owner: bit i set while lane index i exists */
    ucp_context_h context;
    ucp_worker_h worker;
    ucx_peer_t *peers;
    int nremote;
    _Atomic int failed;
    _Atomic int remote_abort; /* a peer's communicator was aborted */
    bool abort_sent;
    bool closed;
    bool closing;       /* endpoints going away: their errors are expected */
    int efd;            /* the worker's event fd (UCP_FEATURE_WAKEUP); -1: none */
    bool worker_ready;  /* creation exchanged the first check messages */
    int32_t hello_rank; /* header of the check message; must outlive the send */

    ucx_region_t **regions;
    size_t nregions, cap_regions;
    size_t last_region;
    size_t blob_max;

    ucx_op_t ops[UCX_OPS];
    unsigned op_next;
    unsigned op_waited;   /* op_next when ucx_wait_all last completed everything */
    bool native_rma;      /* put / fence / flag; else one active message per transfer */
    size_t am_piece;      /* largest active message payload sent in one piece */
    ucx_recv_hook_t hook; /* consumer of incoming payloads, if any */
    void *hook_arg;

    ucx_seg_table_t segtab[SYMCOLL_MEM_LAST];
    void *algo_state[SYMCOLL_MEM_LAST];
    void (*algo_state_free[SYMCOLL_MEM_LAST])(void *);
    char transports[UCX_TLS_STR_MAX];
};

/* Header of a region blob; the packed rkey follows. */
typedef struct ucx_blob_hdr {
    uint64_t addr;
    uint64_t size;
    uint64_t rkey_len;
} ucx_blob_hdr_t;

/* What every rank tells the others at creation (besides its worker address). */
typedef struct ucx_caps {
    uint32_t mem_types;
    char tls[TOPO_TLS_MAX];
} ucx_caps_t;

static symcoll_status_t ucx_status_of(const ucx_ctx_t *ucx, ucs_status_t s)
{
    switch (s) {
    case UCS_OK:
        return SYMCOLL_OK;
    case UCS_ERR_NO_MEMORY:
        return SYMCOLL_ERR_NO_MEMORY;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
        return SYMCOLL_ERR_PEER_FAILED;
    case UCS_ERR_CANCELED:
        /* requests of a failed endpoint are cancelled */
        return atomic_load(&ucx->failed) ? SYMCOLL_ERR_PEER_FAILED : SYMCOLL_ERR_UCX;
    default:
        return SYMCOLL_ERR_UCX;
    }
}

bool ucx_is_remote(const ucx_ctx_t *ucx, int rank)
{
    return rank >= 0 && rank < ucx->nranks && ucx->peers[rank].ep != NULL;
}

const char *ucx_transports(const ucx_ctx_t *ucx)
{
    return ucx->transports;
}

void *ucx_algo_state(const ucx_ctx_t *ucx, symcoll_mem_type_t mem_type)
{
    return ucx->algo_state[mem_type];
}

void ucx_set_algo_state(ucx_ctx_t *ucx, symcoll_mem_type_t mem_type, void *state,
                        void (*free_fn)(void *))
{
    ucx->algo_state[mem_type] = state;
    ucx->algo_state_free[mem_type] = free_fn;
}

/* ---- progress and waits --------------------------------------------------------------- */

static void ucx_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucx_peer_t *peer = arg;
    if (peer->ucx->closing) {
        /* expected once peers close; the closing handshake skips it */
        atomic_store(&peer->failed, 1);
        log_debug("UCX endpoint to rank %d closed: %s", peer->rank, ucs_status_string(status));
        return;
    }
    if (!atomic_exchange(&peer->failed, 1))
        log_error("UCX endpoint to rank %d failed: %s", peer->rank, ucs_status_string(status));
    atomic_store(&peer->ucx->failed, 1);
}

/* What ends every wait besides its own deadline: a failed peer, an aborted one. */
static symcoll_status_t ucx_peer_status(const ucx_ctx_t *ucx)
{
    if (atomic_load_explicit(&ucx->failed, memory_order_relaxed))
        return SYMCOLL_ERR_PEER_FAILED;
    if (atomic_load_explicit(&ucx->remote_abort, memory_order_relaxed))
        return SYMCOLL_ERR_ABORTED;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_progress(ucx_ctx_t *ucx)
{
    ucp_worker_progress(ucx->worker);
    return ucx_peer_status(ucx);
}

static ucs_status_t ucx_abort_cb(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    int32_t r = -1;

    if (header_length == sizeof(r))
        memcpy(&r, header, sizeof(r));
    if (!atomic_exchange(&ucx->remote_abort, 1))
        log_error("rank %d aborted the communicator", (int)r);
    return UCS_OK;
}

static symcoll_status_t ucx_op_new(ucx_ctx_t *ucx, ucx_op_t **op_p);
static symcoll_status_t ucx_op_track(ucx_ctx_t *ucx, ucx_op_t *op, ucs_status_ptr_t req,
                                     const char *what, int peer);

void ucx_notify_abort(ucx_ctx_t *ucx)
{
    ucx_op_t *op;

    if (!ucx || ucx->abort_sent || ucx->closing)
        return;
    ucx->abort_sent = true;
    ucx->hello_rank = ucx->rank;
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        if (!ucx_is_remote(ucx, r) || atomic_load(&ucx->peers[r].failed))
            continue;
        /* best effort: peers that miss it still end at their deadline */
        if (ucx_op_new(ucx, &op) == SYMCOLL_OK)
            (void)ucx_op_track(ucx, op,
                               ucp_am_send_nbx(ucx->peers[r].ep, UCX_AM_ABORT, &ucx->hello_rank,
                                               sizeof(ucx->hello_rank), NULL, 0, &param),
                               "abort notice", r);
    }
    for (int i = 0; i < 64; i++)
        ucp_worker_progress(ucx->worker);
}

/* Idle turns of a wait before it sleeps in the kernel (each turn is a progress call, a
 * system call on TCP, so this is a few milliseconds), and how long one sleep lasts at
 * most (transports that write memory without an event, and peers of the node, are
 * seen at the latest then). */
#define UCX_SPIN_TURNS 256
#define UCX_SLEEP_AFTER 2048
#define UCX_SLEEP_MS 1

void ucx_idle(ucx_ctx_t *ucx, unsigned *iter)
{
    struct pollfd p;

    if (++*iter < UCX_SPIN_TURNS) {
        core_spin_pause(&(unsigned){0});
        return;
    }
    if (*iter < UCX_SLEEP_AFTER || ucx->efd < 0) {
        sched_yield();
        return;
    }
    /* armed: the fd fires on the next event; busy: events are pending, progress now */
    if (ucp_worker_arm(ucx->worker) != UCS_OK)
        return;
    p.fd = ucx->efd;
    p.events = POLLIN;
    p.revents = 0;
    (void)poll(&p, 1, UCX_SLEEP_MS);
}

/* One turn of a wait loop: progress, then back off when nothing happened. */
static symcoll_status_t ucx_wait_turn(ucx_ctx_t *ucx, const deadline_t *dl, unsigned *iter)
{
    symcoll_status_t status;

    if (ucp_worker_progress(ucx->worker))
        *iter = 0;
    else
        ucx_idle(ucx, iter);
    status = ucx_peer_status(ucx);
    if (status != SYMCOLL_OK)
        return status;
    status = deadline_check(dl);
    if (status != SYMCOLL_OK)
        log_error("UCX wait: %s", symcoll_status_string(status));
    return status;
}

symcoll_status_t ucx_wait_flag(ucx_ctx_t *ucx, const uint64_t *flag, uint64_t value,
                               const deadline_t *dl)
{
    const _Atomic uint64_t *f = (const _Atomic uint64_t *)flag;
    unsigned iter = 0;

    while (atomic_load_explicit(f, memory_order_acquire) < value) {
        symcoll_status_t status = ucx_wait_turn(ucx, dl, &iter);
        if (status != SYMCOLL_OK)
            return status;
    }
    return SYMCOLL_OK;
}

/* Progress until op completes; frees its request. */
static symcoll_status_t ucx_op_finish(ucx_ctx_t *ucx, ucx_op_t *op, const deadline_t *dl)
{
    unsigned iter = 0;

    while (op->req) {
        ucs_status_t s = ucp_request_check_status(op->req);
        symcoll_status_t status;
        if (s != UCS_INPROGRESS) {
            ucp_request_free(op->req);
            op->req = NULL;
            if (s != UCS_OK) {
                log_error("UCX operation failed: %s", ucs_status_string(s));
                return ucx_status_of(ucx, s);
            }
            return SYMCOLL_OK;
        }
        /* on failure the request stays with UCX; the worker's destruction reclaims it */
        status = ucx_wait_turn(ucx, dl, &iter);
        if (status != SYMCOLL_OK)
            return status;
    }
    return SYMCOLL_OK;
}

/* The next operation slot, once its previous operation completed. */
static symcoll_status_t ucx_op_new(ucx_ctx_t *ucx, ucx_op_t **op_p)
{
    ucx_op_t *op = &ucx->ops[ucx->op_next % UCX_OPS];

    if (op->req) {
        deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
        symcoll_status_t status = ucx_op_finish(ucx, op, &dl);
        if (status != SYMCOLL_OK)
            return status;
    }
    op->gen++;
    ucx->op_next++;
    *op_p = op;
    return SYMCOLL_OK;
}

/* Records what a UCX call returned for op. */
static symcoll_status_t ucx_op_track(ucx_ctx_t *ucx, ucx_op_t *op, ucs_status_ptr_t req,
                                     const char *what, int peer)
{
    if (UCS_PTR_IS_ERR(req)) {
        log_error("%s to rank %d: %s", what, peer, ucs_status_string(UCS_PTR_STATUS(req)));
        return ucx_status_of(ucx, UCS_PTR_STATUS(req));
    }
    op->req = req;
    return SYMCOLL_OK;
}

static ucx_req_t ucx_op_handle(const ucx_ctx_t *ucx, const ucx_op_t *op)
{
    uint64_t idx = (uint64_t)(op - ucx->ops);
    return (ucx_req_t)(uintptr_t)(((uint64_t)op->gen << 32) | (idx + 1));
}

bool ucx_req_done(const ucx_ctx_t *ucx, ucx_req_t req)
{
    uint64_t h = (uint64_t)(uintptr_t)req;
    const ucx_op_t *op;

    if (!req)
        return true;
    op = &ucx->ops[(h & 0xffffffffu) - 1];
    return op->gen != (uint32_t)(h >> 32) || !op->req ||
           ucp_request_check_status(op->req) != UCS_INPROGRESS;
}

void ucx_set_recv_hook(ucx_ctx_t *ucx, ucx_recv_hook_t hook, void *arg)
{
    ucx->hook = hook;
    ucx->hook_arg = arg;
}

symcoll_status_t ucx_req_wait(ucx_ctx_t *ucx, ucx_req_t req, const deadline_t *dl)
{
    uint64_t h = (uint64_t)(uintptr_t)req;
    ucx_op_t *op;

    if (!req)
        return SYMCOLL_OK;
    op = &ucx->ops[(h & 0xffffffffu) - 1];
    if (op->gen != (uint32_t)(h >> 32))
        return SYMCOLL_OK; /* the slot was reused, so that operation completed */
    return ucx_op_finish(ucx, op, dl);
}

symcoll_status_t ucx_wait_all(ucx_ctx_t *ucx, const deadline_t *dl)
{
    /* only the slots used since the last complete wait can be busy */
    unsigned n = ucx->op_next - ucx->op_waited;

    if (n > UCX_OPS)
        n = UCX_OPS;
    for (unsigned k = 0; k < n; k++) {
        symcoll_status_t status =
            ucx_op_finish(ucx, &ucx->ops[(ucx->op_next - n + k) % UCX_OPS], dl);
        if (status != SYMCOLL_OK)
            return status;
    }
    ucx->op_waited = ucx->op_next;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_flush(ucx_ctx_t *ucx, const deadline_t *dl)
{
    ucp_request_param_t param = {0};
    ucx_op_t op = {0};
    symcoll_status_t status = ucx_op_track(ucx, &op, ucp_worker_flush_nbx(ucx->worker, &param),
                                           "ucp_worker_flush_nbx", ucx->rank);
    return status == SYMCOLL_OK ? ucx_op_finish(ucx, &op, dl) : status;
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

/* ---- regions ---------------------------------------------------------------------------- */

size_t ucx_region_blob_max(const ucx_ctx_t *ucx)
{
    return ucx->blob_max;
}

/* The context whose regions a context uses: its own, or its owner's for a lane. Lanes
 * only read the table, while the owner's thread leaves it alone (see ucx_lane_create). */
static ucx_ctx_t *ucx_owner(ucx_ctx_t *ucx)
{
    return ucx->owner ? ucx->owner : ucx;
}

static ucx_region_t *ucx_region_find(ucx_ctx_t *ucx, const char *addr, size_t len)
{
    const ucx_ctx_t *o = ucx_owner(ucx);

    for (size_t k = 0; k < o->nregions; k++) {
        size_t i = (ucx->last_region + k) % o->nregions;
        ucx_region_t *reg = o->regions[i];
        if (addr >= reg->addr && (size_t)(addr - reg->addr) <= reg->size &&
            len <= reg->size - (size_t)(addr - reg->addr)) {
            ucx->last_region = i;
            return reg;
        }
    }
    return NULL;
}

/* mem_type < 0: let UCX detect it */
static symcoll_status_t ucx_region_register_typed(ucx_ctx_t *ucx, void *addr, size_t size,
                                                  int mem_type, void *blob, size_t max_blob,
                                                  size_t *len_p, ucx_region_t **reg_p);

symcoll_status_t ucx_region_register(ucx_ctx_t *ucx, void *addr, size_t size, void *blob,
                                     size_t max_blob, size_t *len_p, ucx_region_t **reg_p)
{
    return ucx_region_register_typed(ucx, addr, size, -1, blob, max_blob, len_p, reg_p);
}

static symcoll_status_t ucx_region_register_typed(ucx_ctx_t *ucx, void *addr, size_t size,
                                                  int mem_type, void *blob, size_t max_blob,
                                                  size_t *len_p, ucx_region_t **reg_p)
{
    ucp_mem_map_params_t mp;
    ucx_region_t *reg;
    ucx_blob_hdr_t hdr;
    void *rkey_buf = NULL;
    size_t rkey_len = 0;
    ucs_status_t s;
    symcoll_status_t status;

    if (ucx->nregions == ucx->cap_regions) {
        size_t cap = ucx->cap_regions ? 2 * ucx->cap_regions : 16;
        ucx_region_t **r = realloc(ucx->regions, cap * sizeof(*r));
        if (!r)
            return SYMCOLL_ERR_NO_MEMORY;
        ucx->regions = r;
        ucx->cap_regions = cap;
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
    s = ucp_mem_map(ucx->context, &mp, &reg->memh);
    if (s != UCS_OK) {
        log_error("ucp_mem_map(%p, %zu): %s", addr, size, ucs_status_string(s));
        status = ucx_status_of(ucx, s);
        goto err_free;
    }
    s = ucp_rkey_pack(ucx->context, reg->memh, &rkey_buf, &rkey_len);
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
    ucx->regions[ucx->nregions++] = reg;
    *reg_p = reg;
    return SYMCOLL_OK;

err_rkey:
    ucp_rkey_buffer_release(rkey_buf);
err_unmap:
    ucp_mem_unmap(ucx->context, reg->memh);
err_free:
    free(reg->remote);
    free(reg);
    return status;
}

/* Destroys the rkeys of region reg unpacked by worker index w (-1: every worker). */
static void ucx_region_drop_rkeys(ucx_region_t *reg, int nranks, int w)
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
    ucp_mem_unmap(ucx->context, reg->memh);
    for (int r = 0; r < ucx->nranks; r++)
        free(reg->remote[r].rkey_buf);
    for (size_t i = 0; i < ucx->nregions; i++) {
        if (ucx->regions[i] == reg) {
            ucx->regions[i] = ucx->regions[--ucx->nregions];
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
    size_t n = (size_t)ucx->nranks, stride = ucx->blob_max, len = 0;
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

    if (!slot)
        return SYMCOLL_ERR_NO_MEMORY;
    if (*slot) {
        log_error("internal: pool segment %d registered twice", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    return ucx_region_register_typed(t->ucx, addr, size, (int)t->mem_type, blob,
                                     t->ucx->blob_max, len_p, slot);
}

static symcoll_status_t ucx_seg_exchanged(void *arg, int seg, const void *blobs,
                                          const size_t *lens)
{
    ucx_seg_table_t *t = arg;
    ucx_region_t **slot = ucx_seg_slot(t, seg);

    if (!slot || !*slot) {
        log_error("internal: pool segment %d exchanged before it was added", seg);
        return SYMCOLL_ERR_INTERNAL;
    }
    return ucx_region_connect(t->ucx, *slot, blobs, t->ucx->blob_max, lens);
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
    listener->max_blob = ucx->blob_max;
    listener->seg_added = ucx_seg_added;
    listener->seg_exchanged = ucx_seg_exchanged;
    listener->seg_removed = ucx_seg_removed;
    listener->arg = &ucx->segtab[mem_type];
}

/* ---- data path ---------------------------------------------------------------------- */

/* Where sym (this rank's address of a region byte) lies at peer, and how many of len bytes
 * from there stay inside that region. rkey_p NULL: no rkey needed (active messages). */
static symcoll_status_t ucx_target(ucx_ctx_t *ucx, int peer, const char *sym, size_t len,
                                   uint64_t *raddr_p, ucp_rkey_h *rkey_p, size_t *piece_p)
{
    ucx_region_t *reg = ucx_region_find(ucx, sym, 1);
    ucx_remote_t *rm;
    size_t off;

    if (!reg || !reg->connected) {
        log_error("internal: remote target %p lies in no registered region", (const void *)sym);
        return SYMCOLL_ERR_INTERNAL;
    }
    rm = &reg->remote[peer];
    off = (size_t)(sym - reg->addr);
    if (rkey_p && !rm->rkey[ucx->index]) {
        ucs_status_t s =
            ucp_ep_rkey_unpack(ucx->peers[peer].ep, rm->rkey_buf, &rm->rkey[ucx->index]);
        if (s != UCS_OK) {
            log_error("ucp_ep_rkey_unpack (rank %d): %s", peer, ucs_status_string(s));
            return ucx_status_of(ucx, s);
        }
    }
    *raddr_p = rm->addr + off;
    if (rkey_p)
        *rkey_p = rm->rkey[ucx->index];
    *piece_p = len < reg->size - off ? len : reg->size - off;
    return SYMCOLL_OK;
}

/* One transfer inside one region of the peer: data (len may be 0), then the flag if
 * flag_raddr is not 0. *op_p: the operation that releases src. */
static symcoll_status_t ucx_emit(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                                 uint64_t raddr, ucp_rkey_h rkey, uint64_t flag_raddr,
                                 ucp_rkey_h flag_rkey, uint64_t flag_value, uint64_t seq,
                                 ucx_op_t **op_p)
{
    ucp_ep_h ep = ucx->peers[peer].ep;
    ucp_request_param_t param = {0};
    ucx_op_t *op = NULL, *fop;
    symcoll_status_t status;

    if (!ucx->native_rma) {
        /* one message: the receiver copies the payload, then raises the flag */
        status = ucx_op_new(ucx, &op);
        if (status != SYMCOLL_OK)
            return status;
        op->hdr.addr = len ? raddr : 0;
        op->hdr.flag_addr = flag_raddr;
        op->hdr.flag_value = flag_value;
        op->hdr.seq = seq;
        op->hdr.sender = ucx->rank;
        /* eager only: the rendezvous would need replies from a peer that may be gone */
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
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
        status = ucx_op_track(ucx, op, ucp_put_nbx(ep, src, len, raddr, rkey, &param),
                              "ucp_put_nbx", peer);
        if (status != SYMCOLL_OK)
            return status;
    }
    if (flag_raddr) {
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
            ucp_put_nbx(ep, &fop->value, sizeof(fop->value), flag_raddr, flag_rkey, &param),
            "ucp_put_nbx (flag)", peer);
        if (status != SYMCOLL_OK)
            return status;
        if (!op)
            op = fop;
    }
    *op_p = op;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_put_signal(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                                void *sym_dst, uint64_t *sym_flag, uint64_t flag_value,
                                ucx_req_t *req_p)
{
    const char *s = src, *d = sym_dst;
    uint64_t fraddr = 0;
    ucp_rkey_h frkey = NULL;
    bool rkeys = ucx->native_rma;
    symcoll_status_t status;

    *req_p = NULL;
    if (!ucx_is_remote(ucx, peer)) {
        log_error("internal: transfer to rank %d, which has no endpoint", peer);
        return SYMCOLL_ERR_INTERNAL;
    }
    if (atomic_load_explicit(&ucx->peers[peer].failed, memory_order_relaxed))
        return SYMCOLL_ERR_PEER_FAILED;
    if (sym_flag) {
        size_t piece;
        status = ucx_target(ucx, peer, (const char *)sym_flag, sizeof(uint64_t), &fraddr,
                            rkeys ? &frkey : NULL, &piece);
        if (status != SYMCOLL_OK)
            return status;
    }
    do {
        uint64_t raddr = 0;
        ucp_rkey_h rkey = NULL;
        size_t piece = 0;
        ucx_op_t *op;
        bool last;

        bool boundary;
        if (len) {
            status = ucx_target(ucx, peer, d, len, &raddr, rkeys ? &rkey : NULL, &piece);
            if (status != SYMCOLL_OK)
                return status;
        }
        boundary = piece < len;
        if (!rkeys && piece > ucx->am_piece)
            piece = ucx->am_piece;
        last = piece == len;
        status = ucx_emit(ucx, peer, s, piece, raddr, rkey, last ? fraddr : 0, frkey,
                          flag_value, flag_value, &op);
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
        s += piece;
        d += piece;
        len -= piece;
    } while (len > 0);
    return SYMCOLL_OK;
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

/* Receiver side of a write carried by an active message (see ucx_emit). The addresses
 * come from a peer of this job; they are still checked against our regions. */
static ucs_status_t ucx_write_cb(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
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
        if (!ucx_region_find(ucx, (const char *)(uintptr_t)h.addr, length)) {
            log_error("UCX: write of %zu bytes to 0x%llx outside every region", length,
                      (unsigned long long)h.addr);
            return UCS_OK;
        }
        if (!ucx->hook || !ucx->hook(ucx->hook_arg, (int)h.sender, h.seq,
                                     (void *)(uintptr_t)h.addr, data, length))
            memcpy((void *)(uintptr_t)h.addr, data, length);
    }
    if (h.flag_addr) {
        if (!ucx_region_find(ucx, (const char *)(uintptr_t)h.flag_addr, sizeof(uint64_t))) {
            log_error("UCX: flag 0x%llx outside every region", (unsigned long long)h.flag_addr);
            return UCS_OK;
        }
        atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)h.flag_addr, h.flag_value,
                              memory_order_release);
    }
    return UCS_OK;
}

/* ---- creation and teardown ---------------------------------------------------------- */

static ucs_status_t ucx_hello_cb(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    int32_t r;

    if (header_length == sizeof(r)) {
        memcpy(&r, header, sizeof(r));
        if (r >= 0 && r < ucx->nranks)
            ucx->peers[r].hello++;
    }
    return UCS_OK;
}

/* Names of the transports of one endpoint's lanes, from ucp_ep_print_info. */
static void ucx_describe_ep(ucx_ctx_t *ucx, ucp_ep_h ep, bool *native_rma)
{
    char *text = NULL, *line, *save = NULL;
    size_t text_len = 0, used = 0;
    FILE *f = open_memstream(&text, &text_len);

    if (!f)
        return;
    ucp_ep_print_info(ep, f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane[");
        char name[64];
        if (strstr(line, "rma_bw") || strstr(line, "amo"))
            log_info("UCX %s", line + strspn(line, "# "));
        /* "rma_bw: #1 ..." lists lanes doing RMA in the transport; "rma_bw: mds ..."
         * has none: UCX would emulate RMA with messages */
        if (strstr(line, "rma_bw:") && strchr(strstr(line, "rma_bw:"), '#'))
            *native_rma = true;
        if (!lane)
            continue;
        log_info("UCX %s", lane);
        lane = strchr(lane, ':');
        if (!lane)
            continue;
        /* "  1:tcp/lo.0 md[1] ..." -> "tcp/lo.0" */
        if (sscanf(lane + 1, " %*d:%63s", name) != 1)
            continue;
        if (!strstr(ucx->transports, name)) {
            int n = snprintf(ucx->transports + used, sizeof(ucx->transports) - used, "%s%s",
                             used ? "," : "", name);
            if (n > 0 && (size_t)n < sizeof(ucx->transports) - used)
                used += (size_t)n;
        }
    }
    free(text);
}

/* Sends one message to every remote rank that did not fail and waits, progressing, for
 * one from each: the count-th such exchange. At creation (count 1) it shows broken
 * connectivity early and saves the first all-reduce the wireup; at close (count 2) it
 * keeps every rank progressing until all have flushed. */
static symcoll_status_t ucx_exchange_hello(ucx_ctx_t *ucx, int count, deadline_t *dl)
{
    symcoll_status_t status;
    unsigned iter = 0;

    ucx->hello_rank = ucx->rank;
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        ucx_op_t *op;
        if (!ucx_is_remote(ucx, r) || atomic_load(&ucx->peers[r].failed))
            continue;
        status = ucx_op_new(ucx, &op);
        if (status == SYMCOLL_OK)
            status =
                ucx_op_track(ucx, op,
                             ucp_am_send_nbx(ucx->peers[r].ep, UCX_AM_HELLO, &ucx->hello_rank,
                                             sizeof(ucx->hello_rank), NULL, 0, &param),
                             "UCX check message", r);
        if (status != SYMCOLL_OK)
            return status;
    }
    for (int r = 0; r < ucx->nranks; r++) {
        while (ucx_is_remote(ucx, r) && ucx->peers[r].hello < count &&
               !atomic_load(&ucx->peers[r].failed)) {
            if (ucp_worker_progress(ucx->worker))
                iter = 0;
            else
                core_spin_pause(&iter);
            if (!ucx->closing && atomic_load(&ucx->failed))
                return SYMCOLL_ERR_PEER_FAILED;
            status = deadline_check(dl);
            if (status != SYMCOLL_OK) {
                log_error("UCX: no message from rank %d (%s)", r,
                          symcoll_status_string(status));
                return status;
            }
        }
    }
    return ucx_wait_all(ucx, dl);
}

static symcoll_status_t ucx_check_connections(ucx_ctx_t *ucx)
{
    deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
    ucp_am_handler_param_t hp;
    ucs_status_t s;

    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = UCX_AM_HELLO;
    hp.cb = ucx_hello_cb;
    hp.arg = ucx;
    s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    if (s == UCS_OK) {
        hp.id = UCX_AM_ABORT;
        hp.cb = ucx_abort_cb;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s == UCS_OK) {
        hp.field_mask |= UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.id = UCX_AM_WRITE;
        hp.cb = ucx_write_cb;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s != UCS_OK) {
        log_error("ucp_worker_set_am_recv_handler: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    return ucx_exchange_hello(ucx, 1, &dl);
}

static symcoll_status_t ucx_init_worker(ucx_ctx_t *ucx)
{
    ucp_worker_params_t wparams;
    ucs_status_t s;

    memset(&wparams, 0, sizeof(wparams));
    /* one thread at a time uses a worker: the communicator's lock serialises the calls
     * on the owner's, and a lane belongs to one progress thread */
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    s = ucp_worker_create(ucx->context, &wparams, &ucx->worker);
    if (s != UCS_OK) {
        log_error("ucp_worker_create: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    if (ucp_worker_get_efd(ucx->worker, &ucx->efd) != UCS_OK) {
        log_debug("UCX worker has no event fd: long waits yield instead of sleeping");
        ucx->efd = -1;
    }
    return SYMCOLL_OK;
}

static symcoll_status_t ucx_init_context(ucx_ctx_t *ucx)
{
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t s;

    s = ucp_config_read(NULL, NULL, &config);
    if (s != UCS_OK) {
        log_error("ucp_config_read: %s (check the UCX_* environment)", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    ucx->am_piece = SIZE_MAX;
    if (ucx->comm->config.net_tcp_seg_size) {
        /* TCP moves an active message of one segment without reassembly: with large
         * segments a ring chunk is a few messages, each copied once into place */
        char v[32];
        size_t seg = ucx->comm->config.net_tcp_seg_size;
        snprintf(v, sizeof(v), "%zu", seg);
        if (ucp_config_modify(config, "TX_SEG_SIZE", v) == UCS_OK &&
            ucp_config_modify(config, "RX_SEG_SIZE", v) == UCS_OK)
            ucx->am_piece = (seg - UCX_AM_HDR_ROOM) / 64 * 64;
        else
            log_warn("UCX does not take TCP_TX/RX_SEG_SIZE; keeping its own segment size");
    }
    memset(&params, 0, sizeof(params));
    params.field_mask =
        UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    /* lanes (ucx_lane_create) are workers of this context used by other threads at the
     * same time: what the workers share (memory registration and its cache, used by
     * every zero-copy send) must be thread-safe. Without it, two lanes crashed UCX in
     * its registration cache on the H200 machine. */
    params.mt_workers_shared = 1;
    /* WAKEUP: a wait that lasts sleeps on the worker's event fd instead of spinning */
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.name = "symcoll";
    s = ucp_init(&params, config, &ucx->context);
    ucp_config_release(config);
    if (s != UCS_OK) {
        log_error("ucp_init: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    if (ucx_init_worker(ucx) != SYMCOLL_OK) {
        ucp_cleanup(ucx->context);
        ucx->context = NULL;
        return SYMCOLL_ERR_UCX;
    }
    return SYMCOLL_OK;
}

/* Size of a packed rkey of this context, measured on one page, to size the exchange. */
static symcoll_status_t ucx_measure_rkey(ucx_ctx_t *ucx)
{
    static char probe[4096] __attribute__((aligned(4096)));
    ucp_mem_map_params_t mp;
    ucp_mem_h memh;
    void *buf;
    size_t len;
    ucs_status_t s;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = probe;
    mp.length = sizeof(probe);
    s = ucp_mem_map(ucx->context, &mp, &memh);
    if (s != UCS_OK) {
        log_error("ucp_mem_map: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    s = ucp_rkey_pack(ucx->context, memh, &buf, &len);
    if (s == UCS_OK)
        ucp_rkey_buffer_release(buf);
    ucp_mem_unmap(ucx->context, memh);
    if (s != UCS_OK) {
        log_error("ucp_rkey_pack: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    /* room for memory types whose rkeys carry more transports than host memory */
    ucx->blob_max = sizeof(ucx_blob_hdr_t) + 2 * len + 256;
    return SYMCOLL_OK;
}

/* Exchanges worker addresses (collective), creates an endpoint to every rank of another
 * node and checks each with one message each way. A rank without a worker (its
 * creation failed) still takes part, with an empty address, so that every rank fails
 * alike instead of waiting for it; so does a rank that could not create an endpoint. */
static symcoll_status_t ucx_connect_eps(ucx_ctx_t *ucx, const topo_t *topo)
{
    ucp_address_t *addr = NULL;
    size_t addr_len = 0, max_len = 0;
    uint64_t mylen, *lens = NULL;
    char *addrs = NULL, *slot = NULL;
    ucs_status_t s;
    symcoll_status_t status;
    size_t n = (size_t)ucx->nranks;
    int32_t ok, *oks = NULL;

    if (ucx->worker) {
        s = ucp_worker_get_address(ucx->worker, &addr, &addr_len);
        if (s != UCS_OK) {
            log_error("ucp_worker_get_address: %s", ucs_status_string(s));
            addr = NULL;
            addr_len = 0;
        }
    }
    mylen = addr_len;
    lens = calloc(n, sizeof(*lens));
    oks = calloc(n, sizeof(*oks));
    if (!lens || !oks) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    status = bootstrap_allgather(ucx->comm->bootstrap, &mylen, lens, sizeof(mylen));
    if (status != SYMCOLL_OK)
        goto out;
    for (size_t r = 0; r < n; r++) {
        if (lens[r] == 0) {
            log_error("UCX: rank %zu has no worker to connect to", r);
            status = SYMCOLL_ERR_UCX;
            goto out;
        }
        if (lens[r] > max_len)
            max_len = lens[r];
    }
    if (max_len == 0 || max_len > (1u << 20)) {
        log_error("implausible UCX worker address length %zu", max_len);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    slot = calloc(1, max_len);
    addrs = calloc(n, max_len);
    if (!slot || !addrs) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    memcpy(slot, addr, addr_len);
    status = bootstrap_allgather(ucx->comm->bootstrap, slot, addrs, max_len);
    if (status != SYMCOLL_OK)
        goto out;

    for (int r = 0; r < ucx->nranks; r++) {
        ucp_ep_params_t ep;
        if (topo->rank_node[r] == topo->node)
            continue;
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)(addrs + (size_t)r * max_len);
        ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = ucx_err_cb;
        ep.err_handler.arg = &ucx->peers[r];
        s = ucp_ep_create(ucx->worker, &ep, &ucx->peers[r].ep);
        if (s != UCS_OK) {
            log_error("ucp_ep_create to rank %d: %s", r, ucs_status_string(s));
            ucx->peers[r].ep = NULL;
            status = SYMCOLL_ERR_UCX;
            break;
        }
        ucx->nremote++;
    }
    /* every rank has its endpoints, or all give up together */
    ok = status == SYMCOLL_OK;
    if (bootstrap_allgather(ucx->comm->bootstrap, &ok, oks, sizeof(ok)) != SYMCOLL_OK)
        status = SYMCOLL_ERR_BOOTSTRAP;
    for (size_t r = 0; r < n && status == SYMCOLL_OK; r++) {
        if (!oks[r]) {
            log_error("UCX: rank %zu could not create its endpoints", r);
            status = SYMCOLL_ERR_UCX;
        }
    }
    if (status != SYMCOLL_OK)
        goto out;
    status = ucx_check_connections(ucx);
    if (status == SYMCOLL_OK)
        ucx->worker_ready = true;
out:
    if (addr)
        ucp_worker_release_address(ucx->worker, addr);
    free(lens);
    free(oks);
    free(slot);
    free(addrs);
    return status;
}

static symcoll_status_t ucx_connect_all(ucx_ctx_t *ucx, const topo_t *topo)
{
    ucx_caps_t mine, *caps = NULL;
    ucp_context_attr_t cattr;
    symcoll_status_t status;
    size_t n = (size_t)ucx->nranks;

    status = ucx_connect_eps(ucx, topo);
    if (status != SYMCOLL_OK)
        return status;
    memset(&mine, 0, sizeof(mine));
    memset(&cattr, 0, sizeof(cattr));
    cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ucx->context, &cattr) == UCS_OK) {
        if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST))
            mine.mem_types |= TOPO_NET_MEM_HOST;
        if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA))
            mine.mem_types |= TOPO_NET_MEM_CUDA;
    }
    caps = calloc(n, sizeof(*caps));
    if (!caps)
        return SYMCOLL_ERR_NO_MEMORY;
    ucx->native_rma = true;
    for (int r = 0; r < ucx->nranks; r++) {
        bool native = false;
        if (!ucx_is_remote(ucx, r))
            continue;
        ucx_describe_ep(ucx, ucx->peers[r].ep, &native);
        ucx->native_rma = ucx->native_rma && native;
    }
    if (!strcmp(ucx->comm->config.net_protocol, "put"))
        ucx->native_rma = true;
    else if (!strcmp(ucx->comm->config.net_protocol, "am"))
        ucx->native_rma = false;
    log_info("UCX transports to other nodes: %s; transfers: %s",
             ucx->transports[0] ? ucx->transports : "?",
             ucx->native_rma ? "put, fence, flag put" : "active messages (RMA is emulated)");

    /* tell the topology what every rank's UCX reaches and uses */
    snprintf(mine.tls, sizeof(mine.tls), "%.*s", (int)sizeof(mine.tls) - 1, ucx->transports);
    status = bootstrap_allgather(ucx->comm->bootstrap, &mine, caps, sizeof(mine));
    if (status != SYMCOLL_OK)
        goto out;
    for (int r = 0; r < ucx->nranks; r++) {
        caps[r].tls[TOPO_TLS_MAX - 1] = 0;
        topo_set_net_caps(ucx->comm->topo, r, caps[r].mem_types, caps[r].tls);
    }
out:
    free(caps);
    return status;
}

static ucx_ctx_t *ucx_alloc(comm_t *comm)
{
    ucx_ctx_t *ucx = calloc(1, sizeof(*ucx));

    if (!ucx)
        return NULL;
    ucx->comm = comm;
    ucx->rank = comm->rank;
    ucx->nranks = comm->nranks;
    ucx->efd = -1;
    ucx->peers = calloc((size_t)comm->nranks, sizeof(*ucx->peers));
    if (!ucx->peers) {
        free(ucx);
        return NULL;
    }
    for (int r = 0; r < comm->nranks; r++) {
        ucx->peers[r].ucx = ucx;
        ucx->peers[r].rank = r;
    }
    for (int m = 0; m < SYMCOLL_MEM_LAST; m++) {
        ucx->segtab[m].ucx = ucx;
        ucx->segtab[m].mem_type = (symcoll_mem_type_t)m;
    }
    return ucx;
}

symcoll_status_t ucx_lane_create(ucx_ctx_t *owner, ucx_ctx_t **lane_p)
{
    ucx_ctx_t *lane;
    symcoll_status_t status;
    int index = 1;

    if (owner->owner) {
        log_error("internal: a lane of a lane");
        return SYMCOLL_ERR_INTERNAL;
    }
    while (index <= UCX_LANES_MAX && (owner->lanes_used & (1u << index)))
        index++;
    if (index > UCX_LANES_MAX) {
        log_error("internal: more than %d UCX lanes", UCX_LANES_MAX);
        return SYMCOLL_ERR_INTERNAL;
    }
    lane = ucx_alloc(owner->comm);
    if (!lane)
        return SYMCOLL_ERR_NO_MEMORY;
    lane->owner = owner;
    lane->index = index;
    lane->context = owner->context;
    lane->blob_max = owner->blob_max;
    lane->am_piece = owner->am_piece;
    /* every rank decided the protocol alike for the owner; a lane's transports are the
     * owner's */
    lane->native_rma = owner->native_rma;
    snprintf(lane->transports, sizeof(lane->transports), "%s", owner->transports);
    /* without a worker it still takes part in the exchange, so that all ranks fail */
    status = ucx_init_worker(lane);
    {
        symcoll_status_t cs = ucx_connect_eps(lane, owner->comm->topo);
        if (status == SYMCOLL_OK)
            status = cs;
    }
    if (status != SYMCOLL_OK) {
        ucx_destroy(lane);
        return status;
    }
    owner->lanes_used |= 1u << index;
    log_debug("UCX lane %d: worker and %d endpoints", index, lane->nremote);
    *lane_p = lane;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_create(comm_t *comm, ucx_ctx_t **ucx_p)
{
    ucx_ctx_t *ucx;
    symcoll_status_t status;

    ucx = ucx_alloc(comm);
    if (!ucx)
        return SYMCOLL_ERR_NO_MEMORY;

    status = ucx_init_context(ucx);
    if (status != SYMCOLL_OK)
        goto err_free;
    status = ucx_measure_rkey(ucx);
    if (status != SYMCOLL_OK)
        goto err_destroy;
    status = ucx_connect_all(ucx, comm->topo);
    if (status != SYMCOLL_OK)
        goto err_destroy;
    *ucx_p = ucx;
    return SYMCOLL_OK;

err_destroy:
    ucx_destroy(ucx);
    return status;
err_free:
    free(ucx->peers);
    free(ucx);
    return status;
}

void ucx_close(ucx_ctx_t *ucx)
{
    deadline_t dl;

    if (!ucx || ucx->closed)
        return;
    dl = deadline_make(ucx->comm->timeout_sec, NULL);
    /* an aborted rank that made no call since: peers still waiting on it stop now */
    if (atomic_load(&ucx->comm->aborted))
        ucx_notify_abort(ucx);
    if (!atomic_load(&ucx->failed)) {
        (void)ucx_wait_all(ucx, &dl);
        (void)ucx_flush(ucx, &dl);
    }
    /* On TCP our flush completes only while the peers progress, and theirs while we do:
     * nobody leaves before everybody has flushed. Afterwards nothing is in flight, so a
     * forced close loses nothing and needs no help from the peers. */
    ucx->closing = true;
    if (ucx->worker_ready && ucx_exchange_hello(ucx, 2, &dl) != SYMCOLL_OK)
        log_warn("UCX close: not every peer confirmed; closing the endpoints anyway");
    for (size_t i = 0; i < ucx_owner(ucx)->nregions; i++)
        ucx_region_drop_rkeys(ucx_owner(ucx)->regions[i], ucx->nranks, ucx->index);
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        ucs_status_ptr_t req;
        unsigned iter = 0;
        if (!ucx->peers[r].ep)
            continue;
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        req = ucp_ep_close_nbx(ucx->peers[r].ep, &param);
        ucx->peers[r].ep = NULL;
        /* a forced close completes locally */
        while (UCS_PTR_IS_PTR(req) && ucp_request_check_status(req) == UCS_INPROGRESS &&
               deadline_check(&dl) == SYMCOLL_OK) {
            ucp_worker_progress(ucx->worker);
            core_spin_pause(&iter);
        }
        if (UCS_PTR_IS_PTR(req))
            ucp_request_free(req);
    }
    ucx->closed = true;
}

void ucx_destroy(ucx_ctx_t *ucx)
{
    if (!ucx)
        return;
    if (ucx->worker) {
        ucx_close(ucx);
        while (ucx->nregions > 0)
            ucx_region_release(ucx, ucx->regions[ucx->nregions - 1]);
        ucp_worker_destroy(ucx->worker);
    }
    if (ucx->owner)
        ucx->owner->lanes_used &= ~(1u << ucx->index);
    else if (ucx->context)
        ucp_cleanup(ucx->context);
    for (int m = 0; m < SYMCOLL_MEM_LAST; m++) {
        free(ucx->segtab[m].segs);
        if (ucx->algo_state[m] && ucx->algo_state_free[m])
            ucx->algo_state_free[m](ucx->algo_state[m]);
    }
    free(ucx->regions);
    free(ucx->peers);
    free(ucx);
}
