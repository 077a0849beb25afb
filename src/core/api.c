/* Entry points of the data path: argument checks in one place, then dispatch to the
 * pool and the algorithms. */
#include "core/core.h"

#include <stdint.h>

symcoll_status_t core_check_allreduce_args(const void *sendbuf, void *recvbuf, size_t count,
                                           symcoll_dtype_t dtype, symcoll_op_t op,
                                           symcoll_comm_h comm)
{
    size_t esize;

    if (!core_comm_is_valid(comm))
        return SYMCOLL_ERR_INVALID_PARAM;
    if ((unsigned)dtype >= SYMCOLL_DTYPE_LAST || (unsigned)op >= SYMCOLL_OP_LAST) {
        log_error("symcoll_allreduce: invalid datatype %d or operator %d", (int)dtype, (int)op);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    esize = symcoll_dtype_size(dtype);
    if (count > SIZE_MAX / esize || count * esize > (SIZE_MAX >> 2)) {
        log_error("symcoll_allreduce: count %zu of %s overflows", count,
                  symcoll_dtype_name(dtype));
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    if (count > 0 && (!sendbuf || !recvbuf)) {
        log_error("symcoll_allreduce: NULL buffer with count %zu", count);
        return SYMCOLL_ERR_INVALID_PARAM;
    }
    return SYMCOLL_OK;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_allreduce(const void *sendbuf, void *recvbuf,
                                                  size_t count, symcoll_dtype_t dtype,
                                                  symcoll_op_t op, symcoll_comm_h comm,
                                                  void *stream)
{
    symcoll_status_t status = core_check_allreduce_args(sendbuf, recvbuf, count, dtype, op, comm);
    if (status != SYMCOLL_OK)
        return status;
    /* the all-reduce layer is not built yet */
    return SYMCOLL_ERR_UNSUPPORTED;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_mem_alloc(symcoll_comm_h comm, size_t size,
                                                  symcoll_mem_type_t mem_type, void **ptr_p)
{
    if (!core_comm_is_valid(comm) || !ptr_p || (unsigned)mem_type >= SYMCOLL_MEM_LAST)
        return SYMCOLL_ERR_INVALID_PARAM;
    return SYMCOLL_ERR_UNSUPPORTED;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_mem_free(symcoll_comm_h comm, void *ptr)
{
    if (!core_comm_is_valid(comm))
        return SYMCOLL_ERR_INVALID_PARAM;
    return SYMCOLL_ERR_UNSUPPORTED;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_pool_query(symcoll_comm_h comm,
                                                   symcoll_mem_type_t mem_type,
                                                   symcoll_pool_attr_t *attr_p)
{
    if (!core_comm_is_valid(comm) || !attr_p || (unsigned)mem_type >= SYMCOLL_MEM_LAST)
        return SYMCOLL_ERR_INVALID_PARAM;
    return SYMCOLL_ERR_UNSUPPORTED;
}

SYMCOLL_EXPORT symcoll_status_t symcoll_pool_trim(symcoll_comm_h comm,
                                                  symcoll_mem_type_t mem_type)
{
    if (!core_comm_is_valid(comm) || (unsigned)mem_type >= SYMCOLL_MEM_LAST)
        return SYMCOLL_ERR_INVALID_PARAM;
    return SYMCOLL_ERR_UNSUPPORTED;
}

/* Layers created with the communicator (pools are created lazily). */
symcoll_status_t comm_init_layers(comm_t *comm) { return SYMCOLL_OK; }

void comm_release_layers(comm_t *comm) {}
