#!/bin/sh
# make bench: every benchmark, in one run (ratios are measured within a run;
# these machines are noisy). Not part of make check.
#   1. one-chip training vs PyTorch (bench/vs_torch.sh)
#   2. memory floor and allreduce vs MPI_Allreduce (bench/vs_mpi.sh)
#   3. the emulator's own benchmarks: allreduce on 8x8, sgemm, training,
#      the allreduce against its lower bound (bench/bound.sh)
# BENCH=quick stops after 2. Usage: bench/run.sh BUILD_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
echo "# ftmesh bench $(cd "$here" && git describe --always --dirty 2>/dev/null || echo)" \
     "$(date -u +%FT%TZ); $(getconf _NPROCESSORS_ONLN) CPUs;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
"$here/vs_torch.sh" "$build"
"$here/vs_mpi.sh" "$build"
[ "${BENCH:-}" = quick ] && exit 0
"$here/allreduce.sh" "$build"
"$here/nn.sh" "$build"
"$here/train.sh" "$build"
"$here/bound.sh" "$build"
