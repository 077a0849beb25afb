#!/bin/bash
# run 36: the lanes after dropping the shared-worker branches (failure notices, one lane)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=15
L=$OUT/run36.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 200 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
one tcp,self net_kill
one tcp,self net_abort
one tcp,self net_abort_idle SYMCOLL_CUDA_NET_LANES=1
one tcp,self net_hier_plain
one tcp,cuda_copy,self net_direct_kill SYMCOLL_CUDA_NET_LANES=1
one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1
grep "^=== rc" $L
