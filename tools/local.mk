# tools: symcoll_run (local launcher: N ranks, simulated nodes; needs no library) and
# symcoll_info (version, build configuration, configuration table)
bin_PROGRAMS += tools/symcoll_run tools/symcoll_info

tools_symcoll_run_SOURCES = tools/symcoll_run.c tools/run.h tools/run_args.c tools/run_bind.c \
	tools/run_output.c tools/run_spawn.c
tools_symcoll_run_LDADD = -lm

tools_symcoll_info_SOURCES = tools/symcoll_info.c tools/info.h tools/info_json.c \
	tools/info_runtime.c
# -v asks the UCX that the library loads for its version and memory types
tools_symcoll_info_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS)
tools_symcoll_info_LDADD = libsymcoll.la $(UCX_LIBS)

# symcoll_compare: symcoll_perf against the peers' drivers, with plots (Python 3;
# matplotlib for the plots)
bin_SCRIPTS += tools/symcoll_compare
EXTRA_DIST += tools/symcoll_compare

# symcoll_tune: measures the algorithms on this machine and layout, writes a tuning file
# (SYMCOLL_TUNE_FILE)
bin_PROGRAMS += tools/symcoll_tune
tools_symcoll_tune_SOURCES = tools/symcoll_tune.c tools/tune_report.c tools/tune_report.h \
	tools/tune_buf.c tools/tune_buf.h tools/local_rank.c tools/local_rank.h
tools_symcoll_tune_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tools_symcoll_tune_LDADD = libsymcoll.la $(CUDA_LIBS) -lm
