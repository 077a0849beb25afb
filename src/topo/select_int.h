/* The selector's internals, shared by select.c (the rules) and select_cuda_net.c (CUDA
 * memory across nodes: direct, hierarchical-direct or staged). */
#ifndef SYMCOLL_TOPO_SELECT_INT_H
#define SYMCOLL_TOPO_SELECT_INT_H

#include "topo/select.h"

/* d->algo = algo; the reason from fmt unless d is quiet. */
void topo_decide(topo_decision_t *d, topo_algo_t algo, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The decision for an all-reduce of bytes of memory mem on shape (topo_select's, with
 * d->quiet as the caller set it). */
void topo_select_impl(const topo_select_cfg_t *cfg, const topo_shape_t *shape,
                      symcoll_mem_type_t mem, size_t bytes, topo_decision_t *d);

/* The decision for CUDA memory across nodes: the direct path where it applies, its
 * hierarchical form, else staged through pinned host memory (each chunk's host
 * algorithm chosen by topo_select_impl for the chunk's size). */
void topo_select_cuda_net(const topo_select_cfg_t *cfg, const topo_shape_t *shape, size_t bytes,
                          topo_decision_t *d);

#endif
