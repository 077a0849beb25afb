/* tools_local_rank (local_rank.h). */
#include "local_rank.h"

#include <stdlib.h>

int tools_local_rank(void)
{
    static const char *const vars[] = {"SYMCOLL_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID", "SYMCOLL_RANK"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}
