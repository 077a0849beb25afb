/* UCX layer: endpoints of a worker: worker address exchange, connection to the ranks of
 * the other nodes, check messages, and the transports and protocol they settle on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "ucx/ucx_int.h"

/* What every rank tells the others at creation (besides its worker address): what its
 * UCX reaches and uses, and how its endpoints to its creation partners move data (each
 * an AND over the ranks once gathered). */
typedef struct ucx_caps {
    uint32_t mem_types;
    uint8_t native_rma, cuda_rma, no_cuda_driver, pad;
    char tls[TOPO_TLS_MAX];
} ucx_caps_t;

static void ucx_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucx_peer_t *peer = arg;
    /* expected once we close (the closing handshake skips it), and once the peer told
     * us that it gave up: it closes its endpoints then, and its notice says why */
    if (peer->ucx->closing || atomic_load(&peer->gave_up)) {
        atomic_store(&peer->failed, 1);
        log_debug("UCX endpoint to rank %d closed: %s", peer->rank, ucs_status_string(status));
        return;
    }
    if (!atomic_exchange(&peer->failed, 1))
        log_error("UCX endpoint to rank %d failed: %s", peer->rank, ucs_status_string(status));
    atomic_store(&peer->ucx->failed, 1);
}

static ucs_status_t ucx_hello_cb(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
{
    ucx_ctx_t *ucx = arg;
    int32_t r;

    if (header_length == sizeof(r)) {
        memcpy(&r, header, sizeof(r));
        if (r >= 0 && r < ucx->nranks)
            ucx->peers[r].hello++;
    }
    return UCS_OK;
}

bool ucx_lane_parse(const char *line, char *name, size_t name_len, bool *host_rma,
                    bool *cuda_rma, bool *driver)
{
    const char *lane = strstr(line, "lane["), *tl, *stop;
    size_t len;

    *host_rma = *cuda_rma = *driver = false;
    if (!lane || name_len == 0 || !(tl = strchr(lane, ':')))
        return false;
    /* "lane[1]:  3:tcp/lo.0 md[1] ..." -> "tcp/lo.0": past the lane's ':', the spaces,
     * the resource index and its ':' */
    tl += strspn(tl + 1, " ") + 1;
    if (tl[strspn(tl, "0123456789")] != ':' || !strspn(tl, "0123456789"))
        return false;
    tl += strspn(tl, "0123456789") + 1;
    stop = tl + strcspn(tl, " \t");
    len = (size_t)(stop - tl);
    if (len == 0 || len >= name_len)
        return false;
    memcpy(name, tl, len);
    name[len] = 0;
    /* CUDA memory through this lane, whatever its role, calls the CUDA driver: cuda_ipc
     * and cuda_copy copy with it, and TCP's emulated puts go through UCX's cuda_copy */
    *driver = !strncmp(name, "cuda_", 5) || !strncmp(name, "tcp", 3);
    /* "... rma_bw#0 amo#0": a lane that moves RMA in its transport (every release marks
     * the lanes so; the summary lines after them differ between releases). The pool and
     * its flags are host memory, so for host_rma only a lane that puts into a peer's
     * host memory counts: none of the GPU transports (cuda_ipc, cuda_copy, gdr_copy,
     * rocm_*, ze_*) does, and with them alone UCX still emulates host puts with messages
     * over its AM lane (TCP), where every fence waits for the peer's acknowledgement.
     * CUDA memory: cuda_ipc between GPUs that map each other, rc_ and dc_ on
     * InfiniBand/RoCE; TCP's emulated puts are answered by the target's UCX. */
    if (strstr(stop, " rma_bw#")) {
        *host_rma = strncmp(name, "cuda_", 5) && strncmp(name, "gdr_", 4) &&
                    strncmp(name, "rocm_", 5) && strncmp(name, "ze_", 3);
        *cuda_rma = !strncmp(name, "cuda_ipc", 8) || !strncmp(name, "rc_", 3) ||
                    !strncmp(name, "dc_", 3);
    }
    return true;
}

void ucx_ep_lanes_read(char *listing, ucx_ep_lanes_t *out,
                       void (*each)(void *arg, const char *line, const char *name), void *arg)
{
    bool net_rma = false, driver_lane = false;
    char *line, *save = NULL;

    out->host_rma = out->cuda_rma = false;
    for (line = strtok_r(listing, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *lane = strstr(line, "lane[");
        char name[64];
        bool host = false, cuda = false, drv = false;
        if (!lane) {
            if (each && (strstr(line, "rma_bw") || strstr(line, "amo")))
                each(arg, line + strspn(line, "# "), NULL);
            continue;
        }
        if (!ucx_lane_parse(lane, name, sizeof(name), &host, &cuda, &drv)) {
            if (each)
                each(arg, lane, NULL);
            continue;
        }
        if (each)
            each(arg, lane, name);
        out->host_rma = out->host_rma || host;
        out->cuda_rma = out->cuda_rma || cuda;
        net_rma = net_rma || (cuda && !drv);
        driver_lane = driver_lane || drv;
    }
    out->driver = driver_lane || !net_rma;
}

/* A line of an endpoint's listing: logged; a lane's transport added to the names. */
static void ucx_ep_line(void *arg, const char *line, const char *name)
{
    ucx_ctx_t *ucx = arg;
    size_t used = strlen(ucx->shared->transports);

    log_info("UCX %s", line);
    if (name && !strstr(ucx->shared->transports, name)) {
        int n = snprintf(ucx->shared->transports + used, sizeof(ucx->shared->transports) - used,
                         "%s%s", used ? "," : "", name);
        if (n < 0 || (size_t)n >= sizeof(ucx->shared->transports) - used)
            ucx->shared->transports[used] = 0; /* whole names only */
    }
}

/* One endpoint's lanes (ucp_ep_print_info, read by ucx_ep_lanes_read); without its
 * listing, nothing is claimed for it, and it counts as calling the CUDA driver. */
static void ucx_describe_ep(ucx_ctx_t *ucx, ucp_ep_h ep, ucx_ep_lanes_t *out)
{
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);

    out->host_rma = out->cuda_rma = false;
    out->driver = true;
    if (!f)
        return;
    ucp_ep_print_info(ep, f);
    if (fclose(f) == 0 && text)
        ucx_ep_lanes_read(text, out, ucx_ep_line, ucx);
    free(text);
}

/* Creates the endpoint to a rank of another node and sends it our check message on it:
 * the peer counts it (ucx_peer_t's hello) and so knows that we hold an endpoint to it.
 * Where data moves by RMA, a fence puts the message before our puts, so that a peer that
 * saw our data has seen it. */
static symcoll_status_t ucx_ep_open(ucx_ctx_t *ucx, int peer)
{
    ucx_peer_t *p = &ucx->peers[peer];
    ucp_request_param_t param = {0};
    ucp_ep_params_t ep;
    ucx_op_t *op;
    ucs_status_t s;
    symcoll_status_t status;

    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = (const ucp_address_t *)(ucx->addrs + (size_t)peer * ucx->addr_stride);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = ucx_err_cb;
    ep.err_handler.arg = p;
    s = ucp_ep_create(ucx->worker, &ep, &p->ep);
    if (s != UCS_OK) {
        log_error("ucp_ep_create to rank %d: %s", peer, ucs_status_string(s));
        p->ep = NULL;
        return SYMCOLL_ERR_UCX;
    }
    ucx->nremote++;
    ucx->hello_rank = ucx->rank;
    status = ucx_op_new(ucx, &op);
    if (status == SYMCOLL_OK)
        status = ucx_op_track(ucx, op,
                              ucp_am_send_nbx(p->ep, UCX_AM_HELLO, &ucx->hello_rank,
                                              sizeof(ucx->hello_rank), NULL, 0, &param),
                              "UCX check message", peer);
    if (status == SYMCOLL_OK && ucx->shared->native_rma)
        status = ucx_fence(ucx);
    return status;
}

symcoll_status_t ucx_ep_get(ucx_ctx_t *ucx, int peer, ucp_ep_h *ep_p)
{
    ucx_peer_t *p;
    symcoll_status_t status;

    if (!ucx_is_remote(ucx, peer)) {
        log_error("internal: transfer to rank %d, which is on this node", peer);
        return SYMCOLL_ERR_INTERNAL;
    }
    p = &ucx->peers[peer];
    if (!p->ep) {
        if (ucx->closing || !ucx->addrs) {
            log_error("internal: a new endpoint to rank %d while the worker closes", peer);
            return SYMCOLL_ERR_INTERNAL;
        }
        if (atomic_load(&p->failed))
            return SYMCOLL_ERR_PEER_FAILED;
        status = ucx_ep_open(ucx, peer);
        if (status != SYMCOLL_OK)
            return status;
    }
    *ep_p = p->ep;
    return SYMCOLL_OK;
}

symcoll_status_t ucx_connect(ucx_ctx_t *ucx, int peer)
{
    ucp_ep_h ep;

    if (!ucx || !ucx_is_remote(ucx, peer) || ucx->peers[peer].ep)
        return SYMCOLL_OK;
    return ucx_ep_get(ucx, peer, &ep);
}

/* Waits, progressing, until every peer this worker holds an endpoint to has sent count
 * check messages (or failed): one when it opened its endpoint to us, one more at its
 * close. At creation (count 1) the endpoints are the partners' (ucx_partner), each of
 * which opens one to us as well: the exchange shows broken connectivity early and saves
 * the first call the wireup. At close (count 2), after ours went out, it keeps every
 * rank progressing until the peers it holds endpoints to have flushed. */
symcoll_status_t ucx_exchange_hello(ucx_ctx_t *ucx, int count, deadline_t *dl)
{
    symcoll_status_t status;
    unsigned iter = 0;

    for (int r = 0; r < ucx->nranks; r++) {
        while (ucx->peers[r].ep && ucx->peers[r].hello < count &&
               !atomic_load(&ucx->peers[r].failed)) {
            if (ucx_poll(ucx))
                iter = 0;
            else
                core_spin_pause(&iter);
            if (!ucx->closing && atomic_load(&ucx->failed))
                return SYMCOLL_ERR_PEER_FAILED;
            status = deadline_check(dl);
            if (status != SYMCOLL_OK) {
                log_error("UCX: no message from rank %d (%s)", r,
                          symcoll_status_string(status));
                return status;
            }
        }
    }
    return ucx_wait_all(ucx, dl);
}

symcoll_status_t ucx_close_hello(ucx_ctx_t *ucx, deadline_t *dl)
{
    symcoll_status_t status, first = SYMCOLL_OK;

    /* a peer that opened an endpoint to us waits for our close message: we answer on
     * an endpoint of our own (which also shows us its end, should it fail meanwhile).
     * A peer we cannot reach is not waited for (its failure mark, as its endpoint's error
     * callback would set it while we close); the others still get our message. */
    for (int r = 0; r < ucx->nranks; r++) {
        if (ucx->peers[r].hello >= 1 && !ucx->peers[r].ep &&
            !atomic_load(&ucx->peers[r].failed)) {
            status = ucx_ep_open(ucx, r);
            if (status != SYMCOLL_OK) {
                atomic_store(&ucx->peers[r].failed, 1);
                if (first == SYMCOLL_OK)
                    first = status;
            }
        }
    }
    ucx->hello_rank = ucx->rank;
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        ucx_op_t *op;
        if (!ucx->peers[r].ep || atomic_load(&ucx->peers[r].failed))
            continue;
        status = ucx_op_new(ucx, &op);
        if (status == SYMCOLL_OK)
            status =
                ucx_op_track(ucx, op,
                             ucp_am_send_nbx(ucx->peers[r].ep, UCX_AM_HELLO, &ucx->hello_rank,
                                             sizeof(ucx->hello_rank), NULL, 0, &param),
                             "UCX check message", r);
        if (status != SYMCOLL_OK) {
            atomic_store(&ucx->peers[r].failed, 1);
            if (first == SYMCOLL_OK)
                first = status;
        }
    }
    status = ucx_exchange_hello(ucx, 2, dl);
    return first != SYMCOLL_OK ? first : status;
}

