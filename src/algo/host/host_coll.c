/* Reduce-scatter, all-gather, broadcast and barrier between the ranks of one node, over
 * the host pool, with the all-reduce's machinery (host.h): signal pads, call
 * descriptors (argument agreement), staging slots, the barrier.
 *
 * Broadcasts of at most HOST_BC_EAGER_MAX bytes are eager and meet no barrier (below).
 * Every other call moves its data in chunks through the staging slots, one barrier per
 * chunk: a rank copies its part of chunk k into a slot (or exposes it in place when the
 * caller's buffer is in the pool), passes barrier k, and copies or reduces what it
 * needs of chunk k straight from its peers' slots into its output. The slot rotation
 * of HOST_STAGING_SLOTS makes reuse safe without an end barrier, as in the one-shot
 * all-reduce (host_oneshot.c): a rank writes a slot again only after passing the barrier
 * of a later chunk, which every peer signals only after it finished reading. Input read
 * in place from a caller's pool buffer is different (the caller may change it once the
 * call returns), so such a call ends with one more barrier; below HOST_COLL_LINEAR_MIN
 * the input is copied even from the pool, which costs less than that barrier.
 *
 * The barriers are algo_host_barrier_lazy: at small sizes a call is one barrier, and the
 * fence of the all-reduce's barrier would be a third of its time.
 */
#include "algo/host/host.h"

#include <string.h>

#include "algo/base/ctx.h"
#include "algo/base/reduce.h"
#include "core/wait.h"
#include "topo/topo.h"

/* Inputs of fewer bytes are copied into the staging slots even from a pool buffer. */
#define HOST_COLL_LINEAR_MIN 16384

/* Whether a rank's input of bytes at p is read in place (its pool offset in *off). */
static bool host_coll_linear(const host_call_t *c, const void *p, size_t bytes, size_t *off)
{
    return bytes >= HOST_COLL_LINEAR_MIN && pool_lookup(c->pool, p, bytes, off);
}

/* Input of rank r read in place (its descriptor says so): its pool buffer at off. */
static const char *host_linear_in(const host_call_t *c, int r, size_t off)
{
    return (const char *)pool_peer_addr(c->pool, r, c->st->peer_in[r]) + off;
}

static bool host_any_in_linear(const host_call_t *c)
{
    for (int r = 0; r < c->n; r++)
        if (c->st->peer_flags[r] & HOST_DESC_IN_LINEAR)
            return true;
    return false;
}

/* The end of a call: one more barrier when some rank's input was read in place. */
static symcoll_status_t host_coll_end(host_call_t *c)
{
    return host_any_in_linear(c) ? algo_host_barrier_lazy(c) : SYMCOLL_OK;
}

/* recvbuf holds n blocks of count elements; block r comes from local rank r. In place
 * when sendbuf is our own block of recvbuf (then it is not copied). */
symcoll_status_t algo_host_allgather(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    size_t block = c->count * c->esize, chunk = st->chunk_bytes, off, in_off = 0;
    char *own = c->recvbuf + (size_t)c->me * block;
    bool in_linear = host_coll_linear(c, c->sendbuf, block, &in_off);
    symcoll_status_t status;

    algo_host_desc_publish(c, HOST_ALGO_ALLGATHER, in_linear ? HOST_DESC_IN_LINEAR : 0, in_off,
                           0);
    for (size_t k = 0; (off = k * chunk) < block; k++) {
        size_t bytes = block - off < chunk ? block - off : chunk;
        unsigned slot = (unsigned)(st->slot++ % HOST_STAGING_SLOTS);

        if (!in_linear)
            memcpy(algo_host_staging(c, c->me, slot), c->sendbuf + off, bytes);
        status = algo_host_barrier_lazy(c);
        if (status != SYMCOLL_OK)
            return status;
        if (k == 0) {
            status = algo_host_desc_collect(c, HOST_ALGO_ALLGATHER);
            if (status != SYMCOLL_OK)
                return status;
        }
        for (int i = 1; i < c->n; i++) {
            int r = (c->me + i) % c->n; /* spread the readers over the owners */
            memcpy(c->recvbuf + (size_t)r * block + off, algo_host_in(c, r, k, slot), bytes);
        }
        if (c->sendbuf != own)
            memcpy(own + off, c->sendbuf + off, bytes);
    }
    return host_coll_end(c);
}

