/* What the GPU test programs share (tests/test_cuda.c on one node, tests/test_cuda_net.c
 * across simulated nodes): checks of CUDA and symcoll calls, device buffers filled and
 * checked with the inputs and reference of tools/refcheck.h, and main's skip logic. */
#ifndef SYMCOLL_TESTS_CUDA_TESTLIB_H
#define SYMCOLL_TESTS_CUDA_TESTLIB_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

#define CK_CUDA(x)                                                                             \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess)                                                                 \
            harness_fail("%s:%d: %s: %s", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
    } while (0)
#define CK_SC(x)                                                                               \
    do {                                                                                       \
        symcoll_status_t s_ = (x);                                                             \
        if (s_ != SYMCOLL_OK)                                                                  \
            harness_fail("%s:%d: %s: %s", __FILE__, __LINE__, #x, symcoll_status_string(s_));  \
    } while (0)

/* The GPU of a rank: rank % the number of GPUs. */
void gpu_set_device(int rank);

/* Rank @a rank's inputs for @a salt (refcheck_spec_t's seed; symcoll's avg rule) into
 * host memory, and their check there: a wrong element ends the rank, naming @a what, the
 * first wrong element and how many are wrong. */
void gpu_host_fill(void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
                   int nranks, int salt);
void gpu_host_verify(const void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                     int nranks, int salt, const char *what);

/* The byte gpu_fill poisons outputs with: one no result of datatype @a t is made of
 * (GPU_POISON for the wider datatypes). */
#define GPU_POISON 0x7b
int gpu_poison(symcoll_dtype_t t);

/* Fills device buffer @a dev with rank @a rank's inputs through @a host (count elements
 * of room) on stream @a s, and poisons @a out (if not NULL or @a dev) so that output a
 * call left unwritten shows (gpu_poison). */
void gpu_fill(void *dev, void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
              int nranks, int salt, void *host, cudaStream_t s);

/* Copies @a dev to @a host after the work queued on @a s and checks it as
 * gpu_host_verify does. */
void gpu_verify(const void *dev, size_t count, symcoll_dtype_t t, symcoll_op_t op, int nranks,
                int salt, void *host, cudaStream_t s, const char *what);

/* main() of a GPU test program. Sets UCX over TCP on loopback (unless the caller set
 * UCX_TLS), counts the GPUs in a child process (CUDA must not start before the
 * harness's forks) and runs make_suite(gpus)'s cases. Without a GPU it checks on
 * @a nogpu_nnodes simulated nodes that CUDA memory is refused with
 * SYMCOLL_ERR_UNSUPPORTED and the host all-reduce still works, then returns 77 (skip),
 * or 1 if that failed. */
struct Suite;
int gpu_tests_main(struct Suite *(*make_suite)(int ngpus), int nogpu_nnodes);

#endif
