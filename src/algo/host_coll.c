/* Reduce-scatter, all-gather, broadcast and barrier between the ranks of one node, over
 * the host pool, with the all-reduce's machinery (host.h): signal pads, call
 * descriptors (argument agreement), staging slots, the barrier.
 *
 * Every algorithm moves its data in chunks through the staging slots, one barrier per
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
#include "algo/host.h"

#include <string.h>

#include "algo/reduce.h"

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

/* The local rank root's count elements to every local rank's recvbuf. */
symcoll_status_t algo_host_broadcast(host_call_t *c, int root)
{
    algo_host_state_t *st = c->st;
    size_t nbytes = c->count * c->esize, off, in_off = 0;
    size_t piece = host_bc_piece(nbytes, st->chunk_bytes);
    bool in_linear = c->me == root && host_coll_linear(c, c->sendbuf, nbytes, &in_off);
    symcoll_status_t status;

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
