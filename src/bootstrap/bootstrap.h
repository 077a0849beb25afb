/* Out-of-band exchange used at communicator creation and when a pool grows:
 * a caller-supplied allgather callback, or the built-in TCP rendezvous (rank 0 listens
 * on SYMCOLL_ADDR; every message carries the per-job cookie and a length and is
 * validated before use). Ranks of one node also get a Unix-socket channel that passes
 * file descriptors (SCM_RIGHTS) after an SO_PEERCRED uid check.
 *
 * Trust model of the built-in TCP bootstrap:
 *  - Every message starts with a header (magic, version, type, 64-bit job cookie,
 *    sender rank, sequence number, payload length). A header is checked before its
 *    payload is read: a wrong magic, version, type, cookie or rank, or a length other
 *    than the one the collective expects, fails the call with SYMCOLL_ERR_BOOTSTRAP
 *    (SYMCOLL_ERR_MISMATCH when a well-formed message disagrees on sequence or size).
 *    After such an error the channel is out of step and every later call fails.
 *  - With SYMCOLL_COOKIE set (symcoll_run sets it to a fresh random value), the cookie
 *    is a shared secret: rank 0 drops any connection whose hello does not carry it,
 *    so only processes that were given the job's environment can join. The cookie
 *    travels in clear text: it keeps out strangers and stray jobs, not an attacker
 *    who can read the network between the nodes.
 *  - Without SYMCOLL_COOKIE (a plain "SYMCOLL_ADDR=... ./prog" launch), rank 0 draws
 *    the cookie from getrandom() and gives it to each rank in its welcome; every later
 *    message must echo it. This is trust on first use: it turns a stray connection
 *    or a message from another job into an error, but anyone who can reach rank 0's
 *    port before the real rank could claim that rank. Use a cookie on shared networks.
 *  - Rank 0 listens on the address named in SYMCOLL_ADDR (127.0.0.1 keeps a job off
 *    the network), judges each connection on its own with a non-blocking reader, and
 *    drops (with an error log) anything malformed, duplicate or silent past the
 *    deadline while it keeps accepting the real ranks; at most 64 connections wait
 *    for their hello, the oldest is evicted first. Once every rank has joined it
 *    stops listening.
 *  - The local channel uses abstract Unix sockets named from the (public, random) job
 *    id and the global rank; both ends check SO_PEERCRED (same effective uid) and the
 *    cookie, so another user can neither connect nor pose as a listener.
 *  - With an allgather callback, the first exchange hands out rank 0's cookie and job
 *    id; every later contribution carries the same checked header. The callback
 *    itself is trusted and cannot be interrupted: the deadline and the abort flag
 *    are checked before it is called.
 *  - Every other wait polls with the deadline (timeout_sec) and the abort flag.
 */
#ifndef SYMCOLL_BOOTSTRAP_H
#define SYMCOLL_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef struct bootstrap bootstrap_t;

typedef struct bootstrap_params {
    int rank;
    int nranks;
    symcoll_allgather_fn_t allgather; /* NULL: built-in TCP bootstrap */
    void *allgather_ctx;
    const char *addr; /* built-in: rank 0's host:port */
    double timeout_sec;
    const _Atomic int *aborted; /* may be NULL */
    const char *cookie;         /* built-in: SYMCOLL_COOKIE (NULL, "": none) */
} bootstrap_params_t;

/* Collective over all ranks. */
symcoll_status_t bootstrap_create(const bootstrap_params_t *params, bootstrap_t **bs_p);
void bootstrap_destroy(bootstrap_t *bs);

/* dst receives nranks * size bytes ordered by rank. Collective. */
symcoll_status_t bootstrap_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size);
symcoll_status_t bootstrap_barrier(bootstrap_t *bs);

/* A 64-bit value the same on every rank and random per job (for naming sockets).
 * Public: it is not the cookie. */
uint64_t bootstrap_job_id(const bootstrap_t *bs);

/* Open the node-local channel among the ranks listed in local_ranks (global ranks in
 * local-rank order; this process is local_ranks[local_rank]). Collective over the
 * ranks of this node only (no global exchange: nodes may differ in size). Without
 * this call the local channel holds this rank alone. */
symcoll_status_t bootstrap_local_init(bootstrap_t *bs, int local_rank, int local_size,
                                      const int *local_ranks);

/* Every local rank contributes nfds file descriptors and len bytes of data; on return
 * all_fds holds local_size * nfds descriptors (this rank's own slot holds dup()s of its
 * own) and all_data local_size * len bytes, both in local-rank order. The caller owns
 * and must close every returned descriptor. Collective over the local ranks. */
symcoll_status_t bootstrap_local_fd_allgather(bootstrap_t *bs, const int *fds, int nfds,
                                              const void *data, size_t len, int *all_fds,
                                              void *all_data);

/* Barrier among the ranks of this node only. */
symcoll_status_t bootstrap_local_barrier(bootstrap_t *bs);

#endif
