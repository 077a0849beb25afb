/* scale_setup: what setting up a communicator costs each rank (time, bootstrap traffic,
 * connections, UCX endpoints, memory, file descriptors, threads), after creation, after
 * its first calls, and per extra communicator; rank 0 prints the spread over the ranks.
 * Started by symcoll_run or a PMIx launcher (mpirun); bench/scale.sh runs the sweep. */
#include "symcoll_config.h"

#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symcoll.h"
#include "bootstrap/bootstrap.h"
#include "core/core.h"
#include "topo/topo.h"
#include "ucx/ucx.h"

#define SS_MAX_EXTRA 64
#define SS_BIG_BYTES (4u << 20)

/* One rank's numbers, all as doubles so that one FLOAT64 allgather carries them. The
 * phases: PH_CREATED (first communicator created), PH_CALLS (after its first calls),
 * PH_EXTRA (after the extra communicators were created, before any call on them). */
enum {
    M_CREATE_S,      /* wall time of symcoll_comm_create */
    M_CREATE_CPU_S,  /* CPU time of the process during it (every thread) */
    M_ENTER_REAL,    /* CLOCK_REALTIME on entering it: launch skew, on one host */
    M_LEAVE_REAL,    /* CLOCK_REALTIME on leaving it */
    M_NODES,         /* nodes of the communicator */
    M_LOCAL,         /* ranks on this rank's node */
    M_AR8_S,         /* first 8-byte all-reduce */
    M_AR4M_S,        /* first 4 MiB all-reduce */
    M_WRONG,         /* wrong elements of both */
    M_XCREATE_S,     /* mean wall time of an extra communicator's creation */
    M_XCREATE_MAX_S, /* slowest of them on this rank */
    M_XBYTES,        /* bootstrap TCP bytes (sent + received) of one extra communicator */
    M_XCONNS,        /* TCP connections one extra communicator holds */
    M_XEPS,          /* UCX endpoints one extra communicator holds */
    M_XDONE,         /* extra communicators every rank created */
    M_XFAILED,       /* 1 if this rank's creation of the next one failed */
    M_RDV_CPU_S,     /* rank 0 of the TCP rendezvous: its CPU time serving the others */
    M_RDV_BYTES,     /* bootstrap TCP bytes of the rendezvous (of the first communicator) */
    M_RDV_CONNS,     /* rank 0: connections it served (ranks that dialled it, host leaders) */
    M_RDV_MEMBERS,   /* rank 0: ranks it heard of through a host leader */
    M_PHASE0,        /* then per phase: */
};
enum {
    P_BYTES_SENT,
    P_BYTES_RECV,
    P_MSGS,
    P_ROUNDS,
    P_EXCHANGES,
    P_CONNS,
    P_EPS,
    P_RSS_KB,
    P_FDS,
    P_SOCKS,
    P_THREADS,
    P_LAST
};
enum { PH_CREATED, PH_CALLS, PH_EXTRA, PH_LAST };
#define M(phase, p) (M_PHASE0 + (phase)*P_LAST + (p))
#define M_LAST (M_PHASE0 + PH_LAST * P_LAST)

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* VmRSS (kB) and Threads from /proc/self/status */
static void read_status(double *rss_kb, double *threads)
{
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");

    *rss_kb = *threads = -1;
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        long v;
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            *rss_kb = (double)v;
        else if (sscanf(line, "Threads: %ld", &v) == 1)
            *threads = (double)v;
    }
    fclose(f);
}

/* open descriptors and how many of them are sockets (the directory's own is left out) */
static void read_fds(double *fds, double *socks)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int nf = 0, ns = 0;

    *fds = *socks = -1;
    if (!d)
        return;
    while ((e = readdir(d))) {
        char path[300], target[64];
        ssize_t len;
        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
            continue;
        nf++;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && !strncmp(target, "socket:", 7))
            ns++;
    }
    closedir(d);
    *fds = nf;
    *socks = ns;
}

static void sample(comm_t *comm, double *m, int phase)
{
    bootstrap_stats_t st;

    bootstrap_stats(comm->bootstrap, &st);
    m[M(phase, P_BYTES_SENT)] = (double)st.tcp_bytes_sent;
    m[M(phase, P_BYTES_RECV)] = (double)st.tcp_bytes_recv;
    m[M(phase, P_MSGS)] = (double)st.tcp_msgs_sent;
    m[M(phase, P_ROUNDS)] = (double)st.rounds;
    m[M(phase, P_EXCHANGES)] = (double)st.exchanges;
    m[M(phase, P_CONNS)] = st.tcp_conns;
    m[M(phase, P_EPS)] = ucx_num_endpoints(comm->ucx);
    read_status(&m[M(phase, P_RSS_KB)], &m[M(phase, P_THREADS)]);
    read_fds(&m[M(phase, P_FDS)], &m[M(phase, P_SOCKS)]);
}

/* 8 bytes (one int64) and 4 MiB (int32) summed; returns the wrong elements, or -1 */
static long check_allreduce(symcoll_comm_h comm, int rank, int n, double *t8, double *t4m)
{
    size_t count = SS_BIG_BYTES / sizeof(int32_t);
    int64_t v = rank + 1;
    int32_t *buf = malloc(SS_BIG_BYTES);
    long wrong = 0;
    double t;

    if (!buf)
        return -1;
    t = now_mono();
    if (symcoll_allreduce(&v, &v, 1, SYMCOLL_INT64, SYMCOLL_SUM, comm, NULL) != SYMCOLL_OK) {
        free(buf);
        return -1;
    }
    *t8 = now_mono() - t;
    wrong += v != (int64_t)n * (n + 1) / 2;
    /* (rank+1)*(1 + i%5): every rank's share differs, so a missing or doubled rank shows */
    for (size_t i = 0; i < count; i++)
        buf[i] = (int32_t)((rank + 1) * (1 + (int)(i % 5)));
    t = now_mono();
    if (symcoll_allreduce(buf, buf, count, SYMCOLL_INT32, SYMCOLL_SUM, comm, NULL) !=
        SYMCOLL_OK) {
        free(buf);
        return -1;
    }
    *t4m = now_mono() - t;
    for (size_t i = 0; i < count; i++)
        wrong += buf[i] != (int32_t)((int64_t)n * (n + 1) / 2 * (1 + (int)(i % 5)));
    free(buf);
    return wrong;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stat3 {
    double max, med, min;
    int argmax;
} stat3_t;

/* over the ranks of all[n][M_LAST]: value k, plus value k2 (k2 >= 0), minus value base
 * (base >= 0), divided by div */
static stat3_t over_ranks2(const double *all, int n, int k, int k2, int base, double div)
{
    double *v = malloc((size_t)n * sizeof(*v));
    stat3_t s = {-INFINITY, 0, INFINITY, 0};

    if (!v)
        return s;
    for (int r = 0; r < n; r++) {
        v[r] = all[(size_t)r * M_LAST + k];
        if (k2 >= 0)
            v[r] += all[(size_t)r * M_LAST + k2];
        if (base >= 0)
            v[r] -= all[(size_t)r * M_LAST + base];
        v[r] /= div;
        if (v[r] > s.max) {
            s.max = v[r];
            s.argmax = r;
        }
        if (v[r] < s.min)
            s.min = v[r];
    }
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    s.med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return s;
}

static stat3_t over_ranks(const double *all, int n, int k, int base, double div)
{
    return over_ranks2(all, n, k, -1, base, div);
}

static void row(const char *name, stat3_t s, const char *fmt)
{
    char b[3][32];
    snprintf(b[0], sizeof(b[0]), fmt, s.max);
    snprintf(b[1], sizeof(b[1]), fmt, s.med);
    snprintf(b[2], sizeof(b[2]), fmt, s.min);
    printf("  %-34s %14s %14s %14s %7d\n", name, b[0], b[1], b[2], s.argmax);
}

static void report(const double *all, int n, int nextra, int asked, const char *label,
                   const char *how)
{
    static const char *const phase_name[PH_LAST] = {"created", "after calls", "+extra comms"};
    double enter_last = -INFINITY, leave_last = -INFINITY, enter_first = INFINITY;
    double wrong = 0, xfailed = 0, nx = nextra > 0 ? nextra : 1;
    char name[64];

    for (int r = 0; r < n; r++) {
        const double *m = all + (size_t)r * M_LAST;
        enter_first = fmin(enter_first, m[M_ENTER_REAL]);
        enter_last = fmax(enter_last, m[M_ENTER_REAL]);
        leave_last = fmax(leave_last, m[M_LEAVE_REAL]);
        wrong += m[M_WRONG] < 0 ? 1e9 : m[M_WRONG];
        xfailed += m[M_XFAILED];
    }
    printf("# scale_setup: %d ranks on %.0f node(s), %d extra communicator(s); bootstrap %s\n",
           n, all[M_NODES], nextra, how);
    printf("# over ranks:%27s %14s %14s %14s %7s\n", "", "max", "median", "min", "argmax");
    row("create time s", over_ranks(all, n, M_CREATE_S, -1, 1), "%.4f");
    row("create CPU time s", over_ranks(all, n, M_CREATE_CPU_S, -1, 1), "%.4f");
    row("rendezvous CPU time s (rank 0)", over_ranks(all, n, M_RDV_CPU_S, -1, 1), "%.4f");
    printf("  %-34s %14.4f   (last rank in to last rank out; launch skew %.3f s)\n",
           "set-up span s", leave_last - enter_last, enter_last - enter_first);
    for (int ph = 0; ph < PH_EXTRA; ph++) {
        const char *pn = phase_name[ph];
        snprintf(name, sizeof(name), "bootstrap bytes sent+recv, %s", pn);
        row(name, over_ranks2(all, n, M(ph, P_BYTES_SENT), M(ph, P_BYTES_RECV), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "bootstrap msgs sent, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_MSGS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "bootstrap rounds, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_ROUNDS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "bootstrap exchanges, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_EXCHANGES), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "TCP connections, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_CONNS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "UCX endpoints, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_EPS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "socket fds, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_SOCKS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "fds, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_FDS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "threads, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_THREADS), -1, 1), "%.0f");
        snprintf(name, sizeof(name), "RSS MiB, %s", pn);
        row(name, over_ranks(all, n, M(ph, P_RSS_KB), -1, 1024), "%.1f");
    }
    row("first 8 B all-reduce s", over_ranks(all, n, M_AR8_S, -1, 1), "%.4f");
    row("first 4 MiB all-reduce s", over_ranks(all, n, M_AR4M_S, -1, 1), "%.4f");
    if (nextra > 0) {
        row("extra comm: create time s (mean)", over_ranks(all, n, M_XCREATE_S, -1, 1), "%.4f");
        row("extra comm: create time s (max)", over_ranks(all, n, M_XCREATE_MAX_S, -1, 1),
            "%.4f");
        row("extra comm: bootstrap bytes", over_ranks(all, n, M_XBYTES, -1, 1), "%.0f");
        row("extra comm: TCP connections", over_ranks(all, n, M_XCONNS, -1, 1), "%.0f");
        row("extra comm: UCX endpoints", over_ranks(all, n, M_XEPS, -1, 1), "%.0f");
        row("extra comm: RSS MiB",
            over_ranks(all, n, M(PH_EXTRA, P_RSS_KB), M(PH_CALLS, P_RSS_KB), 1024 * nx),
            "%.2f");
        row("extra comm: fds", over_ranks(all, n, M(PH_EXTRA, P_FDS), M(PH_CALLS, P_FDS), nx),
            "%.1f");
        row("extra comm: socket fds",
            over_ranks(all, n, M(PH_EXTRA, P_SOCKS), M(PH_CALLS, P_SOCKS), nx), "%.1f");
        row("extra comm: threads",
            over_ranks(all, n, M(PH_EXTRA, P_THREADS), M(PH_CALLS, P_THREADS), nx), "%.1f");
    }
    if (nextra < asked)
        printf("# extra communicators: %d of %d created; the next one failed on %.0f "
               "rank(s) (their errors are on stderr)\n",
               nextra, asked, xfailed);
    printf("# all-reduce check: %s (%.0f wrong elements over all ranks)\n",
           wrong == 0 ? "ok" : "FAILED", wrong);

    /* one machine-readable line: the sweep's table and the model read these columns */
    {
        stat3_t bytes = over_ranks2(all, n, M(PH_CREATED, P_BYTES_SENT),
                                    M(PH_CREATED, P_BYTES_RECV), -1, 1);
        stat3_t bytes_a =
            over_ranks2(all, n, M(PH_CALLS, P_BYTES_SENT), M(PH_CALLS, P_BYTES_RECV), -1, 1);
        /* the mesh's share of creation: without the rendezvous with rank 0 */
        stat3_t bytes_m = over_ranks2(all, n, M(PH_CREATED, P_BYTES_SENT),
                                      M(PH_CREATED, P_BYTES_RECV), M_RDV_BYTES, 1);
        stat3_t exch_a = over_ranks(all, n, M(PH_CALLS, P_EXCHANGES), -1, 1);
        stat3_t msgs_a = over_ranks(all, n, M(PH_CALLS, P_MSGS), -1, 1);
        double xb_max;
        stat3_t ct = over_ranks(all, n, M_CREATE_S, -1, 1);
        stat3_t cpu = over_ranks(all, n, M_CREATE_CPU_S, -1, 1);
        stat3_t rounds = over_ranks(all, n, M(PH_CREATED, P_ROUNDS), -1, 1);
        stat3_t exch = over_ranks(all, n, M(PH_CREATED, P_EXCHANGES), -1, 1);
        stat3_t msgs = over_ranks(all, n, M(PH_CREATED, P_MSGS), -1, 1);
        stat3_t conns = over_ranks(all, n, M(PH_CREATED, P_CONNS), -1, 1);
        stat3_t eps = over_ranks(all, n, M(PH_CREATED, P_EPS), -1, 1);
        stat3_t eps_a = over_ranks(all, n, M(PH_CALLS, P_EPS), -1, 1);
        stat3_t socks = over_ranks(all, n, M(PH_CALLS, P_SOCKS), -1, 1);
        stat3_t rss = over_ranks(all, n, M(PH_CALLS, P_RSS_KB), -1, 1024);
        stat3_t xt = over_ranks(all, n, M_XCREATE_S, -1, 1);
        stat3_t xrss =
            over_ranks(all, n, M(PH_EXTRA, P_RSS_KB), M(PH_CALLS, P_RSS_KB), 1024 * nx);
        stat3_t xfds = over_ranks(all, n, M(PH_EXTRA, P_FDS), M(PH_CALLS, P_FDS), nx);
        stat3_t xsocks = over_ranks(all, n, M(PH_EXTRA, P_SOCKS), M(PH_CALLS, P_SOCKS), nx);

        xb_max = over_ranks(all, n, M_XBYTES, -1, 1).max;
        printf("# csv: label,n,nodes,create_max_s,create_med_s,span_s,cpu_max_s,cpu_med_s,"
               "bytes_max,bytes_med,msgs_max,rounds_max,exchanges,conns_max,conns_med,"
               "eps_max,eps_med,eps_calls_max,eps_calls_med,socks_max,socks_med,rss_max_mb,"
               "rss_med_mb,xcreate_max_s,xcreate_med_s,xbytes_max,xrss_med_mb,xfds_med,"
               "xsocks_med,wrong,exchanges_calls,bytes_calls_max,bytes_calls_med,"
               "msgs_calls_max,extra,rendezvous_cpu_s,bytes_mesh_max,bytes_mesh_med,"
               "rendezvous_conns,rendezvous_members\n");
        printf("csv: %s,%d,%.0f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,"
               "%.0f,%.1f,%.0f,%.1f,%.0f,%.1f,%.1f,%.1f,%.4f,%.4f,%.0f,%.2f,%.1f,%.1f,%.0f,"
               "%.0f,%.0f,%.0f,%.0f,%d,%.5f,%.0f,%.0f,%.0f,%.0f\n",
               label, n, all[M_NODES], ct.max, ct.med, leave_last - enter_last, cpu.max,
               cpu.med, bytes.max, bytes.med, msgs.max, rounds.max, exch.max, conns.max,
               conns.med, eps.max, eps.med, eps_a.max, eps_a.med, socks.max, socks.med, rss.max,
               rss.med, xt.max, xt.med, xb_max, xrss.med, xfds.med, xsocks.med, wrong,
               exch_a.max, bytes_a.max, bytes_a.med, msgs_a.max, nextra,
               over_ranks(all, n, M_RDV_CPU_S, -1, 1).max, bytes_m.max, bytes_m.med,
               over_ranks(all, n, M_RDV_CONNS, -1, 1).max,
               over_ranks(all, n, M_RDV_MEMBERS, -1, 1).max);
    }
}

/* Unit costs of the bootstrap on this machine, for bench/scale_model.py (meant for 2
 * ranks on 2 simulated nodes, where no core is shared): the wall time of one mesh round
 * (a small message each way: CPU, kernel and loopback), from 2000 one-value
 * all-reduces, and the time per byte moved (sent plus received), from 8 all-gathers of
 * 4 MiB per rank less their rounds. Rank 0 prints the slower rank's figures on a
 * 'unit:' line with the creation time. */
static int unit_costs(symcoll_comm_h comm, int n, double create_s)
{
    enum { ROUNDS_REPS = 2000, BYTES_REPS = 8 };
    size_t big = SS_BIG_BYTES;
    char *src = calloc(1, big), *dst = malloc(big * (size_t)n);
    bootstrap_stats_t a, b;
    double t, v[3];
    int64_t x = 0;

    if (!src || !dst) {
        free(src);
        free(dst);
        return 2;
    }
    bootstrap_stats(comm->bootstrap, &a);
    t = now_mono();
    for (int i = 0; i < ROUNDS_REPS; i++)
        if (bootstrap_allreduce(comm->bootstrap, &x, 1, BOOTSTRAP_OP_MAX) != SYMCOLL_OK)
            goto fail;
    bootstrap_stats(comm->bootstrap, &b);
    v[0] = (now_mono() - t) / (double)(b.rounds - a.rounds);
    a = b;
    t = now_mono();
    for (int i = 0; i < BYTES_REPS; i++)
        if (bootstrap_allgather(comm->bootstrap, src, dst, big) != SYMCOLL_OK)
            goto fail;
    bootstrap_stats(comm->bootstrap, &b);
    v[1] = (now_mono() - t - v[0] * (double)(b.rounds - a.rounds)) /
           (double)(b.tcp_bytes_sent - a.tcp_bytes_sent + b.tcp_bytes_recv - a.tcp_bytes_recv);
    v[2] = create_s;
    if (symcoll_allreduce(v, v, 3, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm, NULL) != SYMCOLL_OK)
        goto fail;
    if (comm->rank == 0) {
        printf("# unit costs over %d ranks on %d node(s), the slower rank's: a mesh round "
               "%.1f us, %.3f ns per byte moved, creation %.4f s\n",
               n, comm->topo->nnodes, v[0] * 1e6, v[1] * 1e9, v[2]);
        printf("# csv: unit,n,nodes,round_us,byte_ns,create_s\n");
        printf("unit: unit,%d,%d,%.3f,%.4f,%.5f\n", n, comm->topo->nnodes, v[0] * 1e6,
               v[1] * 1e9, v[2]);
        fflush(stdout);
    }
    free(src);
    free(dst);
    return 0;
fail:
    fprintf(stderr, "scale_setup: unit costs: a bootstrap exchange failed\n");
    free(src);
    free(dst);
    return 2;
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: scale_setup [-c C] [-l LABEL] [-v] [-u] [-s]\n"
            "Run under symcoll_run -n N [--sim-nodes K] or mpirun. Each rank creates a\n"
            "communicator, checks an 8-byte and a 4 MiB all-reduce, then creates C more\n"
            "communicators (default 7, at most %d) and makes no call on them; rank 0 prints\n"
            "max, median and min over the ranks of the creation time, bootstrap traffic,\n"
            "TCP connections, UCX endpoints, socket fds, fds, threads and RSS, after\n"
            "creation, after the calls, and per extra communicator, then one 'csv:' line\n"
            "(columns in the '# csv:' line above it).\n"
            "  -l LABEL  first field of the csv line (default 'run')\n"
            "  -v        every rank also prints its own numbers\n"
            "  -s        the extra communicators are splits of the first (one color, every\n"
            "            rank), not new creations\n"
            "  -u        unit costs instead of the extra communicators: the time of a\n"
            "            bootstrap round and per byte, and of the creation ('unit:' line)\n"
            "Exit status: 0; 1 if an all-reduce was wrong; 3 if an extra communicator\n"
            "could not be created (the numbers of those created are printed); 2 on\n"
            "other errors.\n",
            SS_MAX_EXTRA);
}

