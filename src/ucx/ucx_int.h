/* Private to src/ucx/: the shared UCP context and the per-worker state of the UCX layer,
 * and the helpers its files call on each other. Nothing outside src/ucx/ includes it. */
#ifndef SYMCOLL_UCX_INT_H
#define SYMCOLL_UCX_INT_H

#include <ucp/api/ucp.h>

#include "topo/topo.h"
#include "ucx/ucx.h"

#define UCX_AM_HELLO 0x5c01u
#define UCX_AM_WRITE 0x5c02u
#define UCX_AM_ABORT 0x5c03u
#define UCX_AM_RKEY_ASK 0x5c04u
#define UCX_AM_RKEY_ANSWER 0x5c05u
/* Operations tracked at once; a slot is reused only after its operation completed. */
#define UCX_OPS 1024
/* Room left in a TCP segment for UCX's and our headers. */
#define UCX_AM_HDR_ROOM 512
#define UCX_TLS_STR_MAX 256
/* Workers of one context: the communicator's own (index 0) and its channels. */
#define UCX_WORKERS_MAX (UCX_CHANNELS_MAX + 1)

typedef struct ucx_shared ucx_shared_t;
typedef struct ucx_proc_ctx ucx_proc_ctx_t;

typedef struct ucx_peer {
    ucx_ctx_t *ucx;
    int rank;
    ucp_ep_h ep;         /* NULL until first use (ucx_ep_get), and for ranks of this node */
    bool remote;         /* on another node */
    int hello;           /* check messages received: 1 when it opened its endpoint to us,
                          * 2 at its close */
    _Atomic int failed;  /* set by the endpoint error callback */
    _Atomic int gave_up; /* its give-up notice came: its endpoint's end is no failure */
} ucx_peer_t;

/* A peer's view of a region, fetched from it on first need (ucx_rkey.c) and then read
 * only; rkey[w] is unpacked by worker w alone, on its first RMA to that peer. */
typedef struct ucx_remote {
    uint64_t addr;
    uint64_t size;
    ucp_rkey_h rkey[UCX_WORKERS_MAX];
    unsigned char rkey_buf[]; /* packed, as the owner sent it */
} ucx_remote_t;

/* A registered region. Its key names it to the peers: every rank registers its matching
 * region in the same collective under the same key (pool segments: memory type and
 * segment index; ucx_region_create: a count), so that an active message addresses
 * (key, offset) and a request for an rkey names the region by key. Keys are never 0. */
struct ucx_region {
    char *addr;
    size_t size;
    uint64_t key;
    ucp_mem_h memh;
    void *packed; /* our packed rkey, sent to each peer that asks */
    size_t packed_len;
    bool cuda;      /* registered as CUDA memory */
    bool connected; /* every rank registered its match: peers may target it */
    /* nranks entries, NULL until fetched; published once (compare and swap), since the
     * workers of a communicator fetch from their own threads */
    _Atomic(ucx_remote_t *) *remote;
};

/* Pool segments of one memory type, as the pool listener sees them. */
typedef struct ucx_seg_table {
    ucx_ctx_t *ucx;      /* the owner worker, which registers and releases the segments */
    ucx_region_t **segs; /* by segment index */
    int nsegs;
    ucx_region_t *signal;
    symcoll_mem_type_t mem_type; /* of the pool whose segments these are */
    bool listening;              /* a pool listener serves this table */
    /* soft: a segment UCX cannot register does not fail the growth; the table is then
     * unregistered on every rank (the growth's vote tells them all) and nobody puts into it */
    bool soft;
    bool unregistered;
} ucx_seg_table_t;

/* Header of a write carried by an active message: where the payload goes, then which
 * flag word gets which value (flag_key 0: none), each as a region key and an offset in
 * it, so that the sender needs nothing of the receiver's. */
typedef struct ucx_am_hdr {
    uint64_t key;
    uint64_t off;
    uint64_t flag_key;
    uint64_t flag_off;
    uint64_t flag_value;
    uint64_t seq;   /* flag value of the message this piece belongs to */
    int64_t sender; /* rank */
} ucx_am_hdr_t;

/* A request for a region's rkey (the asker's rank and the region's key), and its
 * answer, followed by the packed rkey. */
