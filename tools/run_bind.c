/* symcoll_run's CPU topology (from sysfs) and each rank's binding to a core or a NUMA
 * domain. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* ---- CPU topology and binding ---------------------------------------------- */

cpu_topo_t topo;

cpu_set_t *cpus_new(void)
{
    cpu_set_t *s = CPU_ALLOC(topo.maxcpus);
    if (s)
        CPU_ZERO_S(topo.setsize, s);
    return s;
}

static bool cpus_empty(const cpu_set_t *s)
{
    return CPU_COUNT_S(topo.setsize, s) == 0;
}

static int cpus_first(const cpu_set_t *s)
{
    for (int c = 0; c < topo.maxcpus; c++)
        if (CPU_ISSET_S(c, topo.setsize, s))
            return c;
    return -1;
}

/* "0-3,8,10-11" (sysfs and /proc format) into set; CPUs beyond maxcpus are ignored. */
static void cpus_parse(const char *text, cpu_set_t *set)
{
    const char *p = text;

    while (*p) {
        char *end;
        long lo, hi;

        while (*p == ',' || *p == ' ' || *p == '\n')
            p++;
        if (*p < '0' || *p > '9')
            break;
        lo = strtol(p, &end, 10);
        hi = lo;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            p = end;
        }
        for (long c = lo; c <= hi && c < topo.maxcpus; c++)
            CPU_SET_S((size_t)c, topo.setsize, set);
    }
}

void cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int c = 0; c < topo.maxcpus && off + 24 < len; c++) {
        int hi = c;
        if (!CPU_ISSET_S(c, topo.setsize, set))
            continue;
        while (hi + 1 < topo.maxcpus && CPU_ISSET_S(hi + 1, topo.setsize, set))
            hi++;
        off += (size_t)snprintf(buf + off, len - off, hi > c ? "%s%d-%d" : "%s%d",
                                off ? "," : "", c, hi);
        c = hi;
    }
}

