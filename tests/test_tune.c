/* Tuning files and the per-call algorithm: the parser takes a whole file and refuses a
 * damaged one with a message that says what is wrong (truncated, another version,
 * garbage, edited, overlapping ranges); lookup by collective, memory and size; and
 * symcoll_comm_set_algo on real ranks: every collective right under every algorithm
 * that can run (1 node, 2 x 2 simulated nodes), bad names and algorithms that cannot run
 * refused with nothing changed, ranks that force different algorithms get
 * SYMCOLL_ERR_MISMATCH, not a hang and not a wrong result. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "topo/tune.h"

/* a whole file: text, then its checksum line */
static char *with_checksum(const char *body)
{
    size_t len = strlen(body);
    char *t = malloc(len + 32);

    ck_assert_ptr_nonnull(t);
    memcpy(t, body, len);
    snprintf(t + len, 32, "checksum %016llx\n",
             (unsigned long long)topo_tune_fnv(TOPO_TUNE_FNV_INIT, body, len));
    return t;
}

static const char *good_body = "symcoll-tune 1\n"
                               "# a comment\n"
                               "layout nodes=1 ppn=3 gpu=none net=none order=auto lib=x\n"
                               "allreduce host 0 65536 oneshot 7.5 15.0 twoshot\n"
                               "allreduce host 65537 max twoshot 38.0 47.5 oneshot\n"
                               "broadcast host 0 100 twoshot 1.0 0 -\n"
                               "end\n"
                               "layout nodes=2 ppn=2 gpu=none net=tcp order=auto lib=x\n"
                               "allreduce host 0 max rd 100 120 hier\n"
                               "allreduce cuda 0 1048576 rhd 900 950 rd\n"
                               "allreduce cuda 1048577 max rd 900 950 rhd\n"
                               "end\n";

START_TEST(t_parse_good)
{
    char *text = with_checksum(good_body), err[512];
    topo_tune_t *t = NULL;
    const topo_tune_layout_t *l;
    const topo_tune_entry_t *e;

    ck_assert_int_eq(topo_tune_parse("good", text, strlen(text), &t, err, sizeof(err)),
                     SYMCOLL_OK);
    ck_assert_int_eq((int)t->nlayouts, 2);
    l = topo_tune_find_layout(t, "nodes=1 ppn=3 gpu=none net=none order=auto lib=x");
    ck_assert_ptr_nonnull(l);
    ck_assert_ptr_null(topo_tune_find_layout(t, "nodes=3 ppn=1"));
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_HOST, 65536);
    ck_assert(e && e->algo == TOPO_ALGO_ONESHOT && e->next_algo == TOPO_ALGO_TWOSHOT);
    ck_assert(e->us == 7.5 && e->next_us == 15.0);
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_HOST, 65537);
    ck_assert(e && e->algo == TOPO_ALGO_TWOSHOT);
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_HOST, SIZE_MAX);
    ck_assert(e && e->algo == TOPO_ALGO_TWOSHOT);
    /* no entry: another memory type, collective or size */
    ck_assert_ptr_null(topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_CUDA, 8));
    ck_assert_ptr_null(topo_tune_lookup(l, TOPO_COLL_ALLGATHER, SYMCOLL_MEM_HOST, 8));
    ck_assert_ptr_null(topo_tune_lookup(l, TOPO_COLL_BROADCAST, SYMCOLL_MEM_HOST, 101));
    e = topo_tune_lookup(l, TOPO_COLL_BROADCAST, SYMCOLL_MEM_HOST, 100);
    ck_assert(e && e->next_algo == TOPO_ALGO_NONE);
    /* CUDA memory's entries: their own ranges beside the host's */
    l = topo_tune_find_layout(t, "nodes=2 ppn=2 gpu=none net=tcp order=auto lib=x");
    ck_assert_ptr_nonnull(l);
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_CUDA, 1 << 20);
    ck_assert(e && e->algo == TOPO_ALGO_RHD && e->mem == SYMCOLL_MEM_CUDA);
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_CUDA, (1 << 20) + 1);
    ck_assert(e && e->algo == TOPO_ALGO_RD);
    e = topo_tune_lookup(l, TOPO_COLL_ALLREDUCE, SYMCOLL_MEM_HOST, 1 << 20);
    ck_assert(e && e->algo == TOPO_ALGO_RD && e->mem == SYMCOLL_MEM_HOST);
    topo_tune_free(t);
    free(text);
}
END_TEST

/* text must be refused, the message naming want */
static void refused(const char *what, const char *text, size_t len, const char *want)
{
    char err[512] = "";
    topo_tune_t *t = (topo_tune_t *)1;

    ck_assert_msg(topo_tune_parse("f", text, len, &t, err, sizeof(err)) ==
                      SYMCOLL_ERR_INVALID_PARAM,
                  "%s: accepted", what);
    ck_assert_msg(t == NULL, "%s: a result despite the error", what);
    ck_assert_msg(strstr(err, want), "%s: message '%s' does not say '%s'", what, err, want);
}

START_TEST(t_parse_bad)
{
    char *text = with_checksum(good_body), *edited, garbage[300];
    size_t len = strlen(text);

    refused("empty", "", 0, "empty");
    refused("truncated, no checksum", text, len - 30, "truncated");
    refused("truncated in a line", text, len - 3, "truncated");
    edited = strdup(text);
    *strstr(edited, "7.5") = '8';
    refused("edited", edited, len, "checksum does not match");
    free(edited);
    for (size_t i = 0; i < sizeof(garbage); i++)
        garbage[i] = (char)(i * 7919 % 251);
    refused("garbage", garbage, sizeof(garbage), "not a text file");
    refused("another text", "hello world\n", 12, "not a symcoll tuning file");
    free(text);

    text = with_checksum("symcoll-tune 2\nlayout a\nend\n");
    refused("version", text, strlen(text), "format version 2");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce host 0 100 rd 1 1 -\n"
                         "allreduce host 100 200 rhd 1 1 -\nend\n");
    refused("overlap", text, strlen(text), "overlapping");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nalltoall host 0 100 rd 1 1 -\nend\n");
    refused("collective", text, strlen(text), "unknown collective");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce disk 0 100 rd 1 1 -\nend\n");
    refused("memory type", text, strlen(text), "unknown memory type (host or cuda)");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce host 0 100 fast 1 1 -\nend\n");
    refused("algorithm", text, strlen(text), "unknown algorithm");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce host 0 100 auto 1 1 -\nend\n");
    refused("auto", text, strlen(text), "unknown algorithm");
    free(text);
    text = with_checksum("symcoll-tune 1\nallreduce host 0 100 rd 1 1 -\n");
    refused("outside", text, strlen(text), "outside a layout");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce host 0 100 rd 1 1 -\n");
    refused("no end", text, strlen(text), "without \"end\"");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nallreduce host 9 1 rd 1 1 -\nend\n");
    refused("range", text, strlen(text), "bad size range");
    free(text);
    text = with_checksum("symcoll-tune 1\nlayout a\nend\nlayout a\nend\n");
    refused("twice", text, strlen(text), "second layout");
    free(text);
}
END_TEST

/* ---- symcoll_comm_set_algo on real ranks ---- */

#define T_COUNT 3000

typedef enum { CALL_AR, CALL_RS, CALL_AG, CALL_BC, CALL_BARRIER, CALL_LAST } call_t;

/* one collective of host floats (inputs rank + 1 + element % 5, exact); returns its
 * status, and fails the rank on a wrong result */
static symcoll_status_t run_call(symcoll_comm_h comm, call_t c, int rank, int n, size_t count,
                                 const char *algo)
{
    size_t total = count * (size_t)n;
    float *in = malloc(total * sizeof(float)), *out = malloc(total * sizeof(float));
    symcoll_status_t st;

    ck_assert(in && out);
    for (size_t i = 0; i < total; i++) {
        in[i] = (float)(rank + 1 + (int)(i % 5));
        out[i] = -1;
    }
    switch (c) {
    case CALL_AR:
        st = symcoll_allreduce(in, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL);
        for (size_t i = 0; st == SYMCOLL_OK && i < count; i++)
            if (out[i] != (float)(n * (n + 1) / 2 + n * (int)(i % 5)))
                harness_fail("rank %d, %s: all-reduce element %zu is %g", rank, algo, i,
                             (double)out[i]);
        break;
    case CALL_RS:
        st = symcoll_reduce_scatter(in, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL);
        for (size_t i = 0; st == SYMCOLL_OK && i < count; i++) {
            size_t g = (size_t)rank * count + i;
            if (out[i] != (float)(n * (n + 1) / 2 + n * (int)(g % 5)))
                harness_fail("rank %d, %s: reduce-scatter element %zu is %g", rank, algo, i,
                             (double)out[i]);
        }
        break;
    case CALL_AG:
        st = symcoll_allgather(in, out, count, SYMCOLL_FLOAT32, comm, NULL);
        for (size_t i = 0; st == SYMCOLL_OK && i < total; i++) {
            int r = (int)(i / count);
            if (out[i] != (float)(r + 1 + (int)((i % count) % 5)))
                harness_fail("rank %d, %s: all-gather element %zu is %g", rank, algo, i,
                             (double)out[i]);
        }
        break;
    case CALL_BC:
        st = symcoll_broadcast(in, in, count, SYMCOLL_FLOAT32, n - 1, comm, NULL);
        for (size_t i = 0; st == SYMCOLL_OK && i < count; i++)
            if (in[i] != (float)(n + (int)(i % 5)))
                harness_fail("rank %d, %s: broadcast element %zu is %g", rank, algo, i,
                             (double)in[i]);
        break;
    default:
        st = symcoll_barrier(comm, NULL);
        break;
    }
    free(in);
    free(out);
    return st;
}

static void s_body(int rank, int nranks, void *arg)
{
    const char *const *algos = arg;
    symcoll_comm_h comm = harness_comm_create();
    char layout[256];

    ck_assert_int_eq(symcoll_comm_layout(comm, layout, sizeof(layout)), SYMCOLL_OK);
    ck_assert_msg(!strncmp(layout, "nodes=", 6), "layout %s", layout);
    ck_assert_int_eq(symcoll_comm_layout(comm, NULL, 8), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_set_algo(comm, "fastest-please"), SYMCOLL_ERR_INVALID_PARAM);
    /* refused, and nothing changed: the next call runs as before */
    ck_assert_int_eq(symcoll_comm_set_algo(comm, algos[0]), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(run_call(comm, CALL_AR, rank, nranks, T_COUNT, "auto"), SYMCOLL_OK);
    for (int a = 1; algos[a]; a++) {
        ck_assert_int_eq(symcoll_comm_set_algo(comm, algos[a]), SYMCOLL_OK);
        for (int c = 0; c < CALL_LAST; c++)
            for (size_t count = 1; count <= 40000; count *= 40)
                ck_assert_msg(run_call(comm, (call_t)c, rank, nranks, count, algos[a]) ==
                                  SYMCOLL_OK,
                              "rank %d: %s, call %d, count %zu", rank, algos[a], c, count);
    }
    ck_assert_int_eq(symcoll_comm_set_algo(comm, NULL), SYMCOLL_OK);
    ck_assert_int_eq(run_call(comm, CALL_AG, rank, nranks, 77, "auto"), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(t_set_algo_node)
{
    /* first: one that cannot run here */
    static const char *const algos[] = {"hier", "oneshot", "twoshot", "auto", NULL};
    ck_assert_int_eq(harness_run(3, 1, 120, s_body, (void *)algos), 0);
}
END_TEST

START_TEST(t_set_algo_nodes)
{
    static const char *const algos[] = {"oneshot", "rd", "rhd", "hier", "ring", NULL};
    ck_assert_int_eq(harness_run(4, 2, 200, s_body, (void *)algos), 0);
}
END_TEST

/* ranks that force different algorithms: MISMATCH on every rank, in bounded time */
static void d_body(int rank, int nranks, void *arg)
{
    const char *const *pair = arg;
    symcoll_comm_h comm;
    symcoll_status_t st;

    setenv("SYMCOLL_TIMEOUT", "20", 1);
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_comm_set_algo(comm, pair[rank % 2]), SYMCOLL_OK);
    st = run_call(comm, CALL_AR, rank, nranks, 20000, pair[rank % 2]);
    if (st != SYMCOLL_ERR_MISMATCH)
        harness_fail("rank %d forced %s: %s, expected SYMCOLL_ERR_MISMATCH", rank,
                     pair[rank % 2], symcoll_status_string(st));
    symcoll_comm_destroy(comm);
}

START_TEST(t_set_algo_disagree)
{
    static const char *const across[] = {"rd", "rhd"};
    static const char *const inside[] = {"oneshot", "twoshot"};
    /* 2 simulated nodes of one rank: even ranks rd, odd ones rhd */
    ck_assert_int_eq(harness_run(2, 2, 60, d_body, (void *)across), 0);
    ck_assert_int_eq(harness_run(2, 1, 60, d_body, (void *)inside), 0);
}
END_TEST

/* the tuning file as a creation parameter (over SYMCOLL_TUNE_FILE; "" for none) */
static int has_line(symcoll_comm_h comm, const char *what)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int found;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(symcoll_comm_print_decisions(comm, f), SYMCOLL_OK);
    fclose(f);
    found = strstr(text, what) != NULL;
    free(text);
    return found;
}

static void p_body(int rank, int nranks, void *arg)
{
    const char *path = arg;
    symcoll_comm_h comm = harness_comm_create(), c2;
    symcoll_comm_params_t p = {0};
    char fp[256];
    static char body[1024];

    (void)nranks;
    ck_assert_int_eq(symcoll_comm_layout(comm, fp, sizeof(fp)), SYMCOLL_OK);
    if (rank == 0) {
        FILE *f = fopen(path, "w");
        char *text;
        snprintf(body, sizeof(body),
                 "symcoll-tune 1\nlayout %s\nallreduce host 0 max twoshot 2 3 oneshot\nend\n",
                 fp);
        text = with_checksum(body);
        ck_assert(f && fputs(text, f) >= 0 && fclose(f) == 0);
        free(text);
    }
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    p.field_mask = SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE;
    p.tune_file = path;
    ck_assert_int_eq(symcoll_comm_create(&p, &c2), SYMCOLL_OK);
    ck_assert_msg(has_line(c2, "twoshot   host           canonical  tuned"), "not tuned");
    ck_assert_int_eq(run_call(c2, CALL_AR, rank, nranks, 10, "tuned"), SYMCOLL_OK);
    {
        /* a part takes the file as its parent read it: gone or rewritten since, a split
         * still works and is tuned */
        symcoll_comm_h part;
        ck_assert_int_eq(symcoll_barrier(c2, NULL), SYMCOLL_OK);
        if (rank == 0)
            ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(symcoll_barrier(c2, NULL), SYMCOLL_OK);
        ck_assert_int_eq(symcoll_comm_split(c2, 0, rank, NULL, &part), SYMCOLL_OK);
        ck_assert_msg(has_line(part, "twoshot   host           canonical  tuned"),
                      "the part is not tuned");
        ck_assert_int_eq(run_call(part, CALL_AR, rank, nranks, 10, "part"), SYMCOLL_OK);
        symcoll_comm_destroy(part);
        if (rank == 0) {
            FILE *f = fopen(path, "w");
            char *text = with_checksum(body);
            ck_assert(f && fputs(text, f) >= 0 && fclose(f) == 0);
            free(text);
        }
        ck_assert_int_eq(symcoll_barrier(c2, NULL), SYMCOLL_OK);
    }
    symcoll_comm_destroy(c2);
    /* "" over the environment's file */
    setenv("SYMCOLL_TUNE_FILE", path, 1);
    p.tune_file = "";
    ck_assert_int_eq(symcoll_comm_create(&p, &c2), SYMCOLL_OK);
    ck_assert_msg(has_line(c2, "tuning file: none"), "a file despite \"\"");
    symcoll_comm_destroy(c2);
    unsetenv("SYMCOLL_TUNE_FILE");
    /* a file that is not there: refused on every rank */
    p.tune_file = "/nonexistent/tune.txt";
    ck_assert_int_eq(symcoll_comm_create(&p, &c2), SYMCOLL_ERR_INVALID_PARAM);
    p.tune_file = NULL;
    ck_assert_int_eq(symcoll_comm_create(&p, &c2), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    if (rank == 0)
        unlink(path);
    symcoll_comm_destroy(comm);
}

START_TEST(t_param)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/symcoll-test-tune-%d.txt", (int)getpid());
    ck_assert_int_eq(harness_run(2, 1, 60, p_body, path), 0);
}
END_TEST

static Suite *tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("file");
    tcase_add_test(tc, t_parse_good);
    tcase_add_test(tc, t_parse_bad);
    suite_add_tcase(s, tc);
    tc = tcase_create("set_algo");
    tcase_set_timeout(tc, 400);
    tcase_add_test(tc, t_set_algo_node);
    tcase_add_test(tc, t_set_algo_nodes);
    tcase_add_test(tc, t_set_algo_disagree);
    tcase_add_test(tc, t_param);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(tune_suite());
}
