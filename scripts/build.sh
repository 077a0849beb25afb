#!/bin/bash
# Builds symcoll out of tree: ./autogen.sh when configure is missing or stale, configure
# in $BUILD_DIR (default ./build) with the given arguments, make. Shared by
# scripts/quickstart.sh, scripts/check.sh and .ci/run.
#   scripts/build.sh [CONFIGURE-ARGS...]      environment: BUILD_DIR, JOBS
set -eu

cd "$(dirname "$0")/.."
src=$(pwd)
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    ./autogen.sh
fi
mkdir -p "$build"
cd "$build"
# configure again only when asked for other arguments than last time
stamp=.symcoll-configure-args
if [ ! -f Makefile ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$*" ]; then
    "$src/configure" "$@"
    printf '%s' "$*" >"$stamp"
fi
make -j"$jobs"
