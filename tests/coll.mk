# tests of the collectives besides all-reduce (reduce-scatter, all-gather, broadcast,
# barrier), on one node and on simulated nodes (UCX over TCP loopback)
if HAVE_CHECK
COLL_TESTS = tests/test_coll
check_PROGRAMS += $(COLL_TESTS)
TESTS += $(COLL_TESTS)

tests_test_coll_SOURCES = tests/test_coll.c tools/refcheck.c tools/refcheck.h
tests_test_coll_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_coll_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread
endif
