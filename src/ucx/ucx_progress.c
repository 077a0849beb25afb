/* UCX layer: progress and waits (back-off, flags, requests, flush), and the table of
 * operations in flight every transfer of a worker goes through. */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ucx/ucx_int.h"

/* What ends every wait besides its own deadline: a peer that gave up, a failed one. A
 * peer's give-up notice comes before its endpoints close (they close because it gave
 * up), so the notice's status wins: an abort, a timeout or a dead rank it saw. */
static symcoll_status_t ucx_peer_status(const ucx_ctx_t *ucx)
{
    symcoll_status_t why =
        (symcoll_status_t)atomic_load_explicit(&ucx->remote_abort, memory_order_relaxed);

    if (why != SYMCOLL_OK)
        return why;
    if (atomic_load_explicit(&ucx->failed, memory_order_relaxed))
        return SYMCOLL_ERR_PEER_FAILED;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_status_of(const ucx_ctx_t *ucx, ucs_status_t s)
{
    symcoll_status_t peers = ucx_peer_status(ucx);

    switch (s) {
    case UCS_OK:
        return SYMCOLL_OK;
    case UCS_ERR_NO_MEMORY:
        return SYMCOLL_ERR_NO_MEMORY;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
        /* a peer gone: PEER_FAILED, unless a peer told us why it gave up */
        return peers != SYMCOLL_OK ? peers : SYMCOLL_ERR_PEER_FAILED;
    case UCS_ERR_CANCELED:
        /* requests of a failed or closed endpoint are cancelled */
        return peers != SYMCOLL_OK ? peers : SYMCOLL_ERR_UCX;
    default:
        return SYMCOLL_ERR_UCX;
    }
}

unsigned ucx_poll(ucx_ctx_t *ucx)
{
    unsigned n = ucp_worker_progress(ucx->worker);
    if (ucx->nasks)
        ucx_rkey_answer_all(ucx);
    return n;
}

symcoll_status_t ucx_progress(ucx_ctx_t *ucx)
{
    ucx_poll(ucx);
    return ucx_peer_status(ucx);
}

/* Idle turns of a wait before it sleeps in the kernel (each turn is a progress call, a
 * system call on TCP, so this is a few milliseconds), and how long one sleep lasts at
 * most (transports that write memory without an event, and peers of the node, are
 * seen at the latest then). */
#define UCX_SPIN_TURNS 256
#define UCX_SLEEP_AFTER 2048
#define UCX_SLEEP_MS 1
/* A worker without an event fd (none, or never armed: ucx_worker_create) naps this long
 * instead: short, as nothing wakes it early, yet not a busy core. */
#define UCX_NAP_NS 50000

void ucx_idle(ucx_ctx_t *ucx, unsigned *iter)
{
    struct pollfd p;

    if (++*iter < UCX_SPIN_TURNS) {
        core_spin_pause(&(unsigned){0});
        return;
    }
    if (*iter < UCX_SLEEP_AFTER) {
        sched_yield();
        return;
    }
    if (ucx->efd < 0) {
        struct timespec nap = {0, UCX_NAP_NS};
        nanosleep(&nap, NULL);
        return;
    }
    /* armed: the fd fires on the next event; busy: events are pending, progress now */
    if (ucp_worker_arm(ucx->worker) != UCS_OK)
        return;
    p.fd = ucx->efd;
    p.events = POLLIN;
    p.revents = 0;
    (void)poll(&p, 1, UCX_SLEEP_MS);
}

symcoll_status_t ucx_wait_turn(ucx_ctx_t *ucx, const deadline_t *dl, unsigned *iter)
{
    symcoll_status_t status;

    if (ucx_poll(ucx))
        *iter = 0;
    else
        ucx_idle(ucx, iter);
    status = ucx_peer_status(ucx);
    if (status != SYMCOLL_OK)
        return status;
    status = deadline_check(dl);
    if (status != SYMCOLL_OK)
        log_error("UCX wait: %s", symcoll_status_string(status));
    return status;
}

symcoll_status_t ucx_wait_flag(ucx_ctx_t *ucx, const uint64_t *flag, uint64_t value,
                               const deadline_t *dl)
{
    const _Atomic uint64_t *f = (const _Atomic uint64_t *)flag;
    unsigned iter = 0;

    while (atomic_load_explicit(f, memory_order_acquire) < value) {
        symcoll_status_t status = ucx_wait_turn(ucx, dl, &iter);
        if (status != SYMCOLL_OK)
            return status;
    }
    return SYMCOLL_OK;
}

/* Progress until op completes; frees its request. */
symcoll_status_t ucx_op_finish(ucx_ctx_t *ucx, ucx_op_t *op, const deadline_t *dl)
{
    unsigned iter = 0;

    while (op->req) {
        ucs_status_t s = ucp_request_check_status(op->req);
        symcoll_status_t status;
        if (s != UCS_INPROGRESS) {
            ucp_request_free(op->req);
            op->req = NULL;
            if (s != UCS_OK) {
                log_error("UCX operation failed: %s", ucs_status_string(s));
                return ucx_status_of(ucx, s);
            }
            return SYMCOLL_OK;
        }
        /* on failure the request stays in its slot: a later wait, or ucx_close, ends it */
        status = ucx_wait_turn(ucx, dl, &iter);
        if (status != SYMCOLL_OK)
            return status;
    }
    return SYMCOLL_OK;
}

/* The next operation slot, once its previous operation completed. */
symcoll_status_t ucx_op_new(ucx_ctx_t *ucx, ucx_op_t **op_p)
{
    ucx_op_t *op = &ucx->ops[ucx->op_next % UCX_OPS];

    if (op->req) {
        deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
        symcoll_status_t status = ucx_op_finish(ucx, op, &dl);
        if (status != SYMCOLL_OK)
            return status;
    }
    op->gen++;
    ucx->op_next++;
    *op_p = op;
    return SYMCOLL_OK;
}

/* Records what a UCX call returned for op. */
symcoll_status_t ucx_op_track(ucx_ctx_t *ucx, ucx_op_t *op, ucs_status_ptr_t req,
                              const char *what, int peer)
{
    if (UCS_PTR_IS_ERR(req)) {
        log_error("%s to rank %d: %s", what, peer, ucs_status_string(UCS_PTR_STATUS(req)));
        return ucx_status_of(ucx, UCS_PTR_STATUS(req));
    }
    op->req = req;
    return SYMCOLL_OK;
}

ucx_req_t ucx_op_handle(const ucx_ctx_t *ucx, const ucx_op_t *op)
{
    uint64_t idx = (uint64_t)(op - ucx->ops);
    return (ucx_req_t)(uintptr_t)(((uint64_t)op->gen << 32) | (idx + 1));
}

bool ucx_req_done(const ucx_ctx_t *ucx, ucx_req_t req)
{
    uint64_t h = (uint64_t)(uintptr_t)req;
    const ucx_op_t *op;

    if (!req)
        return true;
    op = &ucx->ops[(h & 0xffffffffu) - 1];
    return op->gen != (uint32_t)(h >> 32) || !op->req ||
           ucp_request_check_status(op->req) != UCS_INPROGRESS;
}

symcoll_status_t ucx_req_wait(ucx_ctx_t *ucx, ucx_req_t req, const deadline_t *dl)
{
    uint64_t h = (uint64_t)(uintptr_t)req;
    ucx_op_t *op;

    if (!req)
        return SYMCOLL_OK;
    op = &ucx->ops[(h & 0xffffffffu) - 1];
    if (op->gen != (uint32_t)(h >> 32))
        return SYMCOLL_OK; /* the slot was reused, so that operation completed */
    return ucx_op_finish(ucx, op, dl);
}

symcoll_status_t ucx_wait_all(ucx_ctx_t *ucx, const deadline_t *dl)
{
    /* only the slots used since the last complete wait can be busy */
    unsigned n = ucx->op_next - ucx->op_waited;

    if (n > UCX_OPS)
        n = UCX_OPS;
    for (unsigned k = 0; k < n; k++) {
        symcoll_status_t status =
            ucx_op_finish(ucx, &ucx->ops[(ucx->op_next - n + k) % UCX_OPS], dl);
        if (status != SYMCOLL_OK)
            return status;
    }
    ucx->op_waited = ucx->op_next;
    return SYMCOLL_OK;
}

/* A worker flush that lasts UCX_FLUSH_REPORT_SEC (or a third of the timeout, if less)
 * says which endpoints still hold operations: one flush per endpoint, progressed for up
 * to 0.2 s. On TCP a put completes only once its target's worker progresses, so this
 * names a peer that stopped progressing. */
#define UCX_FLUSH_REPORT_SEC 5.0

/* The ranks whose flush request (reqs[i], for rank ranks[i], or rank i where ranks is
 * NULL) is still in progress, as " 1 5 ...". */
static void ucx_busy_list(void *const *reqs, const int *ranks, int n, char *list, size_t size)
{
    size_t used = 0;

    list[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i] || ucp_request_check_status(reqs[i]) != UCS_INPROGRESS)
            continue;
        if (used + 16 >= size) {
            snprintf(list + used, size - used, " ...");
            return;
        }
        used += (size_t)snprintf(list + used, size - used, " %d", ranks ? ranks[i] : i);
    }
}

