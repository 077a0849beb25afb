/* Internals of CUDA memory across nodes: the engine's state and the calls between its
 * files. The engine and how a call flows through it (queue, channels, peers): below. */
/*
 * CUDA memory across nodes, staged through pinned host memory of the pool: channels of
 * progress threads per communicator move each queued all-reduce off the GPU, across the
 * nodes with the host algorithms over UCX, and back, in order with the caller's stream.
 *
 * Files, ground first (a file calls only files above it in this list):
 *   cuda_net_sched.c           the stream commands of a call and the channels' queue, without
 *                             CUDA (tests/test_cuda_net_sched runs them without a GPU);
 *   cuda_net_direct_buf.c     the direct path's buffers (scratch in the CUDA pool, flags in
 *                             the host pool): setting them up, waiting until the GPU left
 *                             them, releasing them; the wait for the peers' flags;
 *   cuda_net_stage.c          the host staging (slots and node word in the pinned host
 *                             pool): setting it up, waiting until the GPU is done with it,
 *                             releasing it;
 *   cuda_net_direct_thread.c  the direct path on channel 0: a chunk's puts and flags, or its
 *                             release once the operation failed;
 *   cuda_net_channel.c           the channels: their threads, the chunks they move, their
 *                             failure handling, start and stop;
 *   cuda_net_queue.c          the queue from the caller's side: waiting for room, draining
 *                             it (algo_cuda_net_drain); a staged call queued: its operation
 *                             for the channels and its pipeline on the caller's stream (stream
 *                             commands or the small-call kernel); the stream's waits;
 *   cuda_net_direct_stream.c  a direct call queued: its operation for channel 0 and its
 *                             pipeline on the caller's stream;
 *   cuda_net_hier.c           a hierarchical call queued: the node's kernels around a staged
 *                             or direct call on this rank's slice;
 *   cuda_net_probe.c          the probe of the direct path;
 *   cuda_net.c                the entry points of cuda_net.h: the call's checks, the
 *                             engine's creation, its preparation (the staging, then the
 *                             channels; the direct path's probe and buffers), abort, release
 *                             and destroy.
 *
 * Why staged: the UCX of Debian and Ubuntu is built without CUDA, so it cannot read or
 * write GPU memory. A UCX 1.13 built with CUDA (scripts/ucx-cuda-build.sh) reports CUDA
 * memory, but on TCP a put into GPU memory crashes it and a put into host memory is
 * emulated at 86 MB/s, and it cannot register the CUDA pool's VMM segments
 * (UCX 1.13 here): there is no direct path (puts into the CUDA pool with
 * rkeys), the staged path serves that case too, and symcoll_info says so. A direct path
 * needs RMA into GPU memory (InfiniBand or RoCE with GPUDirect RDMA).
 *
 * The message moves in chunks of SYMCOLL_CUDA_NET_CHUNK bytes through S = 2 x channels + 1
 * chunk-sized slots of host staging (pool memory, pinned with cudaHostRegister). Three
 * host-mapped words per slot hand a chunk back and forth: "ready" (the GPU copied chunk
 * g into the slot), "done" (a channel reduced it across the nodes), "freed" (the GPU copied
 * the result out). Each holds the low 32 bits of g + 1 for the last chunk g that passed;
 * chunks are numbered across calls in 64 bits (the slot is g mod S: a 32-bit count would
 * jump slots where it wraps), so the words only grow, compared as int32 differences
 * like CU_STREAM_WAIT_VALUE_GEQ does.
 *
 * The call (caller's thread, comm->lock held) never waits for the GPU. It queues the
 * whole pipeline on the caller's stream and the operation for the channels, and returns:
 *   stream:  copy chunks 0 .. S-1 to their slots, raising "ready" after each; then for
 *            each chunk k: wait for "done", copy the result back, raise "freed", copy
 *            chunk k + S in (a slot is refilled only after its "freed": calls on other
 *            streams share the slots);
 *   channel i:  for each chunk k of the call with k mod channels == i: wait for "ready",
 *            all-reduce the slot in place across the ranks (the host algorithm the
 *            selector picks for the chunk: rd, ring or hier), raise "done".
 * A message spreads over the channels in chunks of 64K up to SYMCOLL_CUDA_NET_CHUNK
 * (topo_cuda_net_chunk). A one-chunk call (up to SYMCOLL_CUDA_NET_KERNEL_MAX bytes, when
 * no GPU serves two ranks of the communicator) queues one kernel instead of the six stream
 * commands, which does the same in less time (24.6 instead of 41-75 us at 1 KB on an
 * H200). So the channels move chunks across the nodes at the
 * same time while the copies of the next ones run. Why channels: one thread that sends,
 * receives and reduces is the limit over TCP (two pairs of ranks over loopback reach 2.2
 * times the bandwidth of one); each channel has its own
 * UCX worker and connections (a UCX channel of the communicator's context, ucx_channel_create),
 * its own flags and scratch, so channels share nothing but the registered pool (one channel
 * too).
 *
 * The channels only read and write host memory: they never call CUDA, so nothing the caller's
 * thread does inside the driver (a synchronous copy from pageable memory on the legacy
 * stream, say) can block a thread that stream waits for: a channel that issued copies or
 * queried events would wait inside the driver for the caller's thread, which waits for the
 * channel, a deadlock. Nor do several channels touch the pool: their scratch is reserved for
 * the chunk size when the staging is set up (algo_net_reserve_upto).
 *
 * Hierarchical (several ranks on every node, whose GPUs map each other:
 * topo_cuda_net_hier): the call queues the two-shot kernel's reduce-scatter half over the
 * CUDA pool (algo_cuda_hier_rs: local rank l ends with slice l of the node's sum in its
 * staging), then this staged pipeline on that slice, whose channels all-reduce it among
 * the ranks of local index l, one a node (algo_net_group_allreduce_on), or the direct
 * path's (TOPO_FAMILY_NET_CUDA_HIER_DIRECT, below) among the same ranks, then
 * the all-gather half (every slice from the peers' staging into the result). So each
 * rank copies, sends and reduces on the host only 1/L of the message. The hier word orders
 * these calls across streams (they share the CUDA pool's staging), and the node word
 * (after the slots) lets a rank that gives up stop its node's waiting kernels.
 *
 * Every rank's channel i runs the same chunks in the same order, so the host algorithms'
 * collective steps match channel by channel. Channel 0 takes every call's first chunk and keeps
 * polling for 20 ms when idle (then sleeps; with a UCX channel of its own, it wakes every
 * 50 ms for its peers' failure notices: cnet_listens); the others sleep sooner, and a
 * stream of one-chunk calls neither wakes them nor waits for them (the queue, cnet_sched_t
 * in cuda_net_sched.h, counts an operation finished once the channels with chunks in it
 * finished it). Everything else that talks to the other ranks (host all-reduces, pool
 * allocation, trim, destroy) first drains this queue (algo_cuda_net_drain), so the channels
 * and the caller never use the pool, the bootstrap or the communicator's UCX worker at
 * once.
 *
 * Failure: an operation that fails (peer gone, abort, timeout, CUDA error) still
 * releases its stream: each channel raises "done" for its remaining chunks, and tells its
 * peers' channels that it gave up. The status sticks: every later call on the communicator
 * returns it. The result buffer of a failed operation is undefined.
 *
 * Streams: operations run in call order and share the slots, so calls on different
 * streams are serialised: one that waits behind long work on its stream holds up the
 * ones queued after it (as with NCCL, collectives on a communicator are ordered).
 *
 * CUDA graphs: the work is done by host threads per call, so a capture would record
 * only the stream waits; a call on a capturing stream fails with SYMCOLL_ERR_UNSUPPORTED
 * and changes nothing.
 */
