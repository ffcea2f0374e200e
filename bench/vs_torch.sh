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
# PyTorch frees and re-allocates its activations every step; with glibc's
# defaults they come from mmap and every step page-faults them in again
# (2-4x slower in this VM). Keep freed memory in the heap, for both sides
# (ftmesh allocates once). glibc reads the number only: "16G" would be 16.
export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184
get() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
ratio() { echo "$1 $2" | awk '{printf "%.2fx", $1 / $2}'; }
# OpenBLAS kernels: the environment's OPENBLAS_CORETYPE (CI presets
# Haswell, AVX2), OpenBLAS's own pick for this CPU (what a user gets;
# PyTorch/oneDNN picks its ISA at run time too), and the kernels this CPU's
# instructions allow (SkylakeX with AVX-512, else Haswell with AVX2): on a
# CPU OpenBLAS does not know (a VM's generic "Intel Xeon Processor") its
# own pick falls back to Prescott's SSE3 kernels.
blas_env=${OPENBLAS_CORETYPE:-auto}
best=
grep -q avx2 /proc/cpuinfo 2>/dev/null && best=Haswell
grep -q avx512f /proc/cpuinfo 2>/dev/null && best=SkylakeX
[ "$best" = "$blas_env" ] && best=
printf '%-7s %5s %-8s %10s %10s %8s   %10s %10s %8s\n' model batch blas ftmesh_ms torch_ms \
    speedup ftm_cpu_ms torch_cpu speedup
for model in resnet bert; do
    for batch in 32 256; do
        t=$("$py" "$here/torch_train.py" "$model" "$batch" "$steps" 2)
        tw=$(get wall_ms "$t"); tc=$(get cpu_ms "$t")
        for blas in "$blas_env" auto $best; do
            [ "$blas" = auto ] && [ "$blas_env" = auto ] && [ -n "${done_auto:-}" ] && continue
            if [ "$blas" = auto ]; then
                f=$(env -u OPENBLAS_CORETYPE "$build/bench/train_step" "$model" "$batch" "$steps" 2)
                done_auto=1
            else
                f=$(OPENBLAS_CORETYPE=$blas "$build/bench/train_step" "$model" "$batch" "$steps" 2)
            fi
            fw=$(get wall_ms "$f"); fc=$(get cpu_ms "$f")
            printf '%-7s %5s %-8s %10s %10s %8s   %10s %10s %8s\n' "$model" "$batch" "$blas" \
                "$fw" "$tw" "$(ratio "$tw" "$fw")" "$fc" "$tc" "$(ratio "$tc" "$fc")"
        done
        done_auto=
    done
done
echo "# $(get framework "$t"), one thread; ftmesh: OpenBLAS sgemm, blas = OPENBLAS_CORETYPE"