/* When a lasting flush reports: after UCX_FLUSH_REPORT_SEC, or a third of the timeout. */
static double ucx_report_after(const ucx_ctx_t *ucx)
{
    double t = ucx->comm->timeout_sec / 3;
    return t < UCX_FLUSH_REPORT_SEC ? t : UCX_FLUSH_REPORT_SEC;
}

static void ucx_report_unflushed(ucx_ctx_t *ucx, double waited)
{
    ucp_request_param_t param = {0};
    void **reqs = calloc((size_t)ucx->nranks, sizeof(*reqs));
    char list[256];
    double until = time_now() + 0.2;
    bool busy = true;

    if (!reqs)
        return;
    for (int p = 0; p < ucx->nranks; p++) {
        ucs_status_ptr_t r;
        if (!ucx->peers[p].ep)
            continue;
        r = ucp_ep_flush_nbx(ucx->peers[p].ep, &param);
        if (UCS_PTR_IS_PTR(r))
            reqs[p] = r;
    }
    while (busy && time_now() < until) {
        (void)ucx_poll(ucx);
        busy = false;
        for (int p = 0; p < ucx->nranks; p++)
            if (reqs[p] && ucp_request_check_status(reqs[p]) == UCS_INPROGRESS)
                busy = true;
    }
    ucx_busy_list(reqs, NULL, ucx->nranks, list, sizeof(list));
    /* UCX releases a request still in flight once it completes */
    for (int p = 0; p < ucx->nranks; p++)
        if (reqs[p])
            ucp_request_free(reqs[p]);
    free(reqs);
    log_warn("UCX flush has waited %.1f s; endpoints still busy, to rank(s):%s", waited,
             list[0] ? list : " none (the worker's own operations)");
}

