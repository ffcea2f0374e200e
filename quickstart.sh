#!/bin/sh
# ftmesh quick start for a fresh Debian/Ubuntu machine: installs the build
# dependencies (apt-get; needs root or sudo), builds in place, and runs an
# allreduce on an 8x8 mesh with a failed chip, showing the ring the router
# builds around the hole and the verified result.
#
#   ./quickstart.sh            install what is missing, build, run that allreduce
#   ./quickstart.sh --no-deps  skip the apt-get step
set -e
cd "$(dirname "$0")"

deps="build-essential autoconf automake libtool pkg-config libopenblas-dev check python3"
if [ "${1:-}" != "--no-deps" ]; then
    missing=""
    for p in $deps; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo=sudo
        echo "== installing:$missing"
        $sudo apt-get update
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $missing
    fi
fi

echo "== building"
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc 2>/dev/null || echo 2)"

echo "== the ring around a dead chip at (3,4) on an 8x8 mesh"
./ftmesh rings --mesh 8x8 --fail 3,4
echo
echo "== allreduce of 8 MiB per chip over that ring, verified on every chip"
./ftmesh allreduce --mesh 8x8 --fail 3,4
echo
echo "Next: './ftmesh demo' tells an allreduce step by step around a hole;"
echo "'make check' runs the whole test suite."
