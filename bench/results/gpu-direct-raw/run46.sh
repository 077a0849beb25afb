#!/bin/bash
# run 46: the tree after the review of ffdf289 (GPU transports of other vendors left out
# of host RMA too; comments), release UCX 1.22: net_direct_one_queue, which run 45 left
# out, and the direct kill cases again, over both UCX_TLS
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run46.txt
IPC=cuda_ipc,cuda_copy,tcp,self TCP=tcp,cuda_copy,self
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
  [ $SECONDS -gt 400 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls ($(date -u +%T))" >> $L
  env UCX_TLS=$tls CK_RUN_CASE=$c timeout 90 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $((SECONDS-t0)) s" >> $L
}
one $IPC net_direct_one_queue
one $TCP net_direct_one_queue
one $IPC net_direct_types
for i in 1 2 3 4 5 6 7 8; do
  one $IPC net_direct_kill; one $IPC net_direct_hier_kill
  one $TCP net_direct_kill; one $TCP net_direct_hier_kill
done
grep "^=== rc\|^=== not run" $L
echo "aborts by UCX: $(grep -c 'Fatal: unexpected error' $L)"
echo "probe warnings: $(grep -c 'direct path forced over UCX' $L)"
