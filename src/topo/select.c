/* Algorithm selector. The rules, in order:
 *   1. SYMCOLL_ALGO forces an algorithm (checked for applicability at creation).
 *   2. One node: one-shot up to the memory type's threshold (for CUDA the threshold of
 *      the node's worst GPU link), two-shot above. CUDA memory needs peer access between
 *      every pair of the node's GPUs. The thresholds are measured on 2 ranks and scaled
 *      for n by how much more one-shot moves through the bottleneck. A GPU's NVLink port:
 *      one-shot pulls (n-1) copies in, two-shot (n-1)/n in each direction, so the gap per
 *      byte grows as (n-1)^2/n and the crossover shrinks by n/(2(n-1)^2) (0.22 at 4, 0.08
 *      at 8). Host memory: all ranks share one memory system and one-shot's reads total
 *      n(n-1) copies against two-shot's 2(n-1); the crossover shrinks faster than on a
 *      GPU, by 1/(n-1)^2, fitted to the measurements (2 ranks: 16-64 KiB depending on
 *      the machine, 8 ranks: 512 B - 1 KiB). When a node's ranks outnumber its CPUs,
 *      barriers cost context switches and the host threshold shrinks only by 1/(n-1)
 *      (2 cores: 4 ranks cross over at 8-16 KiB, 8 ranks at 4-8 KiB).
 *   3. Several nodes with several ranks each (same count everywhere): hierarchical from
 *      SYMCOLL_HIER_MIN up, since only 1/ppn of the data crosses the network per rank.
 *   4. Otherwise over the network: recursive doubling up to SYMCOLL_NET_RD_MAX
 *      (log2(n) latency-bound steps), the ring above (bandwidth-optimal). With 2 ranks
 *      both move the same bytes (rd in one exchange, the ring in two steps), so rd
 *      serves up to 16 x SYMCOLL_NET_RD_MAX, where the ring's pipelining starts to pay.
 * Thresholds come from measurements on the project's machines (docs/performance.md
 * gives the commands that remake them). */
#include "topo/select.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "topo/select_int.h"
#include "topo/tune.h"

static const char *const algo_names[TOPO_ALGO_LAST] = {"auto", "oneshot", "twoshot", "ring",
                                                       "rd",   "hier",    "rhd",     "none"};
static const char *const link_names[TOPO_LINK_LAST] = {"none", "PCIe", "NVLink", "same GPU"};

const char *topo_algo_name(topo_algo_t algo)
{
    return (unsigned)algo < TOPO_ALGO_LAST ? algo_names[algo] : "?";
}

int topo_algo_parse(const char *name, topo_algo_t *algo_p)
{
    /* "none" is a result, not something a user can ask for */
    for (int a = 0; a < TOPO_ALGO_NONE; a++) {
        if (!strcasecmp(name, algo_names[a])) {
            *algo_p = (topo_algo_t)a;
            return 0;
        }
    }
    return -1;
}

const char *topo_link_name(topo_link_t link)
{
    return (unsigned)link < TOPO_LINK_LAST ? link_names[link] : "?";
}

symcoll_status_t topo_select_cfg_from_config(const config_t *config, topo_select_cfg_t *cfg_p)
{
    topo_select_cfg_t cfg;

    memset(&cfg, 0, sizeof(cfg));
    if (topo_algo_parse(config->algo, &cfg.forced)) {
        log_error("invalid value '%s' for SYMCOLL_ALGO (expected auto, oneshot, twoshot, "
                  "ring, rd, hier or rhd)",
                  config->algo);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    cfg.host_oneshot_max = config->host_oneshot_max;
    cfg.cuda_oneshot_max = config->cuda_oneshot_max;
    cfg.cuda_pcie_oneshot_max = config->cuda_pcie_oneshot_max;
    cfg.net_rd_max = config->net_rd_max;
    cfg.hier_min = config->hier_min;
    cfg.forced_by = cfg.forced != TOPO_ALGO_AUTO ? TOPO_SOURCE_ENV : TOPO_SOURCE_BUILTIN;
    cfg.canonical = config->reduction_order != CONFIG_ORDER_FASTEST;
    cfg.canonical_wide = config->reduction_order == CONFIG_ORDER_CANONICAL;
    cfg.cuda_net_chunk = config->cuda_net_chunk;
    cfg.cuda_net_channels = (int)config->cuda_net_channels;
    cfg.cuda_net_path = config->cuda_net_path == CONFIG_CUDA_NET_PATH_DIRECT ? TOPO_PATH_DIRECT
                        : config->cuda_net_path == CONFIG_CUDA_NET_PATH_STAGED
                            ? TOPO_PATH_STAGED
                            : TOPO_PATH_AUTO;
    cfg.cuda_coll = config->cuda_coll;
    cfg.host_rs_native = true;
    cfg.cuda_net_direct_min = config->cuda_net_direct_min;
    *cfg_p = cfg;
    return SYMCOLL_OK;
}

void topo_fmt_size(size_t v, char *buf, size_t len)
{
    static const char units[] = "BKMGT";
    double x = (double)v;
    int u = 0;

    while (x >= 1024.0 && u < 4) {
        x /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zuB", v);
    else if (x == (double)(size_t)x)
        snprintf(buf, len, "%zu%c", (size_t)x, units[u]);
    else
        snprintf(buf, len, "%.1f%c", x, units[u]);
}

static void set_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (!why || !len)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* CUDA memory inside a node is reached through peer mappings of the pool. */
static bool gpu_peers_mappable(symcoll_mem_type_t mem, const topo_shape_t *s)
{
    return mem != SYMCOLL_MEM_CUDA || s->ppn <= 1 || s->gpu_link != TOPO_LINK_NONE;
}

/* What the build lacks for CUDA memory on this shape, or NULL. */
static const char *cuda_missing(topo_algo_t algo, symcoll_mem_type_t mem, const topo_shape_t *s,
                                char *buf, size_t len)
{
    if (mem != SYMCOLL_MEM_CUDA)
        return NULL;
    if (s->cuda_max_local <= 0)
        return "this build of symcoll has no CUDA support (configure --with-cuda)";
    if (!s->gpus)
        return "CUDA memory needs a CUDA device on every rank, and some rank has none";
    if (s->nranks == 1)
        return NULL;
    if (s->nnodes > 1 && !s->cuda_across_nodes)
        return "CUDA memory across nodes is not implemented in this build";
    if ((algo == TOPO_ALGO_ONESHOT || algo == TOPO_ALGO_TWOSHOT) &&
        s->ppn > s->cuda_max_local) {
        snprintf(buf, len, "the CUDA kernels serve at most %d ranks per node and a node has %d",
                 s->cuda_max_local, s->ppn);
        return buf;
    }
    return NULL;
}

bool topo_algo_applicable(topo_algo_t algo, symcoll_mem_type_t mem, const topo_shape_t *s,
                          char *why, size_t why_len)
{
    char buf[TOPO_REASON_MAX];
    const char *missing =
        algo == TOPO_ALGO_AUTO ? NULL : cuda_missing(algo, mem, s, buf, sizeof(buf));

    if (missing) {
        set_why(why, why_len, "%s", missing);
        return false;
    }
    switch (algo) {
    case TOPO_ALGO_AUTO:
        return true;
    case TOPO_ALGO_ONESHOT:
    case TOPO_ALGO_TWOSHOT:
        if (s->nnodes != 1) {
            set_why(why, why_len, "%s works inside one node and the ranks span %d nodes",
                    topo_algo_name(algo), s->nnodes);
            return false;
        }
        if (!gpu_peers_mappable(mem, s)) {
            set_why(why, why_len,
                    "%s on CUDA memory needs peer access (P2P) between the "
                    "node's GPUs, and some pair has none",
                    topo_algo_name(algo));
            return false;
        }
        return true;
    case TOPO_ALGO_RING:
    case TOPO_ALGO_RD:
    case TOPO_ALGO_RHD:
        if (s->nnodes < 2) {
            set_why(why, why_len,
                    "%s runs across nodes and all %d rank(s) are on one node "
                    "(use oneshot or twoshot)",
                    topo_algo_name(algo), s->nranks);
            return false;
        }
        return true;
    case TOPO_ALGO_HIER:
        if (s->nnodes < 2) {
            set_why(why, why_len,
                    "hier needs several nodes and all %d rank(s) are on one "
                    "node (use oneshot or twoshot)",
                    s->nranks);
            return false;
        }
        if (!s->uniform) {
            set_why(why, why_len, "hier needs the same number of ranks on every node");
            return false;
        }
        if (!gpu_peers_mappable(mem, s)) {
            set_why(why, why_len,
                    "hier on CUDA memory needs peer access (P2P) between the "
                    "GPUs of each node, and some pair has none");
            return false;
        }
        return true;
    default:
        set_why(why, why_len, "not an algorithm");
        return false;
    }
}

symcoll_status_t topo_algo_check(topo_algo_t algo, const topo_shape_t *shape, bool gpus,
                                 const char *what)
{
    char why[TOPO_REASON_MAX];

    topo_shape_t cuda_shape = *shape;

    if (algo == TOPO_ALGO_AUTO)
        return SYMCOLL_OK;
    /* what the build lacks for CUDA shows at the call; here only the topology counts */
    cuda_shape.cuda_max_local = shape->ppn;
    cuda_shape.cuda_across_nodes = true;
    if (!topo_algo_applicable(algo, SYMCOLL_MEM_HOST, shape, why, sizeof(why)) ||
        (gpus &&
         !topo_algo_applicable(algo, SYMCOLL_MEM_CUDA, &cuda_shape, why, sizeof(why)))) {
        log_error("%s%s cannot run on this communicator (%d ranks on %d node(s)): %s", what,
                  topo_algo_name(algo), shape->nranks, shape->nnodes, why);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

symcoll_status_t topo_select_check(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                                   bool gpus)
{
    return topo_algo_check(cfg->forced, shape, gpus, "SYMCOLL_ALGO=");
}

const char *topo_source_name(topo_source_t source)
{
    static const char *const names[TOPO_SOURCE_LAST] = {
        [TOPO_SOURCE_BUILTIN] = "built-in",
        [TOPO_SOURCE_TUNED] = "tuned",
        [TOPO_SOURCE_ENV] = "forced",
        [TOPO_SOURCE_CALL] = "call",
    };
    return (unsigned)source < TOPO_SOURCE_LAST ? names[source] : "?";
}

/* Who forced cfg->forced, in words: "SYMCOLL_ALGO=rd", "symcoll_comm_set_algo(rd)", or
 * the tuning file's measurement. */
static void forced_by(const topo_select_cfg_t *cfg, char *buf, size_t len)
{
    const topo_tune_entry_t *e = cfg->tune_entry;

    if (cfg->forced_by == TOPO_SOURCE_CALL)
        snprintf(buf, len, "symcoll_comm_set_algo(%s)", topo_algo_name(cfg->forced));
    else if (cfg->forced_by == TOPO_SOURCE_TUNED && e && e->next_algo != TOPO_ALGO_NONE)
        snprintf(buf, len, "the tuning file (%s %.1f us, %s %.1f us)",
                 topo_algo_name(cfg->forced), e->us, topo_algo_name(e->next_algo), e->next_us);
    else if (cfg->forced_by == TOPO_SOURCE_TUNED)
        snprintf(buf, len, "the tuning file (%s %.1f us)", topo_algo_name(cfg->forced),
                 e ? e->us : 0.0);
    else
        snprintf(buf, len, "SYMCOLL_ALGO=%s", topo_algo_name(cfg->forced));
}

void topo_decide(topo_decision_t *d, topo_algo_t algo, const char *fmt, ...)
{
    va_list ap;

    d->algo = algo;
    if (d->quiet)
        return;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
    va_end(ap);
}

size_t topo_oneshot_scaled(size_t max2, int n, symcoll_mem_type_t mem)
{
    if (n <= 2)
        return max2;
    if (mem == SYMCOLL_MEM_HOST)
        return (size_t)((double)max2 / ((double)(n - 1) * (n - 1)));
    return (size_t)((double)max2 * n / (2.0 * (n - 1) * (n - 1)));
}

size_t topo_rd_max(const topo_select_cfg_t *cfg, int n)
{
    if (n == 2)
        return cfg->net_rd_max > SIZE_MAX / 16 ? SIZE_MAX : 16 * cfg->net_rd_max;
    return cfg->net_rd_max;
}

topo_algo_t topo_net_flat_algo(const topo_select_cfg_t *cfg, int n, size_t bytes)
{
    if (bytes <= topo_rd_max(cfg, n))
        return TOPO_ALGO_RD;
    return cfg->canonical && n > 2 ? TOPO_ALGO_RHD : TOPO_ALGO_RING;
}

/* The one-shot threshold of this shape: which variable, its value, and the value used. */
static const char *oneshot_threshold(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                                     symcoll_mem_type_t mem, size_t *max2_p, size_t *max_p)
{
    const char *var;

    if (mem == SYMCOLL_MEM_HOST) {
        *max2_p = cfg->host_oneshot_max;
        var = "SYMCOLL_HOST_ONESHOT_MAX";
    } else if (s->gpu_link == TOPO_LINK_PCIE) {
        *max2_p = cfg->cuda_pcie_oneshot_max;
        var = "SYMCOLL_CUDA_PCIE_ONESHOT_MAX";
    } else {
        *max2_p = cfg->cuda_oneshot_max;
        var = "SYMCOLL_CUDA_ONESHOT_MAX";
    }
    *max_p = topo_oneshot_scaled(*max2_p, s->nranks, mem);
    /* Host ranks outnumbering the CPUs: each barrier is a context switch, and two-shot has
     * twice one-shot's barriers, so one-shot pays further: measured on 2 cores, 4 ranks
     * cross over at 8-16 KiB, not at 32K/(n-1)^2 = 3.6 KiB. */
    if (mem == SYMCOLL_MEM_HOST && s->oversubscribed && s->nranks > 2)
        *max_p = (size_t)((double)*max2_p / (double)(s->nranks - 1));
    return var;
}

size_t topo_oneshot_max(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                        symcoll_mem_type_t mem)
{
    size_t max2, max;

    if (cfg->forced == TOPO_ALGO_ONESHOT)
        return SIZE_MAX;
    if (cfg->forced != TOPO_ALGO_AUTO || shape->nnodes > 1)
        return 0;
    oneshot_threshold(cfg, shape, mem, &max2, &max);
    return max;
}

static void select_intra(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                         symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d)
{
    char sz[32], th[32], th2[32], scaled[160] = "";
    const char *var, *where;
    size_t max2, max;

    if (s->nranks == 1) {
        topo_decide(d, TOPO_ALGO_ONESHOT, "single rank: the result is the input");
        return;
    }
    if (mem == SYMCOLL_MEM_CUDA && s->gpu_link == TOPO_LINK_NONE) {
        topo_decide(d, TOPO_ALGO_NONE,
                    "CUDA memory: some GPUs of the node cannot access each "
                    "other (no P2P), so the pool cannot be mapped by every peer");
        return;
    }
    where = mem == SYMCOLL_MEM_HOST         ? "host shared memory"
            : s->gpu_link == TOPO_LINK_PCIE ? "GPUs over PCIe"
            : s->gpu_link == TOPO_LINK_SAME ? "ranks sharing GPUs"
                                            : "GPUs over NVLink";
    var = oneshot_threshold(cfg, s, mem, &max2, &max);
    if (d->quiet) {
        d->algo = bytes <= max ? TOPO_ALGO_ONESHOT : TOPO_ALGO_TWOSHOT;
        return;
    }
    topo_fmt_size(bytes, sz, sizeof(sz));
    topo_fmt_size(max, th, sizeof(th));
    topo_fmt_size(max2, th2, sizeof(th2));
    if (s->nranks > 2)
        snprintf(scaled, sizeof(scaled), " (%s=%s for 2 ranks, scaled by %s)", var, th2,
                 mem != SYMCOLL_MEM_HOST ? "n/(2(n-1)^2)"
                 : s->oversubscribed     ? "1/(n-1): more ranks than CPUs"
                                         : "1/(n-1)^2");
    else
        snprintf(scaled, sizeof(scaled), " (%s)", var);
    if (bytes <= max)
        topo_decide(d, TOPO_ALGO_ONESHOT,
                    "1 node, %d ranks, %s: %s <= %s%s: one barrier, "
                    "latency-bound",
                    s->nranks, where, sz, th, scaled);
    else
        topo_decide(d, TOPO_ALGO_TWOSHOT,
                    "1 node, %d ranks, %s: %s > %s%s: two-shot moves "
                    "2(n-1)/n of the data instead of n-1",
                    s->nranks, where, sz, th, scaled);
}

static void select_inter(const topo_select_cfg_t *cfg, const topo_shape_t *s,
                         symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d)
{
    char sz[32], th[32];
    size_t rd_max = topo_rd_max(cfg, s->nranks);
    const char *flat = s->ppn > 1 ? " (not hierarchical)" : "";

    /* two ranks: every algorithm computes x0 + x1 once, the canonical tree */
    bool canonical = cfg->canonical && mem == SYMCOLL_MEM_HOST && s->nranks > 2;

    if (s->ppn > 1 && bytes >= cfg->hier_min &&
        topo_algo_applicable(TOPO_ALGO_HIER, mem, s, NULL, 0) &&
        (!canonical || s->hier_canonical)) {
        if (d->quiet) {
            d->algo = TOPO_ALGO_HIER;
            return;
        }
        topo_fmt_size(bytes, sz, sizeof(sz));
        topo_fmt_size(cfg->hier_min, th, sizeof(th));
        topo_decide(
            d, TOPO_ALGO_HIER,
            "%d nodes x %d ranks%s%s%s%s: each rank sends 1/%d of the "
            "data across nodes%s",
            s->nnodes, s->ppn, cfg->hier_min ? ": " : "", cfg->hier_min ? sz : "",
            cfg->hier_min ? " >= SYMCOLL_HIER_MIN=" : "", cfg->hier_min ? th : "", s->ppn,
            canonical ? "; its order is the canonical one on this layout (slices: rd)" : "");
        return;
    }
    if (canonical) {
        topo_fmt_size(bytes, sz, sizeof(sz));
        topo_fmt_size(rd_max, th, sizeof(th));
        topo_decide(
            d, bytes <= rd_max ? TOPO_ALGO_RD : TOPO_ALGO_RHD,
            "%d nodes, %d ranks: %s %s %s (SYMCOLL_NET_RD_MAX): %s, in the canonical order "
            "(SYMCOLL_REDUCTION_ORDER: the ring's order changes with the size%s)",
            s->nnodes, s->nranks, sz, bytes <= rd_max ? "<=" : ">", th,
            bytes <= rd_max ? "recursive doubling" : "recursive halving and doubling",
            s->ppn > 1 && s->uniform ? ", hier's node by node is not the canonical one here"
                                     : "");
        return;
    }
    if (d->quiet) {
        d->algo = bytes <= rd_max ? TOPO_ALGO_RD : TOPO_ALGO_RING;
        return;
    }
    topo_fmt_size(bytes, sz, sizeof(sz));
    topo_fmt_size(rd_max, th, sizeof(th));
    if (bytes <= rd_max)
        topo_decide(d, TOPO_ALGO_RD,
                    "%d nodes, %d ranks%s: %s <= %s (%s%s): log2(n) "
                    "latency-bound steps",
                    s->nnodes, s->nranks, flat, sz, th, s->nranks == 2 ? "16 x " : "",
                    "SYMCOLL_NET_RD_MAX");
    else
        topo_decide(d, TOPO_ALGO_RING,
                    "%d nodes, %d ranks%s: %s > %s (%s%s): the pipelined ring "
                    "is bandwidth-optimal",
                    s->nnodes, s->nranks, flat, sz, th, s->nranks == 2 ? "16 x " : "",
                    "SYMCOLL_NET_RD_MAX");
}

void topo_select_impl(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                      symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d)
{
    char why[TOPO_REASON_MAX];
    char *w = d->quiet ? NULL : why;
    size_t wlen = d->quiet ? 0 : sizeof(why);

    d->cuda_hier = d->direct = false;
    if (mem == SYMCOLL_MEM_CUDA && shape->nnodes > 1 && shape->cuda_across_nodes &&
        shape->cuda_max_local > 0 && shape->gpus) {
        topo_select_cuda_net(cfg, shape, bytes, d);
        return;
    }
    if (cfg->forced != TOPO_ALGO_AUTO) {
        char by[160];
        forced_by(cfg, by, sizeof(by));
        if (cfg->canonical && mem == SYMCOLL_MEM_HOST && shape->nnodes > 1 &&
            shape->nranks > 2 &&
            (cfg->forced == TOPO_ALGO_RING ||
             (cfg->forced == TOPO_ALGO_HIER && !shape->hier_canonical)) &&
            topo_algo_applicable(cfg->forced, mem, shape, NULL, 0))
            topo_decide(
                d, bytes <= topo_rd_max(cfg, shape->nranks) ? TOPO_ALGO_RD : TOPO_ALGO_RHD,
                "%s, whose order is not the canonical one%s "
                "(SYMCOLL_REDUCTION_ORDER): %s instead",
                by, cfg->forced == TOPO_ALGO_HIER ? " on this layout" : "",
                bytes <= topo_rd_max(cfg, shape->nranks) ? "recursive doubling"
                                                         : "recursive halving and doubling");
        else if (topo_algo_applicable(cfg->forced, mem, shape, w, wlen))
            topo_decide(d, cfg->forced, "forced by %s", by);
        else
            topo_decide(d, TOPO_ALGO_NONE, "%s: %s", by, why);
        return;
    }
    if (mem == SYMCOLL_MEM_CUDA && (shape->cuda_max_local <= 0 || !shape->gpus)) {
        topo_decide(d, TOPO_ALGO_NONE, "%s", cuda_missing(TOPO_ALGO_AUTO, mem, shape, NULL, 0));
        return;
    }
    if (shape->nnodes <= 1)
        select_intra(cfg, shape, mem, bytes, d);
    else
        select_inter(cfg, shape, mem, bytes, d);
    if (d->algo != TOPO_ALGO_NONE && !topo_algo_applicable(d->algo, mem, shape, w, wlen))
        topo_decide(d, TOPO_ALGO_NONE, "%s would serve this, but %s", topo_algo_name(d->algo),
                    why);
}

void topo_select(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                 symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d)
{
    d->quiet = false;
    topo_select_impl(cfg, shape, mem, bytes, d);
}

topo_algo_t topo_select_algo(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                             symcoll_mem_type_t mem, size_t bytes)
{
    topo_decision_t d;

    d.quiet = true;
    topo_select_impl(cfg, shape, mem, bytes, &d);
    return d.algo;
}

const char *topo_family_name(topo_family_t family)
{
    static const char *const names[TOPO_FAMILY_LAST] = {
        [TOPO_FAMILY_NONE] = "none",
        [TOPO_FAMILY_SELF] = "self",
        [TOPO_FAMILY_HOST] = "host",
        [TOPO_FAMILY_CUDA] = "cuda",
        [TOPO_FAMILY_NET_HOST] = "net-host",
        [TOPO_FAMILY_NET_CUDA] = "net-cuda",
        [TOPO_FAMILY_NET_CUDA_HIER] = "net-cuda-hier",
        [TOPO_FAMILY_NET_CUDA_DIRECT] = "net-cuda-direct",
        [TOPO_FAMILY_NET_CUDA_HIER_DIRECT] = "net-cuda-hier-direct",
    };
    return (unsigned)family < TOPO_FAMILY_LAST ? names[family] : "?";
}

void topo_select_plan(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                      symcoll_mem_type_t mem, size_t bytes, topo_plan_t *plan,
                      topo_decision_t *d)
{
    topo_decision_t quiet;

    plan->mem = mem;
    plan->forced = cfg->forced;
    if (shape->nranks == 1) {
        /* sum, prod, min, max and avg of one value are the value */
        plan->family = TOPO_FAMILY_SELF;
        plan->algo = TOPO_ALGO_NONE;
        if (d) {
            d->quiet = false;
            topo_decide(d, TOPO_ALGO_NONE, "1 rank: the result is the input");
        }
        return;
    }
    if (!d) {
        quiet.quiet = true;
        d = &quiet;
    } else {
        d->quiet = false;
    }
    topo_select_impl(cfg, shape, mem, bytes, d);
    plan->algo = d->algo;
    if (d->algo == TOPO_ALGO_NONE)
        plan->family = TOPO_FAMILY_NONE;
    else if (shape->nnodes <= 1)
        plan->family = mem == SYMCOLL_MEM_CUDA ? TOPO_FAMILY_CUDA : TOPO_FAMILY_HOST;
    else if (mem == SYMCOLL_MEM_HOST)
        plan->family = TOPO_FAMILY_NET_HOST;
    else
        plan->family = d->cuda_hier ? (d->direct ? TOPO_FAMILY_NET_CUDA_HIER_DIRECT
                                                 : TOPO_FAMILY_NET_CUDA_HIER)
                       : d->algo == TOPO_ALGO_ONESHOT ? TOPO_FAMILY_NET_CUDA_DIRECT
                                                      : TOPO_FAMILY_NET_CUDA;
}
