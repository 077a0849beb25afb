/* The direct path of CUDA memory across nodes: UCX puts every rank's data straight into
 * the peers' CUDA pool with their rkeys, and the GPU reduces; the probe that decides
 * whether it works, its buffers, its calls on the stream and on lane 0.
 *
 * Where: a UCX with CUDA support on every rank that registered the CUDA pool
 * (ucx_pool_registered), and a probe put per remote peer that landed (algo_cuda_net_probe,
 * when the CUDA pool is created). Among the group of this rank's local index, one rank a
 * node (cnet_direct_t): every rank with one rank a node; the ranks of a local index in a
 * hierarchical call's inter-node step, whose input is this rank's slice of the node's sum
 * in the CUDA pool's staging, reduced there in place (cnet_hier). An average divides by
 * the communicator's size. Below, "peer" means a peer of the group.
 *
 * One call, chunk by chunk (chunks of SYMCOLL_CUDA_NET_CHUNK bytes, numbered across
 * calls in 64 bits: g; slot g mod CNET_DSLOTS of the buffers below):
 *   stream: [copy chunk k of a plain input into the pool's in slot], raise DREADY;
 *           wait DDONE; reduce own input + every peer's scratch slot into the result
 *           (rank order: every rank gets the same bits); raise DCONS;
 *   lane 0: wait DREADY (and DCONS of chunk g - S + 1, see below); put the chunk into
 *           every peer's scratch slot of this rank (ucx_put_rma from the CUDA pool:
 *           pool inputs are put from where they are, no copy); flush (remote
 *           completion); put the flag (tag | chunk) into every peer's host flag of this
 *           rank and slot; wait for every peer's flag of this slot; check the tags;
 *           raise DDONE.
 * The words are host-mapped (the stream writes them with cuStreamWriteValue32 and waits
 * with cuStreamWaitValue32, or where a GPU serves several ranks in a one-thread kernel:
 * cnet_stream_wait); no host staging copy of the data.
 *
 * Why a peer never overwrites a scratch slot the GPU still reads: a peer puts chunk g into
 * our slot g mod S only after it saw our flag of chunk g - 1, which our lane raises after
 * it saw DCONS of chunk g - S: so with S slots, the lane waits for DCONS of g - S + 1
 * before it puts g. S = 3 lets the reduction of one chunk overlap the puts of the next.
 * The in slots are refilled only after their chunk's DDONE (the flush completed its
 * puts) and its reduction (same stream). A call's stream first waits for DCONS of the
 * previous direct call's last chunk, so calls on other streams take their turn.
 *
 * Failure: as the staged path (cuda_net_int.h): the lane raises DDONE of its remaining
 * chunks (results undefined), breaks the communicator and tells its peers; every wait of
 * the lane is bounded and ends on abort or peer failure. Argument agreement: the flag's
 * upper half is a hash of the call's count, type, operator and collective; a peer with
 * another one fails the call with SYMCOLL_ERR_MISMATCH (sticky, as on the staged path).
 * CUDA graphs: not capturable (a host thread moves the data), as the staged path.
 */
#include "algo/cuda_net/cuda_net_int.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "cuda/net_direct.h"
#include "topo/topo.h"

_Static_assert(TOPO_CUDA_DIRECT_MAX_RANKS <= CUDA_NET_REDUCE_MAX,
               "the direct path reduces every rank's data in one kernel");

/* the probe's puts: this many bytes from each rank into each peer */
#define CNET_PROBE_BYTES 64
/* the probe waits at most this long for its puts (bounded also by the comm's timeout) */
#define CNET_PROBE_SEC 10.0

