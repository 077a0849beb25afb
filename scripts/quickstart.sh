#!/bin/sh
# The main job on a fresh machine: installs the dependencies, builds, and runs an
# all-reduce benchmark on 4 local ranks (host memory, 8 B to 64 MiB), printing its table.
#   scripts/quickstart.sh [CONFIGURE-ARGS...]      environment: BUILD_DIR, JOBS
set -eu

cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
cd "${BUILD_DIR:-build}"
echo "+ tools/symcoll_run -n 4 tools/symcoll_perf -m host -b 8 -e 64M"
exec tools/symcoll_run -n 4 --timeout 1800 tools/symcoll_perf -m host -b 8 -e 64M
