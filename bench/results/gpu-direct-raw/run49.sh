#!/bin/bash
# run 49: the endpoint listing read by ucx_ep_lanes_read (review of run 48's change: an
# endpoint UCX could not list now counts as calling the CUDA driver), release UCX 1.22:
# the report of 2 simulated nodes per UCX_TLS with and without one hardware queue, the
# one-queue refusal over both, a direct and a staged case over cuda_ipc
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run49.txt
IPC=cuda_ipc,cuda_copy,tcp,self TCP=tcp,cuda_copy,self
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
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
      grep -E "UCX lane|transfers|direct path|hardware queue|MAX_CONNECTIONS|WARN|ERROR" >> $L
  done
done
one $IPC net_direct_one_queue
one $TCP net_direct_one_queue
one $IPC net_direct_mixed
one $IPC net_mixed
grep "^=== rc" $L | tee -a $L
