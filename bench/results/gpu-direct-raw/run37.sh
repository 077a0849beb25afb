#!/bin/bash
# run 37: net_direct_hier_mixed repeated, one lane, with the flush report (which endpoints
# a lasting worker flush still waits for); cuda-gdb stacks of every rank at 12 s of a stall
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=20
L=$OUT/run37.txt
fails=0
rep() { # tls rep [env...]
  local tls=$1 r=$2; shift 2
  local t0=$SECONDS
  echo "=== rep $r UCX_TLS=$tls $* ($(date -u +%T))" >> $L
  env UCX_TLS=$tls "$@" CK_RUN_CASE=net_direct_hier_mixed timeout 100 .gpu/bin/test_cuda_net > $OUT/t.txt 2>&1 &
  local P=$!
  for i in $(seq 14); do sleep 1; kill -0 $P 2>/dev/null || break; done
  if kill -0 $P 2>/dev/null && [ $fails -lt 1 ]; then
    echo "--- still running after 14 s: stacks" >> $L
    for pid in $(pgrep -f "test_cuda_net" | sort -n | tail -4); do
      echo "=== stacks of $pid" >> $L
      timeout 40 cuda-gdb -q -batch -p $pid -ex "info cuda kernels" -ex "thread apply all bt 14" 2>&1 | grep -v "^\[New Thread\|^\[Thread\|libthread_db\|^$" >> $L
    done
  fi
  wait $P; local rc=$?
  grep -v "^  host\|^  cuda\|^#" $OUT/t.txt >> $L
  echo "=== rc=$rc rep $r UCX_TLS=$tls $* $((SECONDS-t0)) s" >> $L
  [ $rc -ne 0 ] && fails=$((fails+1))
}
for r in 1 2 3 4 5 6 7 8 9 10; do
  rep tcp,cuda_copy,self $r SYMCOLL_CUDA_NET_LANES=1
  [ $fails -ge 3 ] && break
  [ $SECONDS -gt 420 ] && break
done
for r in 1 2 3; do
  [ $SECONDS -gt 470 ] && break
  rep cuda_ipc,cuda_copy,tcp,self $r SYMCOLL_CUDA_NET_LANES=1
done
echo "=== case net_direct_one_queue (report lines)" >> $L
env UCX_TLS=tcp,cuda_copy,self CK_RUN_CASE=net_direct_one_queue timeout 100 .gpu/bin/test_cuda_net 2>&1 | grep -v "^  host\|^  cuda" | grep -i "direct path to\|Checks\|FAIL\|refus\|hardware" >> $L
echo "=== rc=${PIPESTATUS[0]} case net_direct_one_queue" >> $L
rm -f $OUT/t.txt
grep "^=== rc\|still busy" $L
