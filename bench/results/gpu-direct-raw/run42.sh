#!/bin/bash
# run 42: HEAD (6854a9a): every test_cuda_net case across 2 simulated nodes (TCP), then
# the collectives' own kernels on one node
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
timeout 570 sh scripts/gpu-check.sh run .gpu $OUT/g "nettests coll"
cat $OUT/g/summary
