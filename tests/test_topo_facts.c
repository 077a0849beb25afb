/* Probe derivation on injected facts (no processes, no devices): every rank's facts and
 * GPU link rows as the allgathers would deliver them, then the node map, the selector's
 * shapes and the SYMCOLL_ALGO check, as topo_probe derives them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "topo/topo.h"

#define MAXR 16

/* One injected machine: host of each rank (index into "host-A".."host-P"), GPU of each
 * rank (-1: none; same number = same GPU) and the link class between GPUs of one host. */
typedef struct facts {
    const char *name;
    int n;
    int host[MAXR];
    int gpu[MAXR];
    topo_link_t link; /* between different GPUs of one host */
} facts_t;

static void clear_symcoll_env(void)
{
    for (size_t i = 0; i < config_num_vars(); i++)
        unsetenv(config_var_name(i));
}

/* Builds the topology rank me would derive, with SYMCOLL_ALGO=algo (NULL: auto);
 * returns topo_finish's status, *t_p set either way (caller destroys). */
static symcoll_status_t derive(const facts_t *f, int me, const char *algo, topo_t **t_p)
{
    config_t config;
    topo_t *t;

    clear_symcoll_env();
    if (algo)
        setenv("SYMCOLL_ALGO", algo, 1);
    ck_assert_int_eq(config_read(&config), SYMCOLL_OK);
    ck_assert_int_eq(topo_create(f->n, &config, &t), SYMCOLL_OK);
    for (int r = 0; r < f->n; r++) {
        topo_rank_info_t *i = &t->info[r];
        snprintf(i->host_id, sizeof(i->host_id), "host-%c", 'A' + f->host[r]);
        i->pid = 1000 + r;
        i->cuda_device = f->gpu[r] < 0 ? -1 : f->gpu[r] % 8;
        if (f->gpu[r] >= 0)
            snprintf(i->pci_bus_id, sizeof(i->pci_bus_id), "0000:%02x:00.0",
                     0x10 + f->host[r] * 16 + f->gpu[r]);
        i->numa_node = i->cpu = i->gpu_numa_node = -1;
    }
    topo_derive_nodes(t, me);
    if (t->have_gpus) {
        /* rank me's node's matrix, as the node's channel gives it */
        size_t row = (size_t)t->local_size;
        t->links = calloc(row * row, sizeof(*t->links));
        ck_assert_ptr_nonnull(t->links);
        for (int a = 0; a < f->n; a++) {
            for (int b = 0; b < f->n; b++) {
                topo_link_info_t *l;
                if (t->rank_node[a] != t->node || t->rank_node[b] != t->node)
                    continue;
                l = &t->links[(size_t)t->rank_local_rank[a] * row +
                              (size_t)t->rank_local_rank[b]];
                l->perf_rank = -1;
                if (f->gpu[a] < 0 || f->gpu[b] < 0)
                    l->link = TOPO_LINK_NONE;
                else if (f->gpu[a] == f->gpu[b])
                    l->link = TOPO_LINK_SAME;
                else
                    l->link = (int8_t)f->link;
            }
        }
    }
    *t_p = t;
    return topo_finish(t);
}

static const facts_t one_node_8_nvlink = {
    "1 node x 8 GPUs, NVLink", 8, {0}, {0, 1, 2, 3, 4, 5, 6, 7}, TOPO_LINK_NVLINK};
static const facts_t one_node_4_nop2p = {
    "1 node x 4 GPUs, PCIe without P2P", 4, {0}, {0, 1, 2, 3}, TOPO_LINK_NONE};
static const facts_t two_nodes_4 = {"2 nodes x 4 GPUs, NVLink",
                                    8,
                                    {0, 0, 0, 0, 1, 1, 1, 1},
                                    {0, 1, 2, 3, 0, 1, 2, 3},
                                    TOPO_LINK_NVLINK};
static const facts_t sixteen_nodes = {"16 nodes x 1 GPU",
                                      16,
                                      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                                      {0},
                                      TOPO_LINK_NONE};
static const facts_t host_1_node = {
    "host only, 1 node x 4", 4, {0}, {-1, -1, -1, -1}, TOPO_LINK_NONE};
static const facts_t host_4_nodes = {"host only, 4 nodes x 2",
                                     8,
                                     {0, 0, 1, 1, 2, 2, 3, 3},
                                     {-1, -1, -1, -1, -1, -1, -1, -1},
                                     TOPO_LINK_NONE};
/* ranks of a node need not be contiguous: A B A */
static const facts_t interleaved = {
    "3 ranks on 2 nodes, interleaved", 3, {0, 1, 0}, {-1, -1, -1}, TOPO_LINK_NONE};
static const facts_t shared_gpu = {"4 ranks on 2 GPUs", 4, {0}, {0, 0, 1, 1}, TOPO_LINK_NVLINK};
static const facts_t one_without_gpu = {
    "4 ranks, one without a GPU", 4, {0}, {0, 1, -1, 2}, TOPO_LINK_NVLINK};

