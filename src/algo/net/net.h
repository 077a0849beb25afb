/* The family of algorithms that cross nodes (all-reduce by recursive doubling, ring or
 * hierarchy; reduce-scatter, all-gather and broadcast by rings). Its files, top first;
 * each calls only files below it, and the entries do not call each other:
 *   entries     net_allreduce.c (all-reduce), net_coll.c (the other collectives), net_bc.c
 *               (the eager broadcast)
 *   algorithms  hier.c, net_ring.c, net_rd.c
 *   machinery   net_xfer.c (transfers, waits), net_agree.c (tags, agreement),
 *               net_state.c (per-worker state, its pool memory, giving up) */
#ifndef SYMCOLL_ALGO_NET_H
#define SYMCOLL_ALGO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"
#include "ucx/ucx.h"

/* Bytes between two flag words, so that writers of different flags do not share a line. */
#define NET_FLAG_STRIDE 64

/*
 * Flags: every rank owns, at the same offset (of its signal pad, or of the pool), one
 * line per sender rank, with one word per receive area (a call's area: see net_state).
 * A sender counts the messages it sent to each receiver; with each message it raises the
 * receiver's word for it, of the call's area, to that count (ucx_put_signal; inside a node: a
 * copy and a release store through the mapping). The receiver counts what it consumed from each
 * sender and waits for the word to reach its count. Counts only grow, so nothing is ever reset;
 * a sender is never more than one call ahead, so a word holds only messages of the receiver's
 * current call, never one of the next (which raises the other area's word).
 *
 * A word's value: the low NET_CNT_BITS bits hold the count (mod 2^NET_CNT_BITS, compared
 * as a difference), the high bits the call's tag: the arguments the sender called with
 * (net_tag) and whether it has seen a disagreement so far (NET_TAG_BAD). So every message
 * says which call it belongs to, at no cost: agreement is checked where the algorithms
 * already wait (algo_net_agree).
 *
 * Line 0 holds this rank's barrier epoch among the ranks of its node (hierarchical),
 * the count of local peers asleep on it, a word set once this rank gave up, and the tag
 * of its current hierarchical call and whether it saw a disagreement (read by the node).
 */
#define NET_CNT_BITS 28
#define NET_CNT_MASK ((UINT64_C(1) << NET_CNT_BITS) - 1)
/* tag bits (above the count): count folded to 24 bits | call number mod 8 | datatype |
 * operator | memory type | bad */
#define NET_TAG_BAD (UINT64_C(1) << 35)

/* A payload the receive hook (ucx_set_recv_hook) was handed, against the nmsg messages
 * a call expects from rank left after the seq0 it had consumed (seq: the message's flag
 * word, its count in the low bits): its index m (from 0) among them, or false where it
 * is none of them. */
static inline bool algo_net_hook_msg(uint64_t seq, uint64_t seq0, int sender, int left,
                                     size_t nmsg, size_t *m_p)
{
    uint64_t rel = ((seq & NET_CNT_MASK) - seq0) & NET_CNT_MASK;

    if (sender != left || rel == 0 || rel > nmsg)
        return false;
    *m_p = (size_t)(rel - 1);
    return true;
}

/* Whether the len bytes at dst lie inside the part [part, part + plen) of a receive area
 * that one message fills: their offset in it. */
static inline bool algo_net_hook_within(const void *dst, size_t len, const char *part,
                                        size_t plen, size_t *off_p)
{
    const char *d = dst;

    if (d < part || d + len > part + plen)
        return false;
    *off_p = (size_t)(d - part);
    return true;
}

/* What a call agrees on: the arguments of the user's call (for CUDA memory across nodes,
 * of the whole call, not of the chunk a channel moves). */
typedef struct net_sig {
    size_t count;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    symcoll_mem_type_t mem;
    uint64_t salt; /* the user's call when it runs as this all-reduce (algo_ctx_t) */
    int call_algo; /* the algorithm the caller forced (symcoll_comm_set_algo; 0: none) */
} net_sig_t;
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
    int *ring;         /* the ranks by node, then local rank: the order of net_coll.c's rings */
    int ring_me;       /* this rank's place in it */
    bool fixed;        /* a channel's: the scratch may not grow (no pool calls) */
    /* every all-reduce is hierarchical (the selector's choice for any size): calls agree
     * inside the hierarchical steps; else before the flat algorithms (algo_net_rd) */
    bool hier_all;
    /* eager broadcast (net_bc.c): the rings (n roots x NET_BC_RING bytes at bc_off, made
     * with the communicator's state at the pool's attach up to NET_BC_MAX_RANKS ranks,
     * given back at trim and made again by the next call), and its counters, which stay;
     * positions count bytes of a root's ring from its first message, without wrapping */
    bool has_bc;
    size_t bc_off;
    uint64_t bc_seq;    /* broadcasts this rank took part in */
    uint64_t bc_sent;   /* messages sent as root */
    uint64_t bc_pos;    /* where the next message as root goes (before net_bc_place) */
    uint64_t bc_credit; /* the least position the receivers returned, as last read */
    uint64_t *bc_recvd; /* messages consumed from each root */
    uint64_t *bc_rpos;  /* where the next message of each root is (before net_bc_place) */
    ucx_req_t *bc_reqs; /* NET_BC_REQS x n: the sends of our last messages */
    /* float32 copy of a float16 / bfloat16 all-reduce in the canonical order (grows) */
    float *wide;
    size_t wide_count;
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
    int area;    /* receive area (0 .. nareas - 1): also which flag word of a line */
    size_t area_off;
    deadline_t *dl;
    double next_alive;
    uint64_t tag;     /* net_tag of the call, NET_TAG_BAD once a disagreement is seen */
    bool check;       /* compare the tag of every message received with ours */
    bool header_only; /* agreement only: messages carry no data (algo_net_rd) */
    int bad_peer;     /* the first rank seen to disagree directly (-1: none) */
    uint64_t bad_tag; /* its tag */
} net_call_t;

/* The tag of a call (see the flags above): seq is the call's number on its state. */
uint64_t algo_net_tag(const net_sig_t *sig, uint64_t seq);

/* Creates the state on the communicator's own worker when its host pool is created
 * (collective, like pool_create: allocates and zeroes the flags, then a barrier), with
 * the eager broadcast's rings, so that calls set up nothing of a fixed size. */
symcoll_status_t algo_net_attach(comm_t *comm, pool_t *pool);

/* The state of the communicator's own worker (comm->ucx), made by algo_net_attach; or of a
 * UCX channel of the communicator (ucx_channel_create), made on the channel's first call (by
 * the channel's owner, collective): its own flags, scratch and counters, so that channels run
 * all-reduces at the same time, one thread each. */
symcoll_status_t algo_net_state_get_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       net_state_t **st_p);

/* Reserves the scratch every all-reduce of up to max_bytes needs, whichever algorithm the
 * selector picks, also among one rank a node (algo_net_group_allreduce_on), and extra
 * (an algorithm a call forces; TOPO_ALGO_AUTO: none) at max_bytes; keeps what the state
 * has if that is more. With fix it fixes it: later calls never grow it, so they make no
 * pool calls (collective). For channels, whose threads run while the pool belongs to the
 * caller; their owner reserves again (channels idle) when a call forces another. */
symcoll_status_t algo_net_reserve_upto(net_state_t *st, size_t max_bytes, bool fix,
                                       topo_algo_t extra);

/* Destroys a UCX channel (collective, like ucx_destroy) and then frees its state and the
 * state's pool memory (every rank in the same order). */
void algo_net_channel_destroy(ucx_ctx_t *channel, pool_t *pool);

/* A channel's thread gave up (why: the communicator's failure): tells the peers' matching
 * channels (from that thread), and records why unless a failure is recorded already. */
void algo_net_channel_abort(ucx_ctx_t *ucx, pool_t *pool, symcoll_status_t why);

/* Fills c for one all-reduce over group g in this call's receive area (AVG divides by
 * the communicator's size), tagged with sig and the call's number, and counts the call. */
void algo_net_call_init(net_call_t *c, net_state_t *st, const net_group_t *g,
                        const void *sendbuf, void *recvbuf, size_t count, symcoll_dtype_t dtype,
                        symcoll_op_t op, deadline_t *dl, const net_sig_t *sig);

/* algo_net_call_init for a call among the ranks of one local index
 * (algo_net_group_allreduce_on): in the group calls' own pair of receive areas (the state
 * has 4), counted among the group calls. */
void algo_net_group_call_init(net_call_t *c, net_state_t *st, const net_group_t *g,
                              const void *sendbuf, void *recvbuf, size_t count,
                              symcoll_dtype_t dtype, symcoll_op_t op, deadline_t *dl,
                              const net_sig_t *sig);

/* Points c at its receive area again (after the scratch moved: algo_net_reserve). */
void algo_net_call_area(net_call_t *c);

/* After an agreement that failed (c->tag has NET_TAG_BAD; every rank of the communicator
 * knows it when exact, which lets it exchange every rank's arguments through the
 * bootstrap and name them): logs this rank's arguments and a disagreeing rank's, and
 * returns SYMCOLL_ERR_MISMATCH. */
symcoll_status_t algo_net_mismatch(net_state_t *st, const net_call_t *c, const net_sig_t *sig,
                                   bool exact);

/* Makes sure the scratch holds in + acc bytes and two receive areas of area bytes each
 * (collective: same arguments on every rank). */
symcoll_status_t algo_net_reserve(net_state_t *st, size_t in, size_t acc, size_t area);

/* Receive area bytes that algo_net_rd / algo_net_ring need for count elements. */
size_t algo_net_rd_area(size_t count, size_t esize, int n);
size_t algo_net_ring_area(size_t count, size_t esize, int n);
size_t algo_net_rhd_area(size_t count, size_t esize, int n);

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

/* Line 0 word of this rank (relaxed store: the next node barrier publishes it), and of
 * local rank rank (after the barrier that published it). */
void algo_net_hier_publish(net_state_t *st, uint64_t word, uint64_t value);
uint64_t algo_net_hier_peek(const net_state_t *st, int rank, uint64_t word);
#define NET_WORD_HIER_TAG 3 /* the tag of this rank's current hierarchical call */
#define NET_WORD_HIER_BAD 4 /* and whether it saw a disagreement */

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

/* Recursive doubling over c->g. With c->check, it also agrees: each message carries the
 * sender's tag, every rank compares the tags it receives with its own and passes on
 * whether it saw a difference, so that after the last step every rank of the group knows
 * whether all agree (c->tag & NET_TAG_BAD), at no extra message. With c->header_only the
 * messages carry no data: the agreement alone. Its data lies at offsets that depend only
 * on the reserved area, not on the count, so ranks that disagree on it never write past
 * each other's area. */
symcoll_status_t algo_net_rd(net_call_t *c);
/* A group of one: the result is the input (avg divided by c->avg_div); rd's and rhd's. */
symcoll_status_t algo_net_alone(net_call_t *c);
symcoll_status_t algo_net_ring(net_call_t *c);
/* Recursive halving and doubling (net_rhd.c): the canonical tree, as rd, with the ring's
 * bytes per rank (after rd's agreement, like the ring). */
symcoll_status_t algo_net_rhd(net_call_t *c);

/* The hierarchical algorithm. With check, it also agrees, in the steps it has anyway:
 * every rank publishes its tag before the first node barrier and compares its local
 * peers' after it, the step across nodes agrees (algo_net_rd with check, data only when
 * it fits), and the second barrier spreads the verdict over the node: every rank returns
 * SYMCOLL_ERR_MISMATCH (c_out tells with whom), with the same steps on every rank. A
 * call that needs more scratch than is reserved only agrees (*rerun set, nothing
 * computed): then every rank grows it and runs the call again without check. */
symcoll_status_t algo_net_hier(net_state_t *st, const void *sendbuf, void *recvbuf,
                               size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                               deadline_t *dl, const net_sig_t *sig, bool check, bool *rerun,
                               net_call_t *c_out);

/* All-reduce on a communicator spanning several nodes (count > 0, arguments checked,
 * comm->lock held) by algo (rd, ring or hier: the plan's). */
symcoll_status_t algo_net_allreduce(comm_t *comm, pool_t *pool, topo_algo_t algo,
                                    const void *sendbuf, void *recvbuf, size_t count,
                                    symcoll_dtype_t dtype, symcoll_op_t op);

/* The same over a UCX channel (from the channel's thread); sig: what the ranks agree on (the
 * user's call, of which this may be a chunk). Ranks that disagree all get
 * SYMCOLL_ERR_MISMATCH, and the state stays in step for the next call. */
symcoll_status_t algo_net_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                       topo_algo_t algo, const void *sendbuf, void *recvbuf,
                                       size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                                       const net_sig_t *sig);

/* In-place all-reduce of buf among the ranks of this rank's local index, one a node
 * (rd or ring by size), over a UCX channel: the step across nodes of the hierarchical
 * algorithm on CUDA memory, whose node part runs on the GPUs. AVG divides by the
 * communicator's size (buf holds the node's sum). */
symcoll_status_t algo_net_group_allreduce_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                             void *buf, size_t count, symcoll_dtype_t dtype,
                                             symcoll_op_t op, const net_sig_t *sig);

/* Fills g with the ranks of this rank's local index, one a node, in node order. */
void algo_net_local_index_group(net_state_t *st, net_group_t *g);

/* The communicator was aborted: tell the peers (their calls end now, not at their
 * deadline). */
void algo_net_pool_abort(comm_t *comm, pool_t *pool);

/* Releases the scratch and the eager broadcast's rings so that pool_trim can unmap them
 * (collective, like the trim). */
void algo_net_pool_release(comm_t *comm, pool_t *pool);