/* Bytes of one broadcast piece: the root's copy into a slot overlaps the others' copies
 * out of the slot before only across pieces, so a message of up to 8 chunks moves in
 * about 8 pieces, of whole pages and not under 32 KiB (each piece costs a barrier). */
static size_t host_bc_piece(size_t nbytes, size_t chunk)
{
    size_t piece = (nbytes / 8 + 4095) / 4096 * 4096;

    if (piece < 32768)
        piece = 32768;
    return piece < chunk ? piece : chunk;
}

/*
 * Eager broadcast (at most HOST_BC_EAGER_MAX bytes; the ring and its credits: host.h).
 * The root does not wait for the receivers: it writes header and data into the next slot
 * of its ring and returns, waiting (bounded, like every wait) only while the ring is full,
 * so that a loop of broadcasts pipelines as a FIFO does. A receiver checks the header
 * (the broadcast's number on the communicator, count, datatype, root) against its own
 * arguments. A mismatched broadcast is reported by every receiver at that call and by
 * the root no later than its next call that waits for that receiver (any other
 * collective, or a broadcast that finds the ring full: within HOST_BC_SLOTS broadcasts):
 * the receiver fails with SYMCOLL_ERR_MISMATCH, breaks the communicator and gives up in
 * its pad, which every wait reads and the root reads at each eager call too (a line that
 * does not change costs no transfer), so an eager call after the receiver gave up fails
 * at once. Ranks that
 * all think themselves root read nothing; the broadcast numbers in the next headers and
 * descriptors then disagree. Ranks that wait for each other as root see each other's
 * bc_wait word.
 *
 * Other collectives do not touch the ring or its counters and keep their own
 * synchronisation; the ring needs none with them: a root reuses a slot only after every
 * receiver said it consumed the message there.
 */

bool algo_host_bc_eager(const algo_host_state_t *st, size_t nbytes)
{
    return st->has_bc && nbytes <= HOST_BC_EAGER_MAX;
}

static algo_host_bc_hdr_t *host_bc_slot(const host_call_t *c, int r, uint64_t k)
{
    return (algo_host_bc_hdr_t *)pool_peer_addr(
        c->pool, r, c->st->bc_off + (size_t)(k % HOST_BC_SLOTS) * HOST_BC_SLOT_BYTES);
}

/* Fails an eager call: the communicator breaks, the peers hear it. */
static symcoll_status_t host_bc_fail(host_call_t *c, symcoll_status_t status)
{
    algo_break(c->comm, status);
    return algo_host_fail(c, status);
}

/* A peer that gave up (an abort, a failure, a mismatch it received): this call fails. */
static symcoll_status_t host_bc_peers_ok(host_call_t *c)
{
    for (int r = 0; r < c->n; r++) {
        if (r == c->me || !atomic_load_explicit(&c->st->sig[r]->aborted, memory_order_acquire))
            continue;
        symcoll_status_t why = algo_host_peer_reason(c->st->sig[r]);
        log_error("broadcast: rank %d (local rank %d) gave up: %s",
                  c->comm->topo->local_ranks[r], r, symcoll_status_string(why));
        return host_bc_fail(c, why);
    }
    return SYMCOLL_OK;
}

typedef struct host_bc_wait_arg {
    host_call_t *c;
    int r;          /* the rank waited for */
    uint64_t mark;  /* receiver: our bc_wait value; 0 for the root */
    bool published; /* bc_wait stored */
} host_bc_wait_arg_t;

static symcoll_status_t host_bc_check(void *arg)
{
    host_bc_wait_arg_t *a = arg;
    algo_host_sig_t *peer = a->c->st->sig[a->r];

    if (a->mark) {
        uint64_t theirs = atomic_load_explicit(&peer->bc_wait, memory_order_relaxed);
        if (!a->published) {
            atomic_store_explicit(&a->c->st->sig[a->c->me]->bc_wait, a->mark,
                                  memory_order_relaxed);
            a->published = true;
        }
        /* our root waits as a receiver of the same broadcast */
        if (theirs >> 12 == a->mark >> 12) {
            log_error("broadcast: local rank %d, the root here, waits for root %d there", a->r,
                      (int)(theirs & 0xfff));
            return SYMCOLL_ERR_MISMATCH;
        }
    }
    return algo_host_wait_check(a->c, a->r);
}

static symcoll_status_t host_bc_wait(host_call_t *c, int r, _Atomic uint64_t *word,
                                     uint64_t target, uint64_t mark)
{
    host_bc_wait_arg_t arg = {c, r, mark, false};
    core_wait_t w = {.spin_max = c->st->spin_max,
                     .yields = 2,
                     .sleep_ns = 1000000L,
                     .progress = NULL,
                     .check = host_bc_check,
                     .arg = &arg};
    symcoll_status_t status = core_wait_word(&w, word, &c->st->sig[r]->bc_waiters, target);

    if (status == SYMCOLL_OK)
        return SYMCOLL_OK;
    if (status != SYMCOLL_ERR_MISMATCH)
        log_error("broadcast: waiting for rank %d (local rank %d): %s",
                  c->comm->topo->local_ranks[r], r, symcoll_status_string(status));
    return host_bc_fail(c, status);
}

static uint64_t host_bc_sig(const host_call_t *c, int root)
{
    return (uint64_t)(c->dtype & 0xff) | (uint64_t)(uint32_t)root << 32;
}

/* Asks for the lines of our slot for message k, as long as one of nbytes takes, for
 * writing. A receiver read the data lines a lap ago and reads the header line now (it
 * prefetches its next header and waits on the stamp), so each store needs the line back
 * from its core; without this the root's stores wait in the store buffer for those
 * transfers and the call's own stack stores stall behind them. On the 2-core VM, 2 ranks
 * back to back, while its cross-core transfers are slow: 8 B 0.20 -> 0.14 us a call,
 * 512 B 0.24 -> 0.18 us; while they are fast: 8-512 B within 3 %, 2 KiB 0.17 -> 0.13 us
 * One slot ahead: further ones took longer. */
static void host_bc_prefetch(const host_call_t *c, uint64_t k, size_t nbytes)
{
    const char *p = (const char *)host_bc_slot(c, c->me, k);
    size_t lines = 1 + (nbytes > HOST_BC_INLINE ? (nbytes - HOST_BC_INLINE + 63) / 64 : 0);

    for (size_t i = 0; i < lines; i++) {
#if defined(__x86_64__) || defined(__i386__)
        if (c->st->prefetchw)
            __asm__ volatile("prefetchw %0" : : "m"(p[64 * i]));
#else
        __builtin_prefetch(p + 64 * i, 1, 3);
#endif
    }
}

static symcoll_status_t host_bc_send(host_call_t *c, int root, size_t nbytes, uint64_t seq)
{
    algo_host_state_t *st = c->st;
    uint64_t k = st->bc_sent;
    algo_host_sig_t *me = st->sig[c->me];
    algo_host_bc_hdr_t *h;
    size_t head = nbytes < HOST_BC_INLINE ? nbytes : HOST_BC_INLINE;

    if (k - st->bc_credit >= HOST_BC_SLOTS) {
        /* the ring is full as far as we know: every receiver's latest count */
        uint64_t least = UINT64_MAX, need = k - HOST_BC_SLOTS + 1;
        for (int r = 0; r < c->n; r++) {
            uint64_t v;
            if (r == c->me)
                continue;
            v = atomic_load_explicit(&st->sig[r]->bc_cons[c->me], memory_order_acquire);
            if (v < need) {
                symcoll_status_t status =
                    host_bc_wait(c, r, &st->sig[r]->bc_cons[c->me], need, 0);
                if (status != SYMCOLL_OK)
                    return status;
                v = atomic_load_explicit(&st->sig[r]->bc_cons[c->me], memory_order_acquire);
            }
            least = v < least ? v : least;
        }
        st->bc_credit = least;
    }
    h = host_bc_slot(c, c->me, k);
    memcpy(h->data, c->sendbuf, head);
    if (nbytes > head)
        memcpy((char *)h + 64, c->sendbuf + head, nbytes - head);
    atomic_store_explicit(&h->seq, seq, memory_order_relaxed);
    atomic_store_explicit(&h->count, c->count, memory_order_relaxed);
    atomic_store_explicit(&h->sig, host_bc_sig(c, root), memory_order_relaxed);
    atomic_store_explicit(&h->stamp, k + 1, memory_order_release);
    /* a receiver asleep on the stamp (rare: the check is not fenced, a wake-up it misses
     * ends its bounded sleep) */
    if (atomic_load_explicit(&me->bc_waiters, memory_order_relaxed))
        core_word_publish(&h->stamp, &me->bc_waiters, k + 1);
    st->bc_sent = k + 1;
    host_bc_prefetch(c, k + 1, nbytes);
    if (c->sendbuf != c->recvbuf)
        memcpy(c->recvbuf, c->sendbuf, nbytes);
    return SYMCOLL_OK;
}

