# pool: the growable symmetric pool and its backends (host memfd here; CUDA VMM in
# pool_cuda.c, added by the CUDA layer)
libsymcoll_core_la_SOURCES += \
	src/pool/pool.c \
	src/pool/pool_host.c
noinst_HEADERS += src/pool/pool.h
