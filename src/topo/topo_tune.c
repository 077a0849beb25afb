/* The communicator's tuning file (SYMCOLL_TUNE_FILE): read at creation, agreed by every
 * rank in topo_probe_node's vote, matched against the communicator's fingerprint, and
 * the algorithm forced for the next calls (symcoll_comm_set_algo). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "topo/topo.h"
#include "topo/tune.h"

void topo_tune_open(topo_t *t, const config_t *config)
{
    char err[512];
    symcoll_status_t status;

    /* voted on by every rank, with a file or without */
    t->tune_mismatch = config->tune_mismatch;
    if (!config->tune_file[0])
        return;
    status = topo_tune_load(config->tune_file, &t->tune, err, sizeof(err));
    if (status == SYMCOLL_ERR_NO_MEMORY) {
        snprintf(err, sizeof(err), "tuning file %s: out of memory reading it",
                 config->tune_file);
    }
    if (status != SYMCOLL_OK) {
        /* told to every rank by the creation's vote: all fail alike */
        log_error("%s", err);
        t->tune_bad = true;
    }
}

void topo_tune_inherit(topo_t *t, const topo_t *parent, const config_t *config)
{
    /* the parent's file, as read at its creation, unless the part names another: a file
     * removed or rewritten since must not fail a split or a shrink */
    if (parent->tune && !strcmp(parent->tune->path, config->tune_file)) {
        t->tune_mismatch = config->tune_mismatch;
        t->tune = topo_tune_dup(parent->tune);
        t->tune_bad = t->tune == NULL;
        if (t->tune_bad)
            log_error("tuning file %s: out of memory copying it", parent->tune->path);
        return;
    }
    topo_tune_open(t, config);
}

/* the file's hash as a vote value: positive, so that its negation is too; 0 is none */
static int64_t tune_vote_hash(const topo_t *t)
{
    int64_t h;

    if (!t->tune)
        return 0;
    h = (int64_t)(t->tune->hash & (UINT64_MAX >> 2));
    return h ? h : 1;
}

void topo_tune_vote_fill(const topo_t *t, int rank, int64_t *v)
{
    v[0] = tune_vote_hash(t);
    v[1] = -v[0];
    v[2] = t->tune_bad ? rank : INT64_MAX;
    v[3] = t->tune_mismatch;
    v[4] = -v[3];
}

/* Names the ranks whose file differs from rank 0's (error path: every rank is here). */
static symcoll_status_t tune_name_ranks(comm_t *comm, const topo_t *t)
{
    int64_t mine = tune_vote_hash(t), *all = calloc((size_t)comm->nranks, sizeof(*all));
    char list[512];
    size_t len = 0;
    int64_t first;
    int shown = 0, differ = 0;
    symcoll_status_t status;

    if (!all)
        return SYMCOLL_ERR_NO_MEMORY;
    status = bootstrap_allgather(comm->bootstrap, &mine, all, sizeof(mine));
    first = all[0]; /* named below, after all is freed */
    list[0] = 0;
    for (int r = 1; status == SYMCOLL_OK && r < comm->nranks; r++) {
        if (all[r] == all[0])
            continue;
        differ++;
        if (shown < 16 && len < sizeof(list)) {
            int n = snprintf(list + len, sizeof(list) - len, "%s%d (%s)", shown ? ", " : "", r,
                             all[r] ? "other contents" : "no file");
            if (n > 0)
                len += (size_t)n;
            shown++;
        }
    }
    free(all);
    if (status != SYMCOLL_OK)
        return status;
    log_error("the ranks' tuning files differ (SYMCOLL_TUNE_FILE; rank 0's: %s): %d rank(s) "
              "differ from it: %s%s; give every rank the same file, or set "
              "SYMCOLL_TUNE_MISMATCH=ignore to ignore it everywhere",
              mine == first && t->tune ? t->tune->path : (first ? "a file" : "none"), differ,
              list, differ > shown ? ", ..." : "");
    return SYMCOLL_ERR_INVALID_PARAM;
}

