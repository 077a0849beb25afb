/* The host staging of CUDA memory across nodes: slots and node word in pinned memory of
 * the host pool, set up and released by the caller's thread; waits for the GPU to leave it. */
#include "algo/cuda_net/cuda_net_int.h"

/* ---- staging ------------------------------------------------------------------------
 * Allocated and pinned by the caller's thread while no operation is queued (collective:
 * the same call on every rank), before the channels start; released after they stopped (the
 * entry, cuda_net.c, does both). Never by a channel thread:
 * cudaHostRegister waits for work the driver has queued, and a caller's stream may be
 * waiting for that thread. */

void cnet_stage_release(cuda_net_t *cn)
{
    if (cn->direct.scratch || cn->direct.flags) {
        if (cnet_direct_wait_quiet(cn) == SYMCOLL_OK)
            cnet_direct_release(cn);
        else
            log_error("CUDA across nodes: the GPU did not finish its direct reductions; "
                      "leaving their buffers allocated");
    }
    if (!cn->has_stage)
        return;
    /* every queued operation was released (drained); once each slot's last copy out
     * ran, nothing queued touches the slots */
    if (cnet_wait_quiet(cn) != SYMCOLL_OK) {
        log_error("CUDA across nodes: the GPU did not finish copying out of the host staging; "
                  "leaving it mapped (%zu bytes)",
                  (size_t)cn->nslots * cn->slot_bytes);
        cn->has_stage = false;
        return;
    }
    if (cn->we_pinned)
        cudaHostUnregister(cn->stage);
    pool_free(cn->host_pool, cn->stage_off);
    cn->has_stage = false;
}

/* p is page-locked host memory CUDA knows (registered or allocated by CUDA). */
static bool cnet_pinned(const void *p)
{
    struct cudaPointerAttributes a;

    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

symcoll_status_t cnet_stage_ensure(cuda_net_t *cn)
{
    size_t bytes;
    symcoll_status_t status;
    cudaError_t err;

    if (cn->has_stage)
        return SYMCOLL_OK;
    cn->slot_bytes =
        (cn->comm->config.cuda_net_chunk + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    cn->node_off = (size_t)cn->nslots * cn->slot_bytes;
    bytes = cn->node_off + POOL_ALIGN;
    status = pool_alloc(cn->host_pool, bytes, POOL_ALLOC_STAGING, &cn->stage_off);
    if (status != SYMCOLL_OK)
        return status;
    cn->stage = pool_peer_addr(cn->host_pool, pool_local_rank(cn->host_pool), cn->stage_off);
    /* before the channels start (an agreement among all ranks): no peer raises it earlier */
    __atomic_store_n((uint32_t *)(cn->stage + cn->node_off), 0u, __ATOMIC_RELEASE);
    /* pinned, or nothing: a copy from pageable memory to the GPU reads its source when it
     * is queued, long before the channel has reduced the chunk */
    err = cudaHostRegister(cn->stage, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    cn->we_pinned = err == cudaSuccess;
    if (err == cudaErrorHostMemoryAlreadyRegistered) {
        /* UCX with CUDA support (cuda_copy) pinned the pool's segments when it registered
         * them (portable): fine, if both ends of the staging are pinned host memory */
        (void)cudaGetLastError();
        err = cnet_pinned(cn->stage) && cnet_pinned(cn->stage + bytes - 1)
                  ? cudaSuccess
                  : cudaErrorHostMemoryAlreadyRegistered;
        if (err == cudaSuccess)
            log_debug("CUDA across nodes: the host staging was pinned already (by UCX)");
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        pool_free(cn->host_pool, cn->stage_off);
        log_error("CUDA across nodes: cannot pin %zu bytes of host staging (%s)", bytes,
                  cudaGetErrorString(err));
        return SYMCOLL_ERR_CUDA;
    }
    cn->has_stage = true;
    {
        /* the small-call kernel reads and writes the slots directly; portable and
         * mapped: the same view serves every device where host pointers are unified */
        void *dev = NULL;
        bool mapped = cudaHostGetDevicePointer(&dev, cn->stage, 0) == cudaSuccess;
        cn->stage_dev = mapped && dev == (void *)cn->stage ? cn->stage : NULL;
        cn->node_word_dev =
            mapped ? (const volatile uint32_t *)((char *)dev + cn->node_off) : NULL;
        (void)cudaGetLastError();
    }
    return SYMCOLL_OK;
}

/* ---- waiting for the GPU to leave the staging ----------------------------------------- */

/* Waits (caller's thread) until the all-gather of every queued hierarchical call ran:
 * then no queued kernel uses the CUDA pool's staging or the hier word. */
symcoll_status_t cnet_wait_hier(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);

    if (!cn->hier_seq || cnet_poll_word(cn->words + CNET_HIER_LINE(cn), (uint32_t)cn->hier_seq,
                                        &dl) == SYMCOLL_OK)
        return SYMCOLL_OK;
    log_error("CUDA across nodes: the GPU did not finish the hierarchical call %llu in %.0f s",
              (unsigned long long)cn->hier_seq, cn->comm->timeout_sec);
    return SYMCOLL_ERR_TIMED_OUT;
}

/* Waits (caller's thread) until every copy out queued so far has run: then no queued
 * stream work reads or writes the slots or the words any more. Needs no CUDA call, so
 * it waits for this communicator's work only, on whatever device it runs. */
symcoll_status_t cnet_wait_quiet(cuda_net_t *cn)
{
    deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);

    for (int slot = 0; slot < cn->nslots; slot++)
        if (cn->last_freed[slot] &&
            cnet_poll_word(cnet_word(cn, CNET_FREED, slot), (uint32_t)cn->last_freed[slot],
                           &dl) != SYMCOLL_OK)
            return SYMCOLL_ERR_TIMED_OUT;
    if (cnet_direct_wait_quiet(cn) != SYMCOLL_OK)
        return SYMCOLL_ERR_TIMED_OUT;
    return cnet_wait_hier(cn);
}

/* ---- the node word --------------------------------------------------------------------- */

/* A rank of this node (this one included) raised the node word: it gave up. */
bool cnet_node_failed(const cuda_net_t *cn)
{
    return cn->has_stage &&
           __atomic_load_n((const uint32_t *)(cn->stage + cn->node_off), __ATOMIC_ACQUIRE) != 0;
}

/* This rank gave up on the communicator: every rank of the node hears it through its
 * node word (a store through the host pool mapping; any thread, no CUDA call), so that
 * their hierarchical kernels stop waiting for this rank's. */
void cnet_tell_node(cuda_net_t *cn)
{
    if (!cn->has_stage)
        return;
    for (int j = 0; j < pool_local_size(cn->host_pool); j++)
        __atomic_store_n((uint32_t *)((char *)pool_peer_addr(cn->host_pool, j, cn->stage_off) +
                                      cn->node_off),
                         1u, __ATOMIC_RELEASE);
}