/* Reads a sysfs CPU list into set; -1 if the file cannot be read. */
static int cpus_read(const char *path, cpu_set_t *set)
{
    char buf[4096];
    FILE *f = fopen(path, "re");
    size_t n;

    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    cpus_parse(buf, set);
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int topo_add(cpu_set_t ***list, int *n, cpu_set_t *set)
{
    cpu_set_t **l = realloc(*list, (size_t)(*n + 1) * sizeof(*l));
    if (!l)
        return -1;
    l[(*n)++] = set;
    *list = l;
    return 0;
}

/* NUMA domains: the allowed CPUs of each /sys/devices/system/node/nodeK, in the order of
 * K; allowed CPUs of no node (or no such directory) form one more domain. */
static int topo_load_domains(void)
{
    DIR *d = opendir("/sys/devices/system/node");
    struct dirent *e;
    int *ids = NULL, nids = 0;
    cpu_set_t *rest = cpus_new();

    if (!rest)
        goto err;
    CPU_OR_S(topo.setsize, rest, rest, topo.allowed);
    while (d && (e = readdir(d))) {
        int id, *grown;
        char *end;
        if (strncmp(e->d_name, "node", 4) || e->d_name[4] < '0' || e->d_name[4] > '9')
            continue;
        id = (int)strtol(e->d_name + 4, &end, 10);
        if (*end || !(grown = realloc(ids, (size_t)(nids + 1) * sizeof(*ids))))
            continue;
        ids = grown;
        ids[nids++] = id;
    }
    if (d)
        closedir(d);
    if (nids)
        qsort(ids, (size_t)nids, sizeof(*ids), cmp_int);
    topo.domain_ids = calloc((size_t)nids + 1, sizeof(int));
    if (!topo.domain_ids)
        goto err;
    for (int i = 0; i < nids; i++) {
        char path[128];
        cpu_set_t *s = cpus_new();
        if (!s)
            goto err;
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", ids[i]);
        if (cpus_read(path, s) == 0)
            CPU_AND_S(topo.setsize, s, s, topo.allowed);
        if (cpus_empty(s)) {
            CPU_FREE(s);
            continue;
        }
        CPU_XOR_S(topo.setsize, rest, rest, s);
        topo.domain_ids[topo.ndomains] = ids[i];
        if (topo_add(&topo.domains, &topo.ndomains, s)) {
            CPU_FREE(s);
            goto err;
        }
    }
    if (!cpus_empty(rest)) {
        topo.domain_ids[topo.ndomains] = -1;
        if (topo_add(&topo.domains, &topo.ndomains, rest))
            goto err;
    } else {
        CPU_FREE(rest);
    }
    free(ids);
    return 0;
err:
    free(ids);
    return -1;
}

/* Reads the launcher's affinity and sysfs; -1 if the affinity is unknown (then the ranks
 * are not bound). */
static int topo_load(void)
{
    cpu_set_t *done;
    long conf = sysconf(_SC_NPROCESSORS_CONF);

    topo.maxcpus = conf > 1024 ? (int)conf : 1024;
    for (;;) {
        topo.setsize = CPU_ALLOC_SIZE(topo.maxcpus);
        topo.allowed = cpus_new();
        if (!topo.allowed)
            return -1;
        if (!sched_getaffinity(0, topo.setsize, topo.allowed))
            break;
        CPU_FREE(topo.allowed);
        topo.allowed = NULL;
        if (errno != EINVAL || topo.maxcpus >= (1 << 20))
            return -1;
        topo.maxcpus *= 2; /* the kernel's mask is larger than ours */
    }
    if (cpus_empty(topo.allowed) || !(done = cpus_new()))
        return -1;
    for (int c = 0; c < topo.maxcpus; c++) {
        char path[128];
        cpu_set_t *core;
        if (!CPU_ISSET_S(c, topo.setsize, topo.allowed) || CPU_ISSET_S(c, topo.setsize, done))
            continue;
        if (!(core = cpus_new()))
            return -1;
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        if (cpus_read(path, core) == 0)
            CPU_AND_S(topo.setsize, core, core, topo.allowed);
        CPU_SET_S((size_t)c, topo.setsize, core);
        /* a sibling already taken stays with its earlier core (sysfs should not say so) */
        for (int i = 0; i < topo.maxcpus; i++)
            if (CPU_ISSET_S(i, topo.setsize, done))
                CPU_CLR_S(i, topo.setsize, core);
        CPU_OR_S(topo.setsize, done, done, core);
        if (topo_add(&topo.cores, &topo.ncores, core))
            return -1;
    }
    CPU_FREE(done);
    return topo_load_domains();
}

/* The NUMA domain holding cpu (every allowed CPU is in one). */
static int topo_domain_of(int cpu)
{
    for (int i = 0; i < topo.ndomains; i++)
        if (CPU_ISSET_S(cpu, topo.setsize, topo.domains[i]))
            return i;
    return 0;
}

/* Decides each rank's CPUs (ranks[r].cpus, .bound_to). */
void plan_binding(const run_opts_t *o, rank_proc_t *rk)
{
    bind_mode_t mode = o->bind;
    int n = o->nranks;

    /* loaded for --bind-to none too: -v shows the CPUs the ranks inherit */
    if (topo_load()) {
        if (mode == BIND_CORE || mode == BIND_NUMA)
            fprintf(stderr,
                    "%s: warning: cannot read this process's CPUs: ranks are not bound\n",
                    prog);
        mode = BIND_NONE;
    }
    if (mode == BIND_AUTO)
        mode = n <= topo.ncores ? BIND_CORE : BIND_NUMA;
    if (mode == BIND_CORE && n > topo.ncores)
        fprintf(stderr,
                "%s: warning: %d ranks on %d core(s): --bind-to core puts rank r on core r mod "
                "%d, ranks share cores (the default binds to NUMA domains then)\n",
                prog, n, topo.ncores, topo.ncores);
    for (int r = 0; r < n; r++) {
        if (mode == BIND_CORE) {
            int k = r % topo.ncores;
            rk[r].cpus = topo.cores[k];
            snprintf(rk[r].bound_to, sizeof(rk[r].bound_to), "core %d", k);
        } else if (mode == BIND_NUMA) {
            int k = n <= topo.ncores ? r : (int)((long long)r * topo.ncores / n);
            int dom = topo_domain_of(cpus_first(topo.cores[k]));
            rk[r].cpus = topo.domains[dom];
            if (topo.domain_ids[dom] >= 0)
                snprintf(rk[r].bound_to, sizeof(rk[r].bound_to), "numa %d",
                         topo.domain_ids[dom]);
            else
                snprintf(rk[r].bound_to, sizeof(rk[r].bound_to), "numa ?");
        } else {
            rk[r].cpus = NULL;
            snprintf(rk[r].bound_to, sizeof(rk[r].bound_to), "not bound");
        }
    }
    if (o->verbose) {
        if (mode == BIND_CORE)
            fprintf(stderr, "%s: binding each rank to a core (%d rank(s), %d core(s))\n", prog,
                    n, topo.ncores);
        else if (mode == BIND_NUMA)
            fprintf(stderr,
                    "%s: binding each rank to a NUMA domain's cores (%d rank(s), %d "
                    "core(s), %d domain(s))%s\n",
                    prog, n, topo.ncores, topo.ndomains,
                    o->bind == BIND_AUTO ? ": ranks outnumber cores" : "");
        else
            fprintf(stderr, "%s: ranks are not bound\n", prog);
    }
}
