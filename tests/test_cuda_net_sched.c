/* The staging protocol of CUDA memory across nodes without a GPU: the stream commands
 * cnet_steps queues for each call are executed by simulated streams, in random
 * interleavings with simulated channels that follow the channels' rules (channel i takes chunks
 * k with k mod channels == i of each call, calls in order; reduces chunk g once "ready" reached
 * g + 1; then raises "done"), with 1 to 4 channels (3 to 9 slots). Every
 * step checks that the slot holds what the actor expects, and the run must end with all
 * work done (a stall is a deadlock). The GPU tests across simulated nodes
 * (test_cuda_net) run the real thing on the GPU machine. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "algo/cuda_net/cuda_net_sched.h"
#include "harness.h"

#define MAX_CMDS 4096
#define MAX_OPS 256
#define MAX_STREAMS 3
#define MAX_CHANNELS 4

/* what a slot holds */
enum { SLOT_FREE, SLOT_IN, SLOT_REDUCED };

typedef struct sim_cmd {
    cnet_cmd_t c;
    uint64_t g; /* chunk number */
} sim_cmd_t;

typedef struct sim {
    int nchannels, nslots;
    uint32_t word[CNET_NWORDS][CNET_SLOTS_MAX];
    int state[CNET_SLOTS_MAX];
    uint64_t holds[CNET_SLOTS_MAX]; /* chunk number in the slot (SLOT_IN, SLOT_REDUCED) */
    sim_cmd_t cmds[MAX_STREAMS][MAX_CMDS];
    int ncmds[MAX_STREAMS], pc[MAX_STREAMS];
    uint64_t op_first[MAX_OPS], op_n[MAX_OPS];
    int nops;
    int op[MAX_CHANNELS];     /* channel l: at call op[l], */
    uint64_t k[MAX_CHANNELS]; /* chunk k[l] of it (one of its own, or past the end) */
    uint64_t reduced, copied_out;
    /* failure: after fail_after channel steps the communicator is broken; channels in failing[]
     * then give their chunks up (algo/cuda_net/cuda_net_channel.c: cnet_give_up_chunk), the
     * others keep reducing theirs */
    int steps, fail_after; /* fail_after < 0: never */
    bool failing[MAX_CHANNELS];
    uint64_t base; /* first chunk of the run */
    bool given_up[MAX_OPS * 24];
} sim_t;

typedef struct rec {
    sim_t *s;
    int stream;
    uint64_t first;
} rec_t;

static symcoll_status_t record(void *arg, const cnet_cmd_t *c)
{
    rec_t *r = arg;
    sim_t *s = r->s;
    int i = s->ncmds[r->stream]++;
    ck_assert_int_lt(i, MAX_CMDS);
    s->cmds[r->stream][i].c = *c;
    s->cmds[r->stream][i].g = r->first + c->k;
    return SYMCOLL_OK;
}

/* Queues a call of n chunks starting at chunk first on stream st. */
static void sim_call(sim_t *s, int st, uint64_t first, uint64_t n)
{
    rec_t r = {s, st, first};
    ck_assert_int_lt(s->nops, MAX_OPS);
    s->op_first[s->nops] = first;
    s->op_n[s->nops] = n;
    s->nops++;
    ck_assert_int_eq(cnet_steps(first, n, s->nslots, record, &r), SYMCOLL_OK);
}

