# fortran: the module 'use symcoll' (libsymcoll_f: the module's code and its C helpers;
# a library of its own, so that libsymcoll does not depend on the Fortran runtime) and,
# when MPI's mpi_f08 works with the same compiler, 'use symcoll_mpi' (libsymcoll_mpi_f).
# The .mod files are installed in $(fmoddir) (configure --with-fmoddir; default
# $(includedir), which 'pkg-config --cflags symcoll-fortran' names).
EXTRA_DIST += fortran/symcoll.f90 fortran/symcoll_f.c fortran/symcoll_f.h \
	fortran/symcoll_mpi.f90 fortran/test_fortran.f90 fortran/test_fortran_mpi.f90 \
	fortran/test_fortran.sh fortran/test_constants.sh examples/allreduce.f90

if HAVE_FORTRAN
# modules are written to and looked up in fortran/ of the build tree; SANITIZER_CFLAGS
# (empty unless --enable-sanitizers): the Fortran libraries and programs link the
# sanitized libsymcoll, so they need the sanitizer runtime too (gfortran takes the flags)
AM_FCFLAGS = -Jfortran $(SANITIZER_CFLAGS)
lib_LTLIBRARIES += libsymcoll_f.la
libsymcoll_f_la_SOURCES = fortran/symcoll.f90 fortran/symcoll_f.c fortran/symcoll_f.h
libsymcoll_f_la_LIBADD = libsymcoll.la
libsymcoll_f_la_LDFLAGS = -version-info 0:0:0 -no-undefined -Wl,--no-undefined

# written by the compiler with the module's object
nodist_fmod_DATA = fortran/symcoll.mod
pkgconfig_DATA += fortran/symcoll-fortran.pc
fortran/symcoll.mod: fortran/symcoll.lo
	@:
CLEANFILES += fortran/*.mod

# the test of every call and type under symcoll_run, the example, and the constants
# compared with the header
check_PROGRAMS += fortran/test_fortran examples/allreduce_fortran
fortran_test_fortran_SOURCES = fortran/test_fortran.f90
fortran_test_fortran_LDADD = libsymcoll_f.la libsymcoll.la
fortran/test_fortran.$(OBJEXT): fortran/symcoll.mod
examples_allreduce_fortran_SOURCES = examples/allreduce.f90
examples_allreduce_fortran_LDADD = libsymcoll_f.la libsymcoll.la
examples/allreduce.$(OBJEXT): fortran/symcoll.mod
FORTRAN_TESTS = fortran/test_fortran.sh fortran/test_constants.sh
TESTS += $(FORTRAN_TESTS)
# `make install` (tests/test_install.sh, tests/test_cmake.sh) relinks the Fortran
# libraries in the build tree (libtool's relink for their installed run path): a Fortran
# program starting at that moment finds its library missing or truncated ("file too
# short"). So the Fortran test that runs programs runs after both (also when TESTS names
# it alone: automake has no portable way to depend only on the tests of this run). (The
# target is named through a variable: written out, automake would take this line for
# the whole rule and drop the one it generates to run the test.)
FORTRAN_TEST_LOG = fortran/test_fortran.sh.log
$(FORTRAN_TEST_LOG): tests/test_install.sh.log tests/test_cmake.sh.log
AM_TESTS_ENVIRONMENT += FC='$(FC)'; FCFLAGS='$(FCFLAGS) $(SANITIZER_CFLAGS)'; MPIRUN='$(MPIRUN)'; \
	export FC FCFLAGS MPIRUN;

if HAVE_FORTRAN_MPI
lib_LTLIBRARIES += libsymcoll_mpi_f.la
libsymcoll_mpi_f_la_SOURCES = fortran/symcoll_mpi.f90
libsymcoll_mpi_f_la_FCFLAGS = $(AM_FCFLAGS) $(MPI_FCFLAGS)
libsymcoll_mpi_f_la_LIBADD = libsymcoll_f.la libsymcoll.la $(MPI_FCLIBS)
libsymcoll_mpi_f_la_LDFLAGS = -version-info 0:0:0 -no-undefined -Wl,--no-undefined
# (through a variable: a literal target would replace automake's rule for the object)
FORTRAN_MPI_LO = fortran/libsymcoll_mpi_f_la-symcoll_mpi.lo
$(FORTRAN_MPI_LO): fortran/symcoll.mod
nodist_fmod_DATA += fortran/symcoll_mpi.mod
fortran/symcoll_mpi.mod: $(FORTRAN_MPI_LO)
	@:

check_PROGRAMS += fortran/test_fortran_mpi
fortran_test_fortran_mpi_SOURCES = fortran/test_fortran_mpi.f90
fortran_test_fortran_mpi_FCFLAGS = $(AM_FCFLAGS) $(MPI_FCFLAGS)
fortran_test_fortran_mpi_LDADD = libsymcoll_mpi_f.la libsymcoll_f.la libsymcoll.la \
	$(MPI_FCLIBS)
fortran/test_fortran_mpi-test_fortran_mpi.$(OBJEXT): fortran/symcoll_mpi.mod
endif
endif
