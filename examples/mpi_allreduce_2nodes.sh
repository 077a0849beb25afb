#!/bin/sh
# make check: examples/mpi_allreduce under Open MPI's mpirun, 2 simulated nodes x 2 ranks
# (the hierarchical path: intra-node pool, inter-node UCX).
exec "$(dirname "$0")/run_mpi_allreduce.sh" 2 2
