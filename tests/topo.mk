# tests of the topology layer: the selector on injected topologies (no processes), the
# probe on simulated nodes (harness), and symcoll_info -t / -a under symcoll_run
TESTS += tests/test_topo_info.sh
EXTRA_DIST += tests/test_topo_info.sh

if HAVE_CHECK
TOPO_TESTS = tests/test_topo_select tests/test_topo_select_coll tests/test_topo_facts tests/test_topo
check_PROGRAMS += $(TOPO_TESTS)
TESTS += $(TOPO_TESTS)

tests_test_topo_select_SOURCES = tests/test_topo_select.c
tests_test_topo_select_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_topo_select_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_topo_select_coll_SOURCES = tests/test_topo_select_coll.c
tests_test_topo_select_coll_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_topo_select_coll_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_topo_facts_SOURCES = tests/test_topo_facts.c
tests_test_topo_facts_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_topo_facts_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)

tests_test_topo_SOURCES = tests/test_topo.c
tests_test_topo_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_topo_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif

# test_tune: tuning files (parser) and symcoll_comm_set_algo on real ranks
if HAVE_CHECK
TUNE_TESTS = tests/test_tune
check_PROGRAMS += $(TUNE_TESTS)
TESTS += $(TUNE_TESTS)
tests_test_tune_SOURCES = tests/test_tune.c
tests_test_tune_CPPFLAGS = $(TEST_CPPFLAGS)
tests_test_tune_LDADD = $(HARNESS_LIBS) $(TEST_INTERNAL_LIBS)
endif
# symcoll_tune and SYMCOLL_TUNE_FILE under symcoll_run
TESTS += tests/test_tune.sh
EXTRA_DIST += tests/test_tune.sh
