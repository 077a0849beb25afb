# ucx layer
libsymcoll_core_la_SOURCES += \
	src/ucx/ucx_context.c \
	src/ucx/ucx_direct.c \
	src/ucx/ucx_ep.c \
	src/ucx/ucx_mem.c \
	src/ucx/ucx_rkey.c \
	src/ucx/ucx_rma.c \
	src/ucx/ucx_progress.c
noinst_HEADERS += \
	src/ucx/ucx.h \
	src/ucx/ucx_int.h
