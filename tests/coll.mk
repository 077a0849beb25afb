# tests of the collectives besides all-reduce (reduce-scatter, all-gather, broadcast,
# barrier), on one node and on simulated nodes (UCX over TCP loopback)
if HAVE_CHECK
COLL_TESTS = tests/test_coll tests/test_coll_bcast
check_PROGRAMS += $(COLL_TESTS)
TESTS += $(COLL_TESTS)
COLL_TESTLIB_SOURCES = tests/coll_testlib.c tests/coll_testlib.h tools/refcheck.c \
	tools/refcheck.h

# test_coll_bcast: broadcast's own protocol (stream, tail, mismatch, eager split)
tests_test_coll_SOURCES = tests/test_coll.c $(COLL_TESTLIB_SOURCES)
tests_test_coll_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_coll_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread

tests_test_coll_bcast_SOURCES = tests/test_coll_bcast.c $(COLL_TESTLIB_SOURCES)
tests_test_coll_bcast_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_coll_bcast_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread
endif

# test_split, test_shrink: communicators from communicators (split: grid, TP/DP, nested,
# faults; shrink: after a kill, a stop, an abort, a second failure)
if HAVE_CHECK
SPLIT_TESTS = tests/test_split tests/test_shrink
check_PROGRAMS += $(SPLIT_TESTS)
TESTS += $(SPLIT_TESTS)
tests_test_split_SOURCES = tests/test_split.c $(COLL_TESTLIB_SOURCES)
tests_test_split_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_split_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread
tests_test_shrink_SOURCES = tests/test_shrink.c tools/refcheck.c tools/refcheck.h
tests_test_shrink_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_shrink_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread
endif

# test_order: the canonical reduction order, the same bits on every size, algorithm,
# layout and buffer kind (inputs whose sum depends on the order)
if HAVE_CHECK
ORDER_TESTS = tests/test_order
check_PROGRAMS += $(ORDER_TESTS)
TESTS += $(ORDER_TESTS)
tests_test_order_SOURCES = tests/test_order.c tests/order_ref.h tools/refcheck.c \
	tools/refcheck.h
tests_test_order_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_order_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread
endif
