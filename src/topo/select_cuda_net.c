/* The selector for CUDA memory across nodes (topo_select_cuda_net): whether the direct
 * path (UCX puts into the peers' CUDA pool) or its hierarchical form serves a call, and
 * otherwise the staged path's chunks, each reduced across nodes by the host algorithm
 * for its size; and the reasons that symcoll_info and the logs give. */
#include <stdio.h>
#include <string.h>

#include "topo/select_int.h"

/* CUDA memory across nodes, where the direct path does not take it (one rank a node, a
 * UCX that puts into the CUDA pool: topo_cuda_net_direct), moves through pinned host
 * memory of the pool in chunks, each reduced across nodes by the host algorithm for the
 * chunk's size. */
bool topo_cuda_net_hier(const topo_select_cfg_t *cfg, const topo_shape_t *shape, size_t bytes)
{
    /* in the canonical order: where the node-by-node sums are subtrees of the tree, and
     * not where float16/bfloat16 must reach the nodes' step unrounded (canonical, not auto:
     * the GPUs' node sums are in the element type) */
    if (cfg->canonical && (cfg->canonical_wide || !shape->hier_canonical))
        return false;
    return shape->nnodes > 1 && shape->ppn > 1 && shape->uniform &&
           shape->ppn <= shape->cuda_max_local && shape->gpu_link != TOPO_LINK_NONE &&
           (cfg->forced == TOPO_ALGO_HIER ||
            (cfg->forced == TOPO_ALGO_AUTO && bytes >= cfg->hier_min &&
             (!shape->gpus_shared || bytes >= TOPO_CUDA_HIER_SHARED_MIN)));
}

/* Whether the direct path serves a step among nranks ranks, one a node, moving bytes
 * each (the flat call, or the inter-node step of a hierarchical one). */
static bool direct_applies(const topo_select_cfg_t *cfg, const topo_shape_t *shape, int nranks,
                           size_t bytes)
{
    return nranks <= TOPO_CUDA_DIRECT_MAX_RANKS && shape->net_cuda && shape->net_direct >= 0 &&
           cfg->cuda_net_path != TOPO_PATH_STAGED &&
           (cfg->cuda_net_path == TOPO_PATH_DIRECT ||
            (!shape->net_direct_drv && bytes >= cfg->cuda_net_direct_min));
}

/* what one rank of a hierarchical call moves across the nodes: its slice */
static size_t hier_slice(const topo_shape_t *shape, size_t bytes)
{
    return (bytes + (size_t)shape->ppn - 1) / (size_t)shape->ppn;
}

bool topo_cuda_net_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape, size_t bytes)
{
    return shape->nnodes > 1 && shape->nnodes == shape->nranks &&
           direct_applies(cfg, shape, shape->nranks, bytes);
}

/* Only when forced for now: no machine with GPUDirect RDMA has measured it; the one H200
 * lent so far (4 ranks sharing it) passed every case, over transports that call the CUDA
 * driver from the channel, which auto does not take anyway. */
bool topo_cuda_net_hier_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                               size_t bytes)
{
    return cfg->cuda_net_path == TOPO_PATH_DIRECT && topo_cuda_net_hier(cfg, shape, bytes) &&
           direct_applies(cfg, shape, shape->nnodes, hier_slice(shape, bytes));
}

static const char *direct_source(const topo_select_cfg_t *cfg, const topo_shape_t *shape)
{
    return cfg->cuda_net_path == TOPO_PATH_DIRECT ? "forced by SYMCOLL_CUDA_NET_PATH=direct"
           : shape->net_direct > 0
               ? "every peer's probe put landed"
               : "probed when the CUDA pool is created (staged if it fails)";
}

/* The direct path: every rank's data put into every peer's CUDA pool, reduced there in
 * one pass (the one-shot across nodes: TOPO_ALGO_ONESHOT marks the family). */
static void select_cuda_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                               topo_decision_t *d)
{
    topo_decide(
        d, TOPO_ALGO_ONESHOT,
        "CUDA direct: UCX puts each rank's data into the %d peers' CUDA pool with rkeys, "
        "the GPU reduces; %s",
        shape->nranks - 1, direct_source(cfg, shape));
}

/* Hierarchical with a direct inter-node step: the slice of the node's sum put into the
 * CUDA pool of the ranks of this local index on the other nodes, reduced there. */
static void select_cuda_hier_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                                    size_t bytes, topo_decision_t *d)
{
    char msz[32];

    topo_fmt_size(hier_slice(shape, bytes), msz, sizeof(msz));
    topo_decide(
        d, TOPO_ALGO_HIER,
        "CUDA hier: RS/AG over each node's %d GPUs (%s), UCX puts each rank's %s slice "
        "into the CUDA pool of its %d peer%s of other nodes with rkeys, the GPU reduces; "
        "%s",
        shape->ppn, topo_link_name(shape->gpu_link), msz, shape->nnodes - 1,
        shape->nnodes == 2 ? "" : "s", direct_source(cfg, shape));
    d->cuda_hier = d->direct = true;
}

