/* Out-of-band exchange used at communicator creation and when a pool grows:
 * a caller-supplied allgather callback, or the built-in TCP rendezvous (rank 0 listens
 * on SYMCOLL_ADDR; every message carries the per-job cookie and a length and is
 * validated before use). Ranks of one node also get a Unix-socket channel that passes
 * file descriptors (SCM_RIGHTS) after an SO_PEERCRED uid check. */
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
    const char *addr;                 /* built-in: rank 0's host:port */
    double timeout_sec;
    const _Atomic int *aborted;       /* may be NULL */
} bootstrap_params_t;

/* Collective over all ranks. */
symcoll_status_t bootstrap_create(const bootstrap_params_t *params, bootstrap_t **bs_p);
void bootstrap_destroy(bootstrap_t *bs);

/* dst receives nranks * size bytes ordered by rank. Collective. */
symcoll_status_t bootstrap_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size);
symcoll_status_t bootstrap_barrier(bootstrap_t *bs);

/* A 64-bit value the same on every rank and random per job (for naming sockets). */
uint64_t bootstrap_job_id(const bootstrap_t *bs);

/* Open the node-local channel among the ranks listed in local_ranks (global ranks in
 * local-rank order; this process is local_ranks[local_rank]). Collective over all
 * ranks of the communicator (uses bootstrap_allgather/barrier internally). */
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
