# tests of the pool layer and the intra-node host all-reduce
if HAVE_CHECK
POOL_TESTS = tests/test_allreduce_host_reduce tests/test_allreduce_host tests/test_pool \
	tests/test_pool_reserve
check_PROGRAMS += $(POOL_TESTS)
TESTS += $(POOL_TESTS)

tests_test_allreduce_host_SOURCES = tests/test_allreduce_host.c tests/pool_tests.h \
	tools/refcheck.c tools/refcheck.h
tests_test_allreduce_host_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_allreduce_host_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm

tests_test_pool_SOURCES = tests/test_pool.c tests/pool_tests.h
tests_test_pool_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_pool_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lpthread

tests_test_pool_reserve_SOURCES = tests/test_pool_reserve.c tests/pool_tests.h
tests_test_pool_reserve_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_pool_reserve_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS)

# internals: links the convenience library (and the harness, for its main)
tests_test_allreduce_host_reduce_SOURCES = tests/test_allreduce_host_reduce.c
tests_test_allreduce_host_reduce_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_allreduce_host_reduce_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS) -lm
endif
