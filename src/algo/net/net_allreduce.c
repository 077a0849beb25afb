/* The entry of the all-reduce across nodes: the flat algorithms (recursive doubling,
 * ring) after their agreement, or the hierarchical one that agrees in its own steps; the
 * same over a UCX channel and among one rank a node; and the scratch that every all-reduce up
 * to a size needs, whichever algorithm the selector picks for it. */
#include "algo/net/net.h"

#include <stdlib.h>

#include "algo/base/ctx.h"
#include "algo/base/reduce.h"
#include "topo/select.h"
#include "topo/topo.h"

/* Receive area of rhd for bytes of elements up to 8 bytes wide: its slots hold whole
 * blocks, up to 7 bytes more per block than bytes / p2 (p2 <= n), 2 phases. */
static size_t net_rhd_area_bytes(size_t bytes, int n)
{
    return algo_net_rhd_area(bytes, 1, n) + 16 * (size_t)n + POOL_ALIGN;
}

/* Scratch of algo for bytes, as the algorithms reserve it (hier: its inner rd, ring or
 * rhd on the largest slice). */
static void net_needs_algo(net_state_t *st, topo_algo_t algo, size_t bytes, size_t *in,
                           size_t *acc, size_t *area)
{
    const topo_t *t = st->comm->topo;
    int L = t->local_size, nn = t->nnodes;

    *in = *acc = *area = 0;
    if (algo == TOPO_ALGO_RD) {
        *area = algo_net_rd_area(bytes, 1, st->n);
    } else if (algo == TOPO_ALGO_RING) {
        *area = algo_net_ring_area(bytes, 1, st->n);
    } else if (algo == TOPO_ALGO_RHD) {
        *area = net_rhd_area_bytes(bytes, st->n);
    } else if (algo == TOPO_ALGO_HIER) {
        /* ceil(count / L) elements of up to 8 bytes */
        size_t slice = bytes / (size_t)L + 8, rd_max = topo_rd_max(&t->select_cfg, nn);
        size_t rd = algo_net_rd_area(slice < rd_max ? slice : rd_max, 1, nn);
        size_t big = topo_net_flat_algo(&t->select_cfg, nn, slice) == TOPO_ALGO_RHD
                         ? net_rhd_area_bytes(slice, nn)
                         : algo_net_ring_area(slice, 1, nn);
        *in = bytes;
        *acc = slice;
        /* rd on slices up to its limit, ring or rhd above: the larger covers all */
        *area = rd > big ? rd : big;
    }
}

/* Scratch of the algorithm the selector picks for bytes. */
static void net_needs(net_state_t *st, size_t bytes, size_t *in, size_t *acc, size_t *area)
{
    topo_algo_t algo =
        topo_choose_algo(st->comm->topo, pool_backend(st->pool)->mem_type, bytes);

    net_needs_algo(st, algo, bytes, in, acc, area);
}

symcoll_status_t algo_net_reserve_upto(net_state_t *st, size_t max_bytes, bool fix,
                                       topo_algo_t extra)
{
    size_t in = 0, acc = 0, area = 0;
    /* the selector takes rd up to a limit, ring above it, hier from SYMCOLL_HIER_MIN on,
     * and each one's needs grow with the size: each one's largest size up to max_bytes
     * covers every size below (hier's inner rd and ring: net_needs) */
    const topo_select_cfg_t *cfg = &st->comm->topo->select_cfg;
    size_t sizes[3];
    symcoll_status_t status;

    /* float16/bfloat16 widened to float32 (net_widen) move twice their bytes */
    if (cfg->canonical_wide)
        max_bytes = max_bytes > SIZE_MAX / 2 ? SIZE_MAX : 2 * max_bytes;
    /* below SYMCOLL_HIER_MIN: the flat algorithms, up to the size before it */
    sizes[0] = max_bytes;
    sizes[1] = topo_rd_max(cfg, st->n);
    sizes[2] = cfg->hier_min ? cfg->hier_min - 1 : max_bytes;

    for (int i = 0; i < 3; i++) {
        size_t b = sizes[i] < max_bytes ? sizes[i] : max_bytes, bi, ba, br;
        net_needs(st, b, &bi, &ba, &br);
        in = bi > in ? bi : in;
        acc = ba > acc ? ba : acc;
        area = br > area ? br : area;
    }
    {
        /* algo_net_group_allreduce_on: rd, ring or rhd among one rank a node */
        int nn = st->comm->topo->nnodes;
        size_t rd_max = topo_rd_max(cfg, nn);
        size_t rd = algo_net_rd_area(max_bytes < rd_max ? max_bytes : rd_max, 1, nn);
        size_t big = topo_net_flat_algo(cfg, nn, max_bytes) == TOPO_ALGO_RHD
                         ? net_rhd_area_bytes(max_bytes, nn)
                         : algo_net_ring_area(max_bytes, 1, nn);
        area = rd > area ? rd : area;
        area = big > area ? big : area;
    }
    if (extra != TOPO_ALGO_AUTO) {
        /* and an algorithm a call forces on the chunks (cnet_op_t's algo_chunk: a call's
         * symcoll_comm_set_algo, a tuning file, SYMCOLL_ALGO), at the largest size */
        size_t bi, ba, br;
        net_needs_algo(st, extra, max_bytes, &bi, &ba, &br);
        in = bi > in ? bi : in;
        acc = ba > acc ? ba : acc;
        area = br > area ? br : area;
    }
    st->fixed = false;
    status = algo_net_reserve(st, in, acc, area);
    st->fixed = fix && status == SYMCOLL_OK;
    if (status == SYMCOLL_OK)
        log_debug("channel scratch for all-reduces up to %zu bytes: %zu + %zu + %d x %zu bytes",
                  max_bytes, st->in_bytes, st->acc_bytes, st->nareas, st->area_bytes);
    return status;
}