/* One step of stream st; false if it is blocked or finished. */
static bool stream_step(sim_t *s, int st)
{
    sim_cmd_t *m;
    int slot;

    if (s->pc[st] >= s->ncmds[st])
        return false;
    m = &s->cmds[st][s->pc[st]];
    slot = m->c.slot;
    ck_assert_int_eq(slot, cnet_slot(m->g, s->nslots));
    switch (m->c.kind) {
    case CNET_CMD_WAIT:
        if (!cnet_reached(s->word[m->c.word][slot], m->c.value))
            return false;
        break;
    case CNET_CMD_COPY_IN:
        /* the slot's previous chunk must be out: nobody reads it any more */
        ck_assert_msg(s->state[slot] == SLOT_FREE, "copy in of chunk %llu over a busy slot %d",
                      (unsigned long long)m->g, slot);
        s->state[slot] = SLOT_IN;
        s->holds[slot] = m->g;
        break;
    case CNET_CMD_COPY_OUT:
        /* a chunk given up may go out unreduced (its call failed), but only its own */
        if (s->given_up[m->g - s->base]) {
            ck_assert_msg(s->holds[slot] == m->g,
                          "copy out of given-up chunk %llu from slot %d "
                          "holding %llu",
                          (unsigned long long)m->g, slot, (unsigned long long)s->holds[slot]);
            s->copied_out++;
            break;
        }
        ck_assert_msg(s->state[slot] == SLOT_REDUCED && s->holds[slot] == m->g,
                      "copy out of chunk %llu from slot %d holding %llu in state %d",
                      (unsigned long long)m->g, slot, (unsigned long long)s->holds[slot],
                      s->state[slot]);
        s->copied_out++;
        break;
    case CNET_CMD_WRITE:
        /* words only grow */
        ck_assert(cnet_reached(m->c.value, s->word[m->c.word][slot]));
        ck_assert_uint_eq(m->c.value, (uint32_t)(m->g + 1));
        if (m->c.word == CNET_FREED)
            s->state[slot] = SLOT_FREE;
        s->word[m->c.word][slot] = m->c.value;
        break;
    }
    s->pc[st]++;
    return true;
}

/* Channel l's next chunk at or after chunk k of call op (k may end past the call). */
static uint64_t channel_next(const sim_t *s, int l, int op, uint64_t k)
{
    uint64_t L = (uint64_t)s->nchannels;
    (void)op;
    while (k % L != (uint64_t)l)
        k++;
    return k;
}

/* One step of channel l; false if it waits or is finished. */
static bool channel_step(sim_t *s, int l)
{
    uint64_t g;
    int slot;

    while (s->op[l] < s->nops &&
           (s->k[l] = channel_next(s, l, s->op[l], s->k[l])) >= s->op_n[s->op[l]]) {
        s->op[l]++;
        s->k[l] = 0;
    }
    if (s->op[l] >= s->nops)
        return false;
    g = s->op_first[s->op[l]] + s->k[l];
    ck_assert_uint_eq(s->k[l] % (uint64_t)s->nchannels, (uint64_t)l);
    slot = cnet_slot(g, s->nslots);
    s->steps++;
    if (s->fail_after >= 0 && s->steps > s->fail_after && s->failing[l]) {
        /* give chunk g up: "done" without the data, once the slot's previous chunk is */
        uint64_t ns = (uint64_t)s->nslots;
        if (g >= ns && !cnet_reached(s->word[CNET_DONE][slot], (uint32_t)(g - ns + 1)))
            return false;
        s->given_up[g - s->base] = true;
        s->word[CNET_DONE][slot] = (uint32_t)(g + 1);
        s->reduced++;
        s->k[l]++;
        return true;
    }
    if (!cnet_reached(s->word[CNET_READY][slot], (uint32_t)(g + 1)))
        return false;
    ck_assert_msg(s->state[slot] == SLOT_IN && s->holds[slot] == g,
                  "channel %d at chunk %llu: slot %d holds %llu in state %d", l,
                  (unsigned long long)g, slot, (unsigned long long)s->holds[slot],
                  s->state[slot]);
    s->state[slot] = SLOT_REDUCED;
    s->word[CNET_DONE][slot] = (uint32_t)(g + 1);
    s->reduced++;
    s->k[l]++;
    return true;
}

