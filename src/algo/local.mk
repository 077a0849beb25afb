# algo: all-reduce dispatch and algorithms (one file per algorithm) and the reductions
libsymcoll_core_la_SOURCES += \
	src/algo/allreduce.c \
	src/algo/cuda_net_plan.c \
	src/algo/host_common.c \
	src/algo/host_oneshot.c \
	src/algo/host_twoshot.c \
	src/algo/reduce.c
noinst_HEADERS += \
	src/algo/algo.h \
	src/algo/host.h \
	src/algo/reduce.h
# inter-node algorithms over UCX (issue 5)
libsymcoll_core_la_SOURCES += \
	src/algo/hier.c \
	src/algo/net_common.c \
	src/algo/net_rd.c \
	src/algo/net_ring.c
noinst_HEADERS += \
	src/algo/net.h
