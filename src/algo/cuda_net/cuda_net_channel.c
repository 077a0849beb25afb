/* The channels of CUDA memory across nodes: progress threads that move the chunks of the
 * queued operations across the nodes over UCX, their failure handling, start and stop. */
#include "algo/cuda_net/cuda_net_int.h"

#include <stdlib.h>
#include <string.h>

#include "algo/net/net.h"
#include "bootstrap/bootstrap.h"
#include "topo/topo.h"

/* how long an idle channel polls the queue before it sleeps (the next call of a loop
 * usually comes within microseconds) */
#define CNET_IDLE_SPIN_SEC 0.02
/* channels other than 0 only get chunks of calls of several chunks, which last long enough
 * that a wake-up does not show: they poll briefly, not to keep cores busy (and a stream
 * of one-chunk calls neither wakes them nor waits for them: cnet_sched_t) */
#define CNET_IDLE_SPIN_OTHER_SEC 0.0005
/* how often an idle channel 0 looks for its peers' failure notices (cnet_listens) */
#define CNET_LISTEN_SEC 0.05

/* Waits until the GPU copied chunk g into its slot, keeping UCX progressing (peers may
 * be sending to us meanwhile). */
static symcoll_status_t cnet_wait_ready(cnet_channel_t *ch, uint64_t g, const deadline_t *dl)
{
    cuda_net_t *cn = ch->cn;
    volatile uint32_t *w = cnet_word(cn, CNET_READY, cnet_slot(g, cn->nslots));
    unsigned iter = 0;
    symcoll_status_t status;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), (uint32_t)(g + 1))) {
        /* another channel failed, or the caller could not queue the whole pipeline: this
         * chunk may never come */
        status = (symcoll_status_t)atomic_load_explicit(&cn->comm->algo->broken,
                                                        memory_order_relaxed);
        if (status == SYMCOLL_OK && cnet_node_failed(cn))
            status = SYMCOLL_ERR_PEER_FAILED; /* a rank of the node gave up */
        if (status != SYMCOLL_OK)
            return status;
        status = ucx_progress(ch->ucx);
        if (status == SYMCOLL_OK)
            status = deadline_check(dl);
        if (status != SYMCOLL_OK) {
            log_error("CUDA all-reduce across nodes: gave up waiting for the GPU's copy of "
                      "chunk %llu (%s)",
                      (unsigned long long)g, symcoll_status_string(status));
            return status;
        }
        core_spin_pause(&iter);
    }
    return SYMCOLL_OK;
}

static void cnet_raise_done(cuda_net_t *cn, uint64_t g)
{
    __atomic_store_n(cnet_word(cn, CNET_DONE, cnet_slot(g, cn->nslots)), (uint32_t)(g + 1),
                     __ATOMIC_RELEASE);
}

/* The channel's first chunk at or after chunk k of a call: chunk k goes to channel k mod
 * channels, so a one-chunk call always goes to channel 0, which stays hot while the others may
 * sleep. */
static uint64_t cnet_channel_chunk(const cnet_channel_t *ch, uint64_t k)
{
    uint64_t L = (uint64_t)ch->cn->nchannels;
    return k + ((uint64_t)ch->index + L - k % L) % L;
}

static symcoll_status_t cnet_run(cnet_channel_t *ch, const cnet_op_t *op, uint64_t *k_p)
{
    cuda_net_t *cn = ch->cn;
    size_t chunk = op->chunk;
    symcoll_status_t status = SYMCOLL_OK;
    double t0 = time_now(), t;
    bool first = true;
    /* every chunk agrees on the whole call: chunks of calls of different counts may be
     * of the same size */
    net_sig_t sig = {op->count, op->dtype, op->op, SYMCOLL_MEM_CUDA, op->salt, op->call_algo};

    for (*k_p = cnet_channel_chunk(ch, 0); *k_p < op->nchunks;
         *k_p += (uint64_t)cn->nchannels) {
        uint64_t k = *k_p, g = op->first + k;
        /* per chunk: the timeout bounds a wait, not a whole (possibly huge) message */
        deadline_t dl = deadline_make(cn->comm->timeout_sec, &cn->comm->aborted);
        size_t off = (size_t)k * chunk, n = op->count - off < chunk ? op->count - off : chunk;
        char *slot = cn->stage + (size_t)cnet_slot(g, cn->nslots) * cn->slot_bytes;

        status = cnet_wait_ready(ch, g, &dl);
        t = time_now();
        if (first)
            ch->t_wait_in += t - t0;
        first = false;
        if (status == SYMCOLL_OK && op->group)
            status = algo_net_group_allreduce_on(cn->comm, ch->ucx, cn->host_pool, slot, n,
                                                 op->dtype, op->op, &sig);
        else if (status == SYMCOLL_OK)
            status =
                algo_net_allreduce_on(cn->comm, ch->ucx, cn->host_pool,
                                      k + 1 == op->nchunks ? op->algo_last : op->algo_chunk,
                                      slot, slot, n, op->dtype, op->op, &sig);
        ch->t_net += time_now() - t;
        if (status != SYMCOLL_OK)
            return status;
        cnet_raise_done(cn, g);
    }
    return SYMCOLL_OK;
}

