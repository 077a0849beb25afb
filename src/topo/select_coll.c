/* The selector's answer for every collective: the all-reduce's plan of the call's plan
 * size (select.c), and how a reduce-scatter, all-gather, broadcast or barrier runs on
 * it. The one place that decides a call's path; the algorithm layer runs what it says and
 * the tools print it (symcoll_comm_print_decisions). */
#include <stdio.h>
#include <string.h>

#include "topo/select.h"
#include "topo/tune.h"

const char *topo_coll_name(topo_coll_t coll)
{
    static const char *const names[TOPO_COLL_LAST] = {
        [TOPO_COLL_ALLREDUCE] = "all-reduce", [TOPO_COLL_REDUCE_SCATTER] = "reduce-scatter",
        [TOPO_COLL_ALLGATHER] = "all-gather", [TOPO_COLL_BROADCAST] = "broadcast",
        [TOPO_COLL_BARRIER] = "barrier",
    };
    return (unsigned)coll < TOPO_COLL_LAST ? names[coll] : "?";
}

/* Host memory across nodes, two ranks, where the all-reduce runs recursive doubling (up
 * to 16 x SYMCOLL_NET_RD_MAX, or any size with SYMCOLL_ALGO=rd): a reduce-scatter or
 * all-gather run as one all-reduce would move both ranks' whole buffers, twice the bytes
 * of one exchange of a block that also carries the agreement. Measured on 2 simulated
 * nodes over TCP: 0.83-0.93x Open MPI's time up to 32 KiB, where the all-reduce took
 * 1.0-1.19x. So is a broadcast above SYMCOLL_NET_RD_MAX (below it: eager, or the
 * all-reduce): the root's data one way, the receiver's agreement the other, 0.51-0.58x
 * Open MPI at 128 KiB and 0.72-0.87x at 512 KiB, where the chain after an agreement round
 * trip took 0.74-0.88x and 0.92-1.00x. */
static bool via_pair(const topo_select_cfg_t *cfg, const topo_shape_t *s, topo_coll_t coll,
                     const topo_plan_t *p, size_t bytes)
{
    return s->nranks == 2 && p->family == TOPO_FAMILY_NET_HOST && p->algo == TOPO_ALGO_RD &&
           (coll == TOPO_COLL_ALLGATHER || coll == TOPO_COLL_REDUCE_SCATTER ||
            (coll == TOPO_COLL_BROADCAST && bytes > cfg->net_rd_max));
}

/* Host memory across nodes: native rings and chains where the all-reduce runs the ring,
 * and above recursive doubling's sizes where it runs the hierarchical algorithm (below
 * them one all-reduce is fewer rounds). Not in the canonical order beyond 2 ranks: a
 * ring's reduce-scatter does not keep it; the collectives without a reduction are
 * planned without it (topo_select_coll_plan). */
static bool via_net_native(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                           const topo_plan_t *p, size_t bytes)
{
    return p->family == TOPO_FAMILY_NET_HOST && (!cfg->canonical || s->nranks <= 2) &&
           (p->algo == TOPO_ALGO_RING ||
            (p->algo == TOPO_ALGO_HIER && bytes > topo_rd_max(cfg, s->nranks)));
}

/* CUDA memory inside a node, SYMCOLL_CUDA_COLL=auto: the collective's own one-shot or
 * two-shot kernel where the all-reduce's serves, every rank on the node. */
static bool via_cuda_native(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                            topo_coll_t coll, const topo_plan_t *p)
{
    return coll != TOPO_COLL_BARRIER && cfg->cuda_coll == CONFIG_CUDA_COLL_AUTO &&
           p->family == TOPO_FAMILY_CUDA &&
           (p->algo == TOPO_ALGO_ONESHOT || p->algo == TOPO_ALGO_TWOSHOT) && s->nnodes == 1 &&
           s->nranks <= s->cuda_max_local;
}

static topo_via_t select_via(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                             topo_coll_t coll, const topo_plan_t *p, size_t bytes,
                             const char **why)
{
    if (p->family == TOPO_FAMILY_HOST &&
        (coll != TOPO_COLL_REDUCE_SCATTER || cfg->host_rs_native)) {
        *why = "the host pool's own algorithm";
        return TOPO_VIA_NATIVE;
    }
    if (coll == TOPO_COLL_BROADCAST && p->family == TOPO_FAMILY_NET_HOST &&
        bytes <= TOPO_NET_BC_EAGER_MAX && s->nranks <= TOPO_NET_BC_MAX_RANKS) {
        *why = "eager: at most NET_BC_EAGER_MAX bytes, NET_BC_MAX_RANKS ranks";
        return TOPO_VIA_EAGER;
    }
    if (coll != TOPO_COLL_BARRIER && via_pair(cfg, s, coll, p, bytes)) {
        *why = "2 ranks where the all-reduce runs rd: one exchange";
        return TOPO_VIA_PAIR;
    }
    if (coll != TOPO_COLL_BARRIER && via_net_native(cfg, s, p, bytes)) {
        *why = "rings and chains over UCX where the all-reduce runs ring (or hier above rd)";
        return TOPO_VIA_NATIVE;
    }
    if (via_cuda_native(cfg, s, coll, p)) {
        *why = "its own kernel (SYMCOLL_CUDA_COLL=auto)";
        return TOPO_VIA_NATIVE;
    }
    *why = "one all-reduce of the plan's bytes";
    return TOPO_VIA_ALLREDUCE;
}

