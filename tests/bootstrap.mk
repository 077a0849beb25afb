# tests of the bootstrap layer, and the multi-rank harness every layer's tests use:
# link $(HARNESS_LIBS) and include "harness.h" (tests/ is on TEST_CPPFLAGS).
HARNESS_LIBS = tests/libsymcoll_harness.la

if HAVE_CHECK
check_LTLIBRARIES = tests/libsymcoll_harness.la
tests_libsymcoll_harness_la_SOURCES = tests/harness.c tests/harness.h
tests_libsymcoll_harness_la_CPPFLAGS = $(TEST_CPPFLAGS)

BOOTSTRAP_TESTS = tests/test_bootstrap tests/test_bootstrap_malformed tests/test_bootstrap_local \
	tests/test_bootstrap_wire tests/test_config
check_PROGRAMS += $(BOOTSTRAP_TESTS)
TESTS += $(BOOTSTRAP_TESTS)

# test_bootstrap: allgather and barrier, deadlines, the harness's reports;
# _malformed: hostile peers; _local: the node-local descriptor channel
BOOTSTRAP_TESTLIB_SOURCES = tests/bootstrap_testlib.c tests/bootstrap_testlib.h
tests_test_bootstrap_SOURCES = tests/test_bootstrap.c $(BOOTSTRAP_TESTLIB_SOURCES)
tests_test_bootstrap_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_bootstrap_malformed_SOURCES = tests/test_bootstrap_malformed.c \
	$(BOOTSTRAP_TESTLIB_SOURCES)
tests_test_bootstrap_malformed_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_malformed_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_bootstrap_local_SOURCES = tests/test_bootstrap_local.c $(BOOTSTRAP_TESTLIB_SOURCES)
tests_test_bootstrap_local_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_local_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_bootstrap_wire_SOURCES = tests/test_bootstrap_wire.c
tests_test_bootstrap_wire_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_wire_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_config_SOURCES = tests/test_config.c
tests_test_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_config_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif
