# pool: the growable symmetric pool and its backends (host memfd here; CUDA VMM in
# pool_cuda.c, added by the CUDA layer)
noinst_HEADERS += src/pool/pool.h
