#!/bin/sh
# Builds UCX 1.22.0 from its release tarball with CUDA (cuda_copy, cuda_ipc) into a
# relocatable tree, for the GPU rkey path and scripts/ucx-cuda-probe.sh on the GPU
# machine (Debian's and Ubuntu's UCX are built without CUDA). Not part of the build or
# of CI. NVML's header and library, which UCX's configure insists on, come from Debian's
# non-free libnvidia-ml-dev and libnvidia-ml1, unpacked with dpkg -x into DEST, never
# installed (fetching them adds the non-free apt source: needs root, once).
#
#   scripts/ucx-cuda-build.sh [DEST]     (default /tmp/ucx-cuda; ~15 min on 2 cores)
#
# Environment: UCX_TARBALL (default ../shared/ucx/ucx-1.22.0.tar.gz from the repository
# root), CUDA (default /usr/local/cuda), NVCC_GENCODE (the GPU architectures UCX's own
# kernels are built for; default sm_90 only), NVML_DEBS (a folder that already holds
# the two .deb files: no apt at all), JOBS (default 2).
#
# Result: DEST/install, the installed UCX (headers, pkg-config files: build symcoll
# against it with ./configure --with-ucx=DEST/install), and DEST/slim, a relocatable
# tree (libraries, UCX modules, ucx_info, ucx_perftest, libcudart.so.13) to carry to the
# GPU machine and put first in LD_LIBRARY_PATH (DEST/slim/lib); the driver there
# provides libcuda.so.1 and libnvidia-ml.so.1. Check there: ucx_info -d | grep cuda
# (cuda_cpy, cuda_ipc).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-/tmp/ucx-cuda}
CUDA=${CUDA:-/usr/local/cuda}
TARBALL=${UCX_TARBALL:-$here/../shared/ucx/ucx-1.22.0.tar.gz}
GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
JOBS=${JOBS:-2}
W=$DEST/work
VER=1.22.0

[ -f "$TARBALL" ] || { echo "$0: no UCX source at $TARBALL (set UCX_TARBALL)" >&2; exit 1; }
[ -x "$CUDA/bin/nvcc" ] || { echo "$0: no nvcc under $CUDA (set CUDA)" >&2; exit 1; }
mkdir -p "$W"
DEST=$(cd "$DEST" && pwd)
W=$DEST/work
for t in autoconf automake libtoolize; do
    command -v $t >/dev/null || { echo "$0: needs $t (apt-get install autoconf automake libtool)" >&2; exit 1; }
done

# NVML, unpacked privately
mkdir -p "$W/nvml"
cd "$W/nvml"
if [ -n "${NVML_DEBS:-}" ]; then
    cp "$NVML_DEBS"/libnvidia-ml-dev_*.deb "$NVML_DEBS"/libnvidia-ml1_*.deb .
elif ! ls libnvidia-ml-dev_*.deb libnvidia-ml1_*.deb >/dev/null 2>&1; then
    list=/etc/apt/sources.list.d/symcoll-nonfree-bookworm.list
    [ -f $list ] || echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" >$list
    apt-get update -qq
    apt-get download libnvidia-ml-dev libnvidia-ml1
fi
for d in libnvidia-ml-dev_*.deb libnvidia-ml1_*.deb; do dpkg -x "$d" root; done
NV=$W/nvml/root/usr
NVLIB=$(dirname "$(find "$NV" -name 'libnvidia-ml.so*' | head -1)")
[ -f "$NV/include/nvml.h" ] || { echo "$0: nvml.h missing from the unpacked packages" >&2; exit 1; }

# the source, unpacked once (remove DEST/work/ucx-1.22.0 to start over)
cd "$W"
if [ ! -f "ucx-$VER/.symcoll-unpacked" ]; then
    rm -rf "ucx-$VER"
    tar xzf "$TARBALL"
    touch "ucx-$VER/.symcoll-unpacked"
fi
cd "ucx-$VER"
# ucx_perftest's CUDA kernels include DOCA headers even with --without-gda: drop that
# source (the "if HAVE_NVCC ... endif" block); ucx_perftest -m cuda works without it
am=src/tools/perf/cuda/Makefile.am
if grep -q '^if HAVE_NVCC' $am; then
    sed -i '/^if HAVE_NVCC/,/^endif/d' $am
    rm -f configure
fi
[ -x configure ] || ./autogen.sh >"$W/autogen.log" 2>&1
# GDA needs NVIDIA DOCA headers, which are not here; the GPU architectures: see GENCODE
./configure --prefix="$DEST/install" --with-cuda="$CUDA" --without-gda \
    --with-nvcc-gencode="$GENCODE" --without-java --without-go --without-rocm \
    --disable-doxygen-doc --enable-mt --with-verbs --disable-logging --enable-cma \
    --disable-debug --disable-assertions --disable-params-check \
    CPPFLAGS="-I$NV/include" LDFLAGS="-L$NVLIB -L$CUDA/lib64/stubs" >"$W/configure.log"
grep -E "UCT modules|UCM modules|Perf modules" "$W/configure.log" || true
grep -q "UCT modules:.*cuda" "$W/configure.log" ||
    { echo "$0: UCX's configure found no CUDA (see $W/configure.log)" >&2; exit 1; }
make -j"$JOBS" >"$W/make.log" 2>&1
make install >>"$W/make.log" 2>&1

# the slim tree to carry
rm -rf "$DEST/slim"
mkdir -p "$DEST/slim/bin" "$DEST/slim/lib/ucx"
cp -a "$DEST/install/lib"/lib*.so* "$DEST/slim/lib/"
cp -a "$DEST/install/lib/ucx"/*.so* "$DEST/slim/lib/ucx/"
cp -a "$DEST/install/bin/ucx_info" "$DEST/install/bin/ucx_perftest" "$DEST/slim/bin/"
cp -L "$CUDA"/lib64/libcudart.so.13 "$DEST/slim/lib/" 2>/dev/null ||
    cp -L "$(find "$CUDA" -name 'libcudart.so.13' | head -1)" "$DEST/slim/lib/"
find "$DEST/slim" -type f -name '*.so*' -exec strip --strip-unneeded {} +
strip "$DEST/slim/bin/ucx_info" "$DEST/slim/bin/ucx_perftest"
du -sh "$DEST/slim"
ls "$DEST/slim/lib/ucx"