symcoll_status_t topo_tune_vote_check(comm_t *comm, topo_t *t, const int64_t *v)
{
    if (v[2] != INT64_MAX) {
        if (!t->tune_bad)
            log_error("rank %" PRId64 "'s tuning file (SYMCOLL_TUNE_FILE) is unreadable or "
                      "damaged (that rank says why): no rank creates the communicator",
                      v[2]);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (v[3] != -v[4]) {
        log_error("the ranks disagree on SYMCOLL_TUNE_MISMATCH (this rank: %s)",
                  t->tune_mismatch == CONFIG_TUNE_MISMATCH_IGNORE ? "ignore" : "fail");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (v[0] == -v[1])
        return SYMCOLL_OK;
    if (t->tune_mismatch != CONFIG_TUNE_MISMATCH_IGNORE)
        return tune_name_ranks(comm, t);
    if (comm->rank == 0)
        log_warn("the ranks' tuning files differ (SYMCOLL_TUNE_FILE); every rank ignores its "
                 "file (SYMCOLL_TUNE_MISMATCH=ignore): the built-in rules decide");
    topo_tune_free(t->tune);
    t->tune = NULL;
    return SYMCOLL_OK;
}

/* a token of the fingerprint: no spaces */
static void fp_token(const char *s, char *out, size_t len)
{
    size_t i = 0;

    for (; *s && i + 1 < len; s++)
        out[i++] = *s == ' ' || *s == '\t' ? '-' : *s;
    out[i] = 0;
}

void topo_fingerprint(const topo_t *t, char *buf, size_t len)
{
    const topo_shape_t *c = &t->shape[SYMCOLL_MEM_CUDA];
    const topo_select_cfg_t *cfg = &t->select_cfg;
    char ppn[96], gpu[48], net[TOPO_TLS_MAX + 8];

    if (c->uniform) {
        snprintf(ppn, sizeof(ppn), "%d", c->ppn);
    } else {
        /* uneven nodes: their sizes in node order, or a hash of them when long */
        size_t l = 0;
        uint64_t h = TOPO_TUNE_FNV_INIT;
        for (int k = 0; k < t->nnodes; k++) {
            int n = snprintf(ppn + l, sizeof(ppn) - l, "%s%d", k ? "," : "", t->node_size[k]);
            h = topo_tune_fnv(h, &t->node_size[k], sizeof(t->node_size[k]));
            l = n > 0 && (size_t)n < sizeof(ppn) - l ? l + (size_t)n : sizeof(ppn);
        }
        if (l >= sizeof(ppn) - 1)
            snprintf(ppn, sizeof(ppn), "uneven-%016" PRIx64, h);
    }
    if (!c->gpus) {
        snprintf(gpu, sizeof(gpu), "none");
    } else {
        char link[24];
        fp_token(topo_link_name(c->gpu_link), link, sizeof(link));
        snprintf(gpu, sizeof(gpu), "%s%s", link, c->gpus_shared ? ",shared" : "");
    }
    if (t->nnodes <= 1) {
        snprintf(net, sizeof(net), "none");
    } else {
        /* the transports without their devices ("tcp/eth0,self/memory": tcp,self), so
         * that a layout means the same on every machine of a cluster */
        const char *p = t->info[0].net_tls[0] ? t->info[0].net_tls : "unknown";
        size_t l = 0;
        bool skip = false;
        for (; *p && l + 1 < sizeof(net); p++) {
            if (*p == ',')
                skip = false;
            else if (*p == '/')
                skip = true;
            if (!skip)
                net[l++] = *p == ' ' ? '-' : *p;
        }
        net[l] = 0;
    }
    snprintf(buf, len, "nodes=%d ppn=%s gpu=%s net=%s order=%s lib=%s", t->nnodes, ppn, gpu,
             net,
             cfg->canonical_wide ? "canonical"
             : cfg->canonical    ? "auto"
                                 : "fastest",
             PACKAGE_VERSION);
}

void topo_tune_match(topo_t *t)
{
    char fp[TOPO_TUNE_FP_MAX];

    t->select_cfg.tuned = NULL;
    if (!t->tune)
        return;
    topo_fingerprint(t, fp, sizeof(fp));
    t->select_cfg.tuned = topo_tune_find_layout(t->tune, fp);
}

void topo_tune_tell(topo_t *t)
{
    char fp[TOPO_TUNE_FP_MAX];

    if (!t->tune || t->tune_told)
        return;
    t->tune_told = true;
    topo_fingerprint(t, fp, sizeof(fp));
    if (t->select_cfg.tuned)
        log_info("tuning file %s: its layout \"%s\" chooses the algorithms it measured",
                 t->tune->path, fp);
    else
        log_warn("tuning file %s has no layout \"%s\" (this communicator's; it holds %zu "
                 "other(s)): the built-in rules decide",
                 t->tune->path, fp, t->tune->nlayouts);
}

symcoll_status_t topo_set_call_algo(topo_t *t, const char *name)
{
    topo_algo_t algo = TOPO_ALGO_AUTO;
    const topo_shape_t *c = &t->shape[SYMCOLL_MEM_CUDA];

    if (name && topo_algo_parse(name, &algo)) {
        log_error("symcoll_comm_set_algo: unknown algorithm '%s' (auto, oneshot, twoshot, "
                  "ring, rd, hier or rhd)",
                  name);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (topo_algo_check(algo, c, c->gpus, "symcoll_comm_set_algo: ") != SYMCOLL_OK)
        return SYMCOLL_ERR_INVALID_PARAM;
    if (t->select_cfg.call_forced != algo) {
        t->select_cfg.call_forced = algo;
        topo_memo_clear(t);
    }
    return SYMCOLL_OK;
}
