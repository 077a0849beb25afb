# tests: Check unit tests and multi-rank tests. Shared flags for every test program;
# each layer's tests live in their own fragment (tests/LAYER.mk).
# Internal tests link the convenience library (hidden symbols reachable);
# API tests link the installed-shape library libsymcoll.la.
TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/tests
TEST_INTERNAL_LIBS = libsymcoll_core.la $(CHECK_LIBS)
TEST_API_LIBS = libsymcoll.la $(CHECK_LIBS)
