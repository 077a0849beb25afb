#!/bin/bash
cd /work/main/build
ARGS="-d float64 -o sum -b ${B:-512K} -e ${E:-2M} -f 4 -r 5 --csv $EXTRA"
sym="./tools/symcoll_run -n 2 ./tools/symcoll_perf -m host"
for round in $(seq 1 ${ROUNDS:-3}); do
  for v in ${VARIANTS:-omp base}; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,vader ./bench/mpi_allreduce_peer $ARGS 2>/dev/null;;
      base) $sym $ARGS 2>/dev/null;;
      c*) SYMCOLL_HOST_CHUNK_SIZE=${v#c} $sym $ARGS 2>/dev/null;;
    esac | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5 && $1+0>0{print v, r, $1, $7, $10}'
  done
done