/* Runs everything in an interleaving drawn from seed; fails on a stall. */
static void sim_run(sim_t *s, int nstreams, unsigned seed)
{
    uint64_t total = 0;
    for (int i = 0; i < s->nops; i++)
        total += s->op_n[i];
    for (;;) {
        int order[MAX_STREAMS + MAX_CHANNELS], n = nstreams + s->nchannels;
        bool moved = false;
        for (int i = 0; i < n; i++)
            order[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n && !moved; i++)
            moved = order[i] >= nstreams ? channel_step(s, order[i] - nstreams)
                                         : stream_step(s, order[i]);
        if (!moved)
            break;
    }
    for (int st = 0; st < nstreams; st++)
        ck_assert_msg(s->pc[st] == s->ncmds[st], "stream %d stalled at command %d of %d", st,
                      s->pc[st], s->ncmds[st]);
    ck_assert_uint_eq(s->reduced, total);
    ck_assert_uint_eq(s->copied_out, total);
}

/* Words as they are when chunk first is next (every earlier chunk went through). */
static void sim_init(sim_t *s, uint64_t first, int nchannels)
{
    uint64_t ns;

    memset(s, 0, sizeof(*s));
    s->fail_after = -1;
    s->base = first;
    s->nchannels = nchannels;
    s->nslots = cnet_nslots(nchannels);
    ns = (uint64_t)s->nslots;
    for (uint64_t g = first >= ns ? first - ns : 0; g < first; g++) {
        int slot = cnet_slot(g, s->nslots);
        s->word[CNET_READY][slot] = s->word[CNET_DONE][slot] = s->word[CNET_FREED][slot] =
            (uint32_t)(g + 1);
    }
}

/* Calls of random sizes on random streams, from chunk first. */
static void random_calls(uint64_t first, int nstreams, int nchannels, int ncalls, unsigned seed)
{
    sim_t *s = malloc(sizeof(*s));
    uint64_t g = first;
    unsigned r = seed * 7919u + 1;

    ck_assert_ptr_nonnull(s);
    sim_init(s, first, nchannels);
    for (int i = 0; i < ncalls; i++) {
        uint64_t n = 1 + rand_r(&r) % 21;
        sim_call(s, (int)(rand_r(&r) % (unsigned)nstreams), g, n);
        g += n;
    }
    sim_run(s, nstreams, seed);
    free(s);
}

START_TEST(t_one_stream)
{
    static const uint64_t sizes[] = {1, 2, 3, 4, 7, 1, 5, 3, 3, 12};
    sim_t *s = malloc(sizeof(*s));
    uint64_t g = 0;

    ck_assert_ptr_nonnull(s);
    for (int channels = 1; channels <= MAX_CHANNELS; channels++) {
        sim_init(s, 0, channels);
        g = 0;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            sim_call(s, 0, g, sizes[i]);
            g += sizes[i];
        }
        sim_run(s, 1, 1);
    }
    free(s);
}
END_TEST

/* Calls on several streams share the slots; any interleaving must work. */
START_TEST(t_streams_random)
{
    for (unsigned seed = 1; seed <= 400; seed++)
        random_calls(0, 1 + (int)(seed % MAX_STREAMS), 1 + (int)(seed / 3 % MAX_CHANNELS), 40,
                     seed);
}
END_TEST

/* Around 2^32 chunks the 32-bit words wrap; the slot of a chunk must not jump there. */
/* Some channels give up part way (the communicator broke) while the others still reduce
 * theirs: no stream may take a chunk out of its slot before its channel is done with it. */
START_TEST(t_give_up)
{
    for (unsigned seed = 1; seed <= 400; seed++) {
        sim_t *s = malloc(sizeof(*s));
        uint64_t g = seed % 3 ? 0 : ((uint64_t)1 << 32) - 5;
        unsigned r = seed * 104729u + 7;
        int nstreams = 1 + (int)(seed % MAX_STREAMS);

        ck_assert_ptr_nonnull(s);
        sim_init(s, g, 2 + (int)(seed % (MAX_CHANNELS - 1)));
        s->fail_after = (int)(rand_r(&r) % 60);
        for (int l = 0; l < s->nchannels; l++)
            s->failing[l] = rand_r(&r) % 2;
        s->failing[rand_r(&r) % (unsigned)s->nchannels] = true;
        for (int i = 0; i < 30; i++) {
            uint64_t n = 1 + rand_r(&r) % 21;
            sim_call(s, (int)(rand_r(&r) % (unsigned)nstreams), g, n);
            g += n;
        }
        sim_run(s, nstreams, seed);
        free(s);
    }
}
END_TEST

