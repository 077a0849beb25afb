/* The staging pipeline of CUDA memory across nodes (algo/cuda_net/cuda_net_int.h) without CUDA,
 * so that tests can run it without a GPU: which stream commands a call queues (a pure
 * function), and the channels' queue of operations. */
#ifndef SYMCOLL_ALGO_CUDA_NET_PLAN_H
#define SYMCOLL_ALGO_CUDA_NET_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "symcoll.h"

/* Host staging chunks in flight: 2 x channels + 1 (one chunk crossing the nodes per channel,
 * as many being copied in or out around them, and one spare). */
#define CNET_CHANNELS_MAX 15
#define CNET_SLOTS_MAX (2 * CNET_CHANNELS_MAX + 1)

static inline int cnet_nslots(int channels)
{
    return 2 * channels + 1;
}

/* Host-mapped words, one per slot: written by the stream (ready, freed) or by the
 * channels (done). A word holds the low 32 bits of g + 1 for the last chunk g. */
enum { CNET_READY = 0, CNET_DONE = 1, CNET_FREED = 2, CNET_NWORDS = 3 };

typedef enum {
    CNET_CMD_WAIT,     /* wait until word[slot] reaches value (CU_STREAM_WAIT_VALUE_GEQ) */
    CNET_CMD_COPY_IN,  /* copy chunk k of the call into the slot */
    CNET_CMD_COPY_OUT, /* copy the slot into chunk k of the result */
    CNET_CMD_WRITE     /* word[slot] = value */
} cnet_cmd_kind_t;

typedef struct cnet_cmd {
    cnet_cmd_kind_t kind;
    int word; /* CNET_READY, CNET_DONE, CNET_FREED (WAIT and WRITE) */
    int slot;
    uint32_t value; /* WAIT and WRITE */
    uint64_t k;     /* chunk of the call (COPY_IN, COPY_OUT); g = first + k */
} cnet_cmd_t;

/* Slot of chunk g: chunks are numbered across calls in 64 bits, so that g mod nslots
 * never jumps (a 32-bit count would, where it wraps: 2^32 is not a multiple of an odd
 * nslots). The channel that moves chunk k of a call across the nodes is k mod channels. */
static inline int cnet_slot(uint64_t g, int nslots)
{
    return (int)(g % (uint64_t)nslots);
}

/* a reached b, comparing 32-bit words the way CU_STREAM_WAIT_VALUE_GEQ does */
static inline bool cnet_reached(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}

/* ---- the channels' queue --------------------------------------------------------------
 * The caller pushes operations; each channel takes, in order, the operations it has chunks
 * in (channel i those of more than i chunks: chunk k goes to channel k mod channels) and skips
 * the others without waiting for anything, so a stream of one-chunk calls needs channel 0 only
 * and the other channels may sleep. An operation is finished once every channel with chunks in
 * it finished it; head is the first one not finished, and an entry is reused only after
 * head passed it. Every call under the caller's mutex; end and multi_end may also be read
 * without it (cnet_sched_end, cnet_sched_multi_end), by channels polling for work. */
#define CNET_QUEUE 64 /* operations queued ahead of the channels */

typedef struct cnet_sched {
    int nchannels;
    uint64_t head;                   /* operations [0, head) finished */
    uint64_t end;                    /* operations [0, end) queued */
    uint64_t multi_end;              /* one past the last queued operation of several chunks */
    uint64_t pos[CNET_CHANNELS_MAX]; /* channel i: the next operation it looks at */
    uint64_t nchunks[CNET_QUEUE];    /* by operation % CNET_QUEUE */
    int pending[CNET_QUEUE];         /* channels still to finish it */
} cnet_sched_t;

void cnet_sched_init(cnet_sched_t *s, int nchannels);

/* Channels (re)starting: each looks at what is queued from now on. */
void cnet_sched_restart_channels(cnet_sched_t *s);

/* Operations queued and not finished. */
static inline uint64_t cnet_sched_queued(const cnet_sched_t *s)
{
    return s->end - s->head;
}

/* Queues an operation of nchunks >= 1 chunks (the caller made sure fewer than CNET_QUEUE
 * are queued); returns its number, whose entry is number % CNET_QUEUE. */
uint64_t cnet_sched_push(cnet_sched_t *s, uint64_t nchunks);

/* The next operation channel has chunks in, skipping the others: true and *op_p, or false
 * when it has nothing to do now. */
bool cnet_sched_next(cnet_sched_t *s, int channel, uint64_t *op_p);

/* Channel finished the operation cnet_sched_next gave it; returns how many operations that
 * finished (head moved by as many). */
uint64_t cnet_sched_finish(cnet_sched_t *s, int channel);

static inline uint64_t cnet_sched_end(const cnet_sched_t *s)
{
    return __atomic_load_n(&s->end, __ATOMIC_ACQUIRE);
}

static inline uint64_t cnet_sched_multi_end(const cnet_sched_t *s)
{
    return __atomic_load_n(&s->multi_end, __ATOMIC_ACQUIRE);
}

/* Calls fn for every stream command of a call whose chunks are first .. first+n-1, with
 * nslots staging slots, in stream order; stops at the first status fn returns that is
 * not SYMCOLL_OK. */
typedef symcoll_status_t (*cnet_cmd_fn_t)(void *arg, const cnet_cmd_t *cmd);
symcoll_status_t cnet_steps(uint64_t first, uint64_t nchunks, int nslots, cnet_cmd_fn_t fn,
                            void *arg);

#endif
