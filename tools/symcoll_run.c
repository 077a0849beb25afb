/* symcoll_run: starts N local ranks of a program with the built-in bootstrap's variables
 * set, binds each to a core (or a NUMA domain), optionally splits them into simulated nodes
 * and tags their output lines; watches them, and stops them all when one fails, on a
 * timeout or on SIGINT/SIGTERM. Uses no library: the CPU topology comes from sysfs. */
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

#define RUN_MAX_RANKS 4096
#define RUN_DEFAULT_GRACE 3.0
/* Exit statuses of the launcher itself (a failed rank passes its own status through). */
#define RUN_EXIT_USAGE 2
#define RUN_EXIT_TIMEOUT 124
#define RUN_EXIT_EXEC 127
/* --tag-output: a line longer than this is passed on in pieces, each tagged */
#define RUN_LINE_MAX 8192
/* after the job's process group is gone, how long output pipes held open by processes
 * that left the group are still read */
#define RUN_DRAIN_SEC 1.0

typedef enum { BIND_AUTO, BIND_CORE, BIND_NUMA, BIND_NONE } bind_mode_t;

typedef struct rank_proc {
    pid_t pid;
    int node;
    bool done;  /* exited; kept as a zombie until the end so its pid is never reused */
    int status; /* wait status once done */
    const cpu_set_t *cpus; /* CPUs it is bound to; NULL: not bound */
    char bound_to[32];     /* "core 3", "numa 1", "not bound" */
} rank_proc_t;

typedef struct run_opts {
    int nranks;
    int nnodes;         /* 0: no simulated nodes (SYMCOLL_HOST_ID left as it is) */
    double timeout_sec; /* 0: none */
    double grace_sec;
    bind_mode_t bind;
    bool tag_output;
    bool verbose;
    char **argv; /* PROGRAM ARGS... */
} run_opts_t;

