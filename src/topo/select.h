/* Algorithm selector: a pure function from (memory type, shape of the communicator,
 * intra-node link class, message size, overrides) to an all-reduce algorithm and the
 * reason for it. No process, device or environment is touched, so tests inject shapes. */
#ifndef SYMCOLL_TOPO_SELECT_H
#define SYMCOLL_TOPO_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "symcoll.h"
#include "core/config.h"

/* The collectives; the selector answers for each. */
typedef enum {
    TOPO_COLL_ALLREDUCE = 0,
    TOPO_COLL_REDUCE_SCATTER,
    TOPO_COLL_ALLGATHER,
    TOPO_COLL_BROADCAST,
    TOPO_COLL_BARRIER,
    TOPO_COLL_LAST
} topo_coll_t;

typedef enum {
    TOPO_ALGO_AUTO = 0, /* only as an override: let the selector choose */
    TOPO_ALGO_ONESHOT,  /* intra-node: every rank reduces all peers' copies */
    TOPO_ALGO_TWOSHOT,  /* intra-node: reduce-scatter then all-gather */
    TOPO_ALGO_RING,     /* across nodes over UCX: pipelined ring */
    TOPO_ALGO_RD,       /* across nodes over UCX: recursive doubling */
    TOPO_ALGO_HIER,     /* intra-node reduce-scatter, inter-node per slice, all-gather */
    TOPO_ALGO_RHD,      /* across nodes over UCX: recursive halving and doubling (the
                           canonical order's large messages) */
    TOPO_ALGO_NONE,     /* no algorithm serves this case (see the reason) */
    TOPO_ALGO_LAST
} topo_algo_t;

/* How the GPUs of one node reach each other, worst first: the selector uses the worst
 * pair of the communicator's nodes. */
typedef enum {
    TOPO_LINK_NONE = 0, /* no peer access (P2P impossible or unknown) */
    TOPO_LINK_PCIE,     /* peer access over PCIe */
    TOPO_LINK_NVLINK,   /* peer access over NVLink (direct or through NVSwitch) */
    TOPO_LINK_SAME,     /* both ranks use the same GPU */
    TOPO_LINK_LAST
} topo_link_t;

/* What the selector needs to know about a communicator. */
typedef struct topo_shape {
    int nranks;
    int nnodes;
    int ppn;              /* ranks on the largest node */
    bool uniform;         /* every node holds ppn ranks */
    topo_link_t gpu_link; /* worst link between two GPUs of one node (ppn > 1) */
    bool net_cuda;        /* UCX moves CUDA memory itself (else the network path stages) */
    /* what this build implements for CUDA memory (set from the build, injected by tests) */
    int cuda_max_local;     /* most ranks of a node the CUDA kernels serve; 0: no CUDA */
    bool cuda_across_nodes; /* a CUDA all-reduce across nodes exists */
    bool gpus;              /* every rank has a CUDA device */
    bool oversubscribed;    /* a node has more ranks than CPUs to run them */
    bool gpus_shared;       /* some GPU serves two ranks (of any node): their kernels
                               time-slice, so a kernel that waits for another rank's can
                               hold the GPU until its slice ends (simulated nodes on one
                               machine, more ranks than GPUs) */
    /* puts into the peers' CUDA pool with UCX rkeys (the direct path): 0 not probed yet
     * (the probe runs when the CUDA pool is created), 1 every peer's landed, -1 not */
    int net_direct;
    /* UCX moves CUDA memory to some peer through a transport that calls the CUDA driver
     * from the channel for every transfer (cuda_ipc on one host; cuda_copy staging under TCP
     * or a network without GPUDirect RDMA; any lanes but rc_ and dc_ ones): a channel
     * blocked there while the caller's thread waits inside the driver for the call's own
     * stream (a copy to pageable memory, a first kernel launch) never returns. Such a
     * direct path runs only when forced (SYMCOLL_CUDA_NET_PATH=direct, the program
     * synchronising the stream before any blocking CUDA call); auto keeps it staged. */
    bool net_direct_drv;
    /* net_direct is -1 although every probe put landed: some rank with such channels runs
     * with CUDA_DEVICE_MAX_CONNECTIONS=1, where the channel's copies queue behind the
     * stream's wait for them and the direct path deadlocks at its first call */
    bool net_direct_one_queue;
    /* hier's order (each node's tree, then the nodes' tree) is the canonical tree of all
     * ranks (topo_hier_canonical) */
    bool hier_canonical;
} topo_shape_t;