static size_t cnet_round(size_t v)
{
    return (v + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
}

/* host flag of source rank src for slot (row CNET_DSLOTS: the probe's barrier) */
static uint64_t *cnet_dflag(cnet_direct_t *d, int slot, int src, int nranks)
{
    return d->flags + (size_t)slot * (size_t)nranks + (size_t)src;
}

/* ---- the host flags --------------------------------------------------------------------
 * (CNET_DSLOTS + 1) x nranks words in the host pool, zeroed and agreed before any peer
 * puts into them (collective: the caller's thread, nothing queued). */
static symcoll_status_t cnet_flags_ensure(cuda_net_t *cn)
{
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    size_t bytes = cnet_round((size_t)(CNET_DSLOTS + 1) * (size_t)comm->nranks * 8);
    int32_t one = 1, *all;
    symcoll_status_t status;

    if (d->flags)
        return SYMCOLL_OK;
    status = pool_alloc(cn->host_pool, bytes, POOL_ALLOC_STAGING, &d->flags_off);
    if (status != SYMCOLL_OK)
        return status;
    d->flags = pool_peer_addr(cn->host_pool, pool_local_rank(cn->host_pool), d->flags_off);
    memset(d->flags, 0, bytes);
    /* zeroed on every rank before anyone puts a flag */
    all = calloc((size_t)comm->nranks, sizeof(*all));
    status = all ? bootstrap_allgather(comm->bootstrap, &one, all, sizeof(one))
                 : SYMCOLL_ERR_NO_MEMORY;
    free(all);
    if (status != SYMCOLL_OK) {
        pool_free(cn->host_pool, d->flags_off);
        d->flags = NULL;
    }
    return status;
}

/* ---- the probe ------------------------------------------------------------------------ */

static unsigned char cnet_probe_byte(int src, int i)
{
    return (unsigned char)(src * 31 + i * 7 + 1);
}

/* Waits for the flag of row slot of every remote peer (group: of every peer of the group)
 * to equal value (low 32 bits), keeping UCX progressing (the peers' puts may need us). */
static symcoll_status_t cnet_dflags_wait(cuda_net_t *cn, ucx_ctx_t *ucx, int slot,
                                         uint32_t value, bool group, const deadline_t *dl)
{
    comm_t *comm = cn->comm;
    const cnet_direct_t *d = &cn->direct;
    unsigned iter = 0;

    for (int i = 0; i < (group ? d->gn : comm->nranks); i++) {
        int p = group ? d->grank[i] : i;
        const uint64_t *f = cnet_dflag(&cn->direct, slot, p, comm->nranks);
        if (p == comm->rank || !ucx_is_remote(ucx, p))
            continue;
        while ((uint32_t)__atomic_load_n(f, __ATOMIC_ACQUIRE) != value) {
            symcoll_status_t status = (symcoll_status_t)atomic_load_explicit(
                &comm->algo->broken, memory_order_relaxed);
            if (status == SYMCOLL_OK)
                status = ucx_progress(ucx);
            if (status == SYMCOLL_OK)
                status = deadline_check(dl);
            if (status != SYMCOLL_OK) {
                log_error("CUDA across nodes, direct: gave up waiting for rank %d's flag %u of "
                          "slot %d (it holds %u): %s",
                          p, (unsigned)value, slot,
                          (unsigned)(uint32_t)__atomic_load_n(f, __ATOMIC_ACQUIRE),
                          symcoll_status_string(status));
                return status;
            }
            core_spin_pause(&iter);
        }
    }
    return SYMCOLL_OK;
}

symcoll_status_t algo_cuda_net_probe(comm_t *comm, pool_t *host_pool, pool_t *cuda_pool)
{
    topo_t *topo = comm->topo;
    const pool_backend_t *be = pool_backend(cuda_pool);
    void *bctx = pool_backend_ctx(cuda_pool);
    int n = comm->nranks, me = comm->rank;
    size_t bytes = cnet_round((size_t)n * CNET_PROBE_BYTES), off = 0;
    unsigned char *host = NULL;
    signed char *landed = NULL, *all = NULL, *mine = NULL;
    char *area;
    cuda_net_t *cn;
    bool ok = true, drv = false;
    int one_queue = -1; /* the first rank with one hardware queue and driver lanes */
    double sec = comm->timeout_sec < CNET_PROBE_SEC ? comm->timeout_sec : CNET_PROBE_SEC;
    deadline_t dl;
    symcoll_status_t status, put_status = SYMCOLL_OK;

    if (topo->nnodes < 2 || !comm->ucx || topo->shape[SYMCOLL_MEM_CUDA].net_direct != 0 ||
        !topo->shape[SYMCOLL_MEM_CUDA].net_cuda || !topo->shape[SYMCOLL_MEM_CUDA].gpus ||
        topo->select_cfg.cuda_net_path == TOPO_PATH_STAGED)
        return SYMCOLL_OK;
    if (!ucx_pool_registered(comm->ucx, SYMCOLL_MEM_CUDA)) {
        /* every rank knows (the registrations' exchange told them): no probe */
        topo_set_net_direct(topo, NULL, false, false, false);
        return SYMCOLL_OK;
    }
    status = algo_cuda_net_prepare(comm, host_pool);
    if (status != SYMCOLL_OK)
        return status;
    cn = comm->algo->cuda_net;
    status = algo_cuda_net_drain(comm);
    if (status == SYMCOLL_OK)
        status = cnet_flags_ensure(cn);
    if (status != SYMCOLL_OK)
        return status;

    host = calloc(1, bytes);
    landed = calloc((size_t)n, 1);
    all = calloc((size_t)n * (size_t)n, 1);
    mine = calloc((size_t)n, 1);
    if (!host || !landed || !all || !mine) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    status = pool_alloc(cuda_pool, bytes, POOL_ALLOC_STAGING, &off);
    if (status != SYMCOLL_OK)
        goto out;
    area = pool_peer_addr(cuda_pool, pool_local_rank(cuda_pool), off);
    /* zero everywhere, then this rank's pattern in its own slot; the flags' barrier
     * (cnet_flags_ensure) ran before: nobody puts before everyone zeroed */
    for (int i = 0; i < CNET_PROBE_BYTES; i++)
        host[(size_t)me * CNET_PROBE_BYTES + (size_t)i] = cnet_probe_byte(me, i);
    status = be->memcpy(bctx, area, host, bytes);
    if (status == SYMCOLL_OK) {
        int32_t one = 1, *ones = calloc((size_t)n, sizeof(*ones));
        status = ones ? bootstrap_allgather(comm->bootstrap, &one, ones, sizeof(one))
                      : SYMCOLL_ERR_NO_MEMORY;
        free(ones);
    }
    if (status != SYMCOLL_OK)
        goto out_free;

    /* this rank's slot into every peer's (the same offset); remote completion; then a
     * flag barrier over UCX, which keeps progressing for peers whose puts need us */
    dl = deadline_make(sec, &comm->aborted);
    for (int p = 0; p < n && put_status == SYMCOLL_OK; p++)
        if (ucx_is_remote(comm->ucx, p))
            put_status = ucx_put_rma(comm->ucx, p, area + (size_t)me * CNET_PROBE_BYTES,
                                     CNET_PROBE_BYTES, area + (size_t)me * CNET_PROBE_BYTES);
    if (put_status == SYMCOLL_OK)
        put_status = ucx_flush(comm->ucx, &dl);
    for (int p = 0; p < n && put_status == SYMCOLL_OK; p++)
        if (ucx_is_remote(comm->ucx, p))
            put_status =
                ucx_put_flag(comm->ucx, p, 1, cnet_dflag(&cn->direct, CNET_DSLOTS, me, n));
    if (put_status == SYMCOLL_OK)
        put_status = cnet_dflags_wait(cn, comm->ucx, CNET_DSLOTS, 1, false, &dl);
    if (put_status != SYMCOLL_OK) {
        log_warn("CUDA across nodes: the probe of the direct path failed on this rank (%s): "
                 "CUDA memory across nodes stays staged",
                 symcoll_status_string(put_status));
        /* the peers' waits for us end at their deadline at worst; a broken UCX worker
         * is not used on this path again */
    }

    /* what landed here, from each peer; in this rank's own entry (no probe of itself): 2
     * when its UCX calls the CUDA driver to move CUDA memory to some peer
     * (ucx_cuda_driver_lanes: cuda_ipc and TCP lanes do; network RMA lanes, rc_ and dc_,
     * do not per put; a network without GPUDirect RDMA does, through UCX's cuda_copy
     * staging, which the endpoints' lanes do not name: not detected). 3: the same, with
     * every stream of this process on one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1),
     * where UCX's copies queue behind the stream's wait for them: the direct path
     * deadlocks at its first call (bench/results/gpu-direct.md, "streams sharing hardware
     * queues"). */
    status = be->memcpy(bctx, host, area, bytes);
    if (ucx_cuda_driver_lanes(comm->ucx))
        landed[me] = cuda_hw_queues() == 1 ? 3 : 2;
    for (int p = 0; p < n && status == SYMCOLL_OK; p++) {
        if (p == me || !ucx_is_remote(comm->ucx, p))
            continue;
        landed[p] = 1;
        for (int i = 0; i < CNET_PROBE_BYTES; i++)
            if (host[(size_t)p * CNET_PROBE_BYTES + (size_t)i] != cnet_probe_byte(p, i))
                landed[p] = -1;
    }
    if (status == SYMCOLL_OK)
        status = bootstrap_allgather(comm->bootstrap, landed, all, (size_t)n);
    if (status != SYMCOLL_OK)
        goto out_free;
    /* all[q * n + p]: did p's put land at q; mine[q]: did this rank's put land at q */
    for (int q = 0; q < n; q++)
        for (int p = 0; p < n; p++)
            if (all[(size_t)q * (size_t)n + (size_t)p] < 0)
                ok = false;
    for (int q = 0; q < n; q++) {
        signed char self = all[(size_t)q * (size_t)n + (size_t)q];
        drv = drv || self >= 2;
        if (self == 3 && one_queue < 0)
            one_queue = q;
    }
    for (int q = 0; q < n; q++)
        mine[q] = q == me ? 0 : all[(size_t)q * (size_t)n + (size_t)me];
    topo_set_net_direct(topo, mine, ok && one_queue < 0, drv, ok && one_queue >= 0);
    if (ok && one_queue >= 0)
        log_warn("CUDA across nodes: rank %d runs with CUDA_DEVICE_MAX_CONNECTIONS=1 and its "
                 "UCX moves CUDA memory through lanes that call the CUDA driver: their copies "
                 "would wait behind the stream's wait for them; the direct path is not "
                 "available, CUDA memory across nodes stays staged",
                 one_queue);
    else if (ok && topo->select_cfg.cuda_net_path == TOPO_PATH_DIRECT &&
             !ucx_cuda_rma_native(comm->ucx))
        /* UCX's emulated put is answered with a message from the target (rma_sw.c); when
         * that answer fails, its status reaches ucp_request_try_send, which ends the
         * process with ucs_fatal (UCX 1.13 to 1.22 seen; bench/results/faults.md) */
        log_warn("CUDA across nodes: direct path forced over UCX %s, where UCX emulates RMA "
                 "into CUDA memory with messages: a rank that dies while its puts are "
                 "arriving can make UCX abort the rank that received them (a UCX defect in "
                 "the answer to an emulated put); the staged path keeps a peer's failure a "
                 "status",
                 ucx_transports(comm->ucx));
    else if (ok)
        log_info("CUDA across nodes: every probe put into a peer's CUDA pool landed; direct "
                 "path available (UCX %s)",
                 ucx_transports(comm->ucx));
    else
        for (int q = 0; q < n; q++)
            if (mine[q] < 0)
                log_warn("CUDA across nodes: the probe put into rank %d's CUDA pool did not "
                         "land; CUDA memory across nodes stays staged",
                         q);

out_free:
    pool_free(cuda_pool, off);
out:
    free(host);
    free(landed);
    free(all);
    free(mine);
    return status;
}

/* ---- buffers ------------------------------------------------------------------------ */

/* Lane 0's worker puts the whole scratch into every group peer's once, from the caller's
 * thread, while nothing of ours is queued on any stream; then a flag barrier that keeps
 * that worker progressing. UCX maps a peer's GPU memory (cuda_ipc imports and maps it) or
 * sets up its staging (cuda_copy) on the first transfer to it, and mapping GPU memory
 * can wait for the device's queued work: done by the lane during a call, that work
 * would be the call's own stream waiting for the lane, and both would wait for ever. So
 * those first transfers happen here, and a call's puts only copy. The bytes land in
 * scratch nobody reads yet (a peer reads a slot only after our flag for it). */
static symcoll_status_t cnet_direct_warm(cuda_net_t *cn, size_t bytes)
{
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    ucx_ctx_t *ucx = cn->lanes[0].ucx;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    symcoll_status_t status = SYMCOLL_OK;

    if (!ucx) {
        log_error("internal: CUDA across nodes, direct: no lane");
        return SYMCOLL_ERR_INTERNAL;
    }
    for (int i = 0; i < d->gn && status == SYMCOLL_OK; i++)
        if (i != d->gme)
            status = ucx_put_rma(ucx, d->grank[i], d->scratch, bytes, d->scratch);
    if (status == SYMCOLL_OK)
        status = ucx_flush_peers(ucx, d->grank, d->gn, &dl);
    /* every rank warms up as often (collective calls): the same value, a new one each time
     * (the probe's barrier used 1); the barrier is among every remote rank, as the
     * probe's */
    d->warm_epoch = d->warm_epoch < 2 ? 2 : d->warm_epoch + 1;
    for (int p = 0; p < comm->nranks && status == SYMCOLL_OK; p++)
        if (ucx_is_remote(ucx, p))
            status = ucx_put_flag(ucx, p, d->warm_epoch,
                                  cnet_dflag(d, CNET_DSLOTS, comm->rank, comm->nranks));
    if (status == SYMCOLL_OK)
        status = cnet_dflags_wait(cn, ucx, CNET_DSLOTS, d->warm_epoch, false, &dl);
    if (status != SYMCOLL_OK)
        log_error(
            "CUDA across nodes, direct: the first puts into the peers' scratch failed (%s)",
            symcoll_status_string(status));
    return status;
}

symcoll_status_t cnet_direct_ensure(cuda_net_t *cn, pool_t *cuda_pool)
{
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    size_t chunk = cnet_round(comm->config.cuda_net_chunk), bytes;
    symcoll_status_t status;

    if (d->scratch && d->cuda_pool == cuda_pool)
        return SYMCOLL_OK;
    if (!d->waits_set) {
        int dev, can = 0;
        CUdevice cudev;

        d->waits_set = true;
        /* A NIC's writes into GPU memory (GPUDirect RDMA) may still be on their way inside
         * the GPU when the flag that follows them reaches host memory; where the device
         * can, the stream's wait for the lane flushes them before the reduction reads. */
        if (cuda_comm_device(comm, &dev) == SYMCOLL_OK &&
            cn->drv->device_get(&cudev, dev) == CUDA_SUCCESS &&
            cn->drv->device_get_attribute(&can, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                          cudev) == CUDA_SUCCESS &&
            can)
            d->wait_flush = CU_STREAM_WAIT_VALUE_FLUSH;
        /* where a GPU serves several ranks, the stream waits in a kernel: see
         * cuda_net_wait_launch */
        d->wait_kernel = comm->topo->shape[SYMCOLL_MEM_CUDA].gpus_shared;
        log_debug("CUDA across nodes, direct: the stream waits %s; %s remote writes",
                  d->wait_kernel ? "in a kernel" : "with cuStreamWaitValue32",
                  d->wait_flush ? "flushes" : "does not flush");
    }
    status = cnet_flags_ensure(cn);
    if (status != SYMCOLL_OK)
        return status;
    /* the group: every rank of this local index (the selector planned the direct path
     * only where the nodes have the same number of ranks, at most the maximum) */
    d->gn = 0;
    for (int r = 0; r < comm->nranks; r++) {
        if (comm->topo->rank_local_rank[r] != comm->topo->local_rank)
            continue;
        if (d->gn == TOPO_CUDA_DIRECT_MAX_RANKS) {
            log_error("internal: CUDA across nodes, direct: more than %d ranks of local "
                      "index %d",
                      TOPO_CUDA_DIRECT_MAX_RANKS, comm->topo->local_rank);
            return SYMCOLL_ERR_INTERNAL;
        }
        if (r == comm->rank)
            d->gme = d->gn;
        d->grank[d->gn++] = r;
    }
    bytes = (size_t)CNET_DSLOTS * ((size_t)d->gn + 1) * chunk;
    status = pool_alloc(cuda_pool, bytes, POOL_ALLOC_STAGING, &d->scratch_off);
    if (status != SYMCOLL_OK)
        return status;
    d->cuda_pool = cuda_pool;
    d->chunk_bytes = chunk;
    d->scratch = pool_peer_addr(cuda_pool, pool_local_rank(cuda_pool), d->scratch_off);
    d->in = d->scratch + (size_t)CNET_DSLOTS * (size_t)d->gn * chunk;
    status = cnet_direct_warm(cn, bytes);
    if (status != SYMCOLL_OK) {
        pool_free(cuda_pool, d->scratch_off);
        d->scratch = d->in = NULL;
        d->cuda_pool = NULL;
        return status;
    }
    log_debug("CUDA across nodes, direct: %d x %d x %zu bytes of scratch in the CUDA pool",
              CNET_DSLOTS, d->gn + 1, chunk);
    return SYMCOLL_OK;
}

void cnet_direct_release_scratch(cuda_net_t *cn)
{
    cnet_direct_t *d = &cn->direct;

    if (!d->scratch)
        return;
    if (cnet_direct_wait_quiet(cn) != SYMCOLL_OK) {
        log_error("CUDA across nodes: the GPU did not finish its direct reductions; leaving "
                  "their scratch allocated");
        return;
    }
    pool_free(d->cuda_pool, d->scratch_off);
    d->scratch = d->in = NULL;
    d->cuda_pool = NULL;
}

void cnet_direct_release(cuda_net_t *cn)
{
    cnet_direct_t *d = &cn->direct;

    /* the caller waited until the GPU left them (cnet_wait_quiet) */
    cnet_direct_release_scratch(cn);
    if (d->flags && !d->scratch)
        pool_free(cn->host_pool, d->flags_off);
    if (!d->scratch)
        d->flags = NULL;
}

symcoll_status_t cnet_direct_wait_quiet(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);

    if (!cn->direct.cons_queued)
        return SYMCOLL_OK;
    return cnet_poll_word(cnet_dword(cn, CNET_DCONS, 0), (uint32_t)cn->direct.cons_queued, &dl);
}

