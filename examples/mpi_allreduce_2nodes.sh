#!/bin/sh
# make check: examples/mpi_allreduce under Open MPI's mpirun, 2 simulated nodes x 1 rank.
exec "$(dirname "$0")/run_mpi_allreduce.sh" 2 1
