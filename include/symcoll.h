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
 *  - the library never exits, aborts or prints except through its logger;
 *  - the header and the library check each other's API version when a communicator is
 *    created (symcoll_comm_create() passes ::SYMCOLL_API_MAJOR and ::SYMCOLL_API_MINOR
 *    to symcoll_comm_create_version()).
 *
 * Contract:
 *  - Memory types: host memory and CUDA device memory. symcoll_allreduce() asks the
 *    CUDA driver about each buffer (CU_POINTER_ATTRIBUTE_MEMORY_TYPE): device memory is
 *    CUDA memory; anything else, pinned host memory included, is host memory, and so is
 *    every buffer in a build without CUDA or on a machine without a CUDA driver. A send
 *    and a receive buffer of different types fail with SYMCOLL_ERR_INVALID_PARAM.
 *  - Completion: on host memory a call is blocking: when it returns, the result is in
 *    the receive buffer and both buffers may be reused. On CUDA memory it is ordered on
 *    the caller's stream: the result is there for work queued after it on that stream,
 *    and the buffers must stay untouched until the stream has passed it.
 *  - In place when the send buffer is the receive buffer; the two must not overlap in
 *    any other way.
 *  - CUDA graphs: inside a node (every rank of the communicator on one host) an
 *    all-reduce on CUDA memory can be captured into a graph, once the pool holds the
 *    staging it needs: the staging never grows under capture (such a call fails with
 *    SYMCOLL_ERR_IN_PROGRESS), so run the largest call once before capturing; a first
 *    staging is carved during the capture, with no exchange, where the pool has room
 *    for it (symcoll_pool_reserve()). The graph uses the staging of its capture, which
 *    stays while the graph lives: a larger call outside the capture grows the staging
 *    elsewhere, and symcoll_pool_trim() and symcoll_comm_destroy() keep what live
 *    graphs use. Each
 *    launch of the graph is an all-reduce: every rank
 *    launches it at the same place in its sequence of collective calls. Across nodes
 *    the work is done by host threads on every call, so a call on a capturing stream
 *    fails with SYMCOLL_ERR_UNSUPPORTED and changes nothing.
 *  - Collective calls: symcoll_comm_create(), symcoll_comm_destroy(),
 *    symcoll_allreduce(), symcoll_mem_alloc(), symcoll_pool_trim() and
 *    symcoll_pool_reserve() must be called by every rank of the communicator, in the
 *    same order and with matching arguments (ranks that disagree get
 *    SYMCOLL_ERR_MISMATCH where the library can tell; otherwise a timeout or an
 *    undefined result). symcoll_mem_free() does not communicate, but the pool's
 *    allocator must stay the same on every rank: every rank frees the same buffers
 *    between the same two collective calls, in any order (a difference fails the
 *    pool's next exchange or, for CUDA allocations made without one, the next
 *    collective call with SYMCOLL_ERR_MISMATCH: see symcoll_mem_alloc()). Every other
 *    call is local.
 *  - Threads: a communicator's collective calls and symcoll_mem_free() take its lock,
 *    so several threads may make them, one at a time; the order in which they take the
 *    lock is the order of the collective, and it must be the same on every rank (the
 *    threads have to agree on it themselves). symcoll_comm_abort() may be called from
 *    any thread at any time, also while another thread waits inside a call or destroys
 *    the communicator (it then returns SYMCOLL_ERR_INVALID_PARAM if the destroy won);
 *    symcoll_pool_query(), symcoll_comm_rank(), symcoll_comm_size() and the print
 *    calls do not take the lock. No other call on a communicator may run concurrently
 *    with its symcoll_comm_destroy().
 *  - Out-of-band allgather: a callback given at creation is called during
 *    symcoll_comm_create() and afterwards too, from inside the collectives,
 *    symcoll_mem_alloc(), symcoll_pool_trim() and symcoll_pool_reserve() (creation of a
 *    pool on the first use of a memory type, pool growth and the allocations that agree
 *    at once, the check of allocations made without an exchange, the algorithms'
 *    staging and setup, trim), on the calling thread with the communicator's lock held.
 *    The callback and its context must stay valid until symcoll_comm_destroy(), and the
 *    callback must not call symcoll on the same communicator.
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

/**
 * @name API version
 * The version of the interface this header describes (the package's release is
 * symcoll_get_version()). The major changes when the interface changes incompatibly,
 * the minor when something is added (a call, a field, a flag). symcoll_comm_create()
 * passes both to the library, which refuses another major and a newer minor.
 */
/**@{*/
#define SYMCOLL_API_MAJOR 0 /**< API major version this header describes */
#define SYMCOLL_API_MINOR 5 /**< API minor version this header describes */
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
 * ordered by rank). An MPI code passes a wrapper around
 * MPI_Allgather(src, size, MPI_BYTE, dst, size, MPI_BYTE, comm). Any return value but 0
 * fails the symcoll call with SYMCOLL_ERR_BOOTSTRAP, and every later exchange of the
 * communicator too. It is called after creation as well (see the contract at the top
 * of this file): it and its context must stay valid until symcoll_comm_destroy().
 *
 * @param[in]  src   this rank's @a size bytes
 * @param[out] dst   nranks * @a size bytes, rank r's contribution at offset r * size
 * @param[in]  size  bytes per rank, the same on every rank
 * @param[in]  ctx   symcoll_comm_params_t::allgather_ctx
 * @return 0 on success, any other value on failure.
 */
