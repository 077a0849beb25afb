/* The configuration table: one row per SYMCOLL_* variable. symcoll_info -c prints it;
 * a test checks that every SYMCOLL_* name the sources read is a row here. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

typedef int (*config_parser_t)(const char *s, void *field);

typedef struct config_row {
    const char *name;
    const char *dflt;
    const char *doc;
    config_parser_t parse;
    size_t offset;
    const char *former; /* the variable's earlier name, still read when name is unset */
} config_row_t;

static int parse_log_level(const char *s, void *field)
{
    static const char *const names[] = {"none", "error", "warn", "info", "debug"};
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(s, names[i])) {
            *(int *)field = i;
            return 0;
        }
    }
    return -1;
}

int config_parse_long(const char *s, long *out)
{
    char *end;
    long v;

    if (!*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int config_parse_double(const char *s, double *out)
{
    char *end;
    double v;

    if (!*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* seconds, with an optional unit: 1.5, 1.5s, 200ms, 50us, 2m */
int config_parse_time(const char *s, double *out)
{
    char *end;
    double v, mult = 1.0;

    if (!*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        mult = 1.0;
    else if (!strcmp(end, "ms"))
        mult = 1e-3;
    else if (!strcmp(end, "us"))
        mult = 1e-6;
    else if (!strcmp(end, "m"))
        mult = 60.0;
    else
        return -1;
    if (!isfinite(v * mult)) /* 1e308m */
        return -1;
    *out = v * mult;
    return 0;
}

/* bytes, with an optional binary suffix: 4096, 64K, 2M, 64G, 1T (b/B/iB accepted) */
int config_parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (!*s || *s == '-' || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end)
        return -1;
    if (shift && v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_size_field(const char *s, void *f)
{
    return config_parse_size(s, f);
}

static int parse_time_field(const char *s, void *f)
{
    double v;
    if (config_parse_time(s, &v) || !config_timeout_ok(v))
        return -1;
    *(double *)f = v;
    return 0;
}

static int parse_growth_field(const char *s, void *f)
{
    double v;
    if (config_parse_double(s, &v) || v < 1.0 || v > 64.0)
        return -1;
    *(double *)f = v;
    return 0;
}

/* -1 means "not set" */
static int parse_rank_field(const char *s, void *f)
{
    long v;
    if (!*s) {
        *(long *)f = -1;
        return 0;
    }
    if (config_parse_long(s, &v) || v < 0 || v > INT_MAX)
        return -1;
    *(long *)f = v;
    return 0;
}

static int parse_nonneg_long_field(const char *s, void *f)
{
    long v;
    if (config_parse_long(s, &v) || v < 0 || v > INT_MAX)
        return -1;
    *(long *)f = v;
    return 0;
}

static int parse_string_field(const char *s, void *f)
{
    if (strlen(s) >= CONFIG_STR_MAX)
        return -1;
    strcpy((char *)f, s);
    return 0;
}

/* An enumerated setting: the index of s in names (case-insensitive) into an int. */
static int parse_enum(const char *s, void *f, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (!strcasecmp(s, names[i])) {
            *(int *)f = i;
            return 0;
        }
    }
    return -1;
}

#define PARSE_ENUM_FIELD(_fn, ...)                                                             \
    static int _fn(const char *s, void *f)                                                     \
    {                                                                                          \
        static const char *const names[] = {__VA_ARGS__};                                      \
        return parse_enum(s, f, names, (int)(sizeof(names) / sizeof(names[0])));               \
    }

/* in the order of the CONFIG_* enumerators */
PARSE_ENUM_FIELD(parse_net_protocol_field, "auto", "put", "am")
PARSE_ENUM_FIELD(parse_cuda_net_path_field, "auto", "direct", "staged")
PARSE_ENUM_FIELD(parse_cuda_coll_field, "allreduce", "auto")
PARSE_ENUM_FIELD(parse_order_field, "canonical", "fastest", "auto")
PARSE_ENUM_FIELD(parse_tune_mismatch_field, "fail", "ignore")

static int parse_reduce_isa_field(const char *s, void *f)
{
    if (strcmp(s, "best") && strcmp(s, "avx2") && strcmp(s, "generic"))
        return -1;
    return parse_string_field(s, f);
}

static int parse_algo_field(const char *s, void *f)
{
    static const char *const names[] = {"auto", "oneshot", "twoshot", "ring",
                                        "rd",   "hier",    "rhd"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcasecmp(s, names[i]))
            return parse_string_field(names[i], f);
    return -1;
}

#define ROW(_name, _dflt, _doc, _parse, _field)                                                \
    {                                                                                          \
        _name, _dflt, _doc, _parse, offsetof(config_t, _field), NULL                           \
    }
/* a row whose variable had another name in earlier releases */
#define ROW_FORMER(_name, _former, _dflt, _doc, _parse, _field)                                \
    {                                                                                          \
        _name, _dflt, _doc, _parse, offsetof(config_t, _field), _former                        \
    }

static const config_row_t config_table[] = {
    ROW("SYMCOLL_LOG_LEVEL", "warn", "Log level: none, error, warn, info or debug.",
        parse_log_level, log_level),
    ROW("SYMCOLL_TIMEOUT", "120",
        "Deadline of every wait, in seconds (units s, ms, us, m): more than 0, at most "
        "30 days (2592000 s, 43200m).",
        parse_time_field, timeout_sec),
    ROW("SYMCOLL_RANK", "",
        "Rank of this process for the built-in bootstrap "
        "(else OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID).",
        parse_rank_field, rank),
    ROW("SYMCOLL_NRANKS", "",
        "Number of ranks for the built-in bootstrap "
        "(else OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS).",
        parse_rank_field, nranks),
    ROW("SYMCOLL_ADDR", "", "host:port where rank 0 of the built-in TCP bootstrap listens.",
        parse_string_field, addr),
    ROW("SYMCOLL_COOKIE", "",
        "Secret of the built-in TCP bootstrap, 1 to 64 hex digits, the same on every "
        "rank (symcoll_run sets a random one); ranks prove they know it without sending "
        "it. Unset: ranks are not authenticated (a warning says so).",
        parse_string_field, cookie),
    ROW("SYMCOLL_LISTEN_FD", "",
        "Built-in TCP bootstrap, rank 0: an inherited descriptor already listening on "
        "SYMCOLL_ADDR's port (symcoll_run sets it, so no other process can take the port "
        "first); taken by the process's first communicator, ignored if it does not listen "
        "on that port.",
        parse_rank_field, listen_fd),
    ROW("SYMCOLL_HOST_ID", "",
        "Host identity override; ranks with the same value form one "
        "node (default: hostname and boot id). Used to simulate several nodes.",
        parse_string_field, host_id),
    ROW("SYMCOLL_RENDEZVOUS_LEADERS", "1",
        "Built-in TCP bootstrap: 1, the ranks of a host (of a SYMCOLL_HOST_ID) pick one "
        "that talks to rank 0 for all of them, so rank 0 serves a connection per host; "
        "0, every rank connects to rank 0 itself.",
        parse_nonneg_long_field, rendezvous_leaders),
    ROW("SYMCOLL_POOL_MIN_SIZE", "4M", "Smallest pool segment, bytes (suffixes K, M, G).",
        parse_size_field, pool_min_size),
    ROW("SYMCOLL_POOL_MAX_SIZE", "64G", "Virtual range reserved per pool: the pool's ceiling.",
        parse_size_field, pool_max_size),
    ROW("SYMCOLL_POOL_GROWTH", "2.0",
        "Growth factor of the pool: a new segment is at least "
        "this times the mapped size.",
        parse_growth_field, pool_growth),
    ROW("SYMCOLL_ALGO", "auto",
        "Force an all-reduce algorithm: auto, oneshot, twoshot, ring, "
        "rd (recursive doubling), hier or rhd (recursive halving and doubling).",
        parse_algo_field, algo),
    ROW("SYMCOLL_REDUCTION_ORDER", "auto",
        "Float sums, products and averages (all-reduce, reduce-scatter) on host memory: "
        "canonical (every element is one fixed pairwise tree of the ranks' values, "
        "float16/bfloat16 accumulated in float32 and rounded once: the same bits at any "
        "size, algorithm and node layout; across nodes recursive doubling, and recursive "
        "halving and doubling instead of the ring, hier only where its node-by-node order "
        "is that tree; float16/bfloat16 of 3 ranks or more across nodes move float32 "
        "partial sums, twice the bytes), auto (canonical where it costs nothing: the same, "
        "but float16/bfloat16 across nodes move their partial sums in their own type, "
        "rounded at each step: the same bits at any size and for rd and rhd, not across "
        "layouts) or fastest (the fastest algorithm, whose order may change with the size "
        "and the layout). CUDA memory keeps the same order (canonical and auto).",
        parse_order_field, reduction_order),
    ROW("SYMCOLL_TUNE_FILE", "",
        "Tuning file written by symcoll_tune (at most 255 bytes of path): where its "
        "fingerprint matches the communicator's layout, its measured algorithms choose "
        "below SYMCOLL_ALGO; elsewhere the built-in rules. Every rank must name the same "
        "contents (see SYMCOLL_TUNE_MISMATCH); a damaged file fails creation.",
        parse_string_field, tune_file),
    ROW("SYMCOLL_TUNE_MISMATCH", "fail",
        "Ranks whose tuning files differ (or some with none): fail (creation fails on "
        "every rank, naming the ranks) or ignore (every rank ignores its file, with a "
        "warning).",
        parse_tune_mismatch_field, tune_mismatch),
    ROW("SYMCOLL_HOST_ONESHOT_MAX", "32K",
        "Host memory inside a node: largest message, bytes, "
        "reduced one-shot; larger ones go two-shot. For 2 ranks; n ranks use 1/(n-1)^2 of "
        "it (1/(n-1) when a node has more ranks than CPUs).",
        parse_size_field, host_oneshot_max),
    ROW("SYMCOLL_HOST_CHUNK_SIZE", "256K",
        "Host memory: pipeline chunk of the two-shot "
        "algorithm, bytes.",
        parse_size_field, host_chunk_size),
    ROW("SYMCOLL_CUDA_ONESHOT_MAX", "2M",
        "CUDA memory inside a node: largest message, bytes, "
        "reduced one-shot. For 2 GPUs; n GPUs use n/(2(n-1)^2) of it.",
        parse_size_field, cuda_oneshot_max),
    ROW("SYMCOLL_CUDA_PCIE_ONESHOT_MAX", "64K",
        "CUDA memory, GPUs linked by PCIe only: largest "
        "message, bytes, reduced one-shot (2 GPUs; scaled like SYMCOLL_CUDA_ONESHOT_MAX).",
        parse_size_field, cuda_pcie_oneshot_max),
    ROW("SYMCOLL_CUDA_NBLOCKS", "0", "CUDA kernels: thread blocks per launch (0: automatic).",
        parse_nonneg_long_field, cuda_nblocks),
    ROW("SYMCOLL_CUDA_LL_MAX", "64K",
        "CUDA memory inside a node: largest one-shot message, "
        "bytes, sent with its flags inside the data (no barrier; twice the bytes on the link).",
        parse_size_field, cuda_ll_max),
    ROW("SYMCOLL_CUDA_COLL", "allreduce",
        "CUDA memory inside a node: how reduce-scatter, all-gather and broadcast run: "
        "allreduce (as one all-reduce, with the copies around it on the stream) or auto "
        "(their own one-shot and two-shot kernels, where the all-reduce's serve). "
        "The kernels of auto ran correctly on one H200 (ranks sharing it) but are not yet "
        "measured against allreduce on separate GPUs, so allreduce is the default.",
        parse_cuda_coll_field, cuda_coll),
    ROW("SYMCOLL_NET_RD_MAX", "32K",
        "Across nodes: largest message, bytes, reduced by "
        "recursive doubling; larger ones use the ring, or recursive halving and doubling "
        "in the canonical order (2 ranks: 16 times this).",
        parse_size_field, net_rd_max),
    ROW("SYMCOLL_HIER_MIN", "0",
        "Several ranks on each of several nodes: smallest message, "
        "bytes, reduced hierarchically (below it: rd or ring over all ranks). CUDA "
        "memory: hierarchical over each node's GPUs from this size of the message (not "
        "below 16M where a GPU serves two ranks); host staging chunks compare too.",
        parse_size_field, hier_min),
    ROW("SYMCOLL_NET_CHUNK_SIZE", "1M", "Across nodes: pipeline chunk of the ring, bytes.",
        parse_size_field, net_chunk_size),
    ROW("SYMCOLL_NET_PROTOCOL", "auto",
        "Across nodes: how data moves over UCX: put (put, fence, "
        "flag put), am (one active message per transfer) or auto (put where every "
        "endpoint to another node has a lane doing RMA into host memory itself; am where "
        "UCX would emulate it, as on TCP, also with cuda_ipc or cuda_copy beside it).",
        parse_net_protocol_field, net_protocol),
    ROW("SYMCOLL_CUDA_NET_CHUNK", "1M",
        "CUDA memory across nodes, staged through pinned host memory: largest pipeline "
        "chunk, bytes (copied to the host, reduced across nodes, copied back while other "
        "chunks move; a message is spread over the channels in chunks of at least 64K); "
        "2 x channels + 1 chunks of pinned host staging per rank.",
        parse_size_field, cuda_net_chunk),
    ROW("SYMCOLL_CUDA_NET_KERNEL_MAX", "64K",
        "CUDA memory across nodes: largest message, bytes, whose staging copies and "
        "hand-offs run as one kernel (fewer stream commands, lower latency) instead of "
        "copies and stream memory operations; never where a GPU serves two ranks of the "
        "communicator; "
        "0: never.",
        parse_size_field, cuda_net_kernel_max),
    ROW_FORMER(
        "SYMCOLL_CUDA_NET_CHANNELS", "SYMCOLL_CUDA_NET_LANES", "8",
        "CUDA memory across nodes: chunks in flight across the nodes at once, each on its "
        "own channel (a thread with its own UCX worker and connections), 1 to 15 "
        "(formerly SYMCOLL_CUDA_NET_LANES, still read when this one is unset).",
        parse_nonneg_long_field, cuda_net_channels),
    ROW("SYMCOLL_CUDA_NET_PATH", "staged",
        "CUDA memory across nodes: staged (through pinned host memory by the channels), direct "
        "(UCX puts each rank's data straight into the peers' CUDA pool with rkeys, the GPU "
        "reduces; needs a UCX with CUDA support that registers the pool, one rank a node "
        "or the hierarchical algorithm's inter-node step (that one only when forced), and a "
        "probe put per peer that landed when the CUDA pool was created), or auto "
        "(direct from SYMCOLL_CUDA_NET_DIRECT_MIN bytes where available and UCX's lanes do "
        "not call the CUDA driver, i.e. not cuda_ipc or cuda_copy, else staged). Forced "
        "direct over cuda_ipc or cuda_copy: synchronise the stream before a blocking CUDA "
        "call (README). Staged is the default: direct is unmeasured on GPUDirect RDMA.",
        parse_cuda_net_path_field, cuda_net_path),
    ROW("SYMCOLL_CUDA_NET_DIRECT_MIN", "0",
        "CUDA memory across nodes: smallest message, bytes, that auto sends on the direct "
        "path.",
        parse_size_field, cuda_net_direct_min),
    ROW("SYMCOLL_REDUCE_ISA", "best",
        "Host reductions of float16 and bfloat16: best (AVX-512 or AVX2 with F16C loops where "
        "the CPU has them), "
        "avx2 (at most AVX2) or generic (the compiler's loops); the same bits either way. "
        "Read once per process.",
        parse_reduce_isa_field, reduce_isa),
    ROW("SYMCOLL_NET_TCP_SEG_SIZE", "256K",
        "Across nodes: segment size symcoll gives UCX's TCP "
        "transport (TCP_TX_SEG_SIZE and TCP_RX_SEG_SIZE); messages up to it move without "
        "reassembly. 0: keep UCX's own setting (UCX_TCP_*_SEG_SIZE).",
        parse_size_field, net_tcp_seg_size),
};

#define CONFIG_NROWS (sizeof(config_table) / sizeof(config_table[0]))

size_t config_num_vars(void)
{
    return CONFIG_NROWS;
}

const char *config_var_name(size_t i)
{
    return i < CONFIG_NROWS ? config_table[i].name : NULL;
}

/* The row's value from the environment (NULL: unset), under its name or, where that is
 * unset, its former one; *name_p: the variable it came from. */
static const char *config_getenv(const config_row_t *row, const char **name_p)
{
    const char *val = getenv(row->name);
    *name_p = row->name;
    if (!val && row->former && (val = getenv(row->former)))
        *name_p = row->former;
    return val;
}

symcoll_status_t config_read(config_t *cfg)
{
    for (size_t i = 0; i < CONFIG_NROWS; i++) {
        const config_row_t *row = &config_table[i];
        const char *name;
        const char *val = config_getenv(row, &name);
        if (val && name == row->former)
            log_warn("%s is the former name of %s: read as such", row->former, row->name);
        if (row->parse(row->dflt, (char *)cfg + row->offset)) {
            log_error("internal: default of %s does not parse", row->name);
            return SYMCOLL_ERR_INTERNAL;
        }
        if (val && row->parse(val, (char *)cfg + row->offset)) {
            log_error("invalid value '%s' for %s (%s)", val, name, row->doc);
            return SYMCOLL_ERR_INVALID_PARAM;
        }
    }
    if (cfg->pool_min_size > cfg->pool_max_size) {
        log_error("SYMCOLL_POOL_MIN_SIZE (%zu) is larger than SYMCOLL_POOL_MAX_SIZE (%zu)",
                  cfg->pool_min_size, cfg->pool_max_size);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (cfg->host_chunk_size < 4096 || cfg->net_chunk_size < 4096 ||
        cfg->cuda_net_chunk < 4096) {
        log_error("SYMCOLL_HOST_CHUNK_SIZE, SYMCOLL_NET_CHUNK_SIZE and SYMCOLL_CUDA_NET_CHUNK "
                  "must be at least 4K");
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (cfg->cuda_net_channels < 1 || cfg->cuda_net_channels > 15) {
        log_error("SYMCOLL_CUDA_NET_CHANNELS must be 1 to 15, not %ld", cfg->cuda_net_channels);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_config_print(FILE *stream, unsigned flags)
{
    config_t scratch;
    symcoll_status_t status = SYMCOLL_OK;

    if (!stream || (flags & ~(unsigned)SYMCOLL_CONFIG_PRINT_DOC))
        return SYMCOLL_ERR_INVALID_PARAM;
    for (size_t i = 0; i < CONFIG_NROWS; i++) {
        const config_row_t *row = &config_table[i];
        const char *name;
        const char *val = config_getenv(row, &name);
        const char *mark = "";
        if (val && row->parse(val, (char *)&scratch + row->offset)) {
            mark = "  <-- INVALID";
            status = SYMCOLL_ERR_INVALID_PARAM;
        }
        if (flags & SYMCOLL_CONFIG_PRINT_DOC)
            fprintf(stream, "#\n# %s\n#\n", row->doc);
        fprintf(stream, "%s=%s", row->name, val ? val : row->dflt);
        fprintf(stream, "    (default: %s%s%s%s)%s\n", *row->dflt ? row->dflt : "<unset>",
                val ? ", from environment" : "", val && name == row->former ? " as " : "",
                val && name == row->former ? name : "", mark);
    }
    return status;
}
