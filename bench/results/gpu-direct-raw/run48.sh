#!/bin/bash
# run 48: the probe's test for lanes that call the CUDA driver read per endpoint from the
# lanes (ucx_cuda_driver_lanes) instead of names in the union of transports, release UCX
# 1.22: the report of 2 simulated nodes per UCX_TLS, the one-queue refusal over both,
# direct and staged cases over cuda_ipc, the direct kill cases twice over both
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run48.txt
IPC=cuda_ipc,cuda_copy,tcp,self TCP=tcp,cuda_copy,self
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
  [ $SECONDS -gt 420 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls ($(date -u +%T))" >> $L
  env UCX_TLS=$tls CK_RUN_CASE=$c timeout 90 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $((SECONDS-t0)) s" >> $L
}
W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK exec "$0" "$@"'
for tls in $IPC $TCP; do
  for q in "" 1; do
    echo "=== info UCX_TLS=$tls CUDA_DEVICE_MAX_CONNECTIONS=${q:-unset}" >> $L
    env ${q:+CUDA_DEVICE_MAX_CONNECTIONS=$q} UCX_TLS=$tls SYMCOLL_LOG_LEVEL=info SYMCOLL_CUDA_NET_PATH=auto timeout 60 \
      .gpu/bin/symcoll_run --sim-nodes 2 -n 2 sh -c "$W" .gpu/bin/symcoll_info -t 2>&1 |
      grep -E "transfers|direct path|hardware queue|MAX_CONNECTIONS|WARN|ERROR" >> $L
  done
done
one $IPC net_direct_one_queue
one $TCP net_direct_one_queue
one $IPC net_direct_mixed
one $IPC net_direct_types
one $IPC net_mixed
for i in 1 2; do
  one $IPC net_direct_kill; one $IPC net_direct_hier_kill
  one $TCP net_direct_kill; one $TCP net_direct_hier_kill
done
grep "^=== rc\|^=== not run" $L
echo "aborts by UCX: $(grep -c 'Fatal: unexpected error' $L)"
echo "probe warnings: $(grep -c 'direct path forced over UCX' $L)"
