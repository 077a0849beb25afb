/* What the bootstrap test programs share (tests/test_bootstrap*.c): the bootstrap of a
 * harness rank, allgather checks, descriptor counts and the one-body-on-N-ranks test. */
#ifndef SYMCOLL_TESTS_BOOTSTRAP_TESTLIB_H
#define SYMCOLL_TESTS_BOOTSTRAP_TESTLIB_H

#include <check.h>
#include <stddef.h>

#include "bootstrap/bs_int.h"
#include "harness.h"

#define RUN_TIMEOUT 25.0 /* harness deadline; Check's is above it */
#define BS_TIMEOUT 15.0  /* bootstrap deadline inside the ranks */

/* The bootstrap parameters of this harness rank (SYMCOLL_RANK, ...), with @a timeout. */
bootstrap_params_t env_params(double timeout);

/* bootstrap_create from env_params(BS_TIMEOUT); on failure ends the rank. */
bootstrap_t *env_bootstrap(void);

/* Byte @a i of rank @a rank's allgather contribution of @a size bytes. */
unsigned char pattern(int rank, size_t i, size_t size);

/* Descriptors must come back to what they were before a create/destroy cycle. */
void expect_fds(int fds0);

/* A test that runs a body on n ranks over `nodes` simulated nodes. */
#define RANKS_TEST(_name, _n, _nodes, _body)                                                   \
    START_TEST(_name)                                                                          \
    {                                                                                          \
        ck_assert_int_eq(harness_run((_n), (_nodes), RUN_TIMEOUT, (_body), NULL), 0);          \
    }                                                                                          \
    END_TEST

/* Allgather of several sizes up to max; every rank checks every other rank's bytes. */
void check_allgathers_max(bootstrap_t *bs, int rank, int nranks, size_t max);
void check_allgathers(bootstrap_t *bs, int rank, int nranks);

/* Every rank sees the same job id, not 0. */
void check_job_id(bootstrap_t *bs, int nranks);

/* Bytes of rank 0's challenge, which every connection gets. */
#define CHALLENGE_LEN (sizeof(bs_hdr_t) + BS_NONCE_LEN)

/* Reads what arrives until the peer closes or `timeout` passes; returns the bytes kept
 * (at most cap) and sets *eof when the peer closed. */
size_t read_all(int fd, unsigned char *buf, size_t cap, double timeout, int *eof);

/* True once the other side has closed the connection (it dropped us) having sent at
 * most its challenge, and after it a reject header. */
int raw_dropped(int fd, double timeout);

#endif
