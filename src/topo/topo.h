/* Topology: every rank's facts (host, pid, CPU and NUMA node, GPU, UCX capabilities),
 * which ranks share a node, local ranks and leaders, each node's GPU link matrix, and
 * the shapes the algorithm selector decides on. Probed once at communicator creation. */
#ifndef SYMCOLL_TOPO_H
#define SYMCOLL_TOPO_H

#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "topo/select.h"

#define TOPO_HOST_ID_MAX 128

#define TOPO_PCI_BUS_ID_MAX 32
#define TOPO_UUID_MAX 48
#define TOPO_TLS_MAX 64

/* Bits of topo_rank_info_t::net_mem_types (filled by the UCX layer). */
#define TOPO_NET_MEM_HOST (1u << SYMCOLL_MEM_HOST)
#define TOPO_NET_MEM_CUDA (1u << SYMCOLL_MEM_CUDA)

#define TOPO_CPU_WORDS 16

/* One rank's facts; exchanged as raw bytes, so fixed-size fields only. */
/* One rank's facts. The whole job learns host_hash and cuda_device of every rank; the
 * rest only the ranks of its node (topo_probe_node): elsewhere it stays zero. */
typedef struct topo_rank_info {
    char host_id[TOPO_HOST_ID_MAX]; /* hostname + boot id, or SYMCOLL_HOST_ID */
    uint64_t host_hash;             /* of host_id (topo_derive_nodes): the node's key */
    int32_t pid;
    uint64_t start_time;                  /* process start time (clock ticks since boot) */
    int32_t cuda_device;                  /* -1: none */
    char pci_bus_id[TOPO_PCI_BUS_ID_MAX]; /* of the CUDA device, "" if none */
    int32_t numa_node;                    /* of the CPU the process runs on; -1: unknown */
    int32_t cpu;                          /* CPU the process ran on at the probe; -1: unknown */
    int32_t ncpus;                 /* CPUs the process may run on (affinity); 0: unknown */
    uint64_t cpus[TOPO_CPU_WORDS]; /* which (affinity, CPUs 0 to 64 x TOPO_CPU_WORDS - 1) */
    int32_t gpu_numa_node;         /* of the CUDA device's PCI slot; -1: unknown */
    char gpu_uuid[TOPO_UUID_MAX];  /* "GPU-xxxxxxxx-...", "" if none */
    char gpu_name[64];             /* marketing name, "" if none */
    uint32_t net_mem_types;        /* TOPO_NET_MEM_* UCX reaches directly; 0: not known */
    char net_tls[TOPO_TLS_MAX];    /* UCX transports in use; "" if none / not known */
} topo_rank_info_t;

/* How one rank's GPU reaches the GPU of another rank of its node. */
typedef struct topo_link_info {
    int8_t link;      /* topo_link_t */
    int8_t perf_rank; /* CUDA P2P performance rank (0 best); -1: unknown */
    uint8_t nvlinks; /* NVLink lanes to that GPU (or to NVSwitches) per NVML; 0: none/unknown */
    uint8_t flags;   /* TOPO_LINK_F_* */
} topo_link_info_t;

#define TOPO_LINK_F_P2P (1u << 0)    /* peer access supported */
#define TOPO_LINK_F_ATOMIC (1u << 1) /* native atomics over the link */
#define TOPO_LINK_F_CUDA (1u << 2)   /* learned from CUDA P2P attributes */
#define TOPO_LINK_F_NVML (1u << 3)   /* learned from NVML */
#define TOPO_LINK_F_SWITCH (1u << 4) /* NVLinks go through NVSwitch */

