/* UCX layer: one UCP context per process (per UCX configuration), shared by the
 * communicators, each of which has workers of its own (the communicator's and its
 * channels), endpoints to the ranks of the other nodes, registered memory regions whose
 * packed rkeys travel only to the peers that ask for them, and the put / fence / flag
 * primitives the inter-node algorithms are built on. A ucx_ctx_t is one worker. */
#ifndef SYMCOLL_UCX_H
#define SYMCOLL_UCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef struct ucx_ctx ucx_ctx_t;
typedef struct ucx_region ucx_region_t;
struct pool_listener;

/* A pending UCX operation; NULL once complete. */
typedef void *ucx_req_t;

/* ---- lifecycle ---------------------------------------------------------------------- */

/* Collective over all ranks of comm (uses the bootstrap): takes a reference on the
 * process's UCP context (made on first use; a communicator whose UCX configuration
 * differs gets its own), creates the worker and exchanges worker addresses. It connects
 * to a few ranks of other nodes only (a partner on the next node and the ranks whose
 * partner it is), checks each of these connections with one message each way and
 * describes their lanes, agreed over all ranks; every other rank is connected on first
 * use (a transfer to it, or ucx_connect). Fills the topology's UCX capabilities. */
symcoll_status_t ucx_create(comm_t *comm, ucx_ctx_t **ucx_p);

/* Channels: more workers of the same context, each with its own endpoints (so its own
 * connections, made on first use as the owner's are) to the same ranks, for threads that move
 * data in parallel (the staging threads of CUDA memory across nodes). A channel uses its
 * owner's registered regions and has its own rkeys, operations, and receive hook; every
 * data-path call below works on a channel as on its owner. One thread at a time may use a
 * channel, and nobody may use it while the owner registers or releases regions (pool growth,
 * trim). Collective over all ranks, like ucx_create; destroy channels (ucx_destroy, collective
 * too) before their owner. */
#define UCX_CHANNELS_MAX 15
symcoll_status_t ucx_channel_create(ucx_ctx_t *owner, ucx_ctx_t **channel_p);

/* True if a and b are workers of one UCP context (the process's, shared by the
 * communicators of one UCX configuration), for tests and reports. */
bool ucx_shares_context(const ucx_ctx_t *a, const ucx_ctx_t *b);

/* Endpoints this worker holds now (0 for NULL), for reports and the scale harness. */
int ucx_num_endpoints(const ucx_ctx_t *ucx);

/* Requests for peers' rkeys this worker sent, and answers to peers' requests it sent,
 * since creation (0 for NULL), for tests and the scale harness. */
void ucx_rkey_counts(const ucx_ctx_t *ucx, uint64_t *asked_p, uint64_t *answered_p);

/* First half of teardown: flush outstanding operations, destroy every unpacked rkey and
 * close the endpoints (flushing them; peers that failed are closed by force). After our
 * give-up notice (not a timeout's) it first waits, bounded, for every peer it holds an endpoint
 * to answer or end, so that the notice reaches them before the end of our endpoints. Regions
 * stay registered until ucx_region_release or ucx_destroy. Idempotent. */
void ucx_close(ucx_ctx_t *ucx);

/* Second half: ucx_close if not done, then destroy the worker. The communicator's own
 * ucx_ctx_t also deregisters the remaining regions and drops its reference on the UCP
 * context, which the last communicator destroys (its channels must be gone); a channel
 * leaves both to it. NULL is ignored. */
void ucx_destroy(ucx_ctx_t *ucx);

/* Transports UCX chose for the inter-node endpoints ("tcp/lo", ...), for reports. */
const char *ucx_transports(const ucx_ctx_t *ucx);

/* True if every endpoint to another node has a lane whose transport puts into CUDA
 * memory by RMA (cuda_ipc, InfiniBand/RoCE rc_ and dc_); false where UCX emulates such
 * puts with messages that the target's UCX answers (TCP). It reads the lanes only: an
 * rc_ lane without GPUDirect RDMA still counts. The endpoints read are those opened at
 * creation, on every rank (the same answer everywhere). */
