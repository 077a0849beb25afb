/* Shared machinery of the intra-node host all-reduce algorithms: the signal pad layout,
 * per-pool state, epochs and the wait loop, call descriptors, staging slots. */
#ifndef SYMCOLL_ALGO_HOST_H
#define SYMCOLL_ALGO_HOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"

/* What one call tells its peers (in its signal pad, before the first barrier). */
typedef struct algo_host_desc {
    _Atomic uint64_t sig;     /* root, algorithm, op, dtype: must agree */
    _Atomic uint64_t count;   /* must agree */
    _Atomic uint64_t flags;   /* HOST_DESC_* | chunk bytes << 8 */
    _Atomic uint64_t in_off;  /* pool offset of the input when HOST_DESC_IN_LINEAR */
    _Atomic uint64_t out_off; /* pool offset of the result when HOST_DESC_OUT_LINEAR */
    uint8_t pad[24];
} algo_host_desc_t;

#define HOST_DESC_IN_LINEAR 1u  /* input read in place from the caller's pool buffer */
#define HOST_DESC_OUT_LINEAR 2u /* result slices written to the caller's pool buffer */

/* One line of a rank's small-message mailbox: data and, in the same cache line, the
 * epoch that wrote it (stored with release after the data). A peer that sees the epoch
 * it waits for has the data with the same cache-line transfer: no second, serial
 * transfer after the barrier's flag. */
#define HOST_LL_DATA 56
typedef struct algo_host_ll_line {
    uint8_t data[HOST_LL_DATA];
    _Atomic uint64_t epoch;
} algo_host_ll_line_t;

/* Lines per mailbox (280 bytes of data). Longer messages go the usual way: a peer that
 * polls a line while its owner still writes the next ones makes the owner fetch each
 * line back before its store (measured: 512 B and 1 KiB took 1.3-1.5x the time of the
 * epoch barrier followed by prefetched staging lines; 8-256 B took 0.6-0.9x). */
#define HOST_LL_LINES 5
#define HOST_LL_BYTES (HOST_LL_LINES * HOST_LL_DATA)

/*
 * Eager broadcast (host_coll.c): broadcasts of at most HOST_BC_EAGER_MAX bytes do not
 * wait for the receivers. Every rank owns a ring of HOST_BC_SLOTS slots in the pool
 * (same offset everywhere); as root it writes its k-th message into slot k mod
 * HOST_BC_SLOTS and returns; each receiver reads it from there. A slot is one header
 * line (stamp last, 32 bytes of data inline) and the rest of the data after it.
 * Credits: receiver r counts the messages it consumed from each root and publishes
 * the count in its pad (bc_cons[root]) every HOST_BC_SLOTS / 2 messages; a root writes
 * message k only once every receiver published at least k - HOST_BC_SLOTS + 1, so no
 * receiver still reads a slot the root writes again.
 */
#define HOST_BC_EAGER_MAX 2048
#define HOST_BC_SLOTS 16
#define HOST_BC_INLINE 32
#define HOST_BC_SLOT_BYTES (64 + (HOST_BC_EAGER_MAX - HOST_BC_INLINE + 63) / 64 * 64)
#define HOST_BC_MAX_RANKS 256 /* local ranks with a word each in bc_cons */

typedef struct algo_host_bc_hdr {
    _Atomic uint64_t stamp; /* message number from this root + 1, stored last */
    _Atomic uint64_t seq;   /* the root's count of broadcasts on the communicator */
    _Atomic uint64_t count; /* elements */
    _Atomic uint64_t sig;   /* datatype | root << 32 */
    uint8_t data[HOST_BC_INLINE];
} algo_host_bc_hdr_t;

/* Layout of the first bytes of each rank's host signal pad. Only its owner writes it;
 * peers read it. Every word sits on its own cache line (or pair) to avoid false
 * sharing between the polled flag and the rest. The pad's remaining bytes are free
 * for the other families (ALGO_SIG_HOST_BYTES). */
