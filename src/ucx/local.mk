# ucx layer
libsymcoll_core_la_SOURCES += \
	src/ucx/ucx.c
noinst_HEADERS += \
	src/ucx/ucx.h
