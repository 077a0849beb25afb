#!/bin/sh
# Installs the Debian/Ubuntu packages symcoll needs to build, test and benchmark
# (used by scripts/quickstart.sh, scripts/check.sh and .ci/run). Does nothing when they
# are all installed already. pandoc renders the man pages, cmake builds the test of the
# CMake package. CUDA is not installed here: configure uses /usr/local/cuda when it is
# present.
set -eu

PACKAGES="build-essential autoconf automake libtool pkg-config libucx-dev check \
openmpi-bin libopenmpi-dev libhwloc-dev libpmix-dev iproute2 pandoc cmake gfortran \
python3-matplotlib"

missing=
for p in $PACKAGES; do
    if ! dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages installed:" $PACKAGES
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    sudo=
elif command -v sudo >/dev/null 2>&1; then
    sudo=sudo
else
    echo "install-deps: need root (or sudo) to install:$missing" >&2
    exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
