/* symcoll_info's parts shared between its files: the JSON output (info_json.c) and the
 * runtime probes of CUDA and UCX (info_runtime.c). */
#ifndef SYMCOLL_TOOLS_INFO_H
#define SYMCOLL_TOOLS_INFO_H

#include <stddef.h>

/* --json: every report is a member of one object; info_json_members counts those
 * printed */
extern int info_json;
extern int info_json_members;

/* v (len bytes) as a JSON string */
void json_string(const char *v, size_t len);
void json_str(const char *v);
/* starts the member NAME of the top object */
void json_member(const char *name);

/* Whether this build has CUDA and its driver can run here. */
int info_cuda_usable(void);

/* The CUDA report (-c): built with it, driver, devices, or why CUDA cannot run. */
void show_cuda(void);
/* The UCX report (-u): the version built against and run on, the memory it reaches. */
void show_ucx(void);

#endif