/* Overrides and thresholds, from the SYMCOLL_* configuration. */
typedef struct topo_select_cfg {
    topo_algo_t forced;           /* SYMCOLL_ALGO; TOPO_ALGO_AUTO if not forced */
    size_t host_oneshot_max;      /* SYMCOLL_HOST_ONESHOT_MAX */
    size_t cuda_oneshot_max;      /* SYMCOLL_CUDA_ONESHOT_MAX (NVLink or same GPU) */
    size_t cuda_pcie_oneshot_max; /* SYMCOLL_CUDA_PCIE_ONESHOT_MAX */
    size_t net_rd_max;            /* SYMCOLL_NET_RD_MAX */
    size_t hier_min;              /* SYMCOLL_HIER_MIN: smallest message sent hierarchically */
    size_t cuda_net_chunk;        /* SYMCOLL_CUDA_NET_CHUNK: staging chunk of CUDA memory
                                     across nodes (0: whole messages) */
    int cuda_net_channels; /* SYMCOLL_CUDA_NET_CHANNELS: chunks crossing the nodes at once */
    int cuda_net_path;     /* SYMCOLL_CUDA_NET_PATH: TOPO_PATH_* */
    size_t cuda_net_direct_min; /* SYMCOLL_CUDA_NET_DIRECT_MIN */
    int cuda_coll;              /* SYMCOLL_CUDA_COLL: CONFIG_CUDA_COLL_* */
    /* the host pool's staging slot holds a piece of every rank's block, which the native
     * reduce-scatter inside a node moves (set by the algorithm layer from its chunk size;
     * true unless it says otherwise) */
    bool host_rs_native;
    /* SYMCOLL_REDUCTION_ORDER canonical or auto: reductions only where their order is the
     * canonical tree (algo/base/reduce.h) */
    bool canonical;
    /* canonical (not auto): float16/bfloat16 across nodes accumulate in float32 too */
    bool canonical_wide;
    /* the layout of the tuning file (SYMCOLL_TUNE_FILE) whose fingerprint is this
     * communicator's, or NULL: its entries choose where nothing is forced */
    const struct topo_tune_layout *tuned;
    /* forced for the communicator's next calls (symcoll_comm_set_algo), before
     * SYMCOLL_ALGO; TOPO_ALGO_AUTO: nothing */
    topo_algo_t call_forced;
    /* who set forced (TOPO_SOURCE_*; topo_select_coll_plan sets it on its copy for a
     * call's or the tuning file's algorithm), and the tuning file's entry */
    int forced_by;
    const struct topo_tune_entry *tune_entry;
} topo_select_cfg_t;

/* Where a decision came from: the built-in rules, a tuning file, SYMCOLL_ALGO or the
 * communicator's algorithm for its calls (symcoll_comm_set_algo). */
typedef enum {
    TOPO_SOURCE_BUILTIN = 0,
    TOPO_SOURCE_TUNED,
    TOPO_SOURCE_ENV,
    TOPO_SOURCE_CALL,
    TOPO_SOURCE_LAST
} topo_source_t;

const char *topo_source_name(topo_source_t source);

/* SYMCOLL_CUDA_NET_PATH */
enum { TOPO_PATH_AUTO = 0, TOPO_PATH_DIRECT, TOPO_PATH_STAGED };

/* Most ranks the direct path of CUDA memory across nodes serves: every rank puts its data
 * into every peer's pool and the GPU reduces them all in one pass (cuda/net_direct.h). */
