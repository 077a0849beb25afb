/* symcoll_tune's buffers: plain host memory, or CUDA device memory with host copies for
 * filling and checking, and the stream its calls run on. */
#ifndef SYMCOLL_TOOLS_TUNE_BUF_H
#define SYMCOLL_TOOLS_TUNE_BUF_H

#include <stddef.h>

#include "symcoll.h"

typedef struct tune_buf {
    symcoll_mem_type_t mem;
    float *in, *out;   /* what the calls read and write */
    float *hin, *hout; /* host copies (the buffers themselves for host memory) */
    void *stream;      /* the calls' stream: NULL for host memory */
    size_t bytes;
} tune_buf_t;

/* Whether this build can measure CUDA memory. */
int tune_buf_cuda_built(void);

/* Selects this rank's CUDA device (the local rank modulo the devices seen), before the
 * communicator is created: the library takes the device current then. 0, or -1 with a
 * message on stderr. */
int tune_buf_device(void);

/* Buffers of bytes each of memory mem (CUDA: on the current device). 0, or -1 with a message on
 * stderr. */
int tune_buf_setup(tune_buf_t *b, symcoll_mem_type_t mem, size_t bytes);

/* in[0..elems) = rank + 1, on the device too. 0 or -1. */
int tune_buf_fill(tune_buf_t *b, size_t elems, int rank);

/* Waits for the stream (no-op for host memory). 0 or -1. */
int tune_buf_sync(tune_buf_t *b);

/* The device's in and out into hin and hout (elems each) after a sync. 0 or -1. */
int tune_buf_fetch(tune_buf_t *b, size_t elems);

void tune_buf_free(tune_buf_t *b);

#endif
