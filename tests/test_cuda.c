/* GPU tests of the CUDA path: every datatype x operator on 1 and 2 ranks (one GPU each
 * when there are enough), in and out of place, plain and pool buffers, staging growth,
 * CUDA graph capture and replay, growth refused inside a capture; and across simulated
 * nodes (UCX over TCP): stream order, pool growth, 2 nodes x 2 ranks, a killed, aborted
 * or absent peer, capture refused, host calls between queued GPU calls. Exit 77 without
 * GPUs. The cross-node cases carry the Check tag "net" (CK_INCLUDE_TAGS=net). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "harness.h"
#include "symcoll.h"

#define CK_CUDA(x)                                                                             \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess)                                                                 \
            harness_fail("%s:%d: %s: %s", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
    } while (0)
#define CK_SC(x)                                                                               \
    do {                                                                                       \
        symcoll_status_t s_ = (x);                                                             \
        if (s_ != SYMCOLL_OK)                                                                  \
            harness_fail("%s:%d: %s: %s", __FILE__, __LINE__, #x, symcoll_status_string(s_));  \
    } while (0)

static int ngpus; /* counted in a child process: CUDA must not start before the forks */

/* ---- host-side values and reference ------------------------------------------ */

static float bf16_to_f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f_to_bf16(float f) /* round to nearest even, as __float2bfloat16_rn */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float h_to_f(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f_to_h(float f) /* exact for the small values the tests use */
{
    uint16_t s = f < 0 ? 0x8000 : 0;
    float a = fabsf(f);
    int e;
    if (a == 0)
        return s;
    frexpf(a, &e);   /* a = m * 2^e, m in [0.5,1) */
    if (e - 1 < -14) /* subnormal */
        return s | (uint16_t)lrintf(ldexpf(a, 24));
    {
        long mant = lrintf(ldexpf(a, 11 - e)); /* 11 significant bits */
        if (mant == 2048) {
            mant = 1024;
            e++;
        }
        return s | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(mant & 0x3ff);
    }
}

/* gen_val and ref_val repeat every VAL_PERIOD elements (i * 7 mod 11) */
#define VAL_PERIOD 11

/* Repeats the first period bytes of buf up to bytes (doubling copies: large test
 * buffers fill at memcpy speed). */
static void fill_periodic(void *buf, size_t period, size_t bytes)
{
    size_t have = period;
    if (!period)
        return;
    while (have < bytes) {
        size_t n = have < bytes - have ? have : bytes - have;
        memcpy((char *)buf + have, buf, n);
        have += n;
    }
}

/* small integers: every operator is exact in every type, for any number of ranks */
static long gen_val(symcoll_dtype_t t, symcoll_op_t op, int rank, size_t i, int salt)
{
    long v = (long)((i * 7 + (size_t)rank * 13 + (size_t)salt * 5) % 11);
    int is_unsigned = t == SYMCOLL_UINT8 || t == SYMCOLL_UINT32 || t == SYMCOLL_UINT64;
    if (op == SYMCOLL_PROD)
        v = v % 3 + (is_unsigned ? 0 : -1); /* -1..1 or 0..2 */
    else if (!is_unsigned)
        v -= 5;
    return v;
}

static void put(void *buf, symcoll_dtype_t t, size_t i, double v)
{
    switch (t) {
    case SYMCOLL_INT8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case SYMCOLL_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case SYMCOLL_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case SYMCOLL_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case SYMCOLL_INT64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case SYMCOLL_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case SYMCOLL_FLOAT16:
        ((uint16_t *)buf)[i] = f_to_h((float)v);
        break;
    case SYMCOLL_BFLOAT16:
        ((uint16_t *)buf)[i] = f_to_bf16((float)v);
        break;
    case SYMCOLL_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    case SYMCOLL_FLOAT64:
        ((double *)buf)[i] = v;
        break;
    default:
        break;
    }
}

static double get(const void *buf, symcoll_dtype_t t, size_t i)
{
    switch (t) {
    case SYMCOLL_INT8:
        return ((const int8_t *)buf)[i];
    case SYMCOLL_UINT8:
        return ((const uint8_t *)buf)[i];
    case SYMCOLL_INT32:
        return ((const int32_t *)buf)[i];
    case SYMCOLL_UINT32:
        return ((const uint32_t *)buf)[i];
    case SYMCOLL_INT64:
        return (double)((const int64_t *)buf)[i];
    case SYMCOLL_UINT64:
        return (double)((const uint64_t *)buf)[i];
    case SYMCOLL_FLOAT16:
        return h_to_f(((const uint16_t *)buf)[i]);
    case SYMCOLL_BFLOAT16:
        return bf16_to_f(((const uint16_t *)buf)[i]);
    case SYMCOLL_FLOAT32:
        return ((const float *)buf)[i];
    case SYMCOLL_FLOAT64:
        return ((const double *)buf)[i];
    default:
        return 0;
    }
}

static int is_float(symcoll_dtype_t t)
{
    return t == SYMCOLL_FLOAT16 || t == SYMCOLL_BFLOAT16 || t == SYMCOLL_FLOAT32 ||
           t == SYMCOLL_FLOAT64;
}

static double ref_val(symcoll_dtype_t t, symcoll_op_t op, int n, size_t i, int salt)
{
    double acc = (double)gen_val(t, op, 0, i, salt);
    for (int q = 1; q < n; q++) {
        double v = (double)gen_val(t, op, q, i, salt);
        switch (op) {
        case SYMCOLL_SUM:
        case SYMCOLL_AVG:
            acc += v;
            break;
        case SYMCOLL_PROD:
            acc *= v;
            break;
        case SYMCOLL_MIN:
            acc = v < acc ? v : acc;
            break;
        case SYMCOLL_MAX:
            acc = v > acc ? v : acc;
            break;
        default:
            break;
        }
    }
    if (op == SYMCOLL_AVG)
        acc = is_float(t) ? acc / n : (double)((long)acc / n); /* integers: truncated */
    return acc;
}

/* fill dev with this rank's values; poison out (if distinct) so unwritten output shows */
static void fill(void *dev, void *out, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                 int rank, int salt, void *host, cudaStream_t s)
{
    size_t bytes = count * symcoll_dtype_size(t);
    size_t head = count < VAL_PERIOD ? count : VAL_PERIOD;
    for (size_t i = 0; i < head; i++)
        put(host, t, i, (double)gen_val(t, op, rank, i, salt));
    fill_periodic(host, head * symcoll_dtype_size(t), bytes);
    CK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    if (out && out != dev)
        CK_CUDA(cudaMemsetAsync(out, 0x7b, bytes, s));
}

static void verify(const void *dev, size_t count, symcoll_dtype_t t, symcoll_op_t op, int n,
                   int salt, void *host, cudaStream_t s, const char *what)
{
    size_t esize = symcoll_dtype_size(t), bytes = count * esize;
    unsigned char want_bits[VAL_PERIOD * 8];
    size_t i = 0;
    CK_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    /* fast path: whole periods that are bit-identical to the expected encoding; anything
     * else is compared element by element below */
    for (size_t k = 0; k < VAL_PERIOD; k++)
        put(want_bits, t, k, ref_val(t, op, n, k, salt));
    while (i + VAL_PERIOD <= count &&
           !memcmp((const char *)host + i * esize, want_bits, VAL_PERIOD * esize))
        i += VAL_PERIOD;
    for (; i < count; i++) {
        double want = ref_val(t, op, n, i, salt), got = get(host, t, i);
        if (got != want)
            harness_fail("%s: %s %s count %zu: element %zu is %g, expected %g", what,
                         symcoll_dtype_name(t), symcoll_op_name(op), count, i, got, want);
    }
}

static void set_device(int rank)
{
    int n = 0;
    CK_CUDA(cudaGetDeviceCount(&n));
    CK_CUDA(cudaSetDevice(rank % n));
}

/* ---- every datatype x operator -------------------------------------------------- */

static const size_t small_sizes[] = {1, 7, 4099};

static void body_types(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm;
    cudaStream_t s;
    size_t max_count = (1u << 20) + 3; /* elements */
    void *a, *b, *host;
    int salt = 0;

    set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    CK_CUDA(cudaMalloc(&a, max_count * 8 + 64));
    CK_CUDA(cudaMalloc(&b, max_count * 8 + 64));
    host = malloc(max_count * 8);
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
        for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
            size_t esize = symcoll_dtype_size((symcoll_dtype_t)t);
            for (size_t k = 0; k <= (sizeof(small_sizes) / sizeof(small_sizes[0])); k++) {
                /* the last size, 1 MiB + 3 elements of this type, for sum and max only */
                size_t count = k < (sizeof(small_sizes) / sizeof(small_sizes[0]))
                                   ? small_sizes[k]
                                   : (1u << 20) / esize + 3;
                if (k == (sizeof(small_sizes) / sizeof(small_sizes[0])) && op != SYMCOLL_SUM &&
                    op != SYMCOLL_MAX)
                    continue;
                for (int inplace = 0; inplace < 2; inplace++) {
                    void *out = inplace ? a : b;
                    salt++;
                    fill(a, out, count, t, op, rank, salt, host, s);
                    CK_SC(symcoll_allreduce(a, out, count, t, op, comm, s));
                    verify(out, count, t, op, nranks, salt, host, s,
                           inplace ? "in place" : "out of place");
                }
            }
            /* misaligned (but element-aligned) buffers take the element-wise path */
            if (esize < 16) {
                size_t count = 4099;
                char *ma = (char *)a + esize, *mb = (char *)b + 3 * esize;
                salt++;
                fill(ma, mb, count, t, op, rank, salt, host, s);
                CK_SC(symcoll_allreduce(ma, mb, count, t, op, comm, s));
                verify(mb, count, t, op, nranks, salt, host, s, "misaligned");
            }
        }
    }
    /* count 0 is a no-op */
    CK_SC(symcoll_allreduce(a, b, 0, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_comm_destroy(comm));
    free(host);
    cudaFree(a);
    cudaFree(b);
    (void)arg;
}

