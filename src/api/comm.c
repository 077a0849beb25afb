/* Communicator lifecycle: configuration, bootstrap, topology probe, teardown, abort. */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "topo/topo.h"
#include "ucx/ucx.h"
#include "algo/algo.h"
#ifdef HAVE_CUDA
#include "cuda/cuda.h"
#endif

/* ---- registry of live communicators ------------------------------------- */

/* The registry lock orders symcoll_comm_abort against symcoll_comm_destroy: destroy
 * takes the communicator out of the registry under it before tearing anything down,
 * and abort holds it across all its work on the communicator. It is taken only by the
 * entry points of src/api/, never while another lock of the library is held; under it
 * abort takes only locks that their holders keep briefly (the CUDA abort words' table,
 * the CUDA channels' mutex), never comm->lock, and never waits for a peer. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static comm_t **registry;
static size_t registry_len, registry_cap;

static int registry_add(comm_t *comm)
{
    int ret = 0;
    pthread_mutex_lock(&registry_lock);
    if (registry_len == registry_cap) {
        size_t cap = registry_cap ? 2 * registry_cap : 8;
        comm_t **r = realloc(registry, cap * sizeof(*r));
        if (!r) {
            ret = -1;
            goto out;
        }
        registry = r;
        registry_cap = cap;
    }
    registry[registry_len++] = comm;
out:
    pthread_mutex_unlock(&registry_lock);
    return ret;
}

/* Index of a live comm in the registry, or registry_len. registry_lock held. */
static size_t registry_find(const comm_t *comm)
{
    size_t i;
    for (i = 0; i < registry_len; i++)
        if (registry[i] == comm)
            return comm->magic == COMM_MAGIC ? i : registry_len;
    return registry_len;
}

/* Takes comm out of the registry: false when it was not there (NULL, never created or
 * already taken). After a true return no abort runs on comm and none will start. */
