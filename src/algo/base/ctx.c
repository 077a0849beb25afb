/* The algorithm layer's shared context: what every family asks of the communicator's
 * algorithm state. */
#include "algo/base/ctx.h"

symcoll_status_t algo_check_usable(const comm_t *comm)
{
    symcoll_status_t broken = algo_broken(comm);

    if (broken != SYMCOLL_OK)
        log_error("an earlier call failed (%s); the communicator can only be destroyed",
                  symcoll_status_string(broken));
    return broken;
}
