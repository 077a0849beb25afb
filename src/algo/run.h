/* The dispatch's rows, inside src/algo's top floor: allreduce.c runs the all-reduce row
 * of the collective x family table, coll.c the other collectives' rows (and the
 * collectives that run as one all-reduce, through allreduce.c); algo.c checks, prepares
 * and picks the row. */
#ifndef SYMCOLL_ALGO_RUN_H
#define SYMCOLL_ALGO_RUN_H

#include "algo/base/ctx.h"
#include "core/core.h"
#include "pool/pool.h"
#include "topo/select.h"

/* One cell of the table: runs a's collective by plan (count > 0 or a barrier, arguments
 * checked, the family's state prepared and its pools in pools[], comm->lock held). */
typedef symcoll_status_t (*algo_run_fn_t)(comm_t *comm, const topo_plan_t *plan,
                                          pool_t *const pools[SYMCOLL_MEM_LAST],
                                          const algo_args_t *a);

/* The all-reduce row: a->coll is TOPO_COLL_ALLREDUCE; plan->family is a family this build
 * runs (algo_run checked it). */
symcoll_status_t algo_allreduce(comm_t *comm, const topo_plan_t *plan,
                                pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a);

/* Whether this build has an all-reduce of the family (the all-reduce row's cell). */
bool algo_allreduce_has(topo_family_t family);

/* The other rows: a->coll is not TOPO_COLL_ALLREDUCE; plan->via says how it runs. */
symcoll_status_t algo_coll(comm_t *comm, const topo_plan_t *plan,
                           pool_t *const pools[SYMCOLL_MEM_LAST], const algo_args_t *a);

#endif
