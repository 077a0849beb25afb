/* Probe tests: real processes through the real bootstrap, split into simulated nodes
 * (SYMCOLL_HOST_ID); checks the node map, every rank's facts, the selector's shapes,
 * SYMCOLL_ALGO applicability at creation, and the printed reports; the liveness check
 * (/proc/PID/stat parsed, a zombie counted dead); oversubscription judged on the CPUs
 * a node's ranks may use together. */
#define _GNU_SOURCE
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/core.h"
#include "harness.h"
#include "topo/topo.h"

#define TIMEOUT 60.0

typedef struct probe_arg {
    int nnodes;
} probe_arg_t;

static void body_probe(int rank, int nranks, void *arg)
{
    const probe_arg_t *a = arg;
    symcoll_comm_h comm = harness_comm_create();
    const topo_t *t = comm->topo;
    int expect_leader = -1, local = 0;

    ck_assert_int_eq(t->nranks, nranks);
    ck_assert_int_eq(t->nnodes, a->nnodes);
    ck_assert_int_eq(t->node, harness_node_of(rank, nranks, a->nnodes));
    for (int r = 0; r < nranks; r++) {
        int node = harness_node_of(r, nranks, a->nnodes);
        ck_assert_int_eq(t->rank_node[r], node);
        if (node == t->node) {
            if (expect_leader < 0)
                expect_leader = r;
            ck_assert_int_eq(t->local_ranks[local], r);
            ck_assert_int_eq(t->rank_local_rank[r], local);
            if (r == rank)
                ck_assert_int_eq(t->local_rank, local);
            local++;
        }
        /* the facts of every rank of this node arrived (its pid is alive with its start
         * time); another node's stay there: the job learns their host hash only */
        ck_assert_uint_ne(t->info[r].host_hash, 0);
        if (node != t->node) {
            ck_assert_int_eq(t->info[r].pid, 0);
            ck_assert_str_eq(t->info[r].host_id, "");
            continue;
        }
        ck_assert_int_gt(t->info[r].pid, 0);
        ck_assert_uint_gt(t->info[r].start_time, 0);
        ck_assert(topo_proc_alive(t->info[r].pid, t->info[r].start_time));
        ck_assert_int_ge(t->info[r].cpu, 0);
        for (int q = 0; q < r; q++)
            ck_assert_int_ne(t->info[q].pid, t->info[r].pid);
    }
    ck_assert_int_eq(t->local_size, local);
    ck_assert_int_eq(t->node_leader[t->node], expect_leader);
    ck_assert_int_eq(t->info[rank].pid, (int)getpid());
    ck_assert_uint_eq(t->info[rank].start_time, topo_proc_start_time((int)getpid()));

    /* the selector's view follows the map */
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_HOST].nnodes, a->nnodes);
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_HOST].nranks, nranks);
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_HOST].uniform, nranks % a->nnodes == 0);
    ck_assert_int_eq(t->shape[SYMCOLL_MEM_HOST].ppn, (nranks + a->nnodes - 1) / a->nnodes);
    if (!t->have_gpus) {
        ck_assert_ptr_null(t->links);
        ck_assert_ptr_null(topo_link(t, 0, nranks - 1));
    }
    /* peers stay alive until every rank has checked them */
    ck_assert_int_eq(bootstrap_barrier(comm->bootstrap), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

/* ranks, simulated nodes: one node, even split, uneven split, one rank per node */
static const int probe_cases[][2] = {{3, 1}, {4, 2}, {3, 2}, {3, 3}};

START_TEST(test_probe)
{
    probe_arg_t a = {probe_cases[_i][1]};
    ck_assert_int_eq(harness_run(probe_cases[_i][0], a.nnodes, TIMEOUT, body_probe, &a), 0);
}
END_TEST

/* ---- SYMCOLL_ALGO checked against the probed topology --------------------- */

typedef struct algo_arg {
    const char *algo;
    symcoll_status_t want;
} algo_arg_t;

static void body_algo(int rank, int nranks, void *arg)
{
    const algo_arg_t *a = arg;
    symcoll_comm_h comm = NULL;
    symcoll_status_t st;

    setenv("SYMCOLL_ALGO", a->algo, 1);
    st = symcoll_comm_create(NULL, &comm);
    ck_assert_msg(st == a->want, "rank %d: SYMCOLL_ALGO=%s gave %s", rank, a->algo,
                  symcoll_status_string(st));
    if (st == SYMCOLL_OK) {
        ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    } else {
        ck_assert_ptr_null(comm);
    }
}

/* ranks, simulated nodes, SYMCOLL_ALGO, expected status of creation */
static const struct {
    int nranks, nnodes;
    algo_arg_t arg;
} algo_cases[] = {
    {2, 1, {"hier", SYMCOLL_ERR_INVALID_PARAM}},
    {2, 1, {"ring", SYMCOLL_ERR_INVALID_PARAM}},
    {2, 2, {"oneshot", SYMCOLL_ERR_INVALID_PARAM}},
    {3, 2, {"hier", SYMCOLL_ERR_INVALID_PARAM}},
    {2, 2, {"ring", SYMCOLL_OK}},
    {2, 1, {"twoshot", SYMCOLL_OK}},
    {2, 1, {"bogus", SYMCOLL_ERR_INVALID_PARAM}},
};

START_TEST(test_algo_forced)
{
    ck_assert_int_eq(harness_run(algo_cases[_i].nranks, algo_cases[_i].nnodes, TIMEOUT,
                                 body_algo, (void *)&algo_cases[_i].arg),
                     0);
}
END_TEST

/* ---- reports ------------------------------------------------------------- */

static void body_print(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char line[64];

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(symcoll_comm_print_topology(comm, f), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_print_decisions(comm, f), SYMCOLL_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "4 rank(s) on 2 node(s)"));
    /* each rank names its own node's host; another node by its identity's hash */
    if (rank < 2) {
        ck_assert_ptr_nonnull(
            strstr(buf, "# node 0 (simnode-0): leader rank 0, 2 rank(s): 0 1"));
        ck_assert_ptr_nonnull(strstr(buf, ": leader rank 2, 2 rank(s): 2 3"));
        ck_assert_ptr_nonnull(strstr(buf, "# node 1 (host "));
    } else {
        ck_assert_ptr_nonnull(
            strstr(buf, "# node 1 (simnode-1): leader rank 2, 2 rank(s): 2 3"));
        ck_assert_ptr_nonnull(strstr(buf, "# node 0 (host "));
    }
    /* every size of the decision table, for both memory types */
    ck_assert_ptr_nonnull(strstr(buf, "  host            8  "));
    ck_assert_ptr_nonnull(strstr(buf, "  cuda   1073741824  "));
    snprintf(line, sizeof(line), " %8d ", (int)getpid());
    ck_assert_ptr_nonnull(strstr(buf, line));
    free(buf);

    ck_assert_int_eq(symcoll_comm_print_topology(comm, NULL), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_print_decisions(NULL, stdout), SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_print_topology(comm, stdout), SYMCOLL_ERR_INVALID_PARAM);
}

START_TEST(test_print)
{
    ck_assert_int_eq(harness_run(4, 2, TIMEOUT, body_print, NULL), 0);
}
END_TEST

/* The state and start time come from after the last ')': the command name may hold
 * spaces, parentheses and state-like letters. */
START_TEST(test_proc_stat_parse)
{
    static const char tail[] = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 99 100\n";
    static const struct {
        const char *head;
        char state;
    } ok[] = {
        {"123 (sleep) S", 'S'}, {"7 (a b) Z", 'Z'}, {"8 (x) Z (y)) R", 'R'},
        {"9 ()) X", 'X'},       {"10 (Z) S", 'S'},  {"11 (tab\there) D", 'D'},
    };
    char buf[256], state = 0;
    uint64_t st = 0;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        snprintf(buf, sizeof(buf), "%s%s", ok[i].head, tail);
        ck_assert_int_eq(topo_proc_stat_parse(buf, &state, &st), 0);
        ck_assert_int_eq(state, ok[i].state);
        ck_assert_uint_eq(st, 424242);
    }
    /* no ')', nothing after it, or too few fields */
    ck_assert_int_eq(topo_proc_stat_parse("123 sleep S 1 2 3", &state, &st), -1);
    ck_assert_int_eq(topo_proc_stat_parse("123 (sleep)", &state, &st), -1);
    ck_assert_int_eq(topo_proc_stat_parse("123 (sleep) S 1 2 3 4", &state, &st), -1);
    ck_assert_int_eq(topo_proc_stat_parse("", &state, &st), -1);
}
END_TEST

/* A child that died but is not reaped keeps its /proc entry and start time, yet is
 * dead; once reaped it is gone. A live one is alive only with its own start time. */
START_TEST(test_proc_alive_zombie)
{
    siginfo_t si;
    uint64_t start;
    int fds[2];
    char c;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[1]);
        /* lives until the parent closes its end */
        while (read(fds[0], &c, 1) < 0)
            ;
        _exit(0);
    }
    close(fds[0]);
    start = topo_proc_start_time(pid);
    ck_assert_uint_gt(start, 0);
    ck_assert(topo_proc_alive(pid, start));
    ck_assert(topo_proc_alive(pid, 0));
    ck_assert(!topo_proc_alive(pid, start + 1)); /* a reused pid */
    close(fds[1]);
    memset(&si, 0, sizeof(si));
    ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(si.si_pid, pid);
    /* a zombie now */
    ck_assert_uint_eq(topo_proc_start_time(pid), start);
    ck_assert(!topo_proc_alive(pid, start));
    ck_assert(!topo_proc_alive(pid, 0));
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    ck_assert_uint_eq(topo_proc_start_time(pid), 0);
    ck_assert(!topo_proc_alive(pid, start));
}
END_TEST

/* Ranks bound as a launcher binds them (rank r to CPU r mod ncpus_used): oversubscribed
 * only when a node's ranks share CPUs. */
typedef struct bind_arg {
    int ncpus_used; /* CPUs the ranks spread over */
    int want_oversub;
} bind_arg_t;

static void body_bind(int rank, int nranks, void *arg)
{
    const bind_arg_t *a = arg;
    symcoll_comm_h comm;
    cpu_set_t set;

    (void)nranks;
    CPU_ZERO(&set);
    CPU_SET(rank % a->ncpus_used, &set);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
    comm = harness_comm_create();
    ck_assert_msg(comm->topo->shape[SYMCOLL_MEM_HOST].oversubscribed == a->want_oversub,
                  "rank %d: oversubscribed %d, want %d", rank,
                  comm->topo->shape[SYMCOLL_MEM_HOST].oversubscribed, a->want_oversub);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(test_bound_ranks)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    bind_arg_t spread = {2, 0}, shared = {1, 1};

    CPU_ZERO(&set);
    if (ncpu < 2 || sched_getaffinity(0, sizeof(set), &set) || !CPU_ISSET(0, &set) ||
        !CPU_ISSET(1, &set)) {
        fprintf(stderr, "test_bound_ranks: needs CPUs 0 and 1; only the shared case runs\n");
    } else {
        /* 2 ranks, one core each: not oversubscribed */
        ck_assert_int_eq(harness_run(2, 1, TIMEOUT, body_bind, &spread), 0);
    }
    /* 2 ranks bound to the same core */
    ck_assert_int_eq(harness_run(2, 1, TIMEOUT, body_bind, &shared), 0);
}
END_TEST

static Suite *topo_suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("probe");

    tcase_set_timeout(tc, 2 * TIMEOUT);
    tcase_add_loop_test(tc, test_probe, 0, (int)(sizeof(probe_cases) / sizeof(probe_cases[0])));
    tcase_add_loop_test(tc, test_algo_forced, 0,
                        (int)(sizeof(algo_cases) / sizeof(algo_cases[0])));
    tcase_add_test(tc, test_print);
    tcase_add_test(tc, test_bound_ranks);
    suite_add_tcase(s, tc);
    tc = tcase_create("liveness");
    tcase_add_test(tc, test_proc_stat_parse);
    tcase_add_test(tc, test_proc_alive_zombie);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* the harness sets the bootstrap's variables; the rest must not leak in */
    unsetenv("SYMCOLL_ALGO");
    unsetenv("SYMCOLL_HOST_ID");
    setenv("UCX_TLS", "tcp,self", 0);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
    return harness_main(topo_suite());
}