static const char *prog = "symcoll_run";

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s -n N [--sim-nodes K] [--bind-to core|numa|none] [--tag-output]\n"
            "                   [--timeout S] [--grace S] [-v] PROGRAM [ARGS...]\n"
            "\n"
            "Start N ranks of PROGRAM on this machine for symcoll's built-in bootstrap:\n"
            "each rank gets SYMCOLL_RANK, SYMCOLL_NRANKS, SYMCOLL_ADDR=127.0.0.1:PORT (rank 0\n"
            "listens there) and SYMCOLL_COOKIE (random per job); for programs that pick a\n"
            "GPU per rank, also SYMCOLL_LOCAL_RANK and SYMCOLL_LOCAL_SIZE (rank and number\n"
            "of ranks on its node; the library itself does not read them).\n"
            "\n"
            "Options:\n"
            "  -n, --np, --nranks N  number of ranks (1..%d)\n"
            "      --sim-nodes K     split the ranks into K simulated nodes, in blocks (ranks\n"
            "                        0..N/K-1 on node 0, ...; the first N%%K nodes get one\n"
            "                        more); each node gets its own SYMCOLL_HOST_ID, so\n"
            "                        inter-node code paths run on one machine\n"
            "      --bind-to WHAT    where each rank may run, among the CPUs the launcher may\n"
            "                        use (counted in cores: a core's hardware threads go\n"
            "                        together, cores in the order of their first CPU):\n"
            "                        core: rank r on core r; with more ranks than cores,\n"
            "                          on core r mod C (several ranks per core; a warning\n"
            "                          says so)\n"
            "                        numa: rank r on every core of the NUMA domain that holds\n"
            "                          core r (core r*C/N when ranks outnumber cores, so\n"
            "                          the domains get ranks in blocks, as many per domain\n"
            "                          as it has cores)\n"
            "                        none: every rank gets the launcher's CPUs\n"
            "                        Default: core, or numa when ranks outnumber cores.\n"
            "                        Simulated nodes do not change the binding.\n"
            "      --tag-output      prefix every line a rank writes with [1,R]<stdout>: or\n"
            "                        [1,R]<stderr>: (Open MPI's format; R is the rank)\n"
            "      --timeout S       stop every rank and fail after S seconds (default: none)\n"
            "      --grace S         seconds between SIGTERM and SIGKILL when stopping ranks\n"
            "                        (default %.0f)\n"
            "  -v, --verbose         print each rank's pid, node, binding and CPUs\n"
            "  -h, --help            print this help\n"
            "\n"
            "Deprecated spellings, accepted in this release with a warning on stderr:\n"
            "  -N K, --nodes K       use --sim-nodes K (Open MPI's -N is ranks per node,\n"
            "                        srun's -N/--nodes counts real nodes)\n"
            "  -t S                  use --timeout S (srun's -t is minutes)\n"
            "\n"
            "Input and output: rank 0 reads the launcher's stdin, the other ranks read\n"
            "/dev/null (a terminal is read by the launcher while it runs in the foreground\n"
            "and passed on to rank 0 through a pipe: the ranks run in a process group of\n"
            "their own). Without --tag-output the ranks write to the launcher's stdout and\n"
            "stderr directly. With it, their output goes through pipes to the launcher,\n"
            "which writes it on in whole lines (a last line without a newline gets one);\n"
            "what the ranks wrote is passed on even when they fail or are killed. A\n"
            "program's stdio buffers whole blocks when its output is a pipe: flush (or run\n"
            "it under stdbuf -oL) to see lines as they are written.\n"
            "\n"
            "If a rank exits with a non-zero status or is killed by a signal, the others\n"
            "are stopped (SIGTERM, then SIGKILL after the grace period) and %s exits\n"
            "non-zero: with the rank's status, 128+signal for a signal, %d on a timeout,\n"
            "%d if PROGRAM cannot be executed or a rank cannot be bound. SIGINT, SIGTERM\n"
            "and SIGHUP are forwarded to the ranks. When the job ends, whatever the ranks\n"
            "left running in its process group is killed.\n",
            prog, RUN_MAX_RANKS, RUN_DEFAULT_GRACE, prog, RUN_EXIT_TIMEOUT, RUN_EXIT_EXEC);
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_seconds(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

static void deprecated(const char *old, const char *now, const char *why)
{
    fprintf(stderr, "%s: %s is deprecated and will be removed: use %s (%s)\n", prog, old, now,
            why);
}

static int parse_args(int argc, char **argv, run_opts_t *o)
{
    enum { OPT_GRACE = 256, OPT_SIM_NODES, OPT_NODES_OLD, OPT_TIMEOUT, OPT_BIND, OPT_TAG };
    static const struct option longopts[] = {
        {"nranks", required_argument, NULL, 'n'},
        {"np", required_argument, NULL, 'n'},
        {"sim-nodes", required_argument, NULL, OPT_SIM_NODES},
        {"nodes", required_argument, NULL, OPT_NODES_OLD},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"bind-to", required_argument, NULL, OPT_BIND},
        {"tag-output", no_argument, NULL, OPT_TAG},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;

    memset(o, 0, sizeof(*o));
    o->grace_sec = RUN_DEFAULT_GRACE;
    o->bind = BIND_AUTO;
    /* '+': stop at PROGRAM, so its own options are left alone */
    while ((c = getopt_long(argc, argv, "+n:N:t:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_int(optarg, 1, RUN_MAX_RANKS, &o->nranks)) {
                fprintf(stderr, "%s: invalid number of ranks '%s' (1..%d)\n", prog, optarg,
                        RUN_MAX_RANKS);
                return -1;
            }
            break;
        case 'N':
        case OPT_NODES_OLD:
            deprecated(c == 'N' ? "-N" : "--nodes", "--sim-nodes K",
                       c == 'N' ? "Open MPI's -N is ranks per node"
                                : "srun's --nodes counts real nodes");
            /* fall through */
        case OPT_SIM_NODES:
            if (parse_int(optarg, 1, RUN_MAX_RANKS, &o->nnodes)) {
                fprintf(stderr, "%s: invalid number of simulated nodes '%s'\n", prog, optarg);
                return -1;
            }
            break;
        case 't':
            deprecated("-t", "--timeout S", "seconds; srun's -t is minutes");
            /* fall through */
        case OPT_TIMEOUT:
            if (parse_seconds(optarg, &o->timeout_sec) || o->timeout_sec <= 0) {
                fprintf(stderr, "%s: invalid timeout '%s' (seconds > 0)\n", prog, optarg);
                return -1;
            }
            break;
        case OPT_GRACE:
            if (parse_seconds(optarg, &o->grace_sec)) {
                fprintf(stderr, "%s: invalid grace period '%s' (seconds)\n", prog, optarg);
                return -1;
            }
            break;
        case OPT_BIND:
            if (!strcmp(optarg, "core")) {
                o->bind = BIND_CORE;
            } else if (!strcmp(optarg, "numa")) {
                o->bind = BIND_NUMA;
            } else if (!strcmp(optarg, "none")) {
                o->bind = BIND_NONE;
            } else {
                fprintf(stderr, "%s: invalid --bind-to '%s' (core, numa or none)\n", prog,
                        optarg);
                return -1;
            }
            break;
        case OPT_TAG:
            o->tag_output = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (!o->nranks) {
        fprintf(stderr, "%s: the number of ranks (-n N) is required\n", prog);
        return -1;
    }
    if (o->nnodes > o->nranks) {
        fprintf(stderr, "%s: %d nodes for %d ranks: every node needs at least one rank\n", prog,
                o->nnodes, o->nranks);
        return -1;
    }
    if (optind >= argc) {
        fprintf(stderr, "%s: no PROGRAM given (see %s -h)\n", prog, prog);
        return -1;
    }
    o->argv = argv + optind;
    return 0;
}

/* Node of a rank when nranks ranks are split in blocks over nnodes nodes, the first
 * nranks % nnodes nodes holding one rank more; also the node's first rank and size. */
static int node_of_rank(int rank, int nranks, int nnodes, int *first_p, int *size_p)
{
    int base = nranks / nnodes, extra = nranks % nnodes;
    int big = extra * (base + 1); /* ranks held by the larger nodes */
    int node;

    if (rank < big)
        node = rank / (base + 1);
    else
        node = extra + (rank - big) / base;
    if (first_p)
        *first_p = node < extra ? node * (base + 1) : big + (node - extra) * base;
    if (size_p)
        *size_p = node < extra ? base + 1 : base;
    return node;
}

static int random_bytes(void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void to_hex(const uint8_t *b, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * len] = '\0';
}

/* A free TCP port on the loopback for rank 0 to listen on. The kernel picks an unused
 * ephemeral port; the socket is closed before the ranks start, so in principle another
 * process could take the port in between: rank 0 then fails to listen and says so. */
static int pick_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd, port = -1;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
        !getsockname(fd, (struct sockaddr *)&sa, &len))
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* ---- CPU topology and binding ---------------------------------------------- */

/* The CPUs the launcher may use, grouped into cores (hardware threads of one core
 * together) and NUMA domains, from sysfs. Every set has setsize bytes. */
typedef struct cpu_topo {
    int maxcpus;
    size_t setsize;
    cpu_set_t *allowed;
    int ncores;
    cpu_set_t **cores; /* in the order of their first CPU */
    int ndomains;
    cpu_set_t **domains;
    int *domain_ids; /* node number in sysfs; -1: allowed CPUs of no known node */
} cpu_topo_t;

static cpu_topo_t topo;

static cpu_set_t *cpus_new(void)
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

static void cpus_format(const cpu_set_t *set, char *buf, size_t len)
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
static void plan_binding(const run_opts_t *o, rank_proc_t *rk)
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

/* ---- job state ------------------------------------------------------------ */

static rank_proc_t *ranks;
static int nranks_started;
static pid_t job_pgid;      /* process group of every rank (rank 0 leads it) */
static sigset_t orig_mask;  /* restored in the children */
static int sig_fd = -1;     /* signalfd of the signals the launcher handles */
static bool stopping;       /* the job is being stopped (failure, timeout, signal) */
static double stop_time;    /* when stopping began */
static double kill_at = -1; /* when the stopping ranks get SIGKILL (<0: done or not yet) */

/* ---- rank output (--tag-output) and rank 0's input ------------------------ */

/* One output stream of one rank: the read end of its pipe, and the part of a line read so
 * far. streams[2 r] is rank r's stdout, streams[2 r + 1] its stderr. */
typedef struct out_stream {
    int fd; /* -1: closed (end of file) or never opened */
    size_t len;
    char buf[RUN_LINE_MAX];
} out_stream_t;

static out_stream_t *streams;   /* NULL without --tag-output */
static struct pollfd *poll_fds; /* room for every stream, stdin, rank 0's stdin, signals */
static int *poll_what;
static bool out_broken[3]; /* writing to fd 1 or 2 failed (e.g. a closed pipe): drop */

/* A terminal on stdin, passed on to rank 0 through a pipe while the launcher is in the
 * foreground (the ranks' own process group may not read it). */
static struct {
    int fd; /* write end of rank 0's stdin; -1: none or closed */
    size_t len, off;
    char buf[4096];
} fwd = {.fd = -1};

static void write_all(int fd, const char *p, size_t n)
{
    while (n && !out_broken[fd]) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            poll(&pf, 1, 100);
        } else if (!(w < 0 && errno == EINTR)) {
            out_broken[fd] = true;
        }
    }
}

