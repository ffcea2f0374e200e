#!/bin/sh
# One-chip training step, ftmesh vs PyTorch CPU, one thread each, same
# models, batch 32 and 256, in one run (bench/train_step.c vs
# bench/torch_train.py, median step time of STEPS after 2 warm-up steps).
# speedup = PyTorch time / ftmesh time (> 1: ftmesh is faster). Wall time is
# what the goal is about; CPU time (thread/process) is printed beside it
# because a shared machine inflates wall time unevenly.
# Usage: bench/vs_torch.sh BUILD_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
steps=${STEPS:-10}
py=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c "import torch" 2>/dev/null; then py=$p; break; fi
done
echo "# training step, one chip, one thread: ftmesh vs PyTorch (median of $steps steps)"
if [ -z "$py" ]; then
    echo "# skipped: python3 -c 'import torch' fails (Debian: apt-get install python3-torch)"
    exit 0
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
get() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
printf '%-7s %5s  %10s %10s %8s   %10s %10s %8s\n' model batch ftmesh_ms torch_ms speedup \
    ftm_cpu_ms torch_cpu speedup
for model in resnet bert; do
    for batch in 32 256; do
        f=$("$build/bench/train_step" "$model" "$batch" "$steps" 2)
        t=$("$py" "$here/torch_train.py" "$model" "$batch" "$steps" 2)
        fw=$(get wall_ms "$f"); tw=$(get wall_ms "$t"); fc=$(get cpu_ms "$f"); tc=$(get cpu_ms "$t")
        printf '%-7s %5s  %10s %10s %8s   %10s %10s %8s\n' "$model" "$batch" "$fw" "$tw" \
            "$(echo "$tw $fw" | awk '{printf "%.2fx", $1 / $2}')" "$fc" "$tc" \
            "$(echo "$tc $fc" | awk '{printf "%.2fx", $1 / $2}')"
    done
done
echo "# $(get framework "$t"); ftmesh sgemm: OpenBLAS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}"
