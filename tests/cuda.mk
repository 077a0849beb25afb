# tests of the cuda layer: GPU tests (exit 77, skipped, without a GPU). They link the
# static CUDA runtime like the library does, so they build and skip on machines
# without a driver. test_cuda: one node; test_cuda_net: across simulated nodes (UCX over
# TCP). Both fill and check with the inputs and reference of tools/refcheck.c. Each is one
# program (scripts/gpu-check.sh runs their cases by name) built from one file per topic.
if HAVE_CUDA
if HAVE_CHECK
CUDA_TESTS = tests/test_cuda tests/test_cuda_net
check_PROGRAMS += $(CUDA_TESTS)
TESTS += $(CUDA_TESTS)
CUDA_TESTLIB_SOURCES = tests/cuda_testlib.c tests/cuda_testlib.h tools/refcheck.c \
	tools/refcheck.h
CUDA_TEST_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools $(CUDA_CPPFLAGS)
CUDA_TEST_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) $(CUDA_LIBS) -lm
tests_test_cuda_SOURCES = tests/test_cuda.c tests/cuda_cases.h tests/cuda_case_allreduce.c \
	tests/cuda_case_faults.c tests/cuda_case_coll.c tests/cuda_case_split.c \
	tests/cuda_case_order.c tests/cuda_case_capture_alloc.c tests/cuda_case_graph_life.c \
	tests/order_ref.h \
	$(CUDA_TESTLIB_SOURCES)
tests_test_cuda_CPPFLAGS = $(CUDA_TEST_CPPFLAGS)
tests_test_cuda_LDADD = $(CUDA_TEST_LDADD)
tests_test_cuda_net_SOURCES = tests/test_cuda_net.c tests/cuda_net_cases.h \
	tests/cuda_net_case_staged.c tests/cuda_net_case_faults.c tests/cuda_net_case_direct.c \
	tests/cuda_net_testlib.c tests/cuda_net_testlib.h tests/cuda_case_order.c \
	tests/order_ref.h $(CUDA_TESTLIB_SOURCES)
tests_test_cuda_net_CPPFLAGS = $(CUDA_TEST_CPPFLAGS)
tests_test_cuda_net_LDADD = $(CUDA_TEST_LDADD)
endif
endif
EXTRA_DIST += scripts/gpu-check.sh scripts/ucx-cuda-build.sh

# the staging protocol of CUDA memory across nodes, simulated (no GPU needed: it runs
# everywhere; the GPU cases above run the real thing)
if HAVE_CHECK
CUDA_SCHED_TESTS = tests/test_cuda_net_sched
check_PROGRAMS += $(CUDA_SCHED_TESTS)
TESTS += $(CUDA_SCHED_TESTS)
tests_test_cuda_net_sched_SOURCES = tests/test_cuda_net_sched.c
tests_test_cuda_net_sched_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_cuda_net_sched_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif
