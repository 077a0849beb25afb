/* Tuning files (symcoll_tune writes them, SYMCOLL_TUNE_FILE names one): per layout of
 * ranks, nodes, GPUs and transports (its fingerprint), the algorithm measured fastest
 * for each collective, memory type and range of sizes. The selector takes an entry
 * where the communicator's fingerprint matches a layout of the file and the algorithm
 * can run; elsewhere the built-in rules decide.
 *
 * Format (text, one record a line, '#' starts a comment line):
 *
 *   symcoll-tune 1
 *   layout nodes=2 ppn=2 gpu=none net=tcp order=auto lib=0.4.0
 *   allreduce host 0 6144 rd 41.2 58.0 rhd
 *   allreduce host 6145 max rhd 130.5 131.9 rd
 *   end
 *   checksum 0123456789abcdef
 *
 * An entry: collective (allreduce, reduce_scatter, allgather, broadcast), memory (host or
 * cuda; for CUDA memory across nodes an entry acts as symcoll_comm_set_algo: rd or rhd
 * the staged path's chunks, hier the hierarchical path over the GPUs), the smallest and largest
 * plan size in bytes it covers ("max": no limit), the algorithm (as SYMCOLL_ALGO), its time in
 * µs, the runner-up's time and name (what symcoll_info -a shows as the margin). Ranges of one
 * collective and memory type do not overlap. The checksum is FNV-1a 64 of every byte before its
 * line: a truncated or edited file is refused. */
#ifndef SYMCOLL_TOPO_TUNE_H
#define SYMCOLL_TOPO_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "topo/select.h"

#define TOPO_TUNE_VERSION 1
#define TOPO_TUNE_FP_MAX 256
#define TOPO_TUNE_MAX_BYTES (1u << 24) /* a larger file is refused */

typedef struct topo_tune_entry {
    topo_coll_t coll;
    symcoll_mem_type_t mem;
    size_t lo, hi; /* plan sizes covered, inclusive */
    topo_algo_t algo, next_algo;
    double us, next_us;
} topo_tune_entry_t;

typedef struct topo_tune_layout {
    char fingerprint[TOPO_TUNE_FP_MAX];
    topo_tune_entry_t *entries;
    size_t nentries;
} topo_tune_layout_t;

typedef struct topo_tune {
    char path[1024];
    uint64_t hash; /* of the whole file: the ranks agree on it */
    topo_tune_layout_t *layouts;
    size_t nlayouts;
} topo_tune_t;

/* FNV-1a 64 of len bytes, continuing from h (start with TOPO_TUNE_FNV_INIT). */
#define TOPO_TUNE_FNV_INIT UINT64_C(1469598103934665603)
uint64_t topo_tune_fnv(uint64_t h, const void *data, size_t len);

/* Parses a tuning file's text (len bytes) named path (for messages). On a malformed file
 * writes why (naming the line) into err and returns SYMCOLL_ERR_INVALID_PARAM; out of
 * memory SYMCOLL_ERR_NO_MEMORY. */
symcoll_status_t topo_tune_parse(const char *path, const char *text, size_t len,
                                 topo_tune_t **tune_p, char *err, size_t errlen);
/* Reads and parses the file at path (as topo_tune_parse; an unreadable file too). */
symcoll_status_t topo_tune_load(const char *path, topo_tune_t **tune_p, char *err,
                                size_t errlen);
void topo_tune_free(topo_tune_t *tune);
/* A copy of tune (NULL when out of memory). */
topo_tune_t *topo_tune_dup(const topo_tune_t *tune);

/* The layout of tune whose fingerprint is fp, or NULL. */
const topo_tune_layout_t *topo_tune_find_layout(const topo_tune_t *tune, const char *fp);
/* The entry of layout for collective coll, memory mem and plan size bytes, or NULL. */
const topo_tune_entry_t *topo_tune_lookup(const topo_tune_layout_t *layout, topo_coll_t coll,
                                          symcoll_mem_type_t mem, size_t bytes);

/* The names a tuning file uses for collectives and memory types. */
const char *topo_tune_coll_name(topo_coll_t coll);
const char *topo_tune_mem_name(symcoll_mem_type_t mem);

#endif