START_TEST(t_types_1rank)
{
    ck_assert_int_eq(harness_run(1, 1, 600, body_types, NULL), 0);
}
END_TEST

START_TEST(t_types_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 900, body_types, NULL), 0);
}
END_TEST

/* ---- pool buffers, big sizes, growth ----------------------------------------- */

static void body_pool(int rank, int nranks, void *arg)
{
    const size_t big = (size_t)256 << 20; /* bytes */
    symcoll_comm_h comm;
    symcoll_pool_attr_t attr = {.field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS |
                                              SYMCOLL_POOL_ATTR_FIELD_MAPPED};
    cudaStream_t s;
    void *pa, *pb, *plain, *host;
    uint64_t growths0;
    int salt = 1000;
    static const size_t counts[] = {4099, (1u << 20) + 3};

    set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    host = malloc(big);
    /* pool buffers: reduced in place and out of place with no staging */
    CK_SC(symcoll_mem_alloc(comm, 8 << 20, SYMCOLL_MEM_CUDA, &pa));
    CK_SC(symcoll_mem_alloc(comm, 8 << 20, SYMCOLL_MEM_CUDA, &pb));
    for (size_t k = 0; k < 2; k++) {
        for (int t = SYMCOLL_FLOAT16; t <= SYMCOLL_FLOAT32; t++) {
            salt++;
            fill(pa, pb, counts[k], t, SYMCOLL_SUM, rank, salt, host, s);
            CK_SC(symcoll_allreduce(pa, pb, counts[k], t, SYMCOLL_SUM, comm, s));
            verify(pb, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s, "pool out of place");
            salt++;
            fill(pa, pa, counts[k], t, SYMCOLL_MAX, rank, salt, host, s);
            CK_SC(symcoll_allreduce(pa, pa, counts[k], t, SYMCOLL_MAX, comm, s));
            verify(pa, counts[k], t, SYMCOLL_MAX, nranks, salt, host, s, "pool in place");
            /* pool input, plain output and the reverse */
            salt++;
            CK_CUDA(cudaMalloc(&plain, counts[k] * 4));
            fill(pa, plain, counts[k], t, SYMCOLL_SUM, rank, salt, host, s);
            CK_SC(symcoll_allreduce(pa, plain, counts[k], t, SYMCOLL_SUM, comm, s));
            verify(plain, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s, "pool to plain");
            salt++;
            fill(plain, pb, counts[k], t, SYMCOLL_SUM, rank, salt, host, s);
            CK_SC(symcoll_allreduce(plain, pb, counts[k], t, SYMCOLL_SUM, comm, s));
            verify(pb, counts[k], t, SYMCOLL_SUM, nranks, salt, host, s, "plain to pool");
            CK_CUDA(cudaFree(plain));
        }
    }
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &attr));
    growths0 = attr.growths;

    /* growth across calls: plain buffers of rising size make the staging grow */
    CK_CUDA(cudaMalloc(&plain, big));
    {
        static const size_t rising[] = {64 << 10, 4 << 20, 64 << 20, (size_t)256 << 20};
        for (size_t k = 0; k < (sizeof(rising) / sizeof(rising[0])); k++) {
            size_t count = rising[k] / 2;
            salt++;
            fill(plain, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, salt, host, s);
            CK_SC(
                symcoll_allreduce(plain, plain, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
            verify(plain, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host, s,
                   "rising size");
        }
    }
    CK_SC(symcoll_pool_query(comm, SYMCOLL_MEM_CUDA, &attr));
    if (nranks > 1 && attr.growths <= growths0)
        harness_fail("the pool did not grow for 256 MiB of staging (%llu growths)",
                     (unsigned long long)attr.growths);
    /* 256 MiB: float32 sum out of place, plain buffers; then a 256 MiB pool buffer */
    {
        void *out;
        size_t count = big / 4;
        CK_CUDA(cudaMalloc(&out, big));
        salt++;
        fill(plain, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, salt, host, s);
        CK_SC(symcoll_allreduce(plain, out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, comm, s));
        verify(out, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, salt, host, s, "256 MiB");
        CK_CUDA(cudaFree(out));
    }
    {
        void *pbig;
        size_t count = big / 2;
        CK_SC(symcoll_mem_alloc(comm, big, SYMCOLL_MEM_CUDA, &pbig));
        salt++;
        fill(pbig, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, salt, host, s);
        CK_SC(symcoll_allreduce(pbig, pbig, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        verify(pbig, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host, s,
               "256 MiB pool in place");
        CK_CUDA(cudaStreamSynchronize(s));
        CK_SC(symcoll_mem_free(comm, pbig));
    }
    CK_CUDA(cudaStreamSynchronize(s));
    CK_SC(symcoll_mem_free(comm, pa));
    CK_SC(symcoll_mem_free(comm, pb));
    CK_SC(symcoll_comm_destroy(comm));
    cudaFree(plain);
    free(host);
    (void)arg;
}

START_TEST(t_pool_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 900, body_pool, NULL), 0);
}
END_TEST

/* ---- CUDA graphs ------------------------------------------------------------------ */

static void body_graph(int rank, int nranks, void *arg)
{
    static const size_t counts[] = {8 << 10, (2 << 20) + 5}; /* bf16: one-shot, two-shot */
    symcoll_comm_h comm;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    void *in[2], *out[2], *host;
    int salt = 5000;

    set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host = malloc(counts[1] * 2);
    for (int k = 0; k < 2; k++) {
        CK_CUDA(cudaMalloc(&in[k], counts[k] * 2));
        CK_CUDA(cudaMalloc(&out[k], counts[k] * 2));
        /* warm-up: sizes the staging before the capture */
        CK_SC(symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm,
                                s));
    }
    CK_CUDA(cudaStreamSynchronize(s));

    CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 2; k++)
        CK_SC(symcoll_allreduce(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm,
                                s));
    CK_CUDA(cudaStreamEndCapture(s, &g));
    CK_CUDA(cudaGraphInstantiate(&ge, g, 0));

    for (int it = 0; it < 300; it++) {
        int check = it % 50 == 0 || it == 299;
        salt++;
        /* new inputs each replay, so a replay that did nothing shows */
        for (int k = 0; k < 2; k++)
            fill(in[k], out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, salt, host, s);
        CK_CUDA(cudaGraphLaunch(ge, s));
        if (check)
            for (int k = 0; k < 2; k++)
                verify(out[k], counts[k], SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, host, s,
                       "graph replay");
        if (it % 7 == 0) {
            /* eager calls between replays: same and other sizes */
            salt++;
            fill(in[0], out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, rank, salt, host, s);
            CK_SC(
                symcoll_allreduce(in[0], out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, comm, s));
            if (check)
                verify(out[0], 4099, SYMCOLL_BFLOAT16, SYMCOLL_MAX, nranks, salt, host, s,
                       "eager between replays");
        }
    }
    CK_CUDA(cudaStreamSynchronize(s));

    /* a size that needs more staging: refused inside the capture, works after it */
    if (nranks > 1) {
        size_t count = (size_t)64 << 20;
        void *bigbuf;
        symcoll_status_t st;
        cudaGraph_t g2;
        CK_CUDA(cudaMalloc(&bigbuf, count * 2));
        CK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        st = symcoll_allreduce(bigbuf, bigbuf, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s);
        /* the capture may come back invalidated: the check looked at the legacy stream */
        if (cudaStreamEndCapture(s, &g2) != cudaSuccess)
            g2 = NULL;
        (void)cudaGetLastError();
        if (st != SYMCOLL_ERR_IN_PROGRESS)
            harness_fail("growth inside a capture returned %s, expected %s",
                         symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_IN_PROGRESS));
        if (g2)
            cudaGraphDestroy(g2);
        salt++;
        fill(bigbuf, NULL, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, salt, malloc(count * 2),
             s);
        CK_SC(symcoll_allreduce(bigbuf, bigbuf, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        CK_CUDA(cudaStreamSynchronize(s));
        CK_CUDA(cudaFree(bigbuf));
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    CK_SC(symcoll_comm_destroy(comm));
    free(host);
    (void)arg;
}

START_TEST(t_graph_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 600, body_graph, NULL), 0);
}
END_TEST

