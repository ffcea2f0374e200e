#!/bin/sh
# Builds the libFuzzer targets (fault-script parser, checkpoint decoder)
# with clang, ASan and UBSan, and runs each for SECONDS (default 60) from
# the seeds in tests/fuzz/seeds. Built straight from the sources, so it
# needs no configure. Without clang it says so and exits 0, unless
# FUZZ_REQUIRED=1 (CI), then 1. A crash or an invariant failure exits 1
# and leaves the input in $FUZZ_OUT (default ./build-fuzz).
#   usage: tests/fuzz/run.sh [SECONDS]
set -eu
secs=${1:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$PWD/build-fuzz}
cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found (apt-get install clang libclang-rt-14-dev); skipped"
    [ "${FUZZ_REQUIRED:-0}" = 1 ] && exit 1
    exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: the fuzzers run inside it
flags="-g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -I$top/include -I$top/src
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
core="$top/src/core/error.c $top/src/core/mesh.c $top/src/core/faults.c $top/src/core/faults_check.c $top/src/core/faults_random.c"
# shellcheck disable=SC2086
"$cc" $flags -o "$out/fuzz_faults" "$top/tests/fuzz/fuzz_faults.c" $core
# shellcheck disable=SC2086
"$cc" $flags -o "$out/fuzz_checkpoint" "$top/tests/fuzz/fuzz_checkpoint.c" \
    "$top/src/train/checkpoint.c" "$top/src/core/error.c" "$top/src/core/file.c"
# shellcheck disable=SC2086
"$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -I"$top/include" -I"$top/src" -o "$out/ckpt_seed" \
    "$top/tests/fuzz/ckpt_seed.c" "$top/src/train/checkpoint.c" "$top/src/core/error.c" \
    "$top/src/core/file.c"
mkdir -p "$out/seeds-checkpoint" "$out/corpus-faults" "$out/corpus-checkpoint"
"$out/ckpt_seed" "$out/seeds-checkpoint"

for t in faults checkpoint; do
    seeds=$top/tests/fuzz/seeds/$t
    [ "$t" = checkpoint ] && seeds=$out/seeds-checkpoint
    echo "fuzz: $t for ${secs}s"
    (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./fuzz_$t" -max_total_time="$secs" \
        -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        "corpus-$t" "$seeds" 2>"$t.log") || {
        echo "fuzz: $t FAILED; the end of $out/$t.log:"
        tail -40 "$out/$t.log"
        exit 1
    }
    grep -E "^stat::number_of_executed_units|^Done" "$out/$t.log" || true
done
echo "fuzz: no crash"
