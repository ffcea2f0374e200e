#!/bin/sh
# make bench: every benchmark, in one run (ratios are measured within a run;
# these machines are noisy). Usage: bench/run.sh BUILD_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
"$here/allreduce.sh" "$build"
"$here/nn.sh" "$build"
if [ -x "$here/train.sh" ]; then "$here/train.sh" "$build"; fi
