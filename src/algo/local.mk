# algo: the collectives' algorithms, in floors (src/LAYERS lists them, ground first):
# base/ the shared context and the reductions; host/, net/ and cuda/ the families inside
# a node over the host pool, across nodes over UCX, and inside a node over the CUDA pool;
# cuda_net/ CUDA memory across nodes (over net/ and cuda/); at the top the dispatch
# (algo.c: checks, pools and the one run; allreduce.c and coll.c: the rows of the
# collective x family table).
libsymcoll_core_la_SOURCES += \
	src/algo/algo.c \
	src/algo/allreduce.c \
	src/algo/coll.c \
	src/algo/base/ctx.c \
	src/algo/base/reduce.c \
	src/algo/cuda_net/cuda_net_sched.c \
	src/algo/host/host_coll.c \
	src/algo/host/host_common.c \
	src/algo/host/host_oneshot.c \
	src/algo/host/host_twoshot.c \
	src/algo/net/hier.c \
	src/algo/net/net_agree.c \
	src/algo/net/net_allreduce.c \
	src/algo/net/net_bc.c \
	src/algo/net/net_coll.c \
	src/algo/net/net_rd.c \
	src/algo/net/net_rhd.c \
	src/algo/net/net_ring.c \
	src/algo/net/net_state.c \
	src/algo/net/net_xfer.c
noinst_HEADERS += \
	src/algo/algo.h \
	src/algo/run.h \
	src/algo/base/ctx.h \
	src/algo/base/reduce.h \
	src/algo/host/host.h \
	src/algo/net/net.h \
	src/algo/net/net_int.h \
	src/algo/cuda/cuda_algo.h \
	src/algo/cuda/cuda_int.h \
	src/algo/cuda_net/cuda_net.h \
	src/algo/cuda_net/cuda_net_int.h \
	src/algo/cuda_net/cuda_net_sched.h
# CUDA memory, built when configure finds CUDA. The staging plan (cuda_net_sched.c, above)
# needs no CUDA: its test runs everywhere.
if HAVE_CUDA
libsymcoll_core_la_SOURCES += \
	src/algo/cuda/cuda_allreduce.c \
	src/algo/cuda/cuda_coll.c \
	src/algo/cuda/cuda_hier.c \
	src/algo/cuda/cuda_stage.c \
	src/algo/cuda/cuda_watch.c \
	src/algo/cuda_net/cuda_net.c \
	src/algo/cuda_net/cuda_net_direct_buf.c \
	src/algo/cuda_net/cuda_net_direct_stream.c \
	src/algo/cuda_net/cuda_net_direct_thread.c \
	src/algo/cuda_net/cuda_net_hier.c \
	src/algo/cuda_net/cuda_net_channel.c \
	src/algo/cuda_net/cuda_net_probe.c \
	src/algo/cuda_net/cuda_net_queue.c \
	src/algo/cuda_net/cuda_net_stage.c
endif
