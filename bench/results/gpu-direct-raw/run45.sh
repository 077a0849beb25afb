#!/bin/bash
# run 45: ffdf289 (host puts count only lanes that reach host memory; the direct path's
# warning per endpoint from its CUDA RMA lanes), release UCX 1.22 (scripts/ucx-cuda-build.sh):
# the report of 2 simulated nodes per UCX_TLS, the direct cases over cuda_ipc, the kill
# cases repeated over both, and the staged cases over cuda_ipc (host memory now as AM)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run45.txt
IPC=cuda_ipc,cuda_copy,tcp,self TCP=tcp,cuda_copy,self
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK exec "$0" "$@"'
for tls in $IPC $TCP; do
  echo "=== info UCX_TLS=$tls" >> $L
  env UCX_TLS=$tls SYMCOLL_LOG_LEVEL=info SYMCOLL_CUDA_NET_PATH=direct timeout 60 \
    .gpu/bin/symcoll_run --sim-nodes 2 -n 2 sh -c "$W" .gpu/bin/symcoll_info -t 2>&1 |
    grep -E "transfers|direct path|WARN|ERROR|probe" >> $L
done
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
  [ $SECONDS -gt 500 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls ($(date -u +%T))" >> $L
  env UCX_TLS=$tls CK_RUN_CASE=$c timeout 90 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $((SECONDS-t0)) s" >> $L
}
for c in net_direct_types net_direct_chunks net_direct_pool net_direct_mixed net_direct_coll \
         net_direct_abort net_direct_timeout net_direct_mismatch net_direct_auto \
         net_direct_hier_types net_direct_hier_mixed net_direct_hier_abort net_direct_hier_timeout \
         net_types net_mixed net_kill net_hier_kill net_coll; do
  one $IPC $c
done
for i in 1 2 3 4 5 6; do
  one $IPC net_direct_kill; one $IPC net_direct_hier_kill
  one $TCP net_direct_kill; one $TCP net_direct_hier_kill
done
grep "^=== rc\|^=== not run" $L
echo "aborts by UCX: $(grep -c 'Fatal: unexpected error' $L)"
echo "probe warnings: $(grep -c 'direct path forced over UCX' $L)"
