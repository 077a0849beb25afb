# bootstrap: out-of-band exchange (callback, built-in TCP, TCP found through PMIx) and the
# node-local fd channel
libsymcoll_core_la_SOURCES += \
	src/bootstrap/accept.c \
	src/bootstrap/bootstrap.c \
	src/bootstrap/leader.c \
	src/bootstrap/local.c \
	src/bootstrap/mesh.c \
	src/bootstrap/pmix.c \
	src/bootstrap/sha256.c \
	src/bootstrap/shrink.c \
	src/bootstrap/shrink_lead.c \
	src/bootstrap/shrink_wire.c \
	src/bootstrap/split.c \
	src/bootstrap/tcp.c \
	src/bootstrap/wire.c
noinst_HEADERS += \
	src/bootstrap/bootstrap.h \
	src/bootstrap/bs_int.h \
	src/bootstrap/sha256.h \
	src/bootstrap/shrink_int.h
libsymcoll_core_la_CPPFLAGS += $(PMIX_CPPFLAGS)
libsymcoll_core_la_LIBADD += $(PMIX_LIBS)
