/* The algorithm layer's state of one communicator: every algorithm's state and the one
 * sticky failure status. Owned by src/algo (created with the communicator, released with
 * it); the lower layers keep no slot for it. */
#ifndef SYMCOLL_ALGO_CTX_H
#define SYMCOLL_ALGO_CTX_H

#include <stdatomic.h>

#include "core/core.h"
#include "topo/select.h"
#include "ucx/ucx.h"

struct algo_host_state;
struct net_state;
struct cuda_algo_state;
struct cuda_net;
typedef struct cuda_net cuda_net_t;

/* What one call of any collective asks. */
typedef struct algo_args {
    topo_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements: the message (all-reduce, broadcast), a rank's block
                     (reduce-scatter, all-gather); 0 for the barrier */
    symcoll_dtype_t dtype;
    symcoll_op_t op; /* reductions only; SYMCOLL_SUM otherwise */
    int root;        /* broadcast only; 0 otherwise */
    void *stream;
} algo_args_t;

typedef struct algo_ctx {
    /* SYMCOLL_OK, or the status of the first failure that left the ranks out of step
     * (timeout, dead peer, abort, UCX error): sticky, every later call returns it. Set
     * with algo_break from any thread (the channels of CUDA memory across nodes). */
    _Atomic int broken;
    struct algo_host_state *host; /* intra-node host algorithms (host pool) */
    struct net_state *net;        /* across nodes on the communicator's own worker */
    struct cuda_algo_state *cuda; /* intra-node CUDA kernels (CUDA pool) */
    struct cuda_net *cuda_net;    /* CUDA memory across nodes: call queue and channels */
    /* While another collective runs as an all-reduce (coll.c): which one, and its root
     * (ALGO_SALT), which the all-reduce's agreement across nodes also compares; 0 for a
     * user's all-reduce. */
    uint64_t salt;
    void *scratch; /* host memory for reduce-scatters run as all-reduces (coll.c) */
    size_t scratch_bytes;
    /* across nodes on each channel's worker: one state per channel, made by its owner */
    struct {
        ucx_ctx_t *ucx;
        struct net_state *st;
    } channels[UCX_CHANNELS_MAX];
} algo_ctx_t;

/* Records status as the communicator's failure unless one is recorded already; returns
 * the recorded one. UCX hears of it too: closing after a failure waits for no peer. */
static inline symcoll_status_t algo_break(comm_t *comm, symcoll_status_t status)
{
    int ok = SYMCOLL_OK;
    if (atomic_compare_exchange_strong(&comm->algo->broken, &ok, (int)status)) {
        ucx_mark_broken(comm->ucx);
        return status;
    }
    return (symcoll_status_t)ok;
}

/* The host pool's signal pad of each rank: the host family's words (algo_host_sig_t)
 * fill its first ALGO_SIG_HOST_BYTES; the net family keeps its flags after them where
 * they fit. */
#define ALGO_SIG_HOST_BYTES 4096

#define ALGO_SALT(coll, root) ((uint64_t)(coll) << 32 | (uint32_t)(root))

static inline symcoll_status_t algo_broken(const comm_t *comm)
{
    return (symcoll_status_t)atomic_load_explicit(&comm->algo->broken, memory_order_relaxed);
}

/* SYMCOLL_OK, or (logged) the failure of an earlier call that broke the communicator:
 * every collective entry refuses to run after one. */
symcoll_status_t algo_check_usable(const comm_t *comm);

#endif
