/* The stream side of the staging pipeline of CUDA memory across nodes, in order, and the
 * channels' queue (see algo/cuda_net/cuda_net_int.h for the protocol). */
#include "algo/cuda_net/cuda_net_sched.h"

#include <string.h>

/* Chunk k into its slot: after the slot's previous chunk (g - nslots) was copied out,
 * since calls on other streams share the slots; then "ready". */
static symcoll_status_t plan_copy_in(uint64_t first, uint64_t k, int nslots, cnet_cmd_fn_t fn,
                                     void *arg)
{
    uint64_t g = first + k, ns = (uint64_t)nslots;
    int slot = cnet_slot(g, nslots);
    cnet_cmd_t c = {.slot = slot, .k = k};
    symcoll_status_t status;

    if (g >= ns) {
        c.kind = CNET_CMD_WAIT;
        c.word = CNET_FREED;
        c.value = (uint32_t)(g - ns + 1);
        status = fn(arg, &c);
        if (status != SYMCOLL_OK)
            return status;
    }
    c.kind = CNET_CMD_COPY_IN;
    status = fn(arg, &c);
    if (status != SYMCOLL_OK)
        return status;
    c.kind = CNET_CMD_WRITE;
    c.word = CNET_READY;
    c.value = (uint32_t)(g + 1);
    return fn(arg, &c);
}

symcoll_status_t cnet_steps(uint64_t first, uint64_t nchunks, int nslots, cnet_cmd_fn_t fn,
                            void *arg)
{
    uint64_t ns = (uint64_t)nslots;
    symcoll_status_t status = SYMCOLL_OK;

    /* the first nslots chunks go in at once; each later one as soon as its slot's copy
     * out is queued, so that chunks wait on the host while the channels reduce others */
    for (uint64_t k = 0; status == SYMCOLL_OK && k < nchunks && k < ns; k++)
        status = plan_copy_in(first, k, nslots, fn, arg);
    for (uint64_t k = 0; status == SYMCOLL_OK && k < nchunks; k++) {
        uint64_t g = first + k;
        cnet_cmd_t c = {.kind = CNET_CMD_WAIT,
                        .word = CNET_DONE,
                        .slot = cnet_slot(g, nslots),
                        .value = (uint32_t)(g + 1),
                        .k = k};
        status = fn(arg, &c);
        if (status != SYMCOLL_OK)
            break;
        c.kind = CNET_CMD_COPY_OUT;
        status = fn(arg, &c);
        if (status != SYMCOLL_OK)
            break;
        c.kind = CNET_CMD_WRITE;
        c.word = CNET_FREED;
        status = fn(arg, &c);
        if (status == SYMCOLL_OK && k + ns < nchunks)
            status = plan_copy_in(first, k + ns, nslots, fn, arg);
    }
    return status;
}

/* ---- the channels' queue ----------------------------------------------------------------- */

void cnet_sched_init(cnet_sched_t *s, int nchannels)
{
    memset(s, 0, sizeof(*s));
    s->nchannels = nchannels;
}

void cnet_sched_restart_channels(cnet_sched_t *s)
{
    for (int i = 0; i < s->nchannels; i++)
        s->pos[i] = s->end;
}

uint64_t cnet_sched_push(cnet_sched_t *s, uint64_t nchunks)
{
    uint64_t op = s->end;

    s->nchunks[op % CNET_QUEUE] = nchunks;
    s->pending[op % CNET_QUEUE] =
        nchunks < (uint64_t)s->nchannels ? (int)nchunks : s->nchannels;
    if (nchunks > 1)
        __atomic_store_n(&s->multi_end, op + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->end, op + 1, __ATOMIC_RELEASE);
    return op;
}

bool cnet_sched_next(cnet_sched_t *s, int channel, uint64_t *op_p)
{
    uint64_t p = s->pos[channel] < s->head ? s->head : s->pos[channel];

    /* before head: finished, so nothing of this channel's is left there */
    while (p < s->end && s->nchunks[p % CNET_QUEUE] <= (uint64_t)channel)
        p++;
    s->pos[channel] = p;
    if (p == s->end)
        return false;
    *op_p = p;
    return true;
}

uint64_t cnet_sched_finish(cnet_sched_t *s, int channel)
{
    uint64_t h = s->head;

    s->pending[s->pos[channel]++ % CNET_QUEUE]--;
    while (s->head < s->end && s->pending[s->head % CNET_QUEUE] == 0)
        s->head++;
    return s->head - h;
}
