/* Topology probe: every rank contributes its host identity, pid and start time; from
 * the allgather every rank derives the node map (nodes in order of first rank). */
#include "topo/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"

uint64_t topo_proc_start_time(int pid)
{
    char path[64], buf[1024];
    FILE *f;
    size_t n;
    char *p;
    unsigned long long st = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* the command name may hold spaces and parentheses: fields follow the last ')' */
    p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    /* field 22 is starttime; after ')' comes field 3 */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    if (!p || sscanf(p, " %llu", &st) != 1)
        return 0;
    return st;
}

int topo_proc_alive(int pid, uint64_t start_time)
{
    uint64_t now = topo_proc_start_time(pid);
    if (now == 0)
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

symcoll_status_t topo_probe(comm_t *comm, topo_t **topo_p)
{
    int n = comm->nranks;
    topo_rank_info_t me;
    topo_t *t;
    symcoll_status_t status;

    memset(&me, 0, sizeof(me));
    topo_host_identity(comm, me.host_id, sizeof(me.host_id));
    me.pid = (int32_t)getpid();
    me.start_time = topo_proc_start_time((int)getpid());
    me.cuda_device = comm->cuda_device;
    me.numa_node = -1;

    t = calloc(1, sizeof(*t));
    if (!t)
        return SYMCOLL_ERR_NO_MEMORY;
    t->nranks = n;
    t->info = calloc((size_t)n, sizeof(*t->info));
    t->local_ranks = calloc((size_t)n, sizeof(int));
    t->rank_node = calloc((size_t)n, sizeof(int));
    t->rank_local_rank = calloc((size_t)n, sizeof(int));
    t->node_leader = calloc((size_t)n, sizeof(int));
    t->node_size = calloc((size_t)n, sizeof(int));
    if (!t->info || !t->local_ranks || !t->rank_node || !t->rank_local_rank ||
        !t->node_leader || !t->node_size) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err;
    }

    status = bootstrap_allgather(comm->bootstrap, &me, t->info, sizeof(me));
    if (status != SYMCOLL_OK)
        goto err;

    for (int r = 0; r < n; r++) {
        int node = -1;
        t->info[r].host_id[TOPO_HOST_ID_MAX - 1] = 0;
        for (int k = 0; k < t->nnodes; k++) {
            if (!strcmp(t->info[t->node_leader[k]].host_id, t->info[r].host_id)) {
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
    t->node = t->rank_node[comm->rank];
    t->local_rank = t->rank_local_rank[comm->rank];
    for (int r = 0; r < n; r++)
        if (t->rank_node[r] == t->node)
            t->local_ranks[t->local_size++] = r;

    log_debug("topology: %d ranks on %d nodes; node %d, local rank %d of %d", n, t->nnodes,
              t->node, t->local_rank, t->local_size);
    *topo_p = t;
    return SYMCOLL_OK;

err:
    topo_destroy(t);
    return status;
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
    free(t);
}