symcoll_status_t ucx_flush_report(ucx_ctx_t *ucx, const deadline_t *dl, bool report_busy)
{
    ucp_request_param_t param = {0};
    ucx_op_t op = {0};
    double t0 = time_now(), report = report_busy ? ucx_report_after(ucx) : 0;
    unsigned iter = 0;
    symcoll_status_t status = ucx_op_track(ucx, &op, ucp_worker_flush_nbx(ucx->worker, &param),
                                           "ucp_worker_flush_nbx", ucx->rank);

    while (status == SYMCOLL_OK && op.req) {
        ucs_status_t s = ucp_request_check_status(op.req);
        if (s != UCS_INPROGRESS) {
            ucp_request_free(op.req);
            op.req = NULL;
            if (s != UCS_OK) {
                log_error("ucp_worker_flush_nbx: %s", ucs_status_string(s));
                status = ucx_status_of(ucx, s);
            }
            break;
        }
        if (report > 0 && time_now() - t0 > report) {
            ucx_report_unflushed(ucx, time_now() - t0);
            report = 0;
        }
        status = ucx_wait_turn(ucx, dl, &iter);
    }
    /* a flush given up on: UCX releases its request when it completes (the slot is ours
     * only for this call) */
    if (op.req)
        ucp_request_free(op.req);
    return status;
}