/* ---- the call (caller's thread) ----------------------------------------------------- */

/* the call's tag in a flag's upper half: every rank of the call agrees on it */
static uint32_t cnet_direct_tag(const cnet_op_t *o)
{
    uint64_t h = 1469598103934665603ull;
    uint64_t v[4] = {o->count, (uint64_t)o->dtype, (uint64_t)o->op, o->salt};

    for (int i = 0; i < 4; i++) {
        h ^= v[i];
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32)) | 1u;
}

typedef struct cnet_dq {
    cuda_net_t *cn;
    cudaStream_t s;
    const cnet_op_t *o;
    const char *send;
    char *recv;
} cnet_dq_t;

static symcoll_status_t cnet_dq_word(cnet_dq_t *q, int which, int slot, uint32_t value,
                                     bool wait)
{
    CUdeviceptr w = cnet_dword_dev(q->cn, which, slot);
    CUresult res;

    if (wait)
        return cnet_stream_wait(q->cn, q->s, w, value,
                                which == CNET_DDONE ? q->cn->direct.wait_flush : 0u);
    res = q->cn->drv->stream_write_value32(q->s, w, value, 0);
    return res == CUDA_SUCCESS ? SYMCOLL_OK : cuda_drv_error(res, "cuStreamWriteValue32");
}

