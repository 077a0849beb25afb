/* Multi-rank test harness: forks the ranks, gives each the bootstrap environment,
 * waits for them with a deadline and names the rank that failed. */
#define _GNU_SOURCE
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_LSAN 1
#endif
#endif
#ifdef HARNESS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static int harness_rank = -1;

static double harness_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void harness_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[rank %d] FAIL: ", harness_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

int harness_fork_victim(void)
{
    int ws;
    pid_t pid = fork();

    if (pid < 0)
        harness_fail("fork: %s", strerror(errno));
    if (pid == 0)
        return 1;
    if (waitpid(pid, &ws, 0) != pid)
        harness_fail("waitpid: %s", strerror(errno));
    if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
        harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
    return 0;
}

long harness_rss_kib(void)
{
    FILE *f;
    char line[256];
    long kib = -1;

    /* freed heap goes back to the system first, so that the figure is the memory in use
     * (a leak stays), not how the allocator's arenas happen to be fragmented */
    malloc_trim(0);
    f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int harness_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream itself */
}

int harness_node_of(int rank, int nranks, int nnodes)
{
    if (nnodes <= 1)
        return 0;
    return (int)((long)rank * nnodes / nranks);
}

/* A port nobody listens on now: bind port 0 and read what the kernel chose. Another
 * process could take it before rank 0 binds; rare enough for tests. */
static int harness_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
        !getsockname(fd, (struct sockaddr *)&sa, &sl))
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

symcoll_comm_h harness_comm_create(void)
{
    symcoll_comm_h comm = NULL;
    symcoll_status_t st = symcoll_comm_create(NULL, &comm);
    if (st != SYMCOLL_OK)
        harness_fail("symcoll_comm_create: %s", symcoll_status_string(st));
    return comm;
}

static void harness_describe(int rank, int wstatus)
{
    if (WIFEXITED(wstatus))
        fprintf(stderr, "harness: rank %d exited with code %d\n", rank, WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        fprintf(stderr, "harness: rank %d was killed by signal %d (%s)\n", rank,
                WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
    else
        fprintf(stderr, "harness: rank %d ended with wait status 0x%x\n", rank, wstatus);
}

static void harness_child(int rank, int nranks, int nnodes, int port, pid_t parent,
                          harness_body_t body, void *arg)
{
    char buf[64];

    /* die with the harness, whatever kills it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(99);
    harness_rank = rank;
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("SYMCOLL_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", nranks);
    setenv("SYMCOLL_NRANKS", buf, 1);
    snprintf(buf, sizeof(buf), "127.0.0.1:%d", port);
    setenv("SYMCOLL_ADDR", buf, 1);
    if (nnodes > 1) {
        snprintf(buf, sizeof(buf), "simnode-%d", harness_node_of(rank, nranks, nnodes));
        setenv("SYMCOLL_HOST_ID", buf, 1);
    } else {
        unsetenv("SYMCOLL_HOST_ID");
    }
    body(rank, nranks, arg);
    fflush(stdout);
    fflush(stderr);
#ifdef HARNESS_LSAN
    /* _exit skips LeakSanitizer's check at exit: run it here, so that memory a rank's
     * body (and the library under it) left behind fails the test */
    if (__lsan_do_recoverable_leak_check())
        _exit(1);
#endif
    _exit(0);
}

int harness_run(int nranks, int nnodes, double timeout_sec, harness_body_t body, void *arg)
{
    pid_t *pids;
    pid_t pgid = 0, parent = getpid();
    int port, failed = 0, left, i;
    double end;
    unsigned long long cookie = 0;
    char cbuf[32];

    if (nranks < 1 || nnodes < 1 || nnodes > nranks || !body || !(timeout_sec > 0)) {
        fprintf(stderr, "harness: invalid arguments\n");
        return -1;
    }
    port = harness_free_port();
    if (port < 0) {
        fprintf(stderr, "harness: no free TCP port: %s\n", strerror(errno));
        return -1;
    }
    /* a fresh secret per run, as symcoll_run gives one */
    while (!cookie)
        if (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
            cookie = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
    snprintf(cbuf, sizeof(cbuf), "%016llx", cookie);
    pids = calloc((size_t)nranks, sizeof(*pids));
    if (!pids)
        return -1;
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < nranks; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "harness: fork of rank %d failed: %s\n", i, strerror(errno));
            failed = 1;
            break;
        }
        if (pid == 0) {
            /* the ranks share one process group so a failure kills them all (and
             * anything they started) with one signal */
            setpgid(0, pgid);
            setenv("SYMCOLL_COOKIE", cbuf, 1);
            harness_child(i, nranks, nnodes, port, parent, body, arg);
        }
        if (!pgid)
            pgid = pid;
        setpgid(pid, pgid);
        pids[i] = pid;
    }
    left = i;
    end = harness_now() + timeout_sec;
    while (left > 0 && !failed) {
        int wstatus;
        pid_t p = waitpid(-1, &wstatus, WNOHANG);
        if (p > 0) {
            int r = -1;
            for (int k = 0; k < nranks; k++)
                if (pids[k] == p)
                    r = k;
            if (r < 0)
                continue;
            pids[r] = 0;
            left--;
            if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
                harness_describe(r, wstatus);
                failed = 1;
            }
            continue;
        }
        if (p < 0 && errno != EINTR) {
            fprintf(stderr, "harness: waitpid failed: %s\n", strerror(errno));
            failed = 1;
            break;
        }
        if (harness_now() > end) {
            fprintf(stderr, "harness: timeout after %.1f s; still running:", timeout_sec);
            for (int k = 0; k < nranks; k++)
                if (pids[k])
                    fprintf(stderr, " rank %d", k);
            fprintf(stderr, "\n");
            failed = 1;
            break;
        }
        usleep(2000);
    }
    if (failed && pgid > 0) {
        kill(-pgid, SIGKILL);
        for (int k = 0; k < nranks; k++)
            if (pids[k] > 0)
                waitpid(pids[k], NULL, 0);
    }
    free(pids);
    return failed ? 1 : 0;
}

int harness_main(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
