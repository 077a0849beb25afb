#!/bin/bash
# run 41: HEAD (6854a9a) after the shared busy-list: test_cuda, then the direct cases over TCP
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=$PWD/.gpu/ucx-cuda/lib UCX_MODULE_DIR=$PWD/.gpu/ucx-cuda/lib/ucx
export SYMCOLL_TIMEOUT=20 TEST_TIMEOUT=280 DIRECT_TLS=tcp,cuda_copy,self
timeout 560 sh scripts/gpu-check.sh run .gpu $OUT/g "env tests direct"
cat $OUT/g/summary