static size_t cnet_dq_elems(const cnet_op_t *o, uint64_t k)
{
    size_t first = (size_t)k * o->chunk;
    return o->count - first < o->chunk ? o->count - first : o->chunk;
}

/* chunk k's input ready for the lane: copied into its in slot unless it is in the pool */
static symcoll_status_t cnet_dq_in(cnet_dq_t *q, uint64_t k)
{
    const cnet_op_t *o = q->o;
    cnet_direct_t *d = &q->cn->direct;
    size_t esize = symcoll_dtype_size(o->dtype);
    uint64_t g = o->first + k;
    int slot = (int)(g % CNET_DSLOTS);

    if (!o->src) {
        cudaError_t err = cudaMemcpyAsync(
            d->in + (size_t)slot * d->chunk_bytes, q->send + (size_t)k * o->chunk * esize,
            cnet_dq_elems(o, k) * esize, cudaMemcpyDeviceToDevice, q->s);
        if (err != cudaSuccess)
            return cuda_rt_error(err, "CUDA across nodes: copy into the CUDA pool");
    }
    return cnet_dq_word(q, CNET_DREADY, slot, (uint32_t)(g + 1), false);
}

static symcoll_status_t cnet_dq_reduce(cnet_dq_t *q, uint64_t k)
{
    const cnet_op_t *o = q->o;
    cuda_net_t *cn = q->cn;
    cnet_direct_t *d = &cn->direct;
    size_t esize = symcoll_dtype_size(o->dtype), at = (size_t)k * o->chunk * esize;
    uint64_t g = o->first + k;
    int slot = (int)(g % CNET_DSLOTS), n = d->gn;
    cuda_net_reduce_args_t a;
    cudaError_t err;

    memset(&a, 0, sizeof(a));
    a.dst = q->recv + at;
    a.nsrc = n;
    a.divisor = cn->comm->nranks; /* an average is over every rank, hierarchical or not */
    a.count = cnet_dq_elems(o, k);
    a.dtype = (int)o->dtype;
    a.op = (int)o->op;
    for (int r = 0; r < n; r++)
        a.src[r] = r == d->gme
                       ? (o->src ? o->src + at : d->in + (size_t)slot * d->chunk_bytes)
                       : d->scratch + ((size_t)slot * (size_t)n + (size_t)r) * d->chunk_bytes;
    err = (cudaError_t)cuda_net_reduce_launch(&a, q->s);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "CUDA across nodes: direct reduction kernel");
    return SYMCOLL_OK;
}

