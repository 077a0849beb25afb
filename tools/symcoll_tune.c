/* symcoll_tune: measures, on this machine and this layout of ranks, which algorithm is
 * fastest for each collective and range of sizes, and writes a tuning file
 * (SYMCOLL_TUNE_FILE; format in src/topo/tune.h) that the selector then follows on
 * communicators of the same layout.
 *
 * Run it like any symcoll program (symcoll_run, mpirun, srun). For each collective, size
 * and candidate algorithm (every one symcoll_comm_set_algo accepts on this layout) it
 * times a few calls, the candidates alternating round after round; a measurement is the
 * slowest rank's (every rank holds the same numbers: it takes the all-reduce's maximum),
 * so every rank makes the same choice. Rank 0 prints the table and writes the file: the
 * other layouts of an existing file stay, this layout's entries are replaced. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symcoll.h"
#include "tune_buf.h"
#include "tune_report.h"

#define TUNE_MAX_SIZES 40
#define TUNE_FILE_MAX (1u << 24)

static const char *prog = "symcoll_tune";
#define cand_names tune_cand_names
#define NCAND_NAMES 6

typedef struct coll {
    const char *label; /* as the decision table names it (tune_coll_names: the file) */
} coll_t;

static const coll_t colls[] = {
    {"all-reduce"}, {"reduce-scatter"}, {"all-gather"}, {"broadcast"}};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

typedef struct opts {
    int quick, repeats, verbose;
    double margin; /* another algorithm replaces the built-in choice only if this much faster */
    size_t min_bytes, max_bytes;
    const char *out, *plot, *csv;
    symcoll_mem_type_t mems[SYMCOLL_MEM_LAST]; /* the memory types measured */
    int nmems;
} opts_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}
#define FNV_INIT UINT64_C(1469598103934665603)

static int parse_size(const char *s, size_t *v)
{
    char *end;
    unsigned long long x;

    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        x <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        x <<= 20, end++;
    else if (*end == 'G' || *end == 'g')
        x <<= 30, end++;
    if (*end || x == 0)
        return -1;
    *v = (size_t)x;
    return 0;
}

/* One call of collective c with plan size bytes over buffers of 4-byte floats (queued on
 * the buffers' stream for CUDA memory). */
static symcoll_status_t one_call(symcoll_comm_h comm, int c, size_t bytes, int n,
                                 const tune_buf_t *b)
{
    size_t count = bytes / 4 ? bytes / 4 : 1, block = count / (size_t)n ? count / (size_t)n : 1;

    switch (c) {
    case 0:
        return symcoll_allreduce(b->in, b->out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm,
                                 b->stream);
    case 1:
        return symcoll_reduce_scatter(b->in, b->out, block, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm,
                                      b->stream);
    case 2:
        return symcoll_allgather(b->in, b->out, block, SYMCOLL_FLOAT32, comm, b->stream);
    default:
        return symcoll_broadcast(b->in, b->in, count, SYMCOLL_FLOAT32, 0, comm, b->stream);
    }
}

/* Whether out holds what the call must give (inputs: rank + 1 everywhere, exact). */
static int check_call(int c, size_t bytes, int n, const float *in, const float *out)
{
    size_t count = bytes / 4 ? bytes / 4 : 1, block = count / (size_t)n ? count / (size_t)n : 1;
    float sum = (float)n * (float)(n + 1) / 2;

    switch (c) {
    case 0:
        return out[0] == sum && out[count - 1] == sum;
    case 1:
        return out[0] == sum && out[block - 1] == sum;
    case 2:
        return out[0] == 1 && out[(size_t)n * block - 1] == (float)n;
    default:
        return in[0] == 1 && in[count - 1] == 1; /* root 0's values */
    }
}

static const char *mem_name(symcoll_mem_type_t mem)
{
    return mem == SYMCOLL_MEM_CUDA ? "cuda" : "host";
}

/* The path the library's decision table gives collective c of memory mem at plan size
 * bytes under the current settings (symcoll_comm_set_algo included), without the column
 * that says where the choice came from: two candidates with the same path are one. */
static int path_of(const char *table, int c, symcoll_mem_type_t mem, size_t bytes, char *key,
                   size_t len)
{
    const char *m = mem_name(mem);

    for (const char *line = table; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        char a[32], b[32], h[32], x[64], y[64], from[32];
        size_t sz;
        int off = 0;
        if (line[0] != '#' && c == 0 &&
            sscanf(line, "%31s %zu %31s %63s %63s", a, &sz, h, x, y) == 5 && !strcmp(a, m) &&
            sz == bytes) {
            snprintf(key, len, "%s %s", x, y);
            return 0;
        }
        if (line[0] != '#' && c > 0 &&
            sscanf(line, "%31s %31s %zu %31s %63s %63s %31s %n", a, b, &sz, h, x, y, from,
                   &off) == 7 &&
            !strcmp(a, colls[c].label) && !strcmp(b, m) && sz == bytes && off > 0) {
            snprintf(key, len, "%s %s %.*s", x, y, (int)(ll - (size_t)off), line + off);
            return 0;
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}

static char *decisions(symcoll_comm_h comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    symcoll_comm_print_decisions(comm, f);
    fclose(f);
    return text;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The existing file's other layouts, to keep (NULL text: none), and this layout's entries
 * of the memory types not measured now (own; measured: bit per symcoll_mem_type_t). 0, or
 * -1 when the file exists and is not a whole tuning file (then nothing is written). */
static int keep_other_layouts(const char *path, const char *fp, unsigned measured, char **kept,
                              char **own)
{
    FILE *f = fopen(path, "rb");
    char *text, *p, *ck;
    size_t len;
    int in_other = 0, in_own = 0;

    *kept = *own = NULL;
    if (!f)
        return errno == ENOENT ? 0 : -1;
    text = malloc(TUNE_FILE_MAX + 1);
    len = text ? fread(text, 1, TUNE_FILE_MAX, f) : 0;
    fclose(f);
    if (!text)
        return -1;
    text[len] = 0;
    ck = strstr(text, "\nchecksum ");
    if (strncmp(text, "symcoll-tune 1\n", 15) || !ck ||
        strtoull(ck + 10, NULL, 16) != fnv(FNV_INIT, text, (size_t)(ck + 1 - text))) {
        fprintf(stderr,
                "%s: %s exists and is not a whole tuning file of this version (no header or "
                "a wrong checksum); not changed (remove it, or name another with -o)\n",
                prog, path);
        free(text);
        return -1;
    }
    *kept = calloc(1, len + 1);
    *own = calloc(1, len + 1);
    if (!*kept || !*own) {
        free(text);
        return -1;
    }
    ck[1] = 0;
    for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        char coll[32], mem[8];
        if (!strncmp(p, "layout ", 7)) {
            in_other = strcmp(p + 7, fp) != 0;
            in_own = !in_other;
        } else if (!strcmp(p, "end")) {
            in_own = 0;
        } else if (in_own && sscanf(p, "%31s %7s", coll, mem) == 2 &&
                   !(measured >> (strcmp(mem, "cuda") ? SYMCOLL_MEM_HOST : SYMCOLL_MEM_CUDA) &
                     1)) {
            strcat(*own, p);
            strcat(*own, "\n");
        }
        if (in_other) {
            strcat(*kept, p);
            strcat(*kept, "\n");
        }
        if (!strcmp(p, "end"))
            in_other = 0;
    }
    free(text);
    return 0;
}

typedef tune_result_t result_t;

/* res: per memory type of o->mems, per collective, per size */
static int write_file(const opts_t *o, const char *fp, const result_t *res, const size_t *sizes,
                      int nsizes)
{
    char *kept = NULL, *own = NULL, *text, tmp[4096];
    size_t cap = 1u << 20, len = 0;
    unsigned measured = 0;
    FILE *f;

    for (int m = 0; m < o->nmems; m++)
        measured |= 1u << o->mems[m];
    if (keep_other_layouts(o->out, fp, measured, &kept, &own)) {
        free(kept);
        free(own);
        return -1;
    }
    text = malloc(cap + (kept ? strlen(kept) : 0) + (own ? strlen(own) : 0));
    if (!text) {
        free(kept);
        free(own);
        return -1;
    }
    len += (size_t)sprintf(text + len, "symcoll-tune 1\n");
    len += (size_t)sprintf(text + len,
                           "# written by symcoll_tune %s: per layout, the algorithm measured "
                           "fastest for each collective, memory type and range of plan sizes\n"
                           "# collective memory from-bytes to-bytes algorithm us "
                           "runner-up-us runner-up\n",
                           symcoll_version_string());
    if (kept)
        len += (size_t)sprintf(text + len, "%s", kept);
    len += (size_t)sprintf(text + len, "layout %s\n", fp);
    if (own)
        len += (size_t)sprintf(text + len, "%s", own);
    for (int mc = 0; mc < o->nmems * (int)NCOLLS; mc++) {
        /* ranges: each size serves up to the geometric middle of it and the next */
        const result_t *row = &res[mc * nsizes];
        int c = mc % (int)NCOLLS, i = 0;
        while (i < nsizes) {
            const result_t *r = &row[i];
            int j = i;
            size_t lo, hi;
            if (r->best < 0) {
                i++;
                continue;
            }
            while (j + 1 < nsizes && row[j + 1].best >= 0 &&
                   row[j + 1].cand[row[j + 1].best] == r->cand[r->best])
                j++;
            /* the measured span only (from 0 where it starts at 8 B): beyond it the
             * built-in rules */
            lo = i > 0           ? (size_t)sqrt((double)sizes[i - 1] * (double)sizes[i]) + 1
                 : sizes[0] <= 8 ? 0
                                 : sizes[0];
            hi = j < nsizes - 1 ? (size_t)sqrt((double)sizes[j] * (double)sizes[j + 1])
                                : sizes[nsizes - 1];
            snprintf(tmp, sizeof(tmp), "%zu", hi);
            len += (size_t)sprintf(text + len, "%s %s %zu %s %s %.2f %.2f %s\n",
                                   tune_coll_names[c], mem_name(o->mems[mc / (int)NCOLLS]), lo,
                                   hi == SIZE_MAX ? "max" : tmp, cand_names[r->cand[r->best]],
                                   r->us[r->best], r->next >= 0 ? r->us[r->next] : 0.0,
                                   r->next >= 0 ? cand_names[r->cand[r->next]] : "-");
            i = j + 1;
        }
    }
    len += (size_t)sprintf(text + len, "end\n");
    len += (size_t)sprintf(text + len, "checksum %016" PRIx64 "\n", fnv(FNV_INIT, text, len));
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", o->out, (int)getpid());
    f = fopen(tmp, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0 || rename(tmp, o->out) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->out, strerror(errno));
        unlink(tmp);
        free(text);
        free(kept);
        free(own);
        return -1;
    }
    free(text);
    free(kept);
    free(own);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--quick] [-o FILE] [-b MIN] [-e MAX] [-r ROUNDS] [-m PCT] [-v]\n"
            "       [--mem host|cuda|all] [--plot PNG] [--csv FILE]\n"
            "  run under symcoll_run, mpirun or srun; measures every algorithm that can run\n"
            "  on this layout for the all-reduce, reduce-scatter, all-gather and broadcast of\n"
            "  each memory type, and writes the fastest per range of sizes into FILE\n"
            "  -o FILE     the tuning file (default symcoll-tune.txt); its other layouts,\n"
            "              and this layout's entries of memory types not measured, stay\n"
            "  --mem M     host (default), cuda (device buffers, a GPU per rank: the local\n"
            "              rank modulo the devices) or all\n"
            "  --quick     8 B to 1 MiB, 3 rounds, few calls: under a minute on a laptop\n"
            "  -b, -e      smallest and largest plan size, powers of two from 8 to 1G\n"
            "              (default 8 and 16M; K, M, G); sizes beyond are left to the\n"
            "              built-in rules\n"
            "  -r ROUNDS   rounds of alternating measurements (default 5; quick 3)\n"
            "  -m PCT      another algorithm replaces the built-in choice only where it is\n"
            "              at least PCT %% faster (default 10), and its slowest round\n"
            "              is faster than the built-in choice's median\n"
            "  -v          every measurement\n"
            "  --plot PNG  time per call against size, per collective and algorithm, the\n"
            "              rounds' spread as error bars (python3 with matplotlib)\n"
            "  --csv FILE  every measured point: collective, bytes, algorithm, median, min,\n"
            "              max (us), chosen\n",
            prog);
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    static const struct option longopts[] = {
        {"quick", no_argument, NULL, 'q'},     {"plot", required_argument, NULL, 'P'},
        {"csv", required_argument, NULL, 'C'}, {"mem", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    int c, rounds = 0;

    memset(o, 0, sizeof(*o));
    o->out = "symcoll-tune.txt";
    o->margin = 0.10;
    o->min_bytes = 8;
    o->max_bytes = 16u << 20;
    o->mems[0] = SYMCOLL_MEM_HOST;
    o->nmems = 1;
    while ((c = getopt_long(argc, argv, "o:b:e:r:m:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'q':
            o->quick = 1;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'P':
            o->plot = optarg;
            break;
        case 'C':
            o->csv = optarg;
            break;
        case 'M':
            o->nmems = 0;
            if (!strcmp(optarg, "host") || !strcmp(optarg, "all"))
                o->mems[o->nmems++] = SYMCOLL_MEM_HOST;
            if (!strcmp(optarg, "cuda") || !strcmp(optarg, "all"))
                o->mems[o->nmems++] = SYMCOLL_MEM_CUDA;
            if (!o->nmems) {
                fprintf(stderr, "%s: --mem host, cuda or all\n", prog);
                return -1;
            }
            break;
        case 'b':
            if (parse_size(optarg, &o->min_bytes))
                return -1;
            break;
        case 'e':
            if (parse_size(optarg, &o->max_bytes))
                return -1;
            break;
        case 'r':
            rounds = atoi(optarg);
            if (rounds < 1 || rounds > 100)
                return -1;
            break;
        case 'm':
            o->margin = atof(optarg) / 100;
            if (!(o->margin >= 0 && o->margin < 10))
                return -1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return -1;
        }
    }
    if (optind != argc || o->min_bytes > o->max_bytes)
        return -1;
    /* sizes of the library's decision table: powers of two from 8 B to 1 GiB */
    if (o->min_bytes < 8 || o->max_bytes > (1u << 30) || (o->min_bytes & (o->min_bytes - 1)) ||
        (o->max_bytes & (o->max_bytes - 1))) {
        fprintf(stderr, "%s: -b and -e must be powers of two from 8 to 1G\n", prog);
        return -1;
    }
    if (o->quick && o->max_bytes == 16u << 20)
        o->max_bytes = 1u << 20;
    o->repeats = rounds ? rounds : o->quick ? 3 : 5;
    return 0;
}

/* The CSV and the plot that --csv and --plot ask for (rank 0). 0, or -1 when the CSV
 * could not be written; a plot that cannot be drawn is said, not a failure. */
static int report(const opts_t *o, const char *fp, int n, const result_t *res, int nres)
{
    if (o->csv) {
        FILE *f = fopen(o->csv, "w");
        if (f)
            tune_write_csv(f, res, nres);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->csv, strerror(errno));
            return -1;
        }
        printf("# wrote %s\n", o->csv);
    }
    if (o->plot) {
        char title[512];
        snprintf(title, sizeof(title), "symcoll_tune %s, %d ranks: %s",
                 symcoll_version_string(), n, fp);
        fflush(stdout);
        if (tune_plot(o->plot, title, res, nres) == 0)
            printf("# wrote %s\n", o->plot);
    }
    return 0;
}