bool ucx_cuda_rma_native(const ucx_ctx_t *ucx);

/* True if UCX calls the CUDA driver when it moves CUDA memory over some endpoint to
 * another node (of those opened at creation, on every rank): every endpoint does unless one of
 * its lanes puts into CUDA memory by network RMA (rc_, dc_) and none is a cuda_* or tcp lane. A
 * network without GPUDirect RDMA still stages through cuda_copy, which the lanes do not name,
 * and UCX may copy small puts from CUDA memory with cuda_copy on rc_/dc_ too: neither is seen
 * here (no InfiniBand on these machines). */
bool ucx_cuda_driver_lanes(const ucx_ctx_t *ucx);

/* Reads one lane of ucp_ep_print_info's listing ("lane[1]:  3:rc_mlx5/mlx5_0:1.0 md[2]
 * ... rma_bw#0 amo#0"): copies its transport ("rc_mlx5/mlx5_0:1.0") into name and says
 * whether the lane puts by RMA of its transport into a peer's host memory (host_rma:
 * not a GPU transport) and into its CUDA memory (cuda_rma: cuda_ipc, rc_, dc_), and
 * whether CUDA memory moved through it, in any role, calls the CUDA driver (driver:
 * cuda_*, and tcp, whose emulated puts UCX stages with cuda_copy). False (and every
 * flag false) for a line that names no lane, or a name that does not fit. */
bool ucx_lane_parse(const char *line, char *name, size_t name_len, bool *host_rma,
                    bool *cuda_rma, bool *driver);

/* What one endpoint's lanes do, from ucp_ep_print_info's listing of it. */
typedef struct ucx_ep_lanes {
    bool host_rma; /* some lane puts into a peer's host memory by RMA of its transport */
    bool cuda_rma; /* some lane puts into CUDA memory by RMA of its transport */
    /* UCX calls the CUDA driver to move CUDA memory over the endpoint: unless some lane
     * puts into CUDA memory by network RMA (rc_, dc_) and no lane calls the driver */
    bool driver;
} ucx_ep_lanes_t;

/* Reads an endpoint's listing (lines separated by newlines; split in place) into *out
 * with ucx_lane_parse. each, if not NULL, gets every line that names a lane (name: its
 * transport; NULL where ucx_lane_parse takes none from it) and every summary line that
 * mentions rma_bw or amo (name NULL). */
void ucx_ep_lanes_read(char *listing, ucx_ep_lanes_t *out,
                       void (*each)(void *arg, const char *line, const char *name), void *arg);

/* True if rank is on another node (reached through an endpoint). */
bool ucx_is_remote(const ucx_ctx_t *ucx, int rank);

/* Opens the endpoint to peer now if it is on another node and has none yet. A worker
 * learns of the failure of a peer only through an endpoint to it: a wait for a message
 * from peer calls this first, so that a dead sender ends the wait with
 * SYMCOLL_ERR_PEER_FAILED (transfers open their endpoints themselves). */
symcoll_status_t ucx_connect(ucx_ctx_t *ucx, int peer);

/* ---- memory regions ------------------------------------------------------------------
 *
 * A region is local memory registered with UCX, and every rank registers its matching
 * region in the same collective. Algorithms address remote memory symmetrically: the
 * local address of a byte stands for the same byte of the peer's matching region (same
 * offset from the region start). An active message names the region and the offset, so
 * it needs nothing of the peer's; an RMA put needs the peer's address and rkey, which a
 * worker asks of that peer the first time it puts data into that region there (one round
 * trip, then kept until the region goes). So a pool growth costs one vote, not an
 * exchange of every rank's rkey, and a rank holds the rkeys of the peers it puts into
 * only. The peer answers from any progress of its matching worker, so an RMA put may go
 * only to a rank that waits for it in the same call (and so progresses); a rank also
 * progresses in every wait of the bootstrap's own exchanges (see ucx_create). A word
 * the target may not wait for now (a credit returned to an eager broadcast's root, which
 * has moved on) goes with ucx_put_flag_am, which asks nothing. */

/* Flushes, destroys the region's rkeys and deregisters it. NULL is ignored. */
void ucx_region_release(ucx_ctx_t *ucx, ucx_region_t *reg);

/* Collective over all ranks: registers [addr, addr + size) and agrees (one vote) that
 * every rank registered its matching region; peers then fetch its rkey on need. */
symcoll_status_t ucx_region_create(ucx_ctx_t *ucx, void *addr, size_t size,
                                   ucx_region_t **reg_p);

/* Fills a pool listener that registers every segment of the mem_type pool (with that
 * memory type) inside the pool's growth (one vote, no exchange); trim and destroy release
 * them. ucx is the communicator's own; its channels reach the segments
 * through the shared context. */
void ucx_pool_listener(ucx_ctx_t *ucx, symcoll_mem_type_t mem_type,
                       struct pool_listener *listener);

/* True if a pool listener registers the mem_type pool's segments and every rank could
 * register every segment so far: peers may put into it with ucx_put_rma. A listener of
 * the CUDA pool is soft: a UCX that cannot register GPU memory logs why (once) and the
 * pool grows anyway, unregistered on every rank. */
bool ucx_pool_registered(const ucx_ctx_t *ucx, symcoll_mem_type_t mem_type);

/* ---- data path ------------------------------------------------------------------------
 * Every call below must come from the thread that holds the communicator's lock. */

/* Non-blocking put of len bytes from local src to peer's byte that sym_dst stands for
 * (sym_dst: this rank's address of the same byte of a region). src must stay untouched
 * until *req_p completes (ucx_req_wait or ucx_wait_all). */
symcoll_status_t ucx_put(ucx_ctx_t *ucx, int peer, const void *src, size_t len, void *sym_dst,
                         ucx_req_t *req_p);

/* Transfers len bytes from src to the peer's bytes that sym_dst stands for, then sets the
 * peer's flag word that sym_flag stands for (NULL: none) to flag_value; when the peer
 * sees the value, the data is there. Where UCX has RMA in the transport: put, fence, put;
 * where it would emulate RMA (TCP): one active message whose handler copies and then
 * stores the flag (an emulated put needs acknowledgements that UCX 1.13 turns into a
 * fatal error when the origin has died). src must stay untouched until *req_p
 * completes. */
symcoll_status_t ucx_put_signal(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                                void *sym_dst, uint64_t *sym_flag, uint64_t flag_value,
                                ucx_req_t *req_p);

/* Puts len bytes from local src to the peer's bytes that sym_dst stands for, always with
 * RMA through the peer's rkey (never an active message), so the target may be GPU memory
 * of a pool registered with its memory type (ucx_pool_registered). src is best inside a
 * registered region too (its registration is passed along). Nothing tells the peer:
 * ucx_flush (remote completion; src reusable after it), then ucx_put_flag. */
symcoll_status_t ucx_put_rma(ucx_ctx_t *ucx, int peer, const void *src, size_t len,
                             void *sym_dst);

/* Orders the puts issued so far before the puts issued after (remote completion). */
symcoll_status_t ucx_fence(ucx_ctx_t *ucx);

/* Puts the 64-bit value to the peer's flag that sym_flag stands for. The value is copied;
 * completion is tracked internally. Call ucx_fence first if it must follow data. */
symcoll_status_t ucx_put_flag(ucx_ctx_t *ucx, int peer, uint64_t value, uint64_t *sym_flag);

/* ucx_put_flag as an active message whatever the protocol: needs no rkey of the peer, so
 * it never waits for the peer, which sees the value at its next progress. For a word the
 * peer may not be waiting for now, and that nobody puts to by RMA (an active message
 * and an RMA put to one word are not ordered). */
symcoll_status_t ucx_put_flag_am(ucx_ctx_t *ucx, int peer, uint64_t value, uint64_t *sym_flag);

/* ucx_put_flag that lands after every put this worker issued before it to that peer (a
 * fence first where the puts are RMA): for a word that a rank raises again and again, so
 * that an earlier, smaller value never lands last. */
symcoll_status_t ucx_put_flag_after(ucx_ctx_t *ucx, int peer, uint64_t value,
                                    uint64_t *sym_flag);

/* Tells every peer this worker holds an endpoint to that this rank gave up with status
 * (once; best effort, does not wait): their waits end with that status
 * (SYMCOLL_ERR_ABORTED for an abort, TIMED_OUT or PEER_FAILED for what ended our call)
 * instead of at their deadline. Whoever waits for us holds an endpoint to us
 * (ucx_connect); the other ranks learn it from the ones that do, as their calls fail in
 * turn. Call from the thread that uses the worker. ucx_notify_abort is
 * ucx_notify_failure with ABORTED. */
void ucx_notify_failure(ucx_ctx_t *ucx, symcoll_status_t status);
void ucx_notify_abort(ucx_ctx_t *ucx);

/* Records that the communicator failed (any thread; for every worker of its context): a
 * later close does not wait for the peers, it closes the endpoints at once. */
void ucx_mark_broken(ucx_ctx_t *ucx);

/* Back-off of a wait turn that found nothing (*iter counts idle turns, 0 at the start
 * of a wait): spins, then yields, then sleeps up to a millisecond on the worker's event
 * fd, so that ranks waiting long leave their cores to the ranks that work. */
void ucx_idle(ucx_ctx_t *ucx, unsigned *iter);

/* One round of progress; once a peer gave up, the status its notice carried
 * (SYMCOLL_ERR_ABORTED for an abort), else SYMCOLL_ERR_PEER_FAILED once an endpoint
 * failed (the end of a peer's endpoint after its notice is no failure). */
symcoll_status_t ucx_progress(ucx_ctx_t *ucx);

/* Progress until *flag >= value (acquire), the deadline passes, the communicator is
 * aborted or a peer fails. */
symcoll_status_t ucx_wait_flag(ucx_ctx_t *ucx, const uint64_t *flag, uint64_t value,
                               const deadline_t *dl);

/* True once req completed (non-blocking; callable from a receive hook). */
bool ucx_req_done(const ucx_ctx_t *ucx, ucx_req_t req);

/* Where transfers arrive as active messages (not with put), a hook may take each
 * incoming payload instead of its plain copy to dst: hook(arg, sender, seq, dst, data,
 * len) returns true if it consumed data (put it where it belongs), false to let the copy
 * to dst happen. seq is the flag value of the message the payload belongs to (a message
 * may come in several payloads, in order; its flag is raised after the last). The hook
 * runs inside progress: it must not call back into UCX except ucx_req_done. NULL
 * removes it. */
typedef bool (*ucx_recv_hook_t)(void *arg, int sender, uint64_t seq, void *dst,
                                const void *data, size_t len);
void ucx_set_recv_hook(ucx_ctx_t *ucx, ucx_recv_hook_t hook, void *arg);

/* Progress until req completes (NULL is complete). Frees the request. */
symcoll_status_t ucx_req_wait(ucx_ctx_t *ucx, ucx_req_t req, const deadline_t *dl);

/* Completes every operation issued so far (locally: sources may be reused). */
symcoll_status_t ucx_wait_all(ucx_ctx_t *ucx, const deadline_t *dl);

/* Remote completion of every operation issued so far. One that lasts (5 s, or a third of
 * the timeout) logs a warning naming the peers whose endpoints still hold operations. */
symcoll_status_t ucx_flush(ucx_ctx_t *ucx, const deadline_t *dl);

/* Remote completion of every operation issued so far to the ranks listed (n of them;
 * this rank and ranks of this node are skipped), whatever other endpoints of the worker
 * still hold: a peer that stopped progressing delays only the flushes that include it.
 * Reports as ucx_flush does. */
symcoll_status_t ucx_flush_peers(ucx_ctx_t *ucx, const int *ranks, int n, const deadline_t *dl);

#endif
