#!/bin/sh
# Runs "$@" bound to one core chosen by the rank (SYMCOLL_RANK, else Open MPI's local
# rank) modulo the cores available: the binding mpirun applies by default for small
# jobs, so that symcoll and Open MPI are compared with the same placement.
set -u
rank=${SYMCOLL_RANK:-${OMPI_COMM_WORLD_LOCAL_RANK:-0}}
# every online CPU: nproc counts only those of the current binding (one, under a
# launcher that has bound the rank already)
ncpu=$(getconf _NPROCESSORS_ONLN)
exec taskset -c $((rank % ncpu)) "$@"
