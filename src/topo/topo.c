/* Topology probe in two levels: the job exchanges 16 bytes a rank (host identity's hash,
 * CUDA device), from which every rank derives the node map (nodes in order of first
 * rank); the ranks of a node exchange the rest of their facts (pid, start time, NUMA,
 * CPUs, GPU) and their node's GPU link matrix over the node's channel; one job-wide
 * vote agrees on the per-node summaries the selector's shapes need. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "topo/topo.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "topo/gpu.h"
#include "topo/tune.h"
#ifdef HAVE_CUDA
#include "cuda/kernels.h"
#endif

int topo_proc_stat_parse(const char *text, char *state, uint64_t *start_time)
{
    const char *p;
    unsigned long long st;
    char c;

    /* the command name may hold spaces and parentheses: fields follow the last ')' */
    p = strrchr(text, ')');
    if (!p || sscanf(p + 1, " %c", &c) != 1)
        return -1;
    p++;
    /* field 22 is starttime; after ')' comes field 3 */
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p, " %llu", &st) != 1)
        return -1;
    *state = c;
    *start_time = st;
    return 0;
}

/* The state letter and start time of local process pid; -1 if it has no /proc entry
 * (reaped, or never was) or the entry does not parse. */
static int topo_proc_stat(int pid, char *state, uint64_t *start_time)
{
    char path[64], buf[1024];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return topo_proc_stat_parse(buf, state, start_time);
}

uint64_t topo_proc_start_time(int pid)
{
    char state;
    uint64_t st;

    return topo_proc_stat(pid, &state, &st) ? 0 : st;
}

int topo_proc_alive(int pid, uint64_t start_time)
{
    char state;
    uint64_t now;

    if (topo_proc_stat(pid, &state, &now) || now == 0)
        return 0;
    /* a zombie keeps its /proc entry until its parent reaps it, which may be late or
     * never (a launcher that reaps at its own pace): it runs no more all the same */
    if (state == 'Z' || state == 'X')
        return 0;
    return start_time == 0 || now == start_time;
}

static void topo_host_identity(const comm_t *comm, char *out, size_t len)
{
    char host[64] = "unknown", boot[64] = "";
    FILE *f;

    if (comm->config.host_id[0]) {
        snprintf(out, len, "%.*s", (int)len - 1, comm->config.host_id);
        return;
    }
    gethostname(host, sizeof(host) - 1);
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = 0;
        fclose(f);
        boot[strcspn(boot, "\n")] = 0;
    }
    snprintf(out, len, "%s/%s", host, boot);
}

/* FNV-1a, 64 bits, of a host identity: two hosts of a job of 100,000 nodes share a
 * hash with a probability below 1e-9 (n^2 / 2^65). */
static uint64_t topo_host_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

void topo_derive_nodes(topo_t *t, int my_rank)
{
    int n = t->nranks;

    for (int r = 0; r < n; r++) {
        int node = -1;
        t->info[r].host_id[TOPO_HOST_ID_MAX - 1] = 0;
        if (t->info[r].host_id[0])
            t->info[r].host_hash = topo_host_hash(t->info[r].host_id);
        /* launchers place ranks in blocks: the previous rank's node first, so that the
         * usual layout costs O(ranks) comparisons instead of O(ranks x nodes) */
        if (r > 0 &&
            t->info[t->node_leader[t->rank_node[r - 1]]].host_hash == t->info[r].host_hash)
            node = t->rank_node[r - 1];
        for (int k = 0; k < t->nnodes && node < 0; k++) {
            if (t->info[t->node_leader[k]].host_hash == t->info[r].host_hash) {
                node = k;
                break;
            }
        }
        if (node < 0) {
            node = t->nnodes++;
            t->node_leader[node] = r;
        }
        t->rank_node[r] = node;
        t->rank_local_rank[r] = t->node_size[node]++;
    }
    t->node = t->rank_node[my_rank];
    t->local_rank = t->rank_local_rank[my_rank];
    for (int r = 0; r < n; r++)
        if (t->rank_node[r] == t->node)
            t->local_ranks[t->local_size++] = r;
    for (int k = 0; k < t->nnodes; k++)
        if (t->node_size[k] > t->max_node_size)
            t->max_node_size = t->node_size[k];
    for (int r = 0; r < n; r++) {
        t->info[r].pci_bus_id[TOPO_PCI_BUS_ID_MAX - 1] = 0;
        t->info[r].gpu_uuid[TOPO_UUID_MAX - 1] = 0;
        t->info[r].gpu_name[sizeof(t->info[r].gpu_name) - 1] = 0;
        t->info[r].net_tls[TOPO_TLS_MAX - 1] = 0;
        if (t->info[r].cuda_device >= 0)
            t->have_gpus = 1;
    }
}

/* The worst GPU link of this node's matrix (TOPO_LINK_SAME on a node of one rank;
 * TOPO_LINK_NONE where the matrix is not known). */
static topo_link_t topo_node_worst_link(const topo_t *t)
{
    topo_link_t worst = TOPO_LINK_SAME;

    for (int a = 0; a < t->local_size; a++)
        for (int b = 0; b < t->local_size; b++) {
            if (a == b)
                continue;
            if (!t->links)
                return TOPO_LINK_NONE;
            if (t->links[(size_t)a * (size_t)t->local_size + (size_t)b].link < (int)worst)
                worst =
                    (topo_link_t)t->links[(size_t)a * (size_t)t->local_size + (size_t)b].link;
        }
    return worst;
}

/* Every rank measures its own row (its GPU to each GPU of its node) and the ranks of the
 * node exchange rows over the node's channel: each rank holds its node's matrix only
 * (ranks per node squared, not the job's). */
static symcoll_status_t topo_exchange_links(comm_t *comm, topo_t *t)
{
    size_t ls = (size_t)t->local_size;
    topo_link_info_t *mine;
    symcoll_status_t status;

    t->links = calloc(ls * ls, sizeof(*t->links));
    mine = calloc(ls, sizeof(*mine));
    if (!t->links || !mine) {
        free(mine);
        return SYMCOLL_ERR_NO_MEMORY;
    }
    for (size_t j = 0; j < ls; j++)
        topo_gpu_link(&t->info[comm->rank], &t->info[t->local_ranks[j]], &mine[j]);
    status = bootstrap_local_fd_allgather(comm->bootstrap, NULL, 0, mine, ls * sizeof(*mine),
                                          NULL, t->links);
    free(mine);
    return status;
}

const topo_link_info_t *topo_link(const topo_t *t, int a, int b)
{
    if (!t->links || a < 0 || b < 0 || a >= t->nranks || b >= t->nranks ||
        t->rank_node[a] != t->node || t->rank_node[b] != t->node)
        return NULL;
    return &t->links[(size_t)t->rank_local_rank[a] * (size_t)t->local_size +
                     (size_t)t->rank_local_rank[b]];
}

/* CPUs this process may run on (0 if unknown), and which of the first
 * 64 x TOPO_CPU_WORDS. */
static int32_t topo_affinity_cpus(uint64_t words[TOPO_CPU_WORDS])
{
    cpu_set_t set;

    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set))
        return 0;
    for (int c = 0; c < 64 * TOPO_CPU_WORDS && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            words[c / 64] |= 1ull << (c % 64);
    return (int32_t)CPU_COUNT(&set);
}

/* CPUs the ranks of node k may run on together: bound ranks (one core each, as
 * launchers bind by default) are not oversubscribed when their cores differ. 0 when a
 * rank's set is not known. */
static int topo_node_cpus(const topo_t *t, int k)
{
    uint64_t u[TOPO_CPU_WORDS] = {0};
    int n = 0;

    for (int a = 0; a < t->nranks; a++) {
        if (t->rank_node[a] != k)
            continue;
        if (t->info[a].ncpus <= 0)
            return 0;
        for (int w = 0; w < TOPO_CPU_WORDS; w++)
            u[w] |= t->info[a].cpus[w];
    }
    for (int w = 0; w < TOPO_CPU_WORDS; w++)
        n += __builtin_popcountll(u[w]);
    return n;
}

