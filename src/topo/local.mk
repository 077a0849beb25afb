# topo: topology probe (node map, GPUs, links, NUMA) and algorithm selection
libsymcoll_core_la_SOURCES += \
	src/topo/gpu.c \
	src/topo/order.c \
	src/topo/print.c \
	src/topo/select.c \
	src/topo/select_coll.c \
	src/topo/select_cuda_net.c \
	src/topo/topo.c \
	src/topo/topo_tune.c \
	src/topo/tune.c
noinst_HEADERS += \
	src/topo/gpu.h \
	src/topo/select.h \
	src/topo/select_int.h \
	src/topo/topo.h \
	src/topo/tune.h
