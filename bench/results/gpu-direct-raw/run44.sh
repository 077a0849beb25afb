#!/bin/bash
# run 44: as run 43, with UCX 1.22 built as scripts/ucx-cuda-build.sh builds it (release:
# --disable-assertions --disable-debug), against the carried build with assertions
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run44.txt
.gpu/ucx-cuda/bin/ucx_info -v > $L 2>&1
one() { # tls case
  local tls=$1 c=$2 t0=$SECONDS
  [ $SECONDS -gt 240 ] && { echo "=== not run (time): $c $tls" >> $L; return; }
  echo "=== case $c UCX_TLS=$tls ($(date -u +%T))" >> $L
  env UCX_TLS=$tls CK_RUN_CASE=$c timeout 60 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda\|^#   *[0-9]" >> $L
  echo "=== rc=${PIPESTATUS[0]} case $c UCX_TLS=$tls $((SECONDS-t0)) s" >> $L
}
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  one tcp,cuda_copy,self net_direct_hier_kill
  one tcp,cuda_copy,self net_direct_kill
done
for i in 1 2 3 4 5 6; do
  one cuda_ipc,cuda_copy,tcp,self net_direct_hier_kill
  one cuda_ipc,cuda_copy,tcp,self net_direct_kill
done
grep "^=== rc\|^=== not run" $L
echo "aborts by UCX: $(grep -c 'Fatal: unexpected error' $L)"
echo "probe warnings (tcp): $(grep -c 'direct path forced over UCX' $L)"