/* Writes one tagged line with a single write, so lines of different ranks never mix. */
static void emit_line(int idx, const char *line, size_t n, bool add_newline)
{
    static char out[64 + RUN_LINE_MAX + 1];
    int fd = idx % 2 ? STDERR_FILENO : STDOUT_FILENO;
    size_t off =
        (size_t)snprintf(out, 64, "[1,%d]<%s>:", idx / 2, idx % 2 ? "stderr" : "stdout");

    memcpy(out + off, line, n);
    off += n;
    if (add_newline)
        out[off++] = '\n';
    write_all(fd, out, off);
}

static void stream_close(out_stream_t *s, int idx)
{
    if (s->len)
        emit_line(idx, s->buf, s->len, true);
    s->len = 0;
    close(s->fd);
    s->fd = -1;
}

/* Reads what the stream has, passes on its complete lines, keeps the rest. */
static void stream_read(int idx)
{
    out_stream_t *s = &streams[idx];
    char *start, *end, *nl;
    ssize_t n;

    if (s->len == sizeof(s->buf)) { /* a line longer than the buffer: pass on a piece */
        emit_line(idx, s->buf, s->len, true);
        s->len = 0;
    }
    n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        stream_close(s, idx);
        return;
    }
    s->len += (size_t)n;
    start = s->buf;
    end = s->buf + s->len;
    while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
        emit_line(idx, start, (size_t)(nl - start) + 1, false);
        start = nl + 1;
    }
    s->len = (size_t)(end - start);
    memmove(s->buf, start, s->len);
}

static void fwd_close(void)
{
    if (fwd.fd >= 0)
        close(fwd.fd);
    fwd.fd = -1;
}

/* Reading the controlling terminal is for its foreground process group only. */
static bool fwd_may_read(void)
{
    pid_t fg = tcgetpgrp(STDIN_FILENO);
    return fwd.fd >= 0 && fwd.off == fwd.len && (fg < 0 || fg == getpgrp());
}

static void fwd_read(void)
{
    ssize_t n = read(STDIN_FILENO, fwd.buf, sizeof(fwd.buf));

    if (n > 0) {
        fwd.len = (size_t)n;
        fwd.off = 0;
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EIO)) {
        fwd_close(); /* end of input: rank 0 reads end of file */
    }
}

static void fwd_write(void)
{
    ssize_t n = write(fwd.fd, fwd.buf + fwd.off, fwd.len - fwd.off);

    if (n > 0) {
        fwd.off += (size_t)n;
        if (fwd.off == fwd.len)
            fwd.off = fwd.len = 0;
    } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
        fwd_close(); /* rank 0 closed its stdin */
    }
}

/* Polls the signals, the ranks' output and rank 0's input until a signal comes (returns
 * it) or deadline (<0: none) passes (returns 0). Output and input are handled here. */
static int wait_events(double deadline)
{
    int nstreams = streams ? 2 * nranks_started : 0;
    struct pollfd *pfd = poll_fds;
    int *what = poll_what; /* stream index; -1: signal, -2: stdin, -3: rank 0's stdin */
    int sig = 0;

    for (;;) {
        int n = 0, timeout_ms = -1, rc;

        if (deadline >= 0) {
            double left = deadline - now_sec();
            if (left <= 0)
                break;
            /* wake at least every 100 ms: a rank stopped by a signal does not raise
             * SIGCHLD for WEXITED, and this keeps the loop honest on a loaded machine */
            timeout_ms = left > 0.1 ? 100 : (int)ceil(left * 1000);
        }
        pfd[n] = (struct pollfd){.fd = sig_fd, .events = POLLIN};
        what[n++] = -1;
        if (fwd.fd >= 0) {
            if (fwd.off < fwd.len) {
                pfd[n] = (struct pollfd){.fd = fwd.fd, .events = POLLOUT};
                what[n++] = -3;
            } else if (fwd_may_read()) {
                pfd[n] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
                what[n++] = -2;
            }
        }
        for (int i = 0; i < nstreams; i++) {
            if (streams[i].fd < 0)
                continue;
            pfd[n] = (struct pollfd){.fd = streams[i].fd, .events = POLLIN};
            what[n++] = i;
        }
        rc = poll(pfd, (nfds_t)n, timeout_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0) {
            sig = SIGCHLD; /* periodic re-check */
            break;
        }
        for (int i = 0; i < n; i++) {
            if (!pfd[i].revents)
                continue;
            if (what[i] >= 0) {
                stream_read(what[i]);
            } else if (what[i] == -2) {
                fwd_read();
            } else if (what[i] == -3) {
                fwd_write();
            } else {
                struct signalfd_siginfo si;
                if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                    sig = (int)si.ssi_signo;
            }
        }
        if (sig)
            break;
    }
    return sig;
}

/* Reads the ranks' output to its end once they are gone. A writer outside the job's group
 * (a daemon a rank started) is waited for while it writes, RUN_DRAIN_SEC after its last
 * output and ten times that in all at most. */
static void drain_streams(void)
{
    double start = now_sec(), last = start;
    int nstreams = 2 * nranks_started;

    if (!streams)
        return;
    for (;;) {
        int open = 0, n = 0, rc;

        for (int i = 0; i < nstreams; i++) {
            if (streams[i].fd < 0)
                continue;
            poll_fds[n] = (struct pollfd){.fd = streams[i].fd, .events = POLLIN};
            poll_what[n++] = i;
            open++;
        }
        if (!open || now_sec() - last >= RUN_DRAIN_SEC ||
            now_sec() - start >= 10 * RUN_DRAIN_SEC)
            break;
        rc = poll(poll_fds, (nfds_t)n, 10);
        if (rc <= 0)
            continue;
        for (int i = 0; i < n; i++)
            if (poll_fds[i].revents)
                stream_read(poll_what[i]);
        last = now_sec();
    }
    for (int i = 0; i < nstreams; i++)
        if (streams[i].fd >= 0)
            stream_close(&streams[i], i);
}

static void signal_job(int sig)
{
    /* The group reaches the ranks' own children too. Its id stays reserved while rank 0
     * is unreaped (zombies are reaped only at the very end), so this never hits a
     * stranger. */
    if (job_pgid > 0)
        killpg(job_pgid, sig);
    for (int i = 0; i < nranks_started; i++)
        if (!ranks[i].done)
            kill(ranks[i].pid, sig); /* in case setpgid lost a race */
}

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(buf, len, "ended with wait status 0x%x", status);
}

static bool status_failed(int status)
{
    return !WIFEXITED(status) || WEXITSTATUS(status);
}

static int status_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* What the launcher hands every child. */
typedef struct job_env {
    const char *addr, *cookie, *host_name, *job_id;
    bool forward_stdin; /* rank 0's stdin is a pipe from the launcher (stdin is a terminal) */
} job_env_t;

/* A rank's standard streams: a descriptor to put there, or one of these. */
enum { CHILD_FD_KEEP = -1, CHILD_FD_NULL = -2 };
typedef struct child_io {
    int in, out, err;
} child_io_t;

/* What failed in a child before exec, sent with errno through its error pipe. */
enum { CHILD_SETUP, CHILD_BIND, CHILD_EXEC };

static void (*orig_sigttin)(int); /* the launcher's inherited disposition, for the ranks */

/* Runs in the child between fork and exec: only async-signal-safe calls, except setenv,
 * which is safe here because the launcher is single-threaded. On failure writes what
 * failed and errno to errfd (close-on-exec, so a successful exec closes it with nothing
 * written). */
static void child_exec(const run_opts_t *o, int rank, pid_t pgid, pid_t parent,
                       const job_env_t *env, const child_io_t *io, int errfd)
{
    char buf[64];
    int msg[2] = {CHILD_SETUP, 0}, fd, node = 0, first = 0, size = o->nranks;

    if (setpgid(0, pgid))
        goto fail;
    /* die with the launcher, even if it is SIGKILLed */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL))
        goto fail;
    if (getppid() != parent) {
        errno = ESRCH; /* the launcher is already gone */
        goto fail;
    }
    if (io->in == CHILD_FD_NULL) {
        fd = open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, STDIN_FILENO) < 0)
            goto fail;
        if (fd != STDIN_FILENO)
            close(fd);
    } else if (io->in >= 0 && dup2(io->in, STDIN_FILENO) < 0) {
        goto fail;
    }
    if ((io->out >= 0 && dup2(io->out, STDOUT_FILENO) < 0) ||
        (io->err >= 0 && dup2(io->err, STDERR_FILENO) < 0))
        goto fail;
    if (ranks[rank].cpus) {
        msg[0] = CHILD_BIND;
        if (sched_setaffinity(0, topo.setsize, ranks[rank].cpus))
            goto fail;
        msg[0] = CHILD_SETUP;
    }

    snprintf(buf, sizeof(buf), "%d", rank);
    if (setenv("SYMCOLL_RANK", buf, 1))
        goto fail;
    snprintf(buf, sizeof(buf), "%d", o->nranks);
    if (setenv("SYMCOLL_NRANKS", buf, 1) || setenv("SYMCOLL_ADDR", env->addr, 1) ||
        setenv("SYMCOLL_COOKIE", env->cookie, 1))
        goto fail;
    if (o->nnodes) {
        char host_id[512];
        node = node_of_rank(rank, o->nranks, o->nnodes, &first, &size);
        snprintf(host_id, sizeof(host_id), "%s-simnode%d-%s", env->host_name, node,
                 env->job_id);
        if (setenv("SYMCOLL_HOST_ID", host_id, 1))
            goto fail;
    }
    snprintf(buf, sizeof(buf), "%d", rank - first);
    if (setenv("SYMCOLL_LOCAL_RANK", buf, 1))
        goto fail;
    snprintf(buf, sizeof(buf), "%d", size);
    if (setenv("SYMCOLL_LOCAL_SIZE", buf, 1))
        goto fail;

    signal(SIGPIPE, SIG_DFL);
    signal(SIGTTIN, orig_sigttin);
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
    msg[0] = CHILD_EXEC;
    execvp(o->argv[0], o->argv);
fail:
    msg[1] = errno;
    if (write(errfd, msg, sizeof(msg)) < 0) {
        /* nothing left to report through */
    }
    _exit(RUN_EXIT_EXEC);
}

static void close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

/* The rank's pipes: [0..1] error report, [2..3] stdin (rank 0, terminal on stdin),
 * [4..7] stdout and stderr (--tag-output); -1 where not needed. */
static int open_pipes(const job_env_t *env, int r, int p[8])
{
    for (int i = 0; i < 8; i++)
        p[i] = -1;
    if (pipe2(p, O_CLOEXEC) || (r == 0 && env->forward_stdin && pipe2(p + 2, O_CLOEXEC)) ||
        (streams && (pipe2(p + 4, O_CLOEXEC) || pipe2(p + 6, O_CLOEXEC)))) {
        int err = errno;
        close_fds(p, 8);
        fprintf(stderr, "%s: pipe: %s\n", prog, strerror(err));
        return err;
    }
    return 0;
}

static void report_rank(const run_opts_t *o, int r)
{
    char cpus[256] = "?", node[32] = "";
    cpu_set_t *got = topo.allowed ? cpus_new() : NULL;

    if (got) {
        if (!sched_getaffinity(ranks[r].pid, topo.setsize, got))
            cpus_format(got, cpus, sizeof(cpus));
        else /* gone already: what it was given */
            cpus_format(ranks[r].cpus ? ranks[r].cpus : topo.allowed, cpus, sizeof(cpus));
        CPU_FREE(got);
    }
    if (o->nnodes)
        snprintf(node, sizeof(node), " node %d", ranks[r].node);
    fprintf(stderr, "%s: rank %d pid %d%s: %s, cpus %s\n", prog, r, (int)ranks[r].pid, node,
            ranks[r].bound_to, cpus);
}

/* Fork rank r. Returns 0, or the errno of a failed fork/exec (already reported). */
static int start_rank(const run_opts_t *o, int r, const job_env_t *env)
{
    int p[8], msg[2] = {0, 0}, err;
    child_io_t io = {.in = r == 0 ? CHILD_FD_KEEP : CHILD_FD_NULL,
                     .out = CHILD_FD_KEEP,
                     .err = CHILD_FD_KEEP};
    pid_t pid, parent = getpid();
    ssize_t n;

    if ((err = open_pipes(env, r, p)))
        return err;
    if (p[2] >= 0)
        io.in = p[2];
    if (streams) {
        io.out = p[5];
        io.err = p[7];
    }
    pid = fork();
    if (pid < 0) {
        err = errno;
        fprintf(stderr, "%s: fork of rank %d: %s\n", prog, r, strerror(err));
        close_fds(p, 8);
        return err;
    }
    if (pid == 0) {
        close(p[0]);
        child_exec(o, r, r == 0 ? 0 : job_pgid, parent, env, &io, p[1]);
    }
    /* the parent keeps the error pipe's read end, stdin's write end, the outputs' read
     * ends; never blocking on them */
    close(p[1]);
    close(p[2]);
    close(p[5]);
    close(p[7]);
    if (p[3] >= 0) {
        fcntl(p[3], F_SETFL, O_NONBLOCK);
        fwd.fd = p[3];
    }
    if (streams) {
        fcntl(p[4], F_SETFL, O_NONBLOCK);
        fcntl(p[6], F_SETFL, O_NONBLOCK);
        streams[2 * r].fd = p[4];
        streams[2 * r + 1].fd = p[6];
    }
    /* set the group from both sides, so it holds whichever runs first */
    if (r == 0)
        job_pgid = pid;
    setpgid(pid, job_pgid);
    ranks[r].pid = pid;
    ranks[r].node = o->nnodes ? node_of_rank(r, o->nranks, o->nnodes, NULL, NULL) : 0;
    nranks_started = r + 1;

    do {
        n = read(p[0], msg, sizeof(msg));
    } while (n < 0 && errno == EINTR);
    close(p[0]);
    if (n == (ssize_t)sizeof(msg)) {
        char cpus[256] = "";
        err = msg[1] ? msg[1] : EINVAL;
        if (msg[0] == CHILD_BIND) {
            cpus_format(ranks[r].cpus, cpus, sizeof(cpus));
            fprintf(stderr, "%s: cannot bind rank %d to %s (cpus %s): %s\n", prog, r,
                    ranks[r].bound_to, cpus, strerror(err));
        } else if (msg[0] == CHILD_EXEC) {
            fprintf(stderr, "%s: cannot execute '%s' (rank %d): %s\n", prog, o->argv[0], r,
                    strerror(err));
        } else {
            fprintf(stderr, "%s: cannot set up rank %d: %s\n", prog, r, strerror(err));
        }
        return err;
    }
    if (o->verbose)
        report_rank(o, r);
    return 0;
}