/*
 * The direct path: UCX puts every rank's data straight into the peers' CUDA pool with
 * their rkeys, and the GPU reduces (cuda_net_direct_buf.c: its buffers; cuda_net_probe.c:
 * the probe that decides whether it works; cuda_net_direct_stream.c and
 * cuda_net_direct_thread.c: its calls on the stream and on channel 0).
 *
 * Where: a UCX with CUDA support on every rank that registered the CUDA pool
 * (ucx_pool_registered), and a probe put per remote peer that landed (algo_cuda_net_probe,
 * when the CUDA pool is created). Among the group of this rank's local index, one rank a
 * node (cnet_direct_t): every rank with one rank a node; the ranks of a local index in a
 * hierarchical call's inter-node step, whose input is this rank's slice of the node's sum
 * in the CUDA pool's staging, reduced there in place (cnet_hier). An average divides by
 * the communicator's size. Below, "peer" means a peer of the group.
 *
 * One call, chunk by chunk (chunks of SYMCOLL_CUDA_NET_CHUNK bytes, numbered across
 * calls in 64 bits: g; slot g mod CNET_DSLOTS of the buffers below):
 *   stream: [copy chunk k of a plain input into the pool's in slot], raise DREADY;
 *           wait DDONE; reduce own input + every peer's scratch slot into the result
 *           (rank order: every rank gets the same bits); raise DCONS;
 *   channel 0: wait DREADY (and DCONS of chunk g - S + 1, see below); put the chunk into
 *           every peer's scratch slot of this rank (ucx_put_rma from the CUDA pool:
 *           pool inputs are put from where they are, no copy); flush (remote
 *           completion); put the flag (tag | chunk) into every peer's host flag of this
 *           rank and slot; wait for every peer's flag of this slot; check the tags;
 *           raise DDONE.
 * The words are host-mapped (the stream writes them with cuStreamWriteValue32 and waits
 * with cuStreamWaitValue32, or where a GPU serves several ranks in a one-thread kernel:
 * cnet_stream_wait); no host staging copy of the data.
 *
 * Why a peer never overwrites a scratch slot the GPU still reads: a peer puts chunk g into
 * our slot g mod S only after it saw our flag of chunk g - 1, which our channel raises after
 * it saw DCONS of chunk g - S: so with S slots, the channel waits for DCONS of g - S + 1
 * before it puts g. S = 3 lets the reduction of one chunk overlap the puts of the next.
 * The in slots are refilled only after their chunk's DDONE (the flush completed its
 * puts) and its reduction (same stream). A call's stream first waits for DCONS of the
 * previous direct call's last chunk, so calls on other streams take their turn.
 *
 * Failure: as the staged path (above): the channel raises DDONE of its remaining
 * chunks (results undefined), breaks the communicator and tells its peers; every wait of
 * the channel is bounded and ends on abort or peer failure. Argument agreement: the flag's
 * upper half is a hash of the call's count, type, operator and collective; a peer with
 * another one fails the call with SYMCOLL_ERR_MISMATCH (sticky, as on the staged path).
 * CUDA graphs: not capturable (a host thread moves the data), as the staged path.
 */
