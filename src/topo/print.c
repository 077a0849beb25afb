/* Human-readable reports of the probe (every rank's facts, node map, GPU link matrices)
 * and of the selector's decisions, for symcoll_info -t / -a and for debugging. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "topo/gpu.h"
#include "topo/topo.h"
#include "topo/tune.h"

static const char *mem_name(symcoll_mem_type_t mem)
{
    return mem == SYMCOLL_MEM_CUDA ? "cuda" : "host";
}

/* "X", "NV18", "NVS18" (through NVSwitch), "PCIe", "-"; perf rank appended when known */
static void fmt_link(const topo_link_info_t *l, char *buf, size_t len)
{
    if (!l) {
        snprintf(buf, len, "?");
        return;
    }
    switch (l->link) {
    case TOPO_LINK_SAME:
        snprintf(buf, len, "X");
        break;
    case TOPO_LINK_NVLINK:
        if (l->nvlinks)
            snprintf(buf, len, "%s%u", (l->flags & TOPO_LINK_F_SWITCH) ? "NVS" : "NV",
                     (unsigned)l->nvlinks);
        else
            snprintf(buf, len, "NVL");
        break;
    case TOPO_LINK_PCIE:
        snprintf(buf, len, "PCIe");
        break;
    default:
        snprintf(buf, len, "-");
        break;
    }
    if (l->link != TOPO_LINK_SAME && l->perf_rank >= 0) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "/%d", (int)l->perf_rank);
    }
}

static void fmt_net_mem(uint32_t m, char *buf, size_t len)
{
    if (!m)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%s%s%s", (m & TOPO_NET_MEM_HOST) ? "host" : "",
                 (m & TOPO_NET_MEM_HOST) && (m & TOPO_NET_MEM_CUDA) ? "," : "",
                 (m & TOPO_NET_MEM_CUDA) ? "cuda" : "");
}

static void print_ranks(const topo_t *t, FILE *out)
{
    fprintf(out, "# %4s %4s %5s %8s %4s %4s %4s %-13s %4s %-12s %-40s %-10s %s\n", "rank",
            "node", "local", "pid", "cpu", "numa", "gpu", "pci", "gnum", "ucx-mem", "gpu-uuid",
            "ucx-tls", "host");
    for (int r = 0; r < t->nranks; r++) {
        const topo_rank_info_t *i = &t->info[r];
        char netmem[32];

        if (!i->host_id[0]) { /* another node's rank: its facts stay on its node */
            fprintf(out, "  %4d %4d %5d %8s %4s %4s %4" PRId32 " (facts on its node)\n", r,
                    t->rank_node[r], t->rank_local_rank[r], "-", "-", "-", i->cuda_device);
            continue;
        }
        fmt_net_mem(i->net_mem_types, netmem, sizeof(netmem));
        fprintf(out,
                "  %4d %4d %5d %8" PRId32 " %4" PRId32 " %4" PRId32 " %4" PRId32
                " %-13s %4" PRId32 " %-12s %-40s %-10s %s\n",
                r, t->rank_node[r], t->rank_local_rank[r], i->pid, i->cpu, i->numa_node,
                i->cuda_device, i->pci_bus_id[0] ? i->pci_bus_id : "-", i->gpu_numa_node,
                netmem, i->gpu_uuid[0] ? i->gpu_uuid : "-", i->net_tls[0] ? i->net_tls : "-",
                i->host_id);
    }
}

static void print_node(const topo_t *t, int k, FILE *out)
{
    int ranks[t->node_size[k]];
    int m = 0;
    char buf[32];

    for (int r = 0; r < t->nranks; r++)
        if (t->rank_node[r] == k)
            ranks[m++] = r;
    if (t->info[t->node_leader[k]].host_id[0])
        fprintf(out, "# node %d (%s): leader rank %d, %d rank(s):", k,
                t->info[t->node_leader[k]].host_id, t->node_leader[k], m);
    else
        fprintf(out, "# node %d (host %016llx): leader rank %d, %d rank(s):", k,
                (unsigned long long)t->info[t->node_leader[k]].host_hash, t->node_leader[k], m);
    for (int j = 0; j < m; j++)
        fprintf(out, " %d", ranks[j]);
    fprintf(out, "\n");
    if (!t->links)
        return;
    if (k != t->node) { /* each rank holds its own node's matrix */
        fprintf(out, "#   GPU links: known on that node (symcoll_comm_print_topology there)\n");
        return;
    }
    for (int j = 0; j < m; j++)
        if (t->info[ranks[j]].gpu_name[0])
            fprintf(out, "#   local rank %d: GPU %d %s (%s)\n", j,
                    t->info[ranks[j]].cuda_device, t->info[ranks[j]].gpu_name,
                    t->info[ranks[j]].pci_bus_id);
    fprintf(out, "#   GPU links (row: from local rank, column: to local rank):\n#   %5s", "");
    for (int j = 0; j < m; j++)
        fprintf(out, " %8d", j);
    fprintf(out, "\n");
    for (int a = 0; a < m; a++) {
        fprintf(out, "#   %5d", a);
        for (int b = 0; b < m; b++) {
            fmt_link(topo_link(t, ranks[a], ranks[b]), buf, sizeof(buf));
            fprintf(out, " %8s", buf);
        }
        fprintf(out, "\n");
    }
}

static void print_shape(const topo_t *t, symcoll_mem_type_t mem, FILE *out)
{
    const topo_shape_t *s = &t->shape[mem];

    fprintf(out, "# selector view, %s memory: %d rank(s), %d node(s), up to %d per node%s",
            mem_name(mem), s->nranks, s->nnodes, s->ppn,
            s->uniform ? " (uniform)" : " (uneven)");
    if (mem == SYMCOLL_MEM_CUDA)
        fprintf(out, ", worst GPU link %s, UCX reaches CUDA memory: %s",
                s->ppn > 1 ? topo_link_name(s->gpu_link) : "n/a", s->net_cuda ? "yes" : "no");
    fprintf(out, "\n");
    if (mem == SYMCOLL_MEM_CUDA && s->nnodes > 1) {
        char chunk[32];
        topo_fmt_size(t->select_cfg.cuda_net_chunk, chunk, sizeof(chunk));
        fprintf(
            out, "# CUDA memory across nodes: %s",
            !s->cuda_across_nodes || s->cuda_max_local <= 0
                ? "not available in this build (no CUDA)"
            : !s->gpus ? "not available: some rank has no CUDA device"
            : !s->net_cuda
                ? "staged through pinned host memory of the pool: the UCX of some rank has "
                  "no CUDA memory support (see ucx-mem), so it cannot put into GPU memory"
            : t->select_cfg.cuda_net_path == TOPO_PATH_STAGED
                ? "staged through pinned host memory of the pool (SYMCOLL_CUDA_NET_PATH=staged)"
            : s->net_direct < 0 && s->net_direct_one_queue
                ? "staged through pinned host memory of the pool: every probe put into the "
                  "peers' CUDA pool landed, but UCX moves it through transports that call the "
                  "CUDA driver from the channel, and some rank runs with "
                  "CUDA_DEVICE_MAX_CONNECTIONS=1: the channel's copies would queue behind the "
                  "stream's wait for them, so the direct path is not available"
            : s->nnodes != s->nranks && t->select_cfg.cuda_net_path == TOPO_PATH_DIRECT
                ? "hierarchical calls put each rank's slice into the CUDA pool of the ranks "
                  "of its local index (direct, forced by SYMCOLL_CUDA_NET_PATH=direct, where "
                  "the probe puts landed); the other calls are staged through pinned host "
                  "memory of the pool"
            : s->nnodes != s->nranks
                ? "staged through pinned host memory of the pool: UCX reaches CUDA memory, "
                  "but the direct path serves one rank a node (and the hierarchical "
                  "algorithm's inter-node step only when forced)"
            : s->net_direct > 0 && s->net_direct_drv &&
                    t->select_cfg.cuda_net_path != TOPO_PATH_DIRECT
                ? "staged through pinned host memory of the pool: every probe put into the "
                  "peers' CUDA pool landed, but UCX moves it through transports that call the "
                  "CUDA driver from the channel (cuda_ipc, or cuda_copy under TCP or a network "
                  "without GPUDirect RDMA), so direct only when forced with "
                  "SYMCOLL_CUDA_NET_PATH=direct"
            : s->net_direct > 0 && s->net_direct_drv
                ? "direct (forced): UCX puts every rank's data into the peers' CUDA pool with "
                  "rkeys through transports that call the CUDA driver from the channel: "
                  "synchronise the stream before blocking CUDA calls (README)"
            : s->net_direct > 0
                ? "direct: UCX puts every rank's data into the peers' CUDA pool with rkeys, "
                  "the GPU reduces (every probe put landed; staged below "
                  "SYMCOLL_CUDA_NET_DIRECT_MIN)"
            : s->net_direct < 0
                ? "staged through pinned host memory of the pool: UCX reaches CUDA memory, "
                  "but a probe put into a peer's CUDA pool did not land (per peer below)"
                : "direct if the probe puts land (UCX reaches CUDA memory on every rank; the "
                  "probe runs when the CUDA pool is created: allocate CUDA pool memory "
                  "first to see it), else staged");
        if (s->cuda_across_nodes && s->cuda_max_local > 0 && s->gpus) {
            fprintf(out,
                    "; %d channel(s) (SYMCOLL_CUDA_NET_CHANNELS), chunks of 64K to %s "
                    "(SYMCOLL_CUDA_NET_CHUNK)",
                    t->select_cfg.cuda_net_channels, chunk);
            if (s->ppn > 1 && topo_cuda_net_hier(&t->select_cfg, s, SIZE_MAX)) {
                char min[32];
                size_t from = t->select_cfg.hier_min;
                if (s->gpus_shared && t->select_cfg.forced != TOPO_ALGO_HIER &&
                    from < TOPO_CUDA_HIER_SHARED_MIN)
                    from = TOPO_CUDA_HIER_SHARED_MIN;
                topo_fmt_size(from, min, sizeof(min));
                fprintf(out,
                        "; hierarchical from %s (SYMCOLL_HIER_MIN%s): reduce-scatter and "
                        "all-gather over each node's GPUs (CUDA pool mappings), only 1/%d "
                        "of the data staged and sent across nodes",
                        min,
                        s->gpus_shared ? "; GPUs shared by ranks: their waiting kernels "
                                         "time-slice, so not below 16M"
                                       : "",
                        s->ppn);
            } else if (s->ppn > 1) {
                fprintf(out,
                        "; not hierarchical over the GPUs (%s): every rank stages all "
                        "of its data",
                        !s->uniform ? "nodes hold different numbers of ranks"
                        : s->gpu_link == TOPO_LINK_NONE ? "some GPUs of a node cannot map "
                                                          "each other"
                        : s->ppn > s->cuda_max_local    ? "too many ranks a node"
                                                        : "SYMCOLL_ALGO");
            }
        }
        fprintf(out, "\n");
        /* whether some calls take the direct path (the selector's rules, topo/select.c) */
        bool direct_on = s->net_direct > 0 && !s->net_direct_one_queue &&
                         t->select_cfg.cuda_net_path != TOPO_PATH_STAGED &&
                         (t->select_cfg.cuda_net_path == TOPO_PATH_DIRECT ||
                          (!s->net_direct_drv && s->nnodes == s->nranks));
        for (int r = 0; t->net_direct_peer && r < t->nranks; r++) {
            if (t->net_direct_peer[r])
                fprintf(out, "#   direct path to rank %d (node %d): %s\n", r, t->rank_node[r],
                        t->net_direct_peer[r] < 0 ? "no: the probe put into its CUDA pool did "
                                                    "not land"
                        : direct_on               ? "yes: a probe put into its CUDA pool landed"
                                    : "a probe put into its CUDA pool landed, but the path "
                                      "is off here (above)");
        }
    }
}

void topo_print(const topo_t *t, FILE *out)
{
    fprintf(out, "# symcoll topology: %d rank(s) on %d node(s); GPUs: %s; NVML: %s\n",
            t->nranks, t->nnodes, t->have_gpus ? "yes" : "none",
            topo_nvml_available() ? "loaded" : "not available");
    fprintf(out, "# columns: gpu = CUDA device ordinal, gnum = NUMA node of the GPU, "
                 "ucx-mem = memory UCX reaches (? = not known)\n");
    print_ranks(t, out);
    fprintf(out, "#\n# node map\n");
    for (int k = 0; k < t->nnodes; k++)
        print_node(t, k, out);
    if (t->links)
        fprintf(out, "# links: X same GPU, NV<n> n NVLinks, NVS<n> n NVLinks to NVSwitch, "
                     "NVL NVLink (count unknown), PCIe peer access over PCIe, - no peer "
                     "access; /<r> CUDA P2P performance rank (0 best)\n");
    fprintf(out, "#\n");
    print_shape(t, SYMCOLL_MEM_HOST, out);
    print_shape(t, SYMCOLL_MEM_CUDA, out);
}

/* The other collectives' rows, from the same selector (topo_select_coll_plan): one per
 * collective, memory type and plan size (the larger buffer: reduce-scatter's send,
 * all-gather's receive; the barrier's one row is 1 byte), with the path in brief (the
 * tools' algo column) and in words. */
static void print_coll_decisions(const topo_t *t, FILE *out)
{
    fprintf(out,
            "#\n# the other collectives: the plan of the all-reduce of the call's plan size "
            "(the larger buffer; 1 byte for barrier) and how the collective runs on it\n");
    fprintf(out, "# %-14s %-4s %12s %6s  %-14s  %-13s  %-8s  %s\n", "collective", "mem",
            "bytes", "", "path", "family", "from", "in words");
    for (int coll = TOPO_COLL_REDUCE_SCATTER; coll < TOPO_COLL_LAST; coll++) {
        for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++) {
            size_t first = coll == TOPO_COLL_BARRIER ? 1 : 8;
            size_t last = coll == TOPO_COLL_BARRIER ? 1 : (size_t)1 << 30;
            for (size_t bytes = first; bytes <= last; bytes *= 2) {
                topo_plan_t plan;
                topo_decision_t d;
                char sz[16], brief[32], words[128];
                topo_plan_explain(t, (topo_coll_t)coll, (symcoll_mem_type_t)mem, bytes, &plan,
                                  &d);
                topo_plan_path(&plan, true, brief, sizeof(brief));
                topo_plan_path(&plan, false, words, sizeof(words));
                if (coll == TOPO_COLL_REDUCE_SCATTER) {
                    size_t wl = strlen(words);
                    snprintf(words + wl, sizeof(words) - wl, "; order: %s",
                             topo_plan_order(&t->select_cfg, &t->shape[mem], &plan, bytes));
                }
                topo_fmt_size(bytes, sz, sizeof(sz));
                fprintf(out, "  %-14s %-4s %12zu %6s  %-14s  %-13s  %-8s  %s\n",
                        topo_coll_name((topo_coll_t)coll), mem_name((symcoll_mem_type_t)mem),
                        bytes, sz, brief, topo_family_name(plan.family),
                        topo_source_name(d.source), words);
            }
        }
    }
}

void topo_print_decisions(const topo_t *t, FILE *out)
{
    const topo_select_cfg_t *c = &t->select_cfg;

    fprintf(out,
            "# all-reduce decisions on this topology: SYMCOLL_ALGO=%s, "
            "HOST_ONESHOT_MAX=%zu CUDA_ONESHOT_MAX=%zu CUDA_PCIE_ONESHOT_MAX=%zu "
            "NET_RD_MAX=%zu HIER_MIN=%zu NET_BC_EAGER_MAX=%d NET_BC_MAX_RANKS=%d\n",
            topo_algo_name(c->forced), c->host_oneshot_max, c->cuda_oneshot_max,
            c->cuda_pcie_oneshot_max, c->net_rd_max, c->hier_min, TOPO_NET_BC_EAGER_MAX,
            TOPO_NET_BC_MAX_RANKS);
    {
        char fp[TOPO_TUNE_FP_MAX];
        topo_fingerprint(t, fp, sizeof(fp));
        fprintf(out,
                "# from: built-in (the rules below), tuned (the tuning file's measurement), "
                "forced (SYMCOLL_ALGO), call (symcoll_comm_set_algo); tuning file: %s%s%s; "
                "layout: %s\n",
                t->tune ? t->tune->path : "none",
                t->tune && c->tuned ? " (its layout of this communicator serves)" : "",
                t->tune && !c->tuned ? " (no layout of this communicator: unused)" : "", fp);
    }
    fprintf(out,
            "# order of float sums, products and averages (SYMCOLL_REDUCTION_ORDER=%s): "
            "canonical = one fixed tree of the ranks' values, the same bits at any size, "
            "algorithm and layout%s; rd-steps = that tree, float16/bfloat16 rounded at every "
            "step; node-wise = each node's tree, then the nodes'; ring = changes with the "
            "size; cuda-own = CUDA memory across nodes in the fastest order\n",
            c->canonical_wide ? "canonical"
            : c->canonical    ? "auto"
                              : "fastest",
            c->canonical && !c->canonical_wide
                ? " (auto: float16/bfloat16 of 3 ranks or more across nodes rounded at every "
                  "step)"
                : "");
    for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++) {
        print_shape(t, (symcoll_mem_type_t)mem, out);
        if (mem == SYMCOLL_MEM_CUDA && !t->have_gpus)
            fprintf(out, "#   (no rank has a CUDA device: the CUDA rows show what the "
                         "selector would pick)\n");
        fprintf(out, "# %-4s %12s %6s  %-8s  %-13s  %-9s  %-8s  %s\n", "mem", "bytes", "",
                "algo", "family", "order", "from", "reason");
        for (size_t bytes = 8; bytes <= ((size_t)1 << 30); bytes *= 2) {
            topo_decision_t d;
            topo_plan_t plan;
            char sz[16];
            /* the plan the data path gets for this size (topo_plan) */
            topo_plan_explain(t, TOPO_COLL_ALLREDUCE, (symcoll_mem_type_t)mem, bytes, &plan,
                              &d);
            topo_fmt_size(bytes, sz, sizeof(sz));
            fprintf(out, "  %-4s %12zu %6s  %-8s  %-13s  %-9s  %-8s  %s\n",
                    mem_name((symcoll_mem_type_t)mem), bytes, sz, topo_algo_name(plan.algo),
                    topo_family_name(plan.family),
                    topo_plan_order(&t->select_cfg, &t->shape[mem], &plan, bytes),
                    topo_source_name(d.source), d.reason);
        }
    }
    print_coll_decisions(t, out);
}
