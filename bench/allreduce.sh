#!/bin/sh
# Allreduce wall-clock benchmark on the emulator (not the modeled time):
# each algorithm on healthy and faulty 8x8 meshes, one run, median of
# --iters. Usage: bench/allreduce.sh BUILD_DIR
set -e
ftmesh=${1:-.}/ftmesh
size=${SIZE:-16M}
echo "# allreduce wall clock, --size $size, median of 5 (one run; compare rows, not machines)"
for faults in "" "--fail 3,4" "--fail-host 2,2"; do
  for algo in ring bidir; do
    printf '%-16s %-6s ' "${faults:-healthy}" "$algo"
    "$ftmesh" allreduce --mesh 8x8 $faults --algo "$algo" --size "$size" --iters 5 --json |
      sed -e 's/.*"wall_s":\([^,]*\).*"busbw_GBps":\([^,]*\).*"max_link_bytes":\([^,]*\).*"wrong":\([0-9]*\).*/wall_s=\1 busbw_GBps=\2 max_link_bytes=\3 wrong=\4/'
  done
done
