/* Configuration: every SYMCOLL_* environment variable is one row of one table
 * (config.c), with its default, documentation and parser. Library code reads the
 * environment only through this table. */
#ifndef SYMCOLL_CORE_CONFIG_H
#define SYMCOLL_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "symcoll.h"

#define CONFIG_STR_MAX 256

/* The largest timeout, 30 days in seconds: every wait has a real deadline, and
 * now + timeout stays far inside every clock's range. */
#define CONFIG_TIMEOUT_MAX_SEC 2592000.0

/* A timeout (SYMCOLL_TIMEOUT or the creation parameter) is more than 0 and at most
 * CONFIG_TIMEOUT_MAX_SEC; false for a NaN or an infinity. */
static inline bool config_timeout_ok(double sec)
{
    return sec > 0 && sec <= CONFIG_TIMEOUT_MAX_SEC;
}

/* The enumerated settings, parsed once when the configuration is read (the names, in
 * this order, are the variables' values; case does not matter). */
enum { CONFIG_CUDA_COLL_ALLREDUCE = 0, CONFIG_CUDA_COLL_AUTO };
enum { CONFIG_ORDER_CANONICAL = 0, CONFIG_ORDER_FASTEST, CONFIG_ORDER_AUTO };
enum { CONFIG_TUNE_MISMATCH_FAIL = 0, CONFIG_TUNE_MISMATCH_IGNORE };
enum { CONFIG_NET_PROTOCOL_AUTO = 0, CONFIG_NET_PROTOCOL_PUT, CONFIG_NET_PROTOCOL_AM };
enum {
    CONFIG_CUDA_NET_PATH_AUTO = 0,
    CONFIG_CUDA_NET_PATH_DIRECT,
    CONFIG_CUDA_NET_PATH_STAGED
};

typedef struct config {
    int log_level;                   /* SYMCOLL_LOG_LEVEL */
    double timeout_sec;              /* SYMCOLL_TIMEOUT */
    long rank;                       /* SYMCOLL_RANK (-1: unset) */
    long nranks;                     /* SYMCOLL_NRANKS (-1: unset) */
    char addr[CONFIG_STR_MAX];       /* SYMCOLL_ADDR */
    char cookie[CONFIG_STR_MAX];     /* SYMCOLL_COOKIE ("": none) */
    long listen_fd;                  /* SYMCOLL_LISTEN_FD (-1: unset) */
    char host_id[CONFIG_STR_MAX];    /* SYMCOLL_HOST_ID ("" = hostname + boot id) */
    long rendezvous_leaders;         /* SYMCOLL_RENDEZVOUS_LEADERS (0: every rank dials) */
    size_t pool_min_size;            /* SYMCOLL_POOL_MIN_SIZE */
    size_t pool_max_size;            /* SYMCOLL_POOL_MAX_SIZE */
    double pool_growth;              /* SYMCOLL_POOL_GROWTH */
    char algo[CONFIG_STR_MAX];       /* SYMCOLL_ALGO ("auto") */
    size_t host_oneshot_max;         /* SYMCOLL_HOST_ONESHOT_MAX */
    size_t host_chunk_size;          /* SYMCOLL_HOST_CHUNK_SIZE */
    size_t cuda_oneshot_max;         /* SYMCOLL_CUDA_ONESHOT_MAX */
    size_t cuda_pcie_oneshot_max;    /* SYMCOLL_CUDA_PCIE_ONESHOT_MAX */
    long cuda_nblocks;               /* SYMCOLL_CUDA_NBLOCKS (0: auto) */
    size_t cuda_ll_max;              /* SYMCOLL_CUDA_LL_MAX */
    int cuda_coll;                   /* SYMCOLL_CUDA_COLL: CONFIG_CUDA_COLL_* */
    size_t net_rd_max;               /* SYMCOLL_NET_RD_MAX */
    size_t hier_min;                 /* SYMCOLL_HIER_MIN */
    size_t net_chunk_size;           /* SYMCOLL_NET_CHUNK_SIZE */
    int net_protocol;                /* SYMCOLL_NET_PROTOCOL: CONFIG_NET_PROTOCOL_* */
    char reduce_isa[CONFIG_STR_MAX]; /* SYMCOLL_REDUCE_ISA (algo/reduce.c reads it itself) */
    size_t net_tcp_seg_size;         /* SYMCOLL_NET_TCP_SEG_SIZE (0: UCX's own) */
    size_t cuda_net_chunk;           /* SYMCOLL_CUDA_NET_CHUNK */
    long cuda_net_channels;          /* SYMCOLL_CUDA_NET_CHANNELS */
    size_t cuda_net_kernel_max;      /* SYMCOLL_CUDA_NET_KERNEL_MAX */
    int cuda_net_path;               /* SYMCOLL_CUDA_NET_PATH: CONFIG_CUDA_NET_PATH_* */
    size_t cuda_net_direct_min;      /* SYMCOLL_CUDA_NET_DIRECT_MIN */
    int reduction_order;             /* SYMCOLL_REDUCTION_ORDER: CONFIG_ORDER_* */
    char tune_file[CONFIG_STR_MAX];  /* SYMCOLL_TUNE_FILE ("": none) */
    int tune_mismatch;               /* SYMCOLL_TUNE_MISMATCH: CONFIG_TUNE_MISMATCH_* */
} config_t;

/* Parse every variable of the table into *cfg. On a bad value logs an error naming
 * the variable and returns SYMCOLL_ERR_INVALID_PARAM; *cfg is then unspecified. */
symcoll_status_t config_read(config_t *cfg);

/* Number of rows and the name of row i (for tests and tools). */
size_t config_num_vars(void);
const char *config_var_name(size_t i);

/* Parsers, exposed for unit tests. Each returns 0 on success, -1 on a bad value. */
int config_parse_size(const char *s, size_t *out);
int config_parse_time(const char *s, double *out);
int config_parse_double(const char *s, double *out);
int config_parse_long(const char *s, long *out);

#endif