/* Tells this channel's peers once that it gave up: their waits on it end now rather than at
 * their deadline (each channel tells its own peers: only its thread uses its worker). */
static void cnet_channel_tell(cnet_channel_t *ch)
{
    if (ch->told_peers)
        return;
    symcoll_status_t why = algo_broken(ch->cn->comm);

    ch->told_peers = true;
    /* the communicator's failure says what happened (ABORTED only for an abort) */
    if (why == SYMCOLL_OK)
        why = SYMCOLL_ERR_ABORTED;
    algo_net_channel_abort(ch->ucx, ch->cn->host_pool, why);
}

/* Raises "done" for chunk g that this channel gives up on. Not before the slot's previous
 * chunk g - S is done: the stream's wait for that one is "at least", so raising ours
 * first would let the stream take the previous chunk out of the slot while its own channel
 * still reduces it, corrupting a call that may have succeeded. The previous chunk's channel
 * gets there: either it finishes or, seeing the failure, gives its chunks up the same
 * way (only ever waiting for lower chunk numbers). */
static void cnet_give_up_chunk(cnet_channel_t *ch, uint64_t g)
{
    cuda_net_t *cn = ch->cn;
    uint64_t ns = (uint64_t)cn->nslots;

    if (g >= ns) {
        volatile uint32_t *w = cnet_word(cn, CNET_DONE, cnet_slot(g, cn->nslots));
        deadline_t dl = deadline_make(cn->comm->timeout_sec, NULL);
        unsigned iter = 0;
        while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), (uint32_t)(g - ns + 1))) {
            (void)ucx_progress(ch->ucx);
            if (deadline_check(&dl) != SYMCOLL_OK) {
                log_error("CUDA across nodes: chunk %llu of the same slot was not released in "
                          "%.0f s; releasing chunk %llu anyway",
                          (unsigned long long)(g - ns), cn->comm->timeout_sec,
                          (unsigned long long)g);
                break;
            }
            core_spin_pause(&iter);
        }
    }
    cnet_raise_done(cn, g);
}

/* This channel saw a failure (when: where, for the log): the communicator is broken for
 * good, the node's kernels stop waiting for this rank, and this channel's peers hear it. */
static void cnet_channel_break(cnet_channel_t *ch, symcoll_status_t status, const char *when)
{
    int ok = SYMCOLL_OK;

    if (atomic_compare_exchange_strong(&ch->cn->comm->algo->broken, &ok, (int)status))
        log_error("CUDA all-reduce across nodes failed%s (%s); its streams are released and "
                  "later calls on this communicator fail",
                  when, symcoll_status_string(status));
    cnet_tell_node(ch->cn); /* idempotent; a channel runs only while the staging exists */
    cnet_channel_tell(ch);
}

/* The operation failed for this channel (its own failure, another channel's, the caller's):
 * make it sticky, tell this channel's peers once, release the channel's remaining chunks. */
static void cnet_channel_fail(cnet_channel_t *ch, const cnet_op_t *op, uint64_t k,
                              symcoll_status_t status)
{
    cuda_net_t *cn = ch->cn;

    cnet_channel_break(ch, status, "");
    if (op->direct) {
        cnet_direct_give_up(ch, op, k);
        return;
    }
    /* release the stream: every chunk of this channel not done yet is "done" (its result is
     * undefined); a slot's next copy in still waits for its copy out */
    for (k = cnet_channel_chunk(ch, k); k < op->nchunks; k += (uint64_t)cn->nchannels)
        cnet_give_up_chunk(ch, op->first + k);
}

/* The communicator was aborted or broke (the caller's failure, another channel's) and this
 * channel, idle, has not told its peers yet (each channel tells its own peers on its own
 * worker). */
static bool cnet_must_tell(const cnet_channel_t *ch)
{
    return !ch->told_peers && (atomic_load_explicit(&ch->cn->aborted, memory_order_acquire) ||
                               atomic_load_explicit(&ch->cn->comm->algo->broken,
                                                    memory_order_relaxed) != SYMCOLL_OK);
}

/* No work has been queued for this channel since it last looked (it may still have some
 * that it skipped past: cnet_sched_next decides; this only saves it the mutex while it
 * polls). Channel 0 has chunks in every call; the others only in calls of several chunks. */