START_TEST(t_wrap)
{
    const uint64_t w = (uint64_t)1 << 32;
    for (unsigned seed = 1; seed <= 300; seed++)
        random_calls(w - 1 - seed % 40, 1 + (int)(seed % MAX_STREAMS),
                     1 + (int)(seed / 3 % MAX_CHANNELS), 30, seed);
    /* and far past it */
    random_calls(5 * w - 7, 2, 1, 60, 99);
    random_calls(5 * w - 7, 3, 4, 60, 98);
}
END_TEST

/* The stream commands of a call, in order, for a small case: the pipeline's shape. */
START_TEST(t_shape)
{
    sim_t *s = malloc(sizeof(*s));
    static const struct {
        cnet_cmd_kind_t kind;
        int word;
        uint64_t k;
    } want[] = {
        {CNET_CMD_WAIT, CNET_FREED, 0},  {CNET_CMD_COPY_IN, 0, 0},
        {CNET_CMD_WRITE, CNET_READY, 0}, {CNET_CMD_WAIT, CNET_FREED, 1},
        {CNET_CMD_COPY_IN, 0, 1},        {CNET_CMD_WRITE, CNET_READY, 1},
        {CNET_CMD_WAIT, CNET_FREED, 2},  {CNET_CMD_COPY_IN, 0, 2},
        {CNET_CMD_WRITE, CNET_READY, 2}, {CNET_CMD_WAIT, CNET_DONE, 0},
        {CNET_CMD_COPY_OUT, 0, 0},       {CNET_CMD_WRITE, CNET_FREED, 0},
        {CNET_CMD_WAIT, CNET_FREED, 3},  {CNET_CMD_COPY_IN, 0, 3},
        {CNET_CMD_WRITE, CNET_READY, 3}, {CNET_CMD_WAIT, CNET_DONE, 1},
        {CNET_CMD_COPY_OUT, 0, 1},       {CNET_CMD_WRITE, CNET_FREED, 1},
        {CNET_CMD_WAIT, CNET_DONE, 2},   {CNET_CMD_COPY_OUT, 0, 2},
        {CNET_CMD_WRITE, CNET_FREED, 2}, {CNET_CMD_WAIT, CNET_DONE, 3},
        {CNET_CMD_COPY_OUT, 0, 3},       {CNET_CMD_WRITE, CNET_FREED, 3},
    };
    ck_assert_ptr_nonnull(s);
    sim_init(s, 10, 1);    /* one channel: 3 slots */
    sim_call(s, 0, 10, 4); /* chunks 10..13: every copy in waits for its slot */
    ck_assert_int_eq(s->ncmds[0], (int)(sizeof(want) / sizeof(want[0])));
    for (int i = 0; i < s->ncmds[0]; i++) {
        const cnet_cmd_t *c = &s->cmds[0][i].c;
        ck_assert_int_eq(c->kind, want[i].kind);
        ck_assert_uint_eq(c->k, want[i].k);
        if (c->kind == CNET_CMD_WAIT || c->kind == CNET_CMD_WRITE)
            ck_assert_int_eq(c->word, want[i].word);
    }
    free(s);
}
END_TEST

/* ---- the channels' queue ----------------------------------------------------------------
 * Random pushes (mostly one-chunk calls) and channel steps in random order against a model:
 * each channel takes exactly the operations it has chunks in, in order, never one whose
 * entry was reused; head is always the first operation some channel still owes; the queue
 * never holds more than CNET_QUEUE. */

