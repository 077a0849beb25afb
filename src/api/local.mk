# api: the roof: public entry points (argument checks, one dispatch) and the
# communicator's lifecycle
libsymcoll_core_la_SOURCES += \
	src/api/api.c \
	src/api/comm.c
noinst_HEADERS += \
	src/api/api.h
