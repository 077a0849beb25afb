/* UCX layer: the process's UCP contexts, shared by the communicators, and the workers on
 * them (each communicator's own and its channels): creation, teardown and accessors. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "ucx/ucx_int.h"

bool ucx_is_remote(const ucx_ctx_t *ucx, int rank)
{
    return rank >= 0 && rank < ucx->nranks && ucx->peers[rank].remote;
}

const char *ucx_transports(const ucx_ctx_t *ucx)
{
    return ucx->shared->transports;
}

bool ucx_cuda_rma_native(const ucx_ctx_t *ucx)
{
    return ucx->shared->cuda_rma;
}

bool ucx_cuda_driver_lanes(const ucx_ctx_t *ucx)
{
    return ucx->shared->cuda_driver;
}

static symcoll_status_t ucx_init_worker(ucx_ctx_t *ucx)
{
    ucp_worker_params_t wparams;
    ucp_context_attr_t cattr;
    ucs_status_t s;

    memset(&wparams, 0, sizeof(wparams));
    /* one thread at a time uses a worker, not always the one that created it: the
     * communicator's lock serialises the calls on the owner's (from whichever thread
     * calls), and a channel, created by the owner's thread, is then used by its progress
     * thread. That is UCX's serialized mode; its single mode means the creating thread
     * only (UCX built with assertions aborts on any other). */
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    s = ucp_worker_create(ucx->shared->context, &wparams, &ucx->worker);
    if (s != UCS_OK) {
        log_error("ucp_worker_create: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    ucx->efd = -1;
    /* Arming a worker whose transports move CUDA memory (cuda_copy, cuda_ipc) calls the
     * CUDA driver (cuStreamAddCallback), which waits for a lock that another thread of the
     * process holds while it waits inside the driver (a stream synchronisation, a kernel
     * loaded on its first launch): a channel doing that while the caller's stream waits for
     * the channel never returns (seen on an H200 with cuda_ipc and cuda_copy). Such workers
     * never arm; their long waits nap (ucx_idle). */
    memset(&cattr, 0, sizeof(cattr));
    cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ucx->shared->context, &cattr) == UCS_OK &&
        (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)))
        log_debug("UCX moves CUDA memory: its worker is never armed, long waits nap");
    else if (ucp_worker_get_efd(ucx->worker, &ucx->efd) != UCS_OK) {
        log_debug("UCX worker has no event fd: long waits nap instead of sleeping on it");
        ucx->efd = -1;
    }
    return SYMCOLL_OK;
}

/* Sets the TCP transport's option NAME (without the TCP_ prefix) in a UCP configuration
 * for the interfaces it opens; true if UCX took it. A UCP configuration hands options
 * it does not know to the transports, and UCX releases differ in the name they expect
 * there: older ones match the transport's own field name ("TX_SEG_SIZE") and accept any
 * name without checking it; newer ones check the name against every transport's table
 * and want it prefixed as in the environment ("TCP_TX_SEG_SIZE"), rejecting the bare
 * one. The bare name first; the prefixed one only where it was rejected (an older UCX
 * would take the prefixed one too, and then warn at every worker that it matches no
 * field). */
static bool ucx_config_tcp(ucp_config_t *config, const char *name, const char *value)
{
    char full[64];

    if (ucp_config_modify(config, name, value) == UCS_OK)
        return true;
    snprintf(full, sizeof(full), "TCP_%s", name);
    return ucp_config_modify(config, full, value) == UCS_OK;
}

/* The value UCX uses for its option NAME (without UCX_), as ucp_config_print reports
 * it; false if this UCX has no such option. */
static bool ucx_config_value(const ucp_config_t *config, const char *name, char *val,
                             size_t len)
{
    char *text = NULL, *line, *save = NULL, key[64];
    size_t text_len = 0, klen;
    bool found = false;
    FILE *f = open_memstream(&text, &text_len);

    if (!f)
        return false;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    klen = (size_t)snprintf(key, sizeof(key), "UCX_%s=", name);
    for (line = strtok_r(text, "\n", &save); line && !found;
         line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, key, klen)) {
            snprintf(val, len, "%s", line + klen);
            found = true;
        }
    }
    free(text);
    return found;
}

/* Whether this UCX's option NAME (without UCX_) accepts value: the word appears in the
 * "syntax:" line of the option's documentation (ucp_config_print). Asked before a
 * ucp_config_modify that older UCX would reject with an error line of its own (1.16 knows
 * FENCE_MODE weak, strong and auto only). */