#define SCHED_OPS 1500

START_TEST(t_sched)
{
    static uint64_t nch[SCHED_OPS];
    static int owed[SCHED_OPS]; /* channels with chunks in it that did not finish it */

    for (unsigned seed = 1; seed <= 120; seed++) {
        unsigned r = seed * 2654435761u;
        int L = 1 + (int)(seed % 6), holding[CNET_CHANNELS_MAX];
        uint64_t held[CNET_CHANNELS_MAX], last[CNET_CHANNELS_MAX], pushed = 0, taken = 0,
                                                                   want_taken = 0;
        cnet_sched_t s;

        cnet_sched_init(&s, L);
        for (int i = 0; i < L; i++) {
            holding[i] = 0;
            last[i] = UINT64_MAX;
        }
        for (int step = 0; step < 40000; step++) {
            unsigned a = (unsigned)rand_r(&r) % (unsigned)(L + 2);
            if (a >= (unsigned)L) { /* push */
                if (pushed == SCHED_OPS || cnet_sched_queued(&s) >= CNET_QUEUE)
                    continue;
                nch[pushed] = rand_r(&r) % 3 ? 1 : 1 + (uint64_t)(rand_r(&r) % (3 * L));
                owed[pushed] = nch[pushed] < (uint64_t)L ? (int)nch[pushed] : L;
                want_taken += (uint64_t)owed[pushed];
                ck_assert_uint_eq(cnet_sched_push(&s, nch[pushed]), pushed);
                pushed++;
                /* now and then the channels stop and start again on an empty queue */
                if (s.head == s.end && rand_r(&r) % 50 == 0) {
                    cnet_sched_restart_channels(&s);
                    for (int i = 0; i < L; i++)
                        ck_assert(!holding[i]);
                }
                continue;
            }
            if (!holding[a]) {
                uint64_t op;
                if (!cnet_sched_next(&s, (int)a, &op))
                    continue;
                ck_assert_uint_lt(op, pushed);
                ck_assert_msg(nch[op] > a, "channel %u took op %llu of %llu chunks", a,
                              (unsigned long long)op, (unsigned long long)nch[op]);
                ck_assert_uint_eq(s.nchunks[op % CNET_QUEUE], nch[op]);
                /* in order, and none of its own skipped */
                for (uint64_t o = last[a] == UINT64_MAX ? 0 : last[a] + 1; o < op; o++)
                    ck_assert_msg(nch[o] <= a || owed[o] == 0 || o < s.head,
                                  "channel %u skipped op %llu", a, (unsigned long long)o);
                holding[a] = 1;
                held[a] = op;
            } else {
                uint64_t before = s.head, h = 0;
                owed[held[a]]--;
                last[a] = held[a];
                holding[a] = 0;
                taken++;
                ck_assert_uint_eq(cnet_sched_finish(&s, (int)a), s.head - before);
                while (h < pushed && owed[h] == 0)
                    h++;
                ck_assert_uint_eq(s.head, h);
            }
        }
        /* let every channel finish what is left */
        for (int moved = 1; moved;) {
            moved = 0;
            for (int i = 0; i < L; i++) {
                uint64_t op;
                if (holding[i] || cnet_sched_next(&s, i, &op)) {
                    if (!holding[i])
                        held[i] = op;
                    owed[held[i]]--;
                    holding[i] = 0;
                    taken++;
                    cnet_sched_finish(&s, i);
                    moved = 1;
                }
            }
        }
        ck_assert_uint_eq(taken, want_taken);
        ck_assert_uint_eq(s.head, s.end);
        ck_assert_uint_eq(s.end, pushed);
    }
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("cuda_net_sched");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, t_shape);
    tcase_add_test(tc, t_one_stream);
    tcase_add_test(tc, t_streams_random);
    tcase_add_test(tc, t_wrap);
    tcase_add_test(tc, t_give_up);
    tcase_add_test(tc, t_sched);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return harness_main(plan_suite());
}
