/* What the UCX layer's test programs (test_ucx, test_ucx_channels) share: the transports
 * they run over and the shape of a case. */
#ifndef SYMCOLL_TESTS_UCX_TESTLIB_H
#define SYMCOLL_TESTS_UCX_TESTLIB_H

#include <check.h>
#include <stdlib.h>

#include "harness.h"

#define RUN_TIMEOUT 90.0

/* UCX over TCP loopback between the simulated nodes */
static inline void ucx_test_env(void)
{
    setenv("UCX_TLS", "tcp,self", 1);
}

/* A case that runs body on nranks ranks over nnodes simulated nodes. */
#define RUN_CASE(name, nranks, nnodes, body, arg)                                              \
    START_TEST(name)                                                                           \
    {                                                                                          \
        ck_assert_int_eq(harness_run(nranks, nnodes, RUN_TIMEOUT, body, arg), 0);              \
    }                                                                                          \
    END_TEST

#endif