static int topo_cmp_uuid(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Some GPU serves two of the ranks listed (NULL: every rank), or some such rank's GPU is
 * not known (sorted: n log n). */
static bool topo_gpus_shared(const topo_t *t, const int *ranks, int n)
{
    const char **u = malloc((size_t)n * sizeof(*u));
    bool shared = false;

    if (!u)
        return true; /* the careful answer */
    for (int j = 0; j < n; j++) {
        u[j] = t->info[ranks ? ranks[j] : j].gpu_uuid;
        shared |= !u[j][0];
    }
    qsort(u, (size_t)n, sizeof(*u), topo_cmp_uuid);
    for (int j = 1; j < n && !shared; j++)
        shared = !strcmp(u[j - 1], u[j]);
    free(u);
    return shared;
}

/* This node has more ranks than CPUs they may run on together. */
static bool topo_node_oversubscribed(const topo_t *t, int k)
{
    int cpus = topo_node_cpus(t, k);
    return cpus > 0 && t->node_size[k] > cpus;
}

/* topo_hier_canonical on this communicator's node map. */
static bool topo_hier_layout_canonical(const topo_t *t)
{
    int *ranks = malloc((size_t)t->nranks * sizeof(int));
    int *first = calloc((size_t)t->nnodes + 1, sizeof(int)), *fill = NULL;
    bool same = false;

    if (ranks && first)
        fill = calloc((size_t)t->nnodes, sizeof(int));
    if (fill) {
        for (int k = 0; k < t->nnodes; k++)
            first[k + 1] = first[k] + t->node_size[k];
        for (int r = 0; r < t->nranks; r++) {
            int k = t->rank_node[r];
            ranks[first[k] + fill[k]++] = r;
        }
        same = topo_hier_canonical(t->nranks, t->nnodes, ranks, first, t->node_size);
    }
    free(ranks);
    free(first);
    free(fill);
    return same;
}

static void topo_update_shapes(topo_t *t)
{
    topo_shape_t s;
    int uniform = 1, gpus = 1;
    topo_link_t worst = TOPO_LINK_SAME;

    memset(&s, 0, sizeof(s));
    s.nranks = t->nranks;
    s.nnodes = t->nnodes;
    s.ppn = t->max_node_size;
    for (int k = 0; k < t->nnodes; k++)
        uniform &= t->node_size[k] == t->max_node_size;
    s.uniform = uniform;
    /* as the ranks agreed it (a rank short of memory says no, and all follow) */
    s.hier_canonical = uniform && t->nnodes > 1 &&
                       (t->agreed ? t->hier_canonical_job : topo_hier_layout_canonical(t));
    /* ranks of a node outnumber the CPUs they may run on: barriers then cost context
     * switches, which changes where one-shot stops paying (select.c) */
    for (int k = 0; k < t->nnodes && !t->agreed; k++)
        s.oversubscribed |= topo_node_oversubscribed(t, k);
    s.oversubscribed |= t->agreed && t->oversub_job;
    t->net_cuda_ranks = 0;
    for (int a = 0; a < t->nranks; a++) {
        t->net_cuda_ranks += (t->info[a].net_mem_types & TOPO_NET_MEM_CUDA) != 0;
        gpus &= t->info[a].cuda_device >= 0;
    }
    /* the job's worst link as the ranks agreed it, else this node's (a topology built
     * from injected facts) */
    worst = t->agreed ? (topo_link_t)t->gpu_link_job : topo_node_worst_link(t);
    s.net_cuda = t->net_cuda_ranks == t->nranks;
#ifdef HAVE_CUDA
    s.cuda_max_local = CUDA_AR_MAX_RANKS;
    s.cuda_across_nodes = true; /* staged through pinned host memory (algo/cuda_net/) */
#endif
    s.gpus = gpus;
    /* a GPU used by two ranks (unknown GPUs count as shared): their kernels time-slice */
    if (gpus)
        s.gpus_shared = t->agreed ? t->gpus_shared_job : topo_gpus_shared(t, NULL, t->nranks);
    s.gpu_link = TOPO_LINK_NONE;
    t->shape[SYMCOLL_MEM_HOST] = s;
    s.gpu_link = worst;
    t->shape[SYMCOLL_MEM_CUDA] = s;
}

symcoll_status_t topo_create(int nranks, const config_t *config, topo_t **topo_p)
{
    size_t n = (size_t)nranks;
    topo_t *t;
    symcoll_status_t status;

    t = calloc(1, sizeof(*t));
    if (!t)
        return SYMCOLL_ERR_NO_MEMORY;
    t->nranks = nranks;
    t->info = calloc(n, sizeof(*t->info));
    t->local_ranks = calloc(n, sizeof(int));
    t->rank_node = calloc(n, sizeof(int));
    t->rank_local_rank = calloc(n, sizeof(int));
    t->node_leader = calloc(n, sizeof(int));
    t->node_size = calloc(n, sizeof(int));
    if (!t->info || !t->local_ranks || !t->rank_node || !t->rank_local_rank ||
        !t->node_leader || !t->node_size) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err;
    }
    status = topo_select_cfg_from_config(config, &t->select_cfg);
    if (status != SYMCOLL_OK)
        goto err;
    *topo_p = t;
    return SYMCOLL_OK;

err:
    topo_destroy(t);
    return status;
}

symcoll_status_t topo_finish(topo_t *t)
{
    topo_update_shapes(t);
    topo_tune_match(t);
    /* the CUDA shape carries the GPU links; host checks ignore them */
    return topo_select_check(&t->select_cfg, &t->shape[SYMCOLL_MEM_CUDA],
                             t->shape[SYMCOLL_MEM_CUDA].gpus);
}

/* What every rank tells the whole job at creation. */
typedef struct topo_rank_key {
    uint64_t host_hash;
    int32_t cuda_device;
    int32_t reserved;
} topo_rank_key_t;

symcoll_status_t topo_probe(comm_t *comm, topo_t **topo_p)
{
    topo_rank_info_t me;
    topo_rank_key_t key = {0}, *keys;
    topo_t *t;
    symcoll_status_t status;

    memset(&me, 0, sizeof(me));
    topo_host_identity(comm, me.host_id, sizeof(me.host_id));
    me.pid = (int32_t)getpid();
    me.start_time = topo_proc_start_time((int)getpid());
    topo_gpu_local_facts(comm->cuda_device, &me);
    topo_numa_local(&me.numa_node, &me.cpu);
    me.ncpus = topo_affinity_cpus(me.cpus);

    status = topo_create(comm->nranks, &comm->config, &t);
    if (status != SYMCOLL_OK)
        return status;
    topo_tune_open(t, &comm->config);
    keys = calloc((size_t)comm->nranks, sizeof(*keys));
    if (!keys) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err;
    }
    key.host_hash = topo_host_hash(me.host_id);
    key.cuda_device = me.cuda_device;
    status = bootstrap_allgather(comm->bootstrap, &key, keys, sizeof(key));
    for (int r = 0; status == SYMCOLL_OK && r < comm->nranks; r++) {
        t->info[r].host_hash = keys[r].host_hash;
        t->info[r].cuda_device = keys[r].cuda_device;
    }
    free(keys);
    if (status != SYMCOLL_OK)
        goto err;
    t->info[comm->rank] = me;
    topo_derive_nodes(t, comm->rank);
    log_debug("topology: %d ranks on %d nodes; node %d, local rank %d of %d", t->nranks,
              t->nnodes, t->node, t->local_rank, t->local_size);
    *topo_p = t;
    return SYMCOLL_OK;

err:
    topo_destroy(t);
    return status;
}

bool topo_probe_part(comm_t *comm, const topo_t *parent, const int *members, topo_t **topo_p)
{
    topo_t *t;

    if (!parent || !members)
        return false;
    if (topo_create(comm->nranks, &comm->config, &t) != SYMCOLL_OK)
        return false;
    topo_tune_inherit(t, parent, &comm->config);
    for (int r = 0; r < comm->nranks; r++) {
        topo_rank_info_t *i = &t->info[r];
        *i = parent->info[members[r]];
        /* the part's UCX layer tells its own */
        i->net_mem_types = 0;
        i->net_tls[0] = 0;
    }
    topo_derive_nodes(t, comm->rank);
    t->facts_known = true;
    *topo_p = t;
    return true;
}

