/* Internals of the bootstrap shared by its files: the bootstrap object, the wire
 * header every message carries, and the poll-driven transfer engine. */
#ifndef SYMCOLL_BOOTSTRAP_BS_INT_H
#define SYMCOLL_BOOTSTRAP_BS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/sha256.h"

#define BS_MAGIC 0x53594d42u /* "SYMB" */
#define BS_VERSION 5u

#define BS_NONCE_LEN 16          /* bytes of a challenge, fresh from getrandom() */
#define BS_MAC_LEN BS_SHA256_LEN /* bytes of a proof (HMAC-SHA256) */
#define BS_SECRET_MAX 64         /* hex digits of SYMCOLL_COOKIE */

/* The largest payload of one message; anything announcing more is rejected before a
 * byte of it is read. */
#define BS_MAX_PAYLOAD ((uint64_t)1 << 30)
/* File descriptors one local message may carry (kernel limit SCM_MAX_FD is 253). */
#define BS_MAX_FDS 64

/* The TCP rendezvous of rank r > 0 with rank 0, K the job's secret (SYMCOLL_COOKIE,
 * empty without one), n the job size, N0 and Nr fresh nonces, Ar the address where rank
 * r listens for its mesh partners:
 *   r -> 0  HELLO      {n, Nr, Ar}           sent at once after connecting
 *   0 -> r  CHALLENGE  {N0}                  sent at once on accepting
 *   r -> 0  AUTH       {HMAC(K, "...joiner" N0 Nr r n)}   rank 0 checks it
 *   0 -> r  WELCOME    {HMAC(K, "...rank0" N0 Nr r n), job id, name seed}
 *                      (job id 0 with a status: rank 0 gave up; see bs_welcome_t)
 *   0 -> r  REJECT     {} instead, when rank 0 drops r (a wrong proof, a rank taken)
 *   0 -> r  PEERS      {A of (r - 2^k) mod n, k = 0 .. ceil(log2 n) - 1}
 * once every rank has proven itself; rank r checks rank 0's proof before it uses the
 * rest. Both ends then close the connection. K itself never crosses the wire (see
 * bs_proof).
 *
 * Host leaders (leader.c): the ranks of one host (of one SYMCOLL_HOST_ID) meet first on
 * an abstract Unix socket whose name only the job's ranks can derive; the first to bind
 * it leads, the others run the exchange above with the leader instead of rank 0 (the
 * leader knows K, so the proofs are the same), and only the leader connects to rank 0:
 *   L -> 0  HELLO, AUTH as above, HELLO flagged BS_HELLO_LEADER
 *   L -> 0  MEMBER       {m, n, Am}          one per member m, as each one has proven
 *                                            itself to L (before or after the AUTH)
 *   0 -> L  WELCOME      {..., members}      members: MEMBER messages rank 0 took
 *   0 -> L  PEERS        L's own, as above
 *   0 -> L  GROUP_PEERS  {m, A of m's partners} for each member taken
 * then L sends each member its WELCOME and PEERS (a member rank 0 did not take, a
 * duplicate, gets REJECT). Rank 0 serves one connection per host instead of one per
 * rank. A leader that fails passes the failure on to its members in a welcome that
 * gives up.
 *
 * The mesh (mesh.c), J the job id, d the dialer, l = (d - 2^k) mod n the listener of
 * round k (where two rounds pair the same ranks, only the round bs_mesh_owns names
 * connects), Nd a fresh nonce of the dialer:
 *   d -> l  MESH_HELLO    {n, k, Nd, HMAC(K, "...mesh dialer" J Nd d l k n)}
 *   l -> d  MESH_WELCOME  {HMAC(K, "...mesh listener" J Nd d l k n)}
 * The listener judges the hello with the acceptor of the rendezvous (strangers are
 * dropped while it waits for the real partner); the dialer checks the listener's proof
 * before the connection carries anything else. */
