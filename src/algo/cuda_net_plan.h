/* The order of the staging pipeline of CUDA memory across nodes (algo/cuda_net.c): which
 * stream commands a call queues, as a pure function, so that tests can run the protocol
 * without a GPU. */
#ifndef SYMCOLL_ALGO_CUDA_NET_PLAN_H
#define SYMCOLL_ALGO_CUDA_NET_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "symcoll.h"

/* Host staging chunks in flight: 2 x lanes + 1 (one chunk crossing the nodes per lane,
 * as many being copied in or out around them, and one spare). */
#define CNET_LANES_MAX 15
#define CNET_SLOTS_MAX (2 * CNET_LANES_MAX + 1)

static inline int cnet_nslots(int lanes)
{
    return 2 * lanes + 1;
}

/* Host-mapped words, one per slot: written by the stream (ready, freed) or by the
 * lanes (done). A word holds the low 32 bits of g + 1 for the last chunk g. */
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
 * nslots). The lane that moves chunk k of a call across the nodes is k mod lanes. */
static inline int cnet_slot(uint64_t g, int nslots)
{
    return (int)(g % (uint64_t)nslots);
}

/* a reached b, comparing 32-bit words the way CU_STREAM_WAIT_VALUE_GEQ does */
static inline bool cnet_reached(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}

/* Calls fn for every stream command of a call whose chunks are first .. first+n-1, with
 * nslots staging slots, in stream order; stops at the first status fn returns that is
 * not SYMCOLL_OK. */
typedef symcoll_status_t (*cnet_cmd_fn_t)(void *arg, const cnet_cmd_t *cmd);
symcoll_status_t cnet_plan(uint64_t first, uint64_t nchunks, int nslots, cnet_cmd_fn_t fn,
                           void *arg);

#endif