static symcoll_status_t ucx_set_handlers(ucx_ctx_t *ucx)
{
    ucp_am_handler_param_t hp;
    ucs_status_t s;

    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = UCX_AM_HELLO;
    hp.cb = ucx_hello_cb;
    hp.arg = ucx;
    s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    if (s == UCS_OK) {
        hp.id = UCX_AM_ABORT;
        hp.cb = ucx_abort_cb;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s == UCS_OK) {
        hp.id = UCX_AM_RKEY_ASK;
        hp.cb = ucx_rkey_ask_cb;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s == UCS_OK) {
        hp.field_mask |= UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        hp.id = UCX_AM_RKEY_ANSWER;
        hp.cb = ucx_rkey_answer_cb;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s == UCS_OK) {
        hp.id = UCX_AM_WRITE;
        hp.cb = ucx_write_cb;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s != UCS_OK) {
        log_error("ucp_worker_set_am_recv_handler: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    return SYMCOLL_OK;
}

/* The partner at creation of rank r: the rank of the next node whose local rank is r's
 * (modulo that node's size). A rank connects at creation to its partner and to the ranks
 * whose partner it is, a set that every rank derives alike, so that both ends of each of
 * these endpoints wait for each other's check message. by_node[k] lists node k's ranks
 * in local-rank order. */
static int ucx_partner(const topo_t *topo, int *const *by_node, int r)
{
    int next = (topo->rank_node[r] + 1) % topo->nnodes;
    return by_node[next][topo->rank_local_rank[r] % topo->node_size[next]];
}

/* Opens the endpoints to the creation partners (ucx_partner). */
static symcoll_status_t ucx_connect_partners(ucx_ctx_t *ucx, const topo_t *topo)
{
    int **by_node = calloc((size_t)topo->nnodes, sizeof(*by_node));
    symcoll_status_t status = SYMCOLL_ERR_NO_MEMORY;
    ucp_ep_h ep;

    if (!by_node)
        goto out;
    for (int k = 0; k < topo->nnodes; k++)
        if (!(by_node[k] = calloc((size_t)topo->node_size[k], sizeof(int))))
            goto out;
    for (int r = 0; r < ucx->nranks; r++)
        by_node[topo->rank_node[r]][topo->rank_local_rank[r]] = r;
    status = SYMCOLL_OK;
    for (int r = 0; r < ucx->nranks && status == SYMCOLL_OK && topo->nnodes > 1; r++) {
        int to = ucx_partner(topo, by_node, r);
        if (r == ucx->rank)
            status = ucx_ep_get(ucx, to, &ep);
        else if (to == ucx->rank)
            status = ucx_ep_get(ucx, r, &ep);
    }
out:
    for (int k = 0; by_node && k < topo->nnodes; k++)
        free(by_node[k]);
    free(by_node);
    return status;
}

/* Exchanges worker addresses (collective) and connects to the creation partners
 * (ucx_partner), checking each endpoint with one message each way; the other ranks of
 * other nodes are connected on first use (ucx_ep_get). A rank without a worker (its
 * creation failed) still takes part, with an empty address, so that every rank fails
 * alike instead of waiting for it; so does a rank that could not create an endpoint. */
symcoll_status_t ucx_connect_eps(ucx_ctx_t *ucx, const topo_t *topo)
{
    ucp_address_t *addr = NULL;
    size_t addr_len = 0, max_len = 0;
    /* one vote: the shortest address (0: some rank has no worker) and the longest, as
     * its negation, so that both are minima */
    int64_t lens[2], ok;
    char *addrs = NULL, *slot = NULL;
    ucs_status_t s;
    symcoll_status_t status = SYMCOLL_OK, vote;
    size_t n = (size_t)ucx->nranks;

    for (int r = 0; r < ucx->nranks; r++)
        ucx->peers[r].remote = topo->rank_node[r] != topo->node;
    if (ucx->worker) {
        /* before any peer can reach us */
        status = ucx_set_handlers(ucx);
        s = ucp_worker_get_address(ucx->worker, &addr, &addr_len);
        if (s != UCS_OK) {
            log_error("ucp_worker_get_address: %s", ucs_status_string(s));
            addr = NULL;
            addr_len = 0;
        }
        if (status != SYMCOLL_OK)
            addr_len = 0;
    }
    lens[0] = (int64_t)addr_len;
    lens[1] = -(int64_t)addr_len;
    status = bootstrap_allreduce(ucx->comm->bootstrap, lens, 2, BOOTSTRAP_OP_MIN);
    if (status != SYMCOLL_OK)
        goto out;
    if (lens[0] == 0) {
        log_error("UCX: some rank has no worker to connect to");
        status = SYMCOLL_ERR_UCX;
        goto out;
    }
    max_len = (size_t)-lens[1];
    if (max_len == 0 || max_len > (1u << 20)) {
        log_error("implausible UCX worker address length %zu", max_len);
        status = SYMCOLL_ERR_BOOTSTRAP;
        goto out;
    }
    slot = calloc(1, max_len);
    addrs = calloc(n, max_len);
    if (!slot || !addrs) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto out;
    }
    memcpy(slot, addr, addr_len);
    status = bootstrap_allgather(ucx->comm->bootstrap, slot, addrs, max_len);
    if (status != SYMCOLL_OK)
        goto out;
    /* kept: the other endpoints are opened on first use */
    ucx->addrs = addrs;
    ucx->addr_stride = max_len;
    addrs = NULL;
    status = ucx_connect_partners(ucx, topo);
    /* every rank has its endpoints, or all give up together */
    ok = status == SYMCOLL_OK;
    vote = bootstrap_allreduce(ucx->comm->bootstrap, &ok, 1, BOOTSTRAP_OP_MIN);
    if (vote != SYMCOLL_OK)
        status = vote; /* a dead peer stays PEER_FAILED, a deadline TIMED_OUT */
    else if (!ok && status == SYMCOLL_OK) {
        log_error("UCX: some rank could not create its endpoints");
        status = SYMCOLL_ERR_UCX;
    }
    if (status != SYMCOLL_OK)
        goto out;
    {
        deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
        status = ucx_exchange_hello(ucx, 1, &dl);
    }
    if (status == SYMCOLL_OK)
        ucx->worker_ready = true;
out:
    if (addr)
        ucp_worker_release_address(ucx->worker, addr);
    free(slot);
    free(addrs);
    return status;
}

symcoll_status_t ucx_connect_all(ucx_ctx_t *ucx, const topo_t *topo)
{
    ucx_caps_t mine, *caps = NULL;
    ucp_context_attr_t cattr;
    symcoll_status_t status;
    size_t n = (size_t)ucx->nranks;

    status = ucx_connect_eps(ucx, topo);
    if (status != SYMCOLL_OK)
        return status;
    memset(&mine, 0, sizeof(mine));
    memset(&cattr, 0, sizeof(cattr));
    cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ucx->shared->context, &cattr) == UCS_OK) {
        if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST))
            mine.mem_types |= TOPO_NET_MEM_HOST;
        if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA))
            mine.mem_types |= TOPO_NET_MEM_CUDA;
    }
    caps = calloc(n, sizeof(*caps));
    if (!caps)
        return SYMCOLL_ERR_NO_MEMORY;
    ucx->shared->native_rma = true;
    ucx->shared->cuda_rma = true;
    ucx->shared->cuda_driver = false;
    /* the endpoints to the creation partners; the all-gather below makes the answer
     * every rank's */
    for (int r = 0; r < ucx->nranks; r++) {
        ucx_ep_lanes_t lanes;
        if (!ucx->peers[r].ep)
            continue;
        ucx_describe_ep(ucx, ucx->peers[r].ep, &lanes);
        ucx->shared->native_rma = ucx->shared->native_rma && lanes.host_rma;
        ucx->shared->cuda_rma = ucx->shared->cuda_rma && lanes.cuda_rma;
        ucx->shared->cuda_driver = ucx->shared->cuda_driver || lanes.driver;
    }
    /* tell the others what this rank's UCX reaches and uses, and how its endpoints move
     * data: every rank must move data alike (an active message needs a receiver that
     * expects one) and report the same CUDA facts, the AND of every rank's view (one
     * all-gather for both) */
    mine.native_rma = ucx->shared->native_rma;
    mine.cuda_rma = ucx->shared->cuda_rma;
    mine.no_cuda_driver = !ucx->shared->cuda_driver;
    snprintf(mine.tls, sizeof(mine.tls), "%.*s", (int)sizeof(mine.tls) - 1,
             ucx->shared->transports);
    status = bootstrap_allgather(ucx->comm->bootstrap, &mine, caps, sizeof(mine));
    if (status != SYMCOLL_OK)
        goto out;
    for (int r = 0; r < ucx->nranks; r++) {
        ucx->shared->native_rma = ucx->shared->native_rma && caps[r].native_rma;
        ucx->shared->cuda_rma = ucx->shared->cuda_rma && caps[r].cuda_rma;
        ucx->shared->cuda_driver = ucx->shared->cuda_driver || !caps[r].no_cuda_driver;
    }
    if (ucx->comm->config.net_protocol == CONFIG_NET_PROTOCOL_PUT) {
        /* the target's UCX answers each emulated put with a message; when that answer
         * fails, UCX (1.13 to 1.22 seen) ends the process with ucs_fatal in
         * ucp_request_try_send */
        if (!ucx->shared->native_rma)
            log_warn("SYMCOLL_NET_PROTOCOL=put over UCX %s, which emulates RMA with "
                     "messages: a rank that dies while its puts are arriving can make UCX "
                     "abort the rank that received them (a UCX defect); the default (auto) "
                     "sends active messages there",
                     ucx->shared->transports[0] ? ucx->shared->transports : "?");
        ucx->shared->native_rma = true;
    } else if (ucx->comm->config.net_protocol == CONFIG_NET_PROTOCOL_AM) {
        ucx->shared->native_rma = false;
    }
    log_info("UCX transports to other nodes: %s; transfers: %s",
             ucx->shared->transports[0] ? ucx->shared->transports : "?",
             ucx->shared->native_rma ? "put, fence, flag put"
                                     : "active messages (RMA is emulated)");

    /* tell the topology what every rank's UCX reaches and uses */
    for (int r = 0; r < ucx->nranks; r++) {
        caps[r].tls[TOPO_TLS_MAX - 1] = 0;
        topo_set_net_caps(ucx->comm->topo, r, caps[r].mem_types, caps[r].tls);
    }
out:
    free(caps);
    return status;
}
