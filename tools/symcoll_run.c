/* symcoll_run: starts N local ranks of a program with the built-in bootstrap's variables
 * set, binds each to a core (or a NUMA domain), optionally splits them into simulated nodes
 * and tags their output lines; watches them, and stops them all when one fails, on a
 * timeout or on SIGINT/SIGTERM. Uses no library: the CPU topology comes from sysfs. This
 * file holds the job and main; tools/run.h lists the other parts. */
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

/* Node of a rank when nranks ranks are split in blocks over nnodes nodes, the first
 * nranks % nnodes nodes holding one rank more; also the node's first rank and size. */
int node_of_rank(int rank, int nranks, int nnodes, int *first_p, int *size_p)
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

/* A socket listening on a free TCP port of the loopback, for rank 0's rendezvous; its
 * port in *port_p. The kernel picks an unused ephemeral port. Rank 0 inherits the socket
 * itself (SYMCOLL_LISTEN_FD), so no other process can take the port before rank 0 listens,
 * and the other ranks' connections wait in its backlog until rank 0 accepts them. */
static int open_listener(int *port_p)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd, err, one = 1;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* as rank 0's own listeners: the connections it accepts inherit the option, and a
     * later communicator of the job binds the port again while they are open */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(fd, SOMAXCONN) &&
        !getsockname(fd, (struct sockaddr *)&sa, &len)) {
        *port_p = ntohs(sa.sin_port);
        return fd;
    }
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* ---- job state ------------------------------------------------------------ */

rank_proc_t *ranks;
int nranks_started;
pid_t job_pgid;     /* process group of every rank (rank 0 leads it) */
sigset_t orig_mask; /* restored in the children */
int sig_fd = -1;    /* signalfd of the signals the launcher handles */
int sig_sender;
bool stopping;               /* the job is being stopped (failure, timeout, signal) */
static double stop_time;     /* when stopping began */
static int stop_sender = -1; /* who sent the signal that began it (-1: none) */
static double kill_at = -1;  /* when the stopping ranks get SIGKILL (<0: done or not yet) */

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
    int port = 0, listen_fd, first_failed = -1, running, exit_code = 0, forwarded = 0;
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
    listen_fd = open_listener(&port);
    if (listen_fd < 0) {
        fprintf(stderr, "%s: no free TCP port on 127.0.0.1: %s\n", prog, strerror(errno));
        return 1;
    }
    if (o.nranks == 1) {
        /* a single rank never listens: nothing to hand it */
        close(listen_fd);
        listen_fd = -1;
    }
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    if (gethostname(host, sizeof(host)))
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    env = (job_env_t){.addr = addr,
                      .cookie = cookie,
                      .host_name = host,
                      .job_id = jobhex,
                      .listen_fd = listen_fd,
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
    if (listen_fd >= 0)
        close(listen_fd); /* rank 0 has its copy */
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
                stop_sender = sig_sender;
            } else if (now_sec() - stop_time >= 0.5 &&
                       !(sig_sender != 0 && sig_sender == stop_sender &&
                         now_sec() - stop_time < 5)) {
                /* asked again while stopping: no more grace. The same request delivered
                 * twice is not: timeout(1) signals its child, then its group, so the second
                 * copy comes from the same process at once (or, on a loaded machine, up to
                 * seconds later: hence the 5 s for one sender; within 0.5 s, any sender). */
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
