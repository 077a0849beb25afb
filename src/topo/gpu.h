/* Local hardware facts for the probe: the CUDA device (through the src/cuda glue, only
 * in CUDA builds), NVLink counts from NVML (loaded at run time when present), and NUMA
 * placement (hwloc when built with it, else /sys). Every function degrades to "unknown". */
#ifndef SYMCOLL_TOPO_GPU_H
#define SYMCOLL_TOPO_GPU_H

#include "topo/topo.h"

/* Fills cuda_device, pci_bus_id, gpu_uuid, gpu_name and gpu_numa_node of me for the
 * requested device (-1: the current one, if this process has a GPU at all). */
void topo_gpu_local_facts(int cuda_device, topo_rank_info_t *me);

/* How me's GPU reaches peer's GPU (both on this node). */
void topo_gpu_link(const topo_rank_info_t *me, const topo_rank_info_t *peer,
                   topo_link_info_t *out);

/* NUMA node and CPU this process runs on (each -1 if unknown). */
void topo_numa_local(int *numa_node_p, int *cpu_p);

/* NUMA node of a PCI device from /sys ("0000:19:00.0" any case); -1 if unknown. */
int topo_pci_numa_node(const char *pci_bus_id);

/* Whether NVML could be loaded (libnvidia-ml.so.1), for reports. */
int topo_nvml_available(void);

#endif
