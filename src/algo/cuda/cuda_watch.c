/* The watcher of a node's CUDA kernels: a thread per communicator that sees a local peer
 * process die, which the kernels cannot, and raises their abort word. */
/*
 * The kernels cannot see a peer process die: a watcher thread per communicator (while the
 * CUDA pool exists, with more than one local rank) waits on the local peers' pidfds and
 * looks at their /proc state every WATCH_PERIOD_MS (zombies too), and raises the abort
 * word with CUDA_KERR_PEER when one is gone.
 */
#define _GNU_SOURCE /* syscall */
#include "algo/cuda/cuda_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "topo/topo.h"

/* the watcher's look at /proc when no pidfd tells it at once */
#define WATCH_PERIOD_MS 100

static int pidfd_open_nothrow(int pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void *watch_main(void *arg)
{
    cuda_watch_t *w = arg;
    bool gone[CUDA_AR_MAX_RANKS] = {false};

    for (;;) {
        struct pollfd pf[CUDA_AR_MAX_RANKS + 1];
        int who[CUDA_AR_MAX_RANKS + 1];
        int nf = 0;

        pf[nf++] = (struct pollfd){.fd = w->stop[0], .events = POLLIN};
        for (int r = 0; r < w->n; r++) {
            if (r != w->me && !gone[r] && w->pidfd[r] >= 0) {
                who[nf] = r;
                pf[nf++] = (struct pollfd){.fd = w->pidfd[r], .events = POLLIN};
            }
        }
        if (poll(pf, (nfds_t)nf, WATCH_PERIOD_MS) < 0) {
            if (errno != EINTR)
                usleep(WATCH_PERIOD_MS * 1000);
            continue;
        }
        if (pf[0].revents)
            return NULL;
        for (int r = 0; r < w->n; r++) {
            if (r == w->me || gone[r])
                continue;
            if (topo_proc_alive(w->pid[r], w->start[r])) {
                /* a readable pidfd of a process /proc still shows running (its leader
                 * thread ended, say): the periodic look decides, not a busy poll */
                for (int k = 1; k < nf; k++) {
                    if (who[k] == r && pf[k].revents) {
                        close(w->pidfd[r]);
                        w->pidfd[r] = -1;
                    }
                }
                continue;
            }
            gone[r] = true;
            int none = 0;
            atomic_compare_exchange_strong(&w->dead, &none, r + 1);
            /* info only: a peer may also exit normally after its destroy, before this
             * rank's; a call that this stops says so at error level */
            log_info("local rank %d (rank %d, pid %d) exited or was killed: the CUDA kernels "
                     "of this communicator stop waiting for it",
                     r, w->rank[r], w->pid[r]);
            cuda_words_raise(w->words, CUDA_KERR_PEER);
        }
    }
}

void algo_cuda_watch_stop(cuda_watch_t *w)
{
    if (w->running) {
        char c = 0;
        if (write(w->stop[1], &c, 1) != 1) {
            /* closing the write end wakes the poll as well */
        }
        close(w->stop[1]);
        w->stop[1] = -1;
        pthread_join(w->thread, NULL);
        w->running = false;
        close(w->stop[0]);
    }
    for (int r = 0; r < w->n; r++)
        if (w->pidfd[r] >= 0)
            close(w->pidfd[r]);
    w->n = 0;
}

/* Starts the watcher of comm's local peers (nothing with one local rank). */
symcoll_status_t algo_cuda_watch_start(comm_t *comm, cuda_watch_t *w, cuda_words_t *words,
                                       int me, int n)
{
    int err;

    w->n = n;
    w->me = me;
    w->words = words;
    atomic_init(&w->dead, 0);
    for (int r = 0; r < n; r++) {
        int g = comm->topo->local_ranks[r];
        w->rank[r] = g;
        w->pid[r] = comm->topo->info[g].pid;
        w->start[r] = comm->topo->info[g].start_time;
        w->pidfd[r] = r == me ? -1 : pidfd_open_nothrow(w->pid[r]);
        /* the process the pidfd refers to is the peer only if the peer still runs now
         * (not a reused pid); if not, the first look at /proc says it is gone */
    }
    if (n < 2)
        return SYMCOLL_OK;
    if (pipe2(w->stop, O_CLOEXEC)) {
        log_error("CUDA all-reduce: pipe for the peer watcher: %s", strerror(errno));
        return SYMCOLL_ERR_SYSTEM;
    }
    err = pthread_create(&w->thread, NULL, watch_main, w);
    if (err) {
        log_error("CUDA all-reduce: cannot start the peer watcher thread: %s", strerror(err));
        close(w->stop[0]);
        close(w->stop[1]);
        return SYMCOLL_ERR_SYSTEM;
    }
    w->running = true;
    return SYMCOLL_OK;
}
