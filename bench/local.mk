# bench: the MPI peer driver (same engine and output as symcoll_perf) and the scripts
# that compare symcoll with Open MPI and record the tables in bench/results/.
EXTRA_DIST += bench/mpi_allreduce_peer.c bench/compare_host.sh bench/bind_rank.sh \
	bench/results/README.md

if HAVE_MPI
# Compiled and linked by $(MPICC): automake picks one compiler for every C program, so
# this program has a plain rule, hooked into 'all'.
BENCH_MPI_PEER = bench/mpi_allreduce_peer$(EXEEXT)
BENCH_MPI_PEER_SRC = $(srcdir)/bench/mpi_allreduce_peer.c $(srcdir)/tools/perf_engine.c \
	$(srcdir)/tools/refcheck.c

all-local: $(BENCH_MPI_PEER)

$(BENCH_MPI_PEER): $(BENCH_MPI_PEER_SRC) $(srcdir)/tools/perf_engine.h \
		$(srcdir)/tools/refcheck.h
	@$(MKDIR_P) bench
	$(AM_V_CCLD)$(MPICC) -I$(top_srcdir)/include -I$(top_srcdir)/tools $(AM_CFLAGS) \
	  $(CFLAGS) $(LDFLAGS) -o $@ $(BENCH_MPI_PEER_SRC)

CLEANFILES += $(BENCH_MPI_PEER)
endif
