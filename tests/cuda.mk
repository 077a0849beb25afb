# tests of the cuda layer: GPU tests (exit 77, skipped, without a GPU). They link the
# static CUDA runtime like the library does, so they build and skip on machines
# without a driver.
if HAVE_CUDA
if HAVE_CHECK
CUDA_TESTS = tests/test_cuda
check_PROGRAMS += $(CUDA_TESTS)
TESTS += $(CUDA_TESTS)
tests_test_cuda_SOURCES = tests/test_cuda.c
tests_test_cuda_CPPFLAGS = $(TEST_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_test_cuda_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) $(CUDA_LIBS) -lm
endif
endif
EXTRA_DIST += scripts/gpu-check.sh scripts/ucx-cuda-build.sh

# the staging protocol of CUDA memory across nodes, simulated (no GPU needed: it runs
# everywhere; the GPU cases above run the real thing)
if HAVE_CHECK
CUDA_PLAN_TESTS = tests/test_cuda_net_plan
check_PROGRAMS += $(CUDA_PLAN_TESTS)
TESTS += $(CUDA_PLAN_TESTS)
tests_test_cuda_net_plan_SOURCES = tests/test_cuda_net_plan.c
tests_test_cuda_net_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_cuda_net_plan_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif
