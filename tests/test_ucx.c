/* Tests of the UCX layer on its own, between simulated nodes over TCP loopback: the
 * layer exists only when a communicator spans nodes, put /
 * fence / flag round trips deliver every byte, a peer that dies turns a wait into
 * an error instead of a hang, endpoints and rkeys on need (the channels:
 * test_ucx_channels.c). */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "algo/net/net.h"
#include "bootstrap/bootstrap.h"
#include "topo/topo.h"
#include "core/core.h"
#include "harness.h"
#include "ucx/ucx.h"
#include "ucx_testlib.h"


/* ---- the layer exists exactly when the ranks span nodes ----------------------------- */

static void body_presence(int rank, int nranks, void *arg)
{
    int nnodes = *(int *)arg;
    symcoll_comm_h comm;

    ucx_test_env();
    comm = harness_comm_create();
    if (nnodes > 1) {
        ck_assert_ptr_nonnull(comm->ucx);
        ck_assert_msg(strlen(ucx_transports(comm->ucx)) > 0, "no transport reported");
        ck_assert_msg(strstr(ucx_transports(comm->ucx), "tcp") != NULL,
                      "UCX_TLS=tcp,self but transports are '%s'", ucx_transports(comm->ucx));
        for (int r = 0; r < nranks; r++)
            ck_assert_int_eq(ucx_is_remote(comm->ucx, r),
                             harness_node_of(r, nranks, nnodes) !=
                                 harness_node_of(rank, nranks, nnodes));
    } else {
        ck_assert_ptr_null(comm->ucx);
    }
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

START_TEST(test_presence)
{
    int one = 1, two = 2;
    ck_assert_int_eq(harness_run(2, 1, RUN_TIMEOUT, body_presence, &one), 0);
    ck_assert_int_eq(harness_run(4, 2, RUN_TIMEOUT, body_presence, &two), 0);
}
END_TEST

/* ---- put / fence / flag round trips ------------------------------------------------- */

#define RT_BYTES (3 * 1024 * 1024 + 5)
#define RT_ROUNDS 20

/* Layout of the registered buffer: flags first (one line per sender), then data. */
#define RT_FLAGS_BYTES 4096

static unsigned char rt_byte(int sender, int round, size_t i)
{
    return (unsigned char)(sender * 31 + round * 7 + i * 13 + (i >> 11));
}

static void body_roundtrip(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    ucx_region_t *reg;
    size_t size = RT_FLAGS_BYTES + (size_t)nranks * RT_BYTES;
    unsigned char *buf, *src;
    deadline_t dl;

    ucx_test_env();
    /* arg: the transfer protocol to use ("put" or "am") */
    setenv("SYMCOLL_NET_PROTOCOL", arg ? (const char *)arg : "auto", 1);
    comm = harness_comm_create();
    ucx = comm->ucx;
    ck_assert_ptr_nonnull(ucx);
    buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(buf != MAP_FAILED);
    src = malloc(RT_BYTES);
    ck_assert_ptr_nonnull(src);
    ck_assert_int_eq(ucx_region_create(ucx, buf, size, &reg), SYMCOLL_OK);

    for (int round = 1; round <= RT_ROUNDS; round++) {
        /* big messages only every few rounds keep the run short */
        size_t len = round % 5 == 0 ? RT_BYTES : (size_t)(round * 97);
        for (size_t i = 0; i < len; i++)
            src[i] = rt_byte(rank, round, i);
        for (int r = 0; r < nranks; r++) {
            ucx_req_t req;
            if (!ucx_is_remote(ucx, r))
                continue;
            /* into r's slot for us; r waits for our flag */
            ck_assert_int_eq(
                ucx_put(ucx, r, src, len, buf + RT_FLAGS_BYTES + (size_t)rank * RT_BYTES, &req),
                SYMCOLL_OK);
            ck_assert_int_eq(ucx_fence(ucx), SYMCOLL_OK);
            ck_assert_int_eq(
                ucx_put_flag(ucx, r, (uint64_t)round, (uint64_t *)(buf + 64 * (size_t)rank)),
                SYMCOLL_OK);
        }
        dl = deadline_make(60, NULL);
        for (int r = 0; r < nranks; r++) {
            const unsigned char *got = buf + RT_FLAGS_BYTES + (size_t)r * RT_BYTES;
            if (!ucx_is_remote(ucx, r))
                continue;
            ck_assert_int_eq(
                ucx_wait_flag(ucx, (uint64_t *)(buf + 64 * (size_t)r), (uint64_t)round, &dl),
                SYMCOLL_OK);
            for (size_t i = 0; i < len; i++)
                if (got[i] != rt_byte(r, round, i))
                    harness_fail("round %d: byte %zu from rank %d is %u, expected %u", round, i,
                                 r, got[i], rt_byte(r, round, i));
        }
        /* our sources are reused next round; peers may still be reading our slot of
         * theirs, which they own, so only local completion matters here */
        ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
        /* nobody may overwrite a slot before its owner checked it */
        ck_assert_int_eq(ucx_flush(ucx, &dl), SYMCOLL_OK);
        {
            /* a barrier that keeps progressing: one more flag round */
            for (int r = 0; r < nranks; r++)
                if (ucx_is_remote(ucx, r))
                    ck_assert_int_eq(ucx_put_flag(ucx, r, (uint64_t)round,
                                                  (uint64_t *)(buf + 2048 + 64 * (size_t)rank)),
                                     SYMCOLL_OK);
            for (int r = 0; r < nranks; r++)
                if (ucx_is_remote(ucx, r))
                    ck_assert_int_eq(ucx_wait_flag(ucx,
                                                   (uint64_t *)(buf + 2048 + 64 * (size_t)r),
                                                   (uint64_t)round, &dl),
                                     SYMCOLL_OK);
        }
    }
    ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
    ucx_region_release(ucx, reg);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    munmap(buf, size);
    free(src);
}


RUN_CASE(test_roundtrip_2x1, 2, 2, body_roundtrip, NULL)
/* put / fence / flag put, which UCX emulates on TCP: still correct while nobody dies */
RUN_CASE(test_roundtrip_2x1_put, 2, 2, body_roundtrip, "put")
RUN_CASE(test_roundtrip_3x2, 6, 3, body_roundtrip, NULL)

/* ---- a lasting flush names the peers it waits for ------------------------------------ */

/* Rank 0 puts to ranks 1 and 2 and flushes. Over TCP a put completes only once its target
 * progresses: rank 1 does all along, rank 2 raises a flag on rank 0 and then sleeps 8 s
 * without progressing (rank 0 puts only once it saw the flag). A flush of rank 1's
 * endpoint alone (ucx_flush_peers) completes while rank 2 sleeps; the worker's flush then
 * reports after a third of the timeout (3 s) that the endpoint to rank 2, and only that
 * one, is busy, and completes once rank 2 wakes. */
static void body_flush_report(int rank, int nranks, void *arg)
{
    const size_t len = 65536, size = RT_FLAGS_BYTES + (size_t)nranks * len;
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    ucx_region_t *reg;
    unsigned char *buf, *src = malloc(len);
    deadline_t dl;
    double t0;

    (void)arg;
    ucx_test_env();
    setenv("SYMCOLL_NET_PROTOCOL", "put", 1);
    setenv("SYMCOLL_TIMEOUT", "9", 1);
    comm = harness_comm_create();
    ucx = comm->ucx;
    buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(buf != MAP_FAILED && src);
    ck_assert_int_eq(ucx_region_create(ucx, buf, size, &reg), SYMCOLL_OK);
    dl = deadline_make(60, NULL);
    /* a first put fetches the peer's rkey, which needs the peer's progress: every rank
     * puts to every other once while all progress, so that below only the flush waits */
    for (int r = 0; r < nranks; r++)
        if (ucx_is_remote(ucx, r))
            ck_assert_int_eq(ucx_put_flag(ucx, r, 1, (uint64_t *)(buf + 1024 + 64 * rank)),
                             SYMCOLL_OK);
    for (int r = 0; r < nranks; r++)
        if (ucx_is_remote(ucx, r))
            ck_assert_int_eq(ucx_wait_flag(ucx, (uint64_t *)(buf + 1024 + 64 * r), 1, &dl),
                             SYMCOLL_OK);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    if (rank == 0) {
        char line[512], found[512] = "";
        FILE *tmp = tmpfile();
        int saved = dup(STDERR_FILENO);
        ucx_req_t req;
        symcoll_status_t st;

        for (size_t i = 0; i < len; i++)
            src[i] = rt_byte(0, 1, i);
        /* rank 2 is about to sleep */
        ck_assert_int_eq(ucx_wait_flag(ucx, (uint64_t *)(buf + 64), 1, &dl), SYMCOLL_OK);
        t0 = time_now();
        for (int r = 1; r < nranks; r++)
            ck_assert_int_eq(ucx_put(ucx, r, src, len, buf + RT_FLAGS_BYTES, &req), SYMCOLL_OK);
        ck_assert_int_eq(ucx_flush_peers(ucx, (const int[]){0, 1}, 2, &dl), SYMCOLL_OK);
        if (time_now() - t0 > 4)
            harness_fail("the flush of rank 1's endpoint took %.1f s: it waited for rank 2",
                         time_now() - t0);
        ck_assert(tmp && saved >= 0);
        fflush(stderr);
        ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
        st = ucx_flush(ucx, &dl);
        fflush(stderr);
        ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
        close(saved);
        rewind(tmp);
        while (fgets(line, sizeof(line), tmp)) {
            fputs(line, stderr);
            if (strstr(line, "endpoints still busy"))
                snprintf(found, sizeof(found), "%s", line);
        }
        fclose(tmp);
        ck_assert_int_eq(st, SYMCOLL_OK);
        if (!strstr(found, "to rank(s): 2\n"))
            harness_fail("the lasting flush did not name rank 2 alone: \"%s\"", found);
        for (int r = 1; r < nranks; r++)
            ck_assert_int_eq(ucx_put_flag(ucx, r, 1, (uint64_t *)buf), SYMCOLL_OK);
    } else {
        if (rank == 2) {
            ck_assert_int_eq(ucx_put_flag(ucx, 0, 1, (uint64_t *)(buf + 64)), SYMCOLL_OK);
            sleep(8);
        }
        ck_assert_int_eq(ucx_wait_flag(ucx, (uint64_t *)buf, 1, &dl), SYMCOLL_OK);
        for (size_t i = 0; i < len; i++)
            if (buf[RT_FLAGS_BYTES + i] != rt_byte(0, 1, i))
                harness_fail("byte %zu from rank 0 is %u", i, buf[RT_FLAGS_BYTES + i]);
    }
    ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_barrier(comm, NULL), SYMCOLL_OK);
    ucx_region_release(ucx, reg);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    munmap(buf, size);
    free(src);
}