#define TOPO_CUDA_DIRECT_MAX_RANKS 16

#define TOPO_REASON_MAX 256

typedef struct topo_decision {
    topo_algo_t algo;
    char reason[TOPO_REASON_MAX];
    bool quiet;           /* set by topo_select_algo: no reason is written */
    topo_source_t source; /* set by topo_select_coll_plan */
    /* CUDA across nodes: hierarchical over each node's GPUs (topo_cuda_net_hier; the
     * algorithm of staged chunks may be the host's hier without it), and its inter-node
     * step puts into the peers' CUDA pool */
    bool cuda_hier, direct;
} topo_decision_t;

/* Which engine runs a call: the plan's first half. The algorithm is the second. */
typedef enum {
    TOPO_FAMILY_NONE = 0,             /* nothing serves the call (the decision says why) */
    TOPO_FAMILY_SELF,                 /* one rank: the result is the input */
    TOPO_FAMILY_HOST,                 /* host memory inside a node, over the memfd pool */
    TOPO_FAMILY_CUDA,                 /* CUDA memory inside a node, kernels over the VMM pool */
    TOPO_FAMILY_NET_HOST,             /* host memory across nodes over UCX */
    TOPO_FAMILY_NET_CUDA,             /* CUDA memory across nodes, staged through pinned host
                                         memory by the channels */
    TOPO_FAMILY_NET_CUDA_HIER,        /* CUDA memory across nodes: reduce-scatter over each
                                         node's GPUs, the slice staged across nodes, all-gather */
    TOPO_FAMILY_NET_CUDA_DIRECT,      /* CUDA memory across nodes, one rank a node: UCX puts
                                         every rank's data into the peers' CUDA pool, the GPU
                                         reduces (staged where the probe found no way) */
    TOPO_FAMILY_NET_CUDA_HIER_DIRECT, /* as NET_CUDA_HIER, but the slice goes the direct
                                         path among the ranks of its local index */
    TOPO_FAMILY_LAST
} topo_family_t;

/* How a collective other than all-reduce runs on its plan's family. */
typedef enum {
    TOPO_VIA_NATIVE = 0, /* the family's own algorithm of the collective (every all-reduce;
                            host memory inside a node; host memory across nodes: rings
                            and chains over UCX; CUDA memory inside a node: its kernel) */
    TOPO_VIA_EAGER,      /* broadcast of host memory across nodes: the root does not wait */
    TOPO_VIA_PAIR,       /* host memory, 2 ranks across nodes: one exchange */
    TOPO_VIA_ALLREDUCE,  /* one all-reduce of the plan's bytes by the plan's family and
                            algorithm (broadcast and all-gather as a bytewise maximum,
                            reduce-scatter as the whole reduction) */
    TOPO_VIA_LAST
} topo_via_t;

/* What one call runs: the selector's whole answer. */
typedef struct topo_plan {
    topo_coll_t coll;
    symcoll_mem_type_t mem;
    topo_family_t family;
    topo_algo_t algo;   /* of the family; for the staged CUDA families the algorithm of the
                           chunks (each chunk's host all-reduce is chosen for its size) */
    topo_via_t via;     /* TOPO_VIA_NATIVE for all-reduce */
    topo_algo_t forced; /* what chose the algorithm when not the built-in rules: the call's
                           (symcoll_comm_set_algo), SYMCOLL_ALGO or the tuning file's entry;
                           the staged CUDA families force their chunks with it; else AUTO */
} topo_plan_t;

/* Whether hier on this layout reduces in the canonical order (algo/base/reduce.h): the
 * tree of each node's ranks (node_ranks + node_first[k], node_size[k] of them, in rank
 * order), then the tree of the nodes (in the order of their first ranks), must be the
 * tree of all n ranks. Compared as the sets of ranks under each inner vertex (+ and * are
 * commutative). False when out of memory. */
bool topo_hier_canonical(int n, int nnodes, const int *node_ranks, const int *node_first,
                         const int *node_size);

