#!/bin/bash
# run 28: the one-queue refusal of the forced direct path, regressions of the probe
# change, and the trim stall with one lane
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=15
L=$OUT/run28.txt
nvidia-smi -L >> $L 2>&1
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 200 .gpu/bin/test_cuda_net >> $L 2>&1
  echo "=== rc=$? case $c $((SECONDS-t0)) s" >> $L
}
one tcp,cuda_copy,self net_direct_one_queue
one cuda_ipc,cuda_copy,tcp,self net_direct_one_queue
one tcp,cuda_copy,self net_direct_auto
one tcp,cuda_copy,self net_direct_mixed
for i in 1 2 3; do one tcp,cuda_copy,self net_direct_hier_mixed SYMCOLL_CUDA_NET_LANES=1; done
grep "^=== rc" $L