RUN_CASE(test_flush_report_3x3, 3, 3, body_flush_report, NULL)

/* ---- a dead peer ends a wait with an error ------------------------------------------ */

static void body_dead_peer(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    ucx_region_t *reg;
    static uint64_t flags[64] __attribute__((aligned(4096)));
    deadline_t dl;
    double t0;
    symcoll_status_t status;
    (void)arg;

    ucx_test_env();
    comm = harness_comm_create();
    ucx = comm->ucx;
    ck_assert_int_eq(ucx_region_create(ucx, flags, sizeof(flags), &reg), SYMCOLL_OK);
    if (rank == nranks - 1)
        _exit(0); /* dies without a word: sockets close, nothing is flushed */
    /* the flag never comes: the endpoint's error must end the wait long before it */
    t0 = time_now();
    dl = deadline_make(60, NULL);
    status = ucx_wait_flag(ucx, &flags[nranks - 1], 1, &dl);
    ck_assert_msg(status == SYMCOLL_ERR_PEER_FAILED, "wait returned %s",
                  symcoll_status_string(status));
    ck_assert_msg(time_now() - t0 < 30, "error took %.1f s", time_now() - t0);
    /* and a put to it fails instead of hanging */
    status = ucx_put_flag(ucx, nranks - 1, 1, &flags[rank]);
    ck_assert(status == SYMCOLL_OK || status == SYMCOLL_ERR_PEER_FAILED);
    _exit(0); /* the bootstrap lost a rank: destroy is not the subject here */
}

RUN_CASE(test_dead_peer, 2, 2, body_dead_peer, NULL)

/* ---- communicators share the process's UCP context -----------------------------------
 * Two communicators of one configuration use one context, a third with another TCP segment
 * size gets its own; each keeps working while the others go, in any order, and a context
 * made again after the last went works too. */

static void shared_allreduce(symcoll_comm_h comm, int nranks)
{
    double v[1000];

    for (int i = 0; i < 1000; i++)
        v[i] = i;
    ck_assert_int_eq(symcoll_allreduce(v, v, 1000, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL),
                     SYMCOLL_OK);
    for (int i = 0; i < 1000; i++)
        if (v[i] != (double)i * nranks)
            harness_fail("element %d is %g, expected %g", i, v[i], (double)i * nranks);
}

static void body_shared_context(int rank, int nranks, void *arg)
{
    symcoll_comm_h a, b, c, d;

    (void)rank;
    (void)arg;
    ucx_test_env();
    a = harness_comm_create();
    b = harness_comm_create();
    setenv("SYMCOLL_NET_TCP_SEG_SIZE", "128K", 1);
    c = harness_comm_create();
    unsetenv("SYMCOLL_NET_TCP_SEG_SIZE");
    ck_assert(ucx_shares_context(a->ucx, b->ucx));
    ck_assert(!ucx_shares_context(a->ucx, c->ucx));
    shared_allreduce(b, nranks);
    shared_allreduce(a, nranks);
    shared_allreduce(c, nranks);
    ck_assert_int_eq(symcoll_comm_destroy(a), SYMCOLL_OK);
    shared_allreduce(b, nranks);
    shared_allreduce(c, nranks);
    ck_assert_int_eq(symcoll_comm_destroy(b), SYMCOLL_OK);
    shared_allreduce(c, nranks);
    ck_assert_int_eq(symcoll_comm_destroy(c), SYMCOLL_OK);
    d = harness_comm_create();
    shared_allreduce(d, nranks);
    ck_assert_int_eq(symcoll_comm_destroy(d), SYMCOLL_OK);
}

RUN_CASE(test_shared_context_2x2, 4, 2, body_shared_context, NULL)

/* ---- endpoints on need ----------------------------------------------------------------
 * Creation connects a rank to its partner on the next node and to the ranks whose partner
 * it is (one each way with nodes of equal size); all-reduces connect only the peers their
 * algorithms exchange with, never every rank of the other nodes. */

static void body_on_need(int rank, int nranks, void *arg)
{
    size_t sizes[] = {8, 64 * 1024, 4 * 1024 * 1024};
    int nremote = nranks - nranks / *(int *)arg, after;
    char *v = malloc(sizes[2]);
    symcoll_comm_h comm;

    ck_assert_ptr_nonnull(v);
    ucx_test_env();
    comm = harness_comm_create();
    ck_assert_int_le(ucx_num_endpoints(comm->ucx), 2);
    ck_assert_int_ge(ucx_num_endpoints(comm->ucx), 1);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        memset(v, 1, sizes[i]);
        ck_assert_int_eq(
            symcoll_allreduce(v, v, sizes[i], SYMCOLL_UINT8, SYMCOLL_SUM, comm, NULL),
            SYMCOLL_OK);
        ck_assert_int_eq(v[sizes[i] - 1], (char)nranks);
    }
    after = ucx_num_endpoints(comm->ucx);
    if (getenv("UCX_TEST_VERBOSE"))
        printf("rank %d: %d endpoints of %d remote ranks\n", rank, after, nremote);
    ck_assert_int_lt(after, nremote);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(v);
}

static int on_need_nodes = 8;
RUN_CASE(test_on_need_16x8, 16, 8, body_on_need, &on_need_nodes)

/* ---- rkeys on need ------------------------------------------------------------------
 * A pool growth is a vote (no round of it carries more than a few values), and a rank
 * asks for the rkeys of the regions it puts into, of the peer it puts into, once each:
 * here one region for the data and one for the flag, of the next remote rank only. */

