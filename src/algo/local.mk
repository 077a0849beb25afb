# algo: dispatch and algorithms (one file per algorithm family) and the reductions
libsymcoll_core_la_SOURCES += \
	src/algo/allreduce.c \
	src/algo/coll.c \
	src/algo/cuda_net_plan.c \
	src/algo/host_coll.c \
	src/algo/host_common.c \
	src/algo/host_oneshot.c \
	src/algo/host_twoshot.c \
	src/algo/reduce.c
noinst_HEADERS += \
	src/algo/algo.h \
	src/algo/ctx.h \
	src/algo/host.h \
	src/algo/reduce.h
# inter-node algorithms over UCX
libsymcoll_core_la_SOURCES += \
	src/algo/hier.c \
	src/algo/net_coll.c \
	src/algo/net_common.c \
	src/algo/net_rd.c \
	src/algo/net_ring.c
noinst_HEADERS += \
	src/algo/net.h
# CUDA memory, built when configure finds CUDA: the all-reduce over the CUDA pool and CUDA
# memory across nodes (cuda_net*.c, described in cuda_net_int.h). The staging plan,
# cuda_net_plan.c above, needs no CUDA: its test runs everywhere.
noinst_HEADERS += \
	src/algo/cuda_algo.h \
	src/algo/cuda_net_int.h \
	src/algo/cuda_net_plan.h
if HAVE_CUDA
libsymcoll_core_la_SOURCES += \
	src/algo/cuda_allreduce.c \
	src/algo/cuda_net.c \
	src/algo/cuda_net_direct.c \
	src/algo/cuda_net_lane.c \
	src/algo/cuda_net_queue.c \
	src/algo/cuda_net_stage.c
endif