static symcoll_status_t host_bc_recv(host_call_t *c, int root, size_t nbytes, uint64_t seq)
{
    algo_host_state_t *st = c->st;
    uint64_t k = st->bc_recvd[root], hseq, hcount, hsig;
    algo_host_bc_hdr_t *h = host_bc_slot(c, root, k);
    size_t head = nbytes < HOST_BC_INLINE ? nbytes : HOST_BC_INLINE;
    bool match;
    symcoll_status_t status;

    if (atomic_load_explicit(&h->stamp, memory_order_acquire) < k + 1) {
        status = host_bc_wait(c, root, &h->stamp, k + 1, (seq + 1) << 12 | (uint64_t)root);
        if (status != SYMCOLL_OK)
            return status;
    }
    hseq = atomic_load_explicit(&h->seq, memory_order_relaxed);
    hcount = atomic_load_explicit(&h->count, memory_order_relaxed);
    hsig = atomic_load_explicit(&h->sig, memory_order_relaxed);
    match = hseq == seq && hcount == c->count && hsig == host_bc_sig(c, root);
    if (match) {
        memcpy(c->recvbuf, h->data, head);
        if (nbytes > head)
            memcpy(c->recvbuf + head, (const char *)h + 64, nbytes - head);
    }
    /* consumed either way, so that the root's credits stay right */
    st->bc_recvd[root] = ++k;
    /* in a loop the root is ahead: the next header is likely written already, and its
     * transfer then overlaps the rest of this call and the start of the next */
    __builtin_prefetch(host_bc_slot(c, root, k));
    if (k % (HOST_BC_SLOTS / 2) == 0)
        core_word_publish(&st->sig[c->me]->bc_cons[root], &st->sig[c->me]->bc_waiters, k);
    if (match)
        return SYMCOLL_OK;
    log_error("broadcast: local rank %d (rank %d), the root, called with different arguments: "
              "count %llu %s root %d as broadcast %llu there, count %zu %s root %d as "
              "broadcast %llu here",
              root, c->comm->topo->local_ranks[root], (unsigned long long)hcount,
              symcoll_dtype_name((symcoll_dtype_t)(hsig & 0xff)), (int)(uint32_t)(hsig >> 32),
              (unsigned long long)hseq, c->count, symcoll_dtype_name(c->dtype), root,
              (unsigned long long)seq);
    return host_bc_fail(c, SYMCOLL_ERR_MISMATCH);
}

static symcoll_status_t host_bc_eager_run(host_call_t *c, int root, size_t nbytes, uint64_t seq)
{
    symcoll_status_t status = host_bc_peers_ok(c);

    if (status != SYMCOLL_OK)
        return status;
    return c->me == root ? host_bc_send(c, root, nbytes, seq)
                         : host_bc_recv(c, root, nbytes, seq);
}