typedef struct topo {
    int nranks;
    int nnodes;
    int node; /* this rank's node index */
    int local_rank;
    int local_size;
    int *local_ranks;       /* global ranks of this node, local-rank order */
    int *rank_node;         /* node of every rank */
    int *rank_local_rank;   /* local rank of every rank */
    int *node_leader;       /* global rank of local rank 0 of every node */
    int *node_size;         /* ranks on each node */
    topo_rank_info_t *info; /* every rank's facts */
    int max_node_size;      /* ranks on the largest node */
    int have_gpus;          /* some rank has a CUDA device */
    /* links[a * local_size + b]: the GPU of local rank a of this node to that of local
     * rank b; this node's only (other nodes' matrices stay there); NULL when no rank has
     * a GPU */
    topo_link_info_t *links;
    /* what every node found out about itself, agreed in one vote (topo_probe_node);
     * agreed false for a topology built from injected facts, whose shapes come from
     * every rank's facts instead */
    bool agreed;
    bool facts_known;        /* topo_probe_part: the node's facts are in info[] already */
    int gpu_link_job;        /* the worst GPU link inside any node (topo_link_t) */
    bool oversub_job;        /* some node has more ranks than CPUs they may run on */
    bool gpus_shared_job;    /* some GPU serves two ranks, or some rank's GPU is not known */
    bool hier_canonical_job; /* every rank found hier's order to be the canonical tree */
    int net_cuda_ranks;      /* ranks whose UCX reaches CUDA memory */
    /* per rank: 1 this rank's probe put into that rank's CUDA pool landed, -1 it did
     * not, 0 not probed (this rank, a rank of this node, or no probe ran) */
    signed char *net_direct_peer;
    topo_select_cfg_t select_cfg;         /* SYMCOLL_ALGO and thresholds */
    topo_shape_t shape[SYMCOLL_MEM_LAST]; /* what the selector sees, per memory type */
    /* SYMCOLL_TUNE_FILE (topo_tune.c): the file read at creation (NULL: none, or it
     * could not be: tune_bad), agreed in topo_probe_node's vote; select_cfg.tuned is its
     * layout of this communicator's fingerprint. tune_told: the first plan said which. */
    struct topo_tune *tune;
    bool tune_bad, tune_told;
    int tune_mismatch; /* SYMCOLL_TUNE_MISMATCH */
    /* the last plan per collective and memory type (topo_plan): a loop of equal calls
     * asks the selector once; used under the communicator's lock only */
    struct {
        size_t bytes;
        topo_plan_t plan;
        bool valid;
    } memo[TOPO_COLL_LAST][SYMCOLL_MEM_LAST];
} topo_t;

/* Collective: every rank tells the job its host identity's hash and whether it has a
 * GPU (16 bytes a rank) and derives the node map. Then, once the node's channel is open
 * (bootstrap_local_init over the node map), topo_probe_node (also collective): the
 * ranks of each node exchange their other facts and, with GPUs, the node's link matrix
 * over that channel; one job-wide vote agrees on what the selector needs from every
 * node (worst GPU link, oversubscription, shared GPUs); then the shapes and the check
 * of SYMCOLL_ALGO against them. No rank holds another node's facts. */
symcoll_status_t topo_probe(comm_t *comm, topo_t **topo_p);
symcoll_status_t topo_probe_node(comm_t *comm, topo_t *t);
/* topo_probe for a communicator made of some of parent's ranks (members[r] is the
 * parent rank of comm's rank r), with no exchange: every rank's facts come from
 * parent's (which holds those of its node, the part's node among them), so the
 * topo_probe_node that follows skips the node's exchange of facts (GPU links and the
 * vote still run). Only where every rank of the part agreed to (each is on the parent's
 * CUDA device). False when out of memory. */
bool topo_probe_part(comm_t *comm, const topo_t *parent, const int *members, topo_t **topo_p);
void topo_destroy(topo_t *topo);

/* The probe in three steps, so that tests can inject facts instead of gathering them:
 * topo_create allocates for nranks and reads the selector's configuration; the caller
 * fills info[] (every rank's facts); topo_derive_nodes builds the node map (node k is
 * the k-th distinct host identity in rank order) as seen by my_rank; the caller may set
 * links (local_size * local_size entries, malloc'ed, freed by topo_destroy);
 * topo_finish derives the selector's shapes and checks SYMCOLL_ALGO against them. */
symcoll_status_t topo_create(int nranks, const config_t *config, topo_t **topo_p);
void topo_derive_nodes(topo_t *t, int my_rank);
symcoll_status_t topo_finish(topo_t *t);

/* ---- the tuning file (topo_tune.c) ---- */
/* Reads config's SYMCOLL_TUNE_FILE into t (a file that cannot be read or parsed is
 * logged and marks t: the vote makes every rank fail). */
void topo_tune_open(topo_t *t, const config_t *config);
/* For a part of parent (split, shrink): the parent's file as it read it, unless config
 * names another (then topo_tune_open). */
void topo_tune_inherit(topo_t *t, const topo_t *parent, const config_t *config);
/* Five values of the creation's MIN vote (v[0..4]), and what every rank concludes from
 * the result: a damaged file anywhere, or files that differ under
 * SYMCOLL_TUNE_MISMATCH=fail, fail creation (naming the ranks: a bootstrap exchange,
 * every rank takes it); under ignore every rank drops its file. */
