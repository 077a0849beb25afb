/* GPU tests of the CUDA path on one node: every datatype x operator on 1 and 2 ranks (one
 * GPU each when there are enough), in and out of place, plain and pool buffers, staging
 * growth, CUDA graph capture and replay, growth refused inside a capture, bf16 sums of
 * random data bit for bit, ranks that call with different arguments, and a rank killed
 * while the others wait in a kernel; reduce-scatter, all-gather, broadcast and the stream
 * barrier on 2 and 3 ranks, captured in a graph, and the barrier's ordering; the
 * collectives' own kernels (each forced, few blocks) against their composition from the
 * all-reduce, every datatype x operator, captured, and ranks that disagree; the parts of
 * a split running every collective and a graph at once, and the survivors of a killed
 * rank shrinking to a communicator whose all-reduces are exact. Exit 77
 * without GPUs (after the checks of the signature the kernels compare, which need none).
 * This file holds those checks, the suite and main; tests/cuda_case_*.c the cases, one
 * topic each. The cases across simulated nodes are tests/test_cuda_net.c. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda/sig.h"
#include "cuda_cases.h"
#include "cuda_testlib.h"
#include "harness.h"
#include "refcheck.h"
#include "symcoll.h"

/* ---- the signature the kernels compare (no GPU needed) ----------------------------- */

static int check_signatures(void)
{
    static const size_t counts[] = {
        1, 2, 1023, 1024, ((size_t)1 << 40) + 5, ((size_t)1 << 45) - 1};
    int bad = 0;
    char buf[160];

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int t = 0; t < SYMCOLL_DTYPE_LAST; t++) {
            for (int op = 0; op < SYMCOLL_OP_LAST; op++) {
                for (int algo = 0; algo < CUDA_AR_NALGOS; algo++) {
                    for (int ph = 0; ph < 3; ph++) {
                        uint64_t sig = cuda_ar_sig(counts[c], t, op, algo, ph), n;
                        int t2, op2, algo2, ph2;
                        cuda_ar_sig_unpack(sig, &n, &t2, &op2, &algo2, &ph2);
                        if (!sig || n != counts[c] || t2 != t || op2 != op || algo2 != algo ||
                            ph2 != ph) {
                            fprintf(stderr, "signature of %s does not unpack\n",
                                    cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                            bad = 1;
                        }
                        /* any one field changed changes the signature */
                        if (sig == cuda_ar_sig(counts[c] + 1, t, op, algo, ph) ||
                            sig == cuda_ar_sig(counts[c], (t + 1) % SYMCOLL_DTYPE_LAST, op,
                                               algo, ph) ||
                            sig == cuda_ar_sig(counts[c], t, (op + 1) % SYMCOLL_OP_LAST, algo,
                                               ph) ||
                            sig == cuda_ar_sig(counts[c], t, op, (algo + 1) % CUDA_AR_NALGOS,
                                               ph)) {
                            fprintf(stderr, "signature of %s does not tell a field apart\n",
                                    cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                            bad = 1;
                        }
                    }
                }
            }
        }
    }
    /* the collective an all-reduce serves and its root: packed whole, told apart */
    for (int coll = 0; coll <= CUDA_AR_COLL_BARRIER; coll++) {
        for (int root = 0; root < 16; root++) {
            uint64_t sig = cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT,
                                            0, coll, root),
                     n;
            int t2, op2, algo2, ph2, coll2, root2;
            cuda_ar_sig_unpack_coll(sig, &n, &t2, &op2, &algo2, &ph2, &coll2, &root2);
            if (n != 40009 || t2 != SYMCOLL_UINT8 || op2 != SYMCOLL_MAX ||
                algo2 != CUDA_AR_TWOSHOT || ph2 != 0 || coll2 != coll || root2 != root ||
                (coll == 0 && root == 0 &&
                 sig != cuda_ar_sig(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0)) ||
                sig == cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0,
                                        (coll + 1) % (CUDA_AR_COLL_BARRIER + 1), root) ||
                sig == cuda_ar_sig_coll(40009, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_TWOSHOT, 0,
                                        coll, (root + 1) % 16)) {
                fprintf(stderr, "signature of %s does not keep its collective\n",
                        cuda_ar_sig_describe(sig, buf, sizeof(buf)));
                bad = 1;
            }
        }
    }
    cuda_ar_sig_describe(cuda_ar_sig_coll(7, SYMCOLL_UINT8, SYMCOLL_MAX, CUDA_AR_ONESHOT, 0,
                                          CUDA_AR_COLL_BROADCAST, 3),
                         buf, sizeof(buf));
    if (strcmp(buf, "count 7, uint8, max, one-shot, for a broadcast from root 3")) {
        fprintf(stderr, "signature described as \"%s\"\n", buf);
        bad = 1;
    }
    cuda_ar_sig_describe(cuda_ar_sig(1024, SYMCOLL_BFLOAT16, SYMCOLL_MAX, CUDA_AR_LL, 0), buf,
                         sizeof(buf));
    if (strcmp(buf, "count 1024, bfloat16, max, LL")) {
        fprintf(stderr, "signature described as \"%s\"\n", buf);
        bad = 1;
    }
    return bad;
}

static Suite *cuda_suite(int ngpus)
{
    /* one case per test, so that CK_RUN_CASE=graph (say) runs one of them */
    Suite *su = suite_create("cuda");

    cuda_allreduce_cases(su, ngpus);
    cuda_faults_cases(su, ngpus);
    cuda_coll_cases(su, ngpus);
    cuda_split_cases(su, ngpus);
    cuda_order_cases(su, ngpus);
    cuda_capture_alloc_cases(su, ngpus);
    cuda_graph_life_cases(su, ngpus);
    return su;
}

int main(void)
{
    if (check_signatures())
        return 1;
    return gpu_tests_main(cuda_suite, 1);
}
