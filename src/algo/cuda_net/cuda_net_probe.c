/* The probe of the direct path of CUDA memory across nodes: one put from every rank into
 * every peer's CUDA pool, bounded in time; what landed goes to the topology. */
#include "algo/cuda_net/cuda_net_int.h"

#include <stdlib.h>

#include "bootstrap/bootstrap.h"
#include "topo/topo.h"

/* the probe's puts: this many bytes from each rank into each peer */
#define CNET_PROBE_BYTES 64
/* the probe waits at most this long for its puts (bounded also by the comm's timeout) */
#define CNET_PROBE_SEC 10.0

static unsigned char cnet_probe_byte(int src, int i)
{
    return (unsigned char)(src * 31 + i * 7 + 1);
}

symcoll_status_t cnet_probe(comm_t *comm, pool_t *cuda_pool)
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

    cn = comm->algo->cuda_net;
    status = algo_cuda_net_drain(comm);
    if (status == SYMCOLL_OK)
        status = cnet_flags_ensure(cn);
    if (status != SYMCOLL_OK)
        return status;

    host = calloc(1, bytes);
    landed = calloc((size_t)n, 1);
    mine = calloc((size_t)n, 1);
    if (!host || !landed || !mine) {
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
    if (status == SYMCOLL_OK)
        status = bootstrap_barrier(comm->bootstrap);
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
     * deadlocks at its first call (seen with CUDA_DEVICE_MAX_CONNECTIONS=1). */
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
    /* one vote, MIN of each: every put landed everywhere, minus whether some rank's UCX
     * calls the driver (MIN of -x is -MAX), the lowest rank that also has one hardware
     * queue (n: none) */
    if (status == SYMCOLL_OK) {
        int64_t v[3] = {1, -(int64_t)(landed[me] >= 2), landed[me] == 3 ? me : n};
        for (int p = 0; p < n; p++)
            if (p != me && landed[p] < 0)
                v[0] = 0;
        status = bootstrap_allreduce(comm->bootstrap, v, 3, BOOTSTRAP_OP_MIN);
        ok = v[0] == 1;
        drv = v[1] != 0;
        one_queue = v[2] < n ? (int)v[2] : -1;
    }
    /* mine[q]: did this rank's put land at q. Only q knows: where some put failed, the
     * ranks gather what landed where (n x n bytes, on this failure path only) */
    if (status == SYMCOLL_OK && !ok) {
        all = calloc((size_t)n * (size_t)n, 1);
        status = all ? bootstrap_allgather(comm->bootstrap, landed, all, (size_t)n)
                     : SYMCOLL_ERR_NO_MEMORY;
    }
    if (status != SYMCOLL_OK)
        goto out_free;
    for (int q = 0; q < n; q++)
        mine[q] = q == me                       ? 0
                  : all                         ? all[(size_t)q * (size_t)n + (size_t)me]
                  : ucx_is_remote(comm->ucx, q) ? 1
                                                : 0;
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
         * process with ucs_fatal (UCX 1.13 to 1.22 seen) */
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