void topo_tune_vote_fill(const topo_t *t, int rank, int64_t *v);
symcoll_status_t topo_tune_vote_check(comm_t *comm, topo_t *t, const int64_t *v);
/* The communicator's layout as tuning files name it ("nodes=2 ppn=2 gpu=none net=tcp
 * order=auto lib=0.4.0"): nodes, ranks per node (or each node's), the GPUs' worst link,
 * the transports across nodes, the reduction order and the library's version. */
void topo_fingerprint(const topo_t *t, char *buf, size_t len);
/* Points the selector at the file's layout of this fingerprint (none: NULL); called
 * whenever the shapes change. topo_tune_tell logs once which layout serves. */
void topo_tune_match(topo_t *t);
void topo_tune_tell(topo_t *t);
/* The algorithm of the communicator's next calls (symcoll_comm_set_algo): name as
 * SYMCOLL_ALGO, NULL or "auto" clears it; one that cannot run on this layout (for host
 * memory, and CUDA memory where every rank has a GPU) is SYMCOLL_ERR_INVALID_PARAM and
 * changes nothing. */
symcoll_status_t topo_set_call_algo(topo_t *t, const char *name);
/* Forgets every remembered plan (the selector's inputs changed). */
void topo_memo_clear(topo_t *t);

/* Link from rank a's GPU to rank b's GPU, both of this rank's node; NULL if unknown or
 * another node. */
const topo_link_info_t *topo_link(const topo_t *t, int a, int b);

/* Called by the UCX layer once it knows every rank's capabilities (memory types UCX
 * reaches directly, TOPO_NET_MEM_*, and transport names); updates the shapes. */
void topo_set_net_caps(topo_t *t, int rank, uint32_t mem_types, const char *tls);

/* Called by the algorithm layer after the collective probe of the direct path of CUDA
 * memory across nodes: per_rank as net_direct_peer (copied), all_ok: every rank's puts
 * into every peer landed (the same on every rank); drv: some rank's UCX moves CUDA memory
 * through a transport that calls the CUDA driver from the channel (the same on every rank:
 * topo_shape_t's net_direct_drv); one_queue: besides, some such rank has one hardware queue
 * (net_direct_one_queue; all_ok is then false). Updates the shapes. */
void topo_set_net_direct(topo_t *t, const signed char *per_rank, bool all_ok, bool drv,
                         bool one_queue);

/* The plan of one call of collective coll of mem memory whose plan size is bytes
 * (topo_select_coll_plan) on this communicator: the family, algorithm and way that run
 * it. The data path's one question to the selector: it remembers the last answer per
 * collective and memory type (call with the communicator's lock held). */
const topo_plan_t *topo_plan(topo_t *t, topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes);

/* The same plan with its reason (formatting it costs about half a microsecond), for
 * logs and reports; touches no memo. */
void topo_plan_explain(const topo_t *t, topo_coll_t coll, symcoll_mem_type_t mem, size_t bytes,
                       topo_plan_t *plan, topo_decision_t *d);

/* Set by the algorithm layer at creation: whether the native reduce-scatter of host
 * memory inside a node can run with its staging (topo_select_cfg_t's host_rs_native). */
void topo_set_host_rs_native(topo_t *t, bool native);

/* The selector's choice for one all-reduce of bytes bytes of mem memory, with the
 * reason (formatting it costs about half a microsecond). */
void topo_choose(const topo_t *t, symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d);

/* The same choice without the reason: for the data path (tens of nanoseconds). */
topo_algo_t topo_choose_algo(const topo_t *t, symcoll_mem_type_t mem, size_t bytes);

/* Largest message the selector sends one-shot on this communicator (SIZE_MAX when
 * SYMCOLL_ALGO=oneshot, 0 when one-shot is not used): what one-shot staging must hold. */
size_t topo_choose_oneshot_max(const topo_t *t, symcoll_mem_type_t mem);

/* Reports behind symcoll_comm_print_topology / symcoll_comm_print_decisions. */
void topo_print(const topo_t *t, FILE *out);
void topo_print_decisions(const topo_t *t, FILE *out);

/* Process start time from /proc/PID/stat; 0 if unknown. Used to detect a dead peer
 * whose pid was reused. */
uint64_t topo_proc_start_time(int pid);

/* Parses the text of a /proc/PID/stat: its state letter (field 3) and start time (field
 * 22), read after the last ')' since the command name may hold any character. 0 on
 * success, -1 if the text does not have them. */
int topo_proc_stat_parse(const char *text, char *state, uint64_t *start_time);

/* True if the local process pid with that start time still runs: it has a /proc entry
 * with that start time (not a reused pid) and is no zombie (dead, not yet reaped). */
int topo_proc_alive(int pid, uint64_t start_time);

#endif
