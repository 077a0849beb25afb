/* Selector tests on injected topologies (no processes, no devices): a table of
 * (shape, overrides, memory type, size) -> expected algorithm and words of the reason;
 * then applicability checks of forced algorithms and override parsing. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "harness.h"
#include "topo/select.h"

#define K ((size_t)1 << 10)
#define M ((size_t)1 << 20)
#define G ((size_t)1 << 30)

/* Thresholds of the table (not the defaults, which measurements may move). */
static const topo_select_cfg_t cfg_test = {
    .forced = TOPO_ALGO_AUTO,
    .host_oneshot_max = 16 * K,
    .cuda_oneshot_max = 256 * K,
    .cuda_pcie_oneshot_max = 64 * K,
    .net_rd_max = 64 * K,
    .hier_min = 0,
    .cuda_net_chunk = 4 * M,
    .cuda_net_channels = 4,
};

/* nranks, nnodes, ppn, uniform, gpu_link, net_cuda, cuda_max_local, cuda_across_nodes,
 * gpus, oversubscribed, gpus_shared, net_direct, net_direct_drv, net_direct_one_queue,
 * hier_canonical */
static const topo_shape_t one_node_8_nvlink = {8,     1, 8,     true,  TOPO_LINK_NVLINK,
                                               false, 8, true,  true,  false,
                                               false, 0, false, false, false};
static const topo_shape_t one_node_4_pcie_nop2p = {
    4, 1, 4, true, TOPO_LINK_NONE, false, 8, true, true, false, false, 0, false, false, false};
static const topo_shape_t one_node_4_pcie_p2p = {
    4, 1, 4, true, TOPO_LINK_PCIE, false, 8, true, true, false, false, 0, false, false, false};
static const topo_shape_t two_nodes_4_nvlink = {
    8, 2, 4, true, TOPO_LINK_NVLINK, true, 8, true, true, false, false, 0, false, false, false};
/* the same where UCX has no CUDA: every CUDA call across nodes is staged */
static const topo_shape_t two_nodes_4_nvlink_staged = {8,     2, 4,     true,  TOPO_LINK_NVLINK,
                                                       false, 8, true,  true,  false,
                                                       false, 0, false, false, false};
/* 2 simulated nodes x 2 ranks on one machine's 2 GPUs: ranks of the two nodes share */
static const topo_shape_t two_nodes_2_shared = {
    4, 2, 2, true, TOPO_LINK_NVLINK, false, 8, true, true, false, true, 0, false, false, false};
static const topo_shape_t two_nodes_4_nop2p = {
    8, 2, 4, true, TOPO_LINK_NONE, false, 8, true, true, false, false, 0, false, false, false};
static const topo_shape_t sixteen_nodes_1 = {16,    16, 1,     true,  TOPO_LINK_NONE,
                                             false, 8,  true,  true,  false,
                                             false, 0,  false, false, false};
