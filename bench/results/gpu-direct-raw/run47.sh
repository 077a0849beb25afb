#!/bin/bash
# run 47: the lane parsing as one function (ucx_lane_parse, unit-tested in test_ucx),
# release UCX 1.22: the report of 2 simulated nodes per UCX_TLS, a direct and a staged
# case over cuda_ipc, the direct kill cases 4 times each over both UCX_TLS
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run47.txt
IPC=cuda_ipc,cuda_copy,tcp,self TCP=tcp,cuda_copy,self
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
  [ $SECONDS -gt 400 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls ($(date -u +%T))" >> $L
  env UCX_TLS=$tls CK_RUN_CASE=$c timeout 90 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $((SECONDS-t0)) s" >> $L
}
W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK exec "$0" "$@"'
for tls in $IPC $TCP; do
  echo "=== info UCX_TLS=$tls" >> $L
  env UCX_TLS=$tls SYMCOLL_LOG_LEVEL=info SYMCOLL_CUDA_NET_PATH=direct timeout 60 \
    .gpu/bin/symcoll_run --sim-nodes 2 -n 2 sh -c "$W" .gpu/bin/symcoll_info -t 2>&1 |
    grep -E "UCX lane|transfers|direct path|WARN|ERROR" >> $L
done
one $IPC net_direct_mixed
one $IPC net_mixed
for i in 1 2 3 4; do
  one $IPC net_direct_kill; one $IPC net_direct_hier_kill
  one $TCP net_direct_kill; one $TCP net_direct_hier_kill
done
grep "^=== rc\|^=== not run" $L
echo "aborts by UCX: $(grep -c 'Fatal: unexpected error' $L)"
echo "probe warnings: $(grep -c 'direct path forced over UCX' $L)"