/* ---- random data: every rank gets the same bits, equal to a float32 reference ----- */

static void body_bits(int rank, int nranks, void *arg)
{
    const size_t count = (3u << 20) + 5;
    symcoll_comm_h comm;
    cudaStream_t s;
    uint16_t *hin, *hout;
    void *d;
    uint64_t h = 1469598103934665603ull, hmin, hmax;

    set_device(rank);
    comm = harness_comm_create();
    CK_CUDA(cudaStreamCreate(&s));
    hin = malloc(count * 2);
    hout = malloc(count * 2);
    CK_CUDA(cudaMalloc(&d, count * 2));
    for (size_t k = 0; k < 2; k++) {
        size_t c = k ? count : 4099;
        for (size_t i = 0; i < c; i++) {
            uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503u + 17);
            hin[i] = f_to_bf16(((float)(x % 100000) - 50000.0f) / 977.0f);
        }
        CK_CUDA(cudaMemcpy(d, hin, c * 2, cudaMemcpyHostToDevice));
        CK_SC(symcoll_allreduce(d, d, c, SYMCOLL_BFLOAT16, SYMCOLL_SUM, comm, s));
        CK_CUDA(cudaMemcpyAsync(hout, d, c * 2, cudaMemcpyDeviceToHost, s));
        CK_CUDA(cudaStreamSynchronize(s));
        for (size_t i = 0; i < c; i++) {
            float acc = 0;
            for (int q = 0; q < nranks; q++) {
                uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(q * 40503u + 17);
                acc += bf16_to_f(f_to_bf16(((float)(x % 100000) - 50000.0f) / 977.0f));
            }
            if (hout[i] != f_to_bf16(acc))
                harness_fail("bf16 sum element %zu: 0x%04x, float32 reference 0x%04x", i,
                             hout[i], f_to_bf16(acc));
            h = (h ^ hout[i]) * 1099511628211ull;
        }
    }
    /* the same hash on every rank (through the host path) */
    CK_SC(symcoll_allreduce(&h, &hmin, 1, SYMCOLL_UINT64, SYMCOLL_MIN, comm, NULL));
    CK_SC(symcoll_allreduce(&h, &hmax, 1, SYMCOLL_UINT64, SYMCOLL_MAX, comm, NULL));
    if (hmin != hmax)
        harness_fail("ranks got different bits");
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

START_TEST(t_bits_2ranks)
{
    ck_assert_int_eq(harness_run(2, 1, 300, body_bits, NULL), 0);
}
END_TEST

/* ---- CUDA memory across (simulated) nodes ------------------------------------------ */

/* Ranks on different simulated nodes reach each other only through UCX (TCP here), so
 * GPU buffers are staged through host memory or reached by rkeys; the call returns once
 * queued and the stream waits for the result. Every call below sits between earlier
 * stream work that writes its input behind a delay and later stream work that
 * overwrites it: a call that runs ahead of its stream reads poison, one that finishes
 * behind it leaves the copy taken after it wrong. */

#define NET_BIG ((size_t)16 << 20) /* bytes: the large size */
#define NET_SLACK 256              /* bytes past every buffer: odd counts and the guard */
#define NET_GUARD 64               /* bytes after every result that must stay untouched */
#define NET_FAIL_TIMEOUT 20        /* SYMCOLL_TIMEOUT of the failure cases, seconds */
#define NET_SHORT_TIMEOUT 8        /* SYMCOLL_TIMEOUT of the absent-peer case, seconds */
#define NET_MAX_BUFS 6

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a wait that never returns ends the rank with its name instead of the harness timeout */
static const char *net_waiting = "";