#ifndef SYMCOLL_ALGO_CUDA_NET_INT_H
#define SYMCOLL_ALGO_CUDA_NET_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "algo/base/ctx.h"
#include "algo/cuda/cuda_algo.h"
#include "algo/cuda_net/cuda_net.h"
#include "algo/cuda_net/cuda_net_sched.h"
#include "cuda/cuda.h"
#include "topo/select.h"
#include "ucx/ucx.h"

typedef struct cnet_op {
    size_t count;
    size_t chunk; /* elements a chunk (topo_cuda_net_chunk) */
    symcoll_dtype_t dtype;
    symcoll_op_t op;
    uint64_t first; /* number of its first chunk */
    uint64_t nchunks;
    bool group;    /* hierarchical: a slice, among the ranks of this local index */
    uint64_t salt; /* the collective it serves (algo_ctx_t), which the ranks agree on too */
    int call_algo; /* the algorithm the caller forced (net_sig_t), agreed too */
    /* a staged chunk's host algorithm across nodes, whole chunks and the last one: chosen
     * by the caller's thread (the selector with the caller's forced algorithm) */
    topo_algo_t algo_chunk, algo_last;
    /* the direct path (above): channel 0 runs every chunk; src: the input when
     * it is in the CUDA pool (put from there), else NULL (put from the in slots); tag:
     * what the flags carry for argument agreement */
    bool direct;
    const char *src;
    uint32_t tag;
} cnet_op_t;

/* The direct path's buffers: scratch[slot][source's place in the group] and in[slot],
 * chunk_bytes each, in the CUDA pool (peers put into scratch); host flags[slot][source
 * rank] in the host pool, plus a row for the probe. Numbered chunks: next (caller's
 * thread). The group: the ranks of this rank's local index, one a node, in rank order
 * (every rank with one rank a node; a hierarchical call's inter-node step otherwise). */
#define CNET_DSLOTS 3
typedef struct cnet_direct {
    int gn, gme;                           /* ranks in the group; this rank's place */
    int grank[TOPO_CUDA_DIRECT_MAX_RANKS]; /* their ranks */
    pool_t *cuda_pool;
    size_t chunk_bytes;
    size_t scratch_off, flags_off;
    char *scratch, *in;
    uint64_t *flags;
    uint64_t next;
    /* DCONS of the last chunk whose stream commands were all queued (what the GPU will
     * reach; less than next after a call that failed while it queued them) */
    uint64_t cons_queued;
    uint32_t warm_epoch; /* the value of the last warm-up's barrier flags */
    bool waits_set;      /* wait_flush and wait_kernel are set */
    unsigned wait_flush; /* CU_STREAM_WAIT_VALUE_FLUSH where the device can, else 0 */
    /* where a GPU serves several ranks, every stream wait of this engine is a kernel
     * (cnet_stream_wait, cuda_net_wait_launch), set with the direct buffers */
    bool wait_kernel;
} cnet_direct_t;

/* The direct path's host-mapped words, after the hier line: per slot the GPU's input is
 * ready (DREADY) and the channel is done (DDONE); DCONS: the last chunk the GPU reduced
 * (slot 0 only). Each holds the low 32 bits of g + 1. */
enum { CNET_DREADY = 0, CNET_DDONE = 1, CNET_DCONS = 2 };

#define CNET_WORD_STRIDE 16 /* uint32 per line: one cache line per word */

/* One channel: a thread that moves chunks k with k mod channels == index of each call across
 * the nodes, on its own UCX worker and connections. */
typedef struct cnet_channel {
    cuda_net_t *cn;
    int index;
    ucx_ctx_t *ucx;
    pthread_t thread;
    bool started;
    bool told_peers; /* this channel told its peers it gave up */
    /* where the time goes (logged at destroy, info level): seconds summed over ops */
    double t_wait_in; /* from taking an op to its first chunk on the host */
    double t_net;     /* in the host all-reduces */
    double t_busy;    /* from taking an op to releasing it */
} cnet_channel_t;

/* The engine of one communicator (comm->algo->cuda_net): made by its first call of CUDA memory
 * across nodes, freed by its destroy. */
struct cuda_net {
    comm_t *comm;
    pool_t *host_pool;
    const cuda_driver_t *drv;
    int nchannels, nslots;
    cnet_channel_t channels[CNET_CHANNELS_MAX];
    bool running; /* the channels (threads, UCX workers) exist: while there is staging */

    pthread_mutex_t mu;
    pthread_cond_t work; /* work for a channel that sleeps, or stop */
    pthread_cond_t idle; /* an operation finished */
    cnet_op_t q[CNET_QUEUE];
    cnet_sched_t sched;   /* which channel takes which operation, what finished (under mu) */
    bool channel0_asleep; /* channel 0 waits on work (under mu) */
    /* drained: the caller may change what UCX reads (the registered regions, at pool
     * growth), so idle channel 0 does not listen (under mu; cleared by the next operation) */
    bool quiet;
    bool stop;
    _Atomic int aborted; /* symcoll_comm_abort: every channel tells its peers, idle or not */
    uint64_t next_chunk; /* number of the next chunk queued (caller's thread) */
    /* per slot: the last chunk whose "freed" the caller queued + 1 (0: none); once the
     * word shows it, no queued copy touches the slot any more */
    uint64_t last_freed[CNET_SLOTS_MAX];

    volatile uint32_t *words; /* host-mapped, CNET_NWORDS x nslots lines + the hier line */
    CUdeviceptr words_dev;
    /* hierarchical calls queued; the hier word (after the slots' words) holds the low 32
     * bits of the number of the last whose all-gather ran. A hierarchical call's stream
     * waits for the one before it (other streams: they share the CUDA pool's staging) */
    uint64_t hier_seq;

    cnet_direct_t direct;

    bool has_stage; /* allocated and pinned */
    bool we_pinned; /* pinned by us (else by UCX: a UCX built with CUDA pins the host
                       pool's segments when it registers them) */
    size_t stage_off, slot_bytes;
    /* forced algorithms the channels' scratch serves besides the selector's (a bit per
     * topo_algo_t: cnet_cover) */
    uint32_t covered;
    char *stage;
    char *stage_dev; /* the GPU's view of it (mapped); NULL: no small-call kernel */
    /* after the slots, in the same pinned host pool memory: the node word (non-zero: a
     * rank of this node gave up, raised by that rank through the pool mapping; the
     * hierarchical kernels stop waiting then), and its device view */
    size_t node_off;
    const volatile uint32_t *node_word_dev;
    uint64_t nops;                   /* operations finished */
    double t_wait_in, t_net, t_busy; /* the channels' sums, as they stop */
};

