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

#define TUNE_MAX_CAND 8
#define TUNE_MAX_SIZES 40
#define TUNE_FILE_MAX (1u << 24)

static const char *prog = "symcoll_tune";
static const char *const cand_names[] = {"oneshot", "twoshot", "ring", "rd", "hier", "rhd"};

typedef struct coll {
    const char *name; /* as tuning files name it */
    const char *label;
} coll_t;

static const coll_t colls[] = {
    {"allreduce", "all-reduce"},
    {"reduce_scatter", "reduce-scatter"},
    {"allgather", "all-gather"},
    {"broadcast", "broadcast"},
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

typedef struct opts {
    int quick, repeats, verbose;
    double margin; /* another algorithm replaces the built-in choice only if this much faster */
    size_t min_bytes, max_bytes;
    const char *out;
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

/* One call of collective c with plan size bytes over buffers of 4-byte floats. */
static symcoll_status_t one_call(symcoll_comm_h comm, int c, size_t bytes, int n, float *in,
                                 float *out)
{
    size_t count = bytes / 4 ? bytes / 4 : 1, block = count / (size_t)n ? count / (size_t)n : 1;

    switch (c) {
    case 0:
        return symcoll_allreduce(in, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL);
    case 1:
        return symcoll_reduce_scatter(in, out, block, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL);
    case 2:
        return symcoll_allgather(in, out, block, SYMCOLL_FLOAT32, comm, NULL);
    default:
        return symcoll_broadcast(in, in, count, SYMCOLL_FLOAT32, 0, comm, NULL);
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

static void fill(float *in, size_t elems, int rank)
{
    for (size_t i = 0; i < elems; i++)
        in[i] = (float)(rank + 1);
}

/* The path the library's decision table gives collective c of host memory at plan size
 * bytes under the current settings (symcoll_comm_set_algo included), without the column
 * that says where the choice came from: two candidates with the same path are one. */
static int path_of(const char *table, int c, size_t bytes, char *key, size_t len)
{
    for (const char *line = table; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        char a[32], b[32], h[32], x[64], y[64], from[32];
        size_t sz;
        int off = 0;
        if (line[0] != '#' && c == 0 &&
            sscanf(line, "%31s %zu %31s %63s %63s", a, &sz, h, x, y) == 5 &&
            !strcmp(a, "host") && sz == bytes) {
            snprintf(key, len, "%s %s", x, y);
            return 0;
        }
        if (line[0] != '#' && c > 0 &&
            sscanf(line, "%31s %31s %zu %31s %63s %63s %31s %n", a, b, &sz, h, x, y, from,
                   &off) == 7 &&
            !strcmp(a, colls[c].label) && !strcmp(b, "host") && sz == bytes && off > 0) {
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

/* The existing file's other layouts, to keep (NULL text: none). 0, or -1 when the file
 * exists and is not a whole tuning file (then nothing is written). */
static int keep_other_layouts(const char *path, const char *fp, char **kept)
{
    FILE *f = fopen(path, "rb");
    char *text, *p, *ck;
    size_t len;
    int in_other = 0;

    *kept = NULL;
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
    if (!*kept) {
        free(text);
        return -1;
    }
    ck[1] = 0;
    for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        if (!strncmp(p, "layout ", 7))
            in_other = strcmp(p + 7, fp) != 0;
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

typedef struct result {
    int coll;
    size_t bytes;
    int ncand;
    int cand[TUNE_MAX_CAND];
    double us[TUNE_MAX_CAND]; /* median over the rounds; < 0: could not run */
    int best, next;
} result_t;

static int write_file(const opts_t *o, const char *fp, const result_t *res, int nres,
                      const size_t *sizes, int nsizes)
{
    char *kept = NULL, *text, tmp[4096];
    size_t cap = 1u << 20, len = 0;
    FILE *f;

    if (keep_other_layouts(o->out, fp, &kept))
        return -1;
    text = malloc(cap + (kept ? strlen(kept) : 0));
    if (!text)
        return -1;
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
    for (int c = 0; c < (int)NCOLLS; c++) {
        /* ranges: each size serves up to the geometric middle of it and the next */
        int i = 0;
        while (i < nsizes) {
            const result_t *r = &res[c * nsizes + i];
            int j = i;
            size_t lo, hi;
            if (r->best < 0) {
                i++;
                continue;
            }
            while (j + 1 < nsizes && res[c * nsizes + j + 1].best >= 0 &&
                   res[c * nsizes + j + 1].cand[res[c * nsizes + j + 1].best] ==
                       r->cand[r->best])
                j++;
            /* the measured span only (from 0 where it starts at 8 B): beyond it the
             * built-in rules */
            lo = i > 0           ? (size_t)sqrt((double)sizes[i - 1] * (double)sizes[i]) + 1
                 : sizes[0] <= 8 ? 0
                                 : sizes[0];
            hi = j < nsizes - 1 ? (size_t)sqrt((double)sizes[j] * (double)sizes[j + 1])
                                : sizes[nsizes - 1];
            snprintf(tmp, sizeof(tmp), "%zu", hi);
            len +=
                (size_t)sprintf(text + len, "%s host %zu %s %s %.2f %.2f %s\n", colls[c].name,
                                lo, hi == SIZE_MAX ? "max" : tmp, cand_names[r->cand[r->best]],
                                r->us[r->best], r->next >= 0 ? r->us[r->next] : 0.0,
                                r->next >= 0 ? cand_names[r->cand[r->next]] : "-");
            i = j + 1;
        }
    }
    len += (size_t)sprintf(text + len, "end\n");
    len += (size_t)sprintf(text + len, "checksum %016" PRIx64 "\n", fnv(FNV_INIT, text, len));
    (void)nres;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", o->out, (int)getpid());
    f = fopen(tmp, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0 || rename(tmp, o->out) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->out, strerror(errno));
        unlink(tmp);
        free(text);
        free(kept);
        return -1;
    }
    free(text);
    free(kept);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--quick] [-o FILE] [-b MIN] [-e MAX] [-r ROUNDS] [-m PCT] [-v]\n"
            "  run under symcoll_run, mpirun or srun; measures every algorithm that can run\n"
            "  on this layout for the all-reduce, reduce-scatter, all-gather and broadcast of\n"
            "  host memory, and writes the fastest per range of sizes into FILE\n"
            "  -o FILE     the tuning file (default symcoll-tune.txt); its other layouts stay\n"
            "  --quick     8 B to 1 MiB, 3 rounds, few calls: under a minute on a laptop\n"
            "  -b, -e      smallest and largest plan size, powers of two from 8 to 1G\n"
            "              (default 8 and 16M; K, M, G); sizes beyond are left to the\n"
            "              built-in rules\n"
            "  -r ROUNDS   rounds of alternating measurements (default 5; quick 3)\n"
            "  -m PCT      another algorithm replaces the built-in choice only where it is\n"
            "              at least PCT %% faster (default 10)\n"
            "  -v          every measurement\n",
            prog);
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    static const struct option longopts[] = {{"quick", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c, rounds = 0;

    memset(o, 0, sizeof(*o));
    o->out = "symcoll-tune.txt";
    o->margin = 0.10;
    o->min_bytes = 8;
    o->max_bytes = 16u << 20;
    while ((c = getopt_long(argc, argv, "o:b:e:r:m:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'q':
            o->quick = 1;
            break;
        case 'o':
            o->out = optarg;
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

int main(int argc, char **argv)
{
    opts_t o;
    symcoll_comm_h comm;
    symcoll_status_t st;
    char fp[256];
    size_t sizes[TUNE_MAX_SIZES];
    int nsizes = 0, ncand = 0, cand[TUNE_MAX_CAND], rank, n, nres, wrong = 0;
    char *tables[TUNE_MAX_CAND] = {NULL}, *builtin;
    result_t *res;
    float *in, *out;
    double t_start = now_us();

    if (parse_opts(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    {
        /* measured with the built-in rules, whatever SYMCOLL_TUNE_FILE says */
        symcoll_comm_params_t p = {0};
        p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE;
        p.tune_file = "";
        st = symcoll_comm_create(&p, &comm);
    }
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "%s: symcoll_comm_create: %s\n", prog, symcoll_status_string(st));
        return 1;
    }
    symcoll_comm_rank(comm, &rank);
    symcoll_comm_size(comm, &n);
    symcoll_comm_layout(comm, fp, sizeof(fp));
    /* sizes: powers of 4 from the smallest (and the largest) */
    for (size_t s = o.min_bytes; s <= o.max_bytes && nsizes < TUNE_MAX_SIZES; s *= 4)
        sizes[nsizes++] = s;
    if (sizes[nsizes - 1] != o.max_bytes && nsizes < TUNE_MAX_SIZES)
        sizes[nsizes++] = o.max_bytes;
    /* the candidates: what can run on this layout; a forced ring keeps the canonical order
     * by running rd or rhd (SYMCOLL_REDUCTION_ORDER), so it is no candidate there */
    builtin = decisions(comm); /* what the built-in rules choose */
    {
        /* the library says why an algorithm cannot run here: not news to the tool */
        int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
        if (saved >= 0 && devnull >= 0)
            dup2(devnull, 2);
        for (int a = 0; a < (int)(sizeof(cand_names) / sizeof(cand_names[0])); a++) {
            if (!strcmp(cand_names[a], "ring") && !strstr(fp, "order=fastest"))
                continue;
            if (symcoll_comm_set_algo(comm, cand_names[a]) == SYMCOLL_OK) {
                tables[ncand] = decisions(comm);
                cand[ncand++] = a;
            }
        }
        if (saved >= 0 && devnull >= 0)
            dup2(saved, 2);
        if (saved >= 0)
            close(saved);
        if (devnull >= 0)
            close(devnull);
    }
    symcoll_comm_set_algo(comm, NULL);
    /* the largest buffer: n blocks of an all-gather, n blocks of a reduce-scatter's input.
     * Plain memory, as most callers pass (symcoll_perf's default): the paths differ for
     * pool buffers (no copy in), and so can the fastest algorithm */
    {
        size_t bytes = (o.max_bytes + 4 * (size_t)n + 64 + 63) / 64 * 64;
        in = aligned_alloc(64, bytes);
        out = aligned_alloc(64, bytes);
    }
    if (!in || !out) {
        fprintf(stderr, "%s: out of memory for %zu-byte buffers\n", prog, o.max_bytes);
        symcoll_comm_abort(comm);
        return 1;
    }
    nres = (int)NCOLLS * nsizes;
    res = calloc((size_t)nres, sizeof(*res));
    if (!res)
        return 1;
    if (rank == 0) {
        printf("# symcoll_tune %s: %d ranks, layout \"%s\"; %d candidate(s):",
               symcoll_version_string(), n, fp, ncand);
        for (int a = 0; a < ncand; a++)
            printf(" %s", cand_names[cand[a]]);
        printf("; %d round(s), the slowest rank's time\n", o.repeats);
        printf("# %-14s %10s  %-8s %10s  %-8s %10s  %6s  all (us)\n", "collective", "bytes",
               "best", "us", "next", "us", "margin");
    }
    for (int c = 0; c < (int)NCOLLS; c++) {
        for (int si = 0; si < nsizes; si++) {
            size_t bytes = sizes[si];
            /* calls per measurement: latency-bound sizes need more to rise above noise */
            int iters = bytes <= (64u << 10)  ? (o.quick ? 10 : 30)
                        : bytes <= (1u << 20) ? 5
                                              : 2;
            double t[TUNE_MAX_CAND][100];
            result_t *r = &res[c * nsizes + si];

            int same[TUNE_MAX_CAND], distinct = 0, def = -1;
            char kdef[512];

            r->coll = c;
            r->bytes = bytes;
            r->ncand = ncand;
            r->best = r->next = -1;
            memcpy(r->cand, cand, sizeof(cand));
            /* a candidate that runs the same path as an earlier one is not measured */
            for (int a = 0; a < ncand; a++) {
                char ka[512], kb[512];
                same[a] = -1;
                if (!tables[a] || path_of(tables[a], c, bytes, ka, sizeof(ka)))
                    continue;
                for (int b = 0; b < a && same[a] < 0; b++)
                    if (same[b] < 0 && tables[b] &&
                        !path_of(tables[b], c, bytes, kb, sizeof(kb)) && !strcmp(ka, kb))
                        same[a] = b;
                distinct += same[a] < 0;
                /* the candidate that runs what the built-in rules choose */
                if (def < 0 && same[a] < 0 && builtin &&
                    !path_of(builtin, c, bytes, kdef, sizeof(kdef)) && !strcmp(ka, kdef))
                    def = a;
            }
            for (int round = 0; round < o.repeats; round++) {
                for (int k = 0; k < ncand; k++) {
                    /* alternate, a different candidate first each round */
                    int a = (k + round) % ncand;
                    double t0, dt;
                    symcoll_status_t cs;
                    if (same[a] >= 0 || distinct < 2) {
                        t[a][round] = -1; /* one path: nothing to choose */
                        continue;
                    }
                    symcoll_comm_set_algo(comm, cand_names[cand[a]]);
                    fill(in, bytes / 4 + (size_t)n, rank);
                    cs = one_call(comm, c, bytes, n, in, out); /* warm-up, checked */
                    if (cs == SYMCOLL_OK && !check_call(c, bytes, n, in, out))
                        wrong++;
                    t0 = now_us();
                    for (int i = 0; i < iters && cs == SYMCOLL_OK; i++)
                        cs = one_call(comm, c, bytes, n, in, out);
                    dt = cs == SYMCOLL_OK ? (now_us() - t0) / iters : -1;
                    if (cs != SYMCOLL_OK && cs != SYMCOLL_ERR_INVALID_PARAM) {
                        fprintf(stderr, "%s: %s of %zu bytes with %s: %s\n", prog,
                                colls[c].label, bytes, cand_names[cand[a]],
                                symcoll_status_string(cs));
                        symcoll_comm_abort(comm); /* the others stop waiting for us */
                        return 1;
                    }
                    t[a][round] = dt;
                }
            }
            symcoll_comm_set_algo(comm, NULL);
            /* every rank the slowest rank's times: the same choice everywhere */
            {
                double mine[TUNE_MAX_CAND * 100], all[TUNE_MAX_CAND * 100],
                    least[TUNE_MAX_CAND * 100];
                int m = 0;
                for (int a = 0; a < ncand; a++)
                    for (int round = 0; round < o.repeats; round++)
                        mine[m++] = t[a][round];
                st = symcoll_allreduce(mine, all, (size_t)m, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm,
                                       NULL);
                /* and whether any rank could not run it (-1) */
                if (st == SYMCOLL_OK)
                    st = symcoll_allreduce(mine, least, (size_t)m, SYMCOLL_FLOAT64, SYMCOLL_MIN,
                                           comm, NULL);
                if (st != SYMCOLL_OK) {
                    fprintf(stderr, "%s: symcoll_allreduce: %s\n", prog,
                            symcoll_status_string(st));
                    return 1;
                }
                m = 0;
                for (int a = 0; a < ncand; a++) {
                    double v[100];
                    int bad = 0;
                    for (int round = 0; round < o.repeats; round++) {
                        bad |= least[m] < 0;
                        v[round] = all[m++];
                    }
                    if (o.verbose && rank == 0 && !bad) {
                        printf("#   %s %zu %s:", colls[c].label, bytes, cand_names[cand[a]]);
                        for (int round = 0; round < o.repeats; round++)
                            printf(" %.2f", v[round]);
                        printf("\n");
                    }
                    qsort(v, (size_t)o.repeats, sizeof(double), cmp_double);
                    r->us[a] = bad ? -1 : v[o.repeats / 2];
                }
            }
            for (int a = 0; a < ncand; a++) {
                if (r->us[a] < 0)
                    continue;
                if (r->best < 0 || r->us[a] < r->us[r->best]) {
                    r->next = r->best;
                    r->best = a;
                } else if (r->next < 0 || r->us[a] < r->us[r->next]) {
                    r->next = a;
                }
            }
            /* noise must not move the choice: the built-in one stays unless another is
             * clearly faster */
            if (def >= 0 && r->best >= 0 && r->best != def && r->us[def] >= 0 &&
                r->us[r->best] * (1 + o.margin) > r->us[def]) {
                r->next = r->best;
                r->best = def;
            }
            if (rank == 0 && r->best >= 0) {
                printf("  %-14s %10zu  %-8s %10.2f  %-8s %10.2f  %6.2f ", colls[c].label, bytes,
                       cand_names[cand[r->best]], r->us[r->best],
                       r->next >= 0 ? cand_names[cand[r->next]] : "-",
                       r->next >= 0 ? r->us[r->next] : 0.0,
                       r->next >= 0 ? r->us[r->next] / r->us[r->best] : 0.0);
                for (int a = 0; a < ncand; a++)
                    printf(" %s=%.1f", cand_names[cand[a]], r->us[a]);
                printf("\n");
                fflush(stdout);
            }
        }
    }
    {
        /* every rank's count of wrong results: none may be */
        int64_t w = wrong, wall = 0;
        symcoll_allreduce(&w, &wall, 1, SYMCOLL_INT64, SYMCOLL_SUM, comm, NULL);
        wrong = (int)wall;
    }
    if (rank == 0) {
        if (wrong)
            fprintf(stderr, "%s: %d call(s) gave a wrong result; no file written\n", prog,
                    wrong);
        else if (write_file(&o, fp, res, nres, sizes, nsizes) == 0)
            printf("# wrote %s (layout \"%s\") in %.1f s\n", o.out, fp,
                   (now_us() - t_start) / 1e6);
        else
            wrong = -1;
    }
    free(in);
    free(out);
    free(res);
    for (int a = 0; a < ncand; a++)
        free(tables[a]);
    free(builtin);
    symcoll_comm_destroy(comm);
    return wrong ? 1 : 0;
}
