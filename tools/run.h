/* What the parts of symcoll_run share (tools/symcoll_run.c: the job and main;
 * run_args.c: options; run_bind.c: CPU topology and binding; run_output.c: the ranks'
 * output and rank 0's input; run_spawn.c: starting ranks). The launcher is one thread:
 * the job's state is plain globals, defined where the comment says. */
#ifndef SYMCOLL_TOOLS_RUN_H
#define SYMCOLL_TOOLS_RUN_H

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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

extern const char *prog; /* the launcher's name in messages (run_args.c) */

/* ---- options (run_args.c) ---- */

double now_sec(void); /* CLOCK_MONOTONIC, seconds */

/* Parses argv into o. Returns 0 to run, 1 if help was printed, -1 on a bad option
 * (message printed). */
int parse_args(int argc, char **argv, run_opts_t *o);

/* ---- CPU topology and binding (run_bind.c) ---- */

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

extern cpu_topo_t topo;

cpu_set_t *cpus_new(void);
void cpus_format(const cpu_set_t *set, char *buf, size_t len);
/* Decides each rank's CPUs (ranks[r].cpus, .bound_to). */
void plan_binding(const run_opts_t *o, rank_proc_t *rk);

/* ---- job state (symcoll_run.c) ---- */

extern rank_proc_t *ranks;
extern int nranks_started;
extern pid_t job_pgid;     /* process group of every rank (rank 0 leads it) */
extern sigset_t orig_mask; /* restored in the children */
extern int sig_fd;         /* signalfd of the signals the launcher handles */
extern int sig_sender;     /* the process that sent the last signal wait_events returned
                              (0: the kernel, e.g. a terminal's Ctrl-C) */
extern bool stopping;      /* the job is being stopped (failure, timeout, signal) */

/* Node of a rank when nranks ranks are split in blocks over nnodes nodes, the first
 * nranks % nnodes nodes holding one rank more; also the node's first rank and size. */
int node_of_rank(int rank, int nranks, int nnodes, int *first_p, int *size_p);

/* ---- rank output (--tag-output) and rank 0's input (run_output.c) ---- */

/* One output stream of one rank: the read end of its pipe, and the part of a line read so
 * far. streams[2 r] is rank r's stdout, streams[2 r + 1] its stderr. */
typedef struct out_stream {
    int fd; /* -1: closed (end of file) or never opened */
    size_t len;
    char buf[RUN_LINE_MAX];
} out_stream_t;

extern out_stream_t *streams;   /* NULL without --tag-output */
extern struct pollfd *poll_fds; /* room for every stream, stdin, rank 0's stdin, signals */
extern int *poll_what;

/* A terminal on stdin, passed on to rank 0 through a pipe while the launcher is in the
 * foreground (the ranks' own process group may not read it). */
typedef struct run_fwd {
    int fd; /* write end of rank 0's stdin; -1: none or closed */
    size_t len, off;
    char buf[4096];
} run_fwd_t;
extern run_fwd_t fwd;

void fwd_close(void);
/* Polls the signals, the ranks' output and rank 0's input until a signal comes (returns
 * it) or deadline (<0: none) passes (returns 0). Output and input are handled here. */
int wait_events(double deadline);
/* Reads the ranks' output to its end once they are gone. A writer outside the job's group
 * (a daemon a rank started) is waited for while it writes, RUN_DRAIN_SEC after its last
 * output and ten times that in all at most. */
void drain_streams(void);

/* ---- starting ranks and their statuses (run_spawn.c) ---- */

/* What the launcher hands every child. */
typedef struct job_env {
    const char *addr, *cookie, *host_name, *job_id;
    /* rank 0's rendezvous socket, listening on addr; close-on-exec; -1: none (a job of
     * one rank, whose bootstrap never listens) */
    int listen_fd;
    bool forward_stdin; /* rank 0's stdin is a pipe from the launcher (stdin is a terminal) */
} job_env_t;

extern void (*orig_sigttin)(int); /* the launcher's inherited disposition, for the ranks */

void signal_job(int sig);
void describe_status(int status, char *buf, size_t len);
bool status_failed(int status);
int status_exit_code(int status);
/* Fork rank r. Returns 0, or the errno of a failed fork/exec (already reported). */
int start_rank(const run_opts_t *o, int r, const job_env_t *env);

#endif