static bool ucx_config_accepts(const ucp_config_t *config, const char *name, const char *value)
{
    char *text = NULL, *line, *save = NULL, key[64], syntax[256] = "";
    size_t text_len = 0, klen, vlen = strlen(value);
    bool found = false;
    FILE *f = open_memstream(&text, &text_len);

    if (!f)
        return false;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC);
    fclose(f);
    klen = (size_t)snprintf(key, sizeof(key), "UCX_%s=", name);
    for (line = strtok_r(text, "\n", &save); line && !found;
         line = strtok_r(NULL, "\n", &save)) {
        const char *at = strstr(line, "syntax:");
        if (at) {
            snprintf(syntax, sizeof(syntax), "%s", at);
        } else if (!strncmp(line, key, klen)) {
            /* the value is one of the words between [ ] and | */
            for (const char *w = strstr(syntax, value); w; w = strstr(w + 1, value)) {
                if (strchr("[| ", w[-1]) && strchr("]| ", w[vlen]) && w[vlen] != '\0') {
                    found = true;
                    break;
                }
            }
            break;
        } else if (!strncmp(line, "UCX_", 4)) {
            syntax[0] = '\0'; /* another option's value: its documentation ended */
        }
    }
    free(text);
    return found;
}

/* Fences per endpoint where UCX offers it. ucx_put_signal fences between a transfer and
 * its flag. UCX's own choice (FENCE_MODE=auto) is the strong fence wherever its
 * protocol selection (PROTO_ENABLE) is on: every ucp_worker_fence then blocks until
 * every endpoint's operations completed at the peers, a round trip per transfer. The
 * endpoint-based fence orders an endpoint's next operation after its earlier ones, and
 * costs nothing more than the transport's own fence when both go over one lane (TCP,
 * one InfiniBand rail). A mode chosen in the environment is kept. */
static void ucx_config_fence(ucp_config_t *config)
{
    char fence[32], proto[32];

    if (!ucx_config_value(config, "FENCE_MODE", fence, sizeof(fence)) ||
        strcmp(fence, "auto") != 0 ||
        !ucx_config_value(config, "PROTO_ENABLE", proto, sizeof(proto)) ||
        (proto[0] != 'y' && proto[0] != '1') ||
        !ucx_config_accepts(config, "FENCE_MODE", "ep_based"))
        return;
    if (ucp_config_modify(config, "FENCE_MODE", "ep_based") == UCS_OK)
        log_debug("UCX: endpoint-based fences (FENCE_MODE=ep_based)");
}

/* A UCP context of this process: one for every configuration asked for (normally one),
 * shared by the communicators that ask for it. A context costs descriptors and memory
 * (its memory domains, its transports' resources); each communicator still has its own
 * workers, so that communicators do not see each other's traffic. */
struct ucx_proc_ctx {
    ucx_proc_ctx_t *next;
    ucp_context_h context;
    char *config; /* the configuration it was made with (ucp_config_print), and ours */
    pid_t pid;    /* a child of fork() does not use its parent's context */
    int refs;     /* communicators using it */
    size_t am_piece;
};

static pthread_mutex_t ucx_procs_lock = PTHREAD_MUTEX_INITIALIZER;
static ucx_proc_ctx_t *ucx_procs;

/* The configuration a communicator asks for, and what follows from it: the UCX options
 * (the environment's and ours) as text, the key of the context that serves it. */
