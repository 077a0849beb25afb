/* What the files of test_cuda_net share (tests/test_cuda_net.c and
 * tests/cuda_net_case_*.c, one topic each): deadlines, the one-body test, the bodies that
 * cases of several topics run, and each topic's cases in the order the suite runs them. */
#ifndef SYMCOLL_TESTS_CUDA_NET_CASES_H
#define SYMCOLL_TESTS_CUDA_NET_CASES_H

#include <check.h>

#include "harness.h"

#define NET_FAIL_TIMEOUT 20 /* SYMCOLL_TIMEOUT of the failure cases, seconds */
#define NET_SHORT_TIMEOUT 8 /* SYMCOLL_TIMEOUT of the absent-peer case, seconds */

#define NET_TEST(name, nranks, nnodes, limit, body)                                            \
    START_TEST(name)                                                                           \
    {                                                                                          \
        ck_assert_int_eq(harness_run(nranks, nnodes, limit, body, NULL), 0);                   \
    }                                                                                          \
    END_TEST

/* Bodies (harness_body_t) run by the staged cases and again on the direct path */
void body_net_types(int rank, int nranks, void *arg);
void body_net_pool(int rank, int nranks, void *arg);
void body_net_hier(int rank, int nranks, void *arg);
void body_net_mixed(int rank, int nranks, void *arg);
void body_net_coll(int rank, int nranks, void *arg); /* arg: &net_coll_full or _quick */
void body_net_kill(int rank, int nranks, void *arg);
void body_net_mismatch(int rank, int nranks, void *arg); /* arg: &net_mismatch_dtype, _count */
void body_net_abort(int rank, int nranks, void *arg);
void body_net_timeout(int rank, int nranks, void *arg);
extern const int net_coll_full, net_coll_quick;
extern int net_mismatch_dtype, net_mismatch_count;

/* Each topic's cases that @a ngpus GPUs can run, added to @a su (tag "net") */
void cuda_net_faults_cases(Suite *su, int ngpus); /* a killed, aborted or absent peer */
void cuda_net_staged_cases(Suite *su, int ngpus); /* types, pool, hierarchical */
void cuda_net_direct_cases(Suite *su, int ngpus); /* the direct path */
void cuda_net_order_cases(Suite *su, int ngpus);  /* the canonical order (cuda_case_order.c) */

#endif