static void net_alarm(int sig)
{
    static const char m[] = "FAIL: this wait did not return in time: ";
    (void)sig;
    if (write(2, m, sizeof(m) - 1) < 0 || write(2, net_waiting, strlen(net_waiting)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(1);
    _exit(1);
}

static void net_watch(const char *what, unsigned sec)
{
    net_waiting = what;
    signal(SIGALRM, net_alarm);
    alarm(sec);
}

static void CUDART_CB net_stream_delay(void *arg)
{
    (void)arg;
    usleep(20000);
}

static void net_set_timeout(int sec)
{
    char buf[16];
    snprintf(buf, sizeof(buf), "%d", sec);
    setenv("SYMCOLL_TIMEOUT", buf, 1);
}

static void *net_host(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p)
        harness_fail("out of host memory (%zu bytes)", bytes);
    return p;
}

/* What a cross-node body works with: its GPU (rank % GPUs), the communicator, a
 * non-blocking stream, nbuf device buffers and one host buffer of bytes + NET_SLACK. */
typedef struct {
    symcoll_comm_h comm;
    cudaStream_t s;
    void *d[NET_MAX_BUFS];
    int nbuf;
    void *host;
} net_rank_t;

static void net_setup(net_rank_t *r, int rank, int nbuf, size_t bytes)
{
    set_device(rank);
    r->comm = harness_comm_create();
    CK_CUDA(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
    r->nbuf = nbuf;
    for (int i = 0; i < nbuf; i++)
        CK_CUDA(cudaMalloc(&r->d[i], bytes + NET_SLACK));
    r->host = net_host(bytes + NET_SLACK);
}

/* destroy: 0 where the body destroyed the communicator itself */
static void net_teardown(net_rank_t *r, int destroy)
{
    if (destroy) {
        CK_CUDA(cudaStreamSynchronize(r->s));
        CK_SC(symcoll_comm_destroy(r->comm));
    }
    CK_CUDA(cudaStreamDestroy(r->s));
    for (int i = 0; i < r->nbuf; i++)
        CK_CUDA(cudaFree(r->d[i]));
    free(r->host);
}

/* in: the call's input; out: its output (in for in place); copy: the input's values
 * before the call, the output's right after it */
typedef struct {
    void *in, *out, *copy;
} net_bufs_t;

static void net_enqueue(symcoll_comm_h comm, const net_bufs_t *b, size_t count,
                        symcoll_dtype_t t, symcoll_op_t op, int rank, int salt, void *host,
                        cudaStream_t s)
{
    size_t bytes = count * symcoll_dtype_size(t);

    fill(b->copy, b->out, count, t, op, rank, salt, host, s);
    CK_CUDA(cudaMemsetAsync(b->in, 0x11, bytes, s));
    CK_CUDA(cudaMemsetAsync((char *)b->out + bytes, 0x5c, NET_GUARD, s));
    CK_CUDA(cudaLaunchHostFunc(s, net_stream_delay, NULL));
    CK_CUDA(cudaMemcpyAsync(b->in, b->copy, bytes, cudaMemcpyDeviceToDevice, s));
    CK_SC(symcoll_allreduce(b->in, b->out, count, t, op, comm, s));
    CK_CUDA(cudaMemcpyAsync(b->copy, b->out, bytes, cudaMemcpyDeviceToDevice, s));
    CK_CUDA(cudaMemsetAsync(b->in, 0x22, bytes, s));
}

static void net_check(const net_bufs_t *b, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                      int nranks, int salt, void *host, cudaStream_t s, const char *what)
{
    size_t bytes = count * symcoll_dtype_size(t);
    unsigned char g[NET_GUARD];

    verify(b->copy, count, t, op, nranks, salt, host, s, what);
    CK_CUDA(cudaMemcpyAsync(g, (char *)b->out + bytes, NET_GUARD, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < NET_GUARD; i++)
        if (g[i] != 0x5c)
            harness_fail("%s: %s %s count %zu: byte %zu past the end of the output changed",
                         what, symcoll_dtype_name(t), symcoll_op_name(op), count, i);
}

/* net_enqueue then net_check, on the body's stream */
static void net_run(net_rank_t *r, void *in, void *out, void *copy, size_t count,
                    symcoll_dtype_t t, symcoll_op_t op, int rank, int nranks, int salt,
                    const char *what)
{
    net_bufs_t b = {in, out, copy};
    net_enqueue(r->comm, &b, count, t, op, rank, salt, r->host, r->s);
    net_check(&b, count, t, op, nranks, salt, r->host, r->s, what);
}

#define NET_TEST(name, nranks, nnodes, limit, body)                                            \
    START_TEST(name)                                                                           \
    {                                                                                          \
        ck_assert_int_eq(harness_run(nranks, nnodes, limit, body, NULL), 0);                   \
    }                                                                                          \
    END_TEST

/* every datatype x operator at 0, 1, 4099 elements and 16 MiB, in and out of place; the
 * in-place 4099-element and 16 MiB calls go on the legacy default stream */
static void body_net_types(int rank, int nranks, void *arg)
{
    static const size_t small[] = {0, 1, 4099};
    const size_t nsmall = sizeof(small) / sizeof(small[0]);
    net_rank_t r;
    int salt = 20000;

    net_setup(&r, rank, 3, NET_BIG);
    for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
        size_t esize = symcoll_dtype_size((symcoll_dtype_t)t);
        for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
            for (size_t k = 0; k <= nsmall; k++) {
                size_t count = k < nsmall ? small[k] : NET_BIG / esize;
                for (int inplace = 0; inplace < 2; inplace++) {
                    net_bufs_t b = {r.d[0], r.d[inplace ? 0 : 1], r.d[2]};
                    cudaStream_t s = inplace && count > 1 ? NULL : r.s;
                    const char *what = inplace ? "net in place" : "net out of place";
                    salt++;
                    net_enqueue(r.comm, &b, count, t, op, rank, salt, r.host, s);
                    net_check(&b, count, t, op, nranks, salt, r.host, s, what);
                }
            }
        }
    }
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_types_2x1, 2, 2, 900, body_net_types)

/* the same with other staging shapes: one lane without the small-call kernel (every call
 * through the stream commands, 3 slots), and 3 lanes with 64K chunks (16 MiB: 256 chunks
 * over 7 slots, lanes finishing out of order) */
static void net_types_staged(const char *lanes, const char *kernel_max, const char *chunk)
{
    setenv("SYMCOLL_CUDA_NET_LANES", lanes, 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", kernel_max, 1);
    setenv("SYMCOLL_CUDA_NET_CHUNK", chunk, 1);
    ck_assert_int_eq(harness_run(2, 2, 900, body_net_types, NULL), 0);
}

START_TEST(t_net_types_plain)
{
    net_types_staged("1", "0", "4M");
}
END_TEST

START_TEST(t_net_types_lanes3)
{
    net_types_staged("3", "4K", "64K");
}
END_TEST

/* pool buffers with plain ones in every combination, then rising pool buffers that make
 * the pool grow while the older ones stay in use */
static void body_net_pool(int rank, int nranks, void *arg)
{
    static const size_t rising[] = {64 << 10, 1 << 20, 8 << 20, 32 << 20, 64 << 20};
    enum { NRISING = sizeof(rising) / sizeof(rising[0]) };
    const size_t maxb = (size_t)64 << 20;
    static const struct {
        symcoll_dtype_t t;
        symcoll_op_t op;
    } kinds[] = {{SYMCOLL_BFLOAT16, SYMCOLL_SUM},
                 {SYMCOLL_FLOAT32, SYMCOLL_MAX},
                 {SYMCOLL_INT8, SYMCOLL_MIN}};
    symcoll_pool_attr_t attr = {
        .field_mask = SYMCOLL_POOL_ATTR_FIELD_GROWTHS | SYMCOLL_POOL_ATTR_FIELD_MAPPED |
                      SYMCOLL_POOL_ATTR_FIELD_SEGMENTS | SYMCOLL_POOL_ATTR_FIELD_IN_USE};
    net_rank_t r;
    void *pa, *pb, *plain, *copy, *pg[NRISING], *again;
    uint64_t growths0;
    size_t mapped0, in_use0, rising_total = 0;
    int salt = 30000;

    net_setup(&r, rank, 2, maxb);
    plain = r.d[0];
    copy = r.d[1];
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pa));
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pb));
    {
        const struct {
            void *in, *out;
            const char *what;
        } combos[] = {{pa, pa, "pool in place"},
                      {pa, pb, "pool to pool"},
                      {pa, plain, "pool to plain"},
                      {plain, pb, "plain to pool"}};
        for (size_t m = 0; m < sizeof(combos) / sizeof(combos[0]); m++)
            for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                for (int big = 0; big < 2; big++) {
                    size_t esize = symcoll_dtype_size(kinds[k].t);
                    size_t count = big ? NET_BIG / esize + 3 : 4099;
                    net_run(&r, combos[m].in, combos[m].out, copy, count, kinds[k].t,
                            kinds[k].op, rank, nranks, ++salt, combos[m].what);
                }
    }

    CK_SC(symcoll_pool_query(r.comm, SYMCOLL_MEM_CUDA, &attr));
    growths0 = attr.growths;
    mapped0 = attr.mapped;
    in_use0 = attr.in_use;
    for (int k = 0; k < NRISING; k++) {
        CK_SC(symcoll_mem_alloc(r.comm, rising[k] + NET_SLACK, SYMCOLL_MEM_CUDA, &pg[k]));
        rising_total += rising[k] + NET_SLACK;
        net_run(&r, pg[k], pg[k], copy, rising[k] / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
                nranks, ++salt, "rising pool buffer in place");
        net_run(&r, pg[k], plain, copy, rising[k] / 4, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank,
                nranks, ++salt, "rising pool buffer to plain");
        /* the first buffer still works after the pool grew */
        net_run(&r, pg[0], pg[0], copy, rising[0] / 4, SYMCOLL_INT32, SYMCOLL_MAX, rank, nranks,
                ++salt, "first pool buffer after growth");
    }
    CK_SC(symcoll_pool_query(r.comm, SYMCOLL_MEM_CUDA, &attr));
    if (rank == 0)
        fprintf(stderr,
                "CUDA pool: %llu growths (%llu before the rising buffers), %zu bytes "
                "mapped in %llu segments\n",
                (unsigned long long)attr.growths, (unsigned long long)growths0, attr.mapped,
                (unsigned long long)attr.segments);
    if (in_use0 + rising_total > mapped0 && attr.growths <= growths0)
        harness_fail("the CUDA pool did not grow: %zu bytes in use and %zu more allocated, "
                     "%zu mapped before",
                     in_use0, rising_total, mapped0);

    /* free all but the last, then the space is used again */
    CK_CUDA(cudaStreamSynchronize(r.s));
    for (int k = 0; k < NRISING - 1; k++)
        CK_SC(symcoll_mem_free(r.comm, pg[k]));
    CK_SC(symcoll_mem_alloc(r.comm, maxb + NET_SLACK, SYMCOLL_MEM_CUDA, &again));
    net_run(&r, again, pg[NRISING - 1], copy, maxb / 2, SYMCOLL_FLOAT16, SYMCOLL_SUM, rank,
            nranks, ++salt, "pool buffer after frees");
    CK_CUDA(cudaStreamSynchronize(r.s));
    CK_SC(symcoll_mem_free(r.comm, again));
    CK_SC(symcoll_mem_free(r.comm, pg[NRISING - 1]));
    CK_SC(symcoll_mem_free(r.comm, pa));
    CK_SC(symcoll_mem_free(r.comm, pb));
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_pool_2x1, 2, 2, 600, body_net_pool)
/* 2 x 2: the CUDA pool holds the hierarchical staging too, and grows under it */
NET_TEST(t_net_hier_pool_2x2, 4, 2, 600, body_net_pool)

