#!/bin/bash
# inter broadcast A/B: old lib, new lib, new + BC_PIECE=4, Open MPI; 3 rounds
cd /work/main/build
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
COLL=${COLL:-broadcast}
ARGS="--coll $COLL -d float64 -o sum -b ${B:-128K} -e ${E:-2M} -f 4 -r 5 --csv"
sym="./tools/symcoll_run -n 2 --bind-to core --sim-nodes 2 ./tools/.libs/symcoll_perf -m host $EXTRA"
for round in $(seq 1 ${ROUNDS:-3}); do
  for v in omp old new; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo ./bench/mpi_allreduce_peer $ARGS 2>/dev/null;;
      old) LD_LIBRARY_PATH=/tmp/vold $sym $ARGS 2>/dev/null;;
      new) LD_LIBRARY_PATH=/tmp/vnew $sym $ARGS 2>/dev/null;;
      piece) BC_PIECE=${PIECE:-4} LD_LIBRARY_PATH=/tmp/vnew $sym $ARGS 2>/dev/null;;
    esac | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5 && $1+0>0{print v, r, $1, $7, $10}'
  done
done
