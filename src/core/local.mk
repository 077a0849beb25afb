# core: lifecycle, configuration table, logging, status strings, datatypes
libsymcoll_core_la_SOURCES += \
	src/core/api.c \
	src/core/comm.c \
	src/core/config.c \
	src/core/log.c \
	src/core/status.c
noinst_HEADERS += \
	src/core/config.h \
	src/core/core.h \
	src/core/log.h