/* What the measurement of one collective at one size needs to know. */
typedef struct tune_ctx {
    const opts_t *o;
    symcoll_comm_h comm;
    int rank, n, ncand;
    int cand[TUNE_MAX_CAND];     /* indices into cand_names */
    char *tables[TUNE_MAX_CAND]; /* the decision table with each candidate forced */
    char *builtin;               /* ... and with the built-in rules */
    int wrong;                   /* warm-up calls with a wrong result */
} tune_ctx_t;

/* Times each candidate of collective c at plan size bytes on buffers b, rounds
 * alternating, and fills r (the slowest rank's medians and spread; the choice). 0, or -1
 * after a failed call (the communicator is aborted: the others stop waiting for us). */
static int measure(tune_ctx_t *x, tune_buf_t *b, int c, size_t bytes, result_t *r)
{
    const opts_t *o = x->o;
    /* calls per measurement: latency-bound sizes need more to rise above noise */
    int iters = bytes <= (64u << 10) ? (o->quick ? 10 : 30) : bytes <= (1u << 20) ? 5 : 2;
    size_t elems = bytes / 4 + (size_t)x->n;
    double t[TUNE_MAX_CAND][100];
    double mine[TUNE_MAX_CAND * 100], all[TUNE_MAX_CAND * 100], least[TUNE_MAX_CAND * 100];
    int same[TUNE_MAX_CAND], distinct = 0, def = -1, m = 0;
    char kdef[512];
    symcoll_status_t st;

    memset(r, 0, sizeof(*r));
    r->coll = c;
    r->mem = b->mem;
    r->bytes = bytes;
    r->ncand = x->ncand;
    r->best = r->next = -1;
    memcpy(r->cand, x->cand, sizeof(x->cand));
    /* a candidate that runs the same path as an earlier one is not measured */
    for (int a = 0; a < x->ncand; a++) {
        char ka[512], kb[512];
        same[a] = -1;
        if (!x->tables[a] || path_of(x->tables[a], c, b->mem, bytes, ka, sizeof(ka)))
            continue;
        for (int k = 0; k < a && same[a] < 0; k++)
            if (same[k] < 0 && x->tables[k] &&
                !path_of(x->tables[k], c, b->mem, bytes, kb, sizeof(kb)) && !strcmp(ka, kb))
                same[a] = k;
        distinct += same[a] < 0;
        /* the candidate that runs what the built-in rules choose */
        if (def < 0 && same[a] < 0 && x->builtin &&
            !path_of(x->builtin, c, b->mem, bytes, kdef, sizeof(kdef)) && !strcmp(ka, kdef))
            def = a;
    }
    for (int round = 0; round < o->repeats; round++) {
        for (int k = 0; k < x->ncand; k++) {
            /* alternate, a different candidate first each round */
            int a = (k + round) % x->ncand;
            double t0;
            symcoll_status_t cs;
            t[a][round] = -1;
            if (same[a] >= 0 || distinct < 2)
                continue; /* one path: nothing to choose */
            symcoll_comm_set_algo(x->comm, cand_names[x->cand[a]]);
            if (tune_buf_fill(b, elems, x->rank))
                cs = SYMCOLL_ERR_CUDA;
            else
                cs = one_call(x->comm, c, bytes, x->n, b); /* warm-up, checked */
            if (cs == SYMCOLL_OK &&
                (tune_buf_fetch(b, elems) || !check_call(c, bytes, x->n, b->hin, b->hout)))
                x->wrong++;
            t0 = now_us();
            for (int i = 0; i < iters && cs == SYMCOLL_OK; i++)
                cs = one_call(x->comm, c, bytes, x->n, b);
            if (cs == SYMCOLL_OK && tune_buf_sync(b))
                cs = SYMCOLL_ERR_CUDA;
            if (cs != SYMCOLL_OK && cs != SYMCOLL_ERR_INVALID_PARAM) {
                fprintf(stderr, "%s: %s of %zu bytes of %s memory with %s: %s\n", prog,
                        colls[c].label, bytes, mem_name(b->mem), cand_names[x->cand[a]],
                        symcoll_status_string(cs));
                symcoll_comm_abort(x->comm);
                return -1;
            }
            t[a][round] = cs == SYMCOLL_OK ? (now_us() - t0) / iters : -1;
        }
    }
    symcoll_comm_set_algo(x->comm, NULL);
    /* every rank the slowest rank's times (the same choice everywhere), and whether any
     * rank could not run one (-1) */
    for (int a = 0; a < x->ncand; a++)
        for (int round = 0; round < o->repeats; round++)
            mine[m++] = t[a][round];
    st = symcoll_allreduce(mine, all, (size_t)m, SYMCOLL_FLOAT64, SYMCOLL_MAX, x->comm, NULL);
    if (st == SYMCOLL_OK)
        st = symcoll_allreduce(mine, least, (size_t)m, SYMCOLL_FLOAT64, SYMCOLL_MIN, x->comm,
                               NULL);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "%s: symcoll_allreduce: %s\n", prog, symcoll_status_string(st));
        symcoll_comm_abort(x->comm);
        return -1;
    }
    m = 0;
    for (int a = 0; a < x->ncand; a++) {
        double v[100];
        int bad = 0;
        for (int round = 0; round < o->repeats; round++) {
            bad |= least[m] < 0;
            v[round] = all[m++];
        }
        if (o->verbose && x->rank == 0 && !bad) {
            printf("#   %s %s %zu %s:", colls[c].label, mem_name(b->mem), bytes,
                   cand_names[x->cand[a]]);
            for (int round = 0; round < o->repeats; round++)
                printf(" %.2f", v[round]);
            printf("\n");
        }
        qsort(v, (size_t)o->repeats, sizeof(double), cmp_double);
        r->us[a] = bad ? -1 : v[o->repeats / 2];
        r->lo[a] = v[0];
        r->hi[a] = v[o->repeats - 1];
    }
    for (int a = 0; a < x->ncand; a++) {
        if (r->us[a] < 0)
            continue;
        if (r->best < 0 || r->us[a] < r->us[r->best]) {
            r->next = r->best;
            r->best = a;
        } else if (r->next < 0 || r->us[a] < r->us[r->next]) {
            r->next = a;
        }
    }
    /* noise must not move the choice: the built-in one stays unless another is clearly
     * faster, by the margin and in its slowest round */
    if (def >= 0 && r->best >= 0 && r->best != def && r->us[def] >= 0 &&
        (r->us[r->best] * (1 + o->margin) > r->us[def] || r->hi[r->best] >= r->us[def])) {
        r->next = r->best;
        r->best = def;
    }
    /* a winner whose rounds spread more than the margin: the machine was busy */
    r->noisy = r->best >= 0 && r->next >= 0 && r->lo[r->best] > 0 &&
               r->hi[r->best] > r->lo[r->best] * (1 + o->margin);
    return 0;
}

static void print_row(const tune_ctx_t *x, symcoll_mem_type_t mem, const result_t *r)
{
    if (x->rank != 0 || r->best < 0)
        return;
    printf("  %-14s %-4s %10zu  %-8s %10.2f  %-8s %10.2f  %6.2f  %6.2f%s", colls[r->coll].label,
           mem_name(mem), r->bytes, cand_names[r->cand[r->best]], r->us[r->best],
           r->next >= 0 ? cand_names[r->cand[r->next]] : "-",
           r->next >= 0 ? r->us[r->next] : 0.0,
           r->next >= 0 ? r->us[r->next] / r->us[r->best] : 0.0,
           r->lo[r->best] > 0 ? r->hi[r->best] / r->lo[r->best] : 0.0, r->noisy ? "*" : " ");
    for (int a = 0; a < r->ncand; a++)
        printf(" %s=%.1f", cand_names[r->cand[a]], r->us[a]);
    printf("\n");
    fflush(stdout);
}

/* The candidates: what symcoll_comm_set_algo accepts on this layout, with the decision
 * table each gives. A forced ring keeps the canonical order by running rd or rhd
 * (SYMCOLL_REDUCTION_ORDER), so it is no candidate there. */
static void find_candidates(tune_ctx_t *x, const char *fp)
{
    /* the library says why an algorithm cannot run here: not news to the tool */
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);

    x->builtin = decisions(x->comm); /* what the built-in rules choose */
    if (saved >= 0 && devnull >= 0)
        dup2(devnull, 2);
    for (int a = 0; a < NCAND_NAMES; a++) {
        if (!strcmp(cand_names[a], "ring") && !strstr(fp, "order=fastest"))
            continue;
        if (symcoll_comm_set_algo(x->comm, cand_names[a]) == SYMCOLL_OK) {
            x->tables[x->ncand] = decisions(x->comm);
            x->cand[x->ncand++] = a;
        }
    }
    if (saved >= 0 && devnull >= 0)
        dup2(saved, 2);
    if (saved >= 0)
        close(saved);
    if (devnull >= 0)
        close(devnull);
    symcoll_comm_set_algo(x->comm, NULL);
}

