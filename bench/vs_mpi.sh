#!/bin/sh
# Allreduce, ftmesh (`ftmesh allreduce --json`, ring, median wall of ITERS)
# vs Open MPI's MPI_Allreduce (bench/mpi_allreduce.c, same P, bytes, float
# sum, median of ITERS) on the same machine in one run, and the memory floor
# (bench/membw). ratio = ftmesh busbw / MPI busbw.
# Usage: bench/vs_mpi.sh BUILD_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
iters=${ITERS:-10}
# glibc parses the digits only ("16G" would mean 16 bytes): 16 GiB spelled out.
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
get() { echo "$2" | tr ' ,{}' '\n\n\n\n' | sed -n "s/^\"*$1\"*[=:]//p"; }
echo "# memory floor, one thread, 64 MiB buffers (traffic = bytes read + written)"
"$build/bench/membw" 64 "$iters"
echo "# allreduce busbw (GB/s), float32 sum, median of $iters: ftmesh ring vs MPI_Allreduce"
mpi=
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
    echo "# MPI skipped: mpirun/mpicc not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
elif mpicc -O2 -o "$build/bench/mpi_allreduce" "$here/mpi_allreduce.c"; then
    mpi="$build/bench/mpi_allreduce"
    echo "# $(mpirun --version 2>/dev/null | head -n 1); mpirun --oversubscribe -np P, MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=16GiB"
fi
printf '%-4s %-10s %6s  %12s %12s %12s %8s\n' P mesh size ftmesh_busbw 2copy_busbw mpi_busbw ratio
for pm in 4:2x2 8:2x4 16:4x4; do
    P=${pm%%:*}; mesh=${pm#*:}
    for size in 1M 16M 64M; do
        j=$("$build/ftmesh" allreduce --mesh "$mesh" --torus --algo ring --size "$size" \
            --iters "$iters" --json)
        fb=$(get busbw_GBps "$j")
        [ "$(get wrong "$j")" = 0 ] || fb="$fb(WRONG)"
        j=$("$build/ftmesh" allreduce --mesh "$mesh" --torus --algo ring --size "$size" \
            --iters "$iters" --json --packets-only)
        f2=$(get busbw_GBps "$j")
        [ "$(get wrong "$j")" = 0 ] || f2="$f2(WRONG)"
        mb=- ratio=-
        if [ -n "$mpi" ]; then
            bytes=$(( ${size%M} * 1048576 ))
            m=$(mpirun --oversubscribe --allow-run-as-root -np "$P" "$mpi" "$bytes" "$iters")
            mb=$(get busbw_GBps "$m")
            [ "$(get wrong "$m")" = 0 ] || mb="$mb(WRONG)"
            ratio=$(echo "$fb $mb" | awk '{printf "%.2f", $1 / $2}')
        fi
        printf '%-4s %-10s %6s  %12s %12s %12s %8s\n' "$P" "$mesh torus" "$size" "$fb" "$f2" "$mb" "$ratio"
    done
done