static bool registry_take(comm_t *comm)
{
    bool found = false;
    size_t i;

    if (!comm)
        return false;
    pthread_mutex_lock(&registry_lock);
    i = registry_find(comm);
    if (i < registry_len) {
        registry[i] = registry[--registry_len];
        found = true;
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

bool api_comm_valid(const comm_t *comm)
{
    bool found;
    if (!comm)
        return false;
    pthread_mutex_lock(&registry_lock);
    found = registry_find(comm) < registry_len;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

/* ---- rank and size from the environment --------------------------------- */

static int env_int(const char *name, long *out)
{
    const char *v = getenv(name);
    return v && !config_parse_long(v, out) ? 0 : -1;
}

static symcoll_status_t comm_env_rank_size(const config_t *cfg, int *rank, int *nranks)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"};
    long r = cfg->rank, n = cfg->nranks;

    for (size_t i = 0; i < SC_ARRAY_SIZE(rank_vars) && (r < 0 || n < 0); i++) {
        long rr, nn;
        if (!env_int(rank_vars[i], &rr) && !env_int(size_vars[i], &nn)) {
            if (r < 0)
                r = rr;
            if (n < 0)
                n = nn;
        }
    }
    if (r < 0 || n <= 0) {
        log_error("rank and size unknown: set SYMCOLL_RANK and SYMCOLL_NRANKS (or run under "
                  "symcoll_run, mpirun, srun), or pass them with an allgather callback");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (r >= n) {
        log_error("rank %ld is not below the number of ranks %ld", r, n);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    *rank = (int)r;
    *nranks = (int)n;
    return SYMCOLL_OK;
}

/* ---- the bootstrap: caller's allgather > PMIx > SYMCOLL_ADDR ------------- */

/* Under a PMIx server (mpirun, srun --mpi=pmix) without an allgather callback, rank, size
 * and node come from PMIx, unless the environment names a TCP job itself: SYMCOLL_ADDR
 * with a rank from SYMCOLL_RANK or the caller, as symcoll_run and the tests set them
 * (so they work inside a PMIx job too). A rank and size given anyway must agree with
 * PMIx's. A PMIx that does not answer leaves the other ways. */
static symcoll_status_t comm_pmix_identity(comm_t *comm, const symcoll_comm_params_t *params,
                                           uint64_t mask, bool *use_pmix)
{
    const uint64_t given = SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS;
    config_t *cfg = &comm->config;
    bootstrap_pmix_job_t job;
    long r = cfg->rank, n = cfg->nranks;

    *use_pmix = false;
    if ((mask & SYMCOLL_COMM_PARAM_FIELD_ALLGATHER) || !bootstrap_pmix_present() ||
        ((mask & given) && (mask & given) != given) ||
        (cfg->addr[0] && (r >= 0 || (mask & given))))
        return SYMCOLL_OK;
    if (bootstrap_pmix_job(&job) != SYMCOLL_OK) {
        log_warn("PMIx does not answer: falling back to SYMCOLL_ADDR and the launcher's "
                 "variables");
        return SYMCOLL_OK;
    }
    if ((mask & given) == given) {
        r = params->rank;
        n = params->nranks;
    }
    if ((r >= 0 && r != job.rank) || (n >= 0 && n != job.nranks)) {
        log_error("rank %ld of %ld was given, but the PMIx server places this process at "
                  "rank %d of %d",
                  r, n, job.rank, job.nranks);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    comm->rank = job.rank;
    comm->nranks = job.nranks;
    /* SYMCOLL_HOST_ID (simulated nodes) still wins over the launcher's node */
    if (!cfg->host_id[0])
        snprintf(cfg->host_id, sizeof(cfg->host_id), "%s", job.node_id);
    *use_pmix = true;
    return SYMCOLL_OK;
}

/* ---- create / destroy ---------------------------------------------------- */

/* What a communicator needs once its bootstrap connects its ranks (comm->bootstrap,
 * rank, size, config, timeout and lock set): the topology, the node-local channel, the
 * layers, the registry. Collective. On failure everything, comm included, is freed. */
static symcoll_status_t comm_setup(comm_t *comm, symcoll_comm_h *comm_p)
{
    double t[6];
    symcoll_status_t status;

    t[0] = time_now();
    /* the listener a later shrink's agreement dials */
    status = bootstrap_shrink_prepare(comm->bootstrap);
    if (status != SYMCOLL_OK)
        goto err_topo;
    t[5] = time_now();
    /* a split's or a shrink's part may have its topology from the parent's already */
    if (!comm->topo) {
        status = topo_probe(comm, &comm->topo);
        if (status != SYMCOLL_OK)
            goto err_bootstrap;
    }

    t[1] = time_now();
    if (comm->topo->local_size > 1) {
        status = bootstrap_local_init(comm->bootstrap, comm->topo->local_rank,
                                      comm->topo->local_size, comm->topo->local_ranks);
        if (status != SYMCOLL_OK)
            goto err_topo;
    }
    t[2] = time_now();
    status = topo_probe_node(comm, comm->topo);
    if (status != SYMCOLL_OK)
        goto err_topo;

    t[3] = time_now();
    status = api_init_layers(comm);
    if (status != SYMCOLL_OK)
        goto err_topo;
    t[4] = time_now();

    comm->magic = COMM_MAGIC;
    if (registry_add(comm)) {
        status = SYMCOLL_ERR_NO_MEMORY;
        goto err_layers;
    }
    log_info("communicator created: rank %d of %d, %d node(s), local rank %d of %d; "
             "bootstrap: %s; after it, %.4f s: shrink listener %.4f, topology %.4f, node "
             "channel %.4f, node facts %.4f, layers %.4f",
             comm->rank, comm->nranks, comm->topo->nnodes, comm->topo->local_rank,
             comm->topo->local_size, bootstrap_describe(comm->bootstrap), t[4] - t[0],
             t[5] - t[0], t[1] - t[5], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
    *comm_p = comm;
    return SYMCOLL_OK;

err_layers:
    comm->magic = 0;
    api_release_layers(comm);
err_topo:
    topo_destroy(comm->topo);
err_bootstrap:
    bootstrap_destroy(comm->bootstrap);
    pthread_mutex_destroy(&comm->lock);
    free(comm);
    return status;
}

/* The reduction order of the parameters, where given, over the configuration's. */
static symcoll_status_t comm_param_order(config_t *cfg, const symcoll_comm_params_t *params,
                                         uint64_t mask, const char *fn)
{
    if (!(mask & SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER))
        return SYMCOLL_OK;
    if (params->reduction_order != SYMCOLL_ORDER_CANONICAL &&
        params->reduction_order != SYMCOLL_ORDER_FASTEST &&
        params->reduction_order != SYMCOLL_ORDER_AUTO) {
        log_error("%s: reduction_order %d is not SYMCOLL_ORDER_CANONICAL (0), "
                  "SYMCOLL_ORDER_FASTEST (1) or SYMCOLL_ORDER_AUTO (2)",
                  fn, params->reduction_order);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    cfg->reduction_order =
        params->reduction_order == SYMCOLL_ORDER_CANONICAL ? CONFIG_ORDER_CANONICAL
        : params->reduction_order == SYMCOLL_ORDER_FASTEST ? CONFIG_ORDER_FASTEST
                                                           : CONFIG_ORDER_AUTO;
    return SYMCOLL_OK;
}

/* The tuning file of the parameters, where given, over SYMCOLL_TUNE_FILE. */
static symcoll_status_t comm_param_tune(config_t *cfg, const symcoll_comm_params_t *params,
                                        uint64_t mask, const char *fn)
{
    if (!(mask & SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE))
        return SYMCOLL_OK;
    if (!params->tune_file || strlen(params->tune_file) >= sizeof(cfg->tune_file)) {
        log_error("%s: tune_file is NULL or longer than %zu bytes (\"\" for none)", fn,
                  sizeof(cfg->tune_file) - 1);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    snprintf(cfg->tune_file, sizeof(cfg->tune_file), "%s", params->tune_file);
    return SYMCOLL_OK;
}

#define COMM_PARAM_ALL_FIELDS                                                                  \
    (SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS |                         \
     SYMCOLL_COMM_PARAM_FIELD_ALLGATHER | SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE |               \
     SYMCOLL_COMM_PARAM_FIELD_TIMEOUT | SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER |             \
     SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE)

/* The caller's header against this library: the same major, and no newer minor (the
 * caller may set fields or flags this library does not know). Checked before anything
 * else of the caller's is read. */
static symcoll_status_t comm_check_api_version(unsigned api_major, unsigned api_minor)
{
    if (api_major == SYMCOLL_API_MAJOR && api_minor <= SYMCOLL_API_MINOR)
        return SYMCOLL_OK;
    log_error("symcoll_comm_create: built against symcoll API %u.%u, this library is "
              "%u.%u: rebuild against the header of this library%s",
              api_major, api_minor, SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR,
              api_major == SYMCOLL_API_MAJOR ? " or use a newer library" : "");
    return SYMCOLL_ERR_UNSUPPORTED;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_create_version(unsigned api_major,
                                                            unsigned api_minor,
                                                            const symcoll_comm_params_t *params,
                                                            symcoll_comm_h *comm_p)
{
    symcoll_comm_params_t none = {0};
    bootstrap_params_t bp;
    comm_t *comm;
    symcoll_status_t status;
    uint64_t mask;
    bool use_pmix = false;

    status = comm_check_api_version(api_major, api_minor);
    if (status != SYMCOLL_OK)
        return status;
    if (!comm_p)
        return SYMCOLL_ERR_INVALID_PARAM;
    if (!params)
        params = &none;
    mask = params->field_mask;
    /* the field exists from API 0.3 on: an older caller's structure ends before it */
    if (api_minor < 3 && (mask & SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER)) {
        log_error(
            "symcoll_comm_create: field_mask has SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER, "
            "which API %u.%u does not have",
            api_major, api_minor);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (api_minor < 4 && (mask & SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE)) {
        log_error("symcoll_comm_create: field_mask has SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE, "
                  "which API %u.%u does not have",
                  api_major, api_minor);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (mask & ~(uint64_t)COMM_PARAM_ALL_FIELDS) {
        log_error("symcoll_comm_create: unknown field_mask bits 0x%llx",
                  (unsigned long long)(mask & ~(uint64_t)COMM_PARAM_ALL_FIELDS));
        return SYMCOLL_ERR_INVALID_PARAM;
    }

    comm = calloc(1, sizeof(*comm));
    if (!comm)
        return SYMCOLL_ERR_NO_MEMORY;
    comm->cuda_device = -1;

    status = config_read(&comm->config);
    if (status != SYMCOLL_OK)
        goto err_free;
    log_set_level((log_level_t)comm->config.log_level);

    if (mask & SYMCOLL_COMM_PARAM_FIELD_ALLGATHER) {
        if (!params->allgather ||
            (mask & (SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS)) !=
                (SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS)) {
            log_error("symcoll_comm_create: an allgather callback needs rank and nranks");
            status = SYMCOLL_ERR_INVALID_PARAM;
            goto err_free;
        }
    }
    status = comm_pmix_identity(comm, params, mask, &use_pmix);
    if (status != SYMCOLL_OK)
        goto err_free;
    if (use_pmix) {
        /* rank and size are PMIx's */
    } else if ((mask & SYMCOLL_COMM_PARAM_FIELD_RANK) &&
               (mask & SYMCOLL_COMM_PARAM_FIELD_NRANKS)) {
        comm->rank = params->rank;
        comm->nranks = params->nranks;
    } else if (mask & (SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS)) {
        log_error("symcoll_comm_create: rank and nranks must be given together");
        status = SYMCOLL_ERR_INVALID_PARAM;
        goto err_free;
    } else {
        status = comm_env_rank_size(&comm->config, &comm->rank, &comm->nranks);
        if (status != SYMCOLL_OK)
            goto err_free;
    }
    if (comm->nranks <= 0 || comm->rank < 0 || comm->rank >= comm->nranks) {
        log_error("symcoll_comm_create: invalid rank %d of %d", comm->rank, comm->nranks);
        status = SYMCOLL_ERR_INVALID_PARAM;
        goto err_free;
    }
    comm->timeout_sec = comm->config.timeout_sec;
    if (mask & SYMCOLL_COMM_PARAM_FIELD_TIMEOUT) {
        if (!config_timeout_ok(params->timeout_sec)) {
            log_error(
                "symcoll_comm_create: timeout %.9g s is not finite, not positive or above "
                "%.0f s (30 days)",
                params->timeout_sec, CONFIG_TIMEOUT_MAX_SEC);
            status = SYMCOLL_ERR_INVALID_PARAM;
            goto err_free;
        }
        comm->timeout_sec = params->timeout_sec;
    }
    if (mask & SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE) {
        if (params->cuda_device < 0) {
            log_error("symcoll_comm_create: invalid CUDA device %d", params->cuda_device);
            status = SYMCOLL_ERR_INVALID_PARAM;
            goto err_free;
        }
        comm->cuda_device = params->cuda_device;
    }
    status = comm_param_order(&comm->config, params, mask, "symcoll_comm_create");
    if (status == SYMCOLL_OK)
        status = comm_param_tune(&comm->config, params, mask, "symcoll_comm_create");
    if (status != SYMCOLL_OK)
        goto err_free;
    log_set_rank(comm->rank);

    if (pthread_mutex_init(&comm->lock, NULL)) {
        status = SYMCOLL_ERR_SYSTEM;
        goto err_free;
    }

    memset(&bp, 0, sizeof(bp));
    bp.rank = comm->rank;
    bp.nranks = comm->nranks;
    if (mask & SYMCOLL_COMM_PARAM_FIELD_ALLGATHER) {
        bp.allgather = params->allgather;
        bp.allgather_ctx = params->allgather_ctx;
    }
    bp.addr = comm->config.addr;
    bp.cookie = comm->config.cookie;
    bp.listen_fd = (int)comm->config.listen_fd;
    bp.no_host_leaders = comm->config.rendezvous_leaders == 0;
    bp.host_group = comm->config.host_id;
    bp.timeout_sec = comm->timeout_sec;
    bp.aborted = &comm->aborted;
    bp.pmix = use_pmix;
    status = bootstrap_create(&bp, &comm->bootstrap);
    if (status != SYMCOLL_OK)
        goto err_mutex;
    /* comm_setup frees comm when it fails */
    return comm_setup(comm, comm_p);

err_mutex:
    pthread_mutex_destroy(&comm->lock);
err_free:
    free(comm);
    return status;
}

/* The exported symbol symcoll_comm_create, for programs that call it rather than the
 * header's inline wrapper of the same name: they pass no version, so this library's own
 * is assumed. Its C name differs because the wrapper holds the name in this file (it is
 * unused here, so never emitted). */
SYMCOLL_EXPORT symcoll_status_t comm_create_unversioned(
    const symcoll_comm_params_t *params, symcoll_comm_h *comm_p) __asm__("symcoll_comm_create");

symcoll_status_t comm_create_unversioned(const symcoll_comm_params_t *params,
                                         symcoll_comm_h *comm_p)
{
    return symcoll_comm_create_version(SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR, params, comm_p);
}

#define COMM_CHILD_FIELDS                                                                      \
    (SYMCOLL_COMM_PARAM_FIELD_TIMEOUT | SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE |                 \
     SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER | SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE)

/* A communicator made from parent (split, shrink): params checked (function fn's
 * rules: a timeout and a CUDA device at most), the rest inherited. NULL with *status_p
 * set when the arguments are wrong or memory is short; nothing else is done. */
static comm_t *comm_child_alloc(const char *fn, const comm_t *parent,
                                const symcoll_comm_params_t *params, symcoll_status_t *status_p)
{
    uint64_t mask = params ? params->field_mask : 0;
    comm_t *comm;

    *status_p = SYMCOLL_ERR_INVALID_PARAM;
    if (mask & ~(uint64_t)COMM_CHILD_FIELDS) {
        log_error("%s: field_mask 0x%llx: it takes a timeout, a CUDA device, a reduction "
                  "order and a tuning file at most (its ranks come from the parent)",
                  fn, (unsigned long long)mask);
        return NULL;
    }
    if ((mask & SYMCOLL_COMM_PARAM_FIELD_TIMEOUT) && !config_timeout_ok(params->timeout_sec)) {
        log_error("%s: timeout %.9g s is not finite, not positive or above %.0f s (30 days)",
                  fn, params->timeout_sec, CONFIG_TIMEOUT_MAX_SEC);
        return NULL;
    }
    if ((mask & SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE) && params->cuda_device < 0) {
        log_error("%s: invalid CUDA device %d", fn, params->cuda_device);
        return NULL;
    }
    if ((mask & SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER) &&
        params->reduction_order != SYMCOLL_ORDER_CANONICAL &&
        params->reduction_order != SYMCOLL_ORDER_FASTEST &&
        params->reduction_order != SYMCOLL_ORDER_AUTO) {
        log_error("%s: invalid reduction_order %d", fn, params->reduction_order);
        return NULL;
    }
    if ((mask & SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE) &&
        (!params->tune_file || strlen(params->tune_file) >= CONFIG_STR_MAX)) {
        log_error("%s: tune_file is NULL or longer than %d bytes", fn, CONFIG_STR_MAX - 1);
        return NULL;
    }
    *status_p = SYMCOLL_ERR_NO_MEMORY;
    comm = calloc(1, sizeof(*comm));
    if (!comm)
        return NULL;
    comm->config = parent->config;
    (void)comm_param_order(&comm->config, params, mask, fn); /* checked above */
    (void)comm_param_tune(&comm->config, params, mask, fn);
    comm->timeout_sec =
        mask & SYMCOLL_COMM_PARAM_FIELD_TIMEOUT ? params->timeout_sec : parent->timeout_sec;
    comm->cuda_device =
        mask & SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE ? params->cuda_device : parent->cuda_device;
    if (pthread_mutex_init(&comm->lock, NULL)) {
        free(comm);
        *status_p = SYMCOLL_ERR_SYSTEM;
        return NULL;
    }
    *status_p = SYMCOLL_OK;
    return comm;
}

/* Whether this rank's part may take its topology from the parent's facts: its CUDA
 * device is the parent's. The bootstrap call agrees on it (the AND over the part), so
 * that every rank of the part probes or none does. */
static bool comm_child_reuse(const comm_t *comm, const comm_t *parent)
{
    return comm->cuda_device == parent->cuda_device && parent->topo;
}

/* Once a child's bootstrap call returned status, under the parent's lock: the child's
 * place, and its topology from the parent's facts where the part agreed to (reuse;
 * members[r]: the parent rank of child rank r). */
static symcoll_status_t comm_child_place(comm_t *comm, const comm_t *parent,
                                         symcoll_status_t status, const int *members,
                                         bool reuse)
{
    if (status != SYMCOLL_OK || !comm->bootstrap)
        return status;
    comm->rank = bootstrap_rank(comm->bootstrap);
    comm->nranks = bootstrap_size(comm->bootstrap);
    /* the others skip the exchanges of facts: no probe instead */
    if (reuse && !topo_probe_part(comm, parent->topo, members, &comm->topo))
        return SYMCOLL_ERR_NO_MEMORY;
    return SYMCOLL_OK;
}

/* The rest of a child's creation (a NULL bootstrap with SYMCOLL_OK: this rank is in no
 * child). */
static symcoll_status_t comm_child_finish(comm_t *comm, symcoll_status_t status,
                                          symcoll_comm_h *newcomm_p)
{
    if (status != SYMCOLL_OK || !comm->bootstrap) {
        bootstrap_destroy(comm->bootstrap);
        pthread_mutex_destroy(&comm->lock);
        free(comm);
        return status;
    }
    return comm_setup(comm, newcomm_p);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_split(symcoll_comm_h parent, int color, int key,
                                                   const symcoll_comm_params_t *params,
                                                   symcoll_comm_h *newcomm_p)
{
    int *members = NULL, nmembers = 0;
    bool reuse = false;
    symcoll_status_t status;
    comm_t *comm;

    if (!newcomm_p || !api_comm_valid(parent))
        return SYMCOLL_ERR_INVALID_PARAM;
    *newcomm_p = NULL;
    if (color < 0 && color != SYMCOLL_SPLIT_NOCOLOR) {
        log_error("symcoll_comm_split: color %d: a color is >= 0 or SYMCOLL_SPLIT_NOCOLOR",
                  color);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    comm = comm_child_alloc("symcoll_comm_split", parent, params, &status);
    if (!comm)
        return status;
    /* the parent's bootstrap is one of its collectives: under its lock */
    pthread_mutex_lock(&parent->lock);
    status = parent->magic != COMM_MAGIC     ? SYMCOLL_ERR_INVALID_PARAM
             : atomic_load(&parent->aborted) ? SYMCOLL_ERR_ABORTED
                                             : bootstrap_failed(parent->bootstrap);
    if (status == SYMCOLL_OK)
        status = bootstrap_split(parent->bootstrap, color, color < 0 ? 0 : key,
                                 comm_child_reuse(comm, parent), comm->timeout_sec,
                                 &comm->aborted, &comm->bootstrap, &members, &nmembers, &reuse);
    status = comm_child_place(comm, parent, status, members, reuse);
    pthread_mutex_unlock(&parent->lock);
    free(members);
    return comm_child_finish(comm, status, newcomm_p);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_shrink(symcoll_comm_h parent,
                                                    const symcoll_comm_params_t *params,
                                                    symcoll_comm_h *newcomm_p)
{
    int *members = NULL, nmembers = 0;
    bool reuse = false;
    symcoll_status_t status;
    comm_t *comm;
    double t0 = time_now();

    if (!newcomm_p || !api_comm_valid(parent))
        return SYMCOLL_ERR_INVALID_PARAM;
    *newcomm_p = NULL;
    comm = comm_child_alloc("symcoll_comm_shrink", parent, params, &status);
    if (!comm)
        return status;
    /* the parent is done with: aborted, so that ranks still waiting in one of its calls
     * hear of it at once (the abort reaches them as a failure does, and its bootstrap's
     * connections close) and come to the agreement soon; it is then good for destroy
     * and further shrinks. The agreement uses only its listener, under its lock. */
    (void)symcoll_comm_abort(parent);
    pthread_mutex_lock(&parent->lock);
    if (parent->magic == COMM_MAGIC)
        algo_tell_aborted(parent, -1);
    status = parent->magic != COMM_MAGIC
                 ? SYMCOLL_ERR_INVALID_PARAM
                 : bootstrap_shrink(parent->bootstrap, comm_child_reuse(comm, parent),
                                    comm->timeout_sec, &comm->aborted, &comm->bootstrap,
                                    &members, &nmembers, &reuse);
    status = comm_child_place(comm, parent, status, members, reuse);
    pthread_mutex_unlock(&parent->lock);
    if (status == SYMCOLL_OK)
        log_info("shrink: %d of %d ranks agreed in %.3f s", nmembers, parent->nranks,
                 time_now() - t0);
    free(members);
    return comm_child_finish(comm, status, newcomm_p);
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_destroy(symcoll_comm_h comm)
{
    /* out of the registry first: an abort still working on comm ends before this
     * returns, a later one finds the handle invalid */
    if (!registry_take(comm))
        return SYMCOLL_ERR_INVALID_PARAM;
    pthread_mutex_lock(&comm->lock);
    comm->magic = 0;
    /* after a failed exchange the peers are out of step: UCX closes without waiting */
    if (bootstrap_failed(comm->bootstrap) != SYMCOLL_OK)
        ucx_mark_broken(comm->ucx);
    api_release_layers(comm);
    topo_destroy(comm->topo);
    bootstrap_destroy(comm->bootstrap);
    pthread_mutex_unlock(&comm->lock);
    pthread_mutex_destroy(&comm->lock);
    free(comm);
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_abort(symcoll_comm_h comm)
{
    /* registry_lock held throughout, so a destroy cannot free comm under it (see the
     * registry); the work is short: flags, and a broadcast under the channels' mutex */
    if (!comm)
        return SYMCOLL_ERR_INVALID_PARAM;
    pthread_mutex_lock(&registry_lock);
    if (registry_find(comm) == registry_len) {
        pthread_mutex_unlock(&registry_lock);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    atomic_store(&comm->aborted, 1);
#ifdef HAVE_CUDA
    cuda_abort_notify(comm); /* kernels poll a host-mapped word, not comm->aborted */
#endif
    algo_comm_abort(comm); /* what runs in the background tells the peers */
    pthread_mutex_unlock(&registry_lock);
    log_warn("communicator aborted");
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_rank(symcoll_comm_h comm, int *rank_p)
{
    if (!api_comm_valid(comm) || !rank_p)
        return SYMCOLL_ERR_INVALID_PARAM;
    *rank_p = comm->rank;
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_size(symcoll_comm_h comm, int *size_p)
{
    if (!api_comm_valid(comm) || !size_p)
        return SYMCOLL_ERR_INVALID_PARAM;
    *size_p = comm->nranks;
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_topology(symcoll_comm_h comm, FILE *stream)
{
    if (!api_comm_valid(comm) || !stream)
        return SYMCOLL_ERR_INVALID_PARAM;
    fprintf(stream, "# bootstrap: %s\n", bootstrap_describe(comm->bootstrap));
    topo_print(comm->topo, stream);
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_decisions(symcoll_comm_h comm, FILE *stream)
{
    if (!api_comm_valid(comm) || !stream)
        return SYMCOLL_ERR_INVALID_PARAM;
    /* the selector's settings change under the lock (symcoll_comm_set_algo) */
    pthread_mutex_lock(&comm->lock);
    topo_print_decisions(comm->topo, stream);
    pthread_mutex_unlock(&comm->lock);
    return SYMCOLL_OK;
}
