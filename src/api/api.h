/* The roof: what the public entry points (api.c) and the communicator's lifecycle
 * (comm.c) share. Nothing below src/api/ includes this header. */
#ifndef SYMCOLL_API_H
#define SYMCOLL_API_H

#include "core/core.h"

/* Registry of live communicators: a destroyed or bogus handle is rejected without
 * touching freed memory. */
bool api_comm_valid(const comm_t *comm);

/* The layers created with the communicator after the bootstrap and the topology probe
 * (UCX across nodes, the algorithms' context), and their teardown in reverse order.
 * Pools are created on the first call that needs one, so a communicator that never
 * reduces maps nothing. */
symcoll_status_t api_init_layers(comm_t *comm);
void api_release_layers(comm_t *comm);

#endif