static bool cnet_nothing_new(const cnet_channel_t *ch)
{
    const cnet_sched_t *s = &ch->cn->sched;
    uint64_t pos = __atomic_load_n(&s->pos[ch->index], __ATOMIC_RELAXED);

    return (ch->index == 0 ? cnet_sched_end(s) : cnet_sched_multi_end(s)) <= pos;
}

/* Whether this channel, idle, keeps listening for its peers' failure notices: channel 0 (it has
 * a chunk in every operation, so its peers' channel 0 tell it whenever they fail; only its
 * thread may progress its worker), until it has given up itself. Else a
 * rank whose last operation finished here but failed elsewhere hears nothing until its
 * next call, while its node's hierarchical kernels may wait for a rank that died until
 * their timeout. */
static bool cnet_listens(const cnet_channel_t *ch)
{
    return ch->index == 0 && !ch->told_peers && !ch->cn->quiet;
}

static void *cnet_channel_main(void *arg)
{
    cnet_channel_t *ch = arg;
    cuda_net_t *cn = ch->cn;
    cnet_op_t op;
    symcoll_status_t status;
    uint64_t k, opi, finished;
    bool have, listen, quick_sleep = false;
    double t0;

    log_set_rank(cn->comm->rank);
    for (;;) {
        /* after a listening turn, back to sleep at once (no polling: an idle
         * communicator should not cost a core) */
        double idle_until = time_now() + (quick_sleep      ? 0
                                          : ch->index == 0 ? CNET_IDLE_SPIN_SEC
                                                           : CNET_IDLE_SPIN_OTHER_SEC);
        unsigned iter = 0;

        quick_sleep = false;
        /* poll first: a loop of calls should not pay a wake-up each */
        while (cnet_nothing_new(ch) && time_now() < idle_until &&
               !__atomic_load_n(&cn->stop, __ATOMIC_ACQUIRE) && !cnet_must_tell(ch))
            core_spin_pause(&iter);
        pthread_mutex_lock(&cn->mu);
        listen = false;
        while (!(have = cnet_sched_next(&cn->sched, ch->index, &opi)) && !cn->stop &&
               !cnet_must_tell(ch) && !listen) {
            /* only channel 0 says whether it sleeps: another channel going to sleep or waking
             * must not clear it (a one-chunk call would then not wake channel 0, which has
             * its only chunk, and the peers' channels would wait for it in vain) */
            if (ch->index == 0)
                cn->channel0_asleep = true;
            if (cnet_listens(ch))
                listen = cnet_timed_wait(&cn->work, &cn->mu, CNET_LISTEN_SEC);
            else
                pthread_cond_wait(&cn->work, &cn->mu);
            if (ch->index == 0)
                cn->channel0_asleep = false;
        }
        if (listen && !have) {
            /* idle channel 0 looks for failure notices of its peers (see cnet_listens), under
             * the mutex: the caller sets quiet under it before it changes the regions UCX
             * reads (pool growth) */
            status = cn->quiet ? SYMCOLL_OK : ucx_progress(ch->ucx);
            pthread_mutex_unlock(&cn->mu);
            if (status != SYMCOLL_OK)
                cnet_channel_break(ch, status, " while no operation was queued");
            quick_sleep = true;
            continue;
        }
        if (cnet_must_tell(ch)) {
            /* aborted or broken while idle: peers whose channels wait on this one, and the
             * node's kernels, hear it now */
            pthread_mutex_unlock(&cn->mu);
            cnet_channel_break(ch, SYMCOLL_ERR_ABORTED, " (aborted)");
            continue;
        }
        if (!have) {
            pthread_mutex_unlock(&cn->mu);
            break; /* stop, nothing left */
        }
        op = cn->q[opi % CNET_QUEUE];
        pthread_mutex_unlock(&cn->mu);

        status = (symcoll_status_t)atomic_load(&cn->comm->algo->broken);
        t0 = time_now();
        k = 0;
        if (status == SYMCOLL_OK)
            status = op.direct ? cnet_run_direct(ch, &op, &k) : cnet_run(ch, &op, &k);
        if (status != SYMCOLL_OK)
            cnet_channel_fail(ch, &op, k, status);
        ch->t_busy += time_now() - t0;

        pthread_mutex_lock(&cn->mu);
        finished = cnet_sched_finish(&cn->sched, ch->index);
        if (finished) {
            cn->nops += finished;
            pthread_cond_broadcast(&cn->idle);
        }
        pthread_mutex_unlock(&cn->mu);
    }
    return NULL;
}

/* Stops the channels (queue drained: caller's thread) and destroys their UCX workers
 * (collective, like their creation). */
