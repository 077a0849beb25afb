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

/* Remote view of a region: one per rank. */
typedef struct ucx_remote {
    uint64_t addr;
    uint64_t size;
    void *rkey_buf; /* packed rkey as received */
    size_t rkey_len;
    ucp_rkey_h rkey[UCX_WORKERS_MAX]; /* per worker (channel): unpacked on first use */
} ucx_remote_t;

struct ucx_region {
    char *addr;
    size_t size;
    ucp_mem_h memh;
    bool cuda; /* registered as CUDA memory */
    bool connected;
    ucx_remote_t *remote; /* nranks entries */
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
     * unregistered on every rank (all see the same empty blob) and nobody puts into it */
    bool soft;
    bool unregistered;
} ucx_seg_table_t;

/* Header of a write carried by an active message: where the payload goes, then which
 * flag word gets which value (flag_addr 0: none). Addresses are the receiver's. */
typedef struct ucx_am_hdr {
    uint64_t addr;
    uint64_t flag_addr;
    uint64_t flag_value;
    uint64_t seq;   /* flag value of the message this piece belongs to */
    int64_t sender; /* rank */
} ucx_am_hdr_t;

/* One operation in flight, with what UCX reads until it completes. */
typedef struct ucx_op {
    ucs_status_ptr_t req; /* NULL: complete */
    uint32_t gen;         /* bumped on reuse: stale handles read as complete */
    ucx_am_hdr_t hdr;
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
    size_t blob_max;

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
};

/* Header of a region blob; the packed rkey follows. */
typedef struct ucx_blob_hdr {
    uint64_t addr;
    uint64_t size;
    uint64_t rkey_len;
} ucx_blob_hdr_t;

/* ---- ucx_progress.c ---- */

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
void ucx_region_drop_rkeys(ucx_region_t *reg, int nranks, int w);

/* ---- ucx_rma.c ---- */

/* Where sym (this rank's address of a region byte) lies at peer, and how many of len bytes
 * from there stay inside that region. rkey_p NULL: no rkey needed (active messages). */
symcoll_status_t ucx_target(ucx_ctx_t *ucx, int peer, const char *sym, size_t len,
                            uint64_t *raddr_p, ucp_rkey_h *rkey_p, size_t *piece_p);

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
