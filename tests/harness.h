/* Multi-rank test harness: runs a test body in N forked processes that find each
 * other through the real built-in bootstrap (SYMCOLL_RANK, SYMCOLL_NRANKS,
 * SYMCOLL_ADDR and SYMCOLL_COOKIE are set in each), optionally split into simulated
 * nodes (SYMCOLL_HOST_ID "simnode-K"). */
#ifndef SYMCOLL_TESTS_HARNESS_H
#define SYMCOLL_TESTS_HARNESS_H

#include "symcoll.h"

typedef void (*harness_body_t)(int rank, int nranks, void *arg);

/* Forks nranks processes (ranks are spread over nnodes simulated nodes in blocks
 * when nnodes > 1), runs body in each and waits. Returns 0 iff every rank exited 0
 * within timeout_sec; otherwise prints which rank failed and how (exit code, signal
 * or timeout) and kills the others. Inside body use ck_assert* checks or
 * harness_fail(); a body that returns counts as success. */
int harness_run(int nranks, int nnodes, double timeout_sec, harness_body_t body, void *arg);

/* symcoll_comm_create(NULL) from the harness environment; on failure ends the rank
 * with a message naming the status. */
symcoll_comm_h harness_comm_create(void);

/* Ends this rank with a failure message (printf format). */
void harness_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* For a rank that is to be killed: forks; in the child (the rank from now on) returns
 * true; in the parent waits for the child, ends the rank with a failure unless the
 * child died by SIGKILL, and returns false (the parent then returns from its body). */
int harness_fork_victim(void);
/* Number of open file descriptors of this process (from /proc/self/fd). */
int harness_count_fds(void);
/* Resident memory of this process in KiB (VmRSS of /proc/self/status, after returning
 * the allocator's free memory to the system); -1 if unknown. */
long harness_rss_kib(void);

/* Simulated node of a rank under harness_run(nranks, nnodes, ...). */
int harness_node_of(int rank, int nranks, int nnodes);

/* Runs a Check suite in fork mode (each test in its own process, with its timeout),
 * prints the results and returns the exit status for main(). */
struct Suite;
int harness_main(struct Suite *suite);

#endif
