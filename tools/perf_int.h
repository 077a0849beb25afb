/* What the parts of the benchmark engine share beyond tools/perf_engine.h (perf_args.c:
 * names, shapes and options; perf_check.c: inputs and reference checks; perf_output.c:
 * what rank 0 prints; perf_engine.c: the timing loop and perf_run). */
#ifndef SYMCOLL_TOOLS_PERF_INT_H
#define SYMCOLL_TOOLS_PERF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "perf_engine.h"

/* the collectives that reduce (the others copy bytes: -o does not apply) */
int perf_coll_reduces(perf_coll_t coll);

/* Rank 0's header: the CSV columns, the opening of the JSON document (its rows and
 * closing are printed by perf_print_row and perf_run) or the text table's. */
void perf_print_header(const perf_opts_t *o, const perf_backend_t *be);

/* One row. sec[3]: time over ranks as -a says, min and max over ranks; wrong UINT64_MAX:
 * -c 0; first: the first row (JSON: no separator before it). */
void perf_print_row(const perf_opts_t *o, const perf_backend_t *be, size_t bytes, size_t count,
                    int inplace, const double sec[3], uint64_t wrong, int first);

#endif
