/* The stream side of the staging pipeline of CUDA memory across nodes, in order (see
 * algo/cuda_net.c for the protocol). */
#include "algo/cuda_net_plan.h"

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

symcoll_status_t cnet_plan(uint64_t first, uint64_t nchunks, int nslots, cnet_cmd_fn_t fn,
                           void *arg)
{
    uint64_t ns = (uint64_t)nslots;
    symcoll_status_t status = SYMCOLL_OK;

    /* the first nslots chunks go in at once; each later one as soon as its slot's copy
     * out is queued, so that chunks wait on the host while the lanes reduce others */
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
