/**
 * @file symcoll.h
 * @brief symcoll: collective operations over symmetric memory, for GPUs and CPUs.
 *
 * symcoll keeps, per communicator and memory type, a growable pool of buffers that
 * sit at the same offset on every rank and are mapped by every peer that can reach
 * them. All-reduce inside a node goes through IPC mappings of the pool (memfd for host
 * memory, CUDA VMM for GPU memory); across nodes through UCX one-sided puts.
 *
 * Conventions (as in UCX/UCC):
 *  - handles are opaque pointers;
 *  - every parameter or attribute struct starts with @c field_mask: the library reads
 *    only the fields whose bit is set, and rejects unknown bits;
 *  - every call returns a ::symcoll_status_t; output arguments (ending in @c _p) are
 *    written only on success;
 *  - the library never exits, aborts or prints except through its logger.
 */
#ifndef SYMCOLL_H
#define SYMCOLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the public API; everything else is hidden. */
#if defined(__GNUC__)
#define SYMCOLL_EXPORT __attribute__((visibility("default")))
#else
#define SYMCOLL_EXPORT
#endif

/** @name Version */
/**@{*/
#define SYMCOLL_API_MAJOR 0 /**< API major version this header describes */
#define SYMCOLL_API_MINOR 1 /**< API minor version this header describes */
/**@}*/

/**
 * @brief Status codes. @c SYMCOLL_OK is zero, every error is negative.
 */
typedef enum {
    SYMCOLL_OK = 0,                 /**< success */
    SYMCOLL_ERR_INVALID_PARAM = -1, /**< an argument or configuration value is invalid */
    SYMCOLL_ERR_NO_MEMORY = -2,     /**< out of memory, or the pool reached its ceiling */
    SYMCOLL_ERR_UNSUPPORTED = -3,   /**< not supported by this build, machine or layer */
    SYMCOLL_ERR_TIMED_OUT = -4,     /**< a wait passed its deadline (SYMCOLL_TIMEOUT) */
    SYMCOLL_ERR_PEER_FAILED = -5,   /**< a peer process died or its endpoint failed */
    SYMCOLL_ERR_ABORTED = -6,       /**< the communicator was aborted */
    SYMCOLL_ERR_MISMATCH = -7,      /**< ranks disagree (arguments, sequence numbers) */
    SYMCOLL_ERR_SYSTEM = -8,        /**< an operating-system call failed */
    SYMCOLL_ERR_CUDA = -9,          /**< a CUDA call failed */
    SYMCOLL_ERR_UCX = -10,          /**< a UCX call failed */
    SYMCOLL_ERR_BOOTSTRAP = -11,    /**< the out-of-band exchange failed or was malformed */
    SYMCOLL_ERR_INTERNAL = -12,     /**< an internal invariant failed (a bug) */
    SYMCOLL_ERR_IN_PROGRESS = -13,  /**< the operation cannot run now (e.g. pool growth
                                         during CUDA stream capture) */
    SYMCOLL_ERR_LAST = -14          /**< one past the last error code */
} symcoll_status_t;

/** @brief Opaque communicator handle. */
typedef struct symcoll_comm *symcoll_comm_h;

/** @brief Element types. */
typedef enum {
    SYMCOLL_INT8 = 0,
    SYMCOLL_UINT8,
    SYMCOLL_INT32,
    SYMCOLL_UINT32,
    SYMCOLL_INT64,
    SYMCOLL_UINT64,
    SYMCOLL_FLOAT16,  /**< IEEE 754 binary16; reduced with float32 accumulation */
    SYMCOLL_BFLOAT16, /**< bfloat16; reduced with float32 accumulation */
    SYMCOLL_FLOAT32,
    SYMCOLL_FLOAT64,
    SYMCOLL_DTYPE_LAST /**< number of types; not a type */
} symcoll_dtype_t;

/** @brief Reduction operators. */
typedef enum {
    SYMCOLL_SUM = 0,
    SYMCOLL_PROD,
    SYMCOLL_MIN,
    SYMCOLL_MAX,
    SYMCOLL_AVG,    /**< sum divided by the number of ranks (integer types: truncated) */
    SYMCOLL_OP_LAST /**< number of operators; not an operator */
} symcoll_op_t;

/** @brief Memory types the pool serves. */
typedef enum {
    SYMCOLL_MEM_HOST = 0, /**< host memory (memfd segments) */
    SYMCOLL_MEM_CUDA = 1, /**< CUDA device memory (VMM segments) */
    SYMCOLL_MEM_LAST
} symcoll_mem_type_t;

/**
 * @brief Out-of-band allgather supplied by the caller.
 *
 * Gathers @a size bytes from every rank's @a src into @a dst (nranks * size bytes,
 * ordered by rank). Must return 0 on success. An MPI code passes a wrapper around
 * MPI_Allgather(src, size, MPI_BYTE, dst, size, MPI_BYTE, comm).
 */
