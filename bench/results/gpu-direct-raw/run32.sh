#!/bin/bash
# run 32: one lane with a UCX worker of its own (experiment build) against the communicator's
# The experiment build patched cnet_lanes_start: with SYMCOLL_EXPERIMENT_OWN_LANE set, a
# single lane took ucx_lane_create and a fixed scratch, as several lanes do (the change
# that landed after run 33 makes that the only way).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=15
L=$OUT/run32.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 200 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
for i in 1 2 3 4; do one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1 SYMCOLL_EXPERIMENT_OWN_LANE=1; done
for i in 1 2; do one cuda_ipc,cuda_copy,tcp,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1 SYMCOLL_EXPERIMENT_OWN_LANE=1; done
for i in 1 2; do one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1; done
grep "^=== rc" $L
