/* symcoll_info: prints the library's version and build configuration, and its
 * configuration table (every SYMCOLL_* variable with default, current value and doc);
 * as text or, with --json, as one JSON object. */
#define _GNU_SOURCE /* memmem */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ucp/api/ucp.h>

#include "info.h"
#include "symcoll.h"

#define INFO_EXIT_USAGE 2

/* One action per option letter; they run in the order of this table. */
typedef struct info_action {
    int opt;
    const char *longname;
    const char *help;
    int (*run)(void);
} info_action_t;

static const char *prog = "symcoll_info";

static int launched(void);
static symcoll_comm_h get_comm(int *rank_p);

/* Which bootstrap connected the ranks: the line symcoll_comm_print_topology starts with.
 * Started by a launcher, every rank creates the communicator and rank 0 prints it. */
static int show_bootstrap(void)
{
    char *text = NULL, *line;
    size_t len = 0;
    int rank = 0;
    symcoll_comm_h comm;
    FILE *f;

    if (!launched()) {
        const char *none = "none (not started by a launcher: mpirun, srun --mpi=pmix or "
                           "symcoll_run)";
        if (info_json) {
            json_member("bootstrap");
            json_str(none);
        } else {
            printf("# bootstrap: %s\n", none);
        }
        return 0;
    }
    comm = get_comm(&rank);
    if (!comm)
        return 1;
    if (rank != 0)
        return 0;
    f = open_memstream(&text, &len);
    if (!f || symcoll_comm_print_topology(comm, f) != SYMCOLL_OK) {
        if (f)
            fclose(f);
        free(text);
        return 1;
    }
    fclose(f);
    line = strstr(text, "# bootstrap: ");
    if (line && info_json) {
        line += strlen("# bootstrap: ");
        json_member("bootstrap");
        json_string(line, strcspn(line, "\n"));
    } else if (line) {
        printf("%.*s\n", (int)strcspn(line, "\n"), line);
    }
    free(text);
    return line ? 0 : 1;
}

static int show_version(void)
{
    unsigned major, minor, patch;

    symcoll_get_version(&major, &minor, &patch);
    if (info_json) {
        json_member("version");
        json_str(symcoll_version_string());
        json_member("library");
        printf("{\"major\": %u, \"minor\": %u, \"patch\": %u}", major, minor, patch);
        json_member("api");
        printf("{\"major\": %d, \"minor\": %d}", SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR);
        json_member("build");
        json_str(symcoll_build_info());
    } else {
        printf("# symcoll version %s (library %u.%u.%u, header API %d.%d)\n",
               symcoll_version_string(), major, minor, patch, SYMCOLL_API_MAJOR,
               SYMCOLL_API_MINOR);
        printf("# build: %s\n", symcoll_build_info());
    }
    show_cuda();
    show_ucx();
    return show_bootstrap();
}

/* A report printed by the library, captured as text (NULL if memory ran out). */
static char *capture(symcoll_status_t (*print)(void *, FILE *), void *arg, symcoll_status_t *st)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f) {
        *st = SYMCOLL_ERR_NO_MEMORY;
        return NULL;
    }
    *st = print(arg, f);
    fclose(f);
    return text;
}

static symcoll_status_t print_config(void *arg, FILE *f)
{
    (void)arg;
    return symcoll_config_print(f, SYMCOLL_CONFIG_PRINT_DOC);
}

/* The configuration table as JSON: each "NAME=VALUE    (default: D[, from environment])
 * [<-- INVALID]" line with the "# " lines of documentation before it. */
static void json_config(const char *text)
{
    char doc[1024] = "";
    int n = 0;

    json_member("config");
    printf("[");
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *eq = memchr(line, '=', len), *def = NULL, *close;

        if (line[0] == '#') {
            if (len > 2 && strlen(doc) + len < sizeof(doc) - 2) {
                if (doc[0])
                    strcat(doc, " ");
                strncat(doc, line + 2, len - 2);
            }
        } else if (eq) {
            const char *val_end = eq;
            while (val_end < line + len && *val_end != ' ')
                val_end++;
            def = strstr(line, "(default: ");
            printf("%s\n    {\"name\": ", n++ ? "," : "");
            json_string(line, (size_t)(eq - line));
            printf(", \"value\": ");
            json_string(eq + 1, (size_t)(val_end - eq - 1));
            printf(", \"default\": ");
            if (def && def < line + len) {
                def += strlen("(default: ");
                for (close = def; close < line + len && *close != ',' && *close != ')';)
                    close++;
                json_string(def, (size_t)(close - def));
            } else {
                printf("null");
            }
            printf(", \"from_environment\": %s, \"invalid\": %s, \"doc\": ",
                   memmem(line, len, "from environment", 16) ? "true" : "false",
                   memmem(line, len, "INVALID", 7) ? "true" : "false");
            json_str(doc);
            printf("}");
            doc[0] = '\0';
        }
        line = end ? end + 1 : NULL;
    }
    printf("\n  ]");
}

