# tests of the pool layer and the intra-node host all-reduce
if HAVE_CHECK
POOL_TESTS = tests/test_allreduce_host
check_PROGRAMS += $(POOL_TESTS)
TESTS += $(POOL_TESTS)

tests_test_allreduce_host_SOURCES = tests/test_allreduce_host.c
tests_test_allreduce_host_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_allreduce_host_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm
endif