static symcoll_status_t ucx_config_make(const comm_t *comm, ucp_config_t **config_p,
                                        char **text_p, size_t *am_piece_p)
{
    ucp_config_t *config;
    ucs_status_t s;
    char *text = NULL;
    size_t text_len = 0;
    FILE *f;

    s = ucp_config_read(NULL, NULL, &config);
    if (s != UCS_OK) {
        log_error("ucp_config_read: %s (check the UCX_* environment)", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    *am_piece_p = SIZE_MAX;
    if (comm->config.net_tcp_seg_size) {
        /* TCP moves an active message of one segment without reassembly: with large
         * segments a ring chunk is a few messages, each copied once into place */
        char v[32];
        size_t seg = comm->config.net_tcp_seg_size;
        snprintf(v, sizeof(v), "%zu", seg);
        if (ucx_config_tcp(config, "TX_SEG_SIZE", v) &&
            ucx_config_tcp(config, "RX_SEG_SIZE", v))
            *am_piece_p = (seg - UCX_AM_HDR_ROOM) / 64 * 64;
        else
            log_warn("UCX does not take TCP_TX/RX_SEG_SIZE; keeping its own segment size");
    }
    ucx_config_fence(config);
    f = open_memstream(&text, &text_len);
    if (!f) {
        ucp_config_release(config);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    /* the transport options set above may not be printed (UCX keeps options it does not
     * know itself aside for the transports) */
    fprintf(f, "symcoll: tcp_seg_size=%zu am_piece=%zu\n", comm->config.net_tcp_seg_size,
            *am_piece_p);
    if (fclose(f) != 0 || !text) {
        free(text);
        ucp_config_release(config);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    *config_p = config;
    *text_p = text;
    return SYMCOLL_OK;
}

static symcoll_status_t ucx_proc_ctx_new(ucp_config_t *config, char *text, size_t am_piece,
                                         ucx_proc_ctx_t **pc_p)
{
    ucx_proc_ctx_t *pc = calloc(1, sizeof(*pc));
    ucp_params_t params;
    ucs_status_t s;

    if (!pc)
        return SYMCOLL_ERR_NO_MEMORY;
    memset(&params, 0, sizeof(params));
    params.field_mask =
        UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    /* the workers of a context (every communicator's and channel's) are used by several
     * threads at the same time: what they share (memory registration and its cache,
     * used by every zero-copy send) must be thread-safe: UCX's registration cache is not
     * otherwise, and two channels sending at once corrupt it. */
    params.mt_workers_shared = 1;
    /* WAKEUP: a wait that lasts sleeps on the worker's event fd instead of spinning */
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.name = "symcoll";
    s = ucp_init(&params, config, &pc->context);
    if (s != UCS_OK) {
        log_error("ucp_init: %s", ucs_status_string(s));
        free(pc);
        return SYMCOLL_ERR_UCX;
    }
    pc->config = text;
    pc->pid = getpid();
    pc->am_piece = am_piece;
    *pc_p = pc;
    return SYMCOLL_OK;
}

/* Takes a reference on the context of the configuration comm asks for, made on first
 * use. A different configuration (another UCX_TLS in the environment, another TCP
 * segment size) gets a context of its own. */
static symcoll_status_t ucx_proc_ctx_get(const comm_t *comm, ucx_proc_ctx_t **pc_p)
{
    ucp_config_t *config;
    ucx_proc_ctx_t *pc, *others = NULL;
    char *text;
    size_t am_piece;
    pid_t me = getpid();
    symcoll_status_t status = ucx_config_make(comm, &config, &text, &am_piece);

    if (status != SYMCOLL_OK)
        return status;
    pthread_mutex_lock(&ucx_procs_lock);
    for (pc = ucx_procs; pc; pc = pc->next) {
        if (pc->pid != me)
            continue;
        if (!strcmp(pc->config, text))
            break;
        others = pc;
    }
    if (pc) {
        pc->refs++;
        free(text);
        log_debug("UCX: sharing the process's UCP context (%d communicators)", pc->refs);
    } else {
        if (others)
            log_info("UCX: this communicator's UCX configuration differs from that of the "
                     "process's UCP context; it gets a context of its own");
        status = ucx_proc_ctx_new(config, text, am_piece, &pc);
        if (status == SYMCOLL_OK) {
            pc->refs = 1;
            pc->next = ucx_procs;
            ucx_procs = pc;
        } else {
            free(text);
        }
    }
    pthread_mutex_unlock(&ucx_procs_lock);
    ucp_config_release(config);
    if (status == SYMCOLL_OK)
        *pc_p = pc;
    return status;
}

/* Drops a reference: the last communicator's goes with the context. */
static void ucx_proc_ctx_put(ucx_proc_ctx_t *pc)
{
    ucx_proc_ctx_t **link;

    pthread_mutex_lock(&ucx_procs_lock);
    if (--pc->refs > 0) {
        pthread_mutex_unlock(&ucx_procs_lock);
        return;
    }
    for (link = &ucx_procs; *link; link = &(*link)->next) {
        if (*link == pc) {
            *link = pc->next;
            break;
        }
    }
    pthread_mutex_unlock(&ucx_procs_lock);
    ucp_cleanup(pc->context);
    free(pc->config);
    free(pc);
}

static symcoll_status_t ucx_init_context(ucx_ctx_t *ucx)
{
    ucx_shared_t *shared = ucx->shared;
    symcoll_status_t status = ucx_proc_ctx_get(ucx->comm, &shared->proc);

    if (status != SYMCOLL_OK)
        return status;
    shared->context = shared->proc->context;
    shared->am_piece = shared->proc->am_piece;
    status = ucx_init_worker(ucx);
    if (status != SYMCOLL_OK) {
        ucx_proc_ctx_put(shared->proc);
        shared->proc = NULL;
        shared->context = NULL;
    }
    return status;
}

/* A worker's state on the shared context, before its UCP worker exists. */
static ucx_ctx_t *ucx_alloc(comm_t *comm, ucx_shared_t *shared, int index)
{
    ucx_ctx_t *ucx = calloc(1, sizeof(*ucx));

    if (!ucx)
        return NULL;
    ucx->comm = comm;
    ucx->rank = comm->rank;
    ucx->nranks = comm->nranks;
    ucx->shared = shared;
    ucx->index = index;
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
    return ucx;
}

/* Frees what the owner's shared context holds besides the UCP context. */
static void ucx_shared_free(ucx_shared_t *shared)
{
    for (int m = 0; m < SYMCOLL_MEM_LAST; m++)
        free(shared->segtab[m].segs);
    free(shared->regions);
    free(shared);
}

symcoll_status_t ucx_channel_create(ucx_ctx_t *owner, ucx_ctx_t **channel_p)
{
    ucx_ctx_t *channel;
    symcoll_status_t status;
    int index = 1;

    if (owner->index != 0) {
        log_error("internal: a channel of a channel");
        return SYMCOLL_ERR_INTERNAL;
    }
    while (index <= UCX_CHANNELS_MAX && (owner->shared->channels_used & (1u << index)))
        index++;
    if (index > UCX_CHANNELS_MAX) {
        log_error("internal: more than %d UCX channels", UCX_CHANNELS_MAX);
        return SYMCOLL_ERR_INTERNAL;
    }
    /* a worker on the owner's context: its regions, protocol and transports (every
     * rank decided the protocol alike for the owner) are the channel's too */
    channel = ucx_alloc(owner->comm, owner->shared, index);
    if (!channel)
        return SYMCOLL_ERR_NO_MEMORY;
    /* without a worker it still takes part in the exchange, so that all ranks fail */
    status = ucx_init_worker(channel);
    {
        symcoll_status_t cs = ucx_connect_eps(channel, owner->comm->topo);
        if (status == SYMCOLL_OK)
            status = cs;
    }
    if (status != SYMCOLL_OK) {
        ucx_destroy(channel);
        return status;
    }
    owner->shared->channels_used |= 1u << index;
    log_debug("UCX channel %d: worker and %d endpoints", index, channel->nremote);
    *channel_p = channel;
    return SYMCOLL_OK;
}

/* The bootstrap's progress hook: a rank that waits in a bootstrap exchange (a pool's
 * vote, say) may be the owner of an rkey a peer still needs to finish the call before:
 * it answers from here. */
static void ucx_bootstrap_progress(void *arg)
{
    (void)ucx_poll(arg);
}

symcoll_status_t ucx_create(comm_t *comm, ucx_ctx_t **ucx_p)
{
    ucx_shared_t *shared;
    ucx_ctx_t *ucx;
    symcoll_status_t status;

    shared = calloc(1, sizeof(*shared));
    if (!shared)
        return SYMCOLL_ERR_NO_MEMORY;
    ucx = ucx_alloc(comm, shared, 0);
    if (!ucx) {
        free(shared);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    for (int m = 0; m < SYMCOLL_MEM_LAST; m++) {
        shared->segtab[m].ucx = ucx;
        shared->segtab[m].mem_type = (symcoll_mem_type_t)m;
    }

    status = ucx_init_context(ucx);
    if (status != SYMCOLL_OK)
        goto err_free;
    status = ucx_connect_all(ucx, comm->topo);
    if (status != SYMCOLL_OK)
        goto err_destroy;
    bootstrap_set_progress(comm->bootstrap, ucx_bootstrap_progress, ucx);
    *ucx_p = ucx;
    return SYMCOLL_OK;

err_destroy:
    ucx_destroy(ucx);
    return status;
err_free:
    ucx_shared_free(shared);
    free(ucx->peers);
    free(ucx);
    return status;
}

/* How long a close after a failure lets the forced closes go out: nothing waits for a
 * peer then, so this bounds only local work. */
#define UCX_CLOSE_BROKEN_SEC 0.25
/* How long a close after our give-up notice waits for the peers' answers (below). */
#define UCX_CLOSE_ANSWER_SEC 0.5

/* Nothing that a peer's help would complete is worth waiting for: the communicator
 * failed (a call timed out, a peer died or gave up, an abort), or a peer is known dead. */
static bool ucx_close_broken(const ucx_ctx_t *ucx)
{
    return atomic_load(&ucx->shared->broken) || atomic_load(&ucx->failed) ||
           atomic_load(&ucx->remote_abort) != SYMCOLL_OK || atomic_load(&ucx->comm->aborted);
}

/* After our give-up notice, before the endpoints close: a peer must read the notice
 * before it sees its endpoint to us end, or it reports a failed peer instead of what
 * happened. Once our endpoint closes, whatever of ours is still in the peer's socket or
 * UCX's queues may be lost (a closed TCP socket that still had data to read resets the
 * connection), and a peer that is sending to us sees the reset first. So the close
 * waits, progressing, until every peer we hold an endpoint to answered (a peer gives up when it
 * reads our notice, and its own notice is the answer), or its endpoint ended, or the bound
 * passed: then a peer that was silent all along, between calls or stopped, sees the end
 * instead, in its next call. */
static void ucx_await_answers(ucx_ctx_t *ucx)
{
    deadline_t dl = deadline_make(UCX_CLOSE_ANSWER_SEC, NULL);
    unsigned iter = 0;

    for (int r = 0; r < ucx->nranks; r++) {
        const ucx_peer_t *p = &ucx->peers[r];
        while (p->ep && !atomic_load(&p->failed) && !atomic_load(&p->gave_up)) {
            if (deadline_check(&dl) != SYMCOLL_OK) {
                log_debug("UCX close: rank %d did not answer our give-up notice", r);
                return;
            }
            if (ucp_worker_progress(ucx->worker))
                iter = 0;
            else
                ucx_idle(ucx, &iter);
        }
    }
}

void ucx_close(ucx_ctx_t *ucx)
{
    deadline_t dl;
    bool broken;

    if (!ucx || ucx->closed)
        return;
    /* an aborted rank that made no call since: peers still waiting on it stop now */
    if (atomic_load(&ucx->comm->aborted))
        ucx_notify_abort(ucx);
    broken = ucx_close_broken(ucx);
    if (broken) {
        /* from here on endpoint errors are expected */
        ucx->closing = true;
        /* after a timeout a peer stopped answering: waiting would cost the whole bound,
         * and the peers that still answer time out by themselves */
        if (ucx->abort_sent && ucx->give_up[1] != SYMCOLL_ERR_TIMED_OUT)
            ucx_await_answers(ucx);
    }
    dl = deadline_make(broken ? UCX_CLOSE_BROKEN_SEC : ucx->comm->timeout_sec, NULL);
    if (!broken) {
        (void)ucx_wait_all(ucx, &dl);
        (void)ucx_flush_report(ucx, &dl, false);
    }
    /* On TCP our flush completes only while the peers progress, and theirs while we do:
     * nobody leaves before everybody has flushed. Afterwards nothing is in flight, so a
     * forced close loses nothing and needs no help from the peers. After a failure the
     * peers may never answer (stopped, dead, or out of step): the endpoints are closed
     * at once, which ends a healthy peer's wait for our confirmation with an endpoint
     * error. */
    ucx->closing = true;
    if (!broken && ucx->worker_ready && ucx_close_hello(ucx, &dl) != SYMCOLL_OK)
        log_warn("UCX close: not every peer confirmed; closing the endpoints anyway");
    /* operations a failure left in flight go back to UCX, which releases each when it
     * completes or its endpoint closes: none stays ours past the worker (UCX 1.22 warned
     * of every one and once asserted while closing) */
    for (unsigned k = 0; k < UCX_OPS; k++)
        if (ucx->ops[k].req) {
            ucp_request_free(ucx->ops[k].req);
            ucx->ops[k].req = NULL;
        }
    for (size_t i = 0; i < ucx->shared->nregions; i++)
        ucx_region_drop_rkeys(ucx->shared->regions[i], ucx->nranks, ucx->index);
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
    ucx_shared_t *shared;

    if (!ucx)
        return;
    shared = ucx->shared;
    if (ucx->index == 0 && ucx->comm->bootstrap)
        bootstrap_set_progress(ucx->comm->bootstrap, NULL, NULL);
    if (ucx->worker) {
        ucx_close(ucx);
        /* the regions are the owner's: a channel leaves them registered */
        while (ucx->index == 0 && shared->nregions > 0)
            ucx_region_release(ucx, shared->regions[shared->nregions - 1]);
        ucp_worker_destroy(ucx->worker);
    }
    if (ucx->index != 0)
        shared->channels_used &= ~(1u << ucx->index);
    else if (shared->proc)
        ucx_proc_ctx_put(shared->proc);
    if (ucx->index == 0)
        ucx_shared_free(shared);
    free(ucx->addrs);
    free(ucx->peers);
    free(ucx->asks);
    free(ucx);
}

bool ucx_shares_context(const ucx_ctx_t *a, const ucx_ctx_t *b)
{
    return a && b && a->shared->context == b->shared->context;
}

int ucx_num_endpoints(const ucx_ctx_t *ucx)
{
    return ucx ? ucx->nremote : 0;
}
