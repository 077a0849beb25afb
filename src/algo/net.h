/* Shared machinery of the all-reduce algorithms that cross nodes (recursive doubling, ring,
 * hierarchical): per-communicator state kept in the pool, message counters and flags,
 * transfers that go through UCX to other nodes and through the pool mappings inside a
 * node, and the wait loop. */
#ifndef SYMCOLL_ALGO_NET_H
#define SYMCOLL_ALGO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"
#include "ucx/ucx.h"

/* Bytes between two flag words, so that writers of different flags do not share a line. */
#define NET_FLAG_STRIDE 64

/*
 * Flags: every rank owns, at the same offset (of its signal pad, or of the pool), one word
 * per sender rank. A sender
 * counts the messages it sent to each receiver; with each message it raises the
 * receiver's word for it to that count (ucx_put_signal; inside a node: a copy and a
 * release store through the mapping). The receiver counts what it consumed from each sender and
 * waits for the word to reach its count. Counts only grow, so nothing is ever reset, and
 * a message of the next call that overtakes the current one cannot be mistaken for it.
 * Line 0 holds this rank's barrier epoch among the ranks of its node (hierarchical),
 * the count of local peers asleep on it, and a word set once this rank gave up.
 */
struct net_state {
    comm_t *comm;
    pool_t *pool;
    ucx_ctx_t *ucx;
    int n;             /* ranks of the communicator */
    size_t flags_off;  /* (n + 1) * NET_FLAG_STRIDE bytes, in the pool or the pad */
    bool flags_in_pad; /* at flags_off in the signal pad: no pool segment is pinned */
    uint64_t *sent;    /* messages sent to each rank */
    uint64_t *recvd;   /* messages consumed from each rank */
    uint64_t bar;      /* intra-node barriers passed */
    uint64_t calls;    /* calls made: parity of the receive areas */
    /* calls among the ranks of one local index (algo_net_group_allreduce_on): a pair of
     * receive areas of their own, since ranks of other local indices make other numbers
     * of them, and the parity of the flat calls must agree on every rank */
    uint64_t group_calls;
    int nareas; /* receive areas: 2, or 4 where group calls can happen (several a node) */
    size_t chunk_bytes; /* ring pipeline chunk (SYMCOLL_NET_CHUNK_SIZE) */
    bool has_scratch;
    size_t scratch_off; /* [hier in | hier acc | area parity 0 | area parity 1 |
                           group area parity 0 | group area parity 1] */
    size_t in_bytes, acc_bytes, area_bytes;
    ucx_req_t *reqs; /* per chunk of a ring call */
    size_t nreqs_cap;
    const void **srcs; /* local_size sources of a hierarchical reduction */
    int *group;        /* ranks of one hierarchical group (one per node) */
    int *all;          /* 0 .. n-1: the group of a flat call */
    bool fixed;        /* a lane's: the scratch may not grow (no pool calls) */
};
typedef struct net_state net_state_t;

/* Ranks an inter-node all-reduce runs over; group[me] is this rank. */
typedef struct net_group {
    const int *ranks;
    int n;
    int me;
} net_group_t;

/* One all-reduce over a group. area is this call's receive area (pool offset). */
typedef struct net_call {
    net_state_t *st;
    const net_group_t *g;
    const char *sendbuf;
    char *recvbuf;
    size_t count, esize;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    int avg_div; /* SYMCOLL_AVG: divisor of the final step (0: leave the sum) */
    size_t area_off;
    deadline_t *dl;
    double next_alive;
} net_call_t;

/* Creates the state on the communicator's own worker when its host pool is created
 * (collective, like pool_create: allocates and zeroes the flags, then a barrier). */
symcoll_status_t algo_net_attach(comm_t *comm, pool_t *pool);

/* The state of the communicator's own worker (comm->ucx), made by algo_net_attach; or of a
 * UCX lane of the communicator (ucx_lane_create), made on the lane's first call (by the
 * lane's owner, collective): its own flags, scratch and counters, so that lanes run
 * all-reduces at the same time, one thread each. */
symcoll_status_t algo_net_state_get_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       net_state_t **st_p);

/* Reserves the scratch every all-reduce of up to max_bytes needs, whichever algorithm the
 * selector picks, also among one rank a node (algo_net_group_allreduce_on), and with fix
 * fixes it: later calls never grow it, so they make no pool calls (collective). For
 * lanes, whose threads run while the pool belongs to the caller; a single lane uses the
 * communicator's own state, which the caller's host calls may still grow. */
