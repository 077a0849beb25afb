#!/bin/bash
# run 34: the kernels after the shared device code moved into kernel_common.cuh (allreduce.cu
# and net_direct.cu include it): every one-node case of test_cuda, and the direct path's
# reduction kernel over every type x operator
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run34.txt
t0=$SECONDS
echo "=== test_cuda (one node, every case) UCX_TLS=tcp,self ($(date -u +%T))" >> $L
env UCX_TLS=tcp,self timeout 400 .gpu/bin/test_cuda >> $L 2>&1
echo "=== rc=$? test_cuda $((SECONDS-t0)) s" >> $L
one() { # tls case [env...]
  local tls=$1 c=$2; shift 2
  local t0=$SECONDS
  echo "=== case $c UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=$c timeout 300 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
}
one cuda_ipc,cuda_copy,tcp,self net_direct_types
one tcp,cuda_copy,self net_direct_mixed
one tcp,self net_coll
grep "^=== rc" $L