static void body_rkeys_on_need(int rank, int nranks, void *arg)
{
    const size_t chunk = 4096, big = 64u << 20;
    symcoll_pool_attr_t pa;
    uint64_t growths;
    bootstrap_stats_t s0, s1;
    uint64_t asked, answered;
    symcoll_comm_h comm;
    ucx_ctx_t *ucx;
    unsigned char *flags, *data, *src = malloc(chunk);
    int next = -1, prev = -1, nnodes = *(const int *)arg;
    deadline_t dl;

    ucx_test_env();
    setenv("SYMCOLL_NET_PROTOCOL", "put", 1);
    comm = harness_comm_create();
    ucx = comm->ucx;
    ck_assert(src && ucx);
    /* the pool's first segment; then a buffer that must grow it */
    ck_assert_int_eq(symcoll_mem_alloc(comm, 4096, SYMCOLL_MEM_HOST, (void **)&flags),
                     SYMCOLL_OK);
    memset(flags, 0, 4096);
    pa.field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS;
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &pa), SYMCOLL_OK);
    growths = pa.growths;
    bootstrap_stats(comm->bootstrap, &s0);
    ck_assert_int_eq(symcoll_mem_alloc(comm, big, SYMCOLL_MEM_HOST, (void **)&data), SYMCOLL_OK);
    bootstrap_stats(comm->bootstrap, &s1);
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &pa), SYMCOLL_OK);
    ck_assert_uint_eq(pa.growths, growths + 1);
    if (getenv("UCX_TEST_VERBOSE"))
        fprintf(stderr, "rank %d: growth: %llu bytes received in %llu rounds of %llu exchanges\n", rank,
               (unsigned long long)(s1.tcp_bytes_recv - s0.tcp_bytes_recv),
               (unsigned long long)(s1.rounds - s0.rounds),
               (unsigned long long)(s1.exchanges - s0.exchanges));
    ck_assert_uint_gt(s1.rounds, s0.rounds);
    ck_assert_uint_le(s1.tcp_bytes_recv - s0.tcp_bytes_recv, 128 * (s1.rounds - s0.rounds));
    /* flags zeroed everywhere before anyone puts one (the bootstrap's barrier: a
     * symcoll_barrier across nodes would put flags, and ask for rkeys, itself) */
    ck_assert_int_eq(bootstrap_barrier(comm->bootstrap), SYMCOLL_OK);
    /* (a peer that left the barrier first may already be asking us) */
    ucx_rkey_counts(ucx, &asked, &answered);
    ck_assert_uint_eq(asked, 0);

    /* the smallest shift that takes every rank to another node: next and prev are then
     * inverse, and each rank is put into by prev alone */
    for (int k = 1; k < nranks && next < 0; k++) {
        bool all = true;
        for (int r = 0; r < nranks && all; r++)
            all = harness_node_of(r, nranks, nnodes) !=
                  harness_node_of((r + k) % nranks, nranks, nnodes);
        if (all) {
            next = (rank + k) % nranks;
            prev = (rank - k + nranks) % nranks;
        }
    }
    ck_assert(next >= 0 && prev >= 0);
    dl = deadline_make(60, NULL);
    for (int round = 1; round <= 3; round++) {
        ucx_req_t req;
        /* into the last chunk of next's big buffer: the growth's segment */
        unsigned char *dst = data + big - (size_t)(round + 1) * chunk;
        for (size_t i = 0; i < chunk; i++)
            src[i] = rt_byte(rank, round, i);
        ck_assert_int_eq(ucx_put(ucx, next, src, chunk, dst, &req), SYMCOLL_OK);
        ck_assert_int_eq(ucx_fence(ucx), SYMCOLL_OK);
        ck_assert_int_eq(ucx_put_flag(ucx, next, (uint64_t)round, (uint64_t *)flags),
                         SYMCOLL_OK);
        ck_assert_int_eq(ucx_wait_flag(ucx, (uint64_t *)flags, (uint64_t)round, &dl),
                         SYMCOLL_OK);
        for (size_t i = 0; i < chunk; i++)
            if (dst[i] != rt_byte(prev, round, i))
                harness_fail("round %d: byte %zu from rank %d is %u", round, i, prev, dst[i]);
        ck_assert_int_eq(ucx_wait_all(ucx, &dl), SYMCOLL_OK);
    }
    ucx_rkey_counts(ucx, &asked, &answered);
    if (getenv("UCX_TEST_VERBOSE"))
        fprintf(stderr, "rank %d: asked %llu, answered %llu\n", rank, (unsigned long long)asked,
               (unsigned long long)answered);
    ck_assert_uint_eq(asked, 2);    /* next's data segment and its first segment */
    ck_assert_uint_eq(answered, 2); /* prev's questions: the same two of ours */
    ck_assert_int_eq(bootstrap_barrier(comm->bootstrap), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, data), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_free(comm, flags), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
    free(src);
}

static int rkeys_nodes = 6;
RUN_CASE(test_rkeys_on_need_12x6, 12, 6, body_rkeys_on_need, &rkeys_nodes)

/* Lines of ucp_ep_print_info as UCX 1.22 prints them: the first three as logged on the
 * GPU machine (raw logs on the results branch), the others shaped like them. */
static const struct {
    const char *line, *name;
    bool lane, host_rma, cuda_rma, driver;
} lane_lines[] = {
    {"lane[0]:  2:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] seg 4294967295 am "
     "am_bw#0 keepalive wireup",
     "tcp/lo.0", true, false, false, true},
    {"lane[1]:  4:cuda_ipc/cuda.0 md[3]         -> md[3]/cuda_ipc/sysdev[0] seg 4294967295 "
     "rma_bw#0",
     "cuda_ipc/cuda.0", true, false, true, true},
    {"lane[0]:  2:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] seg 4294967295 am "
     "keepalive wireup",
     "tcp/lo.0", true, false, false, true},
    {"lane[1]:  3:rc_mlx5/mlx5_0:1 md[2]        -> md[2]/ib/sysdev[255] rma_bw#0 amo#0",
     "rc_mlx5/mlx5_0:1", true, true, true, false},
    {"lane[2]: 12:dc_mlx5/mlx5_1:1 md[2]        -> md[2]/ib/sysdev[255] rma_bw#1",
     "dc_mlx5/mlx5_1:1", true, true, true, false},
    {"lane[0]:  1:ud_mlx5/mlx5_0:1 md[2]        -> md[2]/ib/sysdev[255] am am_bw#0 wireup",
     "ud_mlx5/mlx5_0:1", true, false, false, false},
    {"lane[3]:  5:cuda_copy/cuda md[4]          -> md[4]/cuda_cpy/sysdev[255] rma_bw#2",
     "cuda_copy/cuda", true, false, false, true},
    {"lane[3]:  6:gdr_copy/gdr md[5]            -> md[5]/gdr_copy/sysdev[255] rma_bw#2",
     "gdr_copy/gdr", true, false, false, false},
    {"lane[1]:  3:rocm_ipc/rocm md[3]           -> md[3]/rocm_ipc/sysdev[0] rma_bw#0",
     "rocm_ipc/rocm", true, false, false, false},
    /* an interface whose name holds "rc_" is no InfiniBand transport */
    {"lane[1]:  2:tcp/ib_rc_0 md[1]             -> md[1]/tcp/sysdev[255] rma_bw#0",
     "tcp/ib_rc_0", true, true, false, true},
    {"lane[1]:  2:sysv/memory md[0]             -> md[0]/sysv/sysdev[255] rma_bw#0",
     "sysv/memory", true, true, false, false},
    /* no lane, or no transport in it */
    {"# ep config: 0 lanes, rma_bw: 1", NULL, false, false, false, false},
    {"lane[1]: md[3] rma_bw#0", NULL, false, false, false, false},
    {"", NULL, false, false, false, false},
};

START_TEST(test_lane_parse)
{
    for (size_t i = 0; i < sizeof(lane_lines) / sizeof(lane_lines[0]); i++) {
        char name[64] = "untouched";
        bool host = true, cuda = true, drv = true;
        bool lane = ucx_lane_parse(lane_lines[i].line, name, sizeof(name), &host, &cuda, &drv);
        ck_assert_msg(lane == lane_lines[i].lane, "line %zu: lane %d", i, lane);
        if (lane)
            ck_assert_str_eq(name, lane_lines[i].name);
        ck_assert_msg(host == lane_lines[i].host_rma && cuda == lane_lines[i].cuda_rma &&
                          drv == lane_lines[i].driver,
                      "line %zu (%s): host_rma %d cuda_rma %d driver %d", i, lane_lines[i].line,
                      host, cuda, drv);
    }
    /* a name longer than the room: no lane, nothing claimed */
    {
        char small[8];
        bool host = true, cuda = true, drv = true;
        ck_assert(
            !ucx_lane_parse(lane_lines[3].line, small, sizeof(small), &host, &cuda, &drv));
        ck_assert(!host && !cuda && !drv);
    }
}
END_TEST

/* Whole listings of one endpoint, as ucp_ep_print_info prints them (header, lanes,
 * summary lines; the first as logged on the GPU machine, the others shaped like it):
 * what the endpoint does, and how many lines name a lane. */
