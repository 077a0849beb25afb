# cuda: CUDA glue and kernels (built with nvcc when configure finds CUDA). libtool does
# not know nvcc: scripts/nvcc-lt.sh compiles each .cu into the PIC and non-PIC objects
# and writes the .lo file that libtool links like any other object.
noinst_HEADERS += src/cuda/cuda.h src/cuda/kernels.h src/cuda/sig.h src/cuda/coll.h \
	src/cuda/kernel_common.cuh src/cuda/net_direct.h
EXTRA_DIST += src/cuda/allreduce.cu src/cuda/coll.cu src/cuda/net_direct.cu scripts/nvcc-lt.sh

if HAVE_CUDA
libsymcoll_core_la_SOURCES += src/cuda/cuda.c src/cuda/graph_keep.c
CUDA_KERNEL_LOS = src/cuda/allreduce.lo src/cuda/coll.lo src/cuda/net_direct.lo
libsymcoll_core_la_LIBADD += $(CUDA_KERNEL_LOS)
EXTRA_libsymcoll_core_la_DEPENDENCIES = $(CUDA_KERNEL_LOS)

# sm_90 machine code plus PTX for later GPUs; -Xptxas -v reports registers and spills
NVCC_ALL_FLAGS = -std=c++17 -O3 \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-Xptxas -v -Xcompiler -fvisibility=hidden -Xcompiler -Wall \
	-I$(top_srcdir)/include -I$(top_srcdir)/src -I$(top_builddir) $(NVCC_FLAGS)

src/cuda/allreduce.lo: $(top_srcdir)/src/cuda/allreduce.cu $(top_srcdir)/src/cuda/kernels.h \
		$(top_srcdir)/src/cuda/kernel_common.cuh $(top_srcdir)/include/symcoll.h \
		$(top_srcdir)/scripts/nvcc-lt.sh
	@$(MKDIR_P) src/cuda
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/scripts/nvcc-lt.sh '$(NVCC)' $@ \
		$(top_srcdir)/src/cuda/allreduce.cu $(NVCC_ALL_FLAGS) >src/cuda/allreduce.ptxas.log 2>&1 \
		|| { cat src/cuda/allreduce.ptxas.log; exit 1; }
	@if grep -E '[1-9][0-9]* bytes spill (stores|loads)' src/cuda/allreduce.ptxas.log >/dev/null; then \
		echo "nvcc: register spills in allreduce.cu (details in src/cuda/allreduce.ptxas.log):"; \
		grep -c -E '[1-9][0-9]* bytes spill stores' src/cuda/allreduce.ptxas.log; fi

src/cuda/net_direct.lo: $(top_srcdir)/src/cuda/net_direct.cu $(top_srcdir)/src/cuda/net_direct.h \
		$(top_srcdir)/src/cuda/kernel_common.cuh $(top_srcdir)/src/cuda/kernels.h \
		$(top_srcdir)/include/symcoll.h $(top_srcdir)/scripts/nvcc-lt.sh
	@$(MKDIR_P) src/cuda
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/scripts/nvcc-lt.sh '$(NVCC)' $@ \
		$(top_srcdir)/src/cuda/net_direct.cu $(NVCC_ALL_FLAGS) >src/cuda/net_direct.ptxas.log 2>&1 \
		|| { cat src/cuda/net_direct.ptxas.log; exit 1; }

CLEANFILES += src/cuda/net_direct.lo src/cuda/net_direct.o src/cuda/.libs/net_direct.o \
	src/cuda/net_direct.ptxas.log

# the other collectives' kernels: a file of their own, so that changing them does not
# rebuild the all-reduce's (the code they share is kernel_common.cuh)
src/cuda/coll.lo: $(top_srcdir)/src/cuda/coll.cu $(top_srcdir)/src/cuda/coll.h \
		$(top_srcdir)/src/cuda/kernel_common.cuh $(top_srcdir)/src/cuda/kernels.h \
		$(top_srcdir)/src/cuda/sig.h $(top_srcdir)/include/symcoll.h \
		$(top_srcdir)/scripts/nvcc-lt.sh
	@$(MKDIR_P) src/cuda
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/scripts/nvcc-lt.sh '$(NVCC)' $@ \
		$(top_srcdir)/src/cuda/coll.cu $(NVCC_ALL_FLAGS) >src/cuda/coll.ptxas.log 2>&1 \
		|| { cat src/cuda/coll.ptxas.log; exit 1; }
	@if grep -E '[1-9][0-9]* bytes spill (stores|loads)' src/cuda/coll.ptxas.log >/dev/null; then \
		echo "nvcc: register spills in coll.cu (details in src/cuda/coll.ptxas.log):"; \
		grep -c -E '[1-9][0-9]* bytes spill stores' src/cuda/coll.ptxas.log; fi

CLEANFILES += src/cuda/allreduce.lo src/cuda/allreduce.o src/cuda/.libs/allreduce.o \
	src/cuda/allreduce.ptxas.log src/cuda/coll.lo src/cuda/coll.o src/cuda/.libs/coll.o \
	src/cuda/coll.ptxas.log
endif
