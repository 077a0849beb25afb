/* What the GPU test programs share: device buffers filled and checked with the inputs
 * and reference of tools/refcheck.c, and main's GPU count and skip (cuda_testlib.h). */
#define _GNU_SOURCE
#include "cuda_testlib.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void gpu_set_device(int rank)
{
    int n = 0;
    CK_CUDA(cudaGetDeviceCount(&n));
    CK_CUDA(cudaSetDevice(rank % n));
}

/* symcoll's avg rule (no REFCHECK_AVG_EXACT): integer averages truncate, float ones
 * keep their fractions, and the tests check that the library does so */
static refcheck_spec_t gpu_spec(symcoll_dtype_t t, symcoll_op_t op, int nranks, int salt)
{
    refcheck_spec_t spec = {t, op, nranks, (uint64_t)salt, 0};
    return spec;
}

void gpu_host_fill(void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
                   int nranks, int salt)
{
    refcheck_spec_t spec = gpu_spec(t, op, nranks, salt);
    refcheck_fill(&spec, rank, buf, count);
}

void gpu_host_verify(const void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                     int nranks, int salt, const char *what)
{
    refcheck_spec_t spec = gpu_spec(t, op, nranks, salt);
    size_t first = 0, wrong = refcheck_compare(&spec, buf, count, &first);

    if (wrong)
        harness_fail("%s: %s %s count %zu: element %zu is %g, expected %g (%zu wrong)", what,
                     symcoll_dtype_name(t), symcoll_op_name(op), count, first,
                     refcheck_load(buf, first, t), refcheck_expected(&spec, first), wrong);
}

int gpu_poison(symcoll_dtype_t t)
{
    return t == SYMCOLL_INT8    ? REFCHECK_POISON_INT8
           : t == SYMCOLL_UINT8 ? REFCHECK_POISON_UINT8
                                : GPU_POISON;
}

void gpu_fill(void *dev, void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
              int nranks, int salt, void *host, cudaStream_t s)
{
    size_t bytes = count * refcheck_dtype_size(t);

    gpu_host_fill(host, count, t, op, rank, nranks, salt);
    CK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    if (out && out != dev)
        CK_CUDA(cudaMemsetAsync(out, gpu_poison(t), bytes, s));
}

