/* symcoll_run's event loop: the ranks' output (tagged per line with --tag-output), rank
 * 0's input from a terminal, and the signals. */
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

/* ---- rank output (--tag-output) and rank 0's input ------------------------ */

out_stream_t *streams;   /* NULL without --tag-output */
struct pollfd *poll_fds; /* room for every stream, stdin, rank 0's stdin, signals */
int *poll_what;
static bool out_broken[3]; /* writing to fd 1 or 2 failed (e.g. a closed pipe): drop */

run_fwd_t fwd = {.fd = -1};

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

void fwd_close(void)
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
int wait_events(double deadline)
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
                if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                    sig = (int)si.ssi_signo;
                    sig_sender = (int)si.ssi_pid;
                }
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
void drain_streams(void)
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