symcoll_status_t topo_probe_node(comm_t *comm, topo_t *t)
{
    size_t ls = (size_t)t->local_size;
    topo_rank_info_t *facts = calloc(ls, sizeof(*facts));
    symcoll_status_t status;
    int64_t v[11];

    /* the other facts of this node's ranks */
    if (!facts)
        return SYMCOLL_ERR_NO_MEMORY;
    status = t->facts_known
                 ? SYMCOLL_OK
                 : bootstrap_local_fd_allgather(comm->bootstrap, NULL, 0, &t->info[comm->rank],
                                                sizeof(*facts), NULL, facts);
    for (size_t j = 0; !t->facts_known && status == SYMCOLL_OK && j < ls; j++) {
        topo_rank_info_t *i = &t->info[t->local_ranks[j]];
        if (facts[j].host_hash != i->host_hash || facts[j].cuda_device != i->cuda_device) {
            log_error("topology: rank %d told its node other facts than the job",
                      t->local_ranks[j]);
            status = SYMCOLL_ERR_BOOTSTRAP;
            break;
        }
        *i = facts[j];
        i->host_id[TOPO_HOST_ID_MAX - 1] = 0;
        i->pci_bus_id[TOPO_PCI_BUS_ID_MAX - 1] = 0;
        i->gpu_uuid[TOPO_UUID_MAX - 1] = 0;
        i->gpu_name[sizeof(i->gpu_name) - 1] = 0;
        i->net_tls[TOPO_TLS_MAX - 1] = 0;
    }
    free(facts);
    /* every rank saw the same facts, so every rank takes this branch or none does */
    if (status == SYMCOLL_OK && t->have_gpus)
        status = topo_exchange_links(comm, t);
    if (status != SYMCOLL_OK)
        return status;
    /* one vote, MIN of each: the worst GPU link of any node, and (as MIN of -x) whether
     * some node is oversubscribed or has a shared or unknown GPU */
    v[0] = t->have_gpus ? topo_node_worst_link(t) : TOPO_LINK_SAME;
    v[1] = -(int64_t)topo_node_oversubscribed(t, t->node);
    v[2] = -(int64_t)(t->have_gpus && topo_gpus_shared(t, t->local_ranks, t->local_size));
    /* and the reduction order, as its minimum and maximum: every rank must run the same
     * algorithms (one that runs the ring while its peers run recursive doubling would
     * wait for messages that never come) */
    v[3] = t->select_cfg.canonical + t->select_cfg.canonical_wide;
    v[4] = -v[3];
    /* whether hier's order is the canonical tree here: every rank must choose alike */
    v[5] = t->nnodes > 1 && topo_hier_layout_canonical(t);
    /* and the tuning files: every rank's must be the same, or none */
    topo_tune_vote_fill(t, comm->rank, v + 6);
    status = bootstrap_allreduce(comm->bootstrap, v, 11, BOOTSTRAP_OP_MIN);
    if (status != SYMCOLL_OK)
        return status;
    status = topo_tune_vote_check(comm, t, v + 6);
    if (status != SYMCOLL_OK)
        return status;
    if (v[3] != -v[4]) {
        log_error("the ranks disagree on the reduction order (SYMCOLL_REDUCTION_ORDER or the "
                  "communicator parameter reduction_order); this rank: %s",
                  t->select_cfg.canonical_wide ? "canonical"
                  : t->select_cfg.canonical    ? "auto"
                                               : "fastest");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    t->agreed = true;
    t->gpu_link_job = (int)v[0];
    t->oversub_job = v[1] != 0;
    t->gpus_shared_job = v[2] != 0;
    t->hier_canonical_job = v[5] != 0;
    status = topo_finish(t);
    if (status != SYMCOLL_OK)
        return status;
    if (t->have_gpus && comm->rank == 0)
        log_info("topology: GPU %d (%s) of rank 0; worst GPU link inside a node: %s "
                 "(NVML %s)",
                 t->info[0].cuda_device, t->info[0].pci_bus_id,
                 topo_link_name(t->shape[SYMCOLL_MEM_CUDA].gpu_link),
                 topo_nvml_available() ? "loaded" : "not available");
    return SYMCOLL_OK;
}

/* The shapes changed: every remembered plan is stale. */
void topo_memo_clear(topo_t *t)
{
    for (int c = 0; c < TOPO_COLL_LAST; c++)
        for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++)
            t->memo[c][mem].valid = false;
}

