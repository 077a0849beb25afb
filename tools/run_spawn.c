/* symcoll_run's ranks: forking each with its environment, binding and standard streams,
 * signalling the job, and what their wait statuses mean. */
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

void signal_job(int sig)
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

void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(buf, len, "ended with wait status 0x%x", status);
}

bool status_failed(int status)
{
    return !WIFEXITED(status) || WEXITSTATUS(status);
}

int status_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* A rank's standard streams: a descriptor to put there, or one of these. */
enum { CHILD_FD_KEEP = -1, CHILD_FD_NULL = -2 };
typedef struct child_io {
    int in, out, err;
} child_io_t;

/* What failed in a child before exec, sent with errno through its error pipe. */
enum { CHILD_SETUP, CHILD_BIND, CHILD_EXEC };

void (*orig_sigttin)(int); /* the launcher's inherited disposition, for the ranks */

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
    /* rank 0 keeps the launcher's listening socket across exec; the others lose it (and
     * any SYMCOLL_LISTEN_FD of the launcher's own environment) */
    if (rank == 0 && env->listen_fd >= 0) {
        snprintf(buf, sizeof(buf), "%d", env->listen_fd);
        if (fcntl(env->listen_fd, F_SETFD, 0) || setenv("SYMCOLL_LISTEN_FD", buf, 1))
            goto fail;
    } else if (unsetenv("SYMCOLL_LISTEN_FD")) {
        goto fail;
    }
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
int start_rank(const run_opts_t *o, int r, const job_env_t *env)
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