typedef int (*symcoll_allgather_fn_t)(const void *src, void *dst, size_t size, void *ctx);

/** @brief Bits of symcoll_comm_params_t::field_mask. */
enum symcoll_comm_params_field {
    SYMCOLL_COMM_PARAM_FIELD_RANK = 1u << 0,        /**< rank */
    SYMCOLL_COMM_PARAM_FIELD_NRANKS = 1u << 1,      /**< nranks */
    SYMCOLL_COMM_PARAM_FIELD_ALLGATHER = 1u << 2,   /**< allgather and allgather_ctx */
    SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE = 1u << 3, /**< cuda_device */
    SYMCOLL_COMM_PARAM_FIELD_TIMEOUT = 1u << 4      /**< timeout_sec */
};

/**
 * @brief Communicator creation parameters.
 *
 * With no field set, rank and size come from the environment (SYMCOLL_RANK and
 * SYMCOLL_NRANKS, else Open MPI, PMI or Slurm variables) and the built-in TCP
 * bootstrap connects to SYMCOLL_ADDR. With an allgather callback, @c rank and
 * @c nranks must be given too.
 */
typedef struct symcoll_comm_params {
    uint64_t field_mask;              /**< which fields below are valid */
    int rank;                         /**< this process's rank, 0..nranks-1 */
    int nranks;                       /**< number of ranks */
    symcoll_allgather_fn_t allgather; /**< out-of-band allgather (optional) */
    void *allgather_ctx;              /**< passed to allgather */
    int cuda_device;                  /**< CUDA device for GPU memory (default: current) */
    double timeout_sec;               /**< deadline of every wait (default SYMCOLL_TIMEOUT) */
} symcoll_comm_params_t;

/** @brief Bits of symcoll_pool_attr_t::field_mask. */
enum symcoll_pool_attr_field {
    SYMCOLL_POOL_ATTR_FIELD_RESERVED = 1u << 0,
    SYMCOLL_POOL_ATTR_FIELD_MAPPED = 1u << 1,
    SYMCOLL_POOL_ATTR_FIELD_IN_USE = 1u << 2,
    SYMCOLL_POOL_ATTR_FIELD_PEAK = 1u << 3,
    SYMCOLL_POOL_ATTR_FIELD_GROWTHS = 1u << 4,
    SYMCOLL_POOL_ATTR_FIELD_SEGMENTS = 1u << 5
};

/** @brief Pool statistics; set field_mask to the fields wanted. */
typedef struct symcoll_pool_attr {
    uint64_t field_mask; /**< which fields to fill */
    size_t reserved;     /**< virtual address space reserved, bytes */
    size_t mapped;       /**< bytes mapped in segments */
    size_t in_use;       /**< bytes handed out (user buffers and staging) */
    size_t peak;         /**< highest in_use seen */
    uint64_t growths;    /**< number of segments added since creation */
    uint64_t segments;   /**< segments mapped now */
} symcoll_pool_attr_t;

/** @brief Human-readable text of a status code (never NULL). */
SYMCOLL_EXPORT const char *symcoll_status_string(symcoll_status_t status);

/** @brief Library version, as a string "MAJOR.MINOR.PATCH". */
SYMCOLL_EXPORT const char *symcoll_version_string(void);

/** @brief Library version numbers; any pointer may be NULL. */
SYMCOLL_EXPORT void symcoll_get_version(unsigned *major_p, unsigned *minor_p,
                                        unsigned *patch_p);

/**
 * @brief Build configuration as one line of text (CUDA on/off, UCX version, ...).
 */
SYMCOLL_EXPORT const char *symcoll_build_info(void);

/** @brief Flags of symcoll_config_print(). */
enum symcoll_config_print_flags {
    SYMCOLL_CONFIG_PRINT_DOC = 1u << 0 /**< include each variable's documentation */
};

/**
 * @brief Print every SYMCOLL_* configuration variable: name, default, current value
 *        (from the environment), and with SYMCOLL_CONFIG_PRINT_DOC its documentation.
 * @return SYMCOLL_ERR_INVALID_PARAM if a variable holds a value that does not parse
 *         (the table is still printed, the bad value marked).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_config_print(FILE *stream, unsigned flags);

/** @brief Size in bytes of one element of @a dtype, or 0 if invalid. */
SYMCOLL_EXPORT size_t symcoll_dtype_size(symcoll_dtype_t dtype);

/** @brief Name of a datatype ("bfloat16", ...) or NULL if invalid. */
SYMCOLL_EXPORT const char *symcoll_dtype_name(symcoll_dtype_t dtype);

/** @brief Name of an operator ("sum", ...) or NULL if invalid. */
SYMCOLL_EXPORT const char *symcoll_op_name(symcoll_op_t op);

