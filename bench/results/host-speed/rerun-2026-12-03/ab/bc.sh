#!/bin/bash
cd /work/main/build
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
ARGS="--coll broadcast -d float64 -o sum -b ${B:-8} -e ${E:-2K} -f 16 -r 3 -n 20000 --csv"
sym="./tools/symcoll_run -n 2 --sim-nodes 2 ./tools/.libs/symcoll_perf -m host"
export LD_LIBRARY_PATH=/tmp/vold
for round in $(seq 1 ${ROUNDS:-3}); do
  for v in ${VARIANTS:-omp base}; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo ./bench/mpi_allreduce_peer $ARGS 2>/dev/null;;
      base) $sym $ARGS 2>/dev/null;;
      poll1) UCX_TCP_MAX_POLL=1 $sym $ARGS 2>/dev/null;;
      pollinf) UCX_TCP_MAX_POLL=-1 $sym $ARGS 2>/dev/null;;
      noka) UCX_KEEPALIVE_INTERVAL=inf $sym $ARGS 2>/dev/null;;
      seg8k) SYMCOLL_NET_TCP_SEG_SIZE=0 $sym $ARGS 2>/dev/null;;
      sndbuf) UCX_TCP_SNDBUF=256K UCX_TCP_RCVBUF=256K $sym $ARGS 2>/dev/null;;
    esac | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5 && $1+0>0{print v, r, $1, $7, $10}'
  done
done
