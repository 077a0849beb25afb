/* Internals of the CUDA family inside a node: the kernels' state and the calls between
 * its files. */
/*
 * Files, ground first (a file calls only the files above it in this list):
 *   cuda_watch.c      the watcher of the local peers' processes (a thread that raises the
 *                     kernels' abort word when one dies);
 *   cuda_stage.c      the all-reduce kernels' staging in the CUDA pool;
 *   cuda_allreduce.c  the kernels' state (set-up, health, release), the kernel arguments
 *                     and launch, the all-reduce, and the pool scratch and stream-ordered
 *                     memory of the other collectives;
 *   cuda_coll.c       reduce-scatter, all-gather and broadcast by their own kernels;
 *   cuda_hier.c       the node's part of the hierarchical all-reduce across nodes.
 */
#ifndef SYMCOLL_ALGO_CUDA_INT_H
#define SYMCOLL_ALGO_CUDA_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "algo/base/ctx.h"
#include "algo/cuda/cuda_algo.h"
#include "cuda/cuda.h"
#include "cuda/kernels.h"
#include "cuda/sig.h"
#include "pool/pool.h"

/* pool_cuda.c; named here so that static links of the library always carry it */
extern const pool_backend_t pool_cuda_backend;

typedef struct cuda_watch {
    pthread_t thread;
    bool running;
    int stop[2]; /* pipe: a byte (or its closing) ends the thread */
    int n, me;
    int pid[CUDA_AR_MAX_RANKS];
    uint64_t start[CUDA_AR_MAX_RANKS];
    int rank[CUDA_AR_MAX_RANKS];  /* communicator rank of each local rank */
    int pidfd[CUDA_AR_MAX_RANKS]; /* -1: none (the kernel has no pidfd_open, or it failed) */
    cuda_words_t *words;
    _Atomic int dead; /* local rank + 1 of the first peer seen gone, 0 while none */
} cuda_watch_t;

struct cuda_algo_state {
    cuda_words_t words;
    cuda_watch_t watch;
    cuda_keep_t *keep; /* the live graphs that captured calls of this communicator */
    int me, n;
    int device;
    int nb[CUDA_AR_NALGOS]; /* fixed grid of each kernel */
    bool has_stage[CUDA_AR_NALGOS];
    size_t stage_off[CUDA_AR_NALGOS];
    size_t stage_slot[CUDA_AR_NALGOS];
    size_t stage_out; /* two-shot: offset of the results area */
    /* the other collectives' scratch (algo_cuda_scratch) */
    bool has_scratch[ALGO_CUDA_SCRATCH_N];
    size_t scratch_off[ALGO_CUDA_SCRATCH_N];
    size_t scratch_bytes[ALGO_CUDA_SCRATCH_N];
    /* staging and scratch outgrown while live graphs used them (algo_cuda_stage_alloc) */
    size_t *retired;
    size_t nretired, cap_retired;
};
typedef struct cuda_algo_state cuda_algo_state_t;

/* the kernels' signature numbers the collectives as the algorithm layer does */
_Static_assert((int)CUDA_AR_COLL_REDUCE_SCATTER == (int)TOPO_COLL_REDUCE_SCATTER &&
                   (int)CUDA_AR_COLL_ALLGATHER == (int)TOPO_COLL_ALLGATHER &&
                   (int)CUDA_AR_COLL_BROADCAST == (int)TOPO_COLL_BROADCAST &&
                   (int)CUDA_AR_COLL_BARRIER == (int)TOPO_COLL_BARRIER &&
                   (int)CUDA_AR_COLL_ALLREDUCE == (int)TOPO_COLL_ALLREDUCE,
               "CUDA_AR_COLL_* and TOPO_COLL_* differ");

static inline size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* ---- the watcher (cuda_watch.c) --------------------------------------------------------- */

/* Starts the watcher of comm's local peers (nothing with one local rank). */
symcoll_status_t algo_cuda_watch_start(comm_t *comm, cuda_watch_t *w, cuda_words_t *words,
                                       int me, int n);
void algo_cuda_watch_stop(cuda_watch_t *w);

/* ---- the staging (cuda_stage.c) --------------------------------------------------------- */

/* Whether the staging of algo holds a message of bytes bytes. */
bool algo_cuda_stage_fits(const comm_t *comm, const cuda_algo_state_t *st, int algo,
                          size_t bytes);

/* Make sure the staging of algo holds a message of bytes bytes. */
symcoll_status_t algo_cuda_stage_ensure(pool_t *pool, cuda_algo_state_t *st, int algo,
                                        size_t bytes, void *stream);

/* size bytes of the library's in the pool for a call of what on stream, in place of the
 * ones at *off (*has): the old ones go once the stream finished with them (unless live
 * graphs on some rank captured calls that use them: then every rank keeps them, in
 * st->retired, until a trim finds no live graph), and the new ones come from an
 * exchange. During a stream capture neither can happen: only a first allocation (no
 * *has) that fits in the pool without growth is made, with no exchange
 * (pool_alloc_quiet); else SYMCOLL_ERR_IN_PROGRESS with nothing changed. */
symcoll_status_t algo_cuda_stage_alloc(pool_t *pool, cuda_algo_state_t *st, void *stream,
                                       const char *what, size_t size, bool *has, size_t *off);

/* ---- the state, the arguments and the launch (cuda_allreduce.c) ------------------------- */

/* The state of the node's kernels on pool, unless too many ranks share the node or an
 * earlier kernel gave up. */
symcoll_status_t algo_cuda_state_usable(comm_t *comm, pool_t *pool, cuda_algo_state_t **st_p);

/* The signature of a launch: the all-reduce's arguments, and the collective it serves
 * (the salt of algo/coll.c), so that ranks running different collectives as all-reduces
 * of the same shape stop with SYMCOLL_ERR_MISMATCH too. */
uint64_t algo_cuda_call_sig(const comm_t *comm, size_t count, int dtype, int op, int algo,
                            int phase);

/* The kernel arguments of algo on the staging in place (algo_cuda_stage_ensure done). */
void algo_cuda_fill_args(const comm_t *comm, pool_t *pool, const cuda_algo_state_t *st,
                         int algo, const void *sendbuf, void *recvbuf, size_t count,
                         symcoll_dtype_t dtype, symcoll_op_t op, cuda_ar_args_t *a);

/* Launches on the pool's device (the caller's current device is left as it was). */
symcoll_status_t algo_cuda_launch(const cuda_algo_state_t *st, const cuda_ar_args_t *a,
                                  void *stream);

#endif
