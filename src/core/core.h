/* Internal view of a communicator and helpers shared by every layer. */
#ifndef SYMCOLL_CORE_CORE_H
#define SYMCOLL_CORE_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "symcoll_config.h"
#include "symcoll.h"
#include "core/config.h"
#include "core/log.h"

struct bootstrap;
struct topo;
struct pool;
struct ucx_ctx;
struct algo_ctx;

#define COMM_MAGIC 0x53594d43434f4d4dULL /* "SYMCCOMM" */

struct symcoll_comm {
    uint64_t magic;
    int rank;
    int nranks;
    config_t config;                      /* read once at creation */
    double timeout_sec;                   /* deadline of every wait */
    int cuda_device;                      /* -1: not set */
    _Atomic int aborted;                  /* set by symcoll_comm_abort, from any thread */
    pthread_mutex_t lock;                 /* serialises collective calls on this comm */
    struct bootstrap *bootstrap;          /* out-of-band exchange; also the local fd channel */
    struct topo *topo;                    /* nodes, local ranks, leaders */
    struct pool *pools[SYMCOLL_MEM_LAST]; /* created lazily on first use */
    struct ucx_ctx *ucx;                  /* NULL on a single-node communicator */
    uint64_t coll_seq;                    /* collective sequence number */
    struct algo_ctx *algo;                /* every algorithm's state (src/algo/ctx.h) */
};

typedef struct symcoll_comm comm_t;

/* Monotonic clock, seconds. */
static inline double time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A deadline and the abort flag checked by every wait loop. */
typedef struct deadline {
    double end;
    const _Atomic int *aborted; /* may be NULL */
} deadline_t;

static inline deadline_t deadline_make(double timeout_sec, const _Atomic int *aborted)
{
    deadline_t d = {time_now() + timeout_sec, aborted};
    return d;
}

/* SYMCOLL_OK while the wait may go on; SYMCOLL_ERR_ABORTED / SYMCOLL_ERR_TIMED_OUT to stop. */
static inline symcoll_status_t deadline_check(const deadline_t *d)
{
    if (d->aborted && atomic_load_explicit(d->aborted, memory_order_relaxed))
        return SYMCOLL_ERR_ABORTED;
    if (time_now() > d->end)
        return SYMCOLL_ERR_TIMED_OUT;
    return SYMCOLL_OK;
}

/* Polite spin: a few hundred pause instructions, then sched_yield. */
void core_spin_pause(unsigned *iter);

#define SC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SC_LIKELY(x) __builtin_expect(!!(x), 1)
#define SC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