typedef struct ucx_rkey_ask {
    uint64_t key;
    int64_t rank;
    uint64_t id; /* the asker's count, echoed: a late answer to an earlier ask is dropped */
} ucx_rkey_ask_t;

typedef struct ucx_rkey_answer {
    uint64_t key;
    uint64_t id;
    uint64_t addr;
    uint64_t size;
    int64_t status; /* SYMCOLL_OK, or why there is no rkey (then nothing follows) */
    int64_t rank;   /* who answers */
} ucx_rkey_answer_t;

/* One operation in flight, with what UCX reads until it completes. */
typedef struct ucx_op {
    ucs_status_ptr_t req; /* NULL: complete */
    uint32_t gen;         /* bumped on reuse: stale handles read as complete */
    union {               /* the header UCX reads until completion */
        ucx_am_hdr_t hdr;
        ucx_rkey_ask_t ask;
    };
    uint64_t value; /* source of a flag put */
} ucx_op_t;

/* What the workers of a communicator share: the owner (index 0) creates and destroys it,
 * channels point to it. Channels only read it, while the owner's thread leaves it alone
 * (see ucx_channel_create); the region table, the segment tables and channels_used change
 * later, the rest is set while the owner is created. The UCP context is the process's
 * (ucx_context.c), shared with the other communicators of that configuration. */
struct ucx_shared {
    ucx_proc_ctx_t *proc; /* the reference the owner holds */
    ucp_context_h context;
    unsigned channels_used; /* bit i set while channel index i exists */

    ucx_region_t **regions;
    size_t nregions, cap_regions;
    uint64_t plain_regions; /* made by ucx_region_create: the next one's key */

    bool native_rma;  /* put / fence / flag; else one active message per transfer */
    bool cuda_rma;    /* every remote endpoint (if any) puts into CUDA memory by RMA */
    bool cuda_driver; /* some remote endpoint moves CUDA memory by calling the driver */
    size_t am_piece;  /* largest active message payload sent in one piece */

    ucx_seg_table_t segtab[SYMCOLL_MEM_LAST];
    char transports[UCX_TLS_STR_MAX];
    _Atomic int broken; /* ucx_mark_broken: close without waiting for the peers */
};

/* A worker: the communicator's own (index 0, the owner of the shared context) or a channel
 * (ucx_channel_create), each with its endpoints, rkeys, operations and receive hook. */
struct ucx_ctx {
    comm_t *comm;
    int rank;
    int nranks;
    ucx_shared_t *shared;
    int index; /* 0: the owner; 1..UCX_CHANNELS_MAX: a channel (its rkeys' slot) */
    ucp_worker_h worker;
    ucx_peer_t *peers;
    char *addrs; /* every rank's worker address, addr_stride bytes each */
    size_t addr_stride;
    int nremote; /* endpoints opened */
    _Atomic int failed;
    _Atomic int remote_abort; /* SYMCOLL_OK, or the status a peer gave up with */
    bool abort_sent;
    bool closed;
    bool closing;       /* endpoints going away: their errors are expected */
    int efd;            /* the worker's event fd (UCP_FEATURE_WAKEUP); -1: none */
    bool worker_ready;  /* creation exchanged the first check messages */
    int32_t hello_rank; /* header of the check message; must outlive the send */
    int32_t give_up[2]; /* header of the give-up notice: rank, status; same */

    size_t last_region; /* where ucx_region_find looks first */

    ucx_op_t ops[UCX_OPS];
    unsigned op_next;
    unsigned op_waited;   /* op_next when ucx_wait_all last completed everything */
    ucx_recv_hook_t hook; /* consumer of incoming payloads, if any */
    void *hook_arg;

    /* rkeys on need (ucx_rkey.c): requests of peers, queued by the handler and answered
     * after the progress call that delivered them; the failure of our own last request */
    ucx_rkey_ask_t *asks;
    unsigned nasks, cap_asks;
    bool answering;
    uint64_t rkey_waiting; /* id of the ask we wait for the answer of; 0: none */
    int rkey_error;        /* its answer said there is no rkey: why */
    uint64_t rkeys_fetched; /* requests sent */
    uint64_t rkeys_served;  /* answers sent */
};

/* ---- ucx_progress.c ---- */

/* One progress call of the worker, then the answers to the rkey requests it delivered.
 * Every wait of the UCX layer progresses through it. */
unsigned ucx_poll(ucx_ctx_t *ucx);
/* One turn of a wait loop: progress, back off when nothing happened, then the peers'
 * failures and the deadline. */
symcoll_status_t ucx_wait_turn(ucx_ctx_t *ucx, const deadline_t *dl, unsigned *iter);

symcoll_status_t ucx_status_of(const ucx_ctx_t *ucx, ucs_status_t s);
symcoll_status_t ucx_op_new(ucx_ctx_t *ucx, ucx_op_t **op_p);
symcoll_status_t ucx_op_track(ucx_ctx_t *ucx, ucx_op_t *op, ucs_status_ptr_t req,
                              const char *what, int peer);
symcoll_status_t ucx_op_finish(ucx_ctx_t *ucx, ucx_op_t *op, const deadline_t *dl);
/* ucx_flush; report_busy false: no report of the endpoints a lasting flush waits for
 * (at close, where peers arrive when they do). */
symcoll_status_t ucx_flush_report(ucx_ctx_t *ucx, const deadline_t *dl, bool report_busy);
ucx_req_t ucx_op_handle(const ucx_ctx_t *ucx, const ucx_op_t *op);

/* ---- ucx_mem.c ---- */

/* The registered region holding [addr, addr + len), or NULL. */
ucx_region_t *ucx_region_find(ucx_ctx_t *ucx, const char *addr, size_t len);
/* The registered region named key, or NULL. */
ucx_region_t *ucx_region_by_key(ucx_ctx_t *ucx, uint64_t key);
void ucx_region_drop_rkeys(ucx_region_t *reg, int nranks, int w);

/* ---- ucx_rkey.c ---- */

/* reg's view at peer (address and packed rkey), asked of the peer the first time this
 * process needs it; waits (progressing) for the answer. */
symcoll_status_t ucx_rkey_fetch(ucx_ctx_t *ucx, ucx_region_t *reg, int peer,
                                ucx_remote_t **rm_p);
/* reg's view at peer if this process has it, else NULL; asks nothing. */
ucx_remote_t *ucx_rkey_known(const ucx_region_t *reg, int peer);
/* Answers the requests the last progress call queued. */
void ucx_rkey_answer_all(ucx_ctx_t *ucx);
/* Active message handlers: a peer's request, the answer to ours. */
ucs_status_t ucx_rkey_ask_cb(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param);
ucs_status_t ucx_rkey_answer_cb(void *arg, const void *header, size_t header_length,
                                void *data, size_t length, const ucp_am_recv_param_t *param);

/* ---- ucx_rma.c ---- */

/* Where sym (this rank's address of a region byte) lies at peer, and how many of len bytes
 * from there stay inside that region: the region's key and the offset (enough for an
 * active message), and where rma is set the peer's address and rkey (fetched from
 * the peer on first need). */
typedef struct ucx_where {
    uint64_t key, off;
    uint64_t raddr;
    ucp_rkey_h rkey;
    size_t piece;
} ucx_where_t;
symcoll_status_t ucx_target(ucx_ctx_t *ucx, int peer, const char *sym, size_t len, bool rma,
                            ucx_where_t *w);

/* Active message handlers: a write (ucx_put_signal without RMA), an abort notice. */
ucs_status_t ucx_write_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param);
ucs_status_t ucx_abort_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param);

/* ---- ucx_ep.c ---- */

/* The endpoint to peer (a rank of another node), opened on first use. */
symcoll_status_t ucx_ep_get(ucx_ctx_t *ucx, int peer, ucp_ep_h *ep_p);
symcoll_status_t ucx_exchange_hello(ucx_ctx_t *ucx, int count, deadline_t *dl);
/* At close: answers every peer that opened an endpoint to us (opening one back if need
 * be), sends our close message to every peer we hold an endpoint to and waits for
 * theirs (ucx_exchange_hello, count 2). */
symcoll_status_t ucx_close_hello(ucx_ctx_t *ucx, deadline_t *dl);
symcoll_status_t ucx_connect_eps(ucx_ctx_t *ucx, const topo_t *topo);
/* Collective, owner only: ucx_connect_eps, then the protocol and the topology's UCX
 * capabilities. */
symcoll_status_t ucx_connect_all(ucx_ctx_t *ucx, const topo_t *topo);

#endif
