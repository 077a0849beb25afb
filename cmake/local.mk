# cmake: the CMake package (find_package(symcoll) and the imported target
# symcoll::symcoll), written by make from its templates; cmake is not needed to build it.
cmakeconfigdir = $(libdir)/cmake/symcoll
cmakeconfig_DATA = cmake/symcollConfig.cmake cmake/symcollConfigVersion.cmake
EXTRA_DIST += cmake/symcollConfig.cmake.in cmake/symcollConfigVersion.cmake.in \
	cmake/config.sh
CLEANFILES += $(cmakeconfig_DATA)

# Directories as make expands them, so a `make prefix=...` override counts too.
SYMCOLL_CMAKE_CONFIG = VERSION='$(VERSION)' prefix='$(prefix)' libdir='$(libdir)' \
	includedir='$(includedir)' SIZEOF_VOID_P='$(SYMCOLL_SIZEOF_VOID_P)' \
	STATIC_LIBS='$(UCX_LIBS) $(HWLOC_LIBS) $(PMIX_LIBS) $(CUDA_LIBS) $(LIBS)' \
	$(SHELL) $(srcdir)/cmake/config.sh

cmake/symcollConfig.cmake: cmake/symcollConfig.cmake.in cmake/config.sh libsymcoll.la Makefile
	@$(MKDIR_P) cmake
	$(AM_V_GEN)$(SYMCOLL_CMAKE_CONFIG) $(srcdir)/cmake/symcollConfig.cmake.in $@ libsymcoll.la
cmake/symcollConfigVersion.cmake: cmake/symcollConfigVersion.cmake.in cmake/config.sh \
		libsymcoll.la Makefile
	@$(MKDIR_P) cmake
	$(AM_V_GEN)$(SYMCOLL_CMAKE_CONFIG) $(srcdir)/cmake/symcollConfigVersion.cmake.in $@ \
		libsymcoll.la

# make check: a CMake project built against the installed package runs an all-reduce
AM_TESTS_ENVIRONMENT += CMAKE='$(CMAKE)'; export CMAKE;
TESTS += tests/test_cmake.sh
# two `make install`s at once would relink the same Fortran libraries in the build tree
CMAKE_TEST_LOG = tests/test_cmake.sh.log
$(CMAKE_TEST_LOG): tests/test_install.sh.log
EXTRA_DIST += tests/test_cmake.sh tests/cmake_consumer/CMakeLists.txt \
	tests/cmake_consumer/main.c