void topo_set_net_caps(topo_t *t, int rank, uint32_t mem_types, const char *tls)
{
    topo_rank_info_t *i;
    bool net_cuda;

    if (rank < 0 || rank >= t->nranks)
        return;
    i = &t->info[rank];
    /* O(1): the UCX layer calls this once per rank */
    t->net_cuda_ranks -= (i->net_mem_types & TOPO_NET_MEM_CUDA) != 0;
    t->net_cuda_ranks += (mem_types & TOPO_NET_MEM_CUDA) != 0;
    i->net_mem_types = mem_types;
    snprintf(i->net_tls, sizeof(i->net_tls), "%s", tls ? tls : "");
    net_cuda = t->net_cuda_ranks == t->nranks;
    for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++)
        t->shape[mem].net_cuda = net_cuda;
    topo_memo_clear(t);
    /* the transports are part of the fingerprint */
    if (rank == 0)
        topo_tune_match(t);
}

void topo_set_net_direct(topo_t *t, const signed char *per_rank, bool all_ok, bool drv,
                         bool one_queue)
{
    if (!t->net_direct_peer)
        t->net_direct_peer = calloc((size_t)t->nranks, sizeof(*t->net_direct_peer));
    if (t->net_direct_peer && per_rank)
        memcpy(t->net_direct_peer, per_rank, (size_t)t->nranks);
    for (int mem = 0; mem < SYMCOLL_MEM_LAST; mem++) {
        t->shape[mem].net_direct = all_ok ? 1 : -1;
        t->shape[mem].net_direct_drv = drv;
        t->shape[mem].net_direct_one_queue = one_queue;
    }
    topo_memo_clear(t);
}

const topo_plan_t *topo_plan(topo_t *t, topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes)
{
    __typeof__(t->memo[0][0]) *m = &t->memo[coll][mem];

    if (!m->valid || m->bytes != bytes) {
        if (t->tune && !t->tune_told)
            topo_tune_tell(t);
        topo_select_coll_plan(&t->select_cfg, &t->shape[mem], coll, mem, bytes, &m->plan, NULL);
        m->bytes = bytes;
        m->valid = true;
    }
    return &m->plan;
}

void topo_plan_explain(const topo_t *t, topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes,
                       topo_plan_t *plan, topo_decision_t *d)
{
    topo_select_coll_plan(&t->select_cfg, &t->shape[mem], coll, mem, bytes, plan, d);
}

void topo_set_host_rs_native(topo_t *t, bool native)
{
    t->select_cfg.host_rs_native = native;
    topo_memo_clear(t);
}

void topo_choose(const topo_t *t, symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d)
{
    topo_select(&t->select_cfg, &t->shape[mem], mem, bytes, d);
}

topo_algo_t topo_choose_algo(const topo_t *t, symcoll_mem_type_t mem, size_t bytes)
{
    return topo_select_algo(&t->select_cfg, &t->shape[mem], mem, bytes);
}

size_t topo_choose_oneshot_max(const topo_t *t, symcoll_mem_type_t mem)
{
    return topo_oneshot_max(&t->select_cfg, &t->shape[mem], mem);
}

void topo_destroy(topo_t *t)
{
    if (!t)
        return;
    free(t->info);
    free(t->local_ranks);
    free(t->rank_node);
    free(t->rank_local_rank);
    free(t->node_leader);
    free(t->node_size);
    free(t->links);
    free(t->net_direct_peer);
    topo_tune_free(t->tune);
    free(t);
}