int main(int argc, char **argv)
{
    opts_t o;
    tune_ctx_t x;
    symcoll_status_t st;
    char fp[256];
    size_t sizes[TUNE_MAX_SIZES];
    int nsizes = 0, nres, nnoisy = 0, nchoices = 0, failed = 0;
    result_t *res;
    double t_start = now_us();

    if (parse_opts(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    memset(&x, 0, sizeof(x));
    x.o = &o;
    for (int m = 0; m < o.nmems; m++)
        if (o.mems[m] == SYMCOLL_MEM_CUDA && tune_buf_device())
            return 1; /* the device is the communicator's: chosen before creation */
    {
        /* measured with the built-in rules, whatever SYMCOLL_TUNE_FILE says */
        symcoll_comm_params_t p = {0};
        p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE;
        p.tune_file = "";
        st = symcoll_comm_create(&p, &x.comm);
    }
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "%s: symcoll_comm_create: %s\n", prog, symcoll_status_string(st));
        return 1;
    }
    symcoll_comm_rank(x.comm, &x.rank);
    symcoll_comm_size(x.comm, &x.n);
    symcoll_comm_layout(x.comm, fp, sizeof(fp));
    /* sizes: powers of 4 from the smallest (and the largest) */
    for (size_t s = o.min_bytes; s <= o.max_bytes && nsizes < TUNE_MAX_SIZES; s *= 4)
        sizes[nsizes++] = s;
    if (sizes[nsizes - 1] != o.max_bytes && nsizes < TUNE_MAX_SIZES)
        sizes[nsizes++] = o.max_bytes;
    {
        /* a damaged existing file is refused now, not after the measurement (rank 0
         * writes it; the others learn of its verdict) */
        int64_t ok = 1, all_ok = 0;
        if (x.rank == 0) {
            char *kept = NULL, *own = NULL;
            ok = keep_other_layouts(o.out, fp, 0, &kept, &own) == 0;
            free(kept);
            free(own);
        }
        st = symcoll_allreduce(&ok, &all_ok, 1, SYMCOLL_INT64, SYMCOLL_MIN, x.comm, NULL);
        if (st != SYMCOLL_OK || !all_ok) {
            if (st != SYMCOLL_OK)
                fprintf(stderr, "%s: symcoll_allreduce: %s\n", prog, symcoll_status_string(st));
            symcoll_comm_destroy(x.comm);
            return 1;
        }
    }
    find_candidates(&x, fp);
    nres = o.nmems * (int)NCOLLS * nsizes;
    res = calloc((size_t)nres, sizeof(*res));
    if (!res) {
        symcoll_comm_abort(x.comm);
        return 1;
    }
    if (x.rank == 0) {
        printf("# symcoll_tune %s: %d ranks, layout \"%s\"; %d candidate(s):",
               symcoll_version_string(), x.n, fp, x.ncand);
        for (int a = 0; a < x.ncand; a++)
            printf(" %s", cand_names[x.cand[a]]);
        printf("; %d round(s), the slowest rank's time\n", o.repeats);
        printf("# %-14s %-4s %10s  %-8s %10s  %-8s %10s  %6s  %6s  all (us)\n", "collective",
               "mem", "bytes", "best", "us", "next", "us", "margin", "spread");
    }
    for (int m = 0; m < o.nmems && !failed; m++) {
        /* the largest buffer: n blocks of an all-gather, n blocks of a reduce-scatter's
         * input */
        tune_buf_t b;
        if (tune_buf_setup(&b, o.mems[m], o.max_bytes + 4 * (size_t)x.n + 64)) {
            tune_buf_free(&b); /* what it made before it failed */
            symcoll_comm_abort(x.comm);
            failed = 1;
            break;
        }
        for (int c = 0; c < (int)NCOLLS && !failed; c++)
            for (int si = 0; si < nsizes && !failed; si++) {
                result_t *r = &res[(m * (int)NCOLLS + c) * nsizes + si];
                if (measure(&x, &b, c, sizes[si], r)) {
                    failed = 1;
                    break;
                }
                nnoisy += r->noisy;
                nchoices += r->best >= 0 && r->next >= 0;
                print_row(&x, o.mems[m], r);
            }
        tune_buf_free(&b);
    }
    if (failed) {
        free(res);
        return 1; /* aborted: destroy would wait for the others' part of it */
    }
    {
        /* every rank's count of wrong results: none may be */
        int64_t w = x.wrong, wall = 0;
        symcoll_allreduce(&w, &wall, 1, SYMCOLL_INT64, SYMCOLL_SUM, x.comm, NULL);
        x.wrong = (int)wall;
    }
    if (x.rank == 0) {
        if (x.wrong)
            fprintf(stderr, "%s: %d call(s) gave a wrong result; no file written\n", prog,
                    x.wrong);
        else if (write_file(&o, fp, res, sizes, nsizes) == 0)
            printf("# wrote %s (layout \"%s\") in %.1f s\n", o.out, fp,
                   (now_us() - t_start) / 1e6);
        else
            failed = 1;
        if (nnoisy)
            printf("# %d of %d choices (*) from rounds that spread more than the %.0f %% "
                   "margin: a busy or shared machine; there the built-in choice stayed unless "
                   "clearly faster; more rounds (-r) or a quiet machine give firmer ones\n",
                   nnoisy, nchoices, o.margin * 100);
    }
    for (int a = 0; a < x.ncand; a++)
        free(x.tables[a]);
    free(x.builtin);
    symcoll_comm_destroy(x.comm);
    /* the CSV and the plot after the communicator: drawing takes seconds, and the other
     * ranks are gone by then */
    if (x.rank == 0 && !x.wrong && !failed && report(&o, fp, x.n, res, nres))
        failed = 1;
    free(res);
    return x.wrong || failed ? 1 : 0;
}
