/* Shared scaffolding of the pool and host all-reduce tests: one Check case per test
 * (so CK_RUN_CASE=name runs one), multi-rank tests and main through the harness. */
#ifndef SYMCOLL_TESTS_POOL_TESTS_H
#define SYMCOLL_TESTS_POOL_TESTS_H

#include <check.h>

#include "harness.h"
#include "symcoll.h"

/* A test that runs body on n ranks of one node. */
#define RANKS_TEST(name, body, n)                                                              \
    START_TEST(name)                                                                           \
    {                                                                                          \
        ck_assert_int_eq(harness_run(n, 1, RUN_TIMEOUT, body, NULL), 0);                       \
    }                                                                                          \
    END_TEST

#define ADD_CASE(s, t)                                                                         \
    do {                                                                                       \
        TCase *tc_ = tcase_create(#t);                                                         \
        tcase_set_timeout(tc_, RUN_TIMEOUT + 30);                                              \
        tcase_add_test(tc_, t);                                                                \
        suite_add_tcase(s, tc_);                                                               \
    } while (0)

/* Sum all-reduce of count doubles of host memory in buf (in place), input
 * rank + 1 + i % 7, checked. */
static inline void reduce_check(symcoll_comm_h comm, double *buf, size_t count, int n, int rank)
{
    symcoll_status_t st;
    for (size_t i = 0; i < count; i++)
        buf[i] = rank + 1 + (double)(i % 7);
    st = symcoll_allreduce(buf, buf, count, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    if (st != SYMCOLL_OK)
        harness_fail("allreduce of %zu doubles: %s", count, symcoll_status_string(st));
    for (size_t i = 0; i < count; i++)
        if (buf[i] != n * (n + 1) / 2.0 + n * (double)(i % 7))
            harness_fail("allreduce of %zu doubles: element %zu is %g", count, i, buf[i]);
}

#endif
