/* The selector's answer for the collectives besides all-reduce (topo_select_coll_plan),
 * on injected shapes: which way each runs on the all-reduce's plan of its plan size, so
 * that the one selector keeps every path the algorithm layer serves. */
#include <check.h>
#include <stdlib.h>

#include "core/config.h"
#include "harness.h"
#include "topo/select.h"

#define K ((size_t)1 << 10)
#define M ((size_t)1 << 20)

static const topo_select_cfg_t cfg_test = {
    .forced = TOPO_ALGO_AUTO,
    .host_oneshot_max = 16 * K,
    .cuda_oneshot_max = 256 * K,
    .cuda_pcie_oneshot_max = 64 * K,
    .net_rd_max = 32 * K,
    .cuda_net_chunk = 4 * M,
    .cuda_net_channels = 4,
    .cuda_coll = CONFIG_CUDA_COLL_ALLREDUCE,
    .host_rs_native = true,
};

/* nranks, nnodes, ppn, uniform, gpu_link, net_cuda, cuda_max_local, cuda_across_nodes,
 * gpus, oversubscribed, gpus_shared, net_direct, net_direct_drv, net_direct_one_queue,
 * hier_canonical */
static const topo_shape_t host_1_node_4 = {
    4, 1, 4, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
static const topo_shape_t host_2_nodes_1 = {
    2, 2, 1, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
static const topo_shape_t host_3_ranks_2_nodes = {3,     2, 2,     false, TOPO_LINK_NONE,
                                                  false, 8, true,  false, false,
                                                  false, 0, false, false, false};
static const topo_shape_t host_1_rank = {
    1, 1, 1, true, TOPO_LINK_NONE, false, 8, true, false, false, false, 0, false, false, false};
static const topo_shape_t cuda_1_node_4 = {4,     1, 4,     true,  TOPO_LINK_NVLINK,
                                           false, 8, true,  true,  false,
                                           false, 0, false, false, false};

typedef struct {
    const topo_shape_t *shape;
    symcoll_mem_type_t mem;
    int cuda_coll;
    bool host_rs_native;
    topo_coll_t coll;
    size_t bytes;
    topo_family_t family;
    topo_via_t via;
    const char *brief; /* topo_plan_path's brief words */
} coll_case_t;

#define H SYMCOLL_MEM_HOST
#define C SYMCOLL_MEM_CUDA
#define AR CONFIG_CUDA_COLL_ALLREDUCE

static const coll_case_t cases[] = {
    /* every all-reduce runs natively: its path is its algorithm */
    {&host_1_node_4, H, AR, true, TOPO_COLL_ALLREDUCE, 8, TOPO_FAMILY_HOST, TOPO_VIA_NATIVE,
     "oneshot"},
    /* host memory inside a node: the host pool's own algorithms, the barrier included */
    {&host_1_node_4, H, AR, true, TOPO_COLL_REDUCE_SCATTER, 64 * K, TOPO_FAMILY_HOST,
     TOPO_VIA_NATIVE, "native"},
    {&host_1_node_4, H, AR, true, TOPO_COLL_BARRIER, 1, TOPO_FAMILY_HOST, TOPO_VIA_NATIVE,
     "native"},
    /* ... unless a staging slot cannot hold a piece of every rank's block */
    {&host_1_node_4, H, AR, false, TOPO_COLL_REDUCE_SCATTER, 64 * K, TOPO_FAMILY_HOST,
     TOPO_VIA_ALLREDUCE, "ar:twoshot"},
    {&host_1_node_4, H, AR, false, TOPO_COLL_ALLGATHER, 64 * K, TOPO_FAMILY_HOST,
     TOPO_VIA_NATIVE, "native"},
    /* two ranks across nodes: eager broadcasts, one exchange where the all-reduce runs
     * recursive doubling (a broadcast only above NET_RD_MAX), rings above */
    {&host_2_nodes_1, H, AR, true, TOPO_COLL_BROADCAST, 8, TOPO_FAMILY_NET_HOST, TOPO_VIA_EAGER,
     "ucx:eager"},
    {&host_2_nodes_1, H, AR, true, TOPO_COLL_BROADCAST, TOPO_NET_BC_EAGER_MAX * 2,
     TOPO_FAMILY_NET_HOST, TOPO_VIA_PAIR, "ucx:exchange"},
    {&host_2_nodes_1, H, AR, true, TOPO_COLL_REDUCE_SCATTER, 8, TOPO_FAMILY_NET_HOST,
     TOPO_VIA_PAIR, "ucx:exchange"},
    {&host_2_nodes_1, H, AR, true, TOPO_COLL_ALLGATHER, 64 * M, TOPO_FAMILY_NET_HOST,
     TOPO_VIA_NATIVE, "ucx:ring"},
    {&host_2_nodes_1, H, AR, true, TOPO_COLL_BARRIER, 1, TOPO_FAMILY_NET_HOST,
     TOPO_VIA_ALLREDUCE, "ar:rd"},
    /* three ranks: recursive doubling's sizes run as one all-reduce */
    {&host_3_ranks_2_nodes, H, AR, true, TOPO_COLL_REDUCE_SCATTER, 8, TOPO_FAMILY_NET_HOST,
     TOPO_VIA_ALLREDUCE, "ar:rd"},
    /* one rank: the all-reduce path copies */
    {&host_1_rank, H, AR, true, TOPO_COLL_ALLGATHER, 8, TOPO_FAMILY_SELF, TOPO_VIA_ALLREDUCE,
     "ar:none"},
    /* CUDA inside a node: the collective's own kernel only with SYMCOLL_CUDA_COLL=auto, and
     * never the barrier */
    {&cuda_1_node_4, C, AR, true, TOPO_COLL_ALLGATHER, 8, TOPO_FAMILY_CUDA, TOPO_VIA_ALLREDUCE,
     "ar:oneshot"},
    {&cuda_1_node_4, C, CONFIG_CUDA_COLL_AUTO, true, TOPO_COLL_ALLGATHER, 8, TOPO_FAMILY_CUDA,
     TOPO_VIA_NATIVE, "native:oneshot"},
    {&cuda_1_node_4, C, CONFIG_CUDA_COLL_AUTO, true, TOPO_COLL_BARRIER, 1, TOPO_FAMILY_CUDA,
     TOPO_VIA_ALLREDUCE, "ar:oneshot"},
};

START_TEST(test_coll_plan)
{
    const coll_case_t *c = &cases[_i];
    topo_select_cfg_t cfg = cfg_test;
    topo_plan_t plan, quiet;
    topo_decision_t d;
    char brief[32];

    cfg.cuda_coll = c->cuda_coll;
    cfg.host_rs_native = c->host_rs_native;
    topo_select_coll_plan(&cfg, c->shape, c->coll, c->mem, c->bytes, &plan, &d);
    topo_plan_path(&plan, true, brief, sizeof(brief));
    ck_assert_msg(plan.coll == c->coll && plan.family == c->family && plan.via == c->via,
                  "case %d (%s of %zu): family %s via %d, expected %s via %d (%s)", _i,
                  topo_coll_name(c->coll), c->bytes, topo_family_name(plan.family),
                  (int)plan.via, topo_family_name(c->family), (int)c->via, d.reason);
    ck_assert_str_eq(brief, c->brief);
    /* the data path's question (no reason) gets the same answer */
    topo_select_coll_plan(&cfg, c->shape, c->coll, c->mem, c->bytes, &quiet, NULL);
    ck_assert(quiet.family == plan.family && quiet.algo == plan.algo && quiet.via == plan.via);
}
END_TEST

START_TEST(test_coll_names)
{
    ck_assert_str_eq(topo_coll_name(TOPO_COLL_REDUCE_SCATTER), "reduce-scatter");
    ck_assert_str_eq(topo_coll_name(TOPO_COLL_BARRIER), "barrier");
    ck_assert_str_eq(topo_coll_name(TOPO_COLL_LAST), "?");
}
END_TEST

static Suite *coll_suite(void)
{
    Suite *s = suite_create("topo_select_coll");
    TCase *tc = tcase_create("coll");

    tcase_add_loop_test(tc, test_coll_plan, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_coll_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(coll_suite());
}
