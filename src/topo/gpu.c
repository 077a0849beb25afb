/* Local hardware facts for the probe: CUDA device identity and peer access (through the
 * src/cuda glue), NVLink lanes (NVML, dlopen'ed at run time: never a build dependency),
 * NUMA placement (hwloc or /sys). */
#define _GNU_SOURCE
#include "topo/gpu.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif
#ifdef HAVE_CUDA
#include "cuda/cuda.h"
#endif

/* ---- PCI bus ids --------------------------------------------------------- */

/* CUDA writes "0000:19:00.0", NVML "00000000:19:00.0": compare parsed tuples. */
static int pci_parse(const char *s, unsigned v[4])
{
    return s && sscanf(s, "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]) == 4 ? 0 : -1;
}

static int pci_same(const char *a, const char *b)
{
    unsigned x[4], y[4];
    return !pci_parse(a, x) && !pci_parse(b, y) && !memcmp(x, y, sizeof(x));
}

int topo_pci_numa_node(const char *pci_bus_id)
{
    unsigned v[4];
    char path[128];
    FILE *f;
    int node = -1;

    if (pci_parse(pci_bus_id, v))
        return -1;
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.%x/numa_node", v[0], v[1],
             v[2], v[3]);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (fscanf(f, "%d", &node) != 1 || node < 0)
        node = -1;
    fclose(f);
    return node;
}

/* ---- NVML, loaded at run time -------------------------------------------- */

/* The few NVML declarations used, from NVML's documented ABI (no nvml.h needed). */
typedef int nvml_return_t; /* NVML_SUCCESS = 0 */
typedef struct nvml_device *nvml_device_t;
typedef struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;
#define NVML_P2P_CAPS_INDEX_READ 0
#define NVML_P2P_STATUS_OK 0
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2
#define NVML_LINKS_SCANNED 32 /* more than any GPU has (18 on Hopper) */

static struct {
    int loaded;
    nvml_return_t (*get_by_pci)(const char *, nvml_device_t *);
    nvml_return_t (*link_state)(nvml_device_t, unsigned, int *);
    nvml_return_t (*remote_pci)(nvml_device_t, unsigned, nvml_pci_info_t *);
    nvml_return_t (*remote_type)(nvml_device_t, unsigned, int *); /* may be NULL */
    nvml_return_t (*p2p_status)(nvml_device_t, nvml_device_t, int, int *);
} nvml;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

/* Loaded once per process and never unloaded: nvmlInit is slow and reference counted,
 * and a probe runs once per communicator. */
static void nvml_load(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_return_t (*init)(void);

    if (!h) {
        log_debug("NVML not loaded (%s): NVLink counts unknown", dlerror());
        return;
    }
    *(void **)&init = dlsym(h, "nvmlInit_v2");
    *(void **)&nvml.get_by_pci = dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&nvml.link_state = dlsym(h, "nvmlDeviceGetNvLinkState");
    *(void **)&nvml.remote_pci = dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    *(void **)&nvml.remote_type = dlsym(h, "nvmlDeviceGetNvLinkRemoteDeviceType");
    *(void **)&nvml.p2p_status = dlsym(h, "nvmlDeviceGetP2PStatus");
    if (!init || !nvml.get_by_pci || !nvml.link_state || !nvml.remote_pci || !nvml.p2p_status ||
        init() != 0) {
        log_debug("NVML found but unusable: NVLink counts unknown");
        dlclose(h);
        return;
    }
    nvml.loaded = 1;
}

int topo_nvml_available(void)
{
    pthread_once(&nvml_once, nvml_load);
    return nvml.loaded;
}

/* NVLink lanes of dev going straight to the GPU at peer_pci, and lanes going to
 * NVSwitches (which reach every GPU on the switch fabric). */
static void nvml_count_links(nvml_device_t dev, const char *peer_pci, int *direct_p,
                             int *switched_p)
{
    int direct = 0, switched = 0;

    for (unsigned l = 0; l < NVML_LINKS_SCANNED; l++) {
        int active = 0, type = -1;
        bool typed;
        nvml_pci_info_t pci;

        if (nvml.link_state(dev, l, &active) != 0 || !active)
            continue;
        typed = nvml.remote_type && nvml.remote_type(dev, l, &type) == 0;
        if (typed && type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
            switched++;
            continue;
        }
        memset(&pci, 0, sizeof(pci));
        if (nvml.remote_pci(dev, l, &pci) != 0)
            continue;
        if (peer_pci && pci_same(pci.bus_id, peer_pci))
            direct++;
        else if (!typed)
            /* drivers without nvmlDeviceGetNvLinkRemoteDeviceType cannot say what is at
             * the other end: a link to no GPU asked about is taken for a switch */
            switched++;
    }
    *direct_p = direct;
    *switched_p = switched;
}