typedef int (*symcoll_allgather_fn_t)(const void *src, void *dst, size_t size, void *ctx);

/** @brief Bits of symcoll_comm_params_t::field_mask. */
enum symcoll_comm_params_field {
    SYMCOLL_COMM_PARAM_FIELD_RANK = 1u << 0,            /**< rank */
    SYMCOLL_COMM_PARAM_FIELD_NRANKS = 1u << 1,          /**< nranks */
    SYMCOLL_COMM_PARAM_FIELD_ALLGATHER = 1u << 2,       /**< allgather and allgather_ctx */
    SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE = 1u << 3,     /**< cuda_device */
    SYMCOLL_COMM_PARAM_FIELD_TIMEOUT = 1u << 4,         /**< timeout_sec */
    SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER = 1u << 5, /**< reduction_order (API 0.3) */
    SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE = 1u << 6        /**< tune_file (API 0.4) */
};

/**
 * @brief Order of float sums, products and averages (symcoll_comm_params_t::reduction_order;
 *        default SYMCOLL_REDUCTION_ORDER, itself auto by default).
 */
typedef enum symcoll_reduction_order {
    /** every element is one fixed pairwise tree of the ranks' values (float16 and bfloat16
     *  accumulated in float32, rounded once): the same bits at any message size, algorithm
     *  and node layout, and a reduce-scatter's block is the all-reduce's slice; host and
     *  CUDA memory, eager and in CUDA graphs */
    SYMCOLL_ORDER_CANONICAL = 0,
    /** the fastest algorithm for the size, whose order may change with the size and the
     *  layout */
    SYMCOLL_ORDER_FASTEST = 1,
    /** canonical where it costs nothing (the default): as SYMCOLL_ORDER_CANONICAL, but
     *  float16 and bfloat16 of 3 ranks or more across nodes move their partial sums in
     *  their own type (rounded at each step, the same bits at any size, not across
     *  layouts) instead of float32 (twice the bytes) */
    SYMCOLL_ORDER_AUTO = 2
} symcoll_reduction_order_t;

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
    double timeout_sec;               /**< deadline of every wait, seconds (default
                                           SYMCOLL_TIMEOUT): more than 0, at most 30 days
                                           (2592000 s); else SYMCOLL_ERR_INVALID_PARAM */
    int reduction_order;              /**< a symcoll_reduction_order_t, the same on every
                                           rank (else creation fails with
                                           SYMCOLL_ERR_INVALID_PARAM on every rank) */
    const char *tune_file;            /**< tuning file (symcoll_tune(1)) instead of
                                           SYMCOLL_TUNE_FILE; "" for none; at most 255
                                           bytes; read during the call only */
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

/**
 * @brief Human-readable text of a status code.
 * @param[in] status  any value, also one outside ::symcoll_status_t
 * @return a static string, never NULL ("unknown status" for a value that is no code).
 */
SYMCOLL_EXPORT const char *symcoll_status_string(symcoll_status_t status);

/**
 * @brief Library version, as a string "MAJOR.MINOR.PATCH".
 * @return a static string, never NULL.
 */
SYMCOLL_EXPORT const char *symcoll_version_string(void);

/**
 * @brief Library version numbers.
 * @param[out] major_p  major version (may be NULL)
 * @param[out] minor_p  minor version (may be NULL)
 * @param[out] patch_p  patch level (may be NULL)
 */
SYMCOLL_EXPORT void symcoll_get_version(unsigned *major_p, unsigned *minor_p,
                                        unsigned *patch_p);

/**
 * @brief Build configuration as one line of text (CUDA on/off, UCX version, ...).
 * @return a static string, never NULL.
 */
SYMCOLL_EXPORT const char *symcoll_build_info(void);

/** @brief Flags of symcoll_config_print(). */
enum symcoll_config_print_flags {
    SYMCOLL_CONFIG_PRINT_DOC = 1u << 0 /**< include each variable's documentation */
};

/**
 * @brief Print every SYMCOLL_* configuration variable: name, default, current value
 *        (from the environment), and with SYMCOLL_CONFIG_PRINT_DOC its documentation.
 * @param[in] stream  where to print
 * @param[in] flags   bits of ::symcoll_config_print_flags
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL @a stream or unknown
 *         @a flags (nothing printed), or if a variable holds a value that does not
 *         parse (the table is still printed, the bad value marked).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_config_print(FILE *stream, unsigned flags);

/**
 * @brief Size of one element.
 * @param[in] dtype  element type
 * @return the size in bytes, or 0 if @a dtype is invalid.
 */
SYMCOLL_EXPORT size_t symcoll_dtype_size(symcoll_dtype_t dtype);

/**
 * @brief Name of a datatype.
 * @param[in] dtype  element type
 * @return a static string ("bfloat16", ...), or NULL if @a dtype is invalid.
 */
SYMCOLL_EXPORT const char *symcoll_dtype_name(symcoll_dtype_t dtype);