int main(int argc, char **argv)
{
    symcoll_comm_h comm = NULL, extra[SS_MAX_EXTRA];
    double m[M_LAST], *all = NULL, t, cpu;
    const char *label = "run";
    symcoll_comm_params_t xparams = {0};
    int nextra = 7, xdone = 0, verbose = 0, unit = 0, split = 0, rank, n, opt, rc = 2;
    symcoll_status_t s;
    long wrong;

    while ((opt = getopt(argc, argv, "c:l:vush")) != -1) {
        switch (opt) {
        case 'c':
            nextra = atoi(optarg);
            if (nextra < 0 || nextra > SS_MAX_EXTRA) {
                usage(stderr);
                return 2;
            }
            break;
        case 'l':
            label = optarg;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'u':
            unit = 1;
            break;
        case 's':
            split = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    memset(m, 0, sizeof(m));

    m[M_ENTER_REAL] = now_clock(CLOCK_REALTIME);
    cpu = now_clock(CLOCK_PROCESS_CPUTIME_ID);
    t = now_mono();
    s = symcoll_comm_create(NULL, &comm);
    m[M_CREATE_S] = now_mono() - t;
    m[M_CREATE_CPU_S] = now_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    m[M_LEAVE_REAL] = now_clock(CLOCK_REALTIME);
    if (s != SYMCOLL_OK) {
        fprintf(stderr, "scale_setup: symcoll_comm_create: %s\n", symcoll_status_string(s));
        return 2;
    }
    symcoll_comm_rank(comm, &rank);
    symcoll_comm_size(comm, &n);
    m[M_NODES] = comm->topo->nnodes;
    m[M_LOCAL] = comm->topo->local_size;
    sample(comm, m, PH_CREATED);
    {
        bootstrap_stats_t st;
        bootstrap_stats(comm->bootstrap, &st);
        m[M_RDV_CPU_S] = st.rendezvous_cpu_s;
        m[M_RDV_BYTES] = (double)st.rendezvous_bytes;
        if (rank == 0) { /* a leader counts its members too: rank 0's alone */
            m[M_RDV_CONNS] = st.rendezvous_conns;
            m[M_RDV_MEMBERS] = st.rendezvous_members;
        }
    }

    wrong = check_allreduce(comm, rank, n, &m[M_AR8_S], &m[M_AR4M_S]);
    m[M_WRONG] = (double)wrong;
    sample(comm, m, PH_CALLS);
    if (wrong < 0) {
        fprintf(stderr, "scale_setup: rank %d: all-reduce failed\n", rank);
        goto out;
    }
    if (unit) {
        rc = wrong ? 1 : unit_costs(comm, n, m[M_CREATE_S]);
        goto out;
    }

    /* The extra communicators wait at most 5 times the slowest first creation (at least
     * 30 s, at most SYMCOLL_TIMEOUT): a creation the bootstrap gives up on for some ranks
     * leaves the others waiting for them until this deadline. */
    xparams.field_mask = SYMCOLL_COMM_PARAM_FIELD_TIMEOUT;
    xparams.timeout_sec = m[M_CREATE_S];
    if (symcoll_allreduce(&xparams.timeout_sec, &xparams.timeout_sec, 1, SYMCOLL_FLOAT64,
                          SYMCOLL_MAX, comm, NULL) != SYMCOLL_OK)
        goto out;
    xparams.timeout_sec = fmin(fmax(30, 5 * xparams.timeout_sec), comm->timeout_sec);
    /* the same order on every rank: creation is collective; after each one the ranks
     * agree whether all of them have it, and stop at the first that some lack */
    for (int i = 0; i < nextra; i++) {
        bootstrap_stats_t st;
        int32_t all_ok;
        double dt;
        t = now_mono();
        s = split ? symcoll_comm_split(comm, 0, rank, &xparams, &extra[xdone])
                  : symcoll_comm_create(&xparams, &extra[xdone]);
        dt = now_mono() - t;
        all_ok = s == SYMCOLL_OK;
        if (s != SYMCOLL_OK) {
            fprintf(stderr, "scale_setup: rank %d: extra communicator %d: %s\n", rank, i,
                    symcoll_status_string(s));
            m[M_XFAILED] = 1;
        }
        if (symcoll_allreduce(&all_ok, &all_ok, 1, SYMCOLL_INT32, SYMCOLL_MIN, comm, NULL) !=
            SYMCOLL_OK)
            goto out_extra;
        if (!all_ok) {
            /* some ranks lack it: a destroy would wait for them */
            if (s == SYMCOLL_OK) {
                symcoll_comm_abort(extra[xdone]);
                symcoll_comm_destroy(extra[xdone]);
            }
            break;
        }
        m[M_XCREATE_S] += dt;
        m[M_XCREATE_MAX_S] = fmax(m[M_XCREATE_MAX_S], dt);
        bootstrap_stats(extra[xdone]->bootstrap, &st);
        m[M_XBYTES] += (double)(st.tcp_bytes_sent + st.tcp_bytes_recv);
        m[M_XCONNS] += st.tcp_conns;
        m[M_XEPS] += ucx_num_endpoints(extra[xdone]->ucx);
        xdone++;
    }
    m[M_XDONE] = xdone;
    if (xdone > 0) {
        m[M_XCREATE_S] /= xdone;
        m[M_XBYTES] /= xdone;
        m[M_XCONNS] /= xdone;
        m[M_XEPS] /= xdone;
    }
    sample(comm, m, PH_EXTRA);

    if (verbose) {
        printf("rank %d:", rank);
        for (int k = 0; k < M_LAST; k++)
            printf(" %.6g", m[k]);
        printf("\n");
        fflush(stdout);
    }
    all = malloc((size_t)n * M_LAST * sizeof(*all));
    if (!all) {
        fprintf(stderr, "scale_setup: out of memory\n");
        goto out_extra;
    }
    s = symcoll_allgather(m, all, M_LAST, SYMCOLL_FLOAT64, comm, NULL);
    if (s != SYMCOLL_OK) {
        fprintf(stderr, "scale_setup: rank %d: symcoll_allgather: %s\n", rank,
                symcoll_status_string(s));
        goto out_extra;
    }
    rc = 0;
    for (int r = 0; r < n; r++)
        if (all[(size_t)r * M_LAST + M_WRONG] != 0)
            rc = 1;
    if (rc == 0 && xdone < nextra)
        rc = 3;
    if (rank == 0) {
        report(all, n, xdone, nextra, label, bootstrap_describe(comm->bootstrap));
        fflush(stdout);
    }

out_extra:
    for (int i = 0; i < xdone; i++) {
        s = symcoll_comm_destroy(extra[i]);
        if (s != SYMCOLL_OK) {
            fprintf(stderr, "scale_setup: symcoll_comm_destroy: %s\n",
                    symcoll_status_string(s));
            rc = 2;
        }
    }
out:
    free(all);
    if (rc == 2) /* peers may be out of step: do not wait for them */
        symcoll_comm_abort(comm);
    s = symcoll_comm_destroy(comm);
    if (s != SYMCOLL_OK) {
        fprintf(stderr, "scale_setup: symcoll_comm_destroy: %s\n", symcoll_status_string(s));
        rc = 2;
    }
    return rc;
}