/* The flat algorithm of bytes over n ranks inside another algorithm (hier's slices):
 * rd up to topo_rd_max, above it the ring, or in the canonical order (beyond 2 ranks)
 * recursive halving and doubling. */
topo_algo_t topo_net_flat_algo(const topo_select_cfg_t *cfg, int n, size_t bytes);

/* "all-reduce", "reduce-scatter", ...; "?" if out of range. */
const char *topo_coll_name(topo_coll_t coll);

/* The path of a plan in words, for reports and the tools: the algorithm's name for an
 * all-reduce; for the other collectives brief ("native", "ucx:eager", "ucx:exchange",
 * "ucx:ring", "ucx:hier", "native:oneshot", "ar:ring", "none") or long. */
void topo_plan_path(const topo_plan_t *plan, bool brief, char *out, size_t len);

/* The order of a float sum, product or average on this plan, one word (symcoll_info -a):
 * "canonical" (the canonical tree: the same bits at any size, algorithm and layout),
 * "rd-steps" (the tree, but float16/bfloat16 rounded at every step), "node-wise" (each
 * node's tree, then the nodes'), "ring" (changes with the size), "cuda-own" (CUDA memory
 * across nodes in the fastest order), "exact" (one rank), "-" (nothing runs). */
const char *topo_plan_order(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                            const topo_plan_t *plan, size_t bytes);

const char *topo_family_name(topo_family_t family);

/* Name used by SYMCOLL_ALGO and in reports ("oneshot", ...); "?" if out of range. */
const char *topo_algo_name(topo_algo_t algo);
/* Inverse of topo_algo_name (case-insensitive); -1 if unknown. */
int topo_algo_parse(const char *name, topo_algo_t *algo_p);
const char *topo_link_name(topo_link_t link);
/* 1536 -> "1.5K", 1048576 -> "1M": sizes in reasons and reports. */
void topo_fmt_size(size_t v, char *buf, size_t len);

/* Thresholds and forced algorithm from a configuration read by config_read(). */
symcoll_status_t topo_select_cfg_from_config(const config_t *config, topo_select_cfg_t *cfg_p);

/* Whether algo can run on this shape for this memory type (in this build); if not,
 * why (in why). */
bool topo_algo_applicable(topo_algo_t algo, symcoll_mem_type_t mem, const topo_shape_t *shape,
                          char *why, size_t why_len);

/* Checked once at communicator creation: a forced algorithm must be able to serve host
 * memory on this shape (and CUDA memory when every rank has a GPU); otherwise logs why
 * and returns SYMCOLL_ERR_INVALID_PARAM. shape is the CUDA memory shape (its GPU links
 * matter for CUDA; host memory ignores them). */
symcoll_status_t topo_select_check(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                                   bool gpus);
/* The same check of algorithm algo (TOPO_ALGO_AUTO passes), the message starting with
 * what (for example "SYMCOLL_ALGO="). */
symcoll_status_t topo_algo_check(topo_algo_t algo, const topo_shape_t *shape, bool gpus,
                                 const char *what);

/* One-shot threshold for n ranks from the 2-rank threshold max2 (see select.c). */
size_t topo_oneshot_scaled(size_t max2, int n, symcoll_mem_type_t mem);

/* Largest message sent one-shot inside a node on this shape (SIZE_MAX when forced, 0
 * when one-shot is not used): what staging for one-shot must hold. */
size_t topo_oneshot_max(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                        symcoll_mem_type_t mem);

/* Largest message an n-rank all-reduce across nodes sends by recursive doubling. */
size_t topo_rd_max(const topo_select_cfg_t *cfg, int n);

/* CUDA memory across nodes, staged: the chunk a message of bytes moves in, with chunks of
 * at most chunk_max bytes and channels channels. A message spreads over the channels in pieces
 * of at least TOPO_CUDA_NET_PIECE_MIN (a multiple of every element size), so a message of a few
 * of those already crosses the nodes on several channels at once; smaller ones move whole. */
#define TOPO_CUDA_NET_PIECE_MIN ((size_t)64 * 1024)
static inline size_t topo_cuda_net_chunk(size_t bytes, size_t chunk_max, int channels)
{
    size_t per_channel = (bytes + (size_t)channels - 1) / (size_t)channels;
    size_t piece = (per_channel + TOPO_CUDA_NET_PIECE_MIN - 1) / TOPO_CUDA_NET_PIECE_MIN *
                   TOPO_CUDA_NET_PIECE_MIN;

    if (bytes <= TOPO_CUDA_NET_PIECE_MIN)
        piece = bytes;
    return piece < chunk_max ? piece : chunk_max;
}

/* CUDA memory across nodes: whether a message of bytes goes hierarchically over the GPUs
 * of each node (reduce-scatter through the CUDA pool's peer mappings, the slice staged
 * across nodes, all-gather through the mappings): several ranks on every node, the same
 * number, each node's GPUs mapping each other, at most cuda_max_local of them, from
 * SYMCOLL_HIER_MIN on, unless SYMCOLL_ALGO forces another algorithm. Where GPUs are
 * shared by ranks, only from TOPO_CUDA_HIER_SHARED_MIN on (unless SYMCOLL_ALGO=hier): the
 * kernels wait for each other's ranks, and time-sliced that costs 2.2-2.8 ms a call (2
 * nodes x 2 ranks on 2 GPUs), against 48-107 us flat at 4-64K; the hierarchical
 * algorithm is ahead from 16M (one H200 shared by the 4 ranks). */
#define TOPO_CUDA_HIER_SHARED_MIN ((size_t)16 << 20)

/* Broadcasts of host memory across nodes of at most TOPO_NET_BC_EAGER_MAX bytes, among up
 * to TOPO_NET_BC_MAX_RANKS ranks, are eager (algo/net/net_bc.c; the figures behind it:
 * algo/net.h); the decision report prints both for the tools' collective rule. */
#define TOPO_NET_BC_EAGER_MAX 32768
#define TOPO_NET_BC_MAX_RANKS 16

/* Whether a CUDA all-reduce of bytes across nodes goes the direct path on this shape: one
 * rank a node (the puts go to every peer, none through a node's own mappings), a UCX
 * with CUDA on every rank, a probe not known to have failed, and SYMCOLL_CUDA_NET_PATH
 * (auto: from SYMCOLL_CUDA_NET_DIRECT_MIN bytes). */
bool topo_cuda_net_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                          size_t bytes);
/* Whether a hierarchical CUDA all-reduce (topo_cuda_net_hier) takes the direct path for
 * its inter-node step: only with SYMCOLL_CUDA_NET_PATH=direct, then as
 * topo_cuda_net_direct among the shape's nodes, for the slice's bytes. */
bool topo_cuda_net_hier_direct(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                               size_t bytes);
bool topo_cuda_net_hier(const topo_select_cfg_t *cfg, const topo_shape_t *shape, size_t bytes);

/* The plan for one all-reduce of bytes bytes of mem memory on shape: the family that
 * runs it and its algorithm (the decision's algo); with d non-NULL, also the reason. */
void topo_select_plan(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                      symcoll_mem_type_t mem, size_t bytes, topo_plan_t *plan,
                      topo_decision_t *d);

/* The plan for one call of collective coll whose plan size is bytes (the larger buffer:
 * reduce-scatter's send, all-gather's receive; 1 for the barrier): the all-reduce's plan
 * of that size (topo_select_plan), and how the collective runs on it (select_coll.c);
 * with d non-NULL, also the reason. */
void topo_select_coll_plan(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                           topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes,
                           topo_plan_t *plan, topo_decision_t *d);

/* The choice for one message of bytes bytes. */
void topo_select(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                 symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d);

/* The same choice without the reason (no formatting: for the data path; call
 * topo_select for the reason when it is logged). */
topo_algo_t topo_select_algo(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                             symcoll_mem_type_t mem, size_t bytes);

#endif