/**
 * @brief Name of an operator.
 * @param[in] op  reduction operator
 * @return a static string ("sum", ...), or NULL if @a op is invalid.
 */
SYMCOLL_EXPORT const char *symcoll_op_name(symcoll_op_t op);

/**
 * @brief Create a communicator (collective over all ranks), checking the API version of
 *        the caller's header against the library's.
 *
 * Call it through symcoll_comm_create(), which passes the version of the header the
 * caller was built with. A different major, or a minor newer than the library's (the
 * caller may set fields or flags this library does not know), is refused before
 * anything else is read; an older minor is accepted.
 *
 * Reads and validates the SYMCOLL_* configuration (a bad value fails with
 * SYMCOLL_ERR_INVALID_PARAM and a log line naming the variable), runs the bootstrap,
 * probes the topology and sets up the transports. Pools are created by the first call
 * that needs one.
 *
 * @param[in]  api_major  ::SYMCOLL_API_MAJOR of the caller's header
 * @param[in]  api_minor  ::SYMCOLL_API_MINOR of the caller's header
 * @param[in]  params     creation parameters (may be NULL: all from the environment);
 *                        read only during the call, except the allgather callback and
 *                        its context, which must stay valid until
 *                        symcoll_comm_destroy()
 * @param[out] comm_p     the new communicator, written only on success
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_UNSUPPORTED (logged, nothing done) for an API version this
 *         library cannot serve;
 *         SYMCOLL_ERR_INVALID_PARAM for a NULL @a comm_p, unknown field_mask bits, an
 *         allgather without rank and nranks, rank without nranks or the reverse, a rank
 *         outside 0..nranks-1, rank and size neither given nor in the environment, a
 *         timeout (parameter or SYMCOLL_TIMEOUT) that is not finite, not positive or
 *         above 30 days (2592000 s), a negative CUDA device, or a SYMCOLL_* variable
 *         that does not parse or cannot be served on this topology;
 *         otherwise the error of the step that failed on this rank or a peer
 *         (SYMCOLL_ERR_BOOTSTRAP, SYMCOLL_ERR_TIMED_OUT, SYMCOLL_ERR_MISMATCH,
 *         SYMCOLL_ERR_PEER_FAILED, SYMCOLL_ERR_UCX, SYMCOLL_ERR_CUDA, SYMCOLL_ERR_SYSTEM,
 *         SYMCOLL_ERR_NO_MEMORY).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_create_version(unsigned api_major,
                                                            unsigned api_minor,
                                                            const symcoll_comm_params_t *params,
                                                            symcoll_comm_h *comm_p);

/**
 * @brief Create a communicator (collective over all ranks).
 *
 * symcoll_comm_create_version() with the API version of this header, so that a
 * program built against another version of symcoll fails here with
 * SYMCOLL_ERR_UNSUPPORTED instead of misreading its arguments later.
 *
 * @param[in]  params  creation parameters (may be NULL: all from the environment)
 * @param[out] comm_p  the new communicator, written only on success
 * @return as symcoll_comm_create_version().
 */
static inline symcoll_status_t symcoll_comm_create(const symcoll_comm_params_t *params,
                                                   symcoll_comm_h *comm_p)
{
    return symcoll_comm_create_version(SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR, params, comm_p);
}

/**
 * @brief Destroy a communicator (collective). Releases every pool, mapping, file
 *        descriptor, UCX resource and socket. After this the handle is invalid; passing
 *        it again returns SYMCOLL_ERR_INVALID_PARAM.
 *
 * Waits for the all-reduces across nodes still queued on CUDA streams; the caller
 * makes sure that no other work queued on a stream still uses the communicator or its
 * buffers (synchronise the streams first). Across nodes it waits (up to the timeout)
 * for the peers to reach their destroy, then closes the connections anyway. Buffers
 * from symcoll_mem_alloc() are unmapped with the pools, except the CUDA pool while CUDA
 * graphs that captured calls on @a comm exist: it stays mapped until the last of them
 * (and the executable graphs made from them) is destroyed; a replay after the destroy
 * ends early (its kernels stop at their first wait; the output is undefined).
 *
 * @param[in] comm  the communicator; no other call on it may run at the same time
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM (nothing done) for a NULL or destroyed
 *         communicator.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_destroy(symcoll_comm_h comm);

/** Color of symcoll_comm_split() for a rank that joins no new communicator. */
#define SYMCOLL_SPLIT_NOCOLOR (-1)

/**
 * @brief Split a communicator by color and key (collective over @a comm), as
 *        MPI_Comm_split: the ranks that pass the same @a color form a new communicator,
 *        ranked by @a key, then by their rank in @a comm.
 *
 * No new rendezvous: the ranks exchange their color, key and where they listen over
 * @a comm's bootstrap, and each new communicator connects its own bootstrap mesh among
 * its ranks; it shares the process's UCP context, and has its own pools, failure state
 * and algorithm choices (its own layout: a part inside one node takes the node's paths).
 * @a comm and the new communicators may be used from different threads at the same time
 * and destroyed in any order.
 *
 * @param[in]  comm       the communicator to split; no other call on it may run at the
 *                        same time
 * @param[in]  color      >= 0, or ::SYMCOLL_SPLIT_NOCOLOR to join none
 * @param[in]  key        the order among the ranks of one color
 * @param[in]  params     NULL (inherit @a comm's settings), or with
 *                        ::SYMCOLL_COMM_PARAM_FIELD_TIMEOUT and
 *                        ::SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE at most (no rank, size or
 *                        allgather: the ranks come from @a comm)
 * @param[out] newcomm_p  the new communicator, or NULL for ::SYMCOLL_SPLIT_NOCOLOR
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM (nothing done) for a bad argument; the
 *         status of @a comm's failure (it is then good only for symcoll_comm_destroy());
 *         SYMCOLL_ERR_PEER_FAILED, SYMCOLL_ERR_TIMED_OUT or SYMCOLL_ERR_ABORTED when a
 *         rank of the new communicator failed while it was made.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_split(symcoll_comm_h comm, int color, int key,
                                                   const symcoll_comm_params_t *params,
                                                   symcoll_comm_h *newcomm_p);

/**
 * @brief Make a communicator of the live ranks of a failed one (collective over the
 *        ranks of @a comm that are still alive).
 *
 * Called by the survivors after @a comm reported ::SYMCOLL_ERR_PEER_FAILED,
 * ::SYMCOLL_ERR_TIMED_OUT or ::SYMCOLL_ERR_ABORTED (or at any time: with every rank
 * alive the new communicator holds them all). The callers agree, within the timeout, on
 * the ranks that are alive and get a communicator of those ranks in @a comm's order,
 * made without a rendezvous (each rank listens for this since @a comm was created).
 * The lowest rank that answers coordinates; a rank that dies while they agree is left
 * out; a rank that is alive but comes after they agreed (or is stopped) is left out:
 * when it calls, it gets ::SYMCOLL_ERR_TIMED_OUT while the others still hold @a comm,
 * and a communicator of the late ranks only (maybe of itself alone) once they
 * destroyed it. Silent ranks (stopped, hung) below a caller cost it a quarter of the
 * timeout together (it asks them all at once). A failure of a chosen rank after the
 * agreement makes the call fail with that failure's status on the others: call again.
 * The call first aborts @a comm (as symcoll_comm_abort(): ranks still waiting in one
 * of its calls hear of it at once and come to the agreement sooner); @a comm is then
 * good only for symcoll_comm_destroy() (and further shrinks).
 *
 * @param[in]  comm       the failed communicator; no other call on it may run at the
 *                        same time on this rank
 * @param[in]  params     NULL (inherit @a comm's settings), or with
 *                        ::SYMCOLL_COMM_PARAM_FIELD_TIMEOUT (which also bounds the
 *                        agreement) and ::SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE at most
 * @param[out] newcomm_p  the new communicator
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM (nothing done) for a bad argument;
 *         SYMCOLL_ERR_TIMED_OUT when this rank came too late or nobody answered in time;
 *         SYMCOLL_ERR_PEER_FAILED or SYMCOLL_ERR_BOOTSTRAP when a chosen rank failed
 *         after the agreement (call again); SYMCOLL_ERR_UNSUPPORTED when this rank had
 *         no listener for it.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_shrink(symcoll_comm_h comm,
                                                    const symcoll_comm_params_t *params,
                                                    symcoll_comm_h *newcomm_p);

/**
 * @brief Abort a communicator; callable from any thread, not collective.
 *
 * Every pending and future call on @a comm returns an error promptly (this rank's
 * with SYMCOLL_ERR_ABORTED; peers see SYMCOLL_ERR_ABORTED, SYMCOLL_ERR_PEER_FAILED or
 * SYMCOLL_ERR_TIMED_OUT). The handle must still be destroyed.
 *
 * Racing symcoll_comm_destroy() of the same communicator on another thread is safe:
 * an abort that gets in first completes before the destroy tears anything down; once
 * the destroy has begun, the abort does nothing and returns SYMCOLL_ERR_INVALID_PARAM.
 *
 * @param[in] comm  the communicator
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator,
 *         or one whose symcoll_comm_destroy() has begun.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_abort(symcoll_comm_h comm);

/**
 * @brief This process's rank in @a comm. Not collective.
 * @param[in]  comm    the communicator
 * @param[out] rank_p  the rank, 0..nranks-1
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or
 *         a NULL @a rank_p.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_rank(symcoll_comm_h comm, int *rank_p);

/**
 * @brief Number of ranks of @a comm. Not collective.
 * @param[in]  comm    the communicator
 * @param[out] size_p  the number of ranks
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or
 *         a NULL @a size_p.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_size(symcoll_comm_h comm, int *size_p);

/**
 * @brief All-reduce @a count elements (collective).
 *
 * In place when @a sendbuf == @a recvbuf. Host memory: blocking. CUDA memory: ordered
 * on @a stream (a cudaStream_t passed as void *, NULL for the default stream). Inside
 * a node it is capturable into a CUDA graph once the pool is large enough, and buffers
 * allocated with symcoll_mem_alloc() are reduced without staging copies. Across nodes
 * the call returns once the operation is queued: the stream stages the data through
 * pinned host memory and progress threads (channels) move it over the network (with
 * several ranks a node whose GPUs map each other, only each rank's slice of the node's
 * sum, reduced and gathered by kernels over the CUDA pool); any other
 * call on the communicator first waits for the queued operations, and a failed one
 * releases its stream and makes every later call return its error. Every rank gets
 * bitwise identical results.
 *
 * @param[in]  sendbuf  @a count elements of this rank (host or CUDA memory)
 * @param[out] recvbuf  @a count elements of the result, of the same memory type; may
 *                      be @a sendbuf (in place)
 * @param[in]  count    number of elements, the same on every rank; 0 does nothing
 * @param[in]  dtype    element type, the same on every rank
 * @param[in]  op       reduction operator, the same on every rank
 * @param[in]  comm     the communicator
 * @param[in]  stream   cudaStream_t for CUDA memory (NULL: the default stream);
 *                      ignored for host memory
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_INVALID_PARAM (no side effect) for a NULL or destroyed
 *         communicator, NULL buffers with count > 0, buffers of different memory types,
 *         CUDA buffers not aligned to the element size, an invalid datatype or
 *         operator, or a byte size that overflows;
 *         SYMCOLL_ERR_UNSUPPORTED for CUDA memory across nodes on a stream being
 *         captured into a graph (no side effect), CUDA memory in a build without CUDA,
 *         on more GPUs of a node than the kernels serve or on ranks without GPUs, or
 *         an algorithm forced with SYMCOLL_ALGO that does not serve this call (no
 *         algorithm serves it: no side effect);
 *         SYMCOLL_ERR_IN_PROGRESS when the staging would have to grow while @a stream
 *         is being captured, or a first staging does not fit in the pool then;
 *         SYMCOLL_ERR_NO_MEMORY when the pool cannot grow for the staging;
 *         SYMCOLL_ERR_MISMATCH when ranks passed different arguments and the library
 *         sees it (CUDA memory inside a node: the kernels see it after the call
 *         returned, and the next all-reduce on CUDA memory returns it on every rank;
 *         the communicator is then good only for symcoll_comm_destroy()), or when
 *         the ranks' earlier CUDA allocations differ (symcoll_mem_alloc(); the
 *         communicator is then broken);
 *         SYMCOLL_ERR_ABORTED after symcoll_comm_abort() on this rank;
 *         SYMCOLL_ERR_ABORTED, SYMCOLL_ERR_PEER_FAILED or SYMCOLL_ERR_TIMED_OUT when a
 *         peer aborted, died or stopped answering;
 *         SYMCOLL_ERR_CUDA, SYMCOLL_ERR_UCX, SYMCOLL_ERR_SYSTEM or
 *         SYMCOLL_ERR_BOOTSTRAP when a call below failed;
 *         SYMCOLL_ERR_INTERNAL for a state the library should never reach (a bug:
 *         please report it). After an error with a side effect the contents of
 *         @a recvbuf are undefined; after an abort, a peer failure, a timeout, or a
 *         pool whose setup failed, every later collective call (all-reduce,
 *         symcoll_mem_alloc(), symcoll_pool_trim()) returns that error, and the
 *         communicator is good only for symcoll_comm_destroy().
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream);

/**
 * @brief Reduce-scatter: element-wise reduction of every rank's @a sendbuf of
 *        nranks x @a recvcount elements; rank r receives block r of the result
 *        (collective, NCCL's layout).
 *
 * Rules as for symcoll_allreduce(): host memory blocking, CUDA memory ordered on
 * @a stream, the same arguments on every rank, bitwise identical results for a block
 * whichever rank computes it. In place when @a recvbuf == @a sendbuf + rank x
 * @a recvcount elements. CUDA memory runs on every path of symcoll_allreduce() (inside
 * a node capturable into a CUDA graph, across nodes queued), as an all-reduce of the
 * whole @a sendbuf into scratch of the CUDA pool (inside a node: kept and grown like
 * the staging, so a capture that would make it grow returns SYMCOLL_ERR_IN_PROGRESS;
 * warm up with the same call first) or of stream-ordered memory (across nodes), from
 * which this rank's block is copied on @a stream.
 *
 * @param[in]  sendbuf    nranks x @a recvcount elements of this rank
 * @param[out] recvbuf    @a recvcount elements: block (this rank) of the reduction
 * @param[in]  recvcount  elements per rank, the same on every rank; 0 does nothing
 * @param[in]  dtype      element type, the same on every rank
 * @param[in]  op         reduction operator, the same on every rank
 * @param[in]  comm       the communicator
 * @param[in]  stream     cudaStream_t for CUDA memory; ignored for host memory
 * @return as symcoll_allreduce(); also SYMCOLL_ERR_INVALID_PARAM for buffers that
 *         overlap other than in place
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                       size_t recvcount, symcoll_dtype_t dtype,
                                                       symcoll_op_t op, symcoll_comm_h comm,
                                                       void *stream);

/**
 * @brief All-gather: every rank receives the concatenation, in rank order, of every
 *        rank's @a sendcount elements (collective).
 *
 * Rules as for symcoll_allreduce(). In place when @a sendbuf == @a recvbuf + rank x
 * @a sendcount elements. CUDA memory runs on every path of symcoll_allreduce() (inside
 * a node capturable into a CUDA graph, across nodes queued): this rank's block is
 * copied into @a recvbuf and the others zeroed on @a stream, then all of @a recvbuf is
 * reduced bytewise with the maximum, which is exact.
 *
 * @param[in]  sendbuf    @a sendcount elements of this rank
 * @param[out] recvbuf    nranks x @a sendcount elements
 * @param[in]  sendcount  elements per rank, the same on every rank; 0 does nothing
 * @param[in]  dtype      element type, the same on every rank (only its size matters:
 *                        the bytes are copied, never interpreted)
 * @param[in]  comm       the communicator
 * @param[in]  stream     cudaStream_t for CUDA memory; ignored for host memory
 * @return as symcoll_allreduce(); also SYMCOLL_ERR_INVALID_PARAM for buffers that
 *         overlap other than in place
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_allgather(const void *sendbuf, void *recvbuf,
                                                  size_t sendcount, symcoll_dtype_t dtype,
                                                  symcoll_comm_h comm, void *stream);

/**
 * @brief Broadcast: every rank receives @a count elements of rank @a root's
 *        @a sendbuf (collective).
 *
 * Rules as for symcoll_allreduce(). @a sendbuf is read on @a root only (other ranks
 * may pass NULL); in place when @a sendbuf == @a recvbuf on the root. CUDA memory runs
 * on every path of symcoll_allreduce() (inside a node capturable into a CUDA graph,
 * across nodes queued): the root copies its data into @a recvbuf, the others zero it,
 * on @a stream, then @a recvbuf is reduced bytewise with the maximum, which is exact.
 *
 * Small host broadcasts (at most 2 KiB inside a node; across nodes at most 32 KiB, up
 * to 16 ranks) are eager: the root copies header and data into a ring of slots of every
 * receiver (inside a node: one ring the receivers read; across nodes: UCX puts) and
 * returns without waiting for them (only while the ring is full), so a loop of
 * broadcasts pipelines. Each receiver
 * checks the root's arguments against its own. A mismatched broadcast is reported by
 * every receiver at that call (SYMCOLL_ERR_MISMATCH; the communicator is then broken)
 * and by the root no later than its next call that waits for that receiver: any other
 * collective, or a broadcast that finds the ring full (within 16 broadcasts); an eager
 * call that finds a receiver gone already fails at once.
 *
 * @param[in]  sendbuf  on @a root: @a count elements; ignored elsewhere
 * @param[out] recvbuf  @a count elements, on every rank
 * @param[in]  count    number of elements, the same on every rank; 0 does nothing
 * @param[in]  dtype    element type, the same on every rank (only its size matters)
 * @param[in]  root     rank whose data is sent, the same on every rank
 * @param[in]  comm     the communicator
 * @param[in]  stream   cudaStream_t for CUDA memory; ignored for host memory
 * @return as symcoll_allreduce(); also SYMCOLL_ERR_INVALID_PARAM for a root out of
 *         range or partially overlapping buffers on the root
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_broadcast(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype, int root,
                                                  symcoll_comm_h comm, void *stream);

/**
 * @brief Barrier: no rank returns before every rank called it (collective).
 *
 * With @a stream NULL the barrier is among the calling host threads and blocks. With a
 * CUDA stream it is ordered on that stream and the call returns once it is queued:
 * work queued on @a stream after the barrier starts only once every rank's stream
 * reached it, and sees what every rank's stream wrote before it into memory this rank
 * reads (pool buffers of the peers included). It runs as a one-byte all-reduce of CUDA
 * memory on every path of symcoll_allreduce(): inside a node capturable into a CUDA
 * graph once a barrier on a stream ran outside a capture (its byte of the CUDA pool is
 * allocated then) or once the CUDA pool exists with room for that byte
 * (symcoll_pool_reserve()); else SYMCOLL_ERR_IN_PROGRESS; across nodes queued.
 * Since NULL asks for the host barrier, pass the legacy default stream as
 * cudaStreamLegacy ((void *)0x1); cudaStreamPerThread works too.
 *
 * @param[in]  comm    the communicator
 * @param[in]  stream  NULL (host barrier) or a cudaStream_t (stream-ordered barrier)
 * @return as symcoll_allreduce(); SYMCOLL_ERR_UNSUPPORTED for a stream in a build
 *         without CUDA
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_barrier(symcoll_comm_h comm, void *stream);

/**
 * @brief Allocate @a size bytes of symmetric memory from the pool (collective; every
 *        rank must pass the same size and type). The buffer sits at the same pool
 *        offset on every rank. Grows the pool when needed.
 *
 * The pool of @a mem_type is created by the first call that needs it (a collective
 * exchange). CUDA memory that fits in the pool without growth is carved with no
 * exchange at all: every rank that made the same sequence of allocations and frees gets
 * the same offset, and the ranks compare a hash of that sequence before their next
 * collective call (or pool exchange), which fails with SYMCOLL_ERR_MISMATCH on every
 * rank where the sequences differ (a rank that allocated where another did not may see
 * SYMCOLL_ERR_TIMED_OUT instead); the buffers are then not symmetric, every later
 * collective call fails the same way, and the communicator is only good for
 * symcoll_comm_destroy(). Such an allocation, and symcoll_mem_free(), are legal
 * while a stream is captured into a CUDA graph, in every capture mode. Host memory, and
 * an allocation that grows the pool, agree with the other ranks at once. The pool does
 * not look at streams, so it may grow while a stream is being captured (the CUDA 13
 * driver allows it, also in global mode), unless the driver refuses to create memory
 * then: the call returns SYMCOLL_ERR_IN_PROGRESS, changes nothing and logs how many
 * bytes to reserve first with symcoll_pool_reserve().
 *
 * @param[in]  comm      the communicator
 * @param[in]  size      bytes, the same on every rank (rounded up to the pool's
 *                       alignment)
 * @param[in]  mem_type  ::SYMCOLL_MEM_HOST or ::SYMCOLL_MEM_CUDA, the same on every rank
 * @param[out] ptr_p     this rank's view of the buffer, written only on success
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_INVALID_PARAM (no side effect) for a NULL or destroyed
 *         communicator, a NULL @a ptr_p, an invalid memory type or a size of 0;
 *         SYMCOLL_ERR_UNSUPPORTED for CUDA memory in a build or on a machine without
 *         CUDA;
 *         SYMCOLL_ERR_ABORTED after symcoll_comm_abort();
 *         SYMCOLL_ERR_NO_MEMORY if the pool cannot grow (it is left as it was);
 *         SYMCOLL_ERR_MISMATCH if ranks passed different arguments;
 *         SYMCOLL_ERR_IN_PROGRESS if CUDA refused to create memory during a stream
 *         capture (nothing changed);
 *         the error of an earlier call that broke the communicator (a failed queued
 *         CUDA all-reduce across nodes, a timeout, a dead peer), or of the exchange
 *         with the other ranks (SYMCOLL_ERR_TIMED_OUT, SYMCOLL_ERR_PEER_FAILED,
 *         SYMCOLL_ERR_BOOTSTRAP), or of mapping the memory (SYMCOLL_ERR_SYSTEM,
 *         SYMCOLL_ERR_CUDA, SYMCOLL_ERR_UCX).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_mem_alloc(symcoll_comm_h comm, size_t size,
                                                  symcoll_mem_type_t mem_type, void **ptr_p);

/**
 * @brief Free a buffer from symcoll_mem_alloc().
 *
 * Not collective: it does not communicate and does not wait for the other ranks. It
 * waits for the all-reduces queued on CUDA streams across nodes (they may still use the
 * buffer); inside a node the caller must not free a buffer that work queued on a stream
 * still uses. The pool's allocator must stay the same on every rank, so every rank
 * frees the same buffers between the same two collective calls, in any order; a
 * difference fails the next exchange of the pool (an allocation that agrees at once,
 * a trim or reserve) or, after an allocation made without an exchange (see
 * symcoll_mem_alloc()), the next collective call with SYMCOLL_ERR_MISMATCH. Legal while
 * a stream is captured. The memory stays mapped until symcoll_pool_trim() or
 * symcoll_comm_destroy().
 *
 * @param[in] comm  the communicator the buffer was allocated on
 * @param[in] ptr   the pointer symcoll_mem_alloc() returned, or NULL (nothing done)
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_INVALID_PARAM (one error line logged naming the case, nothing
 *         freed) for a NULL or destroyed communicator, or a @a ptr that is not the
 *         exact start of a live buffer symcoll_mem_alloc() returned on @a comm: memory
 *         outside the communicator's pools (stack, heap, another communicator), a
 *         pointer inside a buffer, a buffer freed already (double free; unless a
 *         later symcoll_mem_alloc() returned the same pointer, which is then live and
 *         freed), or the library's own staging, which may have reused the range of a
 *         freed buffer;
 *         SYMCOLL_ERR_NO_MEMORY if the allocator's free list cannot grow (the buffer
 *         stays allocated).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_mem_free(symcoll_comm_h comm, void *ptr);

/**
 * @brief Read pool statistics. Not collective; safe from any thread (it does not take
 *        the communicator's lock).
 * @param[in]     comm      the communicator
 * @param[in]     mem_type  the pool's memory type
 * @param[in,out] attr_p    in: field_mask, the fields wanted; out: those fields
 *                          (all 0 while the pool does not exist yet)
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM (nothing written) for a NULL or
 *         destroyed communicator, a NULL @a attr_p, an invalid memory type or unknown
 *         field_mask bits.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_pool_query(symcoll_comm_h comm,
                                                   symcoll_mem_type_t mem_type,
                                                   symcoll_pool_attr_t *attr_p);

/**
 * @brief Unmap unused tail segments of the pool (collective).
 *
 * Releases the algorithms' staging in the pool first (the next all-reduce allocates it
 * again, collectively), except in the CUDA pool while a CUDA graph that captured calls
 * on @a comm exists on any rank: then every rank keeps it and the graphs keep working.
 * Buffers from symcoll_mem_alloc() stay valid. Does nothing while the pool does not
 * exist yet.
 *
 * @param[in] comm      the communicator
 * @param[in] mem_type  the pool's memory type, the same on every rank
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_INVALID_PARAM (no side effect) for a NULL or destroyed
 *         communicator or an invalid memory type;
 *         SYMCOLL_ERR_MISMATCH if the ranks' pools differ;
 *         the error of an earlier call that broke the communicator (a failed queued
 *         CUDA all-reduce across nodes, a timeout, a dead peer; nothing trimmed), or of
 *         the exchange with the other ranks (SYMCOLL_ERR_TIMED_OUT,
 *         SYMCOLL_ERR_PEER_FAILED, SYMCOLL_ERR_ABORTED, SYMCOLL_ERR_BOOTSTRAP).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_pool_trim(symcoll_comm_h comm,
                                                  symcoll_mem_type_t mem_type);

/**
 * @brief Grow the pool so that an allocation of @a size bytes fits without growth
 *        (collective; API 0.5).
 *
 * Allocates nothing. Made before a CUDA stream capture, it lets symcoll_mem_alloc() of
 * up to @a size bytes (one buffer, or several that fit together) run inside the capture
 * in every capture mode, with no exchange and no CUDA call. The collectives' staging
 * comes from the same pool: make each captured call once before (a warm-up, which
 * sizes its staging, and creates the pool), then reserve. Creates the pool of
 * @a mem_type if it does not exist yet. symcoll_pool_trim() gives unused room back.
 *
 * @param[in] comm      the communicator
 * @param[in] size      bytes, the same on every rank
 * @param[in] mem_type  the pool's memory type, the same on every rank
 * @return SYMCOLL_OK;
 *         SYMCOLL_ERR_INVALID_PARAM (no side effect) for a NULL or destroyed
 *         communicator, an invalid memory type or a size of 0;
 *         SYMCOLL_ERR_NO_MEMORY if the pool cannot grow so far (it is left as it was);
 *         SYMCOLL_ERR_IN_PROGRESS if CUDA refused to create memory during a stream
 *         capture; otherwise as symcoll_mem_alloc().
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_pool_reserve(symcoll_comm_h comm, size_t size,
                                                     symcoll_mem_type_t mem_type);

/**
 * @brief Print the topology @a comm was created on: the facts of the calling rank's
 *        node's ranks (host identity, pid, CPU and NUMA node, CUDA device, PCI bus id,
 *        UUID, UCX capabilities), the node map (every rank's node; other nodes named by
 *        their host identity's hash) and the calling rank's node's GPU link matrix (peer
 *        access, NVLink count, CUDA P2P performance rank). A rank holds its own node's
 *        facts only, so that creation costs no rank memory in the job's size squared.
 *        Not collective.
 * @param[in] comm    the communicator
 * @param[in] stream  where to print
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or
 *         a NULL stream.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_topology(symcoll_comm_h comm, FILE *stream);

/**
 * @brief Print the all-reduce decision table of @a comm: for each memory type and each
 *        message size from 8 B to 1 GiB (powers of two), the algorithm the selector
 *        picks on this topology with the current SYMCOLL_* settings, and why.
 *        Not collective.
 * @param[in] comm    the communicator
 * @param[in] stream  where to print
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator or
 *         a NULL stream.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_print_decisions(symcoll_comm_h comm, FILE *stream);

/**
 * @brief Force the algorithm of @a comm's next calls (every collective), or clear it
 *        (API 0.4).
 *
 * The algorithm runs every following call of @a comm as SYMCOLL_ALGO would (and before
 * it and any tuning file), until the next symcoll_comm_set_algo(); NULL or "auto" gives
 * the choice back. Not collective, but every rank must force the same algorithm for the
 * same calls: ranks that run different algorithms return SYMCOLL_ERR_MISMATCH from that
 * call (or SYMCOLL_ERR_TIMED_OUT where the algorithms cannot tell), never a wrong
 * result. A call of a memory type the algorithm cannot serve (for example a CUDA
 * one-shot across nodes) returns SYMCOLL_ERR_INVALID_PARAM and does nothing.
 * @param[in] comm  the communicator
 * @param[in] algo  oneshot, twoshot, ring, rd, hier, rhd, or auto / NULL
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM (nothing changes) for a NULL or
 *         destroyed communicator, an unknown name, or an algorithm that cannot run on
 *         this communicator's layout for host memory (nor, where every rank has a GPU,
 *         for CUDA memory).
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_set_algo(symcoll_comm_h comm, const char *algo);

/**
 * @brief The layout of @a comm as tuning files name it (API 0.4): node count, ranks per
 *        node, the GPUs' worst link, the transports across nodes, the reduction order
 *        and the library's version, for example
 *        "nodes=2 ppn=2 gpu=none net=tcp order=auto lib=0.4.0". A tuning file's
 *        entries serve the communicators whose layout is one of its layouts
 *        (SYMCOLL_TUNE_FILE, symcoll_tune(1)). Not collective.
 * @param[in]  comm  the communicator
 * @param[out] buf   receives the text, NUL-terminated (cut to @a len - 1 bytes; 256 hold
 *                   any)
 * @param[in]  len   size of @a buf
 * @return SYMCOLL_OK; SYMCOLL_ERR_INVALID_PARAM for a NULL or destroyed communicator, a
 *         NULL @a buf or a @a len of 0.
 */
SYMCOLL_EXPORT symcoll_status_t symcoll_comm_layout(symcoll_comm_h comm, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SYMCOLL_H */
