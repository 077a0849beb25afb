/* The queue of CUDA memory across nodes seen from the caller's thread: waiting for room,
 * draining it, and a staged call queued: its operation for the channels and its pipeline on
 * the caller's stream (stream commands or the small-call kernel). */
#include "algo/cuda_net/cuda_net_int.h"

#include <string.h>

#include "cuda/kernels.h"
#include "cuda/net_direct.h"
#include "topo/select.h"
#include "topo/topo.h"

/* Waits until at most max operations are queued. The timeout counts from the last one
 * that finished: queued operations wait for their streams, which may hold long work. */
symcoll_status_t cnet_wait_queued(cuda_net_t *cn, uint64_t max)
{
    comm_t *comm = cn->comm;
    deadline_t dl = deadline_make(comm->timeout_sec, NULL);
    uint64_t seen;
    symcoll_status_t status = SYMCOLL_OK;

    pthread_mutex_lock(&cn->mu);
    seen = cn->sched.head;
    while (cnet_sched_queued(&cn->sched) > max) {
        (void)cnet_timed_wait(&cn->idle, &cn->mu, 0.01);
        if (cn->sched.head != seen) {
            seen = cn->sched.head;
            dl = deadline_make(comm->timeout_sec, NULL);
        } else if (deadline_check(&dl) != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes: no queued operation finished in %.0f s",
                      comm->timeout_sec);
            status = SYMCOLL_ERR_TIMED_OUT;
            break;
        }
    }
    pthread_mutex_unlock(&cn->mu);
    return status;
}

symcoll_status_t algo_cuda_net_drain(comm_t *comm)
{
    cuda_net_t *cn = comm->algo->cuda_net;
    symcoll_status_t status;

    if (!cn)
        return SYMCOLL_OK;
    status = cnet_wait_queued(cn, 0);
    /* and the hierarchical calls' all-gather kernels: a trim may free their staging. They
     * wait for this node's other ranks, whose channels may still need ours to progress (an
     * idle channel 0 progresses, every CNET_LISTEN_SEC, only while not quiet) */
    if (status == SYMCOLL_OK)
        status = cnet_wait_hier(cn);
    pthread_mutex_lock(&cn->mu);
    cn->quiet = true;
    pthread_mutex_unlock(&cn->mu);
    if (status == SYMCOLL_OK)
        status = (symcoll_status_t)atomic_load(&cn->comm->algo->broken);
    return status;
}

/* Queues one step of the schedule (algo/cuda_net/cuda_net_sched.c) on the caller's stream. */
typedef struct cnet_queue {
    cuda_net_t *cn;
    cudaStream_t s;
    const cnet_op_t *o;
    const char *send;
    char *recv;
} cnet_queue_t;

symcoll_status_t cnet_stream_wait(cuda_net_t *cn, cudaStream_t s, CUdeviceptr w, uint32_t value,
                                  unsigned flags)
{
    CUresult res;

    if (cn->direct.wait_kernel) {
        cudaError_t err = (cudaError_t)cuda_net_wait_launch((const void *)(uintptr_t)w, value,
                                                            (const void *)cn->node_word_dev, s);
        if (err != cudaSuccess)
            return cuda_rt_error(err, "CUDA across nodes: the stream's wait");
        if (!flags)
            return SYMCOLL_OK;
        /* the value is there by now: this one only flushes remote writes */
    }
    res = cn->drv->stream_wait_value32(s, w, value, CU_STREAM_WAIT_VALUE_GEQ | flags);
    return res == CUDA_SUCCESS ? SYMCOLL_OK : cuda_drv_error(res, "cuStreamWaitValue32");
}

static symcoll_status_t cnet_queue_cmd(void *arg, const cnet_cmd_t *c)
{
    cnet_queue_t *q = arg;
    cuda_net_t *cn = q->cn;
    size_t esize = symcoll_dtype_size(q->o->dtype), chunk = q->o->chunk;
    size_t first = (size_t)c->k * chunk;
    size_t n = q->o->count - first < chunk ? q->o->count - first : chunk;
    char *slot = cn->stage + (size_t)c->slot * cn->slot_bytes;
    CUresult res;
    cudaError_t err;

    switch (c->kind) {
    case CNET_CMD_WAIT:
        return cnet_stream_wait(cn, q->s, cnet_word_dev(cn, c->word, c->slot), c->value, 0);
    case CNET_CMD_WRITE:
        res = cn->drv->stream_write_value32(q->s, cnet_word_dev(cn, c->word, c->slot), c->value,
                                            0);
        if (res != CUDA_SUCCESS)
            return cuda_drv_error(res, "cuStreamWriteValue32");
        if (c->word == CNET_FREED)
            cn->last_freed[c->slot] = q->o->first + c->k + 1;
        return SYMCOLL_OK;
    case CNET_CMD_COPY_IN:
        err = cudaMemcpyAsync(slot, q->send + first * esize, n * esize, cudaMemcpyDeviceToHost,
                              q->s);
        return err == cudaSuccess ? SYMCOLL_OK
                                  : cuda_rt_error(err, "CUDA across nodes: copy to the host");
    case CNET_CMD_COPY_OUT:
        err = cudaMemcpyAsync(q->recv + first * esize, slot, n * esize, cudaMemcpyHostToDevice,
                              q->s);
        return err == cudaSuccess ? SYMCOLL_OK
                                  : cuda_rt_error(err, "CUDA across nodes: copy from the host");
    }
    return SYMCOLL_ERR_INTERNAL;
}

