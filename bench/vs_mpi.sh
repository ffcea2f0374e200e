#!/bin/sh
# Allreduce, ftmesh (`ftmesh allreduce --json`, ring, median wall of ITERS)
# vs Open MPI's MPI_Allreduce (bench/mpi_allreduce.c, same P, bytes, float
# sum, median of ITERS) on the same machine in one run, and the memory floor
# (bench/membw). ratio = ftmesh busbw / MPI busbw. 2copy = ftmesh with
# --packets-only (every link byte copied twice), what single copy saves.
# floor% = the memory traffic of ftmesh's ring against the one-thread
# a[i] += b[i] floor: with single copy a reduce-scatter step reads the
# sender's and its own chunk and writes its own (3 bytes per byte), an
# allgather step reads and writes (2), so the P chips move 2.5 * P * busbw
# bytes per second.
# Usage: bench/vs_mpi.sh BUILD_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
iters=${ITERS:-10}
# glibc parses the digits only ("16G" would mean 16 bytes): 16 GiB spelled out.
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
get() { echo "$2" | tr ' ,{}' '\n\n\n\n' | sed -n "s/^\"*$1\"*[=:]//p"; }
echo "# memory floor, one thread, 64 MiB buffers (traffic = bytes read + written)"
mb_out=$("$build/bench/membw" 64 "$iters")
echo "$mb_out"
floor=$(get add_traffic_GBps "$mb_out")
echo "# allreduce busbw (GB/s), float32 sum, median of $iters: ftmesh ring vs MPI_Allreduce"
mpi=
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
    echo "# MPI skipped: mpirun/mpicc not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
elif mpicc -O2 -o "$build/bench/mpi_allreduce" "$here/mpi_allreduce.c"; then
    mpi="$build/bench/mpi_allreduce"
    echo "# $(mpirun --version 2>/dev/null | head -n 1); mpirun --oversubscribe -np P, MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=16GiB"
fi
printf '%-4s %-10s %6s  %12s %12s %12s %8s %7s\n' P mesh size ftmesh_busbw 2copy_busbw mpi_busbw ratio floor%
for pm in 4:2x2 8:2x4 16:4x4; do
    P=${pm%%:*}; mesh=${pm#*:}
    # a side of 2 has no wrap link: 2x2 is a mesh, 2x4 wraps its rows only
    torus=--torus kind=torus
    [ "$mesh" = 2x2 ] && torus= kind=mesh
    for size in 1M 16M 64M; do
        j=$("$build/ftmesh" allreduce --mesh "$mesh" $torus --algo ring --size "$size" \
            --iters "$iters" --json)
        fb=$(get busbw_GBps "$j")
        [ "$(get wrong "$j")" = 0 ] || fb="$fb(WRONG)"
        j=$("$build/ftmesh" allreduce --mesh "$mesh" $torus --algo ring --size "$size" \
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
        fl=$(echo "$P $fb $floor" | awk '{printf "%.0f", 250 * $1 * $2 / $3}')
        printf '%-4s %-10s %6s  %12s %12s %12s %8s %7s\n' "$P" "$mesh $kind" "$size" "$fb" "$f2" "$mb" "$ratio" "$fl"
    done
done
