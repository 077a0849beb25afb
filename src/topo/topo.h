/* Topology: which ranks share a node (same host identity), local ranks and leaders.
 * Probed once at communicator creation through the bootstrap. */
#ifndef SYMCOLL_TOPO_H
#define SYMCOLL_TOPO_H

#include <stdint.h>

#include "core/core.h"

#define TOPO_HOST_ID_MAX 128

typedef struct topo_rank_info {
    char host_id[TOPO_HOST_ID_MAX]; /* hostname + boot id, or SYMCOLL_HOST_ID */
    int32_t pid;
    uint64_t start_time;            /* process start time (clock ticks since boot) */
    int32_t cuda_device;            /* -1: none */
    char pci_bus_id[32];
    int32_t numa_node;              /* -1: unknown */
} topo_rank_info_t;

typedef struct topo {
    int nranks;
    int nnodes;
    int node;               /* this rank's node index */
    int local_rank;
    int local_size;
    int *local_ranks;       /* global ranks of this node, local-rank order */
    int *rank_node;         /* node of every rank */
    int *rank_local_rank;   /* local rank of every rank */
    int *node_leader;       /* global rank of local rank 0 of every node */
    int *node_size;         /* ranks on each node */
    topo_rank_info_t *info; /* every rank's facts */
} topo_t;

symcoll_status_t topo_probe(comm_t *comm, topo_t **topo_p);
void topo_destroy(topo_t *topo);

/* Process start time from /proc/PID/stat; 0 if unknown. Used to detect a dead peer
 * whose pid was reused. */
uint64_t topo_proc_start_time(int pid);

/* True if the local process pid with that start time still runs. */
int topo_proc_alive(int pid, uint64_t start_time);

#endif
