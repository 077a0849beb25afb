#!/bin/bash
# run 30: net_direct_hier_mixed, one lane, 32 queues, TCP with cuda_copy; stacks at 30 s
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=150
L=$OUT/run30.txt
echo "# run 30: CK_RUN_CASE=net_direct_hier_mixed UCX_TLS=tcp,cuda_copy,self SYMCOLL_CUDA_NET_LANES=1 CUDA_DEVICE_MAX_CONNECTIONS=32 SYMCOLL_TIMEOUT=150; cuda-gdb stacks of every rank at 30 s" > $L
env UCX_TLS=tcp,cuda_copy,self SYMCOLL_CUDA_NET_LANES=1 CUDA_DEVICE_MAX_CONNECTIONS=32 CK_RUN_CASE=net_direct_hier_mixed \
  timeout 120 .gpu/bin/test_cuda_net > $OUT/run30-test.txt 2>&1 &
P=$!
for i in $(seq 30); do sleep 1; kill -0 $P 2>/dev/null || break; done
if kill -0 $P 2>/dev/null; then
  echo "--- still running after 30 s" >> $L
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv >> $L
  for pid in $(pgrep -f "test_cuda_net" | sort -n); do
    echo "=== stacks of $pid ($(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-60))" >> $L
    timeout 60 cuda-gdb -q -batch -p $pid -ex "info cuda kernels" -ex "thread apply all bt 25" >> $L 2>&1
  done
  pkill -f test_cuda_net
fi
wait $P; echo "test rc=$?" >> $L
cat $OUT/run30-test.txt | grep -v "^  host\|^  cuda\|^#" >> $L; rm $OUT/run30-test.txt
tail -5 $L
