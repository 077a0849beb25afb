/* symcoll_info's runtime probes (see info.h): whether CUDA can run here, asked of the
 * driver, and which UCX runs and what memory it reaches, asked of a UCP context. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "info.h"
#include "symcoll.h"

/* Whether CUDA can run here, asked of the driver itself (libcuda, loaded at run time: the
 * library links the CUDA runtime statically and starts it only when a call needs it). */
typedef struct cuda_probe {
    int usable;
    int driver_version; /* CUDA version the driver supports, 1000 * major + 10 * minor */
    int devices;
    char reason[160]; /* why it is not usable */
} cuda_probe_t;

static void probe_cuda(cuda_probe_t *p)
{
    int (*cu_init)(unsigned);
    int (*cu_driver_version)(int *);
    int (*cu_device_count)(int *);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc;

    memset(p, 0, sizeof(*p));
    if (!lib) {
        snprintf(p->reason, sizeof(p->reason), "no CUDA driver (%s)", dlerror());
        return;
    }
    cu_init = (int (*)(unsigned))dlsym(lib, "cuInit");
    cu_driver_version = (int (*)(int *))dlsym(lib, "cuDriverGetVersion");
    cu_device_count = (int (*)(int *))dlsym(lib, "cuDeviceGetCount");
    if (!cu_init || !cu_driver_version || !cu_device_count) {
        snprintf(p->reason, sizeof(p->reason), "libcuda.so.1 lacks cuInit");
    } else if (cu_driver_version(&p->driver_version), (rc = cu_init(0)) != 0) {
        snprintf(p->reason, sizeof(p->reason), "cuInit failed (CUresult %d)", rc);
    } else if ((rc = cu_device_count(&p->devices)) != 0) {
        snprintf(p->reason, sizeof(p->reason), "cuDeviceGetCount failed (CUresult %d)", rc);
    } else if (p->devices == 0) {
        snprintf(p->reason, sizeof(p->reason), "the driver sees no device");
    } else {
        p->usable = 1;
    }
    /* libcuda stays loaded: unloading a started driver is not supported */
}

/* "CUDA on" in the build line: the library was built with its CUDA backend */
static int cuda_built(void)
{
    return strstr(symcoll_build_info(), "CUDA on") != NULL;
}

int info_cuda_usable(void)
{
    cuda_probe_t p;

    if (!cuda_built())
        return 0;
    probe_cuda(&p);
    return p.usable;
}

void show_cuda(void)
{
    cuda_probe_t p;
    int built = cuda_built();

    probe_cuda(&p);
    if (info_json) {
        json_member("cuda");
        printf("{\"built\": %s, \"usable\": %s, \"driver_version\": %d, \"devices\": %d, "
               "\"reason\": ",
               built ? "true" : "false", built && p.usable ? "true" : "false", p.driver_version,
               p.devices);
        if (!built)
            json_str("built without CUDA");
        else if (!p.usable)
            json_str(p.reason);
        else
            printf("null");
        printf("}");
        return;
    }
    if (!built)
        printf("# CUDA: not built (host memory only)\n");
    else if (p.usable)
        printf("# CUDA: built; usable here: yes (driver for CUDA %d.%d, %d device%s)\n",
               p.driver_version / 1000, p.driver_version % 1000 / 10, p.devices,
               p.devices == 1 ? "" : "s");
    else
        printf("# CUDA: built; usable here: no: %s\n", p.reason);
}

/* The UCX that the library runs on: its version (the library loaded, which may differ
 * from the one built against), where it was loaded from, and the memory types its
 * context reports, asked as the library's UCX layer asks (ucp_context_query). */
typedef struct ucx_probe {
    unsigned major, minor, release;
    char path[256];   /* the loaded libucp; "" if unknown */
    int queried;      /* a context was created and answered */
    int host, cuda;   /* memory types the context reports */
    char reason[160]; /* why not queried */
} ucx_probe_t;

static void probe_ucx(ucx_probe_t *p)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_context_attr_t attr;
    ucs_status_t s;
    Dl_info dl;

    memset(p, 0, sizeof(*p));
    ucp_get_version(&p->major, &p->minor, &p->release);
    if (dladdr((void *)ucp_get_version, &dl) && dl.dli_fname)
        snprintf(p->path, sizeof(p->path), "%s", dl.dli_fname);
    s = ucp_config_read(NULL, NULL, &config);
    if (s != UCS_OK) {
        snprintf(p->reason, sizeof(p->reason), "ucp_config_read: %s", ucs_status_string(s));
        return;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    s = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (s != UCS_OK) {
        snprintf(p->reason, sizeof(p->reason), "ucp_init: %s", ucs_status_string(s));
        return;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    s = ucp_context_query(context, &attr);
    if (s == UCS_OK) {
        p->queried = 1;
        p->host = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST)) != 0;
        p->cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    } else {
        snprintf(p->reason, sizeof(p->reason), "ucp_context_query: %s", ucs_status_string(s));
    }
    ucp_cleanup(context);
}

/* "UCX 1.22.0 (with CUDA transports)" of the build line, without "UCX " */
static void ucx_built(char *buf, size_t len)
{
    const char *b = strstr(symcoll_build_info(), "; UCX ");

    if (!b) {
        snprintf(buf, len, "?");
        return;
    }
    b += strlen("; UCX ");
    snprintf(buf, len, "%.*s", (int)strcspn(b, ";"), b);
}

void show_ucx(void)
{
    ucx_probe_t p;
    char built[96];

    probe_ucx(&p);
    ucx_built(built, sizeof(built));
    if (info_json) {
        json_member("ucx");
        printf("{\"built\": ");
        json_str(built);
        printf(", \"runtime\": \"%u.%u.%u\", \"library\": ", p.major, p.minor, p.release);
        json_str(p.path);
        if (p.queried)
            printf(", \"memory_types\": {\"host\": %s, \"cuda\": %s}, \"reason\": null}",
                   p.host ? "true" : "false", p.cuda ? "true" : "false");
        else {
            printf(", \"memory_types\": null, \"reason\": ");
            json_str(p.reason);
            printf("}");
        }
        return;
    }
    printf("# UCX: built against %s; runs on %u.%u.%u (%s)\n", built, p.major, p.minor,
           p.release, p.path[0] ? p.path : "?");
    if (p.queried)
        printf("# UCX memory types: host %s, cuda %s\n", p.host ? "yes" : "no",
               p.cuda ? "yes" : "no");
    else
        printf("# UCX memory types: unknown: %s\n", p.reason);
}
