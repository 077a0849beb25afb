# cuda: CUDA glue and kernels (built with nvcc when configure finds CUDA)
