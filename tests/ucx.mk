# tests of the ucx layer and of the inter-node all-reduce (simulated nodes over TCP
# loopback)
if HAVE_CHECK
UCX_TESTS = tests/test_ucx tests/test_ucx_channels tests/test_net
check_PROGRAMS += $(UCX_TESTS)
TESTS += $(UCX_TESTS)

tests_test_ucx_SOURCES = tests/test_ucx.c tests/ucx_testlib.h
tests_test_ucx_CPPFLAGS = $(TEST_CPPFLAGS) $(UCX_CFLAGS)
tests_test_ucx_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
tests_test_ucx_channels_SOURCES = tests/test_ucx_channels.c tests/ucx_testlib.h
tests_test_ucx_channels_CPPFLAGS = $(TEST_CPPFLAGS) $(UCX_CFLAGS)
tests_test_ucx_channels_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_net_SOURCES = tests/test_net.c tools/refcheck.c tools/refcheck.h
tests_test_net_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tests_test_net_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lm -lpthread

# the fault suites: kills, stops and aborts in the middle of calls and of a creation, on one node and across
# simulated nodes; descriptors, memory and trim over many cycles
FAULT_TESTS = tests/test_fault tests/test_fault_create
check_PROGRAMS += $(FAULT_TESTS)
TESTS += $(FAULT_TESTS)
tests_test_fault_SOURCES = tests/test_fault.c
tests_test_fault_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_fault_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lpthread
# a rank killed inside symcoll_comm_create, at delays spread over a creation
tests_test_fault_create_SOURCES = tests/test_fault_create.c
tests_test_fault_create_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_fault_create_LDADD = $(HARNESS_LIBS) $(TEST_API_LIBS) -lpthread
endif

# ranks in two network namespaces joined by a veth pair, so the traffic crosses an
# interface (needs root and iproute2; skipped with 77 otherwise)
TESTS += tests/test_netns.sh
EXTRA_DIST += tests/test_netns.sh
