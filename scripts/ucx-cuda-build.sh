#!/bin/sh
# Builds a CUDA-enabled UCX from Debian 12's own ucx source package (1.13.1) against the
# CUDA toolkit, for the ucxcuda step of scripts/gpu-check.sh and scripts/ucx-cuda-probe.sh
# on the GPU machine (Debian's and Ubuntu's UCX are built without CUDA). Not part of the
# build or of CI. Needs root: it adds two apt sources (deb-src of main; non-free, only to
# fetch NVML's header and link library, which UCX 1.13's configure insists on, unpacked
# with dpkg -x into DEST, never installed).
#
#   scripts/ucx-cuda-build.sh [DEST]     (default /tmp/ucx-cuda; takes ~5 min on 2 cores)
#
# Result: DEST/slim, a relocatable tree (~6 MiB: libraries, UCX modules, ucx_info,
# libcudart.so.13) to carry to the GPU machine and put first in LD_LIBRARY_PATH
# (DEST/slim/lib); the driver there provides libcuda.so.1 and libnvidia-ml.so.1.
# Check there: ucx_info -d | grep cuda (cuda_cpy, cuda_ipc).
set -eu
DEST=${1:-/tmp/ucx-cuda}
CUDA=${CUDA:-/usr/local/cuda}
W=$DEST/work
mkdir -p "$W"

echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
    >/etc/apt/sources.list.d/symcoll-deb-src-bookworm.list
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" \
    >/etc/apt/sources.list.d/symcoll-nonfree-bookworm.list
apt-get update -qq
command -v autoreconf >/dev/null || apt-get install -y -qq autoconf automake libtool

cd "$W"
test -d ucx-1.13.1 || apt-get source ucx
mkdir -p nvml && cd nvml
ls libnvidia-ml-dev_*.deb >/dev/null 2>&1 || apt-get download libnvidia-ml-dev libnvidia-ml1
for d in *.deb; do dpkg -x "$d" root; done
NV=$W/nvml/root/usr
NVLIB=$(dirname "$(find "$NV" -name 'libnvidia-ml.so*' | head -1)")

cd "$W/ucx-1.13.1"
test -x configure || ./autogen.sh
# CUDA 13 changed cuCtxCreate; only a test program calls it
if ! grep -q "CUDA_VERSION >= 13000" test/apps/test_cuda_hook.c; then
    sed -i 's|^\( *\)res = cuCtxCreate(&context, 0, device);|#if CUDA_VERSION >= 13000\n\1res = cuCtxCreate(\&context, NULL, 0, device);\n#else\n\1res = cuCtxCreate(\&context, 0, device);\n#endif|' \
        test/apps/test_cuda_hook.c
fi
# Debian's flags (debian/rules) plus CUDA
./configure --prefix="$DEST/install" --with-cuda="$CUDA" --without-java --without-go \
    --without-rocm --disable-doxygen-doc --enable-mt --with-verbs --disable-logging \
    --enable-devel-headers --enable-cma \
    CPPFLAGS="-I$NV/include" LDFLAGS="-L$NVLIB" >"$W/configure.log"
grep -E "UCT modules|UCM modules" "$W/configure.log" || true
make -j2 >"$W/make.log" 2>&1
make install >>"$W/make.log" 2>&1

# the slim tree to carry
rm -rf "$DEST/slim"
mkdir -p "$DEST/slim/bin" "$DEST/slim/lib/ucx"
cp -a "$DEST/install/lib"/lib*.so* "$DEST/slim/lib/"
cp -a "$DEST/install/lib/ucx"/*.so* "$DEST/slim/lib/ucx/"
cp -a "$DEST/install/bin/ucx_info" "$DEST/slim/bin/"
cp -L "$CUDA"/lib64/libcudart.so.13 "$DEST/slim/lib/" 2>/dev/null ||
    cp -L "$(find "$CUDA" -name 'libcudart.so.13' | head -1)" "$DEST/slim/lib/"
find "$DEST/slim" -type f -name '*.so*' -exec strip --strip-unneeded {} +
strip "$DEST/slim/bin/ucx_info"
du -sh "$DEST/slim"
ls "$DEST/slim/lib/ucx"
