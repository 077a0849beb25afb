/* Tuning files: reading, checking and looking up (format in tune.h). */
#include "topo/tune.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const coll_names[TOPO_COLL_LAST] = {
    [TOPO_COLL_ALLREDUCE] = "allreduce", [TOPO_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [TOPO_COLL_ALLGATHER] = "allgather", [TOPO_COLL_BROADCAST] = "broadcast",
    [TOPO_COLL_BARRIER] = "barrier",
};

const char *topo_tune_coll_name(topo_coll_t coll)
{
    return (unsigned)coll < TOPO_COLL_LAST ? coll_names[coll] : "?";
}

const char *topo_tune_mem_name(symcoll_mem_type_t mem)
{
    return mem == SYMCOLL_MEM_CUDA ? "cuda" : "host";
}

uint64_t topo_tune_fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

topo_tune_t *topo_tune_dup(const topo_tune_t *tune)
{
    topo_tune_t *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    *t = *tune;
    t->layouts = calloc(tune->nlayouts ? tune->nlayouts : 1, sizeof(*t->layouts));
    if (!t->layouts) {
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < tune->nlayouts; i++) {
        const topo_tune_layout_t *l = &tune->layouts[i];
        t->layouts[i] = *l;
        t->layouts[i].entries = malloc((l->nentries ? l->nentries : 1) * sizeof(*l->entries));
        if (!t->layouts[i].entries) {
            t->nlayouts = i;
            topo_tune_free(t);
            return NULL;
        }
        memcpy(t->layouts[i].entries, l->entries, l->nentries * sizeof(*l->entries));
    }
    return t;
}

void topo_tune_free(topo_tune_t *tune)
{
    if (!tune)
        return;
    for (size_t i = 0; i < tune->nlayouts; i++)
        free(tune->layouts[i].entries);
    free(tune->layouts);
    free(tune);
}

