# tests: Check unit tests and multi-rank tests. Shared flags for every test program;
# each layer's tests live in their own fragment (tests/LAYER.mk).
# Internal tests link the convenience library (hidden symbols reachable);
# API tests link the installed-shape library libsymcoll.la.
TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/tests
TEST_INTERNAL_LIBS = libsymcoll_core.la $(CHECK_LIBS)
TEST_API_LIBS = libsymcoll.la $(CHECK_LIBS)

# What the shell tests need to find the build, the sources and the tools. Other
# fragments may append with +=. UCX reads UCX_WARN_UNUSED_ENV_VARS when libucs loads, so
# the tests' own setenv of it comes too late: without it here every test that sets UCX_
# variables logs a warning about unused ones.
AM_TESTS_ENVIRONMENT = \
	top_builddir='$(abs_top_builddir)'; top_srcdir='$(abs_top_srcdir)'; \
	MAKE='$(MAKE)'; CC='$(CC)'; CXX='$(CXX)'; NM='$(NM)'; PKG_CONFIG='$(PKG_CONFIG)'; \
	prefix='$(prefix)'; bindir='$(bindir)'; libdir='$(libdir)'; \
	includedir='$(includedir)'; SANITIZER_CFLAGS='$(SANITIZER_CFLAGS)'; \
	export top_builddir top_srcdir MAKE CC CXX NM PKG_CONFIG prefix bindir libdir includedir \
	  SANITIZER_CFLAGS; \
	UCX_WARN_UNUSED_ENV_VARS=n; export UCX_WARN_UNUSED_ENV_VARS;

# A sanitized build (--enable-sanitizers) runs every test under the sanitizers' options
# and leak suppressions of tests/sanitizers/.
if SANITIZERS
AM_TESTS_ENVIRONMENT += . '$(abs_top_srcdir)/tests/sanitizers/env.sh';
endif
EXTRA_DIST += tests/sanitizers/env.sh tests/sanitizers/lsan.supp

# Build-level tests (need no Check): exported symbols, configuration table vs. the
# variables the sources use, the launcher, the scale harness (bench/scale_setup,
# bench/scale.sh, bench/scale_model.py), and a program built against the installed
# package.
TOOLS_TESTS = \
	tests/test_exports.sh \
	tests/test_layers.sh \
	tests/test_config_vars.sh \
	tests/test_tools_run.sh \
	tests/test_tools_info.sh \
	tests/test_tools_perf.sh \
	tests/test_tools_compare.sh \
	tests/test_scale.sh \
	tests/test_install.sh
TESTS += $(TOOLS_TESTS)
EXTRA_DIST += $(TOOLS_TESTS) tests/testlib.sh tests/installed_hello.c scripts/layers.sh src/LAYERS

# `make check` refuses to pass if no test passed: a suite that ran nothing (every test
# skipped, TESTS emptied, a fragment dropped) proves nothing. Runs after the tests.
check-local: check-TESTS
	@log='$(TEST_SUITE_LOG)'; \
	if test ! -f "$$log"; then \
	  echo "make check: $$log is missing: no test ran" >&2; exit 1; \
	fi; \
	npass=`sed -n 's/^# PASS: *\([0-9][0-9]*\)$$/\1/p' "$$log"`; \
	ntotal=`sed -n 's/^# TOTAL: *\([0-9][0-9]*\)$$/\1/p' "$$log"`; \
	if test -z "$$npass" || test "$$npass" -eq 0; then \
	  echo "make check: no test passed ($${ntotal:-0} run, see $$log): refusing to pass" >&2; \
	  exit 1; \
	fi; \
	echo "make check: $$npass of $$ntotal tests passed"
