/* Shared scaffolding of the pool and host all-reduce tests: one Check case per test
 * (so CK_RUN_CASE=name runs one), multi-rank tests and main through the harness. */
#ifndef SYMCOLL_TESTS_POOL_TESTS_H
#define SYMCOLL_TESTS_POOL_TESTS_H

#include <check.h>

#include "harness.h"

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

#endif
