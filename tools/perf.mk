# symcoll_perf: all-reduce benchmark in the style of nccl-tests. Its engine
# (tools/perf_engine.c) is shared with the MPI peer driver in bench/, so both time,
# check and print the same way.
bin_PROGRAMS += tools/symcoll_perf

tools_symcoll_perf_SOURCES = tools/symcoll_perf.c tools/perf_engine.c tools/perf_engine.h
tools_symcoll_perf_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tools_symcoll_perf_LDADD = libsymcoll.la $(CUDA_LIBS)
