# NCCL peer driver (GPU machine comparisons): built when configure finds nccl.h and
# libnccl next to the CUDA toolkit. On the GPU machine libnccl.so.2 comes from the
# Python environment (scripts/gpu-check.sh puts it on LD_LIBRARY_PATH).
EXTRA_DIST += bench/nccl_allreduce_peer.c
if HAVE_NCCL
noinst_PROGRAMS += bench/nccl_allreduce_peer
bench_nccl_allreduce_peer_SOURCES = bench/nccl_allreduce_peer.c tools/perf_engine.c \
	tools/perf_args.c tools/perf_check.c tools/perf_output.c tools/refcheck.c
bench_nccl_allreduce_peer_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/tools
bench_nccl_allreduce_peer_LDADD = -L$(CUDA_DIR)/lib64 -lnccl $(CUDA_LIBS) -lm
endif