void cnet_channels_stop(cuda_net_t *cn)
{
    if (!cn->running)
        return;
    pthread_mutex_lock(&cn->mu);
    cn->stop = true;
    pthread_cond_broadcast(&cn->work);
    pthread_mutex_unlock(&cn->mu);
    for (int i = 0; i < cn->nchannels; i++) {
        cnet_channel_t *ch = &cn->channels[i];
        if (ch->started)
            pthread_join(ch->thread, NULL);
        ch->started = false;
        cn->t_wait_in += ch->t_wait_in;
        cn->t_net += ch->t_net;
        cn->t_busy += ch->t_busy;
        ch->t_wait_in = ch->t_net = ch->t_busy = 0;
    }
    for (int i = 0; i < cn->nchannels; i++) {
        cnet_channel_t *ch = &cn->channels[i];
        if (ch->ucx)
            algo_net_channel_destroy(ch->ucx, cn->host_pool);
        ch->ucx = NULL;
    }
    cn->stop = false;
    cn->running = false;
}

/* The channels' scratch, reserved for the selector's own algorithms when they started,
 * made to serve algo too on every chunk, the first time a call forces it: the queue
 * drained (the channels idle), each channel's scratch reserved again (pool calls,
 * collective: every rank forces the same algorithm on the same call). */
symcoll_status_t cnet_cover(cuda_net_t *cn, topo_algo_t algo)
{
    symcoll_status_t status;

    if ((unsigned)algo >= 32 || (cn->covered & (1u << algo)))
        return SYMCOLL_OK;
    status = cnet_wait_queued(cn, 0);
    for (int i = 0; i < cn->nchannels && status == SYMCOLL_OK; i++) {
        net_state_t *st;
        status = algo_net_state_get_on(cn->comm, cn->channels[i].ucx, cn->host_pool, &st);
        if (status == SYMCOLL_OK)
            status = algo_net_reserve_upto(st, cn->slot_bytes, true, algo);
    }
    if (status == SYMCOLL_OK)
        cn->covered |= 1u << algo;
    return status;
}

/* Starts the channels (queue empty: caller's thread; collective), each on a UCX channel of its
 * own (a worker and connections), whose algorithm scratch is reserved here for the chunk
 * size: channel threads never grow the pool. One channel too: a channel never shares the
 * communicator's worker with the caller's thread. */
symcoll_status_t cnet_channels_start(cuda_net_t *cn)
{
    symcoll_status_t status = SYMCOLL_OK;

    cn->running = true;
    cn->covered = 0; /* new channels: the selector's algorithms only */
    for (int i = 0; i < cn->nchannels && status == SYMCOLL_OK; i++) {
        cnet_channel_t *ch = &cn->channels[i];
        net_state_t *st;
        memset(ch, 0, sizeof(*ch));
        ch->cn = cn;
        ch->index = i;
        status = ucx_channel_create(cn->comm->ucx, &ch->ucx);
        if (status != SYMCOLL_OK)
            break;
        status = algo_net_state_get_on(cn->comm, ch->ucx, cn->host_pool, &st);
        if (status == SYMCOLL_OK)
            status = algo_net_reserve_upto(st, cn->slot_bytes, true, TOPO_ALGO_AUTO);
    }
    cnet_sched_restart_channels(&cn->sched); /* the queue is empty: they start at its end */
    for (int i = 0; i < cn->nchannels && status == SYMCOLL_OK; i++) {
        cnet_channel_t *ch = &cn->channels[i];
        if (pthread_create(&ch->thread, NULL, cnet_channel_main, ch)) {
            log_error("CUDA all-reduce across nodes: cannot start channel thread %d", i);
            status = SYMCOLL_ERR_SYSTEM;
            break;
        }
        ch->started = true;
    }
    /* every rank started its channels, or all stop them together (stopping is collective);
     * the steps above that talk to the others fail on every rank alike */
    {
        /* the lowest rank that failed (nranks: none) */
        int64_t failed = status == SYMCOLL_OK ? cn->comm->nranks : cn->comm->rank;
        symcoll_status_t bs =
            bootstrap_allreduce(cn->comm->bootstrap, &failed, 1, BOOTSTRAP_OP_MIN);
        if (bs != SYMCOLL_OK && status == SYMCOLL_OK)
            status = bs;
        if (status == SYMCOLL_OK && failed < cn->comm->nranks) {
            log_error("CUDA all-reduce across nodes: rank %d could not start its channels",
                      (int)failed);
            status = SYMCOLL_ERR_SYSTEM;
        }
    }
    if (status != SYMCOLL_OK)
        cnet_channels_stop(cn);
    return status;
}
