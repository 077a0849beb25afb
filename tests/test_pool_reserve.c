/* symcoll_pool_reserve on host memory through the public API: a reservation grows the
 * pool once and the allocations that fit in it grow nothing; a reservation that exists
 * already changes nothing; past the ceiling it fails on every rank with the pool as it
 * was; ranks that reserve different sizes, or that freed different buffers before,
 * fail with SYMCOLL_ERR_MISMATCH; bad arguments change nothing. (CUDA memory, where an
 * allocation that fits makes no exchange at all: tests/cuda_case_capture_alloc.c.) */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pool_tests.h"
#include "symcoll.h"

#define RUN_TIMEOUT 120.0
#define MiB ((size_t)1 << 20)

static symcoll_pool_attr_t query(symcoll_comm_h comm)
{
    symcoll_pool_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = SYMCOLL_POOL_ATTR_FIELD_MAPPED | SYMCOLL_POOL_ATTR_FIELD_IN_USE |
                   SYMCOLL_POOL_ATTR_FIELD_GROWTHS | SYMCOLL_POOL_ATTR_FIELD_SEGMENTS;
    ck_assert_int_eq(symcoll_pool_query(comm, SYMCOLL_MEM_HOST, &a), SYMCOLL_OK);
    return a;
}

static void expect_same(symcoll_pool_attr_t a, symcoll_pool_attr_t b, const char *what)
{
    if (a.mapped != b.mapped || a.in_use != b.in_use || a.growths != b.growths ||
        a.segments != b.segments)
        harness_fail("%s: the pool changed (mapped %llu -> %llu, in use %llu -> %llu, "
                     "growths %llu -> %llu)",
                     what, (unsigned long long)a.mapped, (unsigned long long)b.mapped,
                     (unsigned long long)a.in_use, (unsigned long long)b.in_use,
                     (unsigned long long)a.growths, (unsigned long long)b.growths);
}

static void body_reserve(int rank, int n, void *arg)
{
    symcoll_pool_attr_t a, b;
    symcoll_comm_h comm;
    void *p[4], *q;
    (void)arg;

    setenv("SYMCOLL_POOL_MIN_SIZE", "1M", 1);
    setenv("SYMCOLL_POOL_MAX_SIZE", "64M", 1);
    comm = harness_comm_create();
    /* the first reservation creates the pool and grows it once */
    ck_assert_int_eq(symcoll_pool_reserve(comm, 12 * MiB, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    a = query(comm);
    ck_assert_uint_ge(a.mapped, 12 * MiB);
    ck_assert_uint_eq(a.in_use, 0);
    /* one that the pool holds already changes nothing */
    ck_assert_int_eq(symcoll_pool_reserve(comm, 8 * MiB, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    expect_same(a, query(comm), "a reservation that fits");
    /* allocations that fit together in it: no growth */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(symcoll_mem_alloc(comm, 3 * MiB, SYMCOLL_MEM_HOST, &p[i]), SYMCOLL_OK);
    b = query(comm);
    ck_assert_uint_eq(b.growths, a.growths);
    ck_assert_uint_eq(b.mapped, a.mapped);
    ck_assert_uint_eq(b.in_use, 12 * MiB);
    for (int i = 0; i < 4; i++)
        reduce_check(comm, p[i], 3 * MiB / 8, n, rank);

    /* past the ceiling: refused on every rank, nothing changed */
    a = query(comm);
    ck_assert_int_eq(symcoll_pool_reserve(comm, 128 * MiB, SYMCOLL_MEM_HOST),
                     SYMCOLL_ERR_NO_MEMORY);
    expect_same(a, query(comm), "a reservation past the ceiling");
    /* bad arguments: no side effect, no exchange */
    ck_assert_int_eq(symcoll_pool_reserve(comm, 0, SYMCOLL_MEM_HOST),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_pool_reserve(comm, MiB, (symcoll_mem_type_t)7),
                     SYMCOLL_ERR_INVALID_PARAM);
    ck_assert_int_eq(symcoll_pool_reserve(NULL, MiB, SYMCOLL_MEM_HOST),
                     SYMCOLL_ERR_INVALID_PARAM);
    expect_same(a, query(comm), "bad arguments");

    /* more than the free room at the end grows once more; the old buffers stay good,
     * and an allocation of that size then grows nothing */
    ck_assert_int_eq(symcoll_pool_reserve(comm, a.mapped - a.in_use + MiB, SYMCOLL_MEM_HOST),
                     SYMCOLL_OK);
    b = query(comm);
    ck_assert_uint_eq(b.growths, a.growths + 1);
    ck_assert_int_eq(symcoll_mem_alloc(comm, a.mapped - a.in_use + MiB, SYMCOLL_MEM_HOST, &q),
                     SYMCOLL_OK);
    ck_assert_uint_eq(query(comm).growths, b.growths);
    reduce_check(comm, q, MiB / 8, n, rank);
    ck_assert_int_eq(symcoll_mem_free(comm, q), SYMCOLL_OK);
    reduce_check(comm, p[2], 3 * MiB / 8, n, rank);

    /* trim gives the room that holds no buffer back */
    ck_assert_int_eq(symcoll_pool_trim(comm, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    ck_assert_uint_lt(query(comm).mapped, b.mapped);
    reduce_check(comm, p[3], 3 * MiB / 8, n, rank);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(symcoll_mem_free(comm, p[i]), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

static void body_reserve_mismatch(int rank, int n, void *arg)
{
    symcoll_pool_attr_t a;
    symcoll_comm_h comm;
    symcoll_status_t st;
    void *p, *q;
    (void)arg;

    setenv("SYMCOLL_POOL_MIN_SIZE", "1M", 1);
    comm = harness_comm_create();
    ck_assert_int_eq(symcoll_pool_reserve(comm, 4 * MiB, SYMCOLL_MEM_HOST), SYMCOLL_OK);
    a = query(comm);
    /* different sizes: every rank fails, nothing changed */
    st = symcoll_pool_reserve(comm, rank == 0 ? 8 * MiB : 16 * MiB, SYMCOLL_MEM_HOST);
    if (st != SYMCOLL_ERR_MISMATCH)
        harness_fail("reservations of different sizes: %s", symcoll_status_string(st));
    expect_same(a, query(comm), "a mismatched reservation");

    /* rank 0 frees a buffer the others keep: the next exchange's plan differs (host
     * allocations agree on their offsets at once; the sequence hash of CUDA pools is
     * tested by test_cuda's capture_alloc) */
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, SYMCOLL_MEM_HOST, &p), SYMCOLL_OK);
    ck_assert_int_eq(symcoll_mem_alloc(comm, MiB, SYMCOLL_MEM_HOST, &q), SYMCOLL_OK);
    reduce_check(comm, q, MiB / 8, n, rank);
    if (rank == 0)
        ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    st = symcoll_pool_reserve(comm, MiB, SYMCOLL_MEM_HOST);
    if (st != SYMCOLL_ERR_MISMATCH)
        harness_fail("a reservation after different frees: %s", symcoll_status_string(st));
    ck_assert_int_eq(symcoll_comm_destroy(comm), SYMCOLL_OK);
}

RANKS_TEST(test_reserve_3, body_reserve, 3)
RANKS_TEST(test_reserve_mismatch_2, body_reserve_mismatch, 2)

int main(void)
{
    Suite *s = suite_create("pool_reserve");

    ADD_CASE(s, test_reserve_3);
    ADD_CASE(s, test_reserve_mismatch_2);
    return harness_main(s);
}