static inline volatile uint32_t *cnet_word(cuda_net_t *cn, int which, int slot)
{
    return cn->words + ((size_t)which * (size_t)cn->nslots + (size_t)slot) * CNET_WORD_STRIDE;
}

static inline CUdeviceptr cnet_word_dev(cuda_net_t *cn, int which, int slot)
{
    return cn->words_dev + ((size_t)which * (size_t)cn->nslots + (size_t)slot) *
                               CNET_WORD_STRIDE * sizeof(uint32_t);
}

/* pthread_cond_timedwait for at most sec (mu held); true if it timed out. */
static inline bool cnet_timed_wait(pthread_cond_t *cond, pthread_mutex_t *mu, double sec)
{
    struct timespec ts;
    long ns;

    clock_gettime(CLOCK_REALTIME, &ts);
    ns = ts.tv_nsec + (long)(sec * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT;
}

/* Polls a host-mapped word until it reaches value (wrap-safe) or dl passes. */
static inline symcoll_status_t cnet_poll_word(volatile uint32_t *w, uint32_t value,
                                              const deadline_t *dl)
{
    unsigned iter = 0;

    while (!cnet_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), value)) {
        if (deadline_check(dl) != SYMCOLL_OK)
            return SYMCOLL_ERR_TIMED_OUT;
        core_spin_pause(&iter);
    }
    return SYMCOLL_OK;
}

/* the hier word: the line after the slots' */
#define CNET_HIER_LINE(cn) ((size_t)CNET_NWORDS * (size_t)(cn)->nslots * CNET_WORD_STRIDE)
/* the direct path's words: the lines after the hier line */
#define CNET_DIRECT_LINES (2 * CNET_DSLOTS + 1)
#define CNET_WORDS_LINES(cn) (CNET_HIER_LINE(cn) / CNET_WORD_STRIDE + 1 + CNET_DIRECT_LINES)

static inline size_t cnet_dword_index(cuda_net_t *cn, int which, int slot)
{
    return CNET_HIER_LINE(cn) +
           (1 + (size_t)which * CNET_DSLOTS + (size_t)slot) * CNET_WORD_STRIDE;
}

static inline volatile uint32_t *cnet_dword(cuda_net_t *cn, int which, int slot)
{
    return cn->words + cnet_dword_index(cn, which, slot);
}

static inline CUdeviceptr cnet_dword_dev(cuda_net_t *cn, int which, int slot)
{
    return cn->words_dev + cnet_dword_index(cn, which, slot) * sizeof(uint32_t);
}

/* ---- the direct path's buffers (cuda_net_direct_buf.c) ------------------------------- */