/* 2 nodes x 2 ranks (GPU rank % ngpus): a few datatypes and operators, 16 MiB + 3 */
static void body_net_hier(int rank, int nranks, void *arg)
{
    static const struct {
        symcoll_dtype_t t;
        symcoll_op_t op;
    } kinds[] = {{SYMCOLL_BFLOAT16, SYMCOLL_SUM}, {SYMCOLL_FLOAT32, SYMCOLL_SUM},
                 {SYMCOLL_INT32, SYMCOLL_MAX},    {SYMCOLL_FLOAT16, SYMCOLL_MIN},
                 {SYMCOLL_FLOAT64, SYMCOLL_PROD}, {SYMCOLL_UINT8, SYMCOLL_AVG}};
    net_rank_t r;
    void *pa;
    int salt = 40000;

    net_setup(&r, rank, 3, NET_BIG);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t esize = symcoll_dtype_size(kinds[k].t);
        const size_t counts[] = {0, 1, 4099, NET_BIG / esize + 3};
        for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++)
            for (int inplace = 0; inplace < 2; inplace++)
                net_run(&r, r.d[0], r.d[inplace ? 0 : 1], r.d[2], counts[j], kinds[k].t,
                        kinds[k].op, rank, nranks, ++salt,
                        inplace ? "2x2 in place" : "2x2 out of place");
    }
    CK_SC(symcoll_mem_alloc(r.comm, NET_BIG + NET_SLACK, SYMCOLL_MEM_CUDA, &pa));
    net_run(&r, pa, pa, r.d[2], NET_BIG / 2 + 3, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
            ++salt, "2x2 pool in place");
    net_run(&r, pa, r.d[1], r.d[2], NET_BIG / 2 + 3, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
            nranks, ++salt, "2x2 pool to plain");
    CK_CUDA(cudaStreamSynchronize(r.s));
    CK_SC(symcoll_mem_free(r.comm, pa));
    /* both pools trimmed right behind a queued call (16M + 6 bytes: hierarchical over the
     * GPUs here), the stream not synchronised: the trims wait for it, the staging goes,
     * and the next call sets it up again */
    {
        net_bufs_t b = {r.d[0], r.d[1], r.d[2]};
        const size_t count = NET_BIG / 2 + 3;
        net_enqueue(r.comm, &b, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, ++salt, r.host,
                    r.s);
        CK_SC(symcoll_pool_trim(r.comm, SYMCOLL_MEM_CUDA));
        CK_SC(symcoll_pool_trim(r.comm, SYMCOLL_MEM_HOST));
        net_check(&b, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, salt, r.host, r.s,
                  "2x2 call before the trims");
        net_run(&r, r.d[0], r.d[1], r.d[2], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, nranks,
                ++salt, "2x2 call after the trims");
    }
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_hier_2x2, 4, 2, 900, body_net_hier)

/* 2 x 2 is hierarchical over each node's GPUs (reduce-scatter and all-gather kernels
 * over the CUDA pool around the staged step): every datatype x operator there too, in
 * place on the legacy stream and out of place on the body's (so consecutive calls come
 * on two streams); then the flat staged path on the same shape (every rank stages all of
 * its data, hier through the host pool per chunk), and hierarchical with one lane and no
 * small-call kernel (every slice through the stream commands) */
NET_TEST(t_net_hier_types_2x2, 4, 2, 900, body_net_types)

/* hierarchical and flat calls mixed on the same lanes, the flat chunks by rd and ring
 * below SYMCOLL_HIER_MIN: ranks of different local indices make different numbers of
 * slice calls, and the flat calls' receive areas must still agree */
START_TEST(t_net_hier_mixed_2x2)
{
    setenv("SYMCOLL_HIER_MIN", "64K", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_types, NULL), 0);
}
END_TEST

START_TEST(t_net_hier_flat_2x2)
{
    setenv("SYMCOLL_HIER_MIN", "1G", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_hier, NULL), 0);
}
END_TEST

START_TEST(t_net_hier_plain_2x2)
{
    setenv("SYMCOLL_CUDA_NET_LANES", "1", 1);
    setenv("SYMCOLL_CUDA_NET_KERNEL_MAX", "0", 1);
    ck_assert_int_eq(harness_run(4, 2, 900, body_net_hier, NULL), 0);
}
END_TEST

/* The failure cases: two buffers, and one checked 16 MiB call so that everyone is
 * connected and warm before the failure. */
static void net_failure_setup(net_rank_t *r, int rank, int nranks, int salt, const char *what)
{
    net_setup(r, rank, 2, NET_BIG);
    net_run(r, r->d[0], r->d[0], r->d[1], NET_BIG / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank,
            nranks, salt, what);
}

/* Queue large calls until one fails, each followed by a bounded stream wait. Returns the
 * first non-OK status (SYMCOLL_OK if max_calls all succeeded); *ncalls: calls made. */
static symcoll_status_t net_until_failure(net_rank_t *r, size_t count, int max_calls,
                                          int *ncalls)
{
    symcoll_status_t st = SYMCOLL_OK;
    int it;

    for (it = 0; it < max_calls && st == SYMCOLL_OK; it++) {
        cudaError_t e;
        /* queued or not, the call and then the stream must come back */
        net_watch("symcoll_allreduce and cudaStreamSynchronize on a failing communicator",
                  NET_FAIL_TIMEOUT + 15);
        st = symcoll_allreduce(r->d[0], r->d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm,
                               r->s);
        e = cudaStreamSynchronize(r->s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("cudaStreamSynchronize after a call that returned %s: %s",
                         symcoll_status_string(st), cudaGetErrorString(e));
    }
    *ncalls = it;
    return st;
}

/* After a failure: the call that saw it said so or the next one does, with one of the
 * failure codes; the stream was never left waiting; later calls fail at once; the stream
 * takes work again and destroy returns. loop_status: what net_until_failure returned. */
static void net_after_failure(net_rank_t *r, symcoll_status_t loop_status, int rank, int ncalls,
                              double t0)
{
    symcoll_status_t st;
    double t;

    if (loop_status == SYMCOLL_OK)
        harness_fail("%d calls succeeded after the failure", ncalls);
    if (loop_status != SYMCOLL_ERR_PEER_FAILED && loop_status != SYMCOLL_ERR_ABORTED &&
        loop_status != SYMCOLL_ERR_TIMED_OUT)
        harness_fail("after the failure symcoll_allreduce returned %s",
                     symcoll_status_string(loop_status));
    fprintf(stderr, "rank %d: %s after %d calls, %.2f s\n", rank,
            symcoll_status_string(loop_status), ncalls, now_sec() - t0);
    net_watch("a call and the stream after the failure", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r->d[0], r->d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r->comm, r->s);
    if (st == SYMCOLL_OK)
        harness_fail("a call after %s returned OK", symcoll_status_string(loop_status));
    CK_CUDA(cudaMemsetAsync(r->d[0], 0, 64, r->s));
    CK_CUDA(cudaStreamSynchronize(r->s));
    net_watch("symcoll_comm_destroy after the failure", NET_FAIL_TIMEOUT + 15);
    t = now_sec();
    st = symcoll_comm_destroy(r->comm);
    alarm(0);
    fprintf(stderr, "rank %d: symcoll_comm_destroy: %s in %.2f s\n", rank,
            symcoll_status_string(st), now_sec() - t);
}

static void *net_killer(void *arg)
{
    (void)arg;
    usleep(50000);
    raise(SIGKILL);
    return NULL;
}

/* The last rank forks: its child is the rank and kills itself while 16 MiB calls are in
 * flight; the harness's process only checks that it died by SIGKILL. */
static void body_net_kill(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    if (rank == nranks - 1) {
        int ws;
        pid_t pid = fork();
        if (pid < 0)
            harness_fail("fork: %s", strerror(errno));
        if (pid > 0) {
            if (waitpid(pid, &ws, 0) != pid)
                harness_fail("waitpid: %s", strerror(errno));
            if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL)
                harness_fail("the victim did not die by SIGKILL (status 0x%x)", ws);
            return;
        }
    }
    net_failure_setup(&r, rank, nranks, 50000, "before the kill");
    if (rank == nranks - 1) {
        pthread_t th;
        pthread_create(&th, NULL, net_killer, NULL);
        for (;;) {
            symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                              r.s);
            cudaStreamSynchronize(r.s);
        }
    }
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_kill_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)
/* 2 x 2, hierarchical: rank 3 dies; rank 1 (its partner across nodes) fails at once and
 * tells rank 0's kernels through the node word; rank 2's kernels wait for rank 3 until
 * the timeout */
NET_TEST(t_net_hier_kill_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_kill)

typedef struct {
    symcoll_comm_h comm;
    symcoll_status_t st; /* what symcoll_comm_abort returned */
} net_abort_t;

static void *net_aborter(void *arg)
{
    net_abort_t *ab = arg;
    usleep(100000);
    ab->st = symcoll_comm_abort(ab->comm);
    return NULL;
}

/* The last rank aborts its communicator from another thread while 16 MiB calls are in
 * flight: it gets SYMCOLL_ERR_ABORTED, its peer one of the failure codes. */
static void body_net_abort(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    net_abort_t ab;
    pthread_t th;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 51000, "before the abort");
    ab = (net_abort_t){r.comm, SYMCOLL_ERR_INTERNAL};
    if (rank == nranks - 1)
        pthread_create(&th, NULL, net_aborter, &ab);
    t0 = now_sec();
    st = net_until_failure(&r, count, 100000, &ncalls);
    if (rank == nranks - 1) {
        pthread_join(th, NULL);
        if (ab.st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(ab.st));
        if (st != SYMCOLL_ERR_ABORTED)
            harness_fail("the aborted rank got %s, expected %s", symcoll_status_string(st),
                         symcoll_status_string(SYMCOLL_ERR_ABORTED));
    }
    net_after_failure(&r, st, rank, ncalls, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)
/* 2 x 2, hierarchical: rank 3 aborts; its node peer (rank 2) waits on its kernels and
 * hears through its lanes' partners and the node word */
NET_TEST(t_net_hier_abort_2x2, 4, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort)

/* The last rank aborts while its lanes are idle; the other's next call (8 chunks over
 * the lanes) must end soon after, not at its timeout: idle lanes tell their peers. */
static void body_net_abort_idle(int rank, int nranks, void *arg)
{
    net_rank_t r;
    symcoll_status_t st;
    double t0;

    net_set_timeout(NET_FAIL_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the abort");
    if (rank == nranks - 1) {
        st = symcoll_comm_abort(r.comm);
        if (st != SYMCOLL_OK)
            harness_fail("symcoll_comm_abort returned %s", symcoll_status_string(st));
        usleep(500000);
    } else {
        usleep(200000);
    }
    t0 = now_sec();
    net_watch("a call while a peer is aborted", NET_FAIL_TIMEOUT + 15);
    st = symcoll_allreduce(r.d[0], r.d[0], NET_BIG / 2 / 2, SYMCOLL_BFLOAT16, SYMCOLL_SUM,
                           r.comm, r.s);
    CK_CUDA(cudaStreamSynchronize(r.s));
    alarm(0);
    if (rank == nranks - 1 && st != SYMCOLL_ERR_ABORTED)
        harness_fail("the aborted rank got %s", symcoll_status_string(st));
    if (now_sec() - t0 > NET_FAIL_TIMEOUT / 2)
        harness_fail(
            "the call and its stream took %.1f s after the peer's abort (timeout %d s)",
            now_sec() - t0, NET_FAIL_TIMEOUT);
    net_after_failure(
        &r,
        rank == nranks - 1
            ? st
            : symcoll_allreduce(r.d[0], r.d[0], 8, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm, r.s),
        rank, 1, t0);
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_abort_idle_2x1, 2, 2, NET_FAIL_TIMEOUT * 4 + 60, body_net_abort_idle)

/* Rank 1 stays alive but makes no call: rank 0's call fails by its deadline and never
 * leaves the stream waiting; later, rank 1's own call fails or is refused in bounded
 * time. */
static void body_net_timeout(int rank, int nranks, void *arg)
{
    const size_t count = NET_BIG / 2;
    net_rank_t r;
    symcoll_status_t st;
    int ncalls;
    double t0;

    net_set_timeout(NET_SHORT_TIMEOUT);
    net_failure_setup(&r, rank, nranks, 52000, "before the timeout");
    if (rank == 0) {
        t0 = now_sec();
        st = net_until_failure(&r, count, 2, &ncalls);
        net_after_failure(&r, st, rank, ncalls, t0);
    } else {
        cudaError_t e;
        sleep(2 * NET_SHORT_TIMEOUT + 5);
        net_watch("the late rank's call and stream", NET_SHORT_TIMEOUT + 15);
        st = symcoll_allreduce(r.d[0], r.d[0], count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, r.comm,
                               r.s);
        e = cudaStreamSynchronize(r.s);
        alarm(0);
        if (e != cudaSuccess)
            harness_fail("the late rank's stream: %s", cudaGetErrorString(e));
        fprintf(stderr, "rank %d: late call: %s\n", rank, symcoll_status_string(st));
        net_watch("the late rank's symcoll_comm_destroy", NET_SHORT_TIMEOUT + 15);
        symcoll_comm_destroy(r.comm);
        alarm(0);
    }
    net_teardown(&r, 0);
    (void)arg;
}

NET_TEST(t_net_timeout_2x1, 2, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)
/* 2 x 2, hierarchical: only rank 0 calls; its kernels and lanes give up by the deadline */
NET_TEST(t_net_hier_timeout_2x2, 4, 2, NET_SHORT_TIMEOUT * 6 + 60, body_net_timeout)

/* Calls under stream capture (each capture mode; 4099 elements and 16 MiB; with an eager
 * call still in flight on the same stream) are refused with SYMCOLL_ERR_UNSUPPORTED and
 * change nothing: the capture ends with an empty graph, the output keeps its poison, the
 * eager call completes, and the next eager calls are right. Rank 0 makes two refused
 * calls per capture and the others one, so a refused call that took a sequence number
 * shows as a mismatch. */
static void body_net_capture(int rank, int nranks, void *arg)
{
    static const enum cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeThreadLocal,
                                                       cudaStreamCaptureModeRelaxed,
                                                       cudaStreamCaptureModeGlobal};
    static const char *const mode_names[] = {"thread-local", "relaxed", "global"};
    net_rank_t r;
    void *a, *b;
    unsigned char *poison;
    int salt = 53000;

    net_setup(&r, rank, 5, NET_BIG);
    a = r.d[3];
    b = r.d[4];
    poison = net_host(NET_BIG + NET_SLACK);
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        for (int big = 0; big < 2; big++) {
            size_t count = big ? NET_BIG / 4 + 3 : 4099, bytes = count * 4, nnodes = 0;
            net_bufs_t eager = {r.d[0], r.d[1], r.d[2]};
            int esalt = ++salt, csalt = ++salt;
            symcoll_status_t st1, st2 = SYMCOLL_ERR_UNSUPPORTED;
            cudaGraph_t g = NULL;
            cudaError_t e;

            /* (a copy from pageable memory may wait for the stream: fill before queueing
             * the eager call, so that it is still in flight when the capture begins) */
            fill(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, rank, csalt, r.host, r.s);
            net_enqueue(r.comm, &eager, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, esalt,
                        r.host, r.s);
            CK_CUDA(cudaStreamBeginCapture(r.s, modes[m]));
            st1 = symcoll_allreduce(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
            if (rank == 0)
                st2 = symcoll_allreduce(a, a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s);
            e = cudaStreamEndCapture(r.s, &g);
            if (st1 != SYMCOLL_ERR_UNSUPPORTED || st2 != SYMCOLL_ERR_UNSUPPORTED)
                harness_fail("%s capture, %zu elements: calls returned %s and %s, expected %s",
                             mode_names[m], count, symcoll_status_string(st1),
                             symcoll_status_string(st2),
                             symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
            if (e != cudaSuccess)
                harness_fail("%s capture, %zu elements, an eager call in flight: "
                             "cudaStreamEndCapture after the refused calls: %s",
                             mode_names[m], count, cudaGetErrorString(e));
            CK_CUDA(cudaGraphGetNodes(g, NULL, &nnodes));
            if (nnodes)
                harness_fail("%s capture: the refused calls left %zu nodes in the graph",
                             mode_names[m], nnodes);
            CK_CUDA(cudaGraphDestroy(g));
            net_check(&eager, count, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, esalt, r.host, r.s,
                      "eager call in flight during a capture");
            CK_CUDA(cudaMemcpyAsync(poison, b, bytes, cudaMemcpyDeviceToHost, r.s));
            CK_CUDA(cudaStreamSynchronize(r.s));
            for (size_t i = 0; i < bytes; i++)
                if (poison[i] != 0x7b)
                    harness_fail("%s capture: a refused call wrote its output (byte %zu)",
                                 mode_names[m], i);
            /* the input too is as it was: the eager calls after the capture use it */
            CK_SC(symcoll_allreduce(a, b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s));
            verify(b, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, csalt, r.host, r.s,
                   "first eager call after a capture");
            CK_SC(symcoll_allreduce(a, a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, r.comm, r.s));
            verify(a, count, SYMCOLL_FLOAT32, SYMCOLL_SUM, nranks, csalt, r.host, r.s,
                   "in-place eager call after a capture");
        }
    }
    free(poison);
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_capture_2x1, 2, 2, 600, body_net_capture)

static void host_fill(void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op, int rank,
                      int salt)
{
    for (size_t i = 0; i < count; i++)
        put(buf, t, i, (double)gen_val(t, op, rank, i, salt));
}

static void host_verify(const void *buf, size_t count, symcoll_dtype_t t, symcoll_op_t op,
                        int n, int salt, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        double want = ref_val(t, op, n, i, salt), got = get(buf, t, i);
        if (got != want)
            harness_fail("%s: %s %s count %zu: element %zu is %g, expected %g", what,
                         symcoll_dtype_name(t), symcoll_op_name(op), count, i, got, want);
    }
}

