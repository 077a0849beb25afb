/* The path the library takes for reduce-scatter, all-gather, broadcast and barrier, for a
 * row of its all-reduce decision table (symcoll_comm_print_decisions): the rule of
 * src/algo/coll.c (algo_collective), restated for symcoll_info -a and symcoll_perf's
 * algo column. The library reports the all-reduce's decisions only; this follows it:
 *   - host family (host memory inside a node): the native host algorithms;
 *   - net-host (host memory across nodes): a broadcast of at most NET_BC_EAGER_MAX bytes
 *     among at most NET_BC_MAX_RANKS ranks is eager; two ranks where the all-reduce runs
 *     recursive doubling: a reduce-scatter or all-gather is one exchange, and so is a
 *     broadcast above NET_RD_MAX; where the all-reduce runs the ring, native rings
 *     and chains; hierarchical, native above recursive doubling's sizes;
 *   - CUDA memory inside a node with SYMCOLL_CUDA_COLL=auto: the collective's own kernel
 *     where the all-reduce runs one-shot or two-shot;
 *   - everything else (CUDA memory, the barrier): one all-reduce of the plan's size.
 * The numbers come from the report's own lines (coll_facts_parse). */
#ifndef SYMCOLL_TOOLS_COLL_RULE_H
#define SYMCOLL_TOOLS_COLL_RULE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { COLL_RS, COLL_AG, COLL_BC, COLL_BARRIER } coll_kind_t;

typedef struct coll_facts {
    int nranks;              /* of the communicator (the host selector view's line) */
    size_t net_rd_max;       /* NET_RD_MAX of the settings line */
    size_t net_bc_eager_max; /* NET_BC_EAGER_MAX of the settings line */
    int net_bc_max_ranks;    /* NET_BC_MAX_RANKS of the settings line */
} coll_facts_t;

/* Reads the facts from the decision report's '#' lines (0 where a line is missing). */
static inline void coll_facts_parse(const char *text, coll_facts_t *f)
{
    const char *p;

    memset(f, 0, sizeof(*f));
    if ((p = strstr(text, "# selector view, host memory: ")))
        f->nranks = atoi(p + strlen("# selector view, host memory: "));
    if ((p = strstr(text, " NET_RD_MAX=")))
        f->net_rd_max = strtoull(p + strlen(" NET_RD_MAX="), NULL, 10);
    if ((p = strstr(text, " NET_BC_EAGER_MAX=")))
        f->net_bc_eager_max = strtoull(p + strlen(" NET_BC_EAGER_MAX="), NULL, 10);
    if ((p = strstr(text, " NET_BC_MAX_RANKS=")))
        f->net_bc_max_ranks = atoi(p + strlen(" NET_BC_MAX_RANKS="));
}

/* The path of collective k of bytes (the plan's size: the larger buffer) whose all-reduce
 * of that size runs algo in family; long (symcoll_info) or short (symcoll_perf) names. */
static inline void coll_rule_path(const coll_facts_t *f, coll_kind_t k, const char *family,
                                  const char *algo, size_t bytes, int brief, char *out,
                                  size_t len)
{
    const int net = !strcmp(family, "net-host"), pair = f->nranks == 2 && !strcmp(algo, "rd");
    const char *cc = getenv("SYMCOLL_CUDA_COLL");

    if (!strcmp(family, "none"))
        snprintf(out, len, brief ? "none" : "none (as the all-reduce)");
    else if (!strcmp(family, "host"))
        snprintf(out, len, brief ? "native" : "native host");
    else if (net && k == COLL_BC && bytes <= f->net_bc_eager_max &&
             f->nranks <= f->net_bc_max_ranks)
        snprintf(out, len, brief ? "ucx:eager" : "eager over UCX (the root does not wait)");
    else if (net && pair &&
             (k == COLL_RS || k == COLL_AG || (k == COLL_BC && bytes > f->net_rd_max)))
        snprintf(out, len, brief ? "ucx:exchange" : "one exchange over UCX (2 ranks)");
    else if (net && k != COLL_BARRIER && !strcmp(algo, "ring"))
        snprintf(out, len, brief ? "ucx:ring" : "native over UCX (ring, chain)");
    else if (net && k != COLL_BARRIER && !strcmp(algo, "hier"))
        snprintf(out, len,
                 brief ? "ucx:hier" : "native over UCX above rd's sizes, else via all-reduce: hier");
    else if (k != COLL_BARRIER && !strcmp(family, "cuda") && cc && !strcasecmp(cc, "auto") &&
             (!strcmp(algo, "oneshot") || !strcmp(algo, "twoshot")))
        snprintf(out, len, brief ? "native:%s" : "native CUDA kernel: %s (SYMCOLL_CUDA_COLL=auto)",
                 algo);
    else if (brief)
        snprintf(out, len, "ar:%s", algo);
    else
        snprintf(out, len, "via all-reduce: %s (%s)", algo, family);
}

#endif
