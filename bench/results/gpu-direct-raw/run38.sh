#!/bin/bash
# run 38: the lane flushes only its group's endpoints, the drain keeps idle lanes
# progressing until the hierarchical kernels are done: net_direct_hier_mixed repeated,
# then every direct case once
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run38.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 150 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
for r in 1 2 3 4 5 6 7 8 9 10; do one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1; done
for r in 1 2 3 4; do one cuda_ipc,cuda_copy,tcp,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1; done
for r in 1 2 3; do one tcp,cuda_copy,self net_direct_hier_mixed; done
for c in net_direct_types net_direct_chunks net_direct_pool net_direct_mixed net_direct_coll net_direct_kill net_direct_abort net_direct_timeout net_direct_mismatch net_direct_auto net_direct_one_queue net_direct_hier_types net_direct_hier_kill net_direct_hier_abort net_direct_hier_timeout; do
  [ $SECONDS -gt 500 ] && { echo "=== not run (time): $c" >> $L; continue; }
  one tcp,cuda_copy,self $c
done
grep "^=== rc\|^=== not run\|still busy\|waited" $L
