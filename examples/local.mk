# examples: user programs built the way users build them, run by 'make check':
# mpi_allreduce (mpicc + the library, the caller's MPI allgather) under Open MPI's mpirun
# on simulated nodes, and hello_allreduce (no MPI: the launcher's PMIx server or
# symcoll_run connects the ranks) by tests/test_pmix.sh and tests/test_hello_run.sh.
noinst_PROGRAMS += examples/hello_allreduce
examples_hello_allreduce_SOURCES = examples/hello_allreduce.c
examples_hello_allreduce_LDADD = libsymcoll.la

EXTRA_DIST += examples/mpi_allreduce.c examples/run_mpi_allreduce.sh \
	examples/mpi_allreduce_2nodes.sh examples/mpi_allreduce_3nodes.sh

if HAVE_MPI
# Compiled by $(MPICC) (automake uses one C compiler for all programs, so a plain rule)
# and linked through libtool against the uninstalled library.
EXAMPLE_MPI_ALLREDUCE = examples/mpi_allreduce$(EXEEXT)

all-local: $(EXAMPLE_MPI_ALLREDUCE)

examples/mpi_allreduce.$(OBJEXT): $(srcdir)/examples/mpi_allreduce.c $(srcdir)/include/symcoll.h
	@$(MKDIR_P) examples
	$(AM_V_CC)$(MPICC) -I$(top_srcdir)/include $(AM_CFLAGS) $(CFLAGS) -c -o $@ \
	  $(srcdir)/examples/mpi_allreduce.c

$(EXAMPLE_MPI_ALLREDUCE): examples/mpi_allreduce.$(OBJEXT) libsymcoll.la
	$(AM_V_CCLD)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=link $(MPICC) $(AM_CFLAGS) $(CFLAGS) \
	  $(LDFLAGS) -no-install -o $@ examples/mpi_allreduce.$(OBJEXT) libsymcoll.la

CLEANFILES += examples/mpi_allreduce.$(OBJEXT) $(EXAMPLE_MPI_ALLREDUCE)
TESTS += examples/mpi_allreduce_2nodes.sh examples/mpi_allreduce_3nodes.sh
endif