static const struct {
    const char *listing;
    bool host_rma, cuda_rma, driver;
    int lanes;
} ep_listings[] = {
    /* TCP with cuda_ipc beside it: CUDA RMA, through the driver */
    {"#\n# UCP endpoint\n#\n#               peer: <no debug data>\n"
     "#                 lane[0]:  2:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] "
     "seg 4294967295 am am_bw#0 keepalive wireup\n"
     "#                 lane[1]:  4:cuda_ipc/cuda.0 md[3]         -> md[3]/cuda_ipc/sysdev[0] "
     "seg 4294967295 rma_bw#0\n#\n#                tag_send: 0..<egr/short>..8185..\n",
     false, true, true, 2},
    /* TCP alone: its puts are emulated, and staged through cuda_copy */
    {"# lane[0]:  2:tcp/lo.0 md[1] -> md[1]/tcp/sysdev[255] am am_bw#0 keepalive wireup\n",
     false, false, true, 1},
    /* InfiniBand: network RMA into CUDA memory, messages over ud_: no driver */
    {"# lane[0]:  1:ud_mlx5/mlx5_0:1 md[2] -> md[2]/ib/sysdev[255] am am_bw#0 wireup\n"
     "# lane[1]:  3:rc_mlx5/mlx5_0:1 md[2] -> md[2]/ib/sysdev[255] rma_bw#0 amo#0\n"
     "#      rma_bw: mds [2] rndv_rkey_size 19\n",
     true, true, false, 2},
    /* the same with a cuda_copy lane beside it: the driver again */
    {"# lane[0]:  1:ud_mlx5/mlx5_0:1 md[2] -> md[2]/ib/sysdev[255] am am_bw#0 wireup\n"
     "# lane[1]:  3:rc_mlx5/mlx5_0:1 md[2] -> md[2]/ib/sysdev[255] rma_bw#0 amo#0\n"
     "# lane[2]:  5:cuda_copy/cuda md[4] -> md[4]/cuda_cpy/sysdev[255] rma_bw#1\n",
     true, true, true, 3},
    /* InfiniBand messages only, no RMA lane: UCX stages CUDA memory with cuda_copy */
    {"# lane[0]:  1:ud_mlx5/mlx5_0:1 md[2] -> md[2]/ib/sysdev[255] am am_bw#0 wireup\n", false,
     false, true, 1},
    /* an interface named like rc_ is TCP */
    {"# lane[0]:  2:tcp/ib_rc_0 md[1] -> md[1]/tcp/sysdev[255] am rma_bw#0 wireup\n", true,
     false, true, 1},
    /* nothing read: nothing claimed, and the driver assumed */
    {"", false, false, true, 0},
};

static void count_lane(void *arg, const char *line, const char *name)
{
    (void)line;
    if (name)
        ++*(int *)arg;
}

START_TEST(test_ep_lanes)
{
    for (size_t i = 0; i < sizeof(ep_listings) / sizeof(ep_listings[0]); i++) {
        char *text = strdup(ep_listings[i].listing);
        ucx_ep_lanes_t out = {true, true, false};
        int lanes = 0;

        ck_assert_ptr_nonnull(text);
        ucx_ep_lanes_read(text, &out, count_lane, &lanes);
        ck_assert_msg(out.host_rma == ep_listings[i].host_rma &&
                          out.cuda_rma == ep_listings[i].cuda_rma &&
                          out.driver == ep_listings[i].driver && lanes == ep_listings[i].lanes,
                      "listing %zu: host_rma %d cuda_rma %d driver %d, %d lanes", i,
                      out.host_rma, out.cuda_rma, out.driver, lanes);
        free(text);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ucx");
    /* before any UCX library code reads its configuration */
    ucx_test_env();
    TCase *tc = tcase_create("ucx");

    tcase_set_timeout(tc, RUN_TIMEOUT * 2 + 30);
    tcase_add_test(tc, test_lane_parse);
    tcase_add_test(tc, test_ep_lanes);
    tcase_add_test(tc, test_presence);
    tcase_add_test(tc, test_roundtrip_2x1);
    tcase_add_test(tc, test_roundtrip_2x1_put);
    tcase_add_test(tc, test_roundtrip_3x2);
    tcase_add_test(tc, test_flush_report_3x3);
    tcase_add_test(tc, test_dead_peer);
    tcase_add_test(tc, test_shared_context_2x2);
    tcase_add_test(tc, test_on_need_16x8);
    tcase_add_test(tc, test_rkeys_on_need_12x6);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
