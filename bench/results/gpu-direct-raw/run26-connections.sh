#!/bin/bash
# Run 26: the GPU's settings (read only), then net_direct_hier_mixed repeated with
# CUDA_DEVICE_MAX_CONNECTIONS 1 (every stream of a process on one hardware queue),
# the default (8) and 32.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export UCX_WARN_UNUSED_ENV_VARS=n
L=$OUT/run26.txt
{
date -u
nvidia-smi --query-gpu=name,compute_mode,driver_version --format=csv
ps -ef | grep -i "mps" | grep -v grep | head -3
} > $L 2>&1
run() {  # label tls [env...]
    lab=$1; tls=$2; shift 2
    s=$(date +%s.%N)
    env "$@" LD_LIBRARY_PATH=.gpu/ucx-cuda/lib:.gpu/lib UCX_MODULE_DIR=.gpu/ucx-cuda/lib/ucx \
        UCX_TLS=$tls SYMCOLL_TIMEOUT=15 CK_RUN_CASE=${CASE:-net_direct_hier_mixed} \
        timeout -k 5 ${LIM:-55} .gpu/bin/test_cuda_net > /tmp/case.log 2>&1
    rc=$?
    e=$(date +%s.%N)
    printf "%s %s tls=%s rc=%d %.1fs\n" "${CASE:-hier_mixed}" "$lab" "$tls" $rc $(echo "$e - $s" | bc) >> $L
    if [ $rc -ne 0 ]; then grep -v "^$" /tmp/case.log | grep -v "^ *at \|^#" | tail -8 >> $L; fi
    pkill -9 test_cuda_net 2>/dev/null; sleep 1
}
T=tcp,cuda_copy,self
I=cuda_ipc,cuda_copy,tcp,self
run conn1 $T CUDA_DEVICE_MAX_CONNECTIONS=1
run conn1 $I CUDA_DEVICE_MAX_CONNECTIONS=1
for i in 1 2; do
    run default $T
    run conn32 $T CUDA_DEVICE_MAX_CONNECTIONS=32
done
run conn32 $T CUDA_DEVICE_MAX_CONNECTIONS=32
run conn32 $I CUDA_DEVICE_MAX_CONNECTIONS=32
run default $I
CASE=net_direct_types LIM=100 run conn1 $T CUDA_DEVICE_MAX_CONNECTIONS=1
date -u >> $L