static void nvml_link(const char *my_pci, const char *peer_pci, topo_link_info_t *out)
{
    nvml_device_t a, b;
    int status = -1, direct = 0, sw_a = 0, sw_b = 0, unused;

    if (!topo_nvml_available() || nvml.get_by_pci(my_pci, &a) != 0 ||
        nvml.get_by_pci(peer_pci, &b) != 0)
        return;
    out->flags |= TOPO_LINK_F_NVML;
    /* CUDA_VISIBLE_DEVICES may hide the peer from CUDA, never from NVML */
    if (!(out->flags & TOPO_LINK_F_CUDA) &&
        nvml.p2p_status(a, b, NVML_P2P_CAPS_INDEX_READ, &status) == 0 &&
        status == NVML_P2P_STATUS_OK)
        out->flags |= TOPO_LINK_F_P2P;
    nvml_count_links(a, peer_pci, &direct, &sw_a);
    nvml_count_links(b, NULL, &unused, &sw_b);
    if (direct > 0) {
        out->nvlinks = (uint8_t)direct;
    } else if (sw_a > 0 && sw_b > 0) {
        out->nvlinks = (uint8_t)sw_a;
        out->flags |= TOPO_LINK_F_SWITCH;
    }
}

/* ---- CUDA, through the glue ---------------------------------------------- */

void topo_gpu_local_facts(int cuda_device, topo_rank_info_t *me)
{
    me->cuda_device = -1;
    me->pci_bus_id[0] = 0;
    me->gpu_uuid[0] = 0;
    me->gpu_name[0] = 0;
    me->gpu_numa_node = -1;
#ifdef HAVE_CUDA
    {
        int ord;
        if (!cuda_device_identity(cuda_device, &ord, me->pci_bus_id, sizeof(me->pci_bus_id),
                                  me->gpu_uuid, sizeof(me->gpu_uuid), me->gpu_name,
                                  sizeof(me->gpu_name))) {
            me->cuda_device = ord;
            me->gpu_numa_node = topo_pci_numa_node(me->pci_bus_id);
        }
    }
#else
    (void)cuda_device;
#endif
}

void topo_gpu_link(const topo_rank_info_t *me, const topo_rank_info_t *peer,
                   topo_link_info_t *out)
{
    memset(out, 0, sizeof(*out));
    out->link = TOPO_LINK_NONE;
    out->perf_rank = -1;
    if (me->cuda_device < 0 || peer->cuda_device < 0 || !me->pci_bus_id[0] ||
        !peer->pci_bus_id[0])
        return;
    if (pci_same(me->pci_bus_id, peer->pci_bus_id)) {
        out->link = TOPO_LINK_SAME;
        out->perf_rank = 0;
        out->flags = TOPO_LINK_F_P2P;
        return;
    }
#ifdef HAVE_CUDA
    {
        int access = 0, atomic = 0, rank = -1;
        if (!cuda_p2p_attributes(me->pci_bus_id, peer->pci_bus_id, &access, &atomic, &rank)) {
            out->flags |= TOPO_LINK_F_CUDA;
            if (access)
                out->flags |= TOPO_LINK_F_P2P;
            if (atomic)
                out->flags |= TOPO_LINK_F_ATOMIC;
            out->perf_rank = (int8_t)rank;
        }
    }
#endif
    nvml_link(me->pci_bus_id, peer->pci_bus_id, out);
    if (!(out->flags & TOPO_LINK_F_P2P))
        out->link = TOPO_LINK_NONE;
    else if (out->nvlinks > 0)
        out->link = TOPO_LINK_NVLINK;
    else if (!(out->flags & TOPO_LINK_F_NVML) && (out->flags & TOPO_LINK_F_ATOMIC))
        /* without NVML: PCIe P2P has no native atomics, NVLink has them */
        out->link = TOPO_LINK_NVLINK;
    else
        out->link = TOPO_LINK_PCIE;
}

/* ---- NUMA ---------------------------------------------------------------- */

static int sys_cpu_numa_node(int cpu)
{
    char path[96];
    DIR *d;
    struct dirent *e;
    int node = -1;

    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
    d = opendir(path);
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "node", 4) && sscanf(e->d_name + 4, "%d", &node) == 1)
            break;
        node = -1;
    }
    closedir(d);
    return node;
}

void topo_numa_local(int *numa_node_p, int *cpu_p)
{
    int cpu = sched_getcpu(), node = -1;

#ifdef HAVE_HWLOC
    hwloc_topology_t topo;

    if (!hwloc_topology_init(&topo)) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && !hwloc_topology_load(topo) &&
            !hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD)) {
            hwloc_obj_t numa =
                hwloc_get_next_obj_covering_cpuset_by_type(topo, set, HWLOC_OBJ_NUMANODE, NULL);
            if (numa)
                node = (int)numa->os_index;
            if (hwloc_bitmap_first(set) >= 0)
                cpu = hwloc_bitmap_first(set);
        }
        hwloc_bitmap_free(set);
        hwloc_topology_destroy(topo);
    }
#endif
    if (node < 0 && cpu >= 0)
        node = sys_cpu_numa_node(cpu);
    *numa_node_p = node;
    *cpu_p = cpu < 0 ? -1 : cpu;
}
