/* symcoll_run: starts N local ranks of a program with the built-in bootstrap's variables
 * set (optionally split into simulated nodes), watches them, and stops them all when one
 * fails, on a timeout or on SIGINT/SIGTERM. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
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

typedef struct rank_proc {
    pid_t pid;
    int node;
    bool done;  /* exited; kept as a zombie until the end so its pid is never reused */
    int status; /* wait status once done */
} rank_proc_t;

typedef struct run_opts {
    int nranks;
    int nnodes;         /* 0: no simulated nodes (SYMCOLL_HOST_ID left as it is) */
    double timeout_sec; /* 0: none */
    double grace_sec;
    bool verbose;
    char **argv; /* PROGRAM ARGS... */
} run_opts_t;

static const char *prog = "symcoll_run";

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s -n N [--nodes K] [--timeout S] [--grace S] [-v] PROGRAM [ARGS...]\n"
            "\n"
            "Start N ranks of PROGRAM on this machine for symcoll's built-in bootstrap:\n"
            "each rank gets SYMCOLL_RANK, SYMCOLL_NRANKS, SYMCOLL_ADDR=127.0.0.1:PORT (rank 0\n"
            "listens there) and SYMCOLL_COOKIE (random per job); for programs that pick a\n"
            "GPU per rank, also SYMCOLL_LOCAL_RANK and SYMCOLL_LOCAL_SIZE (rank and number\n"
            "of ranks on its node; the library itself does not read them).\n"
            "\n"
            "Options:\n"
            "  -n, --nranks N   number of ranks (1..%d)\n"
            "  -N, --nodes K    split the ranks into K simulated nodes, in blocks (ranks\n"
            "                   0..N/K-1 on node 0, ...; the first N%%K nodes get one more);\n"
            "                   each node gets its own SYMCOLL_HOST_ID, so inter-node code\n"
            "                   paths run on one machine\n"
            "  -t, --timeout S  stop every rank and fail after S seconds (default: none)\n"
            "      --grace S    seconds between SIGTERM and SIGKILL when stopping ranks\n"
            "                   (default %.0f)\n"
            "  -v, --verbose    print each rank's pid and node\n"
            "  -h, --help       print this help\n"
            "\n"
            "Ranks' stdin is /dev/null; stdout and stderr are shared. If a rank exits with a\n"
            "non-zero status or is killed by a signal, the others are stopped (SIGTERM, then\n"
            "SIGKILL after the grace period) and %s exits non-zero: with the rank's\n"
            "status, 128+signal for a signal, %d on a timeout, %d if PROGRAM cannot be\n"
            "executed. SIGINT, SIGTERM and SIGHUP are forwarded to the ranks. When the job\n"
            "ends, whatever the ranks left running in its process group is killed.\n",
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

static int parse_args(int argc, char **argv, run_opts_t *o)
{
    enum { OPT_GRACE = 256 };
    static const struct option longopts[] = {{"nranks", required_argument, NULL, 'n'},
                                             {"np", required_argument, NULL, 'n'},
                                             {"nodes", required_argument, NULL, 'N'},
                                             {"timeout", required_argument, NULL, 't'},
                                             {"grace", required_argument, NULL, OPT_GRACE},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;

    memset(o, 0, sizeof(*o));
    o->grace_sec = RUN_DEFAULT_GRACE;
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
            if (parse_int(optarg, 1, RUN_MAX_RANKS, &o->nnodes)) {
                fprintf(stderr, "%s: invalid number of nodes '%s'\n", prog, optarg);
                return -1;
            }
            break;
        case 't':
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

/* ---- job state ------------------------------------------------------------ */

static rank_proc_t *ranks;
static int nranks_started;
static pid_t job_pgid;      /* process group of every rank (rank 0 leads it) */
static sigset_t orig_mask;  /* restored in the children */
static bool stopping;       /* the job is being stopped (failure, timeout, signal) */
static double stop_time;    /* when stopping began */
static double kill_at = -1; /* when the stopping ranks get SIGKILL (<0: done or not yet) */

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

/* Runs in the child between fork and exec: only async-signal-safe calls, except setenv,
 * which is safe here because the launcher is single-threaded. On failure writes errno to
 * errfd (close-on-exec, so a successful exec closes it with nothing written). */
static void child_exec(const run_opts_t *o, int rank, pid_t pgid, pid_t parent,
                       const char *addr, const char *cookie, const char *host_name,
                       const char *job_id, int errfd)
{
    char buf[64];
    int err, fd, node = 0, first = 0, size = o->nranks;

    if (setpgid(0, pgid))
        goto fail;
    /* die with the launcher, even if it is SIGKILLed */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL))
        goto fail;
    if (getppid() != parent) {
        errno = ESRCH; /* the launcher is already gone */
        goto fail;
    }
    fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, STDIN_FILENO) < 0)
        goto fail;
    if (fd != STDIN_FILENO)
        close(fd);

    snprintf(buf, sizeof(buf), "%d", rank);
    if (setenv("SYMCOLL_RANK", buf, 1))
        goto fail;
    snprintf(buf, sizeof(buf), "%d", o->nranks);
    if (setenv("SYMCOLL_NRANKS", buf, 1) || setenv("SYMCOLL_ADDR", addr, 1) ||
        setenv("SYMCOLL_COOKIE", cookie, 1))
        goto fail;
    if (o->nnodes) {
        char host_id[512];
        node = node_of_rank(rank, o->nranks, o->nnodes, &first, &size);
        snprintf(host_id, sizeof(host_id), "%s-simnode%d-%s", host_name, node, job_id);
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
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
    execvp(o->argv[0], o->argv);
fail:
    err = errno;
    if (write(errfd, &err, sizeof(err)) < 0) {
        /* nothing left to report through */
    }
    _exit(RUN_EXIT_EXEC);
}

/* Fork rank r. Returns 0, or the errno of a failed fork/exec (already reported). */
static int start_rank(const run_opts_t *o, int r, const char *addr, const char *cookie,
                      const char *host_name, const char *job_id)
{
    int pipefd[2], err = 0;
    pid_t pid, parent = getpid();
    ssize_t n;

    if (pipe2(pipefd, O_CLOEXEC)) {
        fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
        return errno;
    }
    pid = fork();
    if (pid < 0) {
        err = errno;
        fprintf(stderr, "%s: fork of rank %d: %s\n", prog, r, strerror(err));
        close(pipefd[0]);
        close(pipefd[1]);
        return err;
    }
    if (pid == 0) {
        close(pipefd[0]);
        child_exec(o, r, r == 0 ? 0 : job_pgid, parent, addr, cookie, host_name, job_id,
                   pipefd[1]);
    }
    close(pipefd[1]);
    /* set the group from both sides, so it holds whichever runs first */
    if (r == 0)
        job_pgid = pid;
    setpgid(pid, job_pgid);
    ranks[r].pid = pid;
    ranks[r].node = o->nnodes ? node_of_rank(r, o->nranks, o->nnodes, NULL, NULL) : 0;
    nranks_started = r + 1;

    do {
        n = read(pipefd[0], &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof(err)) {
        fprintf(stderr, "%s: cannot execute '%s' (rank %d): %s\n", prog, o->argv[0], r,
                strerror(err));
        return err ? err : EINVAL;
    }
    if (o->verbose) {
        if (o->nnodes)
            fprintf(stderr, "%s: rank %d pid %d node %d\n", prog, r, (int)pid, ranks[r].node);
        else
            fprintf(stderr, "%s: rank %d pid %d\n", prog, r, (int)pid);
    }
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

/* Wait for the next signal (SIGCHLD or a forwarded one) until deadline (<0: forever).
 * Returns the signal number, or 0 on timeout. */
static int wait_signal(const sigset_t *set, double deadline)
{
    struct timespec ts;
    int sig;

    for (;;) {
        if (deadline < 0) {
            sig = sigwaitinfo(set, NULL);
        } else {
            double left = deadline - now_sec();
            if (left <= 0)
                return 0;
            /* wake at least every 100 ms: a rank stopped by a signal does not raise
             * SIGCHLD for WEXITED, and this keeps the loop honest on a loaded machine */
            if (left > 0.1)
                left = 0.1;
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            sig = sigtimedwait(set, NULL, &ts);
            if (sig < 0 && errno == EAGAIN)
                return SIGCHLD; /* periodic re-check */
        }
        if (sig > 0)
            return sig;
        if (errno != EINTR)
            return SIGCHLD;
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

int main(int argc, char **argv)
{
    run_opts_t o;
    sigset_t set;
    uint8_t rnd[16];
    char cookie[17], jobhex[17], addr[64], host[256], list[256];
    int port, first_failed = -1, running, exit_code = 0, forwarded = 0;
    bool timed_out = false;
    double deadline = -1;

    if (parse_args(argc, argv, &o))
        return RUN_EXIT_USAGE;

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

    /* orphans of the ranks come to us, so they can be reaped and waited for */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ranks = calloc((size_t)o.nranks, sizeof(*ranks));
    if (!ranks) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }

    /* Signals are taken synchronously with sigtimedwait; the children get the original
     * mask back before exec. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &orig_mask);

    for (int r = 0; r < o.nranks; r++) {
        if (start_rank(&o, r, addr, cookie, host, jobhex)) {
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
        sig = wait_signal(&set, wake);
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

    /* whatever the ranks left running in the job's group goes with the job */
    if (job_pgid > 0)
        killpg(job_pgid, SIGKILL);
    reap_all();
    reap_group();

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
    return exit_code;
}