/* The local rank root's count elements to every local rank's recvbuf. */
symcoll_status_t algo_host_broadcast(host_call_t *c, int root)
{
    algo_host_state_t *st = c->st;
    size_t nbytes = c->count * c->esize, off, in_off = 0;
    size_t piece = host_bc_piece(nbytes, st->chunk_bytes);
    bool in_linear;
    uint64_t seq = st->bc_seq++;
    symcoll_status_t status;

    if (algo_host_bc_eager(st, nbytes))
        return host_bc_eager_run(c, root, nbytes, seq);
    in_linear = c->me == root && host_coll_linear(c, c->sendbuf, nbytes, &in_off);

    algo_host_desc_publish(c, HOST_ALGO_BROADCAST, in_linear ? HOST_DESC_IN_LINEAR : 0, in_off,
                           0);
    for (size_t k = 0; (off = k * piece) < nbytes; k++) {
        size_t bytes = nbytes - off < piece ? nbytes - off : piece;
        unsigned slot = (unsigned)(st->slot++ % HOST_STAGING_SLOTS);

        if (c->me == root && !in_linear)
            memcpy(algo_host_staging(c, c->me, slot), c->sendbuf + off, bytes);
        status = algo_host_barrier_lazy(c);
        if (status != SYMCOLL_OK)
            return status;
        if (k == 0) {
            status = algo_host_desc_collect(c, HOST_ALGO_BROADCAST);
            if (status != SYMCOLL_OK)
                return status;
        }
        if (c->me != root)
            memcpy(c->recvbuf + off,
                   st->peer_flags[root] & HOST_DESC_IN_LINEAR
                       ? host_linear_in(c, root, off)
                       : algo_host_staging(c, root, slot),
                   bytes);
        else if (c->sendbuf != c->recvbuf)
            memcpy(c->recvbuf + off, c->sendbuf + off, bytes);
    }
    return host_coll_end(c);
}

/* Bytes of each block that one chunk carries: the n blocks' pieces share a staging slot
 * (whole cache lines where the slot allows, else whole 8-byte words, a multiple of every
 * element size); 0 when the slot cannot hold a word per rank. */
size_t algo_host_rs_piece(size_t chunk_bytes, int n)
{
    size_t piece = chunk_bytes / (size_t)n / 64 * 64;
    return piece ? piece : chunk_bytes / (size_t)n / 8 * 8;
}

/* sendbuf holds n blocks of count elements; local rank r reduces block r of every
 * rank's input into its recvbuf. Each element is reduced once, by its block's owner, in
 * rank order. In place when recvbuf is our own block of sendbuf. */
symcoll_status_t algo_host_reduce_scatter(host_call_t *c)
{
    algo_host_state_t *st = c->st;
    size_t block = c->count * c->esize, piece = algo_host_rs_piece(st->chunk_bytes, c->n);
    size_t off, in_off = 0, es = c->esize;
    bool in_linear = host_coll_linear(c, c->sendbuf, block * (size_t)c->n, &in_off);
    symcoll_status_t status;

    algo_host_desc_publish(c, HOST_ALGO_REDUCE_SCATTER, in_linear ? HOST_DESC_IN_LINEAR : 0,
                           in_off, 0);
    for (size_t k = 0; (off = k * piece) < block; k++) {
        size_t bytes = block - off < piece ? block - off : piece;
        unsigned slot = (unsigned)(st->slot++ % HOST_STAGING_SLOTS);

        if (!in_linear) {
            /* every block but ours, which only we read, straight from sendbuf */
            char *stage = algo_host_staging(c, c->me, slot);
            for (int j = 0; j < c->n; j++)
                if (j != c->me)
                    memcpy(stage + (size_t)j * piece, c->sendbuf + (size_t)j * block + off,
                           bytes);
        }
        status = algo_host_barrier_lazy(c);
        if (status != SYMCOLL_OK)
            return status;
        if (k == 0) {
            status = algo_host_desc_collect(c, HOST_ALGO_REDUCE_SCATTER);
            if (status != SYMCOLL_OK)
                return status;
        }
        for (int r = 0; r < c->n; r++)
            st->srcs[r] = (st->peer_flags[r] & HOST_DESC_IN_LINEAR)
                              ? host_linear_in(c, r, (size_t)c->me * block + off)
                              : algo_host_staging(c, r, slot) + (size_t)c->me * piece;
        st->srcs[c->me] = c->sendbuf + (size_t)c->me * block + off;
        algo_reduce(c->recvbuf + off, st->srcs, c->n, bytes / es, c->dtype, c->op,
                    c->comm->nranks);
    }
    return host_coll_end(c);
}

/* One barrier, with the descriptors: a rank in another collective is a mismatch. */
symcoll_status_t algo_host_coll_barrier(host_call_t *c)
{
    symcoll_status_t status;

    algo_host_desc_publish(c, HOST_ALGO_BARRIER, 0, 0, 0);
    status = algo_host_barrier_lazy(c);
    if (status != SYMCOLL_OK)
        return status;
    return algo_host_desc_collect(c, HOST_ALGO_BARRIER);
}
