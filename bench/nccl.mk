# NCCL peer driver (GPU machine comparisons)
