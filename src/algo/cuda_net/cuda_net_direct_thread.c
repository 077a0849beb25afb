/* The direct path of CUDA memory across nodes on channel 0 (cuda_net_int.h): each chunk's puts
 * into the peers' scratch and its flags, or, once the operation failed, its release. */
#include "algo/cuda_net/cuda_net_int.h"

/* Waits until host-mapped word w reaches value, keeping UCX progressing. */
static symcoll_status_t cnet_channel_wait_word(cnet_channel_t *ch, volatile uint32_t *w,
                                               uint32_t value, const deadline_t *dl,
                                               const char *what, uint64_t g)
{
    cuda_net_t *cn = ch->cn;
    unsigned iter = 0;
    symcoll_status_t status;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), value)) {
        status = (symcoll_status_t)atomic_load_explicit(&cn->comm->algo->broken,
                                                        memory_order_relaxed);
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_progress(ch->ucx);
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

symcoll_status_t cnet_run_direct(cnet_channel_t *ch, const cnet_op_t *op, uint64_t *k_p)
{
    cuda_net_t *cn = ch->cn;
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

        status = cnet_channel_wait_word(ch, cnet_dword(cn, CNET_DREADY, slot),
                                        (uint32_t)(g + 1), &dl, "the GPU's input", g);
        if (k == 0)
            ch->t_wait_in += time_now() - t0;
        t = time_now();
        /* our scratch slot of chunk g + 1 - S was reduced: see cuda_net_int.h */
        if (status == SYMCOLL_OK && g + 2 > CNET_DSLOTS)
            status = cnet_channel_wait_word(ch, cnet_dword(cn, CNET_DCONS, 0),
                                            (uint32_t)(g + 2 - CNET_DSLOTS), &dl,
                                            "the GPU's reduction", g + 1 - CNET_DSLOTS);
        for (int i = 0; i < n && status == SYMCOLL_OK; i++)
            if (i != me)
                status = ucx_put_rma(ch->ucx, d->grank[i], src, bytes, dst);
        /* the group's endpoints only: the worker's others may hold operations whose
         * completion needs a rank that no longer progresses (on TCP, one in a pool trim
         * whose hierarchical kernels wait for this step) */
        if (status == SYMCOLL_OK)
            status = ucx_flush_peers(ch->ucx, d->grank, n, &dl);
        for (int i = 0; i < n && status == SYMCOLL_OK; i++)
            if (i != me)
                status = ucx_put_flag(ch->ucx, d->grank[i], flag,
                                      cnet_dflag(d, slot, comm->rank, comm->nranks));
        if (status == SYMCOLL_OK)
            status = cnet_dflags_wait(cn, ch->ucx, slot, (uint32_t)(g + 1), true, &dl);
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
        ch->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            return status;
        __atomic_store_n(cnet_dword(cn, CNET_DDONE, slot), (uint32_t)(g + 1), __ATOMIC_RELEASE);
    }
    return SYMCOLL_OK;
}

void cnet_direct_give_up(cnet_channel_t *ch, const cnet_op_t *op, uint64_t k)
{
    /* one channel runs every direct chunk, in order: the slot's earlier chunks are done */
    for (; k < op->nchunks; k++) {
        uint64_t g = op->first + k;
        __atomic_store_n(cnet_dword(ch->cn, CNET_DDONE, (int)(g % CNET_DSLOTS)),
                         (uint32_t)(g + 1), __ATOMIC_RELEASE);
    }
}
