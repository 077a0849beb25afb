/* What the GPU test programs share (test_cuda on one node, test_cuda_net across simulated
 * nodes): checks of CUDA and symcoll calls, device buffers filled and checked with the
 * inputs and reference of tools/refcheck.h, main's skip logic and the cases' TCases. */
#ifndef SYMCOLL_TESTS_CUDA_TESTLIB_H
#define SYMCOLL_TESTS_CUDA_TESTLIB_H

#include <check.h>
#include <stdatomic.h>
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

/* ---- reduce-scatter, all-gather, broadcast and the stream barrier on device memory -- */

/* Every collective besides all-reduce on comm, on stream @a s, checked exactly against a
 * reference: reduce-scatter of a few datatypes x operators, all-gather of 1-, 2-, 4- and
 * 8-byte elements, broadcast from the first and the last rank, at 1, 7, 1001 and 40009
 * elements a rank, in and out of place (out of place: the bytes after the result stay
 * untouched), on plain (cudaMalloc) and, if @a pool, CUDA pool buffers. @a quick: fewer
 * datatypes (ranks sharing one GPU across simulated nodes). @a where names the case in
 * failures. Returns the next unused salt. */
int gpu_coll_sweep(symcoll_comm_h comm, int rank, int nranks, cudaStream_t s, int pool,
                   int quick, int salt, const char *where);

/* Every datatype at 7 and 1001 elements a rank, in and out of place, on CUDA pool and
 * plain buffers: reduce-scatter with every operator, all-gather, and broadcast from rank
 * (datatype % nranks); checked as gpu_coll_sweep does. Returns the next unused salt. */
int gpu_coll_types(symcoll_comm_h comm, int rank, int nranks, cudaStream_t s, int salt,
                   const char *where);

/* What the ranks of gpu_barrier_order share (memory mapped before the harness forks):
 * per round, when each rank's stream finished its work before the barrier and when work
 * after it started (CLOCK_MONOTONIC ns), and every rank's IPC handle of its buffer. */
#define GPU_BAR_ROUNDS 4
#define GPU_BAR_MAX_RANKS 8
typedef struct {
    _Atomic long long before[GPU_BAR_ROUNDS][GPU_BAR_MAX_RANKS];
    _Atomic long long after[GPU_BAR_ROUNDS][GPU_BAR_MAX_RANKS];
    cudaIpcMemHandle_t handle[GPU_BAR_MAX_RANKS];
} gpu_bar_shared_t;

/* A shared gpu_bar_shared_t (mmap, MAP_SHARED) for the forks of harness_run. */
gpu_bar_shared_t *gpu_bar_shared_new(void);

/* The stream barrier (symcoll_barrier on a stream): in each round one rank's stream is
 * held back (a host function sleeps) before every rank's stream writes a byte value of
 * (round, rank) into its own device buffer; after the barrier each stream records when
 * it went on and copies every peer's buffer (CUDA IPC); a second barrier keeps the next
 * round's writes behind those copies. Every copy must hold the peer's value of the round,
 * and no stream may go on before every stream finished its work before the barrier.
 * First, a barrier on a capturing stream, before any stream barrier ran, must return
 * @a capture_status (SYMCOLL_ERR_IN_PROGRESS inside a node: its scratch is allocated by
 * the first barrier outside a capture; SYMCOLL_ERR_UNSUPPORTED across nodes); last, a
 * barrier on cudaStreamLegacy must work. */
void gpu_barrier_order(symcoll_comm_h comm, int rank, int nranks, gpu_bar_shared_t *sh,
                       symcoll_status_t capture_status);

/* main() of a GPU test program. Sets UCX over TCP on loopback (unless the caller set
 * UCX_TLS), counts the GPUs in a child process (CUDA must not start before the
 * harness's forks) and runs make_suite(gpus)'s cases. Without a GPU it checks on
 * @a nogpu_nnodes simulated nodes that CUDA memory is refused with
 * SYMCOLL_ERR_UNSUPPORTED and the host all-reduce still works, then returns 77 (skip),
 * or 1 if that failed. */
int gpu_tests_main(Suite *(*make_suite)(int ngpus), int nogpu_nnodes);

/* One case of a GPU suite: its name (CK_RUN_CASE=name runs it alone), its test and the
 * GPUs it needs. */
typedef struct gpu_case {
    const char *name;
    const TTest *test;
    int min_gpus;
} gpu_case_t;

/* Adds the cases of @a cases[0 .. n) that @a ngpus GPUs can run to @a su, one TCase each
 * (tagged @a tags unless NULL), with the GPU tests' timeout. */
void gpu_add_cases(Suite *su, const gpu_case_t *cases, size_t n, int ngpus, const char *tags);

#endif
