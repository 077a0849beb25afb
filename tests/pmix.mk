# examples/hello_allreduce, a program without MPI, started the ways users start it:
# under Open MPI's mpirun (its PMIx server connects the ranks; skipped without PMIx or
# mpirun) and under symcoll_run.
PMIX_TESTS = tests/test_pmix.sh tests/test_hello_run.sh
TESTS += $(PMIX_TESTS)
EXTRA_DIST += $(PMIX_TESTS)
