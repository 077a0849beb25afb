/* The staging of the CUDA all-reduce kernels in the CUDA pool: how much a message needs,
 * and making it hold one. */
/*
 * Staging: one-shot uses 2 parities x n sources x slot bytes, allocated once (slot from
 * SYMCOLL_CUDA_ONESHOT_MAX); two-shot (n-1) input slices plus a full-size results area,
 * allocated at the largest size seen. A larger size makes the staging grow: the stream
 * is synchronised first (the old space may still be in use by this rank's kernels; the
 * peers' uses of it ended before this rank's kernels did), then the old space is freed
 * and a new one allocated collectively. Every rank reaches the same decision from the
 * same arguments. Under stream capture no staging may grow: the call fails with
 * SYMCOLL_ERR_IN_PROGRESS and says to warm up; a first staging is made there without an
 * exchange where the pool has room for it (symcoll_pool_reserve), so that a capture
 * needs no warm-up.
 */
#include "algo/cuda/cuda_int.h"

#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "bootstrap/bootstrap.h"
#include "cuda/cuda.h"
#include "topo/topo.h"

/* The staging algo needs for a message of bytes bytes: slot bytes a source, the
 * two-shot results area at out, size in all. */
static void stage_need(const comm_t *comm, const cuda_algo_state_t *st, int algo, size_t bytes,
                       size_t *slot_p, size_t *out_p, size_t *size_p)
{
    size_t slot, out = 0, size;

    if (algo == CUDA_AR_ONESHOT) {
        /* the largest size the selector sends one-shot here (scaled with the GPU count) */
        size_t max = topo_choose_oneshot_max(comm->topo, SYMCOLL_MEM_CUDA);
        size_t want = max == SIZE_MAX || bytes > max ? bytes : max;
        slot = round_up(want + 16, POOL_ALIGN);
        size = 2 * (size_t)st->n * slot;
    } else if (algo == CUDA_AR_LL) {
        /* 16-byte records of 8 payload bytes */
        slot = round_up((comm->config.cuda_ll_max + 7) / 8 * 16, POOL_ALIGN);
        size = 2 * (size_t)st->n * slot;
    } else {
        size_t nvec = bytes / 16 + 1;
        slot = round_up((nvec + st->n - 1) / st->n * 16 + 16, POOL_ALIGN);
        out = (size_t)(st->n - 1) * slot;
        size = out + round_up(bytes + 16, POOL_ALIGN);
    }
    *slot_p = slot;
    *out_p = out;
    *size_p = size;
}

bool algo_cuda_stage_fits(const comm_t *comm, const cuda_algo_state_t *st, int algo,
                          size_t bytes)
{
    size_t slot, out, size;

    stage_need(comm, st, algo, bytes, &slot, &out, &size);
    return st->has_stage[algo] && st->stage_slot[algo] >= slot &&
           (algo != CUDA_AR_TWOSHOT || st->stage_out >= out);
}

/* The old staging at off, outgrown: freed, or kept while live graphs use it. Collective
 * (a vote: every rank keeps it or none does, so that the pools stay alike). */
static symcoll_status_t stage_retire(pool_t *pool, cuda_algo_state_t *st, size_t off)
{
    /* {live graphs, no room to keep it}: a failure of one rank is every rank's */
    int64_t v[2] = {cuda_keep_graphs(st->keep), 0};
    symcoll_status_t status;

    if (st->nretired == st->cap_retired) {
        size_t cap = st->cap_retired ? 2 * st->cap_retired : 4;
        size_t *r = realloc(st->retired, cap * sizeof(*r));
        if (r) {
            st->retired = r;
            st->cap_retired = cap;
        } else {
            v[1] = 1;
        }
    }
    status = bootstrap_allreduce(pool_comm(pool)->bootstrap, v, 2, BOOTSTRAP_OP_MAX);
    if (status != SYMCOLL_OK)
        return status;
    if (v[1]) {
        log_error("out of memory on some rank for the list of outgrown CUDA staging");
        return SYMCOLL_ERR_NO_MEMORY;
    }
    if (v[0] > 0) {
        st->retired[st->nretired++] = off;
        log_debug("CUDA staging at pool offset %zu outgrown: kept while live graphs use it",
                  off);
        return SYMCOLL_OK;
    }
    /* no graph anywhere: this one and those kept before go */
    for (size_t k = 0; k < st->nretired; k++)
        (void)pool_free(pool, st->retired[k]);
    st->nretired = 0;
    return pool_free(pool, off);
}

symcoll_status_t algo_cuda_stage_alloc(pool_t *pool, cuda_algo_state_t *st, void *stream,
                                       const char *what, size_t size, bool *has, size_t *off)
{
    symcoll_status_t status;
    bool capturing = false;
    cudaError_t err;

    status = cuda_stream_capturing(stream, &capturing);
    if (status != SYMCOLL_OK)
        return status;
    if (capturing && *has) {
        log_error("%s: its CUDA staging must grow, which waits for the stream's earlier "
                  "work, but the stream is being captured into a graph; run the call with "
                  "this size once before the capture (warm-up)",
                  what);
        return SYMCOLL_ERR_IN_PROGRESS;
    }
    if (*has) {
        err = cudaStreamSynchronize((cudaStream_t)stream);
        if (err != cudaSuccess)
            return cuda_rt_error(err, "cudaStreamSynchronize");
        status = stage_retire(pool, st, *off);
        if (status != SYMCOLL_OK)
            return status;
        *has = false;
    }
    status = capturing ? pool_alloc_quiet(pool, size, POOL_ALLOC_STAGING, off)
                       : pool_alloc(pool, size, POOL_ALLOC_STAGING, off);
    if (status == SYMCOLL_OK)
        *has = true;
    return status;
}

/* Make sure the staging of algo holds a message of bytes bytes. */
symcoll_status_t algo_cuda_stage_ensure(pool_t *pool, cuda_algo_state_t *st, int algo,
                                        size_t bytes, void *stream)
{
    comm_t *comm = pool_comm(pool);
    size_t slot, out, size;
    symcoll_status_t status;

    stage_need(comm, st, algo, bytes, &slot, &out, &size);
    if (algo_cuda_stage_fits(comm, st, algo, bytes))
        return SYMCOLL_OK;
    if (algo == CUDA_AR_TWOSHOT) {
        /* grow by half again so that a slowly rising size does not re-stage every call */
        slot = round_up(slot + slot / 2, POOL_ALIGN);
        out = (size_t)(st->n - 1) * slot;
        size = out + round_up((bytes + bytes / 2) + 16, POOL_ALIGN);
    }
    status = algo_cuda_stage_alloc(pool, st, stream, "symcoll_allreduce", size,
                                   &st->has_stage[algo], &st->stage_off[algo]);
    if (status != SYMCOLL_OK)
        return status;
    st->stage_slot[algo] = slot;
    if (algo == CUDA_AR_TWOSHOT)
        st->stage_out = out;
    log_debug("CUDA %s staging: %zu bytes at pool offset %zu",
              algo == CUDA_AR_TWOSHOT ? "two-shot"
              : algo == CUDA_AR_LL    ? "LL"
                                      : "one-shot",
              size, st->stage_off[algo]);
    return SYMCOLL_OK;
}
