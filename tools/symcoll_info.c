/* symcoll_info: prints the library's version and build configuration, and its
 * configuration table (every SYMCOLL_* variable with default, current value and doc). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        printf("# bootstrap: none (not started by a launcher: mpirun, srun --mpi=pmix or "
               "symcoll_run)\n");
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
    if (line)
        printf("%.*s\n", (int)strcspn(line, "\n"), line);
    free(text);
    return line ? 0 : 1;
}

static int show_version(void)
{
    unsigned major, minor, patch;

    symcoll_get_version(&major, &minor, &patch);
    printf("# symcoll version %s (library %u.%u.%u, header API %d.%d)\n",
           symcoll_version_string(), major, minor, patch, SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR);
    printf("# build: %s\n", symcoll_build_info());
    return show_bootstrap();
}

static int show_config(void)
{
    symcoll_status_t st = symcoll_config_print(stdout, SYMCOLL_CONFIG_PRINT_DOC);

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

/* Every rank holds the gathered facts; rank 0 prints them. */
static int show_topo_report(symcoll_status_t (*print)(symcoll_comm_h, FILE *))
{
    int rank = 0;
    symcoll_comm_h comm = get_comm(&rank);

    if (!comm)
        return 1;
    if (rank == 0 && print(comm, stdout) != SYMCOLL_OK)
        return 1;
    return 0;
}

static int show_topology(void)
{
    return show_topo_report(symcoll_comm_print_topology);
}

static int show_algorithms(void)
{
    return show_topo_report(symcoll_comm_print_decisions);
}

static const info_action_t actions[] = {
    {'v', "version",
     "print the version, build configuration and bootstrap in use (the default)", show_version},
    {'c', "config", "print every SYMCOLL_* variable: default, current value, documentation",
     show_config},
    {'t', "topology", "probe and print this machine's topology (nodes, GPUs, links)",
     show_topology},
    {'a', "algorithms", "print the all-reduce decision table (algorithm per size)",
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
    fprintf(out, "  -h, --%-12s %s\n", "help", "print this help");
    fprintf(out, "\nWith several options, each report is printed in the order above; the exit\n"
                 "status is the first non-zero status of a report.\n");
}

int main(int argc, char **argv)
{
    struct option longopts[NACTIONS + 2];
    char shortopts[2 * NACTIONS + 2];
    int wanted[NACTIONS] = {0};
    int c, any = 0, ret = 0;
    size_t k = 0;

    for (size_t i = 0; i < NACTIONS; i++) {
        longopts[i] = (struct option){actions[i].longname, no_argument, NULL, actions[i].opt};
        shortopts[k++] = (char)actions[i].opt;
    }
    longopts[NACTIONS] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[NACTIONS + 1] = (struct option){NULL, 0, NULL, 0};
    shortopts[k++] = 'h';
    shortopts[k] = '\0';

    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        size_t i;
        if (c == 'h') {
            usage(stdout);
            return 0;
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

    for (size_t i = 0; i < NACTIONS; i++) {
        if (wanted[i]) {
            int r = actions[i].run();
            if (r && !ret)
                ret = r;
        }
    }
    if (fflush(stdout)) {
        perror(prog);
        return 1;
    }
    return ret;
}
