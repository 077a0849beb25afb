#!/bin/bash
cd /work/main/build
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
ARGS="-d float64 -o sum -b ${B:-1M} -e ${E:-4M} -f 2 -r 5 --csv $EXTRA"
sym="./tools/symcoll_run -n 2 --sim-nodes 2 ./tools/.libs/symcoll_perf -m host"
for round in $(seq 1 ${ROUNDS:-3}); do
  for v in ${VARIANTS:-omp bc zc}; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo ./bench/mpi_allreduce_peer $ARGS 2>/dev/null;;
      ring) ./tools/symcoll_run -n 2 --sim-nodes 2 ./tools/symcoll_perf -m host $ARGS 2>/dev/null;;
      old) LD_LIBRARY_PATH=/tmp/vold $sym $ARGS 2>/dev/null;;
      bc) LD_LIBRARY_PATH=/tmp/vnew $sym $ARGS 2>/dev/null;;
      zc) ZC=1 LD_LIBRARY_PATH=/tmp/vnew $sym $ARGS 2>/dev/null;;
      zcth) ZC=1 UCX_ZCOPY_THRESH=0 LD_LIBRARY_PATH=/tmp/vnew $sym $ARGS 2>/dev/null;;
    esac | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5 && $1+0>0{print v, r, $1, $7, $10}'
  done
done
