#!/bin/sh
# The test command: installs the dependencies, builds, and runs `make check` (every unit,
# multi-rank, tool and installed-package test; `make check` fails if no test passed).
# When a test fails, its Check failure lines and the end of its log are printed last,
# so that the end of the output says why.
#   scripts/check.sh [CONFIGURE-ARGS...]      environment: BUILD_DIR, JOBS
set -eu

cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
build=${BUILD_DIR:-build}
if make -C "$build" -j"${JOBS:-$(nproc 2>/dev/null || echo 2)}" check; then
    exit 0
fi
for trs in $(find "$build" -name '*.trs' | sort); do
    grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs" || continue
    log=${trs%.trs}.log
    echo "=== scripts/check.sh: $log: Check's failure lines"
    grep -E '^[^ ]+:[0-9]+:[FE]:' "$log" || echo "(none)"
    echo "=== scripts/check.sh: $log: its last 40 lines"
    tail -n 40 "$log"
done
exit 1