static const topo_shape_t host_1_node_4 = {
    4, 1, 4, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
/* 4 ranks on a node with fewer CPUs than ranks */
static const topo_shape_t host_1_node_4_oversub = {
    4, 1, 4, true, TOPO_LINK_NONE, false, 8, true, false, true, false, 0, false, false, false};
static const topo_shape_t host_1_rank = {
    1, 1, 1, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
static const topo_shape_t host_4_nodes_2 = {
    8, 4, 2, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
static const topo_shape_t host_4_nodes_uneven = {7,     4, 2,     false, TOPO_LINK_NONE,
                                                 false, 8, true,  false, false,
                                                 false, 0, false, false, false};
static const topo_shape_t one_node_2_nvlink = {2,     1, 2,     true,  TOPO_LINK_NVLINK,
                                               false, 8, false, true,  false,
                                               false, 0, false, false, false};
static const topo_shape_t two_nodes_1 = {
    2, 2, 1, true, TOPO_LINK_NONE, false, 8, true, true, false, false, 0, false, false, false};
static const topo_shape_t one_gpu_rank = {
    1, 1, 1, true, TOPO_LINK_NONE, false, 8, false, true, false, false, 0, false, false, false};
static const topo_shape_t one_node_2_same_gpu = {
    2, 1, 2, true, TOPO_LINK_SAME, false, 8, true, true, false, false, 0, false, false, false};
/* what a build lacks: no CUDA at all, no CUDA path across nodes, kernels for <= 8 ranks */
static const topo_shape_t build_no_cuda = {4,     1, 4,     true,  TOPO_LINK_NVLINK,
                                           false, 0, false, true,  false,
                                           false, 0, false, false, false};
static const topo_shape_t build_cuda_intra = {8,     2, 4,     true,  TOPO_LINK_NVLINK,
                                              false, 8, false, true,  false,
                                              false, 0, false, false, false};
static const topo_shape_t one_node_16_nvlink = {16,    1, 16,    true,  TOPO_LINK_NVLINK,
                                                false, 8, false, true,  false,
                                                false, 0, false, false, false};

enum { H = SYMCOLL_MEM_HOST, C = SYMCOLL_MEM_CUDA };

typedef struct select_case {
    const char *name;
    const topo_shape_t *shape;
    topo_algo_t forced;
    size_t hier_min; /* (size_t)-1: the table's value */
    int mem;
    size_t bytes;
    topo_algo_t want;
    const char *reason_has; /* substring of the reason */
} select_case_t;

#define DFLT ((size_t)-1)

static const select_case_t cases[] = {
    /* 1 node of 8 GPUs, all NVLink */
    {"8gpu nvlink 8B", &one_node_8_nvlink, 0, DFLT, C, 8, TOPO_ALGO_ONESHOT, "NVLink"},
    /* 8 ranks: 256K x 8 / (2 x 7^2) = 21399 bytes */
    {"8gpu nvlink at threshold", &one_node_8_nvlink, 0, DFLT, C, 21399, TOPO_ALGO_ONESHOT,
     "SYMCOLL_CUDA_ONESHOT_MAX=256K for 2 ranks, scaled"},
    {"8gpu nvlink above", &one_node_8_nvlink, 0, DFLT, C, 21400, TOPO_ALGO_TWOSHOT, "20.9K >"},
    {"8gpu nvlink 256K", &one_node_8_nvlink, 0, DFLT, C, 256 * K, TOPO_ALGO_TWOSHOT, "8 ranks"},
    {"8gpu nvlink 1G", &one_node_8_nvlink, 0, DFLT, C, G, TOPO_ALGO_TWOSHOT, "1G >"},
    /* host: 16K / 7^2 = 334 */
    {"8gpu host small", &one_node_8_nvlink, 0, DFLT, H, 334, TOPO_ALGO_ONESHOT,
     "SYMCOLL_HOST_ONESHOT_MAX=16K for 2 ranks, scaled by 1/(n-1)^2"},
    {"8gpu host large", &one_node_8_nvlink, 0, DFLT, H, 335, TOPO_ALGO_TWOSHOT,
     "host shared memory"},
    /* more ranks than CPUs: 16K / 3 = 5461 (barriers cost context switches) */
    {"4 ranks oversubscribed at", &host_1_node_4_oversub, 0, DFLT, H, 5461, TOPO_ALGO_ONESHOT,
     "scaled by 1/(n-1): more ranks than CPUs"},
    {"4 ranks oversubscribed above", &host_1_node_4_oversub, 0, DFLT, H, 5462,
     TOPO_ALGO_TWOSHOT, "5.3K >"},
    /* the same 4 ranks with a CPU each: 16K / 3^2 = 1820 */
    {"4 ranks host above", &host_1_node_4, 0, DFLT, H, 1821, TOPO_ALGO_TWOSHOT,
     "scaled by 1/(n-1)^2"},
    /* 2 GPUs: the thresholds as configured */
    {"2gpu at threshold", &one_node_2_nvlink, 0, DFLT, C, 256 * K, TOPO_ALGO_ONESHOT,
     "(SYMCOLL_CUDA_ONESHOT_MAX)"},
    {"2gpu above", &one_node_2_nvlink, 0, DFLT, C, 256 * K + 1, TOPO_ALGO_TWOSHOT,
     "256.0K > 256K"},
    {"2 ranks host at threshold", &one_node_2_nvlink, 0, DFLT, H, 16 * K, TOPO_ALGO_ONESHOT,
     "16K <= 16K"},
    {"2 ranks host above", &one_node_2_nvlink, 0, DFLT, H, 16 * K + 1, TOPO_ALGO_TWOSHOT,
     "host shared memory"},
    {"8gpu forced twoshot", &one_node_8_nvlink, TOPO_ALGO_TWOSHOT, DFLT, C, 8,
     TOPO_ALGO_TWOSHOT, "forced by SYMCOLL_ALGO=twoshot"},
    {"8gpu forced ring", &one_node_8_nvlink, TOPO_ALGO_RING, DFLT, C, 8, TOPO_ALGO_NONE,
     "one node"},
    {"8gpu forced hier", &one_node_8_nvlink, TOPO_ALGO_HIER, DFLT, H, 8, TOPO_ALGO_NONE,
     "several nodes"},
    /* 4 GPUs over PCIe without P2P: CUDA memory has no intra-node path */
    {"4gpu nop2p cuda", &one_node_4_pcie_nop2p, 0, DFLT, C, 8, TOPO_ALGO_NONE, "no P2P"},
    {"4gpu nop2p cuda large", &one_node_4_pcie_nop2p, 0, DFLT, C, G, TOPO_ALGO_NONE, "no P2P"},
    {"4gpu nop2p host", &one_node_4_pcie_nop2p, 0, DFLT, H, 8, TOPO_ALGO_ONESHOT, "1 node"},
    {"4gpu nop2p forced oneshot", &one_node_4_pcie_nop2p, TOPO_ALGO_ONESHOT, DFLT, C, 8,
     TOPO_ALGO_NONE, "peer access"},
    /* 4 GPUs over PCIe with P2P: the PCIe threshold */
    /* 64K x 4 / 18 = 14563 */
    {"4gpu pcie small", &one_node_4_pcie_p2p, 0, DFLT, C, 14563, TOPO_ALGO_ONESHOT,
     "SYMCOLL_CUDA_PCIE_ONESHOT_MAX=64K"},
    {"4gpu pcie above", &one_node_4_pcie_p2p, 0, DFLT, C, 14564, TOPO_ALGO_TWOSHOT,
     "GPUs over PCIe"},
    /* 2 nodes x 4 GPUs */
    {"2x4 cuda small", &two_nodes_4_nvlink, 0, DFLT, C, 8, TOPO_ALGO_HIER,
     "each node's 4 GPUs"},
    {"2x4 cuda large", &two_nodes_4_nvlink, 0, DFLT, C, G, TOPO_ALGO_HIER, "256M slice"},
    {"2x4 hier_min small", &two_nodes_4_nvlink, 0, 64 * K, C, 8, TOPO_ALGO_RD,
     "not hierarchical"},
    {"2x4 hier_min mid", &two_nodes_4_nvlink, 0, 1 * M, C, 512 * K, TOPO_ALGO_RING,
     "SYMCOLL_NET_RD_MAX"},
    {"2x4 hier_min at", &two_nodes_4_nvlink, 0, 1 * M, H, 1 * M, TOPO_ALGO_HIER,
     "SYMCOLL_HIER_MIN=1M"},
    {"2x4 host", &two_nodes_4_nvlink, 0, DFLT, H, 4 * K, TOPO_ALGO_HIER, "each rank"},
    {"2x4 forced oneshot", &two_nodes_4_nvlink, TOPO_ALGO_ONESHOT, DFLT, C, 8, TOPO_ALGO_NONE,
     "span 2 nodes"},
    {"2x4 forced ring", &two_nodes_4_nvlink, TOPO_ALGO_RING, DFLT, C, 8, TOPO_ALGO_RING,
     "forced"},
    {"2x4 forced rd", &two_nodes_4_nvlink, TOPO_ALGO_RD, DFLT, H, G, TOPO_ALGO_RD, "forced"},
    /* 2 nodes x 4 GPUs without P2P inside the nodes: CUDA across nodes is staged through
     * host memory, so the host algorithms (hier through the host pool) serve it */
    {"2x4 nop2p cuda small", &two_nodes_4_nop2p, 0, DFLT, C, 8, TOPO_ALGO_HIER,
     "CUDA staged via pinned host memory (UCX lacks CUDA)"},
    {"2x4 nop2p cuda large", &two_nodes_4_nop2p, 0, DFLT, C, 1 * M, TOPO_ALGO_HIER, "1/4"},
    {"2x4 nop2p host", &two_nodes_4_nop2p, 0, DFLT, H, 1 * M, TOPO_ALGO_HIER, "1/4"},
    {"2x4 nop2p forced hier cuda", &two_nodes_4_nop2p, TOPO_ALGO_HIER, DFLT, C, 8,
     TOPO_ALGO_HIER, "staged"},
    /* 2 nodes x 4 GPUs with NVLink: hierarchical over each node's GPUs, only a rank's
     * quarter staged across nodes (a 64M message: 16M slices in 4M chunks, the ring among
     * the 2 nodes; a small one: rd); flat staging below SYMCOLL_HIER_MIN */
    {"2x4 cuda gpu hier small", &two_nodes_4_nvlink_staged, 0, DFLT, C, 8, TOPO_ALGO_HIER,
     "CUDA hier: RS/AG over each node's 4 GPUs (NVLink), each rank's 2B slice staged"},
    {"2x4 cuda gpu hier rd", &two_nodes_4_nvlink_staged, 0, DFLT, C, 4 * K, TOPO_ALGO_HIER,
     "1K chunks on 4 channels: 2 nodes, 2 ranks: 1K <= 1M"},
    {"2x4 cuda gpu hier large", &two_nodes_4_nvlink, 0, DFLT, C, 64 * M, TOPO_ALGO_HIER,
     "16M slice staged (UCX has CUDA, the hierarchical direct step only when forced)"},
    {"2x4 cuda forced hier", &two_nodes_4_nvlink, TOPO_ALGO_HIER, DFLT, C, 8, TOPO_ALGO_HIER,
     "CUDA hier"},
    {"2x4 cuda below hier_min", &two_nodes_4_nvlink, 0, 1 * M, C, 512 * K, TOPO_ALGO_RING,
     "CUDA staged via pinned host memory (UCX has CUDA, direct only with one rank a node (or "
     "hierarchical, forced)), 128K chunks on 4 channels: 2 nodes, 8 ranks (not hierarchical)"},
    {"2x4 cuda at hier_min", &two_nodes_4_nvlink, 0, 1 * M, C, 1 * M, TOPO_ALGO_HIER,
     "CUDA hier"},
    /* GPUs shared by ranks: hierarchical over the GPUs only from 16M (waiting kernels
     * time-slice), unless forced */
    {"2x2 shared gpus below", &two_nodes_2_shared, 0, DFLT, C, 16 * M - 2, TOPO_ALGO_HIER,
     "CUDA staged via pinned host memory (UCX lacks CUDA), 4M chunks on 4 channels: 2 nodes x "
     "2 ranks"},
    {"2x2 shared gpus at", &two_nodes_2_shared, 0, DFLT, C, 16 * M, TOPO_ALGO_HIER,
     "CUDA hier"},
    {"2x2 shared gpus forced", &two_nodes_2_shared, TOPO_ALGO_HIER, DFLT, C, 8, TOPO_ALGO_HIER,
     "CUDA hier"},
    /* UCX with CUDA on every rank: still staged (no direct path yet), and it says so */
    {"2x4 net cuda", &two_nodes_4_nvlink, 0, DFLT, C, 8, TOPO_ALGO_HIER,
     "UCX has CUDA, the hierarchical direct step only when forced"},
    /* 16 nodes x 1 rank */
    {"16x1 8B", &sixteen_nodes_1, 0, DFLT, H, 8, TOPO_ALGO_RD, "16 nodes"},
    {"16x1 at rd max", &sixteen_nodes_1, 0, DFLT, C, 64 * K, TOPO_ALGO_RD,
     "64K <= 64K (SYMCOLL_NET_RD_MAX)"},
    {"16x1 above rd max", &sixteen_nodes_1, 0, DFLT, H, 64 * K + 1, TOPO_ALGO_RING,
     "bandwidth"},
    {"16x1 1G", &sixteen_nodes_1, 0, DFLT, H, G, TOPO_ALGO_RING, "ring"},
    {"16x1 forced twoshot", &sixteen_nodes_1, TOPO_ALGO_TWOSHOT, DFLT, H, 8, TOPO_ALGO_NONE,
     "inside one node"},
    /* host only, 1 node */
    {"host 1x4 small", &host_1_node_4, 0, DFLT, H, 8, TOPO_ALGO_ONESHOT, "one barrier"},
    {"host 1x4 large", &host_1_node_4, 0, DFLT, H, 64 * M, TOPO_ALGO_TWOSHOT, "two-shot moves"},
    /* 16K / 3^2 = 1820 */
    {"host 1x4 at threshold", &host_1_node_4, 0, DFLT, H, 1820, TOPO_ALGO_ONESHOT, "1.8K"},
    {"host 1x4 above", &host_1_node_4, 0, DFLT, H, 1821, TOPO_ALGO_TWOSHOT, "1.8K"},
    /* 2 nodes x 1 rank: rd is one exchange, up to 16 x SYMCOLL_NET_RD_MAX */
    {"2x1 rd", &two_nodes_1, 0, DFLT, H, 1 * M, TOPO_ALGO_RD, "16 x SYMCOLL_NET_RD_MAX"},
    {"2x1 ring", &two_nodes_1, 0, DFLT, H, 1 * M + 8, TOPO_ALGO_RING, "1M (16 x"},
    /* CUDA across nodes: the host algorithm for the staging chunk, not the message (a
     * message spreads over the 4 channels in chunks of 64K to 4M): rd up to 16 x 64K = 1M,
     * then the ring */
    {"2x1 cuda staged rd", &two_nodes_1, 0, DFLT, C, 1 * M, TOPO_ALGO_RD,
     "CUDA staged via pinned host memory (UCX lacks CUDA), 256K chunks on 4 channels: 2 nodes"},
    {"2x1 cuda staged small", &two_nodes_1, 0, DFLT, C, 48 * K, TOPO_ALGO_RD,
     "48K chunks on 4 channels"},
    {"2x1 cuda staged 2 pieces", &two_nodes_1, 0, DFLT, C, 64 * K + 2, TOPO_ALGO_RD,
     "64K chunks on 4 channels"},
    {"2x1 cuda staged 16M", &two_nodes_1, 0, DFLT, C, 16 * M, TOPO_ALGO_RING, "4M chunks"},
    {"2x1 cuda staged ring", &two_nodes_1, 0, DFLT, C, 1 * G, TOPO_ALGO_RING, "4M chunks"},
    {"host 1 rank", &host_1_rank, 0, DFLT, H, G, TOPO_ALGO_ONESHOT, "single rank"},
    {"host 1 rank cuda", &host_1_rank, 0, DFLT, C, G, TOPO_ALGO_NONE, "some rank has none"},
    {"1 gpu rank cuda", &one_gpu_rank, 0, DFLT, C, G, TOPO_ALGO_ONESHOT, "single rank"},
    {"host 1x4 cuda", &host_1_node_4, 0, DFLT, C, 8, TOPO_ALGO_NONE, "CUDA device"},
    /* host only, 4 nodes */
    {"host 4x2 small", &host_4_nodes_2, 0, DFLT, H, 8, TOPO_ALGO_HIER, "4 nodes x 2"},
    {"host 4x2 large", &host_4_nodes_2, 0, DFLT, H, 256 * M, TOPO_ALGO_HIER, "1/2"},
    {"host 4 uneven small", &host_4_nodes_uneven, 0, DFLT, H, 8, TOPO_ALGO_RD,
     "not hierarchical"},
    {"host 4 uneven large", &host_4_nodes_uneven, 0, DFLT, H, 8 * M, TOPO_ALGO_RING,
     "not hierarchical"},
    {"host 4 uneven forced hier", &host_4_nodes_uneven, TOPO_ALGO_HIER, DFLT, H, 8,
     TOPO_ALGO_NONE, "same number of ranks"},
    /* two ranks on one GPU (how 4 and 8 ranks run on fewer GPUs) */
    {"same gpu", &one_node_2_same_gpu, 0, DFLT, C, 128 * K, TOPO_ALGO_ONESHOT, "sharing"},
    /* what the build lacks turns into "none" with the reason, never into a wrong pick */
    {"no cuda build cuda", &build_no_cuda, 0, DFLT, C, 8, TOPO_ALGO_NONE, "no CUDA support"},
    {"no cuda build forced", &build_no_cuda, TOPO_ALGO_ONESHOT, DFLT, C, 8, TOPO_ALGO_NONE,
     "no CUDA support"},
    {"no cuda build host", &build_no_cuda, 0, DFLT, H, 8, TOPO_ALGO_ONESHOT, "one barrier"},
    {"cuda across nodes missing", &build_cuda_intra, 0, DFLT, C, 8, TOPO_ALGO_NONE,
     "would serve this, but CUDA memory across nodes"},
    {"cuda across nodes missing host", &build_cuda_intra, 0, DFLT, H, 8, TOPO_ALGO_HIER, "1/4"},
    {"16 gpus per node", &one_node_16_nvlink, 0, DFLT, C, 8, TOPO_ALGO_NONE,
     "at most 8 ranks per node and a node has 16"},
    {"16 gpus per node host", &one_node_16_nvlink, 0, DFLT, H, 8 * M, TOPO_ALGO_TWOSHOT,
     "16 ranks"},
};

START_TEST(test_select_table)
{
    const select_case_t *c = &cases[_i];
    topo_select_cfg_t cfg = cfg_test;
    topo_decision_t d;

    cfg.forced = c->forced;
    if (c->hier_min != DFLT)
        cfg.hier_min = c->hier_min;
    memset(&d, 0x5a, sizeof(d));
    topo_select(&cfg, c->shape, (symcoll_mem_type_t)c->mem, c->bytes, &d);
    ck_assert_msg(d.algo == c->want, "%s: got %s, want %s (reason: %s)", c->name,
                  topo_algo_name(d.algo), topo_algo_name(c->want), d.reason);
    /* the data path's variant, without the reason, agrees */
    ck_assert_int_eq(topo_select_algo(&cfg, c->shape, (symcoll_mem_type_t)c->mem, c->bytes),
                     c->want);
    ck_assert_msg(memchr(d.reason, 0, sizeof(d.reason)) != NULL, "%s: reason unterminated",
                  c->name);
    ck_assert_msg(strstr(d.reason, c->reason_has) != NULL, "%s: reason '%s' lacks '%s'",
                  c->name, d.reason, c->reason_has);
}
END_TEST

/* The direct path of CUDA memory across nodes: one rank a node, or the inter-node step of
 * the hierarchical algorithm (the threshold applies to its slice); UCX with CUDA on every
 * rank, a probe not known to have failed, SYMCOLL_CUDA_NET_PATH and its threshold. */
START_TEST(test_select_direct)
{
    static const struct {
        const char *name;
        int nodes, ppn, net_cuda, probed, path;
        size_t min, bytes;
        topo_family_t want;
        const char *reason_has;
        bool drv; /* UCX's lanes call the CUDA driver (cuda_ipc, cuda_copy) */
    } rows[] = {
        {"not probed yet", 2, 1, 1, 0, TOPO_PATH_AUTO, 0, 8, TOPO_FAMILY_NET_CUDA_DIRECT,
         "probed when the CUDA pool is created", false},
        {"probed", 3, 1, 1, 1, TOPO_PATH_AUTO, 0, 8 * M, TOPO_FAMILY_NET_CUDA_DIRECT,
         "UCX puts each rank's data into the 2 peers' CUDA pool", false},
        {"probe failed", 2, 1, 1, -1, TOPO_PATH_AUTO, 0, 8, TOPO_FAMILY_NET_CUDA,
         "the direct probe failed", false},
        {"probe failed, forced", 2, 1, 1, -1, TOPO_PATH_DIRECT, 0, 8, TOPO_FAMILY_NET_CUDA,
         "the direct probe failed", false},
        {"no CUDA in UCX", 2, 1, 0, 0, TOPO_PATH_AUTO, 0, 8, TOPO_FAMILY_NET_CUDA,
         "UCX lacks CUDA", false},
        {"forced staged", 2, 1, 1, 1, TOPO_PATH_STAGED, 0, 8, TOPO_FAMILY_NET_CUDA,
         "SYMCOLL_CUDA_NET_PATH=staged", false},
        {"below the minimum", 2, 1, 1, 1, TOPO_PATH_AUTO, 64 * K, 32 * K, TOPO_FAMILY_NET_CUDA,
         "below SYMCOLL_CUDA_NET_DIRECT_MIN", false},
        {"at the minimum", 2, 1, 1, 1, TOPO_PATH_AUTO, 64 * K, 64 * K,
         TOPO_FAMILY_NET_CUDA_DIRECT, "every peer's probe put landed", false},
        {"forced below the minimum", 2, 1, 1, 1, TOPO_PATH_DIRECT, 64 * K, 8,
         TOPO_FAMILY_NET_CUDA_DIRECT, "forced by SYMCOLL_CUDA_NET_PATH=direct", false},
        {"two ranks a node", 2, 2, 1, 1, TOPO_PATH_AUTO, 0, 8 * M, TOPO_FAMILY_NET_CUDA_HIER,
         "the hierarchical direct step only when forced", false},
        {"two ranks a node, forced", 2, 2, 1, 1, TOPO_PATH_DIRECT, 0, 8,
         TOPO_FAMILY_NET_CUDA_HIER_DIRECT, "4B slice into the CUDA pool of its 1 peer of",
         false},
        {"two ranks a node, 3 nodes, forced", 3, 2, 1, 0, TOPO_PATH_DIRECT, 0, 8,
         TOPO_FAMILY_NET_CUDA_HIER_DIRECT, "its 2 peers of other nodes", true},
        {"two ranks a node, staged", 2, 2, 1, 1, TOPO_PATH_STAGED, 0, 8,
         TOPO_FAMILY_NET_CUDA_HIER, "SYMCOLL_CUDA_NET_PATH=staged", false},
        {"two ranks a node, forced, minimum ignored", 2, 2, 1, 1, TOPO_PATH_DIRECT, 64 * K,
         128 * K, TOPO_FAMILY_NET_CUDA_HIER_DIRECT, "64K slice", false},
        {"two ranks a node, probe failed", 2, 2, 1, -1, TOPO_PATH_DIRECT, 0, 8,
         TOPO_FAMILY_NET_CUDA_HIER, "the direct probe failed", false},
        {"17 nodes of two ranks", 17, 2, 1, 1, TOPO_PATH_DIRECT, 0, 8,
         TOPO_FAMILY_NET_CUDA_HIER, "too many ranks for direct", false},
        {"17 nodes", 17, 1, 1, 1, TOPO_PATH_AUTO, 0, 8, TOPO_FAMILY_NET_CUDA,
         "too many ranks for direct", false},
        {"lanes call the driver", 2, 1, 1, 1, TOPO_PATH_AUTO, 0, 8 * M, TOPO_FAMILY_NET_CUDA,
         "call the CUDA driver", true},
        {"lanes call the driver, forced", 2, 1, 1, 1, TOPO_PATH_DIRECT, 0, 8,
         TOPO_FAMILY_NET_CUDA_DIRECT, "forced by SYMCOLL_CUDA_NET_PATH=direct", true},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        topo_shape_t sh = two_nodes_1;
        topo_select_cfg_t cfg = cfg_test;
        topo_plan_t plan;
        topo_decision_t d;

        sh.nnodes = rows[i].nodes;
        sh.ppn = rows[i].ppn;
        sh.nranks = rows[i].nodes * rows[i].ppn;
        sh.gpu_link = rows[i].ppn > 1 ? TOPO_LINK_NVLINK : sh.gpu_link;
        sh.net_cuda = rows[i].net_cuda;
        sh.net_direct = rows[i].probed;
        sh.net_direct_drv = rows[i].drv;
        cfg.cuda_net_path = rows[i].path;
        cfg.cuda_net_direct_min = rows[i].min;
        topo_select_plan(&cfg, &sh, SYMCOLL_MEM_CUDA, rows[i].bytes, &plan, &d);
        ck_assert_msg(plan.family == rows[i].want, "%s: family %s, want %s (reason: %s)",
                      rows[i].name, topo_family_name(plan.family),
                      topo_family_name(rows[i].want), d.reason);
        ck_assert_msg(strstr(d.reason, rows[i].reason_has) != NULL,
                      "%s: reason '%s' lacks '%s'", rows[i].name, d.reason, rows[i].reason_has);
        ck_assert_int_eq(topo_cuda_net_direct(&cfg, &sh, rows[i].bytes),
                         rows[i].want == TOPO_FAMILY_NET_CUDA_DIRECT);
        ck_assert_int_eq(topo_cuda_net_hier_direct(&cfg, &sh, rows[i].bytes),
                         rows[i].want == TOPO_FAMILY_NET_CUDA_HIER_DIRECT);
    }
    /* every probe put landed over lanes that call the driver, but a rank has one hardware
     * queue: staged, forced or not, flat or hierarchical; flat, the reason says why */
    for (int ppn = 1; ppn <= 2; ppn++) {
        for (int path = TOPO_PATH_AUTO; path <= TOPO_PATH_DIRECT; path++) {
            topo_shape_t sh = two_nodes_1;
            topo_select_cfg_t cfg = cfg_test;
            topo_plan_t plan;
            topo_decision_t d;

            sh.ppn = ppn;
            sh.nranks = 2 * ppn;
            sh.gpu_link = ppn > 1 ? TOPO_LINK_NVLINK : sh.gpu_link;
            sh.net_direct = -1;
            sh.net_direct_drv = true;
            sh.net_direct_one_queue = true;
            sh.net_cuda = true;
            cfg.cuda_net_path = path;
            topo_select_plan(&cfg, &sh, SYMCOLL_MEM_CUDA, 8 * M, &plan, &d);
            ck_assert_msg(plan.family ==
                              (ppn > 1 ? TOPO_FAMILY_NET_CUDA_HIER : TOPO_FAMILY_NET_CUDA),
                          "one queue, %d a node, path %d: %s (%s)", ppn, path,
                          topo_family_name(plan.family), d.reason);
            ck_assert_msg(ppn > 1 || strstr(d.reason, "CUDA_DEVICE_MAX_CONNECTIONS=1"),
                          "one queue, path %d: reason '%s'", path, d.reason);
        }
    }
    /* below the hierarchical algorithm's minimum (GPUs shared by ranks: 16M), a call is
     * flat and staged even where its chunks go by the host's hier across the nodes */
    {
        topo_plan_t plan;
        topo_decision_t d;
        topo_select_plan(&cfg_test, &two_nodes_2_shared, SYMCOLL_MEM_CUDA, 8, &plan, &d);
        ck_assert_msg(plan.family == TOPO_FAMILY_NET_CUDA && plan.algo == TOPO_ALGO_HIER,
                      "2 x 2 shared, 8B: %s/%s (%s)", topo_family_name(plan.family),
                      topo_algo_name(plan.algo), d.reason);
    }
}
END_TEST

/* Auto choices are monotonic in size: once past a threshold, never back. A selector
 * that flips back and forth would show as a non-monotonic sequence. */
START_TEST(test_select_monotonic)
{
    static const topo_shape_t *const shapes[] = {
        &one_node_8_nvlink, &one_node_4_pcie_p2p, &two_nodes_4_nvlink, &sixteen_nodes_1,
        &host_1_node_4,     &host_4_nodes_2,      &host_4_nodes_uneven};
    topo_select_cfg_t cfg = cfg_test;

    cfg.hier_min = 1 * M;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++) {
            topo_algo_t prev = TOPO_ALGO_AUTO;
            int changes = 0;
            if (mem == SYMCOLL_MEM_CUDA &&
                (!shapes[s]->gpus ||
                 (shapes[s]->nnodes == 1 && shapes[s]->gpu_link == TOPO_LINK_NONE)))
                continue; /* CUDA has no path there: checked in the table */
            for (size_t b = 1; b <= G; b *= 2) {
                topo_decision_t d;
                topo_select(&cfg, shapes[s], (symcoll_mem_type_t)mem, b, &d);
                ck_assert_int_eq(topo_select_algo(&cfg, shapes[s], (symcoll_mem_type_t)mem, b),
                                 d.algo);
                ck_assert_msg(d.algo != TOPO_ALGO_NONE && d.algo != TOPO_ALGO_AUTO,
                              "shape %zu mem %d size %zu: %s", s, mem, b, d.reason);
                if (prev != TOPO_ALGO_AUTO && d.algo != prev)
                    changes++;
                prev = d.algo;
            }
            /* at most oneshot->twoshot, or rd->ring->hier */
            ck_assert_int_le(changes, 2);
        }
    }
}
END_TEST

/* The canonical order: across nodes on host memory, rd up to NET_RD_MAX and rhd above
 * it (the ring never, forced or not), hier only where its order is the tree; inside a
 * node and on CUDA memory nothing changes. And the layouts whose hier order is the tree. */
START_TEST(test_select_canonical)
{
    topo_select_cfg_t cfg = cfg_test;
    topo_shape_t aligned = host_4_nodes_2, interleaved = host_4_nodes_2;
    topo_decision_t d;

    cfg.canonical = true;
    aligned.hier_canonical = true;
    for (size_t b = 1; b <= G; b *= 8) {
        ck_assert_int_eq(topo_select_algo(&cfg, &aligned, SYMCOLL_MEM_HOST, b), TOPO_ALGO_HIER);
        topo_algo_t flat = b <= cfg.net_rd_max ? TOPO_ALGO_RD : TOPO_ALGO_RHD;
        ck_assert_int_eq(topo_select_algo(&cfg, &interleaved, SYMCOLL_MEM_HOST, b), flat);
        ck_assert_int_eq(topo_select_algo(&cfg, &host_4_nodes_uneven, SYMCOLL_MEM_HOST, b),
                         flat);
        ck_assert_int_eq(topo_select_algo(&cfg, &sixteen_nodes_1, SYMCOLL_MEM_HOST, b), flat);
        ck_assert_int_eq(topo_select_algo(&cfg, &host_1_node_4, SYMCOLL_MEM_HOST, b),
                         topo_select_algo(&cfg_test, &host_1_node_4, SYMCOLL_MEM_HOST, b));
    }
    cfg.forced = TOPO_ALGO_RING;
    topo_select(&cfg, &sixteen_nodes_1, SYMCOLL_MEM_HOST, G, &d);
    ck_assert_int_eq(d.algo, TOPO_ALGO_RHD);
    ck_assert_ptr_nonnull(strstr(d.reason, "SYMCOLL_ALGO=ring"));
    cfg.forced = TOPO_ALGO_HIER;
    ck_assert_int_eq(topo_select_algo(&cfg, &interleaved, SYMCOLL_MEM_HOST, 8), TOPO_ALGO_RD);
    ck_assert_int_eq(topo_select_algo(&cfg, &interleaved, SYMCOLL_MEM_HOST, G), TOPO_ALGO_RHD);
    ck_assert_int_eq(topo_select_algo(&cfg, &aligned, SYMCOLL_MEM_HOST, G), TOPO_ALGO_HIER);
    /* and hier's slices: rhd beyond NET_RD_MAX over more than 2 nodes, the ring on 2 */
    ck_assert_int_eq(topo_net_flat_algo(&cfg, 4, G), TOPO_ALGO_RHD);
    ck_assert_int_eq(topo_net_flat_algo(&cfg, 2, G), TOPO_ALGO_RING);
    ck_assert_int_eq(topo_net_flat_algo(&cfg_test, 4, G), TOPO_ALGO_RING);
    /* fastest keeps the ring */
    ck_assert_int_eq(topo_select_algo(&cfg_test, &sixteen_nodes_1, SYMCOLL_MEM_HOST, G),
                     TOPO_ALGO_RING);
}
END_TEST

/* Layouts (ranks of each node listed node after node) whose hier order is the tree. */
START_TEST(test_hier_canonical_layouts)
{
    /* 2 x 2 in blocks; 3 x 2 (T(6) = ((01)(23))(45)); 2 + 1 + 2 */
    static const int blocks4[] = {0, 1, 2, 3}, first2x2[] = {0, 2}, size2x2[] = {2, 2};
    static const int six[] = {0, 1, 2, 3, 4, 5}, first3x2[] = {0, 2, 4}, size3x2[] = {2, 2, 2};
    static const int first212[] = {0, 2, 3}, size212[] = {2, 1, 2};
    /* 2 x 2 interleaved: node 0 holds ranks 0 and 2 */
    static const int inter4[] = {0, 2, 1, 3};
    /* 4 x 3 in blocks: T(12) has no vertex {0, 1, 2} */
    static const int twelve[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    static const int first4x3[] = {0, 3, 6, 9}, size4x3[] = {3, 3, 3, 3};
    /* 4 x 2 and 8 x 4 in blocks */
    static const int first4x2[] = {0, 2, 4, 6}, size4x2[] = {2, 2, 2, 2};
    int r32[32], first8x4[8], size8x4[8];

    ck_assert(topo_hier_canonical(4, 2, blocks4, first2x2, size2x2));
    ck_assert(topo_hier_canonical(6, 3, six, first3x2, size3x2));
    ck_assert(topo_hier_canonical(5, 3, six, first212, size212));
    ck_assert(!topo_hier_canonical(4, 2, inter4, first2x2, size2x2));
    ck_assert(!topo_hier_canonical(12, 4, twelve, first4x3, size4x3));
    ck_assert(topo_hier_canonical(8, 4, twelve, first4x2, size4x2));
    for (int i = 0; i < 32; i++)
        r32[i] = i;
    for (int k = 0; k < 8; k++) {
        first8x4[k] = 4 * k;
        size8x4[k] = 4;
    }
    ck_assert(topo_hier_canonical(32, 8, r32, first8x4, size8x4));
}
END_TEST

START_TEST(test_thresholds)
{
    topo_select_cfg_t cfg = cfg_test;

    ck_assert_uint_eq(topo_oneshot_scaled(256 * K, 1, SYMCOLL_MEM_CUDA), 256 * K);
    ck_assert_uint_eq(topo_oneshot_scaled(256 * K, 2, SYMCOLL_MEM_CUDA), 256 * K);
    ck_assert_uint_eq(topo_oneshot_scaled(256 * K, 4, SYMCOLL_MEM_CUDA), 256 * K * 4 / 18);
    ck_assert_uint_eq(topo_oneshot_scaled(256 * K, 8, SYMCOLL_MEM_CUDA), 21399);
    ck_assert_uint_eq(topo_oneshot_scaled(16 * K, 2, SYMCOLL_MEM_HOST), 16 * K);
    ck_assert_uint_eq(topo_oneshot_scaled(16 * K, 8, SYMCOLL_MEM_HOST), 334);
    ck_assert_uint_eq(topo_oneshot_scaled(0, 8, SYMCOLL_MEM_CUDA), 0);
    ck_assert_uint_gt(topo_oneshot_scaled((size_t)1 << 62, 3, SYMCOLL_MEM_CUDA),
                      0); /* no overflow */
    ck_assert_uint_eq(topo_rd_max(&cfg, 2), 1 * M);
    ck_assert_uint_eq(topo_rd_max(&cfg, 3), 64 * K);
    cfg.net_rd_max = SIZE_MAX / 8;
    ck_assert_uint_eq(topo_rd_max(&cfg, 2), SIZE_MAX); /* saturates */

    /* what one-shot staging must hold */
    cfg = cfg_test;
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &one_node_8_nvlink, SYMCOLL_MEM_CUDA), 21399);
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &one_node_2_nvlink, SYMCOLL_MEM_CUDA), 256 * K);
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &one_node_4_pcie_p2p, SYMCOLL_MEM_CUDA), 14563);
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &two_nodes_4_nvlink, SYMCOLL_MEM_CUDA), 0);
    cfg.forced = TOPO_ALGO_ONESHOT;
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &one_node_8_nvlink, SYMCOLL_MEM_CUDA), SIZE_MAX);
    cfg.forced = TOPO_ALGO_TWOSHOT;
    ck_assert_uint_eq(topo_oneshot_max(&cfg, &one_node_8_nvlink, SYMCOLL_MEM_CUDA), 0);
}
END_TEST

typedef struct check_case {
    const topo_shape_t *shape;
    topo_algo_t forced;
    bool gpus; /* every rank has a GPU */
    symcoll_status_t want;
} check_case_t;

static const check_case_t checks[] = {
    {&one_node_8_nvlink, TOPO_ALGO_AUTO, true, SYMCOLL_OK},
    {&one_node_8_nvlink, TOPO_ALGO_ONESHOT, true, SYMCOLL_OK},
    {&one_node_8_nvlink, TOPO_ALGO_HIER, true, SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_8_nvlink, TOPO_ALGO_RING, true, SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_8_nvlink, TOPO_ALGO_RD, false, SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_4_pcie_nop2p, TOPO_ALGO_TWOSHOT, true, SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_4_pcie_nop2p, TOPO_ALGO_TWOSHOT, false, SYMCOLL_OK},
    {&one_node_4_pcie_nop2p, TOPO_ALGO_AUTO, true, SYMCOLL_OK},
    {&two_nodes_4_nvlink, TOPO_ALGO_HIER, true, SYMCOLL_OK},
    {&two_nodes_4_nvlink, TOPO_ALGO_TWOSHOT, true, SYMCOLL_ERR_INVALID_PARAM},
    {&two_nodes_4_nop2p, TOPO_ALGO_HIER, true, SYMCOLL_ERR_INVALID_PARAM},
    {&two_nodes_4_nop2p, TOPO_ALGO_RING, true, SYMCOLL_OK},
    {&sixteen_nodes_1, TOPO_ALGO_RD, false, SYMCOLL_OK},
    {&sixteen_nodes_1, TOPO_ALGO_ONESHOT, false, SYMCOLL_ERR_INVALID_PARAM},
    {&host_1_rank, TOPO_ALGO_RING, false, SYMCOLL_ERR_INVALID_PARAM},
    {&host_1_rank, TOPO_ALGO_ONESHOT, false, SYMCOLL_OK},
    {&host_4_nodes_uneven, TOPO_ALGO_HIER, false, SYMCOLL_ERR_INVALID_PARAM},
    {&host_4_nodes_uneven, TOPO_ALGO_RING, false, SYMCOLL_OK},
    /* what the build lacks is not a configuration error: it shows at the call */
    {&build_no_cuda, TOPO_ALGO_ONESHOT, true, SYMCOLL_OK},
    {&build_cuda_intra, TOPO_ALGO_RING, true, SYMCOLL_OK},
    {&one_node_16_nvlink, TOPO_ALGO_TWOSHOT, true, SYMCOLL_OK},
};