/* A one-chunk call as one kernel: the same commands as cnet_steps queues for it (wait for
 * the slot's "freed", copy in, "ready", wait for "done", copy out, "freed"), run by the
 * GPU in one launch; measured faster than six stream commands for small messages. */
static symcoll_status_t cnet_queue_small(cuda_net_t *cn, cudaStream_t s, const cnet_op_t *o,
                                         const void *sendbuf, void *recvbuf)
{
    uint64_t g = o->first, ns = (uint64_t)cn->nslots;
    int slot = cnet_slot(g, cn->nslots);
    cuda_net_small_args_t a;
    cudaError_t err;

    memset(&a, 0, sizeof(a));
    a.send = sendbuf;
    a.recv = recvbuf;
    a.bytes = o->count * symcoll_dtype_size(o->dtype);
    a.slot = cn->stage_dev + (size_t)slot * cn->slot_bytes;
    a.ready = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_READY, slot);
    a.done = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_DONE, slot);
    a.freed = (uint32_t *)(uintptr_t)cnet_word_dev(cn, CNET_FREED, slot);
    a.value = (uint32_t)(g + 1);
    a.has_wait = g >= ns;
    a.wait_freed = (uint32_t)(g - ns + 1);
    err = (cudaError_t)cuda_net_small_launch(&a, s);
    if (err != cudaSuccess)
        return cuda_rt_error(err, "CUDA across nodes: staging kernel");
    cn->last_freed[slot] = g + 1;
    return SYMCOLL_OK;
}

/* Queues one operation for the channels and its pipeline on the stream (the staging is in
 * place). On failure the communicator is broken: the channels stop waiting for its chunks. */
symcoll_status_t cnet_enqueue(cuda_net_t *cn, cudaStream_t s, const void *sendbuf,
                              void *recvbuf, size_t count, symcoll_dtype_t dtype,
                              symcoll_op_t op, bool group, topo_algo_t forced)
{
    const size_t esize = symcoll_dtype_size(dtype);
    symcoll_status_t status;
    cnet_op_t o;
    size_t chunk;

    /* a free queue entry: the channels free one per operation */
    status = cnet_wait_queued(cn, CNET_QUEUE - 1);
    if (status != SYMCOLL_OK)
        return status;
    memset(&o, 0, sizeof(o)); /* a staged operation: not direct, no source, no tag */
    chunk = topo_cuda_net_chunk(count * esize, cn->slot_bytes, cn->nchannels) / esize;
    if (chunk == 0)
        chunk = 1; /* count 0 never comes here; keep the division below defined anyway */
    o.chunk = chunk;
    o.count = count;
    o.dtype = dtype;
    o.op = op;
    o.group = group;
    o.salt = cn->comm->algo->salt;
    o.call_algo = (int)cn->comm->topo->select_cfg.call_forced;
    o.first = cn->next_chunk;
    o.nchunks = (count + chunk - 1) / chunk;
    {
        /* each chunk's host algorithm: what a call of its size would run, or what chose
         * the call's plan (symcoll_comm_set_algo, SYMCOLL_ALGO, a tuning file's entry);
         * a hierarchical slice's chunks run the group's own exchange */
        topo_select_cfg_t c = cn->comm->topo->select_cfg;
        const topo_shape_t *h = &cn->comm->topo->shape[SYMCOLL_MEM_HOST];
        c.forced = forced;
        o.algo_chunk = topo_select_algo(&c, h, SYMCOLL_MEM_HOST, chunk * esize);
        o.algo_last = topo_select_algo(&c, h, SYMCOLL_MEM_HOST,
                                       (count - (o.nchunks - 1) * chunk) * esize);
    }
    if (forced != TOPO_ALGO_AUTO) {
        status = cnet_cover(cn, o.algo_chunk);
        if (status == SYMCOLL_OK)
            status = cnet_cover(cn, o.algo_last);
        if (status != SYMCOLL_OK)
            return status;
    }
    cn->next_chunk += o.nchunks;

    /* the channels first: they wait for each chunk's "ready" anyway. Only channels with chunks
     * in it need to hear of it: channel 0 (if it sleeps) for a one-chunk call, every channel
     * for more */
    pthread_mutex_lock(&cn->mu);
    cn->quiet = false;
    cn->q[cn->sched.end % CNET_QUEUE] = o;
    (void)cnet_sched_push(&cn->sched, o.nchunks);
    if (o.nchunks > 1 || cn->channel0_asleep)
        pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);

    /* the pipeline on the caller's stream */
    if (o.nchunks == 1 && count * esize <= cn->comm->config.cuda_net_kernel_max &&
        cn->stage_dev && !cn->comm->topo->shape[SYMCOLL_MEM_CUDA].gpus_shared) {
        /* (not where a GPU serves two ranks: the kernel spins on the GPU until its channel
         * is done, which holds the other process's work on that GPU back, for
         * milliseconds a small call) */
        return cnet_queue_small(cn, s, &o, sendbuf, recvbuf);
    } else {
        cnet_queue_t q = {cn, s, &o, sendbuf, recvbuf};
        return cnet_steps(o.first, o.nchunks, cn->nslots, cnet_queue_cmd, &q);
    }
}