symcoll_status_t cnet_direct_enqueue(cuda_net_t *cn, cudaStream_t s, const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op)
{
    cnet_direct_t *d = &cn->direct;
    const size_t esize = symcoll_dtype_size(dtype);
    size_t off;
    cnet_op_t o;
    cnet_dq_t q = {cn, s, &o, sendbuf, recvbuf};
    symcoll_status_t status;

    status = cnet_wait_queued(cn, CNET_QUEUE - 1);
    if (status != SYMCOLL_OK)
        return status;
    memset(&o, 0, sizeof(o));
    o.chunk = d->chunk_bytes / esize;
    o.count = count;
    o.dtype = dtype;
    o.op = op;
    o.salt = cn->comm->algo->salt;
    o.direct = true;
    /* an input in the pool is put from where it is (registered with UCX) */
    o.src = pool_lookup(d->cuda_pool, sendbuf, count * esize, &off) ? sendbuf : NULL;
    o.tag = cnet_direct_tag(&o);
    o.first = d->next;
    o.nchunks = (count + o.chunk - 1) / o.chunk;
    d->next += o.nchunks;

    /* lane 0 takes it (the queue: one "chunk" for the scheduler), in call order */
    pthread_mutex_lock(&cn->mu);
    cn->quiet = false;
    cn->q[cn->sched.end % CNET_QUEUE] = o;
    (void)cnet_sched_push(&cn->sched, 1);
    if (cn->lane0_asleep)
        pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);

    /* the stream: after the previous direct call's last reduction (other streams) */
    if (o.first)
        status = cnet_dq_word(&q, CNET_DCONS, 0, (uint32_t)o.first, true);
    for (uint64_t k = 0; k < o.nchunks && k < CNET_DSLOTS && status == SYMCOLL_OK; k++)
        status = cnet_dq_in(&q, k);
    for (uint64_t k = 0; k < o.nchunks && status == SYMCOLL_OK; k++) {
        uint64_t g = o.first + k;
        status = cnet_dq_word(&q, CNET_DDONE, (int)(g % CNET_DSLOTS), (uint32_t)(g + 1), true);
        if (status == SYMCOLL_OK)
            status = cnet_dq_reduce(&q, k);
        if (status == SYMCOLL_OK)
            status = cnet_dq_word(&q, CNET_DCONS, 0, (uint32_t)(g + 1), false);
        if (status == SYMCOLL_OK)
            d->cons_queued = g + 1;
        if (status == SYMCOLL_OK && k + CNET_DSLOTS < o.nchunks)
            status = cnet_dq_in(&q, k + CNET_DSLOTS);
    }
    return status;
}

