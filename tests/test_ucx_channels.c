/* Tests of UCX channels (more workers of one context, ucx_channel_create) between
 * simulated nodes over TCP loopback: concurrent all-reduces, one thread per channel.
 * Each channel's thread runs all-reduces of its own, in place
 * on host pool buffers (as the staging channels of CUDA memory do), at sizes that take
 * recursive doubling, the ring and (2 ranks a node) hier, and checks every element against the
 * exact sum. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/net/net.h"
#include "core/core.h"
#include "harness.h"
#include "topo/topo.h"
#include "ucx/ucx.h"
#include "ucx_testlib.h"

#define CHANNELS 3
#define CHANNEL_MAX_BYTES (1024 * 1024)

/* The selector's algorithm for a channel's host all-reduce of bytes (as CUDA's channels ask).
 */
static topo_algo_t channel_algo(comm_t *comm, size_t bytes)
{
    return topo_select_algo(&comm->topo->select_cfg, &comm->topo->shape[SYMCOLL_MEM_HOST],
                            SYMCOLL_MEM_HOST, bytes);
}
#define CHANNEL_ROUNDS 12

/* What body_channels runs (its harness argument; NULL: flat calls, protocol auto). */
typedef struct channels_opts {
    const char *protocol; /* SYMCOLL_NET_PROTOCOL; NULL: auto */
    bool group;           /* algo_net_group_allreduce_on: among the ranks of a local index */
    bool mix;             /* group: every other round a flat call on the same channel */
} channels_opts_t;

typedef struct channel_run {
    comm_t *comm;
    ucx_ctx_t *ucx;
    float *buf;
    int channel, rank, nranks;
    bool group, mix; /* channels_opts_t */
    symcoll_status_t status;
    char why[160];
} channel_run_t;

static float channel_value(int rank, int channel, int round, size_t i)
{
    return (float)((rank + 1) * 3 + channel * 5 + round + (int)(i % 97));
}

static void *channel_main(void *arg)
{
    channel_run_t *r = arg;
    net_sig_t sig = {0, SYMCOLL_FLOAT32, SYMCOLL_SUM, SYMCOLL_MEM_HOST, 0, 0};
    static const size_t counts[] = {1, 7, 4099, 60000, CHANNEL_MAX_BYTES / 4, 100003, 230000};

    for (int round = 0; round < CHANNEL_ROUNDS && r->status == SYMCOLL_OK; round++) {
        const topo_t *t = r->comm->topo;
        size_t count = counts[(round + r->channel) % 7];
        int me = t->rank_local_rank[r->rank];
        bool group = r->group && !(r->mix && round % 2);
        if (group) {
            /* as the slices of the hierarchical algorithm on CUDA memory: sizes differ by
             * local index, and some are empty (those groups make no call at all) */
            count = me == 0 && round % 3 == 0 ? 0 : count - (count > 1 ? (size_t)me : 0);
            if (count == 0)
                continue;
        }
        for (size_t i = 0; i < count; i++)
            r->buf[i] = channel_value(r->rank, r->channel, round, i);
        sig.count = count;
        if (group)
            r->status =
                algo_net_group_allreduce_on(r->comm, r->ucx, r->comm->pools[SYMCOLL_MEM_HOST],
                                            r->buf, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, &sig);
        else
            r->status = algo_net_allreduce_on(r->comm, r->ucx, r->comm->pools[SYMCOLL_MEM_HOST],
                                              channel_algo(r->comm, count * 4), r->buf, r->buf,
                                              count, SYMCOLL_FLOAT32, SYMCOLL_SUM, &sig);
        if (r->status != SYMCOLL_OK) {
            snprintf(r->why, sizeof(r->why), "channel %d round %d: %s", r->channel, round,
                     symcoll_status_string(r->status));
            break;
        }
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int k = 0; k < r->nranks; k++)
                if (!group || t->rank_local_rank[k] == me)
                    want += channel_value(k, r->channel, round, i);
            if (r->buf[i] != want) {
                snprintf(r->why, sizeof(r->why),
                         "channel %d round %d: element %zu of %zu is %g, expected %g",
                         r->channel, round, i, count, (double)r->buf[i], (double)want);
                r->status = SYMCOLL_ERR_INTERNAL;
                break;
            }
        }
    }
    return NULL;
}

