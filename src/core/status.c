/* Status strings, version, datatype and operator names. */
#include "core/core.h"

SYMCOLL_EXPORT const char *symcoll_status_string(symcoll_status_t status)
{
    switch (status) {
    case SYMCOLL_OK:
        return "success";
    case SYMCOLL_ERR_INVALID_PARAM:
        return "invalid parameter";
    case SYMCOLL_ERR_NO_MEMORY:
        return "out of memory";
    case SYMCOLL_ERR_UNSUPPORTED:
        return "unsupported operation";
    case SYMCOLL_ERR_TIMED_OUT:
        return "timed out";
    case SYMCOLL_ERR_PEER_FAILED:
        return "peer failed";
    case SYMCOLL_ERR_ABORTED:
        return "communicator aborted";
    case SYMCOLL_ERR_MISMATCH:
        return "ranks disagree (argument or sequence mismatch)";
    case SYMCOLL_ERR_SYSTEM:
        return "system call failed";
    case SYMCOLL_ERR_CUDA:
        return "CUDA error";
    case SYMCOLL_ERR_UCX:
        return "UCX error";
    case SYMCOLL_ERR_BOOTSTRAP:
        return "bootstrap error";
    case SYMCOLL_ERR_INTERNAL:
        return "internal error";
    case SYMCOLL_ERR_IN_PROGRESS:
        return "operation not allowed now";
    default:
        return "unknown status";
    }
}

SYMCOLL_EXPORT const char *symcoll_version_string(void)
{
    return PACKAGE_VERSION;
}

SYMCOLL_EXPORT void symcoll_get_version(unsigned *major_p, unsigned *minor_p, unsigned *patch_p)
{
    if (major_p)
        *major_p = SYMCOLL_VERSION_MAJOR;
    if (minor_p)
        *minor_p = SYMCOLL_VERSION_MINOR;
    if (patch_p)
        *patch_p = SYMCOLL_VERSION_PATCH;
}

SYMCOLL_EXPORT const char *symcoll_build_info(void)
{
    return "symcoll " PACKAGE_VERSION "; UCX " SYMCOLL_UCX_VERSION
#ifdef SYMCOLL_UCX_CUDA
           " (with CUDA transports)"
#else
           " (without CUDA transports)"
#endif
#ifdef HAVE_CUDA
           "; CUDA on (" SYMCOLL_CUDA_DIR ", static runtime)"
#else
           "; CUDA off"
#endif
#ifdef HAVE_HWLOC
           "; hwloc on"
#else
           "; hwloc off"
#endif
        ;
}

static const size_t dtype_sizes[SYMCOLL_DTYPE_LAST] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *const dtype_names[SYMCOLL_DTYPE_LAST] = {
    "int8",   "uint8",   "int32",    "uint32",  "int64",
    "uint64", "float16", "bfloat16", "float32", "float64"};
static const char *const op_names[SYMCOLL_OP_LAST] = {"sum", "prod", "min", "max", "avg"};

SYMCOLL_EXPORT size_t symcoll_dtype_size(symcoll_dtype_t dtype)
{
    return ((unsigned)dtype < SYMCOLL_DTYPE_LAST) ? dtype_sizes[dtype] : 0;
}

SYMCOLL_EXPORT const char *symcoll_dtype_name(symcoll_dtype_t dtype)
{
    return ((unsigned)dtype < SYMCOLL_DTYPE_LAST) ? dtype_names[dtype] : NULL;
}

SYMCOLL_EXPORT const char *symcoll_op_name(symcoll_op_t op)
{
    return ((unsigned)op < SYMCOLL_OP_LAST) ? op_names[op] : NULL;
}
