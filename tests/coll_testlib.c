/* What the collective test programs share: see coll_testlib.h. */
#define _GNU_SOURCE
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#include "coll_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

void shape_env(const shape_t *sh)
{
    if (sh && sh->algo)
        setenv("SYMCOLL_ALGO", sh->algo, 1);
}

/* Byte j of rank r's data in test round seed: never the poison byte 0xa5 pattern alone */
static uint8_t byte_of(int r, size_t j, uint64_t seed)
{
    uint64_t h =
        (j + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)r << 48) ^ seed * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    return (uint8_t)(h >> 56);
}

void fill_bytes(void *buf, size_t n, int r, uint64_t seed)
{
    for (size_t j = 0; j < n; j++)
        ((uint8_t *)buf)[j] = byte_of(r, j, seed);
}

size_t bad_bytes(const void *buf, size_t n, int r, uint64_t seed)
{
    size_t bad = 0;
    for (size_t j = 0; j < n; j++)
        bad += ((const uint8_t *)buf)[j] != byte_of(r, j, seed);
    return bad;
}

/* Buffers of a round: plain (malloc) or from the pool (collective: every rank the same
 * size). */
static void *buf_get(symcoll_comm_h comm, size_t bytes, int pool)
{
    void *p = NULL;
    if (pool) {
        symcoll_status_t st = symcoll_mem_alloc(comm, bytes, SYMCOLL_MEM_HOST, &p);
        if (st != SYMCOLL_OK)
            harness_fail("symcoll_mem_alloc(%zu): %s", bytes, symcoll_status_string(st));
    } else if (!(p = malloc(bytes))) {
        harness_fail("malloc(%zu)", bytes);
    }
    return p;
}

static void buf_put(symcoll_comm_h comm, void *p, int pool)
{
    if (pool)
        ck_assert_int_eq(symcoll_mem_free(comm, p), SYMCOLL_OK);
    else
        free(p);
}

void check_status(symcoll_status_t st, const char *what, size_t count, int dt, int extra)
{
    if (st != SYMCOLL_OK)
        harness_fail("%s count %zu dtype %d (%d): %s", what, count, dt, extra,
                     symcoll_status_string(st));
}

/* Reduce-scatter of every datatype x operator: rank r's block of the reference all-reduce
 * of nranks x count elements. */
void rs_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
              symcoll_op_t op, int inplace, int pool, uint64_t seed)
{
    refcheck_spec_t spec = {dt, op, n, seed, 0};
    size_t es = refcheck_dtype_size(dt), total = count * (size_t)n, bad = 0, first = 0;
    char *send = buf_get(comm, total * es, pool), *recv;

    refcheck_fill(&spec, rank, send, total);
    recv = inplace ? send + (size_t)rank * count * es : buf_get(comm, count * es, pool);
    if (!inplace)
        memset(recv, 0xa5, count * es);
    check_status(symcoll_reduce_scatter(send, recv, count, dt, op, comm, NULL),
                 "reduce_scatter", count, dt, op);
    /* our block of the reference, rounded to the type (equal values are equal bits,
     * but for the sign of a float zero) */
    for (size_t i = 0; i < count; i++) {
        uint64_t e = 0;
        refcheck_store(&e, 0, dt, refcheck_expected(&spec, (size_t)rank * count + i));
        if (refcheck_load(&e, 0, dt) != refcheck_load(recv, i, dt)) {
            if (!bad)
                first = i;
            bad++;
        }
    }
    if (bad)
        harness_fail("reduce_scatter count %zu dtype %s op %s %s %s: %zu wrong, first %zu",
                     count, symcoll_dtype_name(dt), symcoll_op_name(op),
                     inplace ? "in place" : "out of place", pool ? "pool" : "plain", bad,
                     first);
    if (!inplace)
        buf_put(comm, recv, pool);
    buf_put(comm, send, pool);
}

void ag_round(symcoll_comm_h comm, int rank, int n, size_t count, symcoll_dtype_t dt,
              int inplace, int pool, uint64_t seed)
{
    size_t es = refcheck_dtype_size(dt), block = count * es;
    char *recv = buf_get(comm, block * (size_t)n, pool);
    char *send = inplace ? recv + (size_t)rank * block : buf_get(comm, block, pool);

    memset(recv, 0xa5, block * (size_t)n);
    fill_bytes(send, block, rank, seed);
    check_status(symcoll_allgather(send, recv, count, dt, comm, NULL), "allgather", count, dt,
                 inplace);
    for (int r = 0; r < n; r++) {
        size_t bad = bad_bytes(recv + (size_t)r * block, block, r, seed);
        if (bad)
            harness_fail("allgather count %zu dtype %s %s %s: %zu wrong bytes in block %d",
                         count, symcoll_dtype_name(dt), inplace ? "in place" : "out of place",
                         pool ? "pool" : "plain", bad, r);
    }
    if (!inplace)
        buf_put(comm, send, pool);
    buf_put(comm, recv, pool);
}

void bc_round(symcoll_comm_h comm, int rank, size_t count, symcoll_dtype_t dt, int root,
              int inplace, int pool, uint64_t seed)
{
    size_t bytes = count * refcheck_dtype_size(dt), bad;
    char *recv = buf_get(comm, bytes, pool);
    char *send = inplace ? recv : buf_get(comm, bytes, pool);

    memset(recv, 0xa5, bytes);
    if (rank == root)
        fill_bytes(send, bytes, root, seed);
    else if (!inplace)
        memset(send, 0x5a, bytes); /* not the root's: must not be read */
    check_status(symcoll_broadcast(send, recv, count, dt, root, comm, NULL), "broadcast", count,
                 dt, root);
    bad = bad_bytes(recv, bytes, root, seed);
    if (bad)
        harness_fail("broadcast count %zu dtype %s root %d %s %s: %zu wrong bytes", count,
                     symcoll_dtype_name(dt), root, inplace ? "in place" : "out of place",
                     pool ? "pool" : "plain", bad);
    if (!inplace)
        buf_put(comm, send, pool);
    buf_put(comm, recv, pool);
}