static inline size_t cnet_round(size_t v)
{
    return (v + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
}

/* host flag of source rank src for slot (row CNET_DSLOTS: the probe's barrier) */
static inline uint64_t *cnet_dflag(cnet_direct_t *d, int slot, int src, int nranks)
{
    return d->flags + (size_t)slot * (size_t)nranks + (size_t)src;
}

/* The host flags, if not there yet: zeroed and agreed before any peer puts into them
 * (collective: the caller's thread, nothing queued). */
symcoll_status_t cnet_flags_ensure(cuda_net_t *cn);

/* Waits for the flag of row slot of every remote peer (group: of every peer of the group)
 * to equal value (low 32 bits), keeping UCX progressing (the peers' puts may need us). */
symcoll_status_t cnet_dflags_wait(cuda_net_t *cn, ucx_ctx_t *ucx, int slot, uint32_t value,
                                  bool group, const deadline_t *dl);

/* Its buffers (caller's thread, nothing queued; collective), and their release (after
 * cnet_direct_wait_quiet). */
symcoll_status_t cnet_direct_ensure(cuda_net_t *cn, pool_t *cuda_pool);
void cnet_direct_release(cuda_net_t *cn);

/* The scratch only (CUDA pool trim), once the GPU left it; the flags stay. */
void cnet_direct_release_scratch(cuda_net_t *cn);

/* Waits (caller's thread) until the GPU reduced every direct chunk queued. */
symcoll_status_t cnet_direct_wait_quiet(cuda_net_t *cn);

/* ---- the staging (cuda_net_stage.c) -------------------------------------------------- */

/* Sets up the host staging, if not done yet (caller's thread, no operation queued, the
 * channels not started; collective). */
symcoll_status_t cnet_stage_ensure(cuda_net_t *cn);

/* Frees the host staging and the direct path's buffers once no queued stream work uses
 * them (the channels stopped). */
void cnet_stage_release(cuda_net_t *cn);

/* Waits (caller's thread) until the all-gather of every queued hierarchical call ran. */
symcoll_status_t cnet_wait_hier(cuda_net_t *cn);

/* Waits (caller's thread) until no queued stream work reads or writes the slots or the
 * words any more. */
symcoll_status_t cnet_wait_quiet(cuda_net_t *cn);

/* A rank of this node (this one included) raised the node word: it gave up. */
bool cnet_node_failed(const cuda_net_t *cn);

/* Raises the node word of every rank of the node: this rank gave up. */
void cnet_tell_node(cuda_net_t *cn);

/* ---- the direct path on channel 0 (cuda_net_direct_thread.c) ---------------------------- */

/* Channel 0: runs a direct operation (*k_p: the chunk it stopped at on failure), or gives
 * its chunks from k on up (raises their DDONE). */
symcoll_status_t cnet_run_direct(cnet_channel_t *ch, const cnet_op_t *op, uint64_t *k_p);
void cnet_direct_give_up(cnet_channel_t *ch, const cnet_op_t *op, uint64_t k);

/* ---- the channels (cuda_net_channel.c) --------------------------------------------------- */

/* Starts the channels (queue empty, the staging set up: caller's thread; collective). */
symcoll_status_t cnet_channels_start(cuda_net_t *cn);

/* Makes the channels' scratch serve algo on every chunk (forced by a call), once:
 * drains the queue, then reserves again (collective). */
symcoll_status_t cnet_cover(cuda_net_t *cn, topo_algo_t algo);

/* Stops the channels (queue drained: caller's thread; collective). */
void cnet_channels_stop(cuda_net_t *cn);

/* ---- the queue (cuda_net_queue.c) ---------------------------------------------------- */

/* Waits until at most max operations are queued. */
symcoll_status_t cnet_wait_queued(cuda_net_t *cn, uint64_t max);

/* Queues one operation for the channels and its pipeline on the stream (the staging is in
 * place); group: a hierarchical call's slice. forced: the algorithm of every chunk
 * (the plan's: symcoll_comm_set_algo, SYMCOLL_ALGO or a tuning file), or TOPO_ALGO_AUTO:
 * each chunk's own size chooses. */
symcoll_status_t cnet_enqueue(cuda_net_t *cn, cudaStream_t s, const void *sendbuf,
                              void *recvbuf, size_t count, symcoll_dtype_t dtype,
                              symcoll_op_t op, bool group, topo_algo_t forced);

/* Queues on s a wait until the host-mapped word at device address w reaches value
 * (CU_STREAM_WAIT_VALUE_GEQ, plus flags): cuStreamWaitValue32, or where the direct path
 * waits in kernels (cnet_direct_t's wait_kernel) a one-thread kernel that also ends when
 * the node word is raised. */
symcoll_status_t cnet_stream_wait(cuda_net_t *cn, cudaStream_t s, CUdeviceptr w, uint32_t value,
                                  unsigned flags);

/* ---- a direct call (cuda_net_direct_stream.c) ---------------------------------------- */

/* Queues a direct call: its operation for channel 0 and its pipeline on the stream. */
symcoll_status_t cnet_direct_enqueue(cuda_net_t *cn, cudaStream_t s, const void *sendbuf,
                                     void *recvbuf, size_t count, symcoll_dtype_t dtype,
                                     symcoll_op_t op);

/* ---- a hierarchical call (cuda_net_hier.c) ------------------------------------------- */

/* A hierarchical call (the plan's TOPO_FAMILY_NET_CUDA_HIER) over cuda_pool, queued on s;
 * direct: its slice goes the direct path (TOPO_FAMILY_NET_CUDA_HIER_DIRECT, the direct
 * buffers set up), else staged. */
symcoll_status_t cnet_hier(cuda_net_t *cn, cudaStream_t s, pool_t *cuda_pool,
                           const void *sendbuf, void *recvbuf, size_t count,
                           symcoll_dtype_t dtype, symcoll_op_t op, bool direct);

/* ---- the probe (cuda_net_probe.c) ---------------------------------------------------- */

/* The probe of the direct path, on the prepared engine (algo_cuda_net_probe: which ranks
 * run it, and the preparation before it). */
symcoll_status_t cnet_probe(comm_t *comm, pool_t *cuda_pool);

#endif
