# core: the ground every layer uses: status strings, datatypes, logging, the
# configuration table, deadlines and waits
libsymcoll_core_la_SOURCES += \
	src/core/config.c \
	src/core/log.c \
	src/core/status.c \
	src/core/wait.c
noinst_HEADERS += \
	src/core/config.h \
	src/core/core.h \
	src/core/log.h \
	src/core/wait.h
