/* The algorithm layer's shared context: what every family asks of the communicator's
 * algorithm state (is it still usable) and the names of the collectives. */
#include "algo/base/ctx.h"

symcoll_status_t algo_check_usable(const comm_t *comm)
{
    symcoll_status_t broken = algo_broken(comm);

    if (broken != SYMCOLL_OK)
        log_error("an earlier call failed (%s); the communicator can only be destroyed",
                  symcoll_status_string(broken));
    return broken;
}

const char *algo_coll_name(algo_coll_t coll)
{
    static const char *const names[ALGO_COLL_LAST] = {
        [ALGO_COLL_ALLREDUCE] = "all-reduce", [ALGO_COLL_REDUCE_SCATTER] = "reduce-scatter",
        [ALGO_COLL_ALLGATHER] = "all-gather", [ALGO_COLL_BROADCAST] = "broadcast",
        [ALGO_COLL_BARRIER] = "barrier",
    };
    return (unsigned)coll < ALGO_COLL_LAST ? names[coll] : "?";
}
