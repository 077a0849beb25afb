#!/bin/bash
# run 35: the one-queue refusal after the review fixes (report order, warning text)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=15
L=$OUT/run35.txt
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 200 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
one tcp,cuda_copy,self net_direct_one_queue
one cuda_ipc,cuda_copy,tcp,self net_direct_one_queue
one tcp,cuda_copy,self net_direct_auto
one tcp,cuda_copy,self net_direct_mismatch
grep "^=== rc" $L
