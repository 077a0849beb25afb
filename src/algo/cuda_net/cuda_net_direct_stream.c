/* A direct call of CUDA memory across nodes queued (cuda_net_int.h): its operation for
 * channel 0 and its pipeline on the caller's stream (copies in, waits, the reductions). */
#include "algo/cuda_net/cuda_net_int.h"

#include <string.h>

#include "cuda/net_direct.h"
#include "topo/topo.h"

_Static_assert(TOPO_CUDA_DIRECT_MAX_RANKS <= CUDA_NET_REDUCE_MAX,
               "the direct path reduces every rank's data in one kernel");

/* the call's tag in a flag's upper half: every rank of the call agrees on it */
static uint32_t cnet_direct_tag(const cnet_op_t *o)
{
    uint64_t h = 1469598103934665603ull;
    uint64_t v[5] = {o->count, (uint64_t)o->dtype, (uint64_t)o->op, o->salt,
                     (uint64_t)o->call_algo};

    for (int i = 0; i < 5; i++) {
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

/* chunk k's input ready for the channel: copied into its in slot unless it is in the pool */
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
    o.call_algo = (int)cn->comm->topo->select_cfg.call_forced;
    o.direct = true;
    /* an input in the pool is put from where it is (registered with UCX) */
    o.src = pool_lookup(d->cuda_pool, sendbuf, count * esize, &off) ? sendbuf : NULL;
    o.tag = cnet_direct_tag(&o);
    o.first = d->next;
    o.nchunks = (count + o.chunk - 1) / o.chunk;
    d->next += o.nchunks;

    /* channel 0 takes it (the queue: one "chunk" for the scheduler), in call order */
    pthread_mutex_lock(&cn->mu);
    cn->quiet = false;
    cn->q[cn->sched.end % CNET_QUEUE] = o;
    (void)cnet_sched_push(&cn->sched, 1);
    if (cn->channel0_asleep)
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
