/* C side of the Fortran module (fortran/symcoll.f90): buffers passed as Fortran
 * descriptors are checked (contiguous, large enough) before symcoll_allreduce(), and the
 * print calls write into memory so that the module can write the text to a Fortran unit. */
#include <ISO_Fortran_binding.h>
#include <stdio.h>
#include <stdlib.h>

#include "symcoll.h"
#include "symcoll_f.h"

/* The address of a Fortran buffer that must hold @a need bytes: contiguous and large
 * enough, or NULL (and INVALID_PARAM). A scalar is a buffer of one element. */
static symcoll_status_t f_buffer(const CFI_cdesc_t *d, size_t need, void **ptr_p)
{
    size_t bytes;

    if (!d || !d->base_addr) {
        *ptr_p = NULL;
        return need ? SYMCOLL_ERR_INVALID_PARAM : SYMCOLL_OK;
    }
    if (d->rank > 0 && !CFI_is_contiguous(d))
        return SYMCOLL_ERR_INVALID_PARAM;
    bytes = d->elem_len;
    for (int r = 0; r < d->rank; r++) {
        size_t extent = d->dim[r].extent < 0 ? 0 : (size_t)d->dim[r].extent;
        if (extent && bytes > SIZE_MAX / extent)
            return SYMCOLL_ERR_INVALID_PARAM;
        bytes *= extent;
    }
    if (need > bytes)
        return SYMCOLL_ERR_INVALID_PARAM;
    *ptr_p = d->base_addr;
    return SYMCOLL_OK;
}

int symcoll_f_allreduce(const CFI_cdesc_t *send, const CFI_cdesc_t *recv, size_t count,
                        int dtype, int op, void *comm, void *stream)
{
    size_t esize = symcoll_dtype_size((symcoll_dtype_t)dtype), need = 0;
    void *sp, *rp;
    symcoll_status_t s;

    /* an invalid datatype is left to symcoll_allreduce(), which says so */
    if (esize) {
        if (count > SIZE_MAX / esize)
            return SYMCOLL_ERR_INVALID_PARAM;
        need = count * esize;
    }
    if ((s = f_buffer(send, need, &sp)) != SYMCOLL_OK ||
        (s = f_buffer(recv, need, &rp)) != SYMCOLL_OK)
        return s;
    return symcoll_allreduce(sp, rp, count, (symcoll_dtype_t)dtype, (symcoll_op_t)op,
                             (symcoll_comm_h)comm, stream);
}

int symcoll_f_print(int what, void *comm, unsigned flags, char **text_p, size_t *len_p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    symcoll_status_t s;

    if (!f)
        return SYMCOLL_ERR_NO_MEMORY;
    switch (what) {
    case SYMCOLL_F_PRINT_CONFIG:
        s = symcoll_config_print(f, flags);
        break;
    case SYMCOLL_F_PRINT_TOPOLOGY:
        s = symcoll_comm_print_topology((symcoll_comm_h)comm, f);
        break;
    case SYMCOLL_F_PRINT_DECISIONS:
        s = symcoll_comm_print_decisions((symcoll_comm_h)comm, f);
        break;
    default:
        s = SYMCOLL_ERR_INVALID_PARAM;
        break;
    }
    if (fclose(f) && s == SYMCOLL_OK)
        s = SYMCOLL_ERR_NO_MEMORY;
    /* the configuration table is printed also when a value is invalid: keep it */
    *text_p = text;
    *len_p = text ? len : 0;
    return s;
}

void symcoll_f_free(void *ptr)
{
    free(ptr);
}