START_TEST(test_select_check)
{
    const check_case_t *c = &checks[_i];
    topo_select_cfg_t cfg = cfg_test;

    cfg.forced = c->forced;
    ck_assert_msg(topo_select_check(&cfg, c->shape, c->gpus) == c->want,
                  "case %d: forced %s on %d nodes x %d", _i, topo_algo_name(c->forced),
                  c->shape->nnodes, c->shape->ppn);
}
END_TEST

START_TEST(test_algo_names)
{
    topo_algo_t a;

    for (int i = TOPO_ALGO_AUTO; i < TOPO_ALGO_NONE; i++) {
        ck_assert_int_eq(topo_algo_parse(topo_algo_name((topo_algo_t)i), &a), 0);
        ck_assert_int_eq(a, i);
    }
    ck_assert_int_eq(topo_algo_parse("RING", &a), 0);
    ck_assert_int_eq(a, TOPO_ALGO_RING);
    a = TOPO_ALGO_HIER;
    ck_assert_int_eq(topo_algo_parse("none", &a), -1);
    ck_assert_int_eq(topo_algo_parse("", &a), -1);
    ck_assert_int_eq(topo_algo_parse("ring2", &a), -1);
    ck_assert_int_eq(a, TOPO_ALGO_HIER); /* untouched on failure */
    ck_assert_str_eq(topo_algo_name(TOPO_ALGO_LAST), "?");
    ck_assert_str_eq(topo_link_name(TOPO_LINK_NVLINK), "NVLink");
}
END_TEST

/* ---- overrides through the configuration table ---------------------------- */

static void clear_symcoll_env(void)
{
    for (size_t i = 0; i < config_num_vars(); i++)
        unsetenv(config_var_name(i));
}

static symcoll_status_t cfg_from_env(topo_select_cfg_t *cfg)
{
    config_t config;
    symcoll_status_t st = config_read(&config);
    if (st != SYMCOLL_OK)
        return st;
    return topo_select_cfg_from_config(&config, cfg);
}

START_TEST(test_overrides_defaults)
{
    topo_select_cfg_t cfg;

    clear_symcoll_env();
    ck_assert_int_eq(cfg_from_env(&cfg), SYMCOLL_OK);
    ck_assert_int_eq(cfg.forced, TOPO_ALGO_AUTO);
    /* PCIe reads are slower than NVLink: its one-shot range cannot be wider */
    ck_assert_uint_le(cfg.cuda_pcie_oneshot_max, cfg.cuda_oneshot_max);
    ck_assert_uint_gt(cfg.host_oneshot_max, 0);
    ck_assert_uint_gt(cfg.net_rd_max, 0);
    /* the canonical reduction order where it is free (auto) is the default */
    ck_assert(cfg.canonical);
    ck_assert(!cfg.canonical_wide);
}
END_TEST

