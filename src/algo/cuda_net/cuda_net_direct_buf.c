/* The direct path's buffers (CUDA memory across nodes): its scratch in the CUDA pool and its
 * flags in the host pool (cuda_net_int.h), set up, waited for and released by the caller's
 * thread; the wait for the peers' flags that the probe and channel 0 share. */
#include "algo/cuda_net/cuda_net_int.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "topo/topo.h"

/* ---- the host flags --------------------------------------------------------------------
 * (CNET_DSLOTS + 1) x nranks words in the host pool, zeroed and agreed before any peer
 * puts into them (collective: the caller's thread, nothing queued). */
symcoll_status_t cnet_flags_ensure(cuda_net_t *cn)
{
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    size_t bytes = cnet_round((size_t)(CNET_DSLOTS + 1) * (size_t)comm->nranks * 8);
    symcoll_status_t status;

    if (d->flags)
        return SYMCOLL_OK;
    status = pool_alloc(cn->host_pool, bytes, POOL_ALLOC_STAGING, &d->flags_off);
    if (status != SYMCOLL_OK)
        return status;
    d->flags = pool_peer_addr(cn->host_pool, pool_local_rank(cn->host_pool), d->flags_off);
    memset(d->flags, 0, bytes);
    /* zeroed on every rank before anyone puts a flag */
    status = bootstrap_barrier(comm->bootstrap);
    if (status != SYMCOLL_OK) {
        pool_free(cn->host_pool, d->flags_off);
        d->flags = NULL;
    }
    return status;
}

/* Waits for the flag of row slot of every remote peer (group: of every peer of the group)
 * to equal value (low 32 bits), keeping UCX progressing (the peers' puts may need us). */
symcoll_status_t cnet_dflags_wait(cuda_net_t *cn, ucx_ctx_t *ucx, int slot, uint32_t value,
                                  bool group, const deadline_t *dl)
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

/* ---- buffers ------------------------------------------------------------------------ */

/* Channel 0's worker puts the whole scratch into every group peer's once, from the caller's
 * thread, while nothing of ours is queued on any stream; then a flag barrier that keeps
 * that worker progressing. UCX maps a peer's GPU memory (cuda_ipc imports and maps it) or
 * sets up its staging (cuda_copy) on the first transfer to it, and mapping GPU memory
 * can wait for the device's queued work: done by the channel during a call, that work
 * would be the call's own stream waiting for the channel, and both would wait for ever. So
 * those first transfers happen here, and a call's puts only copy. The bytes land in
 * scratch nobody reads yet (a peer reads a slot only after our flag for it). */
static symcoll_status_t cnet_direct_warm(cuda_net_t *cn, size_t bytes)
{
    cnet_direct_t *d = &cn->direct;
    comm_t *comm = cn->comm;
    ucx_ctx_t *ucx = cn->channels[0].ucx;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    symcoll_status_t status = SYMCOLL_OK;

    if (!ucx) {
        log_error("internal: CUDA across nodes, direct: no channel");
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
         * can, the stream's wait for the channel flushes them before the reduction reads. */
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