/* Why a CUDA call across nodes is staged rather than direct, for the reason; hier: the
 * call is hierarchical (its inter-node step is among one rank a node). */
static const char *cuda_staged_why(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                                   bool hier)
{
    if (!shape->net_cuda)
        return "UCX lacks CUDA";
    if (cfg->cuda_net_path == TOPO_PATH_STAGED)
        return "SYMCOLL_CUDA_NET_PATH=staged";
    if (shape->net_direct < 0 && shape->net_direct_one_queue)
        return "UCX has CUDA, driver lanes under CUDA_DEVICE_MAX_CONNECTIONS=1";
    if (shape->net_direct < 0)
        return "UCX has CUDA, the direct probe failed";
    if (!hier && shape->nnodes != shape->nranks)
        return "UCX has CUDA, direct only with one rank a node (or hierarchical, forced)";
    if (hier && cfg->cuda_net_path != TOPO_PATH_DIRECT)
        return "UCX has CUDA, the hierarchical direct step only when forced";
    if ((hier ? shape->nnodes : shape->nranks) > TOPO_CUDA_DIRECT_MAX_RANKS)
        return "UCX has CUDA, too many ranks for direct";
    if (shape->net_direct_drv)
        return "UCX has CUDA, but its lanes call the CUDA driver (direct only when forced)";
    return "UCX has CUDA, below SYMCOLL_CUDA_NET_DIRECT_MIN";
}

static void select_cuda_staged(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                               size_t bytes, topo_decision_t *d)
{
    topo_shape_t hs = *shape;
    topo_select_cfg_t hcfg = *cfg;
    bool hier = topo_cuda_net_hier(cfg, shape, bytes);
    size_t moved = bytes, chunk;
    char sz[32], msz[32], inner[TOPO_REASON_MAX];
    int n;

    hs.gpu_link = TOPO_LINK_NONE;
    if (hier) {
        /* what crosses the nodes: one rank's slice, among one rank of each node */
        moved = hier_slice(shape, bytes);
        hs.nranks = shape->nnodes;
        hs.ppn = 1;
        hcfg.forced = TOPO_ALGO_AUTO;
    }
    chunk = cfg->cuda_net_chunk
                ? topo_cuda_net_chunk(moved, cfg->cuda_net_chunk, cfg->cuda_net_channels)
                : moved;
    topo_select_impl(&hcfg, &hs, SYMCOLL_MEM_HOST, chunk, d);
    if (d->algo == TOPO_ALGO_NONE)
        return;
    if (hier)
        d->algo = TOPO_ALGO_HIER;
    d->cuda_hier = hier;
    if (d->quiet)
        return;
    topo_fmt_size(chunk, sz, sizeof(sz));
    topo_fmt_size(moved, msz, sizeof(msz));
    memcpy(inner, d->reason, sizeof(inner));
    if (hier)
        n = snprintf(d->reason, sizeof(d->reason),
                     "CUDA hier: RS/AG over each node's %d GPUs (%s), each rank's %s "
                     "slice staged (%s), %s chunks on %d channel%s: ",
                     shape->ppn, topo_link_name(shape->gpu_link), msz,
                     cuda_staged_why(cfg, shape, true), sz, cfg->cuda_net_channels,
                     cfg->cuda_net_channels == 1 ? "" : "s");
    else
        n = snprintf(d->reason, sizeof(d->reason),
                     "CUDA staged via pinned host memory (%s), %s chunks on %d channel%s: ",
                     cuda_staged_why(cfg, shape, false), sz, cfg->cuda_net_channels,
                     cfg->cuda_net_channels == 1 ? "" : "s");
    if (n > 0 && (size_t)n < sizeof(d->reason)) {
        /* as much of the inner reason as fits */
        size_t room = sizeof(d->reason) - (size_t)n - 1, len = strnlen(inner, sizeof(inner));
        len = len < room ? len : room;
        memcpy(d->reason + n, inner, len);
        d->reason[(size_t)n + len] = '\0';
    }
}

void topo_select_cuda_net(const topo_select_cfg_t *cfg, const topo_shape_t *shape, size_t bytes,
                          topo_decision_t *d)
{
    if (topo_cuda_net_direct(cfg, shape, bytes))
        select_cuda_direct(cfg, shape, d);
    else if (topo_cuda_net_hier_direct(cfg, shape, bytes))
        select_cuda_hier_direct(cfg, shape, bytes, d);
    else
        select_cuda_staged(cfg, shape, bytes, d);
}