START_TEST(test_node_map)
{
    topo_t *t;

    ck_assert_int_eq(derive(&two_nodes_4, 5, NULL, &t), SYMCOLL_OK);
    ck_assert_int_eq(t->nnodes, 2);
    ck_assert_int_eq(t->node, 1);
    ck_assert_int_eq(t->local_rank, 1);
    ck_assert_int_eq(t->local_size, 4);
    ck_assert_int_eq(t->node_leader[0], 0);
    ck_assert_int_eq(t->node_leader[1], 4);
    for (int j = 0; j < 4; j++)
        ck_assert_int_eq(t->local_ranks[j], 4 + j);
    ck_assert_ptr_null(topo_link(t, 0, 5)); /* other node */
    ck_assert_ptr_nonnull(topo_link(t, 4, 5));
    ck_assert_int_eq(topo_link(t, 5, 5)->link, TOPO_LINK_SAME);
    ck_assert_int_eq(topo_link(t, 5, 7)->link, TOPO_LINK_NVLINK);
    topo_destroy(t);

    ck_assert_int_eq(derive(&interleaved, 2, NULL, &t), SYMCOLL_OK);
    ck_assert_int_eq(t->nnodes, 2);
    ck_assert_int_eq(t->rank_node[2], 0);
    ck_assert_int_eq(t->rank_local_rank[2], 1);
    ck_assert_int_eq(t->local_ranks[0], 0);
    ck_assert_int_eq(t->local_ranks[1], 2);
    ck_assert_int_eq(t->node_leader[1], 1);
    ck_assert(!t->shape[SYMCOLL_MEM_HOST].uniform);
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_HOST].ppn, 2);
    topo_destroy(t);
}
END_TEST

/* expected shape fields and one host decision per injected machine */
typedef struct shape_case {
    const facts_t *f;
    int nnodes, ppn;
    bool uniform, gpus;
    topo_link_t cuda_link;
    size_t host_bytes;
    topo_algo_t host_algo;
} shape_case_t;

static const shape_case_t shape_cases[] = {
    {&one_node_8_nvlink, 1, 8, true, true, TOPO_LINK_NVLINK, 64, TOPO_ALGO_ONESHOT},
    {&one_node_4_nop2p, 1, 4, true, true, TOPO_LINK_NONE, 1 << 20, TOPO_ALGO_TWOSHOT},
    {&two_nodes_4, 2, 4, true, true, TOPO_LINK_NVLINK, 8, TOPO_ALGO_HIER},
    {&sixteen_nodes, 16, 1, true, true, TOPO_LINK_SAME, 8, TOPO_ALGO_RD},
    {&host_1_node, 1, 4, true, false, TOPO_LINK_SAME, 8, TOPO_ALGO_ONESHOT},
    {&host_4_nodes, 4, 2, true, false, TOPO_LINK_SAME, 1 << 30, TOPO_ALGO_HIER},
    /* the canonical order (auto, the default): rhd for large messages across nodes */
    {&interleaved, 2, 2, false, false, TOPO_LINK_SAME, 1 << 30, TOPO_ALGO_RHD},
    {&shared_gpu, 1, 4, true, true, TOPO_LINK_NVLINK, 8, TOPO_ALGO_ONESHOT},
    {&one_without_gpu, 1, 4, true, false, TOPO_LINK_NONE, 8, TOPO_ALGO_ONESHOT},
};

START_TEST(test_shapes)
{
    const shape_case_t *c = &shape_cases[_i];
    topo_t *t;
    topo_decision_t d;

    ck_assert_int_eq(derive(c->f, 0, NULL, &t), SYMCOLL_OK);
    for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++) {
        const topo_shape_t *s = &t->shape[mem];
        ck_assert_int_eq(s->nranks, c->f->n);
        ck_assert_int_eq(s->nnodes, c->nnodes);
        ck_assert_int_eq(s->ppn, c->ppn);
        ck_assert_int_eq(s->uniform, c->uniform);
        ck_assert_int_eq(s->gpus, c->gpus);
        ck_assert(!s->net_cuda); /* nothing filled by the UCX layer */
    }
    /* a host-only machine has no link to report (all pairs are "same" by default) */
    if (t->have_gpus)
        ck_assert_msg(t->shape[SYMCOLL_MEM_CUDA].gpu_link == c->cuda_link, "%s: worst link %s",
                      c->f->name, topo_link_name(t->shape[SYMCOLL_MEM_CUDA].gpu_link));
    else
        ck_assert_ptr_null(t->links);
    topo_choose(t, SYMCOLL_MEM_HOST, c->host_bytes, &d);
    ck_assert_msg(d.algo == c->host_algo, "%s: host %zu B: %s (%s)", c->f->name, c->host_bytes,
                  topo_algo_name(d.algo), d.reason);
    topo_destroy(t);
}
END_TEST

/* SYMCOLL_ALGO against the derived topology: the CUDA check must see the GPU links (a
 * forced one-shot on NVLinked GPUs is fine; it was once checked against the host shape,
 * which has no GPU links, and refused) */
