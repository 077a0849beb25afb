# pool: the growable symmetric pool and its backends (host memfd; CUDA VMM in pool_cuda.c,
# built when configure finds CUDA)
libsymcoll_core_la_SOURCES += \
	src/pool/pool.c \
	src/pool/pool_alloc.c \
	src/pool/pool_grow.c \
	src/pool/pool_host.c
noinst_HEADERS += \
	src/pool/pool.h \
	src/pool/pool_int.h
if HAVE_CUDA
libsymcoll_core_la_SOURCES += src/pool/pool_cuda.c
endif
