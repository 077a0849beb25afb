#!/bin/bash
# run 39: net_direct_coll with the sweep's host buffer pinned (it was pageable: a
# cudaMemcpyAsync from it waits in the driver for the stream, run 38 hung over TCP),
# and the hierarchical direct failure cases not reached in run 38
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run39.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  [ $SECONDS -gt 300 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 100 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
one tcp,cuda_copy,self net_direct_coll
one cuda_ipc,cuda_copy,tcp,self net_direct_coll
one tcp,cuda_copy,self net_direct_hier_kill
one tcp,cuda_copy,self net_direct_hier_abort
one tcp,cuda_copy,self net_direct_hier_timeout
grep "^=== rc\|^=== not run\|still busy\|waited" $L