typedef struct algo_case {
    const facts_t *f;
    const char *algo;
    symcoll_status_t want;
} algo_case_t;

static const algo_case_t algo_cases[] = {
    {&one_node_8_nvlink, "oneshot", SYMCOLL_OK},
    {&one_node_8_nvlink, "twoshot", SYMCOLL_OK},
    {&one_node_8_nvlink, "hier", SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_4_nop2p, "twoshot", SYMCOLL_ERR_INVALID_PARAM},
    {&one_node_4_nop2p, "auto", SYMCOLL_OK},
    {&two_nodes_4, "hier", SYMCOLL_OK},
    {&two_nodes_4, "oneshot", SYMCOLL_ERR_INVALID_PARAM},
    {&sixteen_nodes, "ring", SYMCOLL_OK},
    {&sixteen_nodes, "twoshot", SYMCOLL_ERR_INVALID_PARAM},
    {&host_1_node, "ring", SYMCOLL_ERR_INVALID_PARAM},
    {&host_4_nodes, "hier", SYMCOLL_OK},
    {&interleaved, "hier", SYMCOLL_ERR_INVALID_PARAM},
    {&shared_gpu, "oneshot", SYMCOLL_OK},
    /* CUDA memory is impossible there, so only host memory is checked */
    {&one_without_gpu, "oneshot", SYMCOLL_OK},
    {&one_without_gpu, "ring", SYMCOLL_ERR_INVALID_PARAM},
};

START_TEST(test_forced)
{
    const algo_case_t *c = &algo_cases[_i];
    topo_t *t;

    ck_assert_msg(derive(c->f, 0, c->algo, &t) == c->want, "%s, SYMCOLL_ALGO=%s", c->f->name,
                  c->algo);
    topo_destroy(t);
}
END_TEST

/* the UCX layer's capabilities reach the CUDA shape only when every rank has them */
START_TEST(test_net_caps)
{
    topo_t *t;

    ck_assert_int_eq(derive(&two_nodes_4, 0, NULL, &t), SYMCOLL_OK);
    for (int r = 0; r < 7; r++)
        topo_set_net_caps(t, r, TOPO_NET_MEM_HOST | TOPO_NET_MEM_CUDA, "rc_mlx5,cuda_ipc");
    ck_assert(!t->shape[SYMCOLL_MEM_CUDA].net_cuda);
    topo_set_net_caps(t, 7, TOPO_NET_MEM_HOST, "tcp");
    ck_assert(!t->shape[SYMCOLL_MEM_CUDA].net_cuda);
    topo_set_net_caps(t, 7, TOPO_NET_MEM_HOST | TOPO_NET_MEM_CUDA, "tcp,cuda_copy");
    ck_assert(t->shape[SYMCOLL_MEM_CUDA].net_cuda);
    ck_assert_str_eq(t->info[7].net_tls, "tcp,cuda_copy");
    topo_set_net_caps(t, 8, 0, NULL); /* out of range: ignored */
    topo_destroy(t);
}
END_TEST

/* the GPU part of the report, which no machine without GPUs would print otherwise */
START_TEST(test_print_links)
{
    topo_t *t;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    ck_assert_int_eq(derive(&shared_gpu, 0, NULL, &t), SYMCOLL_OK);
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            topo_link_info_t *l = &t->links[a * t->local_size + b];
            if (l->link == TOPO_LINK_NVLINK) {
                l->nvlinks = 18;
                l->perf_rank = 0;
                l->flags = TOPO_LINK_F_P2P | TOPO_LINK_F_SWITCH;
            }
        }
    }
    /* one pair over PCIe only, seen from one side: the worst link counts */
    t->links[0 * t->local_size + 3].link = TOPO_LINK_PCIE;
    ck_assert_int_eq(topo_finish(t), SYMCOLL_OK);
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_CUDA].gpu_link, TOPO_LINK_PCIE);
    f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    topo_print(t, f);
    topo_print_decisions(t, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "#       0        X        X  NVS18/0   PCIe/0\n"));
    ck_assert_ptr_nonnull(strstr(buf, "#       3  NVS18/0  NVS18/0        X        X\n"));
    ck_assert_ptr_nonnull(strstr(buf, "worst GPU link PCIe"));
    ck_assert_ptr_nonnull(strstr(buf, "0000:11:00.0"));
    free(buf);
    topo_destroy(t);
}
END_TEST

static Suite *facts_suite(void)
{
    Suite *s = suite_create("topo_facts");
    TCase *tc = tcase_create("facts");

    tcase_add_test(tc, test_node_map);
    tcase_add_loop_test(tc, test_shapes, 0,
                        (int)(sizeof(shape_cases) / sizeof(shape_cases[0])));
    tcase_add_loop_test(tc, test_forced, 0, (int)(sizeof(algo_cases) / sizeof(algo_cases[0])));
    tcase_add_test(tc, test_net_caps);
    tcase_add_test(tc, test_print_links);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(facts_suite());
}