/* ---- lane 0 ------------------------------------------------------------------------- */

/* Waits until host-mapped word w reaches value, keeping UCX progressing. */
static symcoll_status_t cnet_lane_wait_word(cnet_lane_t *ln, volatile uint32_t *w,
                                            uint32_t value, const deadline_t *dl,
                                            const char *what, uint64_t g)
{
    cuda_net_t *cn = ln->cn;
    unsigned iter = 0;
    symcoll_status_t status;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), value)) {
        status = (symcoll_status_t)atomic_load_explicit(&cn->comm->algo->broken,
                                                        memory_order_relaxed);
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_progress(ln->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes (direct): gave up waiting for %s of chunk "
                      "%llu (%s)",
                      what, (unsigned long long)g, symcoll_status_string(status));
            return status;
        }
        core_spin_pause(&iter);
    }
    return SYMCOLL_OK;
}

symcoll_status_t cnet_run_direct(cnet_lane_t *ln, const cnet_op_t *op, uint64_t *k_p)
{
    cuda_net_t *cn = ln->cn;
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    const size_t esize = symcoll_dtype_size(op->dtype);
    const int n = d->gn, me = d->gme;
    double t0 = time_now(), t;
    symcoll_status_t status = SYMCOLL_OK;

    for (*k_p = 0; *k_p < op->nchunks; (*k_p)++) {
        uint64_t k = *k_p, g = op->first + k;
        int slot = (int)(g % CNET_DSLOTS);
        size_t bytes =
            (op->count - (size_t)k * op->chunk < op->chunk ? op->count - (size_t)k * op->chunk
                                                           : op->chunk) *
            esize;
        const char *src = op->src ? op->src + (size_t)k * op->chunk * esize
                                  : d->in + (size_t)slot * d->chunk_bytes;
        char *dst = d->scratch + ((size_t)slot * (size_t)n + (size_t)me) * d->chunk_bytes;
        uint64_t flag = ((uint64_t)op->tag << 32) | (uint32_t)(g + 1);
        deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);

        status = cnet_lane_wait_word(ln, cnet_dword(cn, CNET_DREADY, slot), (uint32_t)(g + 1),
                                     &dl, "the GPU's input", g);
        if (k == 0)
            ln->t_wait_in += time_now() - t0;
        t = time_now();
        /* our scratch slot of chunk g + 1 - S was reduced: see the top of the file */
        if (status == SYMCOLL_OK && g + 2 > CNET_DSLOTS)
            status = cnet_lane_wait_word(ln, cnet_dword(cn, CNET_DCONS, 0),
                                         (uint32_t)(g + 2 - CNET_DSLOTS), &dl,
                                         "the GPU's reduction", g + 1 - CNET_DSLOTS);
        for (int i = 0; i < n && status == SYMCOLL_OK; i++)
            if (i != me)
                status = ucx_put_rma(ln->ucx, d->grank[i], src, bytes, dst);
        /* the group's endpoints only: the worker's others may hold operations whose
         * completion needs a rank that no longer progresses (on TCP, one in a pool trim
         * whose hierarchical kernels wait for this step) */
        if (status == SYMCOLL_OK)
            status = ucx_flush_peers(ln->ucx, d->grank, n, &dl);
        for (int i = 0; i < n && status == SYMCOLL_OK; i++)
            if (i != me)
                status = ucx_put_flag(ln->ucx, d->grank[i], flag,
                                      cnet_dflag(d, slot, comm->rank, comm->nranks));
        if (status == SYMCOLL_OK)
            status = cnet_dflags_wait(cn, ln->ucx, slot, (uint32_t)(g + 1), true, &dl);
        for (int i = 0; i < n && status == SYMCOLL_OK; i++) {
            int p = d->grank[i];
            uint64_t f =
                __atomic_load_n(cnet_dflag(d, slot, p, comm->nranks), __ATOMIC_ACQUIRE);
            if (i != me && (uint32_t)(f >> 32) != op->tag) {
                log_error("CUDA all-reduce across nodes (direct): rank %d called with other "
                          "arguments (count, type, operator or collective: tag %08x, ours "
                          "%08x, count %zu)",
                          p, (unsigned)(f >> 32), (unsigned)op->tag, op->count);
                status = SYMCOLL_ERR_MISMATCH;
            }
        }
        ln->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            return status;
        __atomic_store_n(cnet_dword(cn, CNET_DDONE, slot), (uint32_t)(g + 1), __ATOMIC_RELEASE);
    }
    return SYMCOLL_OK;
}

void cnet_direct_give_up(cnet_lane_t *ln, const cnet_op_t *op, uint64_t k)
{
    /* one lane runs every direct chunk, in order: the slot's earlier chunks are done */
    for (; k < op->nchunks; k++) {
        uint64_t g = op->first + k;
        __atomic_store_n(cnet_dword(ln->cn, CNET_DDONE, (int)(g % CNET_DSLOTS)),
                         (uint32_t)(g + 1), __ATOMIC_RELEASE);
    }
}
