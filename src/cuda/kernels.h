/* Arguments of the all-reduce kernels, shared by the C glue and the CUDA sources
 * (plain C, no CUDA types), and the layout of the signal pad they synchronise through. */
#ifndef SYMCOLL_CUDA_KERNELS_H
#define SYMCOLL_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_AR_MAX_RANKS 8    /* local ranks the kernels serve */
#define CUDA_AR_MAX_BLOCKS 320 /* blocks of one launch (2 per SM on H100/H200) */

/* one-shot of small messages with flags inside the data (LL), one-shot, two-shot */
enum { CUDA_AR_ONESHOT = 0, CUDA_AR_TWOSHOT = 1, CUDA_AR_LL = 2, CUDA_AR_NALGOS = 3 };
enum { CUDA_BAR_START = 0, CUDA_BAR_END = 1, CUDA_BAR_NSLOTS = 2 };
/* Two-shot in two launches around a step across nodes (algo/cuda_net/cuda_net_hier.c,
 * hierarchical): RS pushes and reduces this rank's slice into its own results area (stage_out)
 * and returns; AG, after the step, gathers every rank's slice from the results areas. */
enum { CUDA_AR_PHASE_ALL = 0, CUDA_AR_PHASE_RS = 1, CUDA_AR_PHASE_AG = 2 };

/* Signal pad, uint32 words. Flags: written by peers, one per (algorithm, slot, block,
 * source rank). Info: a 64-bit word per (block, source rank) that a peer writes before
 * its start flag (two-shot: the pool offset + 1 of its receive buffer, 0 if it is not in
 * the pool). Counters: this rank's own epochs, one per (algorithm, slot, block); never
 * reset, so a captured graph keeps working on every replay. */
#define CUDA_PAD_FLAG(algo, slot, block, src)                                                  \
    ((((size_t)(algo)*CUDA_BAR_NSLOTS + (slot)) * CUDA_AR_MAX_BLOCKS + (block)) *              \
         CUDA_AR_MAX_RANKS +                                                                   \
     (src))
#define CUDA_PAD_NFLAGS                                                                        \
    ((size_t)CUDA_AR_NALGOS * CUDA_BAR_NSLOTS * CUDA_AR_MAX_BLOCKS * CUDA_AR_MAX_RANKS)
/* info words are 64-bit, placed after the flags (index in uint64 units from pad start) */
#define CUDA_PAD_INFO64(block, src)                                                            \
    (CUDA_PAD_NFLAGS / 2 + (size_t)(block)*CUDA_AR_MAX_RANKS + (src))
#define CUDA_PAD_COUNTER(algo, slot, block)                                                    \
    (CUDA_PAD_NFLAGS + 2 * (size_t)CUDA_AR_MAX_BLOCKS * CUDA_AR_MAX_RANKS +                    \
     (((size_t)(algo)*CUDA_BAR_NSLOTS + (slot)) * CUDA_AR_MAX_BLOCKS + (block)))
#define CUDA_PAD_WORDS                                                                         \
    (CUDA_PAD_NFLAGS + 2 * (size_t)CUDA_AR_MAX_BLOCKS * CUDA_AR_MAX_RANKS +                    \
     (size_t)CUDA_AR_NALGOS * CUDA_BAR_NSLOTS * CUDA_AR_MAX_BLOCKS)
/* After the uint32 words, byte offsets (16-byte aligned):
 * - two-shot signatures, 64 bits per (block, source rank), that a peer stores next to its
 *   info word before its start flag;
 * - call headers, 16 bytes per (parity of the call number, source rank): {signature low,
 *   call number, signature high, call number}, stored at once (each 8-byte half is
 *   single-copy atomic, so a reader that sees the call number in both halves has the
 *   whole signature) by block 0 of every launch that starts a call, whatever its
 *   algorithm; block 0 of the peers waits for it and compares;
 * - this rank's call counter (uint32, block 0's), then a "gave up" word per source rank:
 *   the CUDA_KERR_* reason a peer's kernel stopped for, never cleared (the communicator
 *   is broken from then on), so that waits for that peer end at once. */
#define CUDA_PAD_SIG2_OFF(block, src)                                                          \
    (CUDA_PAD_WORDS * 4 + ((size_t)(block)*CUDA_AR_MAX_RANKS + (src)) * 8)
#define CUDA_PAD_HDR_OFF(par, src)                                                             \
    (CUDA_PAD_SIG2_OFF(CUDA_AR_MAX_BLOCKS, 0) + ((size_t)(par)*CUDA_AR_MAX_RANKS + (src)) * 16)
#define CUDA_PAD_CALLS_OFF CUDA_PAD_HDR_OFF(2, 0)
#define CUDA_PAD_GAVEUP_OFF(src) (CUDA_PAD_CALLS_OFF + 16 + (size_t)(src)*4)
#define CUDA_PAD_BYTES (CUDA_PAD_CALLS_OFF + 16 + 4 * (size_t)CUDA_AR_MAX_RANKS)

/* Values a kernel leaves in the error word (host-mapped) when it gives up, and that the
 * abort word holds (ABORTED: symcoll_comm_abort on this rank; PEER: a local peer died). */
enum {
    CUDA_KERR_NONE = 0,
    CUDA_KERR_ABORTED = 1,
    CUDA_KERR_TIMED_OUT = 2,
    CUDA_KERR_PEER = 3,
    CUDA_KERR_MISMATCH = 4
};

/* The host-mapped words of a communicator's kernels (uint32 indices): the abort word,
 * the error word, and what a kernel that saw other arguments leaves before it raises
 * the error word: the peer's signature (two words, 8-byte aligned), the peer's local
 * rank + 1, and this rank's signature. */
enum {
    CUDA_WORD_ABORT = 0,
    CUDA_WORD_ERR = 1,
    CUDA_WORD_PEER_SIG = 4,
    CUDA_WORD_PEER = 6,
    CUDA_WORD_MY_SIG = 8,
    CUDA_WORDS = 16
};

typedef struct cuda_ar_args {
    const void *send; /* this rank's input (any device memory) */
    void *recv;       /* this rank's output; may equal send */
    size_t count;     /* elements */
    int dtype;        /* symcoll_dtype_t */
    int op;           /* symcoll_op_t */
    int rank;         /* local rank */
    int nranks;       /* local ranks (all ranks of the communicator) */
    int algo;         /* CUDA_AR_ONESHOT / _TWOSHOT / _LL */
    int phase;        /* two-shot: CUDA_AR_PHASE_* */
    int nblocks;      /* fixed per algorithm for the life of the pool */
    /* staging area of every rank as seen from here (index = rank); one-shot: 2 parities
     * x nranks sources x stage_slot bytes (LL: the same, 16-byte records of 8 payload
     * bytes and two flags); two-shot: (nranks-1) sources x stage_slot bytes
     * of input slices, then count elements of results at stage_out */
    char *stage[CUDA_AR_MAX_RANKS];
    size_t stage_slot;
    size_t stage_out;
    /* two-shot: this rank's receive buffer as a pool offset + 1 (0: not in the pool), and
     * every rank's view of pool offset 0 */
    uint64_t recv_info;
    char *pool_base[CUDA_AR_MAX_RANKS];
    uint32_t *pad[CUDA_AR_MAX_RANKS]; /* every rank's signal pad, as seen from here */
    /* cuda_ar_sig (cuda/sig.h) of this launch: every rank's launch of the call carries
     * the same, or the kernels stop with CUDA_KERR_MISMATCH */
    uint64_t sig;
    /* host-mapped; non-zero (a CUDA_KERR_* reason): stop */
    const volatile uint32_t *abort_word;
    /* host-mapped or NULL; non-zero: a rank of the node gave up on the communicator (the
     * hierarchical algorithm across nodes: a rank whose step across nodes failed raises
     * it for every rank of its node, whose kernels then stop waiting for it) */
    const volatile uint32_t *node_word;
    /* host-mapped, the words at CUDA_WORD_ERR and after: set by a kernel that gave up;
     * non-zero also makes this rank's later kernels stop waiting */
    volatile uint32_t *err_word;
    unsigned long long timeout_ns; /* a barrier wait longer than this gives up */
} cuda_ar_args_t;

/* Launch the all-reduce kernel on stream (cudaStream_t). Returns a cudaError_t. */
int cuda_ar_launch(const cuda_ar_args_t *args, void *stream);

/* Load every kernel of this file into the current context (cuda_kernels_load). Returns a
 * cudaError_t. */
int cuda_ar_preload(void);

/* Threads per block of the all-reduce kernels. */
#define CUDA_AR_THREADS 512

/* A small all-reduce of CUDA memory across nodes (algo/cuda_net/cuda_net_queue.c), one chunk:
 * the stream side of its staging pipeline in one kernel instead of six stream commands. It
 * waits until the slot's "freed" word reached wait_freed (if has_wait), copies send into the
 * slot (pinned host memory), raises "ready" to value, waits for "done" to reach value (the
 * channel reduced the chunk across the nodes), copies the slot to recv and raises "freed" to
 * value. Words compare as int32 differences, as in the plan. */
typedef struct cuda_net_small_args {
    const void *send;
    void *recv;
    size_t bytes;
    char *slot;                     /* device view of the host slot */
    uint32_t *ready, *done, *freed; /* device views of the slot's host-mapped words */
    uint32_t value;                 /* low 32 bits of the chunk number + 1 */
    uint32_t wait_freed;
    int has_wait;
} cuda_net_small_args_t;

int cuda_net_small_launch(const cuda_net_small_args_t *args, void *stream);

#define CUDA_NET_SMALL_THREADS 512

#ifdef __cplusplus
}
#endif

#endif
