# tests of the bootstrap layer, and the multi-rank harness every layer's tests use:
# link $(HARNESS_LIBS) and include "harness.h" (tests/ is on TEST_CPPFLAGS).
HARNESS_LIBS = tests/libsymcoll_harness.la

if HAVE_CHECK
check_LTLIBRARIES = tests/libsymcoll_harness.la
tests_libsymcoll_harness_la_SOURCES = tests/harness.c tests/harness.h
tests_libsymcoll_harness_la_CPPFLAGS = $(TEST_CPPFLAGS)

BOOTSTRAP_TESTS = tests/test_bootstrap tests/test_bootstrap_wire tests/test_config
check_PROGRAMS += $(BOOTSTRAP_TESTS)
TESTS += $(BOOTSTRAP_TESTS)

tests_test_bootstrap_SOURCES = tests/test_bootstrap.c
tests_test_bootstrap_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_bootstrap_wire_SOURCES = tests/test_bootstrap_wire.c
tests_test_bootstrap_wire_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_bootstrap_wire_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_config_SOURCES = tests/test_config.c
tests_test_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_config_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif
