#!/bin/sh
# Can UCX move GPU memory over TCP, and how fast? Runs ucx_perftest of the CUDA-enabled
# UCX built by scripts/ucx-cuda-build.sh (packed into DIR/ucx-cuda by
# `UCX_CUDA_SLIM=... scripts/gpu-check.sh pack BUILD DIR`) between two processes on one
# GPU machine, one GPU each, over TCP on loopback: one-sided put (what the direct-rkey
# path of CUDA memory across nodes needs) and active messages, host and CUDA memory.
# Usage (on the GPU machine): sh scripts/ucx-cuda-probe.sh DIR
# Results: docs/performance.md (GPU: what has run but is not measured for speed).
set -u
U=$(cd "${1:-.gpu}" && pwd)/ucx-cuda
export LD_LIBRARY_PATH=$U/lib:$U/extra:${LD_LIBRARY_PATH:-} UCX_MODULE_DIR=$U/lib/ucx
export UCX_WARN_UNUSED_ENV_VARS=n UCX_TLS=${UCX_TLS:-tcp,cuda_copy}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
P=$U/bin/ucx_perftest
port=13337
for t in ucp_put_bw ucp_am_bw; do
    for m in host,host cuda,cuda; do
        for s in 1048576 8388608; do
            port=$((port + 1))
            echo "=== UCX_TLS=$UCX_TLS test=$t mem=$m size=$s"
            CUDA_VISIBLE_DEVICES=0 timeout 40 $P -p $port -t $t -m $m -s $s -n 100 \
                >/tmp/ucx-probe-server.log 2>&1 &
            sleep 1
            CUDA_VISIBLE_DEVICES=1 timeout 40 $P 127.0.0.1 -p $port -t $t -m $m -s $s -n 100 2>&1 |
                tail -4
            wait
            tail -2 /tmp/ucx-probe-server.log
        done
    done
done