enum bs_msg_type {
    BS_MSG_HELLO = 1,   /* TCP: rank r > 0 introduces itself to rank 0 */
    BS_MSG_WELCOME,     /* TCP: rank 0's proof, the job id and the name seed */
    BS_MSG_DATA,        /* a block of a collective's round (TCP) or a contribution */
    BS_MSG_LOCAL_HELLO, /* Unix channel: handshake in both directions */
    BS_MSG_LOCAL_DATA,  /* Unix channel: data and file descriptors */
    BS_MSG_CHALLENGE,   /* TCP: rank 0's nonce for one connection */
    BS_MSG_AUTH,        /* TCP: rank r's proof that it knows the job's secret */
    BS_MSG_PEERS,       /* TCP: rank 0 tells a rank where its mesh partners listen */
    BS_MSG_MESH_HELLO,  /* TCP mesh: a dialer introduces itself and proves the secret */
    BS_MSG_MESH_WELCOME, /* TCP mesh: the listener's proof */
    BS_MSG_REJECT,       /* TCP: rank 0 dropped this joiner (wrong proof, rank taken) */
    BS_MSG_MEMBER,       /* TCP: a host leader passes a member's hello on to rank 0 */
    BS_MSG_GROUP_PEERS   /* TCP: rank 0 tells a host leader its members' partners */
};

/* Every message starts with this header, in host byte order (a peer of the other
 * endianness fails the magic check). */
typedef struct bs_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint64_t session; /* the job id (public): a message of another job fails on it */
    uint32_t rank;    /* sender's global rank */
    uint32_t nfds;    /* descriptors attached (Unix channel only) */
    uint64_t seq;     /* collective sequence number; both sides must agree */
    uint64_t len;     /* payload bytes that follow */
} bs_hdr_t;

/* Where a rank listens for its mesh partners: an IPv4 or IPv6 address and a port. */
typedef struct bs_addr {
    uint16_t family; /* AF_INET or AF_INET6 */
    uint16_t port;   /* network byte order */
    uint32_t reserved;
    uint8_t ip[16]; /* the first 4 bytes for AF_INET */
} bs_addr_t;

/* Payload of BS_MSG_HELLO */
typedef struct bs_hello {
    uint32_t nranks;
    uint32_t flags; /* BS_HELLO_LEADER */
    uint8_t nonce[BS_NONCE_LEN];
    bs_addr_t listen; /* where this rank accepts its mesh partners */
} bs_hello_t;

/* The sender leads its host's ranks: MEMBER messages follow its AUTH. */
#define BS_HELLO_LEADER 1u

/* Payload of BS_MSG_MEMBER */
typedef struct bs_member {
    uint32_t rank;
    uint32_t nranks;
    bs_addr_t listen;
} bs_member_t;

/* One member's record in BS_MSG_GROUP_PEERS: its rank and the addresses of the ranks
 * it sends to, by round (K = ceil(log2 n) of them). */
typedef struct bs_group_rec {
    uint32_t rank;
    uint32_t reserved;
    bs_addr_t to[];
} bs_group_rec_t;

static inline size_t bs_group_rec_len(int K)
{
    return sizeof(bs_group_rec_t) + (size_t)K * sizeof(bs_addr_t);
}

/* Payload of BS_MSG_MESH_HELLO */
typedef struct bs_mesh_hello {
    uint32_t nranks;
    uint32_t round;
    uint8_t nonce[BS_NONCE_LEN];
    uint8_t proof[BS_MAC_LEN];
} bs_mesh_hello_t;

/* Payload of BS_MSG_WELCOME. Rank 0 that gives up the rendezvous (its deadline, an
 * abort) still sends the ranks that joined a welcome with its proof, job_id 0, its
 * status and how many ranks never joined, so that they fail with the real reason at
 * once. The proof covers the nonces, the rank and n, not these fields. */
typedef struct bs_welcome {
    uint8_t proof[BS_MAC_LEN];
    uint64_t job_id;
    uint8_t name_seed[BS_NONCE_LEN];
    int32_t gave_up;  /* 0, or rank 0's status when job_id is 0 */
    uint32_t missing; /* with gave_up: ranks that never joined */
    uint32_t members; /* to a host leader: its members rank 0 took (GROUP_PEERS follows) */
    uint32_t reserved;
} bs_welcome_t;

struct bootstrap {
    int rank;
    int nranks;
    symcoll_allgather_fn_t allgather; /* NULL: built-in TCP */
    void *allgather_ctx;
    double timeout_sec;
    const _Atomic int *aborted;
    /* SYMCOLL_COOKIE, normalised (lowercase, no leading zeros); only the handshake of
     * bootstrap_create uses it, then it is wiped; never sent, never logged */
    char secret[BS_SECRET_MAX];
    size_t secret_len;
    uint64_t job_id;                 /* per-job random, public: every header's session */
    uint8_t name_seed[BS_NONCE_LEN]; /* rank 0's random; only the ranks learn it */
    uint8_t name_key[BS_SHA256_LEN]; /* names the local sockets (see bs_local_name) */
    uint64_t seq;                    /* global collectives done */
    symcoll_status_t failed;         /* a channel is out of step: every later call fails */
    char how[160];                   /* which bootstrap connected the ranks, for reports */
    bootstrap_stats_t stats;         /* tcp_conns filled when read (bootstrap_stats) */

    /* TCP rendezvous, closed once the mesh partners are known: rank 0 holds one
     * socket per rank (peer_fds[0] unused), the others root_fd */
    int *peer_fds;
    int root_fd;
    /* TCP mesh: in round k this rank sends on send_fds[k] to (rank - 2^k) mod n and
     * receives on recv_fds[k] from (rank + 2^k) mod n; nrounds = ceil(log2 n). A slot
     * may repeat another's descriptor (bs_mesh_owns says which ones this rank owns). */
    int nrounds;
    int *send_fds;
    int *recv_fds;

    /* node-local Unix channel */
    int local_rank;
    int local_size;
    int *local_ranks; /* global rank of every local rank */
    int *local_fds;   /* socket to each channel partner (l +- 2^k); -1 elsewhere */
    uint64_t local_seq;
    bool local_ready;

    /* shrink (shrink.c): where every rank listens for the survivors' agreement, from
     * bootstrap_shrink_prepare; NULL and -1 before it or on one rank */
    int repair_lfd;
    bs_addr_t *repair_addrs;

    void (*progress)(void *arg); /* bootstrap_set_progress */
    void *progress_arg;
};

/* One direction or both of one message exchange on one socket. */
typedef struct bs_xfer {
    int fd;
    int peer; /* global rank of the other side, for messages */
    /* send: header, then sbuf; sfds ride with the first byte */
    bool send;
    bs_hdr_t shdr;
    const void *sbuf;
    const int *sfds;
    size_t soff; /* bytes of header + payload sent */
    /* receive: a header matching the expectation, then rlen bytes into rbuf */
    bool recv;
    uint16_t rtype;
    uint64_t rseq;
    size_t rlen;
    void *rbuf;
    int *rfds; /* room for rnfds descriptors */
    int rnfds;
    bool any_session; /* do not check the session (the caller checks rhdr itself) */
    bool unix_sock;   /* over a Unix socket: not counted in the TCP statistics */
    bs_hdr_t rhdr;
    size_t roff;
    int rnfds_got;
} bs_xfer_t;

/* A bootstrap object of rank `rank` of nranks with no connection yet (the node-local
 * channel holds this rank alone); NULL when out of memory. */
bootstrap_t *bs_alloc(int rank, int nranks, double timeout_sec, const _Atomic int *aborted);

/* The socket address of a bs_addr_t; false for a family that is neither IPv4 nor IPv6. */
bool bs_addr_sockaddr(const bs_addr_t *a, struct sockaddr_storage *ss, socklen_t *sl);

/* Parts of a bootstrap made over another (split.c, shrink.c). A listener for a part's
 * mesh and its address, on the interface of one of parent's mesh connections (any
 * address, naming the first IPv4 one up and not loopback, without a mesh). */
symcoll_status_t bs_part_listen(const bootstrap_t *parent, int *lfd_p, bs_addr_t *addr);
/* The part's job id, name seed and secret, the same on each of its ranks: HMACs keyed
 * with parent's name key over label, parent's job id and in. */
void bs_part_identity(const bootstrap_t *parent, const char *label, const void *in,
                      size_t in_len, bootstrap_t *child);
/* Connect child's mesh (child->rank, nranks and identity set), listening on lfd (taken)
 * for partners that dial (*addrs_p)[r] = where child rank r listens; then the part's
 * name key, and the secret wiped. On success the listener and *addrs_p (taken, set to
 * NULL; malloc'd, nranks long) stay as the child's shrink listener and its book. */
symcoll_status_t bs_part_connect(bootstrap_t *child, int lfd, bs_addr_t **addrs_p,
                                 const deadline_t *dl);

/* Fill a header for a message from this rank. */
void bs_hdr_fill(const bootstrap_t *bs, bs_hdr_t *h, uint16_t type, uint64_t seq, uint64_t len,
                 uint32_t nfds);

/* Check a received header against what was expected (rank < 0: any rank); logs and returns
 * SYMCOLL_ERR_BOOTSTRAP (or SYMCOLL_ERR_MISMATCH for a well-formed message that
 * disagrees on sequence or size) when it does not match. any_session: skip the session
 * comparison (the caller checks it, or there is none yet). */
symcoll_status_t bs_hdr_check(const bootstrap_t *bs, const bs_hdr_t *h, uint16_t type, int rank,
                              uint64_t seq, uint64_t len, uint32_t nfds, bool any_session,
                              const char *what);

/* Run every transfer to completion, all at once, until the deadline. On error every
 * descriptor received so far is closed and set to -1. */
symcoll_status_t bs_xfer_run(bootstrap_t *bs, bs_xfer_t *x, int n, const deadline_t *dl);

/* One poll of at most a short slice, after checking the deadline and the abort flag
 * (SYMCOLL_ERR_TIMED_OUT / SYMCOLL_ERR_ABORTED). SYMCOLL_OK: revents are set, maybe
 * all zero. */
symcoll_status_t bs_poll_slice(struct pollfd *p, nfds_t n, const deadline_t *dl);
/* bs_poll_slice, except where bs's progress hook is set: then a poll of at most
 * BOOTSTRAP_PROGRESS_MS, and the hook if nothing happened. */
symcoll_status_t bs_poll_turn(const bootstrap_t *bs, struct pollfd *p, nfds_t n,
                              const deadline_t *dl);

/* Poll one descriptor for events until the deadline, in slices so the abort flag is
 * seen. Returns SYMCOLL_OK when ready. */
symcoll_status_t bs_poll_one(int fd, short events, const deadline_t *dl);

/* Random 64-bit value from getrandom(), never zero. */
symcoll_status_t bs_random64(uint64_t *out);
/* len random bytes from getrandom(). */
symcoll_status_t bs_random_bytes(void *buf, size_t len);

/* The proof of one side of the TCP rendezvous of rank `rank` (see enum bs_msg_type):
 * HMAC-SHA256 keyed with bs->secret over a label naming the side, both nonces, the
 * rank and bs->nranks (little endian). Each side proves knowledge of the secret without
 * revealing it; the fresh nonces make a recorded proof useless later. */
void bs_proof(const bootstrap_t *bs, bool from_rank0, const uint8_t n0[BS_NONCE_LEN],
              const uint8_t nr[BS_NONCE_LEN], uint32_t rank, uint8_t out[BS_MAC_LEN]);

/* The proof of one side of a mesh connection of round `round` from `dialer` to
 * `listener` (see enum bs_msg_type): HMAC-SHA256 keyed with bs->secret over a label
 * naming the side, the job id, the dialer's nonce, both ranks, the round and
 * bs->nranks. */
void bs_mesh_proof(const bootstrap_t *bs, bool from_listener, const uint8_t nd[BS_NONCE_LEN],
                   uint32_t dialer, uint32_t listener, uint32_t round, uint8_t out[BS_MAC_LEN]);

/* Close a descriptor if open and mark it closed. */
void bs_close(int *fd);

/* After an exchange failed (abort, timeout, a peer gone): shuts every connection down so
 * that the peers still waiting in that exchange see it end now rather than at their
 * deadline; the descriptors stay open until bootstrap_destroy. */
void bs_shut_all(bootstrap_t *bs);

/* How a listener judges the connections it accepts (accept.c). */
typedef struct bs_acceptor {
    uint16_t type;    /* message type of the hello */
    size_t hello_len; /* payload bytes the hello's header announces */
    size_t msg_len;   /* bytes read before judging: the hello and what follows it (at
                       * most 256) */
    /* send each accepted socket a BS_MSG_CHALLENGE with a fresh nonce */
    bool challenge;
    /* TCP: what it reads and sends counts in the statistics' tcp_* */
    bool tcp;
    /* on each accepted socket, before reading: nonzero drops it (logged by admit) */
    int (*admit)(int fd);
    /* on msg_len bytes: the slot they fill, or -1 (logged by judge at info level) to
     * drop the connection; nonce: the challenge this connection got (NULL without) */
    int (*judge)(bootstrap_t *bs, const void *msg, const uint8_t *nonce, const char *from,
                 void *ctx);
    void *ctx;
    int *slots;      /* socket per slot, -1 while missing; filled here */
    const char *who; /* "rank(s)", for the timeout message */
    /* other descriptors polled in the same loop: fill puts at most extra_max into p and
     * returns how many; handle gets them back with their revents, may lower *missing
     * (to 0: the wait is over) and ends the wait with an error it returns */
    int extra_max;
    int (*extra_fill)(bootstrap_t *bs, void *ctx, struct pollfd *p);
    symcoll_status_t (*extra_handle)(bootstrap_t *bs, void *ctx, const struct pollfd *p, int n,
                                     int *missing);
    bool open_ended; /* missing is not a count: the extras end the wait (whose
                      * timeout the caller reports) */
} bs_acceptor_t;

/* Accept until `missing` slots are filled; every other connection is dropped. A hangup
 * on a connection this rank already holds (the mesh, the node channel) ends the wait
 * with SYMCOLL_ERR_PEER_FAILED. */
symcoll_status_t bs_accept_hellos(bootstrap_t *bs, int lfd, const bs_acceptor_t *a, int missing,
                                  const deadline_t *dl);
/* Sleep up to ms milliseconds; SYMCOLL_ERR_PEER_FAILED (logged, naming what this rank
 * waited for) as soon as a connection it holds hangs up. */
symcoll_status_t bs_watch_sleep(const bootstrap_t *bs, int ms, const char *who);

/* Built-in TCP rendezvous (tcp.c): rank 0 listens on addr (on listen_fd, a socket its
 * launcher opened, if that listens on addr's port and no communicator of this process
 * took it before; below 3: none), the others connect to it (through their host's leader
 * unless leaders is false; group: SYMCOLL_HOST_ID, "" for the host itself); then the
 * mesh is connected. */
symcoll_status_t bs_tcp_connect(bootstrap_t *bs, const char *addr, int listen_fd,
                                bool leaders, const char *group, const deadline_t *dl);
/* What rank 0 reads from a joiner before judging it: HELLO, then AUTH. */
#define BS_JOIN_LEN (2 * sizeof(bs_hdr_t) + sizeof(bs_hello_t) + BS_MAC_LEN)
/* Check a joiner's HELLO and AUTH (BS_JOIN_LEN bytes) against the challenge n0 it got:
 * true with its rank and hello, or false (logged at info level: anyone may connect). */
bool bs_join_verify(const bootstrap_t *bs, const void *msg, const uint8_t *n0, const char *from,
                    int *rank_p, bs_hello_t *hello);
/* Rank r > 0's side of the rendezvous on fd, connected to rank 0 (leader_rank 0) or to
 * its host's leader (leader_rank -1: learnt from the challenge); lead: the Unix
 * listener of the host leader this rank is (-1: none), which it closes; route: a socket
 * whose local address is the interface that reaches rank 0 (the mesh listens there). */
symcoll_status_t bs_tcp_join_on(bootstrap_t *bs, const char *addr, int fd, int lead,
                                int route, const deadline_t *dl);
/* Rank > 0: connect to rank 0, retrying while it is not listening yet. */
symcoll_status_t bs_tcp_dial_rank0(const char *addr, const deadline_t *dl, int *fd_p);
/* Resolve SYMCOLL_ADDR (logged errors). */
symcoll_status_t bs_resolve_addr(const char *addr, struct addrinfo **res_p);
/* Rank r > 0: find its host's leader or become it, then join (leader.c). */
symcoll_status_t bs_host_join(bootstrap_t *bs, const char *addr, const char *group,
                              const deadline_t *dl);
/* The host leader's part (leader.c): accept its members on lead until rank 0's welcome
 * comes in on root_fd (passing each on as MEMBER), and after it hand them their
 * welcomes and partners. */
typedef struct bs_lead bs_lead_t;
symcoll_status_t bs_lead_gather(bootstrap_t *bs, int lead, bs_lead_t **lp, const deadline_t *dl);
symcoll_status_t bs_lead_finish(bootstrap_t *bs, bs_lead_t *l, uint32_t members,
                                const deadline_t *dl);