symcoll_status_t algo_net_reserve_upto(net_state_t *st, size_t max_bytes, bool fix);

/* Destroys a UCX lane (collective, like ucx_destroy) and then frees its state and the
 * state's pool memory (every rank in the same order). */
void algo_net_lane_destroy(ucx_ctx_t *lane, pool_t *pool);

/* A lane's thread gave up: tells the peers' matching lanes (from that thread). */
void algo_net_lane_abort(ucx_ctx_t *ucx, pool_t *pool);

/* Fills c for one all-reduce over group g in this call's receive area (AVG divides by
 * the communicator's size) and counts the call. */
void algo_net_call_init(net_call_t *c, net_state_t *st, const net_group_t *g,
                        const void *sendbuf, void *recvbuf, size_t count, symcoll_dtype_t dtype,
                        symcoll_op_t op, deadline_t *dl);

/* Makes sure the scratch holds in + acc bytes and two receive areas of area bytes each
 * (collective: same arguments on every rank). */
symcoll_status_t algo_net_reserve(net_state_t *st, size_t in, size_t acc, size_t area);

/* Receive area bytes that algo_net_rd / algo_net_ring need for count elements. */
size_t algo_net_rd_area(size_t count, size_t esize, int n);
size_t algo_net_ring_area(size_t count, size_t esize, int n);

/* This rank's view of pool offset off, and local rank r's (r in local-rank order). */
char *algo_net_addr(const net_state_t *st, size_t off);

/* Sends one message to rank: len bytes from src to offset off of its memory, and its
 * flag for us raised to our message count. Another node: through UCX (*req_p set: src
 * must stay until it completes); this node: a copy through the pool mapping and a
 * release store (*req_p NULL). */
symcoll_status_t algo_net_send(net_call_t *c, int rank, const void *src, size_t len, size_t off,
                               ucx_req_t *req_p);

/* Waits for the next message from rank. */
symcoll_status_t algo_net_wait(net_call_t *c, int rank);

/* Waits for a request of algo_net_send. */
symcoll_status_t algo_net_req_wait(net_call_t *c, ucx_req_t req);

/* Barrier among the ranks of this node, progressing UCX while it waits. */
symcoll_status_t algo_net_local_barrier(net_state_t *st, deadline_t *dl);

/* Elements [start, start + len) of block b when count elements are split into n blocks. */
static inline void algo_net_block(size_t count, int n, int b, size_t *start, size_t *len)
{
    size_t q = count / (size_t)n, r = count % (size_t)n;
    size_t ub = (size_t)b;
    *start = ub * q + (ub < r ? ub : r);
    *len = q + (ub < r ? 1 : 0);
}

symcoll_status_t algo_net_rd(net_call_t *c);
symcoll_status_t algo_net_ring(net_call_t *c);
symcoll_status_t algo_net_hier(net_state_t *st, const void *sendbuf, void *recvbuf,
                               size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                               deadline_t *dl);

/* All-reduce on a communicator spanning several nodes (count > 0, arguments checked,
 * comm->lock held) by algo (rd, ring or hier: the plan's). */
symcoll_status_t algo_net_allreduce(comm_t *comm, pool_t *pool, topo_algo_t algo,
                                    const void *sendbuf, void *recvbuf, size_t count,
                                    symcoll_dtype_t dtype, symcoll_op_t op);

/* The same over a UCX lane (from the lane's thread). */
symcoll_status_t algo_net_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                       size_t count, symcoll_dtype_t dtype, symcoll_op_t op);

/* In-place all-reduce of buf among the ranks of this rank's local index, one a node
 * (rd or ring by size), over a UCX lane: the step across nodes of the hierarchical
 * algorithm on CUDA memory, whose node part runs on the GPUs. AVG divides by the
 * communicator's size (buf holds the node's sum). */
symcoll_status_t algo_net_group_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                             void *buf, size_t count, symcoll_dtype_t dtype,
                                             symcoll_op_t op);

/* Fills g with the ranks of this rank's local index, one a node, in node order. */
void algo_net_local_index_group(net_state_t *st, net_group_t *g);

/* The communicator was aborted: tell the peers (their calls end now, not at their
 * deadline). */
void algo_net_pool_abort(comm_t *comm, pool_t *pool);

/* Releases the scratch so that pool_trim can unmap it (collective, like the trim). */
void algo_net_pool_release(comm_t *comm, pool_t *pool);

/* Frees the states of the communicator (after its lanes were destroyed). */
void algo_net_free(comm_t *comm);

#endif