/**
 * @brief Create a communicator (collective over all ranks).
 *
 * Reads and validates the SYMCOLL_* configuration (a bad value fails with
 * SYMCOLL_ERR_INVALID_PARAM and a log line naming the variable), runs the bootstrap,
 * probes the topology and sets up the transports.
 *
 * @param params   creation parameters (may be NULL: all from the environment)
 * @param comm_p   the new communicator, written only on success
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_create(const symcoll_comm_params_t *params,
                                                    symcoll_comm_h *comm_p);

/**
 * @brief Destroy a communicator (collective). Releases every pool, mapping, file
 *        descriptor, UCX resource and socket. After this the handle is invalid; passing
 *        it again returns SYMCOLL_ERR_INVALID_PARAM.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_destroy(symcoll_comm_h comm);

/**
 * @brief Abort a communicator; callable from any thread, not collective.
 *
 * Every pending and future call on @a comm returns an error promptly (this rank's
 * with SYMCOLL_ERR_ABORTED; peers see SYMCOLL_ERR_ABORTED, SYMCOLL_ERR_PEER_FAILED or
 * SYMCOLL_ERR_TIMED_OUT). The handle must still be destroyed.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_abort(symcoll_comm_h comm);

/** @brief This process's rank in @a comm. */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_rank(symcoll_comm_h comm, int *rank_p);

/** @brief Number of ranks of @a comm. */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_size(symcoll_comm_h comm, int *size_p);

/**
 * @brief All-reduce @a count elements (collective).
 *
 * In place when @a sendbuf == @a recvbuf. Host memory: blocking. CUDA memory: ordered
 * on @a stream (a cudaStream_t passed as void *, NULL for the default stream). Inside
 * a node it is capturable into a CUDA graph once the pool is large enough, and buffers
 * allocated with symcoll_mem_alloc() are reduced without staging copies. Across nodes
 * the call returns once the operation is queued: the stream stages the data through
 * pinned host memory and progress threads (lanes) move it over the network (with
 * several ranks a node whose GPUs map each other, only each rank's slice of the node's
 * sum, reduced and gathered by kernels over the CUDA pool); any other
 * call on the communicator first waits for the queued operations, and a failed one
 * releases its stream and makes every later call return its error. Every rank gets
 * bitwise identical results.
 *
 * @return SYMCOLL_ERR_INVALID_PARAM (no side effect) for a NULL or destroyed
 *         communicator, NULL buffers with count > 0, an invalid datatype or operator,
 *         or a byte size that overflows; SYMCOLL_ERR_UNSUPPORTED (no side effect) for
 *         CUDA memory across nodes on a stream being captured into a graph.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream);

/**
 * @brief Allocate @a size bytes of symmetric memory from the pool (collective; every
 *        rank must pass the same size and type). The buffer sits at the same pool
 *        offset on every rank. Grows the pool when needed.
 * @return SYMCOLL_ERR_NO_MEMORY if the pool cannot grow (it is left as it was),
 *         SYMCOLL_ERR_MISMATCH if ranks passed different arguments.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_mem_alloc(symcoll_comm_h comm, size_t size,
                                                  symcoll_mem_type_t mem_type, void **ptr_p);

/** @brief Free a buffer from symcoll_mem_alloc() (collective). */
SYMCOLL_EXPORT symcoll_status_t symcoll_mem_free(symcoll_comm_h comm, void *ptr);

/** @brief Read pool statistics; safe from any thread. */
SYMCOLL_EXPORT symcoll_status_t symcoll_pool_query(symcoll_comm_h comm,
                                                   symcoll_mem_type_t mem_type,
                                                   symcoll_pool_attr_t *attr_p);

/** @brief Unmap unused tail segments of the pool (collective). */
SYMCOLL_EXPORT symcoll_status_t symcoll_pool_trim(symcoll_comm_h comm,
                                                  symcoll_mem_type_t mem_type);

/**
 * @brief Print the topology @a comm was created on: every rank's facts (host identity,
 *        pid, CPU and NUMA node, CUDA device, PCI bus id, UUID, UCX capabilities), the
 *        node map and each node's GPU link matrix (peer access, NVLink count, CUDA P2P
 *        performance rank). Not collective: every rank holds the gathered facts.
 * @return SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or stream.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_topology(symcoll_comm_h comm, FILE *stream);

/**
 * @brief Print the all-reduce decision table of @a comm: for each memory type and each
 *        message size from 8 B to 1 GiB (powers of two), the algorithm the selector
 *        picks on this topology with the current SYMCOLL_* settings, and why.
 *        Not collective.
 * @return SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or stream.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_decisions(symcoll_comm_h comm, FILE *stream);

#ifdef __cplusplus
}
#endif

#endif /* SYMCOLL_H */
