#!/bin/bash
# inter all-reduce 1M-4M: ring (default), rd forced, chunk variants; Open MPI each round
cd /work/main/build
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
ARGS="-d float64 -o sum -b ${B:-1M} -e ${E:-4M} -f 2 -r 5 --csv $EXTRA"
sym="./tools/symcoll_run -n 2 --sim-nodes 2 ./tools/symcoll_perf -m host"
for round in $(seq 1 ${ROUNDS:-3}); do
  for v in ${VARIANTS:-omp ring rd}; do
    case $v in
      omp) mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo ./bench/mpi_allreduce_peer $ARGS 2>/dev/null;;
      ring) $sym $ARGS 2>/dev/null;;
      rd) SYMCOLL_NET_RD_MAX=512K $sym $ARGS 2>/dev/null;;
      c256) SYMCOLL_NET_CHUNK_SIZE=256K $sym $ARGS 2>/dev/null;;
      c512) SYMCOLL_NET_CHUNK_SIZE=512K $sym $ARGS 2>/dev/null;;
      c2m) SYMCOLL_NET_CHUNK_SIZE=2M $sym $ARGS 2>/dev/null;;
      seg1m) SYMCOLL_NET_TCP_SEG_SIZE=1M $sym $ARGS 2>/dev/null;;
      buf1m) UCX_TCP_SNDBUF=1M UCX_TCP_RCVBUF=1M $sym $ARGS 2>/dev/null;;
      buf16m) UCX_TCP_SNDBUF=16M UCX_TCP_RCVBUF=16M $sym $ARGS 2>/dev/null;;
      buf4m) UCX_TCP_SNDBUF=4M UCX_TCP_RCVBUF=4M $sym $ARGS 2>/dev/null;;
      seg64k) SYMCOLL_NET_TCP_SEG_SIZE=64K $sym $ARGS 2>/dev/null;;
    esac | grep -v '^#' | awk -F, -v v=$v -v r=$round 'NF>5 && $1+0>0{print v, r, $1, $7, $10}'
  done
done
