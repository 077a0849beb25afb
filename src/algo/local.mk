# algo: all-reduce dispatch and algorithms (one file per algorithm) and the reductions
libsymcoll_core_la_SOURCES += \
	src/algo/allreduce.c \
	src/algo/host_common.c \
	src/algo/host_oneshot.c \
	src/algo/host_twoshot.c \
	src/algo/reduce.c
noinst_HEADERS += \
	src/algo/algo.h \
	src/algo/host.h \
	src/algo/reduce.h