/* CUDA, host, CUDA, host calls with no wait in between: the host calls come while the
 * GPU calls are still queued (behind their stream delay). The second GPU call of each
 * round goes on the legacy default stream. */
static void body_net_mixed(int rank, int nranks, void *arg)
{
    const size_t hmax = ((size_t)1 << 20) + 5;
    net_rank_t r;
    double *hx, *hy;
    int32_t *hz;
    int salt = 54000;

    net_setup(&r, rank, 5, NET_BIG);
    hx = net_host(hmax * sizeof(double));
    hy = net_host(hmax * sizeof(double));
    hz = net_host(hmax * sizeof(int32_t));
    for (int round = 0; round < 8; round++) {
        size_t n1 = round % 2 ? NET_BIG / 2 + 3 : 4099;
        size_t n2 = round % 4 == 1 ? NET_BIG / 4 + 1 : 1000;
        size_t h1 = round % 2 ? 7 : hmax, h2 = round % 3 ? 4099 : 1;
        net_bufs_t g1 = {r.d[0], r.d[1], r.d[2]}, g2 = {r.d[3], r.d[3], r.d[4]};
        int s1 = ++salt, s2 = ++salt, s3 = ++salt, s4 = ++salt;

        net_enqueue(r.comm, &g1, n1, SYMCOLL_BFLOAT16, SYMCOLL_SUM, rank, s1, r.host, r.s);
        host_fill(hx, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, rank, s2);
        CK_SC(symcoll_allreduce(hx, hy, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, r.comm, NULL));
        host_verify(hy, h1, SYMCOLL_FLOAT64, SYMCOLL_SUM, nranks, s2,
                    "host call after a GPU call");
        net_enqueue(r.comm, &g2, n2, SYMCOLL_FLOAT32, SYMCOLL_MAX, rank, s3, r.host, NULL);
        host_fill(hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, rank, s4);
        CK_SC(symcoll_allreduce(hz, hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, r.comm, NULL));
        host_verify(hz, h2, SYMCOLL_INT32, SYMCOLL_MIN, nranks, s4,
                    "in-place host call after GPU calls");
        net_check(&g1, n1, SYMCOLL_BFLOAT16, SYMCOLL_SUM, nranks, s1, r.host, r.s,
                  "GPU call before a host call");
        net_check(&g2, n2, SYMCOLL_FLOAT32, SYMCOLL_MAX, nranks, s3, r.host, NULL,
                  "GPU call on the legacy stream between host calls");
    }
    free(hx);
    free(hy);
    free(hz);
    net_teardown(&r, 1);
    (void)arg;
}

NET_TEST(t_net_mixed_2x1, 2, 2, 600, body_net_mixed)

/* ---- without a GPU: CUDA memory requests are refused, host paths unaffected ------- */

static void body_nogpu(int rank, int nranks, void *arg)
{
    symcoll_comm_h comm = harness_comm_create();
    double x = 1.0 + rank, y = 0;
    void *p = NULL;
    symcoll_status_t s = symcoll_mem_alloc(comm, 1 << 20, SYMCOLL_MEM_CUDA, &p);

    if (s != SYMCOLL_ERR_UNSUPPORTED || p)
        harness_fail("symcoll_mem_alloc(CUDA) without a GPU returned %s, expected %s",
                     symcoll_status_string(s), symcoll_status_string(SYMCOLL_ERR_UNSUPPORTED));
    CK_SC(symcoll_allreduce(&x, &y, 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL));
    if (y != nranks * (nranks + 1) / 2.0)
        harness_fail("host all-reduce after a refused CUDA request: %g", y);
    CK_SC(symcoll_comm_destroy(comm));
    (void)arg;
}

static Suite *cuda_suite(void)
{
    /* one case per test, so that CK_RUN_CASE=graph (say) runs one of them; the
     * cross-node ones are also tagged "net" (CK_INCLUDE_TAGS=net, CK_EXCLUDE_TAGS=net) */
    const struct {
        const char *name;
        const TTest *test;
        int min_gpus;
        const char *tags;
    } cases[] = {
        {"types1", t_types_1rank, 1, NULL},
        {"bits", t_bits_2ranks, 1, NULL},
        {"graph", t_graph_2ranks, 1, NULL},
        {"types2", t_types_2ranks, 1, NULL},
        {"pool", t_pool_2ranks, 1, NULL},
        {"net_capture", t_net_capture_2x1, 1, "net"},
        {"net_mixed", t_net_mixed_2x1, 1, "net"},
        {"net_kill", t_net_kill_2x1, 1, "net"},
        {"net_abort", t_net_abort_2x1, 1, "net"},
        {"net_timeout", t_net_timeout_2x1, 1, "net"},
        {"net_abort_idle", t_net_abort_idle_2x1, 1, "net"},
        {"net_pool", t_net_pool_2x1, 1, "net"},
        {"net_types", t_net_types_2x1, 1, "net"},
        {"net_hier", t_net_hier_2x2, 1, "net"},
        {"net_hier_types", t_net_hier_types_2x2, 1, "net"},
        {"net_hier_flat", t_net_hier_flat_2x2, 1, "net"},
        {"net_hier_mixed", t_net_hier_mixed_2x2, 1, "net"},
        {"net_hier_plain", t_net_hier_plain_2x2, 1, "net"},
        {"net_hier_kill", t_net_hier_kill_2x2, 1, "net"},
        {"net_hier_abort", t_net_hier_abort_2x2, 1, "net"},
        {"net_hier_timeout", t_net_hier_timeout_2x2, 1, "net"},
        {"net_hier_pool", t_net_hier_pool_2x2, 1, "net"},
        {"net_types_plain", t_net_types_plain, 1, "net"},
        {"net_types_lanes3", t_net_types_lanes3, 1, "net"},
    };
    Suite *su = suite_create("cuda");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc;
        if (ngpus < cases[i].min_gpus)
            continue;
        tc = tcase_create(cases[i].name);
        if (cases[i].tags)
            tcase_set_tags(tc, cases[i].tags);
        tcase_set_timeout(tc, 1200);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(su, tc);
    }
    return su;
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

int main(void)
{
    /* the cross-node cases: UCX over TCP on loopback unless the caller says otherwise.
     * (Not UCX_WARN_UNUSED_ENV_VARS: libucs reads it when it loads, before main, and then
     * warns that the variable set here went unused.) */
    setenv("UCX_TLS", "tcp,self", 0);
    ngpus = count_gpus();
    if (ngpus < 1) {
        /* what must hold on a machine without a GPU or driver (one node and two simulated
         * ones), then skip the rest */
        if (harness_run(2, 1, 120, body_nogpu, NULL) ||
            harness_run(2, 2, 120, body_nogpu, NULL)) {
            printf("no CUDA device: CUDA requests were not refused cleanly\n");
            return 1;
        }
        printf("no CUDA device: CUDA memory refused with SYMCOLL_ERR_UNSUPPORTED, host "
               "all-reduce works; GPU tests skipped\n");
        return 77;
    }
    printf("%d CUDA device(s)\n", ngpus);
    return harness_main(cuda_suite());
}