void gpu_verify(const void *dev, size_t count, symcoll_dtype_t t, symcoll_op_t op, int nranks,
                int salt, void *host, cudaStream_t s, const char *what)
{
    /* the stream first, then the copy into pageable memory (which blocks inside the
     * driver): a forced direct path across nodes over transports that call the driver
     * from its channel needs that order (README, SYMCOLL_CUDA_NET_PATH) */
    CK_CUDA(cudaStreamSynchronize(s));
    CK_CUDA(
        cudaMemcpyAsync(host, dev, count * refcheck_dtype_size(t), cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    gpu_host_verify(host, count, t, op, nranks, salt, what);
}

static void body_nogpu(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    double x = 1.0 + rank, y = 0;
    void *p = NULL;
    symcoll_status_t s = symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_CUDA, &p);

    if (s != SYMCOLL_ERR_UNSUPPORTED || p)
        harness_fail("symcoll_mem_alloc(CUDA) without a GPU returned %s, expected %s",
                     symcoll_status_string(s), symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
    /* a barrier on a stream is a CUDA call: refused too, and the host barrier works */
    s = symcoll_barrier(comm, cudaStreamLegacy);
    if (s != SYMCOLL_ERR_UNSUPPORTED)
        harness_fail("symcoll_barrier on a stream without a GPU returned %s, expected %s",
                     symcoll_status_string(s), symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
    CK_SC(symcoll_barrier(comm, NULL));
    CK_SC(symcoll_allreduce(&x, &y, 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL));
    if (y != nranks * (nranks + 1) / 2.0)
        harness_fail("host all-reduce after a refused CUDA request: %g", y);
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

static int count_gpus(void)
{
    int fds[2], n = 0;
    pid_t pid;
    if (pipe(fds))
        return 0;
    pid = fork();
    if (pid == 0) {
        int c = 0;
        if (cudaGetDeviceCount(&c) != cudaSuccess)
            c = 0;
        if (write(fds[1], &c, sizeof(c)) != sizeof(c))
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    if (pid < 0 || read(fds[0], &n, sizeof(n)) != sizeof(n))
        n = 0;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return n;
}

int gpu_tests_main(Suite *(*make_suite)(int ngpus), int nogpu_nnodes)
{
    int ngpus;

    /* (Not UCX_WARN_UNUSED_ENV_VARS: libucs reads it when it loads, before main, and then
     * warns that the variable set here went unused.) */
    setenv("UCX_TLS", "tcp,self", 0);
    ngpus = count_gpus();
    if (ngpus < 1) {
        if (harness_run(2, nogpu_nnodes, 120, body_nogpu, NULL)) {
            printf("no CUDA device: CUDA requests were not refused cleanly (%d simulated "
                   "node(s))\n",
                   nogpu_nnodes);
            return 1;
        }
        printf("no CUDA device: CUDA memory refused with SYMCOLL_ERR_UNSUPPORTED, host "
               "all-reduce works (%d simulated node(s)); GPU tests skipped\n",
               nogpu_nnodes);
        return 77;
    }
    printf("%d CUDA device(s)\n", ngpus);
    return harness_main(make_suite(ngpus));
}

void gpu_add_cases(Suite *su, const gpu_case_t *cases, size_t n, int ngpus, const char *tags)
{
    for (size_t i = 0; i < n; i++) {
        TCase *tc;
        if (ngpus < cases[i].min_gpus)
            continue;
        tc = tcase_create(cases[i].name);
        if (tags)
            tcase_set_tags(tc, tags);
        tcase_set_timeout(tc, 1200);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(su, tc);
    }
}

/* ---- reduce-scatter, all-gather, broadcast and the stream barrier ------------------- */

#define COLL_GUARD 64 /* bytes after an out-of-place result that must stay untouched */
#define COLL_POISON 0xa5

static const size_t coll_counts[] = {1, 7, 1001, 40009};
#define COLL_NCOUNTS (sizeof(coll_counts) / sizeof(coll_counts[0]))

/* byte j of rank r's data for salt: all-gather and broadcast copy bytes */
static uint8_t coll_byte(int r, size_t j, int salt)
{
    uint64_t h = (j + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)r << 48) ^
                 (uint64_t)salt * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    return (uint8_t)(h >> 56);
}

typedef struct {
    symcoll_comm_h comm;
    cudaStream_t s;
    int rank, n;
    char *a, *b; /* device buffers of room bytes */
    uint8_t *h;  /* host buffer of room bytes */
    size_t room;
    const char *where, *kind;
} coll_ctx_t;

/* The host side of the checks is pinned: a cudaMemcpyAsync to or from pageable memory
 * waits inside the driver for the stream, which (forced direct path over transports that
 * call the driver from the channel) blocks the channel the stream waits for (README). */
static void coll_host_alloc(coll_ctx_t *c)
{
    if (cudaMallocHost((void **)&c->h, c->room) != cudaSuccess)
        harness_fail("cudaMallocHost(%zu)", c->room);
}

static void coll_to_dev(coll_ctx_t *c, void *dev, size_t bytes)
{
    CK_CUDA(cudaMemcpyAsync(dev, c->h, bytes, cudaMemcpyHostToDevice, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s)); /* c->h is refilled next */
}

static void coll_to_host(coll_ctx_t *c, const void *dev, size_t bytes)
{
    CK_CUDA(cudaMemcpyAsync(c->h, dev, bytes, cudaMemcpyDeviceToHost, c->s));
    CK_CUDA(cudaStreamSynchronize(c->s));
}

static void coll_poison(coll_ctx_t *c, void *dev, size_t bytes)
{
    CK_CUDA(cudaMemsetAsync(dev, COLL_POISON, bytes, c->s));
}

static void coll_guard_check(coll_ctx_t *c, const uint8_t *g, const char *what, size_t count)
{
    for (size_t j = 0; j < COLL_GUARD; j++)
        if (g[j] != COLL_POISON)
            harness_fail("%s %s %s count %zu: byte %zu after the result was written", c->where,
                         c->kind, what, count, j);
}

static void coll_rs(coll_ctx_t *c, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                    int inplace, int salt)
{
    refcheck_spec_t spec = gpu_spec(t, op, c->n, salt);
    size_t es = refcheck_dtype_size(t), bytes = count * es, total = count * (size_t)c->n;
    char *recv = inplace ? c->a + (size_t)c->rank * bytes : c->b;
    size_t bad = 0, first = 0;

    refcheck_fill(&spec, c->rank, c->h, total);
    coll_to_dev(c, c->a, total * es);
    if (!inplace)
        coll_poison(c, c->b, bytes + COLL_GUARD);
    CK_SC(symcoll_reduce_scatter(c->a, recv, count, t, op, c->comm, c->s));
    coll_to_host(c, recv, bytes + (inplace ? 0 : COLL_GUARD));
    for (size_t i = 0; i < count; i++) {
        uint64_t e = 0;
        refcheck_store(&e, 0, t, refcheck_expected(&spec, (size_t)c->rank * count + i));
        if (refcheck_load(&e, 0, t) != refcheck_load(c->h, i, t)) {
            if (!bad)
                first = i;
            bad++;
        }
    }
    if (bad)
        harness_fail("%s %s reduce-scatter %s %s count %zu %s: %zu wrong, first %zu is %g, "
                     "expected %g",
                     c->where, c->kind, symcoll_dtype_name(t), symcoll_op_name(op), count,
                     inplace ? "in place" : "out of place", bad, first,
                     refcheck_load(c->h, first, t),
                     refcheck_expected(&spec, (size_t)c->rank * count + first));
    if (!inplace)
        coll_guard_check(c, c->h + bytes, "reduce-scatter", count);
}

static void coll_ag(coll_ctx_t *c, size_t count, symcoll_dtype_t t, int inplace, int salt)
{
    size_t block = count * refcheck_dtype_size(t), total = block * (size_t)c->n;
    char *send = inplace ? c->a + (size_t)c->rank * block : c->b;

    memset(c->h, COLL_POISON, total + COLL_GUARD);
    for (size_t j = 0; j < block; j++)
        c->h[(inplace ? (size_t)c->rank * block : 0) + j] = coll_byte(c->rank, j, salt);
    if (inplace) {
        coll_to_dev(c, c->a, total + COLL_GUARD);
    } else {
        coll_to_dev(c, c->b, block);
        coll_poison(c, c->a, total + COLL_GUARD);
    }
    CK_SC(symcoll_allgather(send, c->a, count, t, c->comm, c->s));
    coll_to_host(c, c->a, total + COLL_GUARD);
    for (int r = 0; r < c->n; r++) {
        size_t bad = 0;
        for (size_t j = 0; j < block; j++)
            bad += c->h[(size_t)r * block + j] != coll_byte(r, j, salt);
        if (bad)
            harness_fail("%s %s all-gather %s count %zu %s: %zu wrong bytes in block %d",
                         c->where, c->kind, symcoll_dtype_name(t), count,
                         inplace ? "in place" : "out of place", bad, r);
    }
    coll_guard_check(c, c->h + total, "all-gather", count);
}

static void coll_bc(coll_ctx_t *c, size_t count, symcoll_dtype_t t, int root, int inplace,
                    int salt)
{
    size_t bytes = count * refcheck_dtype_size(t), bad = 0;
    char *send = inplace ? c->a : c->b;

    if (c->rank == root) {
        for (size_t j = 0; j < bytes; j++)
            c->h[j] = coll_byte(root, j, salt);
        coll_to_dev(c, send, bytes);
    } else if (!inplace) {
        CK_CUDA(cudaMemsetAsync(send, 0x5a, bytes, c->s)); /* not the root's: never read */
    }
    if (!inplace || c->rank != root)
        coll_poison(c, c->a, bytes + COLL_GUARD);
    CK_SC(symcoll_broadcast(send, c->a, count, t, root, c->comm, c->s));
    coll_to_host(c, c->a, bytes + COLL_GUARD);
    for (size_t j = 0; j < bytes; j++)
        bad += c->h[j] != coll_byte(root, j, salt);
    if (bad)
        harness_fail("%s %s broadcast %s count %zu root %d %s: %zu wrong bytes", c->where,
                     c->kind, symcoll_dtype_name(t), count, root,
                     inplace ? "in place" : "out of place", bad);
    if (!inplace || c->rank != root)
        coll_guard_check(c, c->h + bytes, "broadcast", count);
}

int gpu_coll_sweep(symcoll_comm_h comm, int rank, int nranks, cudaStream_t s, int pool,
                   int quick, int salt, const char *where)
{
    static const struct {
        symcoll_dtype_t t;
        symcoll_op_t op;
    } rs_kinds[] = {{SYMCOLL_FLOAT32, SYMCOLL_SUM},
                    {SYMCOLL_BFLOAT16, SYMCOLL_SUM},
                    {SYMCOLL_INT64, SYMCOLL_MIN},
                    {SYMCOLL_INT8, SYMCOLL_MAX},
                    {SYMCOLL_FLOAT64, SYMCOLL_AVG}};
    static const symcoll_dtype_t ag_types[] = {SYMCOLL_UINT8, SYMCOLL_FLOAT16, SYMCOLL_FLOAT32,
                                               SYMCOLL_FLOAT64};
    const size_t nrs = quick ? 2 : sizeof(rs_kinds) / sizeof(rs_kinds[0]);
    const size_t nag = quick ? 2 : sizeof(ag_types) / sizeof(ag_types[0]);
    coll_ctx_t c = {comm, s, rank, nranks, NULL, NULL, NULL, 0, where, NULL};

    c.room = coll_counts[COLL_NCOUNTS - 1] * 8 * (size_t)nranks + 4096;
    coll_host_alloc(&c);
    for (int p = pool ? 1 : 0; p >= 0; p--) {
        c.kind = p ? "pool" : "plain";
        if (p) {
            CK_SC(symcoll_mem_alloc(comm, c.room, SYMCOLL_MEM_CUDA, (void **)&c.a));
            CK_SC(symcoll_mem_alloc(comm, c.room, SYMCOLL_MEM_CUDA, (void **)&c.b));
        } else {
            CK_CUDA(cudaMalloc((void **)&c.a, c.room));
            CK_CUDA(cudaMalloc((void **)&c.b, c.room));
        }
        for (size_t k = 0; k < COLL_NCOUNTS; k++) {
            size_t count = coll_counts[k];
            for (int inplace = 0; inplace < 2; inplace++) {
                for (size_t m = 0; m < nrs; m++)
                    coll_rs(&c, count, rs_kinds[m].t, rs_kinds[m].op, inplace, ++salt);
                for (size_t m = 0; m < nag; m++)
                    coll_ag(&c, count,
                            ag_types[(m + k) % (sizeof(ag_types) / sizeof(ag_types[0]))],
                            inplace, ++salt);
                coll_bc(&c, count, (k & 1) ? SYMCOLL_INT8 : SYMCOLL_FLOAT32, 0, inplace,
                        ++salt);
                if (nranks > 1)
                    coll_bc(&c, count, SYMCOLL_BFLOAT16, nranks - 1, inplace, ++salt);
            }
        }
        CK_CUDA(cudaStreamSynchronize(s));
        if (p) {
            CK_SC(symcoll_mem_free(comm, c.a));
            CK_SC(symcoll_mem_free(comm, c.b));
        } else {
            CK_CUDA(cudaFree(c.a));
            CK_CUDA(cudaFree(c.b));
        }
    }
    CK_CUDA(cudaFreeHost(c.h));
    return salt;
}

int gpu_coll_types(symcoll_comm_h comm, int rank, int nranks, cudaStream_t s, int salt,
                   const char *where)
{
    static const size_t counts[] = {7, 1001};
    coll_ctx_t c = {comm, s, rank, nranks, NULL, NULL, NULL, 0, where, NULL};

    c.room = counts[1] * 8 * (size_t)nranks + 4096;
    coll_host_alloc(&c);
    for (int p = 1; p >= 0; p--) {
        c.kind = p ? "pool" : "plain";
        if (p) {
            CK_SC(symcoll_mem_alloc(comm, c.room, SYMCOLL_MEM_CUDA, (void **)&c.a));
            CK_SC(symcoll_mem_alloc(comm, c.room, SYMCOLL_MEM_CUDA, (void **)&c.b));
        } else {
            CK_CUDA(cudaMalloc((void **)&c.a, c.room));
            CK_CUDA(cudaMalloc((void **)&c.b, c.room));
        }
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
                    for (int op = 0; op < SYMCOLL_OP_LAST; op++)
                        coll_rs(&c, counts[k], (symcoll_dtype_t)t, (symcoll_op_t)op, inplace,
                                ++salt);
                    coll_ag(&c, counts[k], (symcoll_dtype_t)t, inplace, ++salt);
                    coll_bc(&c, counts[k], (symcoll_dtype_t)t, t % nranks, inplace, ++salt);
                }
            }
        }
        CK_CUDA(cudaStreamSynchronize(s));
        if (p) {
            CK_SC(symcoll_mem_free(comm, c.a));
            CK_SC(symcoll_mem_free(comm, c.b));
        } else {
            CK_CUDA(cudaFree(c.a));
            CK_CUDA(cudaFree(c.b));
        }
    }
    CK_CUDA(cudaFreeHost(c.h));
    return salt;
}

gpu_bar_shared_t *gpu_bar_shared_new(void)
{
    void *p = mmap(NULL, sizeof(gpu_bar_shared_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 0, sizeof(gpu_bar_shared_t));
    return p;
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef struct {
    _Atomic long long *slot;
    unsigned delay_us;
} bar_mark_t;

/* a host function on the stream: waits (holds the stream back), then records the time */
static void CUDART_CB bar_mark(void *arg)
{
    bar_mark_t *m = arg;
    if (m->delay_us)
        usleep(m->delay_us);
    atomic_store(m->slot, mono_ns());
}

void gpu_barrier_order(symcoll_comm_h comm, int rank, int nranks, gpu_bar_shared_t *sh,
                       symcoll_status_t capture_status)
{
    const size_t bytes = 4096;
    cudaStream_t s;
    uint8_t *buf, *host;
    void *peer[GPU_BAR_MAX_RANKS] = {NULL};
    bar_mark_t before[GPU_BAR_ROUNDS], after[GPU_BAR_ROUNDS];
    symcoll_status_t st;
    cudaGraph_t g;

    if (nranks > GPU_BAR_MAX_RANKS)
        harness_fail("gpu_barrier_order: %d ranks, at most %d", nranks, GPU_BAR_MAX_RANKS);
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK_CUDA(cudaMalloc((void **)&buf, bytes));
    CK_CUDA(cudaMemset(buf, 0, bytes));
    host = malloc(bytes * (size_t)nranks);
    CK_CUDA(cudaIpcGetMemHandle(&sh->handle[rank], buf));

    /* a capture before any stream barrier: refused, nothing queued */
    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    st = symcoll_barrier(comm, s);
    if (cudaStreamEndCapture(s, &g) == cudaSuccess && g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
    if (st != capture_status)
        harness_fail("a stream barrier in a capture before the first one returned %s, "
                     "expected %s",
                     symcoll_status_string(st), symcoll_status_string(capture_status));

    CK_SC(symcoll_barrier(comm, NULL)); /* every handle published */
    for (int p = 0; p < nranks; p++)
        if (p != rank)
            CK_CUDA(
                cudaIpcOpenMemHandle(&peer[p], sh->handle[p], cudaIpcMemLazyEnablePeerAccess));
    for (int it = 0; it < GPU_BAR_ROUNDS; it++) {
        int slow = it % nranks;
        before[it] = (bar_mark_t){&sh->before[it][rank], rank == slow ? 150000u : 0u};
        after[it] = (bar_mark_t){&sh->after[it][rank], 0};
        CK_CUDA(cudaLaunchHostFunc(s, bar_mark, &before[it]));
        CK_CUDA(cudaMemsetAsync(buf, (it * 16 + rank + 1) & 0xff, bytes, s));
        CK_SC(symcoll_barrier(comm, s));
        CK_CUDA(cudaLaunchHostFunc(s, bar_mark, &after[it]));
        for (int p = 0; p < nranks; p++)
            if (p != rank)
                CK_CUDA(cudaMemcpyAsync(host + (size_t)p * bytes, peer[p], bytes,
                                        cudaMemcpyDeviceToHost, s));
        /* the peers' next writes wait for these copies */
        CK_SC(symcoll_barrier(comm, s));
        CK_CUDA(cudaStreamSynchronize(s));
        for (int p = 0; p < nranks; p++) {
            long long tb = atomic_load(&sh->before[it][p]),
                      ta = atomic_load(&sh->after[it][rank]);
            if (!tb || ta < tb)
                harness_fail("round %d: this rank's stream went on past the stream barrier "
                             "%s rank %d's stream reached it",
                             it, tb ? "before" : "although it never saw", p);
            if (p == rank)
                continue;
            for (size_t j = 0; j < bytes; j++)
                if (host[(size_t)p * bytes + j] != (uint8_t)((it * 16 + p + 1) & 0xff))
                    harness_fail("round %d: byte %zu of rank %d's buffer read after the "
                                 "stream barrier is 0x%02x, expected 0x%02x",
                                 it, j, p, host[(size_t)p * bytes + j],
                                 (it * 16 + p + 1) & 0xff);
        }
    }
    /* the legacy default stream: cudaStreamLegacy, since NULL is the host barrier */
    CK_SC(symcoll_barrier(comm, cudaStreamLegacy));
    CK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    CK_SC(symcoll_barrier(comm, NULL));
    for (int p = 0; p < nranks; p++)
        if (peer[p])
            CK_CUDA(cudaIpcCloseMemHandle(peer[p]));
    CK_CUDA(cudaFree(buf));
    CK_CUDA(cudaStreamDestroy(s));
    free(host);
}
