#!/bin/bash
# run 40: the final tree after the review fixes (flush_peers on the stack, report lines)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run40.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  [ $SECONDS -gt 100 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 60 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1
one cuda_ipc,cuda_copy,tcp,self net_direct_hier_mixed
one tcp,cuda_copy,self net_direct_one_queue
one tcp,cuda_copy,self net_direct_coll
grep "^=== rc\|^=== not run\|waited" $L