/* Record every rank that has exited since the last call, without reaping it, and report
 * failures that happened before the launcher began stopping the job (later ones are its
 * own doing). Returns the number still running. */
static int poll_ranks(int *first_failed)
{
    int running = 0;

    for (int i = 0; i < nranks_started; i++) {
        siginfo_t si;
        rank_proc_t *rp = &ranks[i];

        if (rp->done)
            continue;
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)rp->pid, &si, WEXITED | WNOHANG | WNOWAIT) || !si.si_pid) {
            running++;
            continue;
        }
        rp->done = true;
        if (si.si_code == CLD_EXITED)
            rp->status = (si.si_status & 0xff) << 8;
        else
            rp->status = si.si_status & 0x7f;
        if (si.si_code == CLD_DUMPED)
            rp->status |= 0x80;
        if (!stopping && status_failed(rp->status)) {
            char what[128];
            describe_status(rp->status, what, sizeof(what));
            fprintf(stderr, "%s: rank %d (pid %d) %s\n", prog, i, (int)rp->pid, what);
            if (*first_failed < 0)
                *first_failed = i;
        }
    }
    return running;
}

static void reap_all(void)
{
    for (int i = 0; i < nranks_started; i++) {
        int st;
        while (waitpid(ranks[i].pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
}

/* Reap what the ranks left behind in the job's group (orphans come to the launcher, a
 * subreaper) until the group is empty, so nothing of the job outlives the launcher.
 * Bounded: a process stuck in the kernel must not hang the launcher. */
static void reap_group(void)
{
    double give_up = now_sec() + 10.0;
    struct timespec pause = {0, 10 * 1000 * 1000};

    if (job_pgid <= 0)
        return;
    while (killpg(job_pgid, 0) == 0 && now_sec() < give_up) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        nanosleep(&pause, NULL);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static void list_running(char *buf, size_t len)
{
    size_t off = 0;
    int shown = 0;

    buf[0] = '\0';
    for (int i = 0; i < nranks_started && off + 16 < len; i++) {
        if (ranks[i].done)
            continue;
        off += (size_t)snprintf(buf + off, len - off, "%s%d", shown ? ", " : "", i);
        shown++;
    }
}

/* Start stopping the job: sig to every rank (SIGCONT too: a stopped rank must run to
 * take it), SIGKILL once the grace period is over. */
static void begin_stop(int sig, double grace_sec)
{
    signal_job(sig);
    signal_job(SIGCONT);
    stopping = true;
    stop_time = now_sec();
    kill_at = stop_time + grace_sec;
}

/* Descriptors 0-2 open, so that no pipe of the job takes their place. */
static void open_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
            break;
}

int main(int argc, char **argv)
{
    run_opts_t o;
    job_env_t env;
    sigset_t set;
    uint8_t rnd[16];
    char cookie[17], jobhex[17], addr[64], host[256], list[256];
    int port, first_failed = -1, running, exit_code = 0, forwarded = 0;
    bool timed_out = false;
    double deadline = -1;

    if (parse_args(argc, argv, &o))
        return RUN_EXIT_USAGE;
    open_std_fds();

    if (random_bytes(rnd, sizeof(rnd))) {
        fprintf(stderr, "%s: getrandom: %s\n", prog, strerror(errno));
        return 1;
    }
    if (!rnd[0])
        rnd[0] = 1; /* the bootstrap rejects an all-zero cookie */
    to_hex(rnd, 8, cookie);
    to_hex(rnd + 8, 8, jobhex);
    port = pick_port();
    if (port <= 0) {
        fprintf(stderr, "%s: no free TCP port on 127.0.0.1: %s\n", prog, strerror(errno));
        return 1;
    }
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    if (gethostname(host, sizeof(host)))
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    env = (job_env_t){.addr = addr,
                      .cookie = cookie,
                      .host_name = host,
                      .job_id = jobhex,
                      .forward_stdin = isatty(STDIN_FILENO)};

    /* orphans of the ranks come to us, so they can be reaped and waited for */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ranks = calloc((size_t)o.nranks, sizeof(*ranks));
    poll_fds = calloc(2 * (size_t)o.nranks + 3, sizeof(*poll_fds));
    poll_what = calloc(2 * (size_t)o.nranks + 3, sizeof(*poll_what));
    if (o.tag_output && (streams = calloc(2 * (size_t)o.nranks, sizeof(*streams))))
        for (int i = 0; i < 2 * o.nranks; i++)
            streams[i].fd = -1;
    if (!ranks || !poll_fds || !poll_what || (o.tag_output && !streams)) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    plan_binding(&o, ranks);

    /* Signals are read from a signalfd, polled with the ranks' output; the children get
     * the original mask back before exec. A closed reader of our output is an error
     * returned by write, not a signal. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &orig_mask);
    sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_fd < 0) {
        fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    orig_sigttin = signal(SIGTTIN, SIG_IGN); /* a terminal read in the background: EIO */

    for (int r = 0; r < o.nranks; r++) {
        if (start_rank(&o, r, &env)) {
            exit_code = RUN_EXIT_EXEC;
            begin_stop(SIGTERM, o.grace_sec);
            break;
        }
    }
    if (o.timeout_sec > 0)
        deadline = now_sec() + o.timeout_sec;

    for (;;) {
        double wake;
        int sig;

        running = poll_ranks(&first_failed);
        if (fwd.fd >= 0 && ranks[0].done)
            fwd_close();
        if (!running)
            break;
        if (!stopping && first_failed >= 0) {
            list_running(list, sizeof(list));
            fprintf(stderr, "%s: stopping %d remaining rank(s): %s\n", prog, running, list);
            begin_stop(SIGTERM, o.grace_sec);
        }
        if (stopping && kill_at >= 0 && now_sec() >= kill_at) {
            signal_job(SIGKILL);
            kill_at = -1;
        }

        /* once stopping, only the SIGKILL deadline matters */
        wake = stopping ? -1 : deadline;
        if (kill_at >= 0 && (wake < 0 || kill_at < wake))
            wake = kill_at;
        sig = wait_events(wake);
        if (sig == 0 && !stopping && deadline >= 0 && now_sec() >= deadline) {
            running = poll_ranks(&first_failed);
            if (!running || first_failed >= 0)
                continue; /* ended on its own just in time */
            list_running(list, sizeof(list));
            fprintf(stderr, "%s: timeout after %g s; stopping %d rank(s) still running: %s\n",
                    prog, o.timeout_sec, running, list);
            timed_out = true;
            begin_stop(SIGTERM, o.grace_sec);
        } else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            if (!forwarded)
                forwarded = sig;
            if (!stopping) {
                fprintf(stderr, "%s: got signal %d (%s); forwarding it to the ranks\n", prog,
                        sig, strsignal(sig));
                begin_stop(sig, o.grace_sec);
            } else if (now_sec() - stop_time >= 0.5) {
                /* asked again while stopping: no more grace. (Within 0.5 s it is the same
                 * request delivered twice: timeout(1) signals its child and its group.) */
                fprintf(stderr, "%s: got signal %d (%s) while stopping; killing the ranks\n",
                        prog, sig, strsignal(sig));
                signal_job(SIGKILL);
                kill_at = -1;
            }
        }
    }

    /* whatever the ranks left running in the job's group goes with the job; what they
     * wrote is passed on */
    fwd_close();
    if (job_pgid > 0)
        killpg(job_pgid, SIGKILL);
    reap_all();
    reap_group();
    drain_streams();

    if (exit_code)
        ; /* exec failure, reported already */
    else if (first_failed >= 0)
        exit_code = status_exit_code(ranks[first_failed].status);
    else if (timed_out)
        exit_code = RUN_EXIT_TIMEOUT;
    else if (forwarded)
        exit_code = 128 + forwarded;
    if (exit_code == 0) {
        /* belt and braces: no rank may fail silently */
        for (int i = 0; i < nranks_started; i++)
            if (status_failed(ranks[i].status))
                exit_code = status_exit_code(ranks[i].status);
    }
    free(ranks);
    free(streams);
    free(poll_fds);
    free(poll_what);
    return exit_code;
}
