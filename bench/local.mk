# bench: the MPI peer driver (same engine and output as symcoll_perf) and the scripts
# that compare symcoll with Open MPI; their current figures are in docs/performance.md.
EXTRA_DIST += bench/mpi_allreduce_peer.c bench/compare_host.sh bench/coll_speed.sh \
	bench/host_speed.sh bench/ucx_versions.sh bench/scale.sh bench/scale_model.py

# scale_setup: what a communicator's set-up costs each rank (bench/scale.sh sweeps it,
# bench/scale_model.py extrapolates). Not installed: it reads the bootstrap's and UCX's
# counters through the internal headers, so it links the convenience library as the
# unit tests do.
noinst_PROGRAMS += bench/scale_setup
bench_scale_setup_SOURCES = bench/scale_setup.c
bench_scale_setup_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS)
bench_scale_setup_LDADD = libsymcoll_core.la -lm

if HAVE_MPI
# Compiled and linked by $(MPICC): automake picks one compiler for every C program, so
# this program has a plain rule, hooked into 'all'.
BENCH_MPI_PEER = bench/mpi_allreduce_peer$(EXEEXT)
BENCH_MPI_PEER_SRC = $(srcdir)/bench/mpi_allreduce_peer.c $(srcdir)/tools/perf_engine.c \
	$(srcdir)/tools/perf_args.c $(srcdir)/tools/perf_check.c $(srcdir)/tools/perf_output.c \
	$(srcdir)/tools/refcheck.c

all-local: $(BENCH_MPI_PEER)

$(BENCH_MPI_PEER): $(BENCH_MPI_PEER_SRC) $(srcdir)/tools/perf_engine.h \
		$(srcdir)/tools/perf_int.h $(srcdir)/tools/refcheck.h
	@$(MKDIR_P) bench
	$(AM_V_CCLD)$(MPICC) -I$(top_srcdir)/include -I$(top_srcdir)/tools $(AM_CFLAGS) \
	  $(CFLAGS) $(LDFLAGS) -o $@ $(BENCH_MPI_PEER_SRC)

CLEANFILES += $(BENCH_MPI_PEER)

# installed for symcoll_compare, which looks for it in $(pkglibexecdir)
install-exec-local: install-bench-mpi-peer
install-bench-mpi-peer: $(BENCH_MPI_PEER)
	$(MKDIR_P) '$(DESTDIR)$(pkglibexecdir)'
	$(INSTALL_PROGRAM) $(BENCH_MPI_PEER) '$(DESTDIR)$(pkglibexecdir)/'
uninstall-local: uninstall-bench-mpi-peer
uninstall-bench-mpi-peer:
	rm -f '$(DESTDIR)$(pkglibexecdir)/mpi_allreduce_peer$(EXEEXT)'
.PHONY: install-bench-mpi-peer uninstall-bench-mpi-peer
endif
