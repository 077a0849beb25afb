# bootstrap: out-of-band exchange (callback or built-in TCP) and the node-local fd channel
libsymcoll_core_la_SOURCES += \
	src/bootstrap/accept.c \
	src/bootstrap/bootstrap.c \
	src/bootstrap/local.c \
	src/bootstrap/sha256.c \
	src/bootstrap/tcp.c \
	src/bootstrap/wire.c
noinst_HEADERS += \
	src/bootstrap/bootstrap.h \
	src/bootstrap/bs_int.h \
	src/bootstrap/sha256.h