static void tune_err(char *err, size_t errlen, const char *path, size_t line, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static void tune_err(char *err, size_t errlen, const char *path, size_t line, const char *fmt,
                     ...)
{
    va_list ap;
    int n = line ? snprintf(err, errlen, "tuning file %s, line %zu: ", path, line)
                 : snprintf(err, errlen, "tuning file %s: ", path);

    if (n < 0 || (size_t)n >= errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static int parse_coll(const char *s, topo_coll_t *c)
{
    /* barrier has no size to tune */
    for (int i = 0; i < TOPO_COLL_BARRIER; i++)
        if (!strcmp(s, coll_names[i])) {
            *c = (topo_coll_t)i;
            return 0;
        }
    return -1;
}

static int parse_bytes(const char *s, size_t *v)
{
    char *end;
    unsigned long long x;

    if (!strcmp(s, "max")) {
        *v = SIZE_MAX;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno || *end || x > SIZE_MAX)
        return -1;
    *v = (size_t)x;
    return 0;
}

static int parse_us(const char *s, double *v)
{
    char *end;

    errno = 0;
    *v = strtod(s, &end);
    return errno || *end || !(*v >= 0) ? -1 : 0;
}

/* one entry line's fields (already split) into e */
static const char *parse_entry(char **f, int nf, topo_tune_entry_t *e)
{
    if (nf != 8)
        return "an entry has 8 fields: collective, memory, smallest and largest size, "
               "algorithm, its time, the runner-up's time and name";
    if (parse_coll(f[0], &e->coll))
        return "unknown collective (allreduce, reduce_scatter, allgather or broadcast)";
    if (!strcmp(f[1], "host"))
        e->mem = SYMCOLL_MEM_HOST;
    else if (!strcmp(f[1], "cuda"))
        e->mem = SYMCOLL_MEM_CUDA;
    else
        return "unknown memory type (host or cuda)";
    if (parse_bytes(f[2], &e->lo) || parse_bytes(f[3], &e->hi) || e->lo > e->hi)
        return "bad size range (two sizes in bytes, or max, the smaller first)";
    if (topo_algo_parse(f[4], &e->algo) || e->algo == TOPO_ALGO_AUTO)
        return "unknown algorithm (oneshot, twoshot, ring, rd, hier or rhd)";
    if (parse_us(f[5], &e->us) || parse_us(f[6], &e->next_us))
        return "bad time (µs, a number of 0 or more)";
    if (!strcmp(f[7], "-"))
        e->next_algo = TOPO_ALGO_NONE;
    else if (topo_algo_parse(f[7], &e->next_algo) || e->next_algo == TOPO_ALGO_AUTO)
        return "unknown runner-up algorithm (or - for none)";
    return NULL;
}

static int entry_cmp(const void *a, const void *b)
{
    const topo_tune_entry_t *x = a, *y = b;

    if (x->coll != y->coll)
        return x->coll < y->coll ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* sorted, and no two ranges of a collective and memory type overlap */
static const char *layout_check(topo_tune_layout_t *l)
{
    if (l->nentries > 1) /* an empty layout has no array */
        qsort(l->entries, l->nentries, sizeof(*l->entries), entry_cmp);
    for (size_t i = 1; i < l->nentries; i++) {
        const topo_tune_entry_t *p = &l->entries[i - 1], *e = &l->entries[i];
        if (p->coll == e->coll && p->mem == e->mem && e->lo <= p->hi)
            return "overlapping size ranges";
    }
    return NULL;
}

/* Splits line (modified) into at most max fields at spaces and tabs. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *save = NULL;

    for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == max)
            return max + 1;
        f[n++] = t;
    }
    return n;
}

symcoll_status_t topo_tune_parse(const char *path, const char *text, size_t len,
                                 topo_tune_t **tune_p, char *err, size_t errlen)
{
    topo_tune_t *t = calloc(1, sizeof(*t));
    topo_tune_layout_t *cur = NULL;
    size_t pos = 0, lineno = 0, cap_layouts = 0, cap_entries = 0;
    bool header = false, checksum = false;
    char *buf = NULL;
    symcoll_status_t status = SYMCOLL_ERR_INVALID_PARAM;

    *tune_p = NULL;
    if (!t)
        return SYMCOLL_ERR_NO_MEMORY;
    snprintf(t->path, sizeof(t->path), "%s", path);
    t->hash = topo_tune_fnv(TOPO_TUNE_FNV_INIT, text, len);
    if (memchr(text, 0, len)) {
        tune_err(err, errlen, path, 0, "not a text file (a NUL byte)");
        goto out;
    }
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
        char *f[10];
        int nf;

        lineno++;
        if (!nl) {
            tune_err(err, errlen, path, lineno, "the last line has no end (truncated?)");
            goto out;
        }
        if (checksum) {
            tune_err(err, errlen, path, lineno, "text after the checksum");
            goto out;
        }
        free(buf);
        buf = malloc(ll + 1);
        if (!buf) {
            status = SYMCOLL_ERR_NO_MEMORY;
            goto out;
        }
        memcpy(buf, text + pos, ll);
        buf[ll] = 0;
        nf = buf[0] == '#' ? 0 : split(buf, f, 9);
        if (nf > 0 && !header) {
            long v;
            char *end;
            if (nf != 2 || strcmp(f[0], "symcoll-tune")) {
                tune_err(err, errlen, path, lineno,
                         "not a symcoll tuning file (it starts with \"symcoll-tune %d\")",
                         TOPO_TUNE_VERSION);
                goto out;
            }
            v = strtol(f[1], &end, 10);
            if (*end || v != TOPO_TUNE_VERSION) {
                tune_err(err, errlen, path, lineno,
                         "format version %s; this library reads version %d (make it again "
                         "with this version's symcoll_tune)",
                         f[1], TOPO_TUNE_VERSION);
                goto out;
            }
            header = true;
        } else if (nf > 0 && !strcmp(f[0], "checksum")) {
            uint64_t want = topo_tune_fnv(TOPO_TUNE_FNV_INIT, text, pos), got;
            char *end;
            if (cur) {
                tune_err(err, errlen, path, lineno, "layout without \"end\"");
                goto out;
            }
            got = nf == 2 ? strtoull(f[1], &end, 16) : 0;
            if (nf != 2 || *end || got != want) {
                tune_err(err, errlen, path, lineno,
                         "checksum does not match the text before it (changed or damaged "
                         "since symcoll_tune wrote it)");
                goto out;
            }
            checksum = true;
        } else if (nf > 0 && !strcmp(f[0], "layout")) {
            /* the fingerprint: the rest of the line, spaces as written */
            const char *fp = text + pos + (strstr(buf, "layout") - buf) + 6;
            size_t fl = ll - (size_t)(fp - (text + pos));
            if (cur) {
                tune_err(err, errlen, path, lineno, "layout inside a layout (\"end\" missing)");
                goto out;
            }
            while (fl && (*fp == ' ' || *fp == '\t'))
                fp++, fl--;
            while (fl && (fp[fl - 1] == ' ' || fp[fl - 1] == '\t' || fp[fl - 1] == '\r'))
                fl--;
            if (!fl || fl >= TOPO_TUNE_FP_MAX) {
                tune_err(err, errlen, path, lineno, "layout with no or too long a fingerprint");
                goto out;
            }
            if (t->nlayouts == cap_layouts) {
                size_t nc = cap_layouts ? 2 * cap_layouts : 4;
                topo_tune_layout_t *nl2 = realloc(t->layouts, nc * sizeof(*nl2));
                if (!nl2) {
                    status = SYMCOLL_ERR_NO_MEMORY;
                    goto out;
                }
                t->layouts = nl2;
                cap_layouts = nc;
            }
            cur = &t->layouts[t->nlayouts++];
            memset(cur, 0, sizeof(*cur));
            memcpy(cur->fingerprint, fp, fl);
            cur->fingerprint[fl] = 0;
            if (topo_tune_find_layout(t, cur->fingerprint) != cur) {
                tune_err(err, errlen, path, lineno, "a second layout with this fingerprint");
                goto out;
            }
            cap_entries = 0;
        } else if (nf > 0 && !strcmp(f[0], "end")) {
            const char *why;
            if (!cur || nf != 1) {
                tune_err(err, errlen, path, lineno, "\"end\" outside a layout");
                goto out;
            }
            why = layout_check(cur);
            if (why) {
                tune_err(err, errlen, path, lineno, "layout %s: %s", cur->fingerprint, why);
                goto out;
            }
            cur = NULL;
        } else if (nf > 0) {
            topo_tune_entry_t e;
            const char *why;
            if (!cur) {
                tune_err(err, errlen, path, lineno, "an entry outside a layout");
                goto out;
            }
            memset(&e, 0, sizeof(e));
            why = parse_entry(f, nf, &e);
            if (why) {
                tune_err(err, errlen, path, lineno, "%s", why);
                goto out;
            }
            if (cur->nentries == cap_entries) {
                size_t nc = cap_entries ? 2 * cap_entries : 16;
                topo_tune_entry_t *ne = realloc(cur->entries, nc * sizeof(*ne));
                if (!ne) {
                    status = SYMCOLL_ERR_NO_MEMORY;
                    goto out;
                }
                cur->entries = ne;
                cap_entries = nc;
            }
            cur->entries[cur->nentries++] = e;
        }
        pos += ll + 1;
    }
    if (!header) {
        tune_err(err, errlen, path, 0, "empty (no \"symcoll-tune %d\" line)",
                 TOPO_TUNE_VERSION);
        goto out;
    }
    if (!checksum) {
        tune_err(err, errlen, path, 0, "no checksum line at the end (truncated?)");
        goto out;
    }
    status = SYMCOLL_OK;
out:
    free(buf);
    if (status != SYMCOLL_OK)
        topo_tune_free(t);
    else
        *tune_p = t;
    return status;
}

symcoll_status_t topo_tune_load(const char *path, topo_tune_t **tune_p, char *err,
                                size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    symcoll_status_t status;

    *tune_p = NULL;
    if (!f) {
        tune_err(err, errlen, path, 0, "cannot open it (%s)", strerror(errno));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            char *nt;
            if (cap >= TOPO_TUNE_MAX_BYTES) {
                fclose(f);
                free(text);
                tune_err(err, errlen, path, 0, "larger than %u bytes", TOPO_TUNE_MAX_BYTES);
                return SYMCOLL_ERR_INVALID_PARAM;
            }
            cap = cap ? 2 * cap : 4096;
            nt = realloc(text, cap);
            if (!nt) {
                fclose(f);
                free(text);
                return SYMCOLL_ERR_NO_MEMORY;
            }
            text = nt;
        }
        got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        tune_err(err, errlen, path, 0, "cannot read it");
        fclose(f);
        free(text);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    fclose(f);
    status = topo_tune_parse(path, text ? text : "", len, tune_p, err, errlen);
    free(text);
    return status;
}

const topo_tune_layout_t *topo_tune_find_layout(const topo_tune_t *tune, const char *fp)
{
    for (size_t i = 0; tune && i < tune->nlayouts; i++)
        if (!strcmp(tune->layouts[i].fingerprint, fp))
            return &tune->layouts[i];
    return NULL;
}

const topo_tune_entry_t *topo_tune_lookup(const topo_tune_layout_t *layout, topo_coll_t coll,
                                          symcoll_mem_type_t mem, size_t bytes)
{
    for (size_t i = 0; layout && i < layout->nentries; i++) {
        const topo_tune_entry_t *e = &layout->entries[i];
        if (e->coll == coll && e->mem == mem && e->lo <= bytes && bytes <= e->hi)
            return e;
    }
    return NULL;
}
