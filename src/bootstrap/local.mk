# bootstrap: out-of-band exchange (callback or built-in TCP) and the node-local fd channel
noinst_HEADERS += src/bootstrap/bootstrap.h