static int show_config(void)
{
    symcoll_status_t st = SYMCOLL_OK;

    if (info_json) {
        char *text = capture(print_config, NULL, &st);
        json_config(text ? text : "");
        free(text);
    } else {
        st = symcoll_config_print(stdout, SYMCOLL_CONFIG_PRINT_DOC);
    }
    if (st != SYMCOLL_OK) {
        fflush(stdout);
        fprintf(stderr, "%s: the environment holds an invalid value (marked INVALID): %s\n",
                prog, symcoll_status_string(st));
        return 1;
    }
    return 0;
}

/* -t and -a share one communicator: under symcoll_run (or mpirun, srun) it spans every
 * rank; started alone, it is a communicator of this one process. */
static symcoll_comm_h info_comm;

static int self_allgather(const void *src, void *dst, size_t size, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, size);
    return 0;
}

static void info_comm_release(void)
{
    if (info_comm)
        symcoll_comm_destroy(info_comm);
    info_comm = NULL;
}

static int launched(void)
{
    static const char *const vars[] = {"SYMCOLL_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                                       "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

/* This process's rank as the launcher says it; -1 when started alone. */
static int launched_rank(void)
{
    static const char *const vars[] = {"SYMCOLL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v)
            return atoi(v);
    }
    return -1;
}

/* The communicator, or NULL after printing why; rank_p says who prints. */
static symcoll_comm_h get_comm(int *rank_p)
{
    symcoll_status_t st;

    if (!info_comm) {
        symcoll_comm_params_t params = {0};
        if (!launched()) {
            params.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK |
                                SYMCOLL_COMM_PARAM_FIELD_NRANKS |
                                SYMCOLL_COMM_PARAM_FIELD_ALLGATHER;
            params.rank = 0;
            params.nranks = 1;
            params.allgather = self_allgather;
        }
        st = symcoll_comm_create(&params, &info_comm);
        if (st != SYMCOLL_OK) {
            fflush(stdout);
            fprintf(stderr, "%s: cannot create a communicator: %s\n", prog,
                    symcoll_status_string(st));
            info_comm = NULL;
            return NULL;
        }
        atexit(info_comm_release);
    }
    symcoll_comm_rank(info_comm, rank_p);
    return info_comm;
}

static symcoll_status_t print_topology(void *comm, FILE *f)
{
    return symcoll_comm_print_topology(comm, f);
}

static symcoll_status_t print_decisions(void *comm, FILE *f)
{
    return symcoll_comm_print_decisions(comm, f);
}

/* ---- the other collectives' paths ---------------------------------------------------
 * The library's decision report has a row per collective, memory type and plan size
 * (topo_select_coll_plan, the selector every call asks): "COLL MEM BYTES HUMAN PATH
 * FAMILY FROM WORDS...". -a groups the sizes that share one path and source (built-in,
 * tuned, forced, call) into ranges. */
#define COLL_ROWS_MAX 512

typedef struct dec_row {
    char coll[16];
    char mem[16];
    size_t bytes;
    char from[16];
    char words[128];
} dec_row_t;

static int is_coll_name(const char *s)
{
    return !strcmp(s, "reduce-scatter") || !strcmp(s, "all-gather") ||
           !strcmp(s, "broadcast") || !strcmp(s, "barrier");
}

static int parse_decisions(const char *text, dec_row_t *rows)
{
    int n = 0;

    for (const char *line = text; line && *line && n < COLL_ROWS_MAX;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char human[16], brief[32], family[32];
        dec_row_t *r = &rows[n];
        int off = 0;
        if (line[0] != '#' &&
            sscanf(line, "%15s %15s %zu %15s %31s %31s %15s %n", r->coll, r->mem, &r->bytes,
                   human, brief, family, r->from, &off) == 7 &&
            is_coll_name(r->coll) && off > 0 && (size_t)off < len) {
            snprintf(r->words, sizeof(r->words), "%.*s", (int)(len - (size_t)off), line + off);
            n++;
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* For each collective and memory type, the ranges of sizes that share one path. */
static void print_collectives(const dec_row_t *rows, int n)
{
    int k = 0;

    if (info_json)
        printf(", \"collectives\": [");
    else
        printf(
            "#\n# the other collectives, by ranges of plan sizes (the larger buffer; "
            "1 byte for barrier); from: built-in rules, tuned (SYMCOLL_TUNE_FILE), forced "
            "(SYMCOLL_ALGO), call (symcoll_comm_set_algo):\n# %-14s %-4s %12s %12s  %-8s  %s\n",
            "collective", "mem", "from bytes", "to bytes", "from", "path");
    for (int i = 0; i < n;) {
        const int barrier = !strcmp(rows[i].coll, "barrier");
        int j = i;
        while (j + 1 < n && !strcmp(rows[j + 1].coll, rows[i].coll) &&
               !strcmp(rows[j + 1].mem, rows[i].mem) &&
               !strcmp(rows[j + 1].from, rows[i].from) &&
               !strcmp(rows[j + 1].words, rows[i].words))
            j++;
        if (info_json)
            printf("%s\n    {\"coll\": \"%s\", \"mem\": \"%s\", \"from\": %zu, "
                   "\"to\": %zu, \"source\": \"%s\", \"path\": \"%s\"}",
                   k++ ? "," : "", rows[i].coll, rows[i].mem, barrier ? 0 : rows[i].bytes,
                   barrier ? 0 : rows[j].bytes, rows[i].from, rows[i].words);
        else if (barrier)
            printf("  %-14s %-4s %12s %12s  %-8s  %s\n", rows[i].coll, rows[i].mem, "-", "-",
                   rows[i].from, rows[i].words);
        else
            printf("  %-14s %-4s %12zu %12zu  %-8s  %s\n", rows[i].coll, rows[i].mem,
                   rows[i].bytes, rows[j].bytes, rows[i].from, rows[i].words);
        i = j + 1;
    }
    if (info_json)
        printf("\n  ]");
}

/* The decision table as JSON: rows "MEM BYTES HUMAN ALGO FAMILY ORDER REASON..."; the '#'
 * lines (settings, selector views) in "notes". */
static void json_decisions(const char *text)
{
    int n = 0, k = 0;

    printf("{\"rows\": [");
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char mem[16], human[16], algo[32], family[32], order[32], from[16];
        size_t bytes;
        int off = 0;

        if (line[0] != '#' &&
            sscanf(line, "%15s %zu %15s %31s %31s %31s %15s %n", mem, &bytes, human, algo,
                   family, order, from, &off) == 7 &&
            off > 0 && (size_t)off <= len) {
            printf("%s\n    {\"mem\": \"%s\", \"bytes\": %zu, \"algo\": \"%s\", "
                   "\"family\": \"%s\", \"order\": \"%s\", \"source\": \"%s\", "
                   "\"reason\": ",
                   n++ ? "," : "", mem, bytes, algo, family, order, from);
            json_string(line + off, len - (size_t)off);
            printf("}");
        }
        line = end ? end + 1 : NULL;
    }
    printf("\n  ], \"notes\": [");
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (line[0] == '#' && len > 2) {
            printf("%s\n    ", k++ ? "," : "");
            json_string(line + 2, len - 2);
        }
        line = end ? end + 1 : NULL;
    }
    printf("\n  ]");
    {
        dec_row_t *rows = calloc(COLL_ROWS_MAX, sizeof(*rows));
        if (rows)
            print_collectives(rows, parse_decisions(text, rows));
        free(rows);
    }
    printf("}");
}

/* Every rank holds its node's facts and the node map; rank 0 prints them. */
/* With CUDA here, the CUDA pool is created (every rank: collective) before a report, so
 * that the report shows what its creation decides: across nodes, the probe of the direct
 * path (puts into the peers' CUDA pool) and its result per peer. */
static void touch_cuda_pool(symcoll_comm_h comm)
{
    static int done;
    void *buf = NULL;
    symcoll_status_t st;

    if (done || !launched())
        return;
    done = 1;
    if (!info_cuda_usable())
        return;
    st = symcoll_mem_alloc(comm, 256, SYMCOLL_MEM_CUDA, &buf);
    if (st == SYMCOLL_OK)
        symcoll_mem_free(comm, buf);
    else
        fprintf(stderr, "%s: no CUDA pool memory (%s): the report shows no CUDA pool\n", prog,
                symcoll_status_string(st));
}

static int show_topo_report(const char *name, symcoll_status_t (*print)(void *, FILE *))
{
    int rank = 0;
    symcoll_comm_h comm = get_comm(&rank);
    symcoll_status_t st;
    char *text;

    if (!comm)
        return 1;
    touch_cuda_pool(comm);
    if (rank != 0)
        return 0;
    if (!info_json && print != print_decisions)
        return print(comm, stdout) != SYMCOLL_OK;
    text = capture(print, comm, &st);
    if (!info_json) {
        dec_row_t *rows = calloc(COLL_ROWS_MAX, sizeof(*rows));
        if (st == SYMCOLL_OK && text && rows) {
            /* the all-reduce's rows as they are, the others' grouped into ranges */
            for (const char *line = text; *line;) {
                const char *end = strchr(line, '\n');
                size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
                char first[16];
                if (line[0] == '#' || sscanf(line, "%15s", first) != 1 || !is_coll_name(first))
                    fwrite(line, 1, len, stdout);
                line += len;
            }
            print_collectives(rows, parse_decisions(text, rows));
        }
        free(rows);
        free(text);
        return st != SYMCOLL_OK || !text;
    }
    if (st == SYMCOLL_OK && text) {
        json_member(name);
        if (print == print_decisions)
            json_decisions(text);
        else
            json_str(text); /* the topology report is a table for people */
    }
    free(text);
    return st != SYMCOLL_OK || !text;
}

static int show_topology(void)
{
    return show_topo_report("topology", print_topology);
}

static int show_algorithms(void)
{
    return show_topo_report("algorithms", print_decisions);
}

static const info_action_t actions[] = {
    {'v', "version",
     "print the version, build configuration and bootstrap in use (the default)", show_version},
    {'c', "config", "print every SYMCOLL_* variable: default, current value, documentation",
     show_config},
    {'t', "topology", "probe and print this machine's topology (nodes, GPUs, links)",
     show_topology},
    {'a', "algorithms",
     "print the all-reduce decision table (algorithm per size) and the path of\n"
     "                      every other collective",
     show_algorithms},
};

#define NACTIONS (sizeof(actions) / sizeof(actions[0]))

static void usage(FILE *out)
{
    fprintf(out, "Usage: %s [OPTIONS]\n\nPrint information about the symcoll library.\n\n",
            prog);
    for (size_t i = 0; i < NACTIONS; i++)
        fprintf(out, "  -%c, --%-12s %s\n", actions[i].opt, actions[i].longname,
                actions[i].help);
    fprintf(out, "  -j, --%-12s %s\n", "json",
            "print the reports as one JSON object (version, library, api, build,\n"
            "                      cuda, ucx, config, algorithms, topology)");
    fprintf(out, "  -h, --%-12s %s\n", "help", "print this help");
    fprintf(out, "\nWith several options, each report is printed in the order above; the exit\n"
                 "status is the first non-zero status of a report. The CUDA line says whether\n"
                 "the library was built with CUDA and whether the driver here can run it;\n"
                 "the UCX lines name the UCX built against, the one loaded, and whether\n"
                 "its context reports CUDA memory.\n");
}

int main(int argc, char **argv)
{
    struct option longopts[NACTIONS + 3];
    char shortopts[2 * NACTIONS + 3];
    int wanted[NACTIONS] = {0};
    int c, any = 0, ret = 0;
    size_t k = 0;

    for (size_t i = 0; i < NACTIONS; i++) {
        longopts[i] = (struct option){actions[i].longname, no_argument, NULL, actions[i].opt};
        shortopts[k++] = (char)actions[i].opt;
    }
    longopts[NACTIONS] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[NACTIONS + 1] = (struct option){"json", no_argument, NULL, 'j'};
    longopts[NACTIONS + 2] = (struct option){NULL, 0, NULL, 0};
    shortopts[k++] = 'h';
    shortopts[k++] = 'j';
    shortopts[k] = '\0';

    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        size_t i;
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == 'j') {
            info_json = 1;
            continue;
        }
        for (i = 0; i < NACTIONS && actions[i].opt != c; i++)
            ;
        if (i == NACTIONS) {
            usage(stderr);
            return INFO_EXIT_USAGE;
        }
        wanted[i] = 1;
        any = 1;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
        usage(stderr);
        return INFO_EXIT_USAGE;
    }
    if (!any)
        wanted[0] = 1;

    /* one document: under a launcher only rank 0 prints it (every rank still joins the
     * communicator of -t and -a) */
    if (info_json && launched_rank() > 0 && !freopen("/dev/null", "w", stdout)) {
        perror(prog);
        return 1;
    }
    if (info_json)
        printf("{");
    for (size_t i = 0; i < NACTIONS; i++) {
        if (wanted[i]) {
            int r = actions[i].run();
            if (r && !ret)
                ret = r;
        }
    }
    if (info_json)
        printf("\n}\n");
    if (fflush(stdout)) {
        perror(prog);
        return 1;
    }
    return ret;
}
