/* The topics of test_cuda (GPU tests on one node), one file each (tests/cuda_case_*.c):
 * each adds its cases that @a ngpus GPUs can run to @a su, in the order the suite runs
 * them; tests/test_cuda.c holds the suite and main. Also what the mismatch cases of
 * several topics use. */
#ifndef SYMCOLL_TESTS_CUDA_CASES_H
#define SYMCOLL_TESTS_CUDA_CASES_H

#include <check.h>
#include <time.h>

/* SYMCOLL_TIMEOUT of the cases where ranks disagree: a mismatch not seen would cost this */
#define MM_TIMEOUT "20"

static inline double mono_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void cuda_allreduce_cases(Suite *su, int ngpus);     /* datatypes, pool, graphs, bits */
void cuda_faults_cases(Suite *su, int ngpus);        /* mismatched arguments, killed ranks */
void cuda_coll_cases(Suite *su, int ngpus);          /* the collectives besides all-reduce */
void cuda_split_cases(Suite *su, int ngpus);         /* split and shrink on device memory */
void cuda_order_cases(Suite *su, int ngpus);         /* the canonical reduction order */
void cuda_capture_alloc_cases(Suite *su, int ngpus); /* allocation during capture */
void cuda_graph_life_cases(Suite *su, int ngpus);    /* graphs outliving a trim, destroy */

#endif
