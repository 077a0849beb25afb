# topo: topology probe and algorithm selection
libsymcoll_core_la_SOURCES += src/topo/topo.c
noinst_HEADERS += src/topo/topo.h
