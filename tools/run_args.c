/* symcoll_run's options: the help text and the parser. */
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

const char *prog = "symcoll_run";

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

double now_sec(void)
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

int parse_args(int argc, char **argv, run_opts_t *o)
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
