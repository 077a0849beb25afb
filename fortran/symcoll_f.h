/* C helpers of the Fortran module, internal to libsymcoll_f (fortran/symcoll_f.c); the
 * module declares them with bind(c). */
#ifndef SYMCOLL_F_H
#define SYMCOLL_F_H

#include <ISO_Fortran_binding.h>
#include <stddef.h>

/* what symcoll_f_print() prints (the module's PRINT_* constants) */
enum {
    SYMCOLL_F_PRINT_CONFIG = 0,
    SYMCOLL_F_PRINT_TOPOLOGY = 1,
    SYMCOLL_F_PRINT_DECISIONS = 2
};

/* symcoll_allreduce() of @a count elements of two Fortran buffers (any type and rank):
 * SYMCOLL_ERR_INVALID_PARAM, nothing done, if a buffer is not contiguous or holds fewer
 * than count * symcoll_dtype_size(dtype) bytes. */
int symcoll_f_allreduce(const CFI_cdesc_t *send, const CFI_cdesc_t *recv, size_t count,
                        int dtype, int op, void *comm, void *stream);

/* Prints a report into a new buffer (*text_p, *len_p bytes; release with
 * symcoll_f_free()); returns the print call's status. The buffer is set also on error. */
int symcoll_f_print(int what, void *comm, unsigned flags, char **text_p, size_t *len_p);

void symcoll_f_free(void *ptr);

#endif
