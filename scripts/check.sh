#!/bin/sh
# The test command: installs the dependencies, builds, and runs `make check` (every unit,
# multi-rank, tool and installed-package test; `make check` fails if no test passed).
#   scripts/check.sh [CONFIGURE-ARGS...]      environment: BUILD_DIR, JOBS
set -eu

cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
make -C "${BUILD_DIR:-build}" -j"${JOBS:-$(nproc 2>/dev/null || echo 2)}" check