static symcoll_status_t net_allreduce(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                      topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                      size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                      const net_sig_t *sig, bool exact);

symcoll_status_t algo_net_allreduce(comm_t *comm, pool_t *pool, topo_algo_t algo,
                                    const void *sendbuf, void *recvbuf, size_t count,
                                    symcoll_dtype_t dtype, symcoll_op_t op)
{
    net_sig_t sig = {count,
                     dtype,
                     op,
                     SYMCOLL_MEM_HOST,
                     comm->algo->salt,
                     (int)comm->topo->select_cfg.call_forced};
    return net_allreduce(comm, comm->ucx, pool, algo, sendbuf, recvbuf, count, dtype, op, &sig,
                         true);
}

/* Over group g: the agreement (algo_net_rd with check), then algo (rd or ring; its receive
 * area reserved first), to completion; or the agreement alone (algo TOPO_ALGO_HIER: the
 * hierarchical algorithm follows). Where rd's data fits the reserved area, the agreement
 * is the rd itself, which then costs nothing more; else it is rd's messages without data,
 * and only once every rank knows that all agree does any of them grow the scratch
 * (collective) or take a path of its own. */
static symcoll_status_t net_run_flat(net_state_t *st, const net_group_t *g, topo_algo_t algo,
                                     bool group, const void *sendbuf, void *recvbuf,
                                     size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                     deadline_t *dl, const net_sig_t *sig, bool exact)
{
    size_t esize = symcoll_dtype_size(dtype);
    bool rd = algo == TOPO_ALGO_RD;
    size_t need = rd                      ? algo_net_rd_area(count, esize, g->n)
                  : algo == TOPO_ALGO_RHD ? algo_net_rhd_area(count, esize, g->n)
                                          : algo_net_ring_area(count, esize, g->n);
    bool fits = rd && st->has_scratch && need <= st->area_bytes;
    symcoll_status_t status;
    net_call_t c;

    if (group) {
        if (st->nareas < 4) {
            log_error("internal: all-reduce among one rank a node with one rank a node");
            return SYMCOLL_ERR_INTERNAL;
        }
        algo_net_group_call_init(&c, st, g, sendbuf, recvbuf, count, dtype, op, dl, sig);
    } else {
        algo_net_call_init(&c, st, g, sendbuf, recvbuf, count, dtype, op, dl, sig);
    }
    c.check = true;
    c.header_only = !fits;
    status = algo_net_rd(&c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
        return algo_net_mismatch(st, &c, sig, exact);
    if (status != SYMCOLL_OK || fits || algo == TOPO_ALGO_HIER)
        return status;
    c.check = false;
    c.header_only = false;
    status = algo_net_reserve(st, 0, 0, need);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_call_area(&c);
    status = rd                      ? algo_net_rd(&c)
             : algo == TOPO_ALGO_RHD ? algo_net_rhd(&c)
                                     : algo_net_ring(&c);
    if (status == SYMCOLL_OK)
        status = ucx_wait_all(st->ucx, dl);
    return status;
}

symcoll_status_t algo_net_group_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                             void *buf, size_t count, symcoll_dtype_t dtype,
                                             symcoll_op_t op, const net_sig_t *sig)
{
    net_state_t *st;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    symcoll_status_t status;
    net_group_t g;
    topo_algo_t algo;

    status = algo_net_state_usable_on(comm, ucx, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    algo_net_local_index_group(st, &g);
    algo = topo_net_flat_algo(&comm->topo->select_cfg, g.n, count * symcoll_dtype_size(dtype));
    return algo_net_finish(
        st, net_run_flat(st, &g, algo, true, buf, buf, count, dtype, op, &dl, sig, false));
}

/* In the canonical order a float16 or bfloat16 sum, product or average accumulates in
 * float32 and is rounded once (algo/base/reduce.h); recursive doubling and hier round
 * their partial results at every step, so such a call of more than 2 ranks runs on a
 * float32 copy instead (twice the bytes across nodes) and rounds at the end. Every rank
 * decides alike from the communicator's configuration and the call. */
static bool net_widen(const comm_t *comm, symcoll_dtype_t dtype, symcoll_op_t op)
{
    return comm->topo->select_cfg.canonical_wide && comm->nranks > 2 &&
           (dtype == SYMCOLL_FLOAT16 || dtype == SYMCOLL_BFLOAT16) &&
           (op == SYMCOLL_SUM || op == SYMCOLL_PROD || op == SYMCOLL_AVG);
}

static symcoll_status_t net_allreduce_run(net_state_t *st, const net_group_t *all,
                                          topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                          size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                          deadline_t *dl, const net_sig_t *sig, bool exact);

static symcoll_status_t net_allreduce_wide(net_state_t *st, const net_group_t *all,
                                           topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                           size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                           deadline_t *dl, const net_sig_t *sig, bool exact)
{
    symcoll_status_t status;

    if (count > st->wide_count) {
        float *w = count > SIZE_MAX / sizeof(float) ? NULL : malloc(count * sizeof(float));
        if (!w) {
            /* the peers are on their way into the call: break the communicator and tell
             * them, rather than leave them waiting for this rank */
            log_error("symcoll_allreduce: no memory for the float32 copy of %zu elements",
                      count);
            return algo_net_give_up(st, SYMCOLL_ERR_NO_MEMORY);
        }
        free(st->wide);
        st->wide = w;
        st->wide_count = count;
    }
    algo_widen(st->wide, sendbuf, count, dtype);
    status = net_allreduce_run(st, all, algo, st->wide, st->wide, count, SYMCOLL_FLOAT32, op,
                               dl, sig, exact);
    if (status != SYMCOLL_OK)
        return status;
    algo_narrow(recvbuf, st->wide, count, dtype);
    return SYMCOLL_OK;
}

/* algo_net_allreduce_on; exact: from the caller's thread (algo_net_mismatch). */
static symcoll_status_t net_allreduce(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                      topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                      size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                      const net_sig_t *sig, bool exact)
{
    net_state_t *st;
    deadline_t dl = deadline_make(comm->timeout_sec, &comm->aborted);
    net_group_t all;
    symcoll_status_t status;

    if (!ucx) {
        log_error("internal: inter-node all-reduce without a UCX context");
        return SYMCOLL_ERR_INTERNAL;
    }
    status = algo_net_state_usable_on(comm, ucx, pool, &st);
    if (status != SYMCOLL_OK)
        return status;
    if (algo != TOPO_ALGO_RD && algo != TOPO_ALGO_RING && algo != TOPO_ALGO_HIER &&
        algo != TOPO_ALGO_RHD) {
        log_error("symcoll_allreduce: %s is not an algorithm across nodes",
                  topo_algo_name(algo));
        return SYMCOLL_ERR_UNSUPPORTED;
    }
    all.ranks = st->all;
    all.n = comm->nranks;
    all.me = comm->rank;
    if (net_widen(comm, dtype, op))
        return algo_net_finish(st, net_allreduce_wide(st, &all, algo, sendbuf, recvbuf, count,
                                                      dtype, op, &dl, sig, exact));
    return algo_net_finish(st, net_allreduce_run(st, &all, algo, sendbuf, recvbuf, count, dtype,
                                                 op, &dl, sig, exact));
}

static symcoll_status_t net_allreduce_run(net_state_t *st, const net_group_t *all,
                                          topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                          size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                          deadline_t *dl, const net_sig_t *sig, bool exact)
{
    symcoll_status_t status;

    if (algo == TOPO_ALGO_HIER && st->hier_all) {
        /* every rank is in the hierarchical algorithm, whatever its count: it agrees in
         * its own steps */
        net_call_t c;
        bool rerun = false;
        status =
            algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, dl, sig, true, &rerun, &c);
        if (status == SYMCOLL_OK && (c.tag & NET_TAG_BAD))
            status = algo_net_mismatch(st, &c, sig, exact);
        else if (status == SYMCOLL_OK && rerun)
            status = algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, dl, sig, false, NULL,
                                   NULL);
    } else {
        /* ranks of other counts may be in rd or ring: all agree the flat way first */
        status = net_run_flat(st, all, algo, false, sendbuf, recvbuf, count, dtype, op, dl, sig,
                              exact);
        if (status == SYMCOLL_OK && algo == TOPO_ALGO_HIER)
            status = algo_net_hier(st, sendbuf, recvbuf, count, dtype, op, dl, sig, false, NULL,
                                   NULL);
    }
    return status;
}

symcoll_status_t algo_net_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                       size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                       const net_sig_t *sig)
{
    return net_allreduce(comm, ucx, pool, algo, sendbuf, recvbuf, count, dtype, op, sig, false);
}
