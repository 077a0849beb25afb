/* Out-of-band exchange used at communicator creation and when a pool grows:
 * a caller-supplied allgather callback, or the built-in TCP bootstrap (rank 0 listens
 * on SYMCOLL_ADDR and serves as the address book, or the launcher's PMIx server does;
 * the ranks then connect among themselves in a mesh of ceil(log2 n) connections per
 * direction, where the collectives run; ranks prove to each other that they know the
 * job's secret, and every message carries the job's session and a length and is
 * validated before use). Ranks of one node also get a
 * Unix-socket channel that passes file descriptors (SCM_RIGHTS) after an SO_PEERCRED
 * uid check.
 *
 * Trust model of the built-in TCP bootstrap:
 *  - The job's secret is SYMCOLL_COOKIE (symcoll_run sets a fresh random one). It never
 *    crosses the wire: rank 0 sends every connection a fresh random nonce, and the
 *    joiner answers with HMAC-SHA256(secret, label, nonces, rank, size); rank 0 checks
 *    it in constant time and drops (info log: peer address and why) any connection
 *    that fails, while it keeps listening for the real rank until the deadline. Rank 0
 *    proves itself the same way over the joiner's nonce, so a listener that is not the
 *    job's rank 0 is refused and learns only a proof over its own nonce. A recorded
 *    exchange does not work twice (fresh nonces). Only processes given the job's
 *    environment can join.
 *  - Rank 0 is only the address book: each joiner tells it, in its hello, where it
 *    listens for its mesh partners (a port the kernel picks, on the address with which
 *    it reached rank 0), and once every rank has proven itself rank 0 sends each rank
 *    the addresses of the ceil(log2 n) ranks it will send to, nothing more, and both
 *    ends close the rendezvous connection. In round k of every collective rank r sends
 *    to (r - 2^k) mod n over a connection it dialed and receives from (r + 2^k) mod n
 *    over one it accepted, so a rank holds 2 ceil(log2 n) sockets and moves as many
 *    bytes as any other.
 *  - Each mesh connection starts with a mutual proof of the secret: the dialer sends
 *    a fresh nonce and HMAC(secret, label, job id, nonce, both ranks, round, size), and
 *    the listener answers with its own HMAC over the same values under another label.
 *    The listener judges hellos as rank 0 does (strangers and wrong proofs are dropped
 *    while it waits for the real partner until the deadline); the dialer refuses a
 *    listener that cannot answer. The dialer's proof is fresh per job (the job id is
 *    rank 0's random), not per connection: a hello recorded on the network could be
 *    replayed within the same job to the same listener, which the point below already
 *    leaves out of scope.
 *  - Not covered: the data is not encrypted or authenticated message by message, so
 *    an attacker who can read, relay or alter the traffic between the nodes can still
 *    read or disturb the job (keep SYMCOLL_ADDR on a trusted network).
 *  - Without SYMCOLL_COOKIE (a plain "SYMCOLL_ADDR=... ./prog" launch) there is no
 *    secret: a warning says so once per process, and anyone who reaches rank 0's port
 *    before the real rank and speaks the protocol can claim that rank (it learns no
 *    secret: there is none).
 *  - Every message header carries the magic, version, type, the job's session (the
 *    public random job id, handed out by rank 0), sender rank, sequence number and
 *    payload length. A header is checked before its payload is read: a wrong magic,
 *    version, type, session or rank, or a length other than the one the collective
 *    expects, fails the call with SYMCOLL_ERR_BOOTSTRAP (SYMCOLL_ERR_MISMATCH when a
 *    well-formed message disagrees on sequence or size). After such an error the
 *    channel is out of step and every later call fails.
 *  - Rank 0 listens on the address named in SYMCOLL_ADDR (127.0.0.1 keeps a job off
 *    the network, and so the mesh listeners, on the same address, too), judges each
 *    connection on its own with a non-blocking reader, and drops anything malformed,
 *    unproven, duplicate or silent past the deadline while it keeps accepting the real
 *    ranks; at most 64 connections wait for their hello, the oldest is evicted first.
 *    Once every rank has joined it stops listening; every mesh listener closes once
 *    its partners are in.
 *  - The local channel uses abstract Unix sockets whose names are an HMAC of a random
 *    seed that only the ranks learn from rank 0 (mixed with the secret when there is
 *    one), so another user cannot take a rank's name before the rank binds it; both
 *    ends check SO_PEERCRED (same effective uid) and the session, so another user can
 *    neither connect nor pose as a listener.
 *  - Under a PMIx server (mpirun, srun --mpi=pmix) the job's namespace is the trust
 *    boundary and its key-value store, which only the job's processes read, is the
 *    address book: every rank publishes where it listens for its mesh partners, rank
 *    0 also a fresh random secret, the job id and the name seed; after one fence each
 *    rank reads those and the addresses of the ranks it sends to, and the mesh above
 *    connects with that secret (no TCP rendezvous through rank 0). SYMCOLL_ADDR and
 *    SYMCOLL_COOKIE are not read. The ranks listen on 127.0.0.1 when the job has a
 *    single node, else on every address (the secret keeps strangers out).
 *  - With an allgather callback, the first exchange hands out rank 0's job id and name
 *    seed; every later contribution carries the same checked header. The callback
 *    itself is trusted and cannot be interrupted: the deadline and the abort flag
 *    are checked before it is called.
 *  - Every other wait polls with the deadline (timeout_sec) and the abort flag.
 */
#ifndef SYMCOLL_BOOTSTRAP_H
#define SYMCOLL_BOOTSTRAP_H

#include <stdbool.h>
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
    /* built-in, rank 0: a socket its launcher opened, listening on addr's port
     * (SYMCOLL_LISTEN_FD; below 3: none); taken once per process */
    int listen_fd;
    /* built-in: every rank dials rank 0 itself, rather than through one leader of the
     * ranks of its host (SYMCOLL_RENDEZVOUS_LEADERS=0) */
    bool no_host_leaders;
    /* built-in: ranks with the same host and group share a leader (SYMCOLL_HOST_ID;
     * NULL, "": the host alone) */
    const char *host_group;
    /* rendezvous through PMIx (no allgather): rank and nranks are PMIx's (see
     * bootstrap_pmix_job); addr and cookie are not used */
    bool pmix;
} bootstrap_params_t;

/* This process's place in a PMIx job. */
typedef struct bootstrap_pmix_job {
    int rank;
    int nranks;
    int local_rank;    /* PMIX_LOCAL_RANK; -1: not known */
    int local_size;    /* ranks of the job on this node (PMIX_LOCAL_PEERS); 0: not known */
    char node_id[128]; /* the launcher's name of this node ("pmix:host#nodeid"); "": none */
} bootstrap_pmix_job_t;

/* Whether this library was built with PMIx and the environment names a PMIx server
 * (PMIX_NAMESPACE, PMIX_RANK and a PMIX_SERVER_URI* variable, as mpirun and srun
 * --mpi=pmix set them). Calls nothing of PMIx, so it is quick and harmless anywhere. */
bool bootstrap_pmix_present(void);
/* Whether this library was built with PMIx. */
bool bootstrap_pmix_built(void);

/* Initialises PMIx (once per process; it is finalised at exit, see pmix.c) and reads
 * this process's place in the job. */
symcoll_status_t bootstrap_pmix_job(bootstrap_pmix_job_t *job);

/* Collective over all ranks. */
symcoll_status_t bootstrap_create(const bootstrap_params_t *params, bootstrap_t **bs_p);
void bootstrap_destroy(bootstrap_t *bs);

/* dst receives nranks * size bytes ordered by rank. Collective. Over TCP: Bruck's
 * allgather, ceil(log2 n) rounds, every rank sends and receives (n - 1) * size bytes. */
symcoll_status_t bootstrap_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size);
symcoll_status_t bootstrap_barrier(bootstrap_t *bs);

/* Element-wise operations of bootstrap_allreduce: votes and agreements, not data. */
typedef enum {
    BOOTSTRAP_OP_MIN, /* AND of flags that are 0 or 1 */
    BOOTSTRAP_OP_MAX  /* OR of such flags */
} bootstrap_op_t;

/* vals (count values per rank) becomes the element-wise op over every rank's vals: the
 * same on every rank. Collective. count at most BOOTSTRAP_ALLREDUCE_MAX. Over TCP:
 * ceil(log2 n) rounds of count values each (dissemination). */
#define BOOTSTRAP_ALLREDUCE_MAX 64
symcoll_status_t bootstrap_allreduce(bootstrap_t *bs, int64_t *vals, int count,
                                     bootstrap_op_t op);

/* While set, the waits of the bootstrap's collectives over its own sockets (the TCP mesh,
 * the node channel; not the rendezvous of creation) call fn(arg) after every
 * BOOTSTRAP_PROGRESS_MS without an event: a layer above
 * that must answer peers while this rank waits in an exchange (UCX: rkey requests, see
 * ucx.h) hooks itself in here. fn runs on the thread of the exchange and must not use
 * the bootstrap. NULL unsets. A caller's allgather (symcoll_comm_params_t) cannot be
 * hooked: it is the caller's engine. */
#define BOOTSTRAP_PROGRESS_MS 1
void bootstrap_set_progress(bootstrap_t *bs, void (*fn)(void *arg), void *arg);

/* What this rank's bootstrap moved since creation (rendezvous included), for the scale
 * harness and reports: bytes of headers and payloads over TCP (the node-local channel
 * and a caller's allgather are not counted in tcp_*), messages, collective rounds,
 * TCP connections open now. */
typedef struct bootstrap_stats {
    uint64_t tcp_bytes_sent;
    uint64_t tcp_bytes_recv;
    uint64_t tcp_msgs_sent;
    uint64_t rounds;    /* rounds of the collectives (one per callback exchange) */
    uint64_t exchanges; /* collectives (allgather, allreduce, barrier) */
    int tcp_conns;      /* TCP sockets this rank holds now (mesh and rendezvous) */
    /* rank 0 of the TCP rendezvous: CPU time of its thread while it served the others
     * (accepts, proofs, the address book), for bench/scale_model.py; else 0 */
    double rendezvous_cpu_s;
    /* of tcp_bytes_*: the TCP rendezvous's (rank 0: with every rank; the others: with
     * rank 0); the rest is the mesh's */
    uint64_t rendezvous_bytes;
    /* rank 0 of the TCP rendezvous: connections it served (ranks that dialled it
     * themselves and host leaders) and ranks it heard of through a leader; a host
     * leader: its members; else 0 */
    int rendezvous_conns;
    int rendezvous_members;
} bootstrap_stats_t;
void bootstrap_stats(const bootstrap_t *bs, bootstrap_stats_t *out);

/* A 64-bit value the same on every rank and random per job. Public: it is not a
 * secret (it travels in every message header). */
uint64_t bootstrap_job_id(const bootstrap_t *bs);

/* SYMCOLL_OK, or the status of the exchange that failed: the channel is unusable and the
 * ranks are out of step. */
symcoll_status_t bootstrap_failed(const bootstrap_t *bs);

/* This rank gave up on the communicator (an abort): the channel fails with
 * SYMCOLL_ERR_ABORTED and its connections are shut down, so that peers waiting for us in
 * an exchange see it end now (as a closed connection: the channel carries no reason)
 * rather than at our destroy or their deadline. Not collective; from the thread that
 * owns the channel. */
void bootstrap_abort(bootstrap_t *bs);

/* Collective over every rank of parent: the ranks that pass the same color >= 0 get a
 * bootstrap of their own (*child_p), ranked by key then by rank in parent, with its own
 * mesh connected through addresses exchanged over parent (no rendezvous); *members_p
 * (malloc'd, *nmembers_p long) lists their ranks in parent, in the child's order, and
 * *flag_all_p is the AND of the members' `flag` (one bit the caller agrees on for
 * free). A color < 0 takes part and gets NULL. Uses parent like any of its collectives
 * (the caller holds whatever serialises them). */
symcoll_status_t bootstrap_split(bootstrap_t *parent, int color, int key, bool flag,
                                 double timeout_sec, const _Atomic int *aborted,
                                 bootstrap_t **child_p, int **members_p, int *nmembers_p,
                                 bool *flag_all_p);

/* Collective over every rank of bs, after it connected: each rank opens the listener
 * that bootstrap_shrink's agreement dials, and the ranks all-gather where (one address
 * a rank: 24 bytes x nranks, and one descriptor). A rank that cannot listen says so and
 * counts as dead to a later shrink; only the exchange's failure is returned. */
symcoll_status_t bootstrap_shrink_prepare(bootstrap_t *bs);

/* (bootstrap_shrink's flag and *flag_all_p as bootstrap_split's.) Called by the ranks of
 * parent that are alive (parent may be failed or aborted): they
 * agree, within timeout_sec, on who they are, over the listeners of
 * bootstrap_shrink_prepare (the lowest rank that answers coordinates), and connect a
 * bootstrap of their own (*child_p) ranked in parent's order; *members_p (malloc'd,
 * *nmembers_p long) lists their ranks in parent. SYMCOLL_ERR_TIMED_OUT for a rank left
 * out as too late, or when nobody answered; a chosen rank that fails before the new
 * mesh is connected fails the call (call again). */
symcoll_status_t bootstrap_shrink(bootstrap_t *parent, bool flag, double timeout_sec,
                                  const _Atomic int *aborted, bootstrap_t **child_p,
                                  int **members_p, int *nmembers_p, bool *flag_all_p);

/* This rank and the number of ranks of a bootstrap. */
int bootstrap_rank(const bootstrap_t *bs);
int bootstrap_size(const bootstrap_t *bs);

/* Which bootstrap connected the ranks, in words: "pmix (...)", "tcp (...)", "callback
 * (...)" or "single rank". */
const char *bootstrap_describe(const bootstrap_t *bs);

/* Open the node-local channel among the ranks listed in local_ranks (global ranks in
 * local-rank order; this process is local_ranks[local_rank]). Collective over the
 * ranks of this node only (no global exchange: nodes may differ in size). Without
 * this call the local channel holds this rank alone. While it waits for its local
 * partners, a hangup on any connection this rank holds (the mesh too) with nothing
 * left to read ends it with SYMCOLL_ERR_PEER_FAILED: no rank of the job may destroy
 * its bootstrap before every node's channel is open (a communicator's creation has a
 * job-wide exchange after). bootstrap_create's mesh waits watch the same way. */
symcoll_status_t bootstrap_local_init(bootstrap_t *bs, int local_rank, int local_size,
                                      const int *local_ranks);

/* Every local rank contributes nfds file descriptors and len bytes of data; on return
 * all_fds holds local_size * nfds descriptors (this rank's own slot holds dup()s of its
 * own) and all_data local_size * len bytes, both in local-rank order. The caller owns
 * and must close every returned descriptor. Collective over the local ranks, in
 * ceil(log2 local_size) rounds over the channel's partners; len * ceil(local_size / 2)
 * is at most 1 GiB (a round's message). */
symcoll_status_t bootstrap_local_fd_allgather(bootstrap_t *bs, const int *fds, int nfds,
                                              const void *data, size_t len, int *all_fds,
                                              void *all_data);

/* Barrier among the ranks of this node only. */
symcoll_status_t bootstrap_local_barrier(bootstrap_t *bs);

#endif