/* A failure that leaves the counters out of step breaks the state (algo_break) and the
 * peers hear of it; returns status. */
symcoll_status_t algo_net_finish(net_state_t *st, symcoll_status_t status);

/* The state of worker ucx for a call (algo_net_state_get_on), unless an earlier call
 * broke the communicator. On the communicator's own worker it also makes the eager
 * broadcast's rings again where a trim gave them back (collective: every call on that
 * worker passes here on every rank, before anything that depends on its arguments). */
symcoll_status_t algo_net_state_usable_on(comm_t *comm, ucx_ctx_t *ucx, pool_t *pool,
                                          net_state_t **st_p);

/* algo_net_state_usable_on the communicator's own worker. */
symcoll_status_t algo_net_state_usable(comm_t *comm, pool_t *pool, net_state_t **st_p);

/* Reduce-scatter, all-gather or broadcast of host memory across nodes, natively, where
 * the selector says so (topo_select_coll_plan: the all-reduce's plan is the ring, or
 * hierarchical above recursive doubling's sizes; count > 0, arguments checked,
 * comm->lock held): the all-reduce's agreement without data (flat
 * recursive doubling, or the hierarchical steps where every all-reduce is hierarchical),
 * then a pipelined ring or chain over all ranks in node order. exchange (two ranks, a
 * reduce-scatter, all-gather or broadcast where the all-reduce runs recursive doubling):
 * instead, one exchange of a block that carries the agreement too. */
symcoll_status_t algo_net_collective(comm_t *comm, pool_t *pool, const algo_args_t *a,
                                     bool exchange);

/* Eager broadcast across nodes (net_bc.c): at most NET_BC_EAGER_MAX bytes, up to
 * NET_BC_MAX_RANKS ranks. Flag words of a sender's line (see the flags above) that the
 * all-reduce's receive areas leave free: the messages of a root, in the receiver's flags;
 * the credits of a receiver, in the root's flags. 32 KiB: on 2 simulated nodes over TCP
 * the chain with its agreement took 1.9-2.2x Open MPI's time at 8-32 KiB, eager
 * 1.28x at 8 KiB and 0.67x at 32 KiB. A message
 * takes its 64-byte header and data rounded up to 64 bytes of its root's ring
 * (NET_BC_SLOT_BYTES at most); a ring of 16 such (513 KiB, 8 MiB of the host pool at 16
 * ranks) holds 16 broadcasts of 32 KiB or about 4100 of 8 bytes; a receiver returns a
 * credit each half ring, which costs a message and the root's reading it: on 2 simulated
 * nodes over TCP a credit every 8 broadcasts made 8 B take about 7 % longer than this
 * ring does, which takes 1.08-1.19x Open MPI's time there. NET_BC_REQS: sends of
 * ours whose requests are kept (each is waited for before its entry is taken again). The root
 * progresses UCX every NET_BC_NOTICE broadcasts that do not wait, for its receivers' failure
 * notices. */
#define NET_BC_EAGER_MAX TOPO_NET_BC_EAGER_MAX
#define NET_BC_SLOT_BYTES (64 + NET_BC_EAGER_MAX)
#define NET_BC_RING (16 * NET_BC_SLOT_BYTES)
#define NET_BC_REQS 16
#define NET_BC_NOTICE 32
#define NET_BC_MAX_RANKS TOPO_NET_BC_MAX_RANKS
#define NET_WORD_BC_DATA 5
#define NET_WORD_BC_CREDIT 6

/* The eager broadcast (count > 0, arguments checked, comm->lock held). */
symcoll_status_t algo_net_bc_run(comm_t *comm, pool_t *pool, const algo_args_t *a);

/* Word word of sender's line in owner's flags (for owner == this rank, or symmetric:
 * this rank's address standing for a remote owner's). */
uint64_t *algo_net_flag_word(const net_state_t *st, int owner, int sender, int word);

/* Waits until *word (this rank's flags) reaches target (as the algorithms' waits). */
symcoll_status_t algo_net_wait_flag(net_state_t *st, const uint64_t *word, uint64_t target,
                                    int peer, deadline_t *dl, double *next_alive);

/* Local rank rank's view of pool offset off (rank a rank of this node). */
char *algo_net_peer_addr(const net_state_t *st, int rank, size_t off);

/* The failure status of a local peer that gave up (SYMCOLL_OK if it did not). */
symcoll_status_t algo_net_peer_gave_up(const net_state_t *st, int rank);

/* Breaks the communicator with why and tells every peer. */
symcoll_status_t algo_net_give_up(net_state_t *st, symcoll_status_t why);

/* Frees the states of the communicator (after its channels were destroyed). */
void algo_net_free(comm_t *comm);

#endif
