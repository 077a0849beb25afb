/* UCX layer: endpoints of a worker: worker address exchange, connection to the ranks of
 * the other nodes, check messages, and the transports and protocol they settle on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "ucx/ucx_int.h"

/* What every rank tells the others at creation (besides its worker address). */
typedef struct ucx_caps {
    uint32_t mem_types;
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

/* Sends one message to every remote rank that did not fail and waits, progressing, for
 * one from each: the count-th such exchange. At creation (count 1) it shows broken
 * connectivity early and saves the first all-reduce the wireup; at close (count 2) it
 * keeps every rank progressing until all have flushed. */
symcoll_status_t ucx_exchange_hello(ucx_ctx_t *ucx, int count, deadline_t *dl)
{
    symcoll_status_t status;
    unsigned iter = 0;

    ucx->hello_rank = ucx->rank;
    for (int r = 0; r < ucx->nranks; r++) {
        ucp_request_param_t param = {0};
        ucx_op_t *op;
        if (!ucx_is_remote(ucx, r) || atomic_load(&ucx->peers[r].failed))
            continue;
        status = ucx_op_new(ucx, &op);
        if (status == SYMCOLL_OK)
            status =
                ucx_op_track(ucx, op,
                             ucp_am_send_nbx(ucx->peers[r].ep, UCX_AM_HELLO, &ucx->hello_rank,
                                             sizeof(ucx->hello_rank), NULL, 0, &param),
                             "UCX check message", r);
        if (status != SYMCOLL_OK)
            return status;
    }
    for (int r = 0; r < ucx->nranks; r++) {
        while (ucx_is_remote(ucx, r) && ucx->peers[r].hello < count &&
               !atomic_load(&ucx->peers[r].failed)) {
            if (ucp_worker_progress(ucx->worker))
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

static symcoll_status_t ucx_check_connections(ucx_ctx_t *ucx)
{
    deadline_t dl = deadline_make(ucx->comm->timeout_sec, &ucx->comm->aborted);
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
        hp.field_mask |= UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.id = UCX_AM_WRITE;
        hp.cb = ucx_write_cb;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        s = ucp_worker_set_am_recv_handler(ucx->worker, &hp);
    }
    if (s != UCS_OK) {
        log_error("ucp_worker_set_am_recv_handler: %s", ucs_status_string(s));
        return SYMCOLL_ERR_UCX;
    }
    return ucx_exchange_hello(ucx, 1, &dl);
}

/* Exchanges worker addresses (collective), creates an endpoint to every rank of another
 * node and checks each with one message each way. A rank without a worker (its
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
    symcoll_status_t status;
    size_t n = (size_t)ucx->nranks;

    if (ucx->worker) {
        s = ucp_worker_get_address(ucx->worker, &addr, &addr_len);
        if (s != UCS_OK) {
            log_error("ucp_worker_get_address: %s", ucs_status_string(s));
            addr = NULL;
            addr_len = 0;
        }
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

    for (int r = 0; r < ucx->nranks; r++) {
        ucp_ep_params_t ep;
        if (topo->rank_node[r] == topo->node)
            continue;
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)(addrs + (size_t)r * max_len);
        ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = ucx_err_cb;
        ep.err_handler.arg = &ucx->peers[r];
        s = ucp_ep_create(ucx->worker, &ep, &ucx->peers[r].ep);
        if (s != UCS_OK) {
            log_error("ucp_ep_create to rank %d: %s", r, ucs_status_string(s));
            ucx->peers[r].ep = NULL;
            status = SYMCOLL_ERR_UCX;
            break;
        }
        ucx->nremote++;
    }
    /* every rank has its endpoints, or all give up together */
    ok = status == SYMCOLL_OK;
    if (bootstrap_allreduce(ucx->comm->bootstrap, &ok, 1, BOOTSTRAP_OP_MIN) != SYMCOLL_OK)
        status = SYMCOLL_ERR_BOOTSTRAP;
    else if (!ok && status == SYMCOLL_OK) {
        log_error("UCX: some rank could not create its endpoints");
        status = SYMCOLL_ERR_UCX;
    }
    if (status != SYMCOLL_OK)
        goto out;
    status = ucx_check_connections(ucx);
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
    for (int r = 0; r < ucx->nranks; r++) {
        ucx_ep_lanes_t lanes;
        if (!ucx_is_remote(ucx, r))
            continue;
        ucx_describe_ep(ucx, ucx->peers[r].ep, &lanes);
        ucx->shared->native_rma = ucx->shared->native_rma && lanes.host_rma;
        ucx->shared->cuda_rma = ucx->shared->cuda_rma && lanes.cuda_rma;
        ucx->shared->cuda_driver = ucx->shared->cuda_driver || lanes.driver;
    }
    {
        /* every rank must move data alike (an active message needs a receiver that
         * expects one) and report the same CUDA facts: the AND of every rank's view */
        int64_t agree[3] = {ucx->shared->native_rma, ucx->shared->cuda_rma,
                            !ucx->shared->cuda_driver};
        status = bootstrap_allreduce(ucx->comm->bootstrap, agree, 3, BOOTSTRAP_OP_MIN);
        if (status != SYMCOLL_OK)
            goto out;
        ucx->shared->native_rma = agree[0];
        ucx->shared->cuda_rma = agree[1];
        ucx->shared->cuda_driver = !agree[2];
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
    snprintf(mine.tls, sizeof(mine.tls), "%.*s", (int)sizeof(mine.tls) - 1,
             ucx->shared->transports);
    status = bootstrap_allgather(ucx->comm->bootstrap, &mine, caps, sizeof(mine));
    if (status != SYMCOLL_OK)
        goto out;
    for (int r = 0; r < ucx->nranks; r++) {
        caps[r].tls[TOPO_TLS_MAX - 1] = 0;
        topo_set_net_caps(ucx->comm->topo, r, caps[r].mem_types, caps[r].tls);
    }
out:
    free(caps);
    return status;
}