/* A leader that failed after taking members tells them why (best effort). */
void bs_lead_give_up(bootstrap_t *bs, bs_lead_t *l, symcoll_status_t why, uint32_t missing);
void bs_lead_free(bs_lead_t *l);
/* A listener whose address travels another way (PMIx): on a port the kernel picks, on
 * the loopback address only or on every address of this host. */
symcoll_status_t bs_tcp_listen_any(bool loopback, int *fd_p, unsigned *port_p);

/* Small messages go out at once; also the admission hook of the listeners. */
int bs_tune(int fd);

/* The TCP mesh (mesh.c). Rounds of the dissemination pattern on n ranks: ceil(log2 n). */
int bs_mesh_rounds(int nranks);
/* A listener for the mesh partners on the address fd is bound to (getsockname: the
 * interface a rank reached rank 0 through, or rank 0's own listening address), on a
 * port the kernel picks; *addr_p says where it listens. */
symcoll_status_t bs_mesh_listen(int fd, int *lfd_p, bs_addr_t *addr_p);
/* The local (getsockname) address of a connected or bound socket, v4-mapped IPv6
 * addresses written as IPv4. */
symcoll_status_t bs_sock_addr(int fd, bs_addr_t *addr);
/* Connect the mesh: dial to[k], the listener of (rank - 2^k) mod n, for every round k,
 * and accept the dialers (rank + 2^k) mod n on lfd, which it closes; one connection
 * per pair of partners (see bs_mesh_owns). */
symcoll_status_t bs_mesh_connect(bootstrap_t *bs, int lfd, const bs_addr_t *to,
                                 const deadline_t *dl);
/* Whether this rank's send_fds[k] (send) or recv_fds[k] (!send) is a connection it
 * opened, to close and count: where two rounds pair the same two ranks (n = 2^j + 2^k)
 * one connection serves both, and the other round's slots repeat its descriptor. */
bool bs_mesh_owns(const bootstrap_t *bs, int k, bool send);
/* The rank this one sends to in round k, (rank - 2^k) mod n, and receives from,
 * (rank + 2^k) mod n. */
int bs_mesh_to(const bootstrap_t *bs, int k);
int bs_mesh_from(const bootstrap_t *bs, int k);
/* Bruck's allgather over the mesh (ceil(log2 n) rounds, (n - 1) * size bytes sent). */
symcoll_status_t bs_mesh_allgather(bootstrap_t *bs, const void *src, void *dst, size_t size,
                                   const deadline_t *dl);
/* Dissemination all-reduce over the mesh: ceil(log2 n) rounds of count values. */
symcoll_status_t bs_mesh_allreduce(bootstrap_t *bs, int64_t *vals, int count, bootstrap_op_t op,
                                   const deadline_t *dl);
/* acc[i] = op(acc[i], in[i]) for i < count. */
void bs_combine(int64_t *acc, const int64_t *in, int count, bootstrap_op_t op);

/* PMIx (pmix.c): every rank listens for its mesh partners (*lfd_p; on 127.0.0.1 when
 * the job has one node, else on every address, said in `where`) and publishes where
 * through the job's key-value store, rank 0 also a fresh secret, the job id and the
 * name seed; after one fence every rank reads rank 0's values (secret: hex digits) and
 * the addresses of the ranks it sends to into to[k], k < ceil(log2 n). A job of one
 * rank exchanges nothing. */
symcoll_status_t bs_pmix_rendezvous(bootstrap_t *bs, const deadline_t *dl, bs_addr_t *to,
                                    char *secret, size_t secret_len, int *lfd_p, char *where,
                                    size_t where_len);
/* This process's PMIx namespace ("" before PMIx_Init or without PMIx). */
const char *bs_pmix_namespace(void);

/* Admission of a Unix connection: nonzero (logged) when the process on the other end
 * runs as another user (local.c). */
int bs_local_admit(int fd);

/* Node-local channel teardown (local.c). */
void bs_local_close(bootstrap_t *bs);

/* The abstract Unix socket name of global rank grank's local listener: derived from
 * bs->name_key, so only the job's ranks can know it before it is bound. */
socklen_t bs_local_name(const bootstrap_t *bs, int grank, struct sockaddr_un *sa);

/* name_key from name_seed (and the secret when there is one). */
void bs_local_name_key(bootstrap_t *bs);

#endif