typedef struct algo_host_sig {
    _Atomic uint64_t progress; /* barriers passed; monotonic, never reset; its low 32
                                  bits are also the futex word peers sleep on */
    uint8_t pad0[56];
    _Atomic uint64_t waiters; /* peers asleep on progress (written by the peers) */
    uint8_t pad1[56];
    _Atomic uint64_t aborted; /* 0; once this rank gave up (abort, failure), the first
                                 epoch it did not complete; written once */
    _Atomic int64_t reason;   /* why it gave up (a symcoll status), written before */
    uint8_t pad2[48];
    algo_host_desc_t desc[2]; /* by call parity */
    /* one-shot's mailboxes for messages of at most HOST_LL_BYTES, by epoch parity: the
     * mailbox of epoch e is written again at epoch e + 2 at the earliest, after the
     * owner passed epoch e + 1, which no peer reaches before it read epoch e's data */
    algo_host_ll_line_t ll[2][HOST_LL_LINES];
    /* eager broadcast: peers asleep on a word of ours (a ring stamp, bc_cons) */
    _Atomic uint64_t bc_waiters;
    uint8_t pad3[56];
    /* while a receive waits long: the broadcast it waits for ((seq + 1) << 12 | root),
     * so that two ranks that each wait for the other as root see the disagreement */
    _Atomic uint64_t bc_wait;
    uint8_t pad4[56];
    /* messages consumed from each local root, published every HOST_BC_SLOTS / 2 */
    _Atomic uint64_t bc_cons[HOST_BC_MAX_RANKS];
} algo_host_sig_t;

_Static_assert(sizeof(algo_host_sig_t) <= ALGO_SIG_HOST_BYTES,
               "the host signal pad's own part overlaps the other families'");

struct algo_host_state {
    int me, n;
    algo_host_sig_t **sig; /* every local rank's pad */
    int *pids;             /* of every local rank */
    uint64_t *starts;      /* process start times, for pid reuse */
    uint64_t epoch;        /* barriers this rank passed */
    uint64_t calls;        /* descriptor parity */
    uint64_t slot;         /* staging slot counter */
    size_t chunk_bytes;    /* pipeline chunk (SYMCOLL_HOST_CHUNK_SIZE) */
    unsigned spin_max;     /* pause rounds before a wait starts yielding */
    bool has_staging;
    size_t staging_off; /* HOST_STAGING_SLOTS slots of chunk_bytes, same offset on every rank */
    const void **srcs;  /* n source pointers for the reduction */
    char *ll_in;        /* n x HOST_LL_BYTES: the peers' mailbox data, made contiguous */
    uint64_t *peer_flags, *peer_in, *peer_out; /* descriptors read from the peers */
    /* eager broadcast: the ring (HOST_BC_SLOTS x HOST_BC_SLOT_BYTES at bc_off) */
    bool has_bc;
    size_t bc_off;
    uint64_t bc_seq;    /* broadcasts this rank took part in (also in every descriptor) */
    uint64_t bc_sent;   /* messages written as root */
    uint64_t bc_credit; /* the least count the receivers published, as last read */
    uint64_t *bc_recvd; /* messages consumed from each local root */
    bool prefetchw;     /* x86: the CPU has PREFETCHW (CPUID 0x80000001 ECX bit 8) */
};
typedef struct algo_host_state algo_host_state_t;

/* One call in flight. */
typedef struct host_call {
    comm_t *comm;
    pool_t *pool;
    algo_host_state_t *st;
    int me, n;
    const char *sendbuf;
    char *recvbuf;
    size_t count, esize;
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    int root;      /* broadcast: the local rank whose data is sent; 0 otherwise */
    deadline_t dl; /* set at the first long wait (dl.end 0 until then) */
    double next_alive;
    bool any_out_linear; /* some rank exposes its result buffer: end barrier */
    bool epoch_open;     /* inside a barrier: st->epoch published, not yet completed */
} host_call_t;

/* What a call runs, in its descriptor's signature: ranks that run different ones
 * disagree. */
enum {
    HOST_ALGO_ONESHOT = 1,
    HOST_ALGO_TWOSHOT = 2,
    HOST_ALGO_REDUCE_SCATTER = 3,
    HOST_ALGO_ALLGATHER = 4,
    HOST_ALGO_BROADCAST = 5,
    HOST_ALGO_BARRIER = 6,
};

/* Staging slots of chunk_bytes per rank, used in rotation by both algorithms (the
 * pipelined two-shot reads a slot up to two barriers after it was filled). */
#define HOST_STAGING_SLOTS 3

/* State of the host algorithms on the host pool (comm->algo->host, made on the first
 * call; its staging is allocated collectively here when missing: pool growth). */
symcoll_status_t algo_host_state_get(comm_t *comm, pool_t *pool, algo_host_state_t **st_p);

/* A call of the host algorithms on the host pool (its state made when missing). */
symcoll_status_t algo_host_call_init(host_call_t *c, comm_t *comm, pool_t *pool,
                                     const void *sendbuf, void *recvbuf, size_t count,
                                     symcoll_dtype_t dtype, symcoll_op_t op);

/* Host parts of algo_pool_release / algo_pool_abort (see algo.h), and of the context's
 * release. */
void algo_host_release(comm_t *comm, pool_t *pool);
void algo_host_abort(comm_t *comm, pool_t *pool);
void algo_host_free(comm_t *comm);

/* Signals this rank's next epoch and waits for every peer to reach it. */
symcoll_status_t algo_host_barrier(host_call_t *c);

/* The barrier of a one-shot call that sent its input through its mailbox (@a lines
 * lines of mailbox @a parity, the parity of the epoch it passes): waits until every
 * peer's lines carry that epoch, polling them directly while spinning; a wait that
 * lasts goes on as algo_host_barrier's (which also sees a peer that did not use its
 * mailbox: the descriptors then disagree). */
symcoll_status_t algo_host_barrier_ll(host_call_t *c, unsigned parity, size_t lines);

/* Publishes this call's descriptor (before the first barrier). */
void algo_host_desc_publish(host_call_t *c, int algo, uint64_t flags, size_t in_off,
                            size_t out_off);

/* After the first barrier: reads every peer's descriptor, checks agreement. */
symcoll_status_t algo_host_desc_collect(host_call_t *c, int algo);

/* Local rank r's input / result for chunk k (staging slot if not linear). */
const char *algo_host_in(const host_call_t *c, int r, size_t k, unsigned slot);
char *algo_host_out(const host_call_t *c, int r, size_t k, unsigned slot);
char *algo_host_staging(const host_call_t *c, int r, unsigned slot);

/* End of a call: a call that completed is still reported failed when a peer gave up
 * meanwhile (timed out or aborted): that peer returned, so its caller may already be
 * changing a buffer we read in place. */
symcoll_status_t algo_host_done(host_call_t *c, symcoll_status_t status);

/* Records a failure that leaves the peers' epochs out of step (the context's sticky
 * status) and tells the peers. */
symcoll_status_t algo_host_fail(host_call_t *c, symcoll_status_t status);

/* Why local peer gave up (its pad says), as its waiters report it. */
symcoll_status_t algo_host_peer_reason(const algo_host_sig_t *peer);

/* The slow checks of a wait for local rank r: abort, deadline, r gave up, r alive. */
symcoll_status_t algo_host_wait_check(host_call_t *c, int r);

symcoll_status_t algo_host_oneshot(host_call_t *c);
symcoll_status_t algo_host_twoshot(host_call_t *c);

/* The other collectives (host_coll.c); count is per rank's block for the first two. */
symcoll_status_t algo_host_reduce_scatter(host_call_t *c);
symcoll_status_t algo_host_allgather(host_call_t *c);
symcoll_status_t algo_host_broadcast(host_call_t *c, int root);
/* Whether a broadcast of nbytes on this state goes eager (every rank decides alike). */
bool algo_host_bc_eager(const algo_host_state_t *st, size_t nbytes);
symcoll_status_t algo_host_coll_barrier(host_call_t *c);

/* Bytes of each block one reduce-scatter chunk carries (0: the staging slot is too small
 * for n ranks). */
size_t algo_host_rs_piece(size_t chunk_bytes, int n);

/* algo_host_barrier whose signal is not fenced; the peers asleep on it are woken once
 * the wait is over (host_common.c). */
symcoll_status_t algo_host_barrier_lazy(host_call_t *c);

#endif