/* A host pool buffer and a UCX channel with its reserved state for each of CHANNELS threads. */
static pool_t *channels_setup(comm_t *comm, channel_run_t *runs, void **bufs, int rank,
                              int nranks)
{
    pool_t *pool;

    ck_assert_ptr_nonnull(comm->ucx);
    for (int l = 0; l < CHANNELS; l++)
        ck_assert_int_eq(symcoll_mem_alloc(comm, CHANNEL_MAX_BYTES, SYMCOLL_MEM_HOST, &bufs[l]),
                         SYMCOLL_OK);
    pool = comm->pools[SYMCOLL_MEM_HOST];
    for (int l = 0; l < CHANNELS; l++) {
        net_state_t *st;
        memset(&runs[l], 0, sizeof(runs[l]));
        runs[l].comm = comm;
        runs[l].buf = bufs[l];
        runs[l].channel = l;
        runs[l].rank = rank;
        runs[l].nranks = nranks;
        ck_assert_int_eq(ucx_channel_create(comm->ucx, &runs[l].ucx), SYMCOLL_OK);
        ck_assert_int_eq(algo_net_state_get_on(comm, runs[l].ucx, pool, &st), SYMCOLL_OK);
        ck_assert_int_eq(algo_net_reserve_upto(st, CHANNEL_MAX_BYTES, true, TOPO_ALGO_AUTO),
                         SYMCOLL_OK);
    }
    return pool;
}

static void body_channels(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    channel_run_t runs[CHANNELS];
    pthread_t th[CHANNELS];
    void *bufs[CHANNELS];
    pool_t *pool;

    const channels_opts_t *o = arg;

    ucx_test_env();
    setenv("SYMCOLL_NET_PROTOCOL", o && o->protocol ? o->protocol : "auto", 1);
    /* small ring chunks: several chunks per channel call even at 1 MiB */
    setenv("SYMCOLL_NET_CHUNK_SIZE", "64K", 1);
    comm = harness_comm_create();
    pool = channels_setup(comm, runs, bufs, rank, nranks);
    for (int l = 0; l < CHANNELS; l++) {
        runs[l].group = o && o->group;
        runs[l].mix = o && o->mix;
        ck_assert_int_eq(pthread_create(&th[l], NULL, channel_main, &runs[l]), 0);
    }
    for (int l = 0; l < CHANNELS; l++)
        pthread_join(th[l], NULL);
    for (int l = 0; l < CHANNELS; l++)
        if (runs[l].status != SYMCOLL_OK)
            harness_fail("%s", runs[l].why);
    /* the communicator's own context still works after the channels ran */
    {
        float *b = bufs[0];
        for (int i = 0; i < 1000; i++)
            b[i] = (float)(rank + i);
        ck_assert_int_eq(
            symcoll_allreduce(b, b, 1000, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, NULL),
            SYMCOLL_OK);
        for (int i = 0; i < 1000; i++)
            ck_assert_float_eq(b[i], (float)(nranks * i + nranks * (nranks - 1) / 2));
    }
    for (int l = CHANNELS - 1; l >= 0; l--)
        algo_net_channel_destroy(runs[l].ucx, pool);
    /* a channel index given back is taken again */
    {
        ucx_ctx_t *again;
        ck_assert_int_eq(ucx_channel_create(comm->ucx, &again), SYMCOLL_OK);
        ucx_destroy(again);
    }
    for (int l = 0; l < CHANNELS; l++)
        ck_assert_int_eq(symcoll_mem_free(comm, bufs[l]), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

static const channels_opts_t channels_put = {"put", false, false};
static const channels_opts_t channels_group = {NULL, true, false};
static const channels_opts_t channels_group_put = {"put", true, false};
static const channels_opts_t channels_group_mixed = {NULL, true, true};

RUN_CASE(test_channels_2x1, 2, 2, body_channels, NULL)
RUN_CASE(test_channels_3x1_put, 3, 3, body_channels, (void *)&channels_put)
RUN_CASE(test_channels_2x2, 4, 2, body_channels, NULL)

/* all-reduces among the ranks of one local index, one a node (the step across nodes of
 * the hierarchical algorithm on CUDA memory), of different sizes per local index and
 * empty for some, on 2 x 2 (rd and ring between 2 nodes) and 3 x 2 (3 nodes) */
RUN_CASE(test_channels_group_2x2, 4, 2, body_channels, (void *)&channels_group)
RUN_CASE(test_channels_group_3x2, 6, 3, body_channels, (void *)&channels_group_put)

/* group and flat calls on the same channels, the flat ones by rd and ring (not hier, whose
 * areas only ranks of one local index share): the ranks make different numbers of group
 * calls, and the flat calls' receive areas must still agree */
START_TEST(test_channels_group_mixed_2x2)
{
    setenv("SYMCOLL_HIER_MIN", "1G", 1);
    ck_assert_int_eq(
        harness_run(4, 2, RUN_TIMEOUT, body_channels, (void *)&channels_group_mixed), 0);
}
END_TEST

/* A peer dies while every channel waits on it: each channel's all-reduce ends with an error
 * (its own endpoints fail), long before the timeout, and the channels close without hanging. */
static void *channel_dead_main(void *arg)
{
    channel_run_t *r = arg;
    net_sig_t sig = {
        CHANNEL_MAX_BYTES / 4, SYMCOLL_FLOAT32, SYMCOLL_SUM, SYMCOLL_MEM_HOST, 0, 0};
    double t0 = time_now();

    for (int round = 0; round < 100000 && r->status == SYMCOLL_OK; round++)
        r->status =
            algo_net_allreduce_on(r->comm, r->ucx, r->comm->pools[SYMCOLL_MEM_HOST],
                                  channel_algo(r->comm, CHANNEL_MAX_BYTES), r->buf, r->buf,
                                  CHANNEL_MAX_BYTES / 4, SYMCOLL_FLOAT32, SYMCOLL_SUM, &sig);
    snprintf(r->why, sizeof(r->why), "channel %d: %s after %.1f s", r->channel,
             symcoll_status_string(r->status), time_now() - t0);
    return NULL;
}

static void body_channels_dead_peer(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    channel_run_t runs[CHANNELS];
    pthread_t th[CHANNELS];
    void *bufs[CHANNELS];
    pool_t *pool;
    double t0;

    (void)arg;
    ucx_test_env();
    setenv("SYMCOLL_TIMEOUT", "60", 1);
    comm = harness_comm_create();
    pool = channels_setup(comm, runs, bufs, rank, nranks);
    if (rank == nranks - 1) {
        usleep(200000); /* the others' channels are busy with it by now */
        _exit(0);       /* dies without a word: sockets close, nothing is flushed */
    }
    t0 = time_now();
    for (int l = 0; l < CHANNELS; l++)
        ck_assert_int_eq(pthread_create(&th[l], NULL, channel_dead_main, &runs[l]), 0);
    for (int l = 0; l < CHANNELS; l++)
        pthread_join(th[l], NULL);
    for (int l = 0; l < CHANNELS; l++) {
        fprintf(stderr, "rank %d: %s\n", rank, runs[l].why);
        if (runs[l].status != SYMCOLL_ERR_PEER_FAILED && runs[l].status != SYMCOLL_ERR_ABORTED)
            harness_fail("%s (expected %s)", runs[l].why,
                         symcoll_status_string(SYMCOLL_ERR_PEER_FAILED));
    }
    if (time_now() - t0 > 30)
        harness_fail("the channels took %.1f s to see the dead peer", time_now() - t0);
    t0 = time_now();
    for (int l = CHANNELS - 1; l >= 0; l--)
        algo_net_channel_destroy(runs[l].ucx, pool);
    if (time_now() - t0 > 30)
        harness_fail("closing the channels took %.1f s", time_now() - t0);
    _exit(0); /* the bootstrap lost a rank: destroy is not the subject here */
}

RUN_CASE(test_channels_dead_peer, 2, 2, body_channels_dead_peer, NULL)

/* flat algorithms below SYMCOLL_HIER_MIN, hier above: the reserved scratch covers both */
START_TEST(test_channels_2x2_hier_min)
{
    setenv("SYMCOLL_NET_RD_MAX", "4K", 1);
    setenv("SYMCOLL_HIER_MIN", "1M", 1);
    ck_assert_int_eq(harness_run(4, 2, RUN_TIMEOUT, body_channels, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ucx_channels");
    /* before any UCX library code reads its configuration */
    ucx_test_env();
    TCase *tc = tcase_create("ucx_channels");

    tcase_set_timeout(tc, RUN_TIMEOUT * 2 + 30);
    tcase_add_test(tc, test_channels_2x1);
    tcase_add_test(tc, test_channels_3x1_put);
    tcase_add_test(tc, test_channels_2x2);
    tcase_add_test(tc, test_channels_2x2_hier_min);
    tcase_add_test(tc, test_channels_group_2x2);
    tcase_add_test(tc, test_channels_group_mixed_2x2);
    tcase_add_test(tc, test_channels_group_3x2);
    tcase_add_test(tc, test_channels_dead_peer);
    suite_add_tcase(s, tc);
    return harness_main(s);
}
