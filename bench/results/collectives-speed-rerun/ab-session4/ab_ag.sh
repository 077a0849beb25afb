#!/bin/bash
# A/B: allgather intra, default vs AG_EARLY, Open MPI interleaved
cd /work/main/build
COLL=${COLL:-allgather}
ARGS="--coll $COLL -d float64 -o sum -b ${B:-128K} -e ${E:-2M} -f 4 -r 5 --csv"
for round in 1 2 3; do
  for v in omp def early; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,vader ./bench/mpi_allreduce_peer $ARGS 2>/dev/null | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5{print v, r, $1, $7}';;
      def) ./tools/symcoll_run -n 2 --bind-to core ./tools/symcoll_perf -m host $ARGS 2>/dev/null | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5{print v, r, $1, $7, $10}';;
      early) AG_EARLY=1 ./tools/symcoll_run -n 2 --bind-to core ./tools/symcoll_perf -m host $ARGS 2>/dev/null | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5{print v, r, $1, $7, $10}';;
    esac
  done
done
