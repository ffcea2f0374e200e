#!/bin/sh
# nn benchmark: GFLOP/s of the training step's GEMMs (through the wrapper)
# vs direct cblas_sgemm on the same shapes, and the sgemm share of step
# time, for the default ResNet and BERT.  Usage: bench/nn.sh BUILD_DIR
set -e
B=${1:-.}
make -C "$B" -s bench/sgemm_bench bench/nn_train >/dev/null
export OPENBLAS_NUM_THREADS=1
"$B/bench/sgemm_bench" resnet 32 3 8
"$B/bench/sgemm_bench" resnet 32 2 20
"$B/bench/sgemm_bench" bert 32 5 2
