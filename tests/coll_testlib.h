/* What the collective test programs share (tests/test_coll.c, tests/test_coll_bcast.c):
 * the rank shapes, data bytes and their check, and one checked round of reduce-scatter,
 * all-gather or broadcast on plain or pool buffers. */
#ifndef SYMCOLL_TESTS_COLL_TESTLIB_H
#define SYMCOLL_TESTS_COLL_TESTLIB_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "symcoll.h"

#define RUN_TIMEOUT 240.0

typedef struct shape {
    int nranks, nnodes;
    const char *algo; /* SYMCOLL_ALGO, or NULL */
} shape_t;

/* SYMCOLL_ALGO of the shape, if it names one */
void shape_env(const shape_t *sh);

/* Rank r's data bytes in test round seed (never the poison byte 0xa5 pattern alone), and
 * the number of the n bytes of buf that differ from them. */
void fill_bytes(void *buf, size_t n, int r, uint64_t seed);
size_t bad_bytes(const void *buf, size_t n, int r, uint64_t seed);

/* Ends the rank unless st is SYMCOLL_OK, naming the call. */
void check_status(symcoll_status_t st, const char *what, size_t count, int dt, int extra);

/* Reduce-scatter of every datatype x operator: rank r's block of the reference all-reduce
 * of nranks x count elements. */
void rs_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
              symcoll_op_t op, int inplace, int pool, uint64_t seed);
void ag_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
              int inplace, int pool, uint64_t seed);
void bc_round(symcoll_comm_h comm, int rank, size_t count, symcoll_dtype_t dt, int root,
              int inplace, int pool, uint64_t seed);

/* A test that runs body on nr ranks over nn simulated nodes (SYMCOLL_ALGO algo) */
#define SHAPE_TEST(name, nr, nn, body) SHAPE_TEST_ALGO(name, nr, nn, NULL, body)
#define SHAPE_TEST_ALGO(name, nr, nn, algo, body)                                              \
    START_TEST(name)                                                                           \
    {                                                                                          \
        shape_t sh = {nr, nn, algo};                                                           \
        ck_assert_int_eq(harness_run(nr, nn, RUN_TIMEOUT, body, &sh), 0);                      \
    }                                                                                          \
    END_TEST

#endif