void topo_select_coll_plan(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                           topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes,
                           topo_plan_t *plan, topo_decision_t *d)
{
    const char *why = NULL;
    topo_select_cfg_t plain, over;

    /* the call's algorithm, else SYMCOLL_ALGO, else the tuning file's entry (where its
     * algorithm can run on this memory; elsewhere the built-in rules) */
    if (cfg->call_forced != TOPO_ALGO_AUTO) {
        over = *cfg;
        over.forced = cfg->call_forced;
        over.forced_by = TOPO_SOURCE_CALL;
        cfg = &over;
    } else if (cfg->forced == TOPO_ALGO_AUTO && cfg->tuned) {
        const topo_tune_entry_t *e = topo_tune_lookup(cfg->tuned, coll, mem, bytes);
        if (e && topo_algo_applicable(e->algo, mem, shape, NULL, 0)) {
            over = *cfg;
            over.forced = e->algo;
            over.forced_by = TOPO_SOURCE_TUNED;
            over.tune_entry = e;
            cfg = &over;
        }
    }
    if (d)
        d->source = cfg->forced == TOPO_ALGO_AUTO           ? TOPO_SOURCE_BUILTIN
                    : cfg->forced_by == TOPO_SOURCE_BUILTIN ? TOPO_SOURCE_ENV
                                                            : (topo_source_t)cfg->forced_by;
    /* the order of a reduction means nothing to the collectives without one */
    if (cfg->canonical && coll != TOPO_COLL_ALLREDUCE && coll != TOPO_COLL_REDUCE_SCATTER) {
        plain = *cfg;
        plain.canonical = false;
        cfg = &plain;
    }
    topo_select_plan(cfg, shape, mem, bytes, plan, d);
    plan->coll = coll;
    plan->via = TOPO_VIA_NATIVE;
    if (coll == TOPO_COLL_ALLREDUCE)
        return;
    /* one rank, or nothing serves the all-reduce: the all-reduce path copies, or says
     * why, with no side effect */
    if (plan->family == TOPO_FAMILY_NONE || plan->family == TOPO_FAMILY_SELF) {
        plan->via = TOPO_VIA_ALLREDUCE;
        return;
    }
    plan->via = select_via(cfg, shape, coll, plan, bytes, &why);
    if (d && !d->quiet) {
        size_t len = strnlen(d->reason, sizeof(d->reason));
        snprintf(d->reason + len, sizeof(d->reason) - len, "; %s: %s", topo_coll_name(coll),
                 why);
    }
}

void topo_plan_path(const topo_plan_t *p, bool brief, char *out, size_t len)
{
    const char *algo = topo_algo_name(p->algo);

    if (p->family == TOPO_FAMILY_NONE)
        snprintf(out, len, brief ? "none" : "none (as the all-reduce)");
    else if (p->coll == TOPO_COLL_ALLREDUCE)
        snprintf(out, len, "%s", algo);
    else if (p->via == TOPO_VIA_EAGER)
        snprintf(out, len, brief ? "ucx:eager" : "eager over UCX (the root does not wait)");
    else if (p->via == TOPO_VIA_PAIR)
        snprintf(out, len, brief ? "ucx:exchange" : "one exchange over UCX (2 ranks)");
    else if (p->via == TOPO_VIA_NATIVE && p->family == TOPO_FAMILY_HOST)
        snprintf(out, len, brief ? "native" : "native host");
    else if (p->via == TOPO_VIA_NATIVE && p->family == TOPO_FAMILY_NET_HOST)
        /* a ring or chain over every rank in node order, whichever the all-reduce's */
        snprintf(out, len, brief ? "ucx:%s" : "native over UCX (ring, chain)", algo);
    else if (p->via == TOPO_VIA_NATIVE)
        snprintf(out, len, brief ? "native:%s" : "native CUDA kernel: %s", algo);
    else if (brief)
        snprintf(out, len, "ar:%s", algo);
    else
        snprintf(out, len, "via all-reduce: %s (%s)", algo, topo_family_name(p->family));
}

const char *topo_plan_order(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                            const topo_plan_t *p, size_t bytes)
{
    bool reduces = p->coll == TOPO_COLL_ALLREDUCE || p->coll == TOPO_COLL_REDUCE_SCATTER;

    if (!reduces || p->family == TOPO_FAMILY_NONE)
        return "-";
    if (p->family == TOPO_FAMILY_SELF)
        return "exact";
    /* every host path and every CUDA kernel inside a node (up to 8 ranks, all they serve)
     * reduces all copies in the tree */
    if (p->family == TOPO_FAMILY_HOST || p->family == TOPO_FAMILY_CUDA)
        return "canonical";
    /* CUDA across nodes in the canonical order: the staged chunks' host algorithms,
     * hier over the GPUs only where it keeps the tree, the direct path's kernel */
    if (p->family != TOPO_FAMILY_NET_HOST)
        return cfg->canonical ? "canonical" : "cuda-own";
    if (p->coll != TOPO_COLL_ALLREDUCE && p->via == TOPO_VIA_PAIR)
        return "canonical"; /* two ranks: one operation */
    if (cfg->canonical || s->nranks <= 2)
        return "canonical"; /* two ranks: x0 + x1 on every path */
    if (p->algo == TOPO_ALGO_RHD)
        return "canonical";
    if ((p->coll != TOPO_COLL_ALLREDUCE && p->via == TOPO_VIA_NATIVE) ||
        p->algo == TOPO_ALGO_RING)
        return "ring";
    if (p->algo == TOPO_ALGO_HIER) {
        /* its slices: rd up to the limit, the ring above */
        if (bytes / (size_t)(s->ppn > 0 ? s->ppn : 1) > topo_rd_max(cfg, s->nnodes))
            return "ring";
        return s->hier_canonical ? "rd-steps" : "node-wise";
    }
    return "rd-steps";
}