symcoll_status_t ucx_flush(ucx_ctx_t *ucx, const deadline_t *dl)
{
    return ucx_flush_report(ucx, dl, true);
}

/* Flush requests of ucx_flush_peers kept on the stack (more: allocated) */
#define UCX_FLUSH_PEERS_STACK 32

symcoll_status_t ucx_flush_peers(ucx_ctx_t *ucx, const int *ranks, int n, const deadline_t *dl)
{
    ucp_request_param_t param = {0};
    void *own[UCX_FLUSH_PEERS_STACK] = {0};
    void **reqs = n <= UCX_FLUSH_PEERS_STACK ? own : calloc((size_t)n, sizeof(*reqs));
    double t0 = time_now(), report = ucx_report_after(ucx);
    unsigned iter = 0;
    symcoll_status_t status = SYMCOLL_OK;
    bool busy = true;

    if (n <= 0)
        return SYMCOLL_OK;
    if (!reqs)
        return SYMCOLL_ERR_NO_MEMORY;
    for (int i = 0; i < n && status == SYMCOLL_OK; i++) {
        ucs_status_ptr_t r;
        /* no endpoint: nothing was sent there */
        if (!ucx_is_remote(ucx, ranks[i]) || !ucx->peers[ranks[i]].ep)
            continue;
        r = ucp_ep_flush_nbx(ucx->peers[ranks[i]].ep, &param);
        if (UCS_PTR_IS_ERR(r)) {
            log_error("ucp_ep_flush_nbx (rank %d): %s", ranks[i],
                      ucs_status_string(UCS_PTR_STATUS(r)));
            status = ucx_status_of(ucx, UCS_PTR_STATUS(r));
        } else if (r) {
            reqs[i] = r;
        }
    }
    while (status == SYMCOLL_OK && busy) {
        busy = false;
        for (int i = 0; i < n && status == SYMCOLL_OK; i++) {
            ucs_status_t s;
            if (!reqs[i])
                continue;
            s = ucp_request_check_status(reqs[i]);
            if (s == UCS_INPROGRESS) {
                busy = true;
                continue;
            }
            ucp_request_free(reqs[i]);
            reqs[i] = NULL;
            if (s != UCS_OK) {
                log_error("ucp_ep_flush_nbx (rank %d): %s", ranks[i], ucs_status_string(s));
                status = ucx_status_of(ucx, s);
            }
        }
        if (status != SYMCOLL_OK || !busy)
            break;
        if (report > 0 && time_now() - t0 > report) {
            char list[256];
            ucx_busy_list(reqs, ranks, n, list, sizeof(list));
            log_warn("UCX flush has waited %.1f s, for the endpoints to rank(s):%s",
                     time_now() - t0, list);
            report = 0;
        }
        status = ucx_wait_turn(ucx, dl, &iter);
    }
    /* flushes given up on: UCX releases their requests when they complete */
    for (int i = 0; i < n; i++)
        if (reqs[i])
            ucp_request_free(reqs[i]);
    if (reqs != own)
        free(reqs);
    return status;
}
