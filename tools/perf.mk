# symcoll_perf: all-reduce benchmark in the style of nccl-tests. Its engine
# (tools/perf_engine.h: perf_engine.c, the timing loop; perf_args.c, options;
# perf_check.c, inputs and checks; perf_output.c, output; perf_int.h, what they share) is
# shared with the MPI and NCCL peer drivers in bench/, which list the same files, so they
# time, check and print the same way; the inputs and their reference (tools/refcheck.c)
# are the tests' too.
bin_PROGRAMS += tools/symcoll_perf

tools_symcoll_perf_SOURCES = tools/symcoll_perf.c tools/perf_engine.c tools/perf_engine.h \
	tools/perf_args.c tools/perf_check.c tools/perf_output.c tools/perf_int.h \
	tools/refcheck.c tools/refcheck.h tools/local_rank.c tools/local_rank.h
tools_symcoll_perf_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tools_symcoll_perf_LDADD = libsymcoll.la $(CUDA_LIBS)

if HAVE_CHECK
# the checker must catch what it is there to catch (stale, unreduced, one element off)
check_PROGRAMS += tools/test_perf_engine
TESTS += tools/test_perf_engine
tools_test_perf_engine_SOURCES = tools/test_perf_engine.c tools/perf_engine.c \
	tools/perf_args.c tools/perf_check.c tools/perf_output.c tools/refcheck.c
tools_test_perf_engine_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tools
tools_test_perf_engine_LDADD = $(CHECK_LIBS)
endif