START_TEST(test_overrides_values)
{
    topo_select_cfg_t cfg;

    clear_symcoll_env();
    setenv("SYMCOLL_ALGO", "Hier", 1);
    setenv("SYMCOLL_HOST_ONESHOT_MAX", "3K", 1);
    setenv("SYMCOLL_CUDA_ONESHOT_MAX", "1M", 1);
    setenv("SYMCOLL_CUDA_PCIE_ONESHOT_MAX", "12345", 1);
    setenv("SYMCOLL_NET_RD_MAX", "0", 1);
    setenv("SYMCOLL_HIER_MIN", "2MiB", 1);
    setenv("SYMCOLL_REDUCTION_ORDER", "fastest", 1);
    ck_assert_int_eq(cfg_from_env(&cfg), SYMCOLL_OK);
    ck_assert(!cfg.canonical);
    ck_assert_int_eq(cfg.forced, TOPO_ALGO_HIER);
    ck_assert_uint_eq(cfg.host_oneshot_max, 3 * K);
    ck_assert_uint_eq(cfg.cuda_oneshot_max, 1 * M);
    ck_assert_uint_eq(cfg.cuda_pcie_oneshot_max, 12345);
    ck_assert_uint_eq(cfg.net_rd_max, 0);
    ck_assert_uint_eq(cfg.hier_min, 2 * M);

    /* a zero threshold turns the small-message algorithm off */
    {
        topo_decision_t d;
        cfg.forced = TOPO_ALGO_AUTO;
        topo_select(&cfg, &sixteen_nodes_1, SYMCOLL_MEM_HOST, 8, &d);
        ck_assert_int_eq(d.algo, TOPO_ALGO_RING);
    }
}
END_TEST

static const char *const bad_values[][2] = {
    {"SYMCOLL_ALGO", "bogus"},
    {"SYMCOLL_ALGO", "none"},
    {"SYMCOLL_ALGO", ""},
    {"SYMCOLL_HOST_ONESHOT_MAX", "12Q"},
    {"SYMCOLL_HOST_ONESHOT_MAX", "-1"},
    {"SYMCOLL_CUDA_ONESHOT_MAX", "lots"},
    {"SYMCOLL_CUDA_PCIE_ONESHOT_MAX", "1.5M"},
    {"SYMCOLL_NET_RD_MAX", "64KK"},
    {"SYMCOLL_HIER_MIN", "99999999999999999999"},
    {"SYMCOLL_HIER_MIN", "1E"},
};

START_TEST(test_overrides_bad)
{
    topo_select_cfg_t cfg;

    clear_symcoll_env();
    setenv(bad_values[_i][0], bad_values[_i][1], 1);
    ck_assert_msg(cfg_from_env(&cfg) == SYMCOLL_ERR_INVALID_PARAM, "%s=%s accepted",
                  bad_values[_i][0], bad_values[_i][1]);
}
END_TEST

static Suite *select_suite(void)
{
    Suite *s = suite_create("topo_select");
    TCase *tc = tcase_create("select");

    tcase_add_loop_test(tc, test_select_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_select_monotonic);
    tcase_add_test(tc, test_select_direct);
    tcase_add_test(tc, test_thresholds);
    tcase_add_loop_test(tc, test_select_check, 0, (int)(sizeof(checks) / sizeof(checks[0])));
    tcase_add_test(tc, test_algo_names);
    tcase_add_test(tc, test_select_canonical);
    tcase_add_test(tc, test_hier_canonical_layouts);
    tcase_add_test(tc, test_overrides_defaults);
    tcase_add_test(tc, test_overrides_values);
    tcase_add_loop_test(tc, test_overrides_bad, 0,
                        (int)(sizeof(bad_values) / sizeof(bad_values[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(select_suite());
}
