#!/bin/sh
# End-to-end test of `ftmesh train`: exit codes (0 ok, 2 bad input), the
# --json step records and summary keys, --check in both reduce modes on a
# faulty mesh. FTMESH is the binary (set by make check).
set -u
FTMESH=${FTMESH:-./ftmesh}
fail=0
out=${TMPDIR:-/tmp}/train_cli.$$
trap 'rm -f "$out" "$out.err"' EXIT

expect() { # code description command...
    want=$1; what=$2; shift 2
    "$@" >"$out" 2>"$out.err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want: $*"; cat "$out.err"; fail=1
    fi
}

has_keys() { # file line-pattern keys...
    f=$1; pat=$2; shift 2
    line=$(grep "$pat" "$f" | tail -n 1)
    for k in "$@"; do
        case $line in *"\"$k\":"*) ;; *) echo "FAIL: key $k missing in: $line"; fail=1 ;; esac
    done
}

# one chip, as issue 4 runs it
expect 0 "one chip" "$FTMESH" train --model resnet --mesh 1x1 --steps 2 --batch 4 --seed 3

# faulty mesh, exact mode, --check, JSON
expect 0 "exact check json" "$FTMESH" train --model resnet --mesh 3x3 --fail 1,1 \
    --fail-link 0,0-0,1 --steps 2 --batch 8 --micro 1 --reduce exact --check --json
n=$(grep -c '"step":' "$out")
[ "$n" -eq 2 ] || { echo "FAIL: expected 2 step records, got $n"; fail=1; }
has_keys "$out" '"step":' step loss wall_s modeled_allreduce_s
has_keys "$out" '"summary":true' max_abs_diff max_rel_diff max_ulp bitwise_equal \
    loss_first loss_last steps chips wall_s check_pass replicas_equal first_diff \
    max_grad_rel_diff ref_loss
grep '"summary":true' "$out" | grep -q '"bitwise_equal":true' ||
    { echo "FAIL: exact mode not bitwise equal"; fail=1; }
grep '"summary":true' "$out" | grep -q '"chips":8' || { echo "FAIL: chips != 8"; fail=1; }

# float mode, BERT, --check passes its bound
expect 0 "bert float check" "$FTMESH" train --model bert --mesh 2x3 --fail 0,2 --algo bidir \
    --steps 2 --batch 6 --micro 1 --check --json
grep '"summary":true' "$out" | grep -q '"check_pass":true' ||
    { echo "FAIL: float check did not pass"; fail=1; }

# a bound no float run meets: exit 1 (only if the run differs at all)
expect_fail_tol() {
    "$FTMESH" train --mesh 3x3 --fail 1,1 --steps 2 --batch 9 --check --tol 1e-300 --json >"$out" 2>"$out.err"
    got=$?
    if grep -q '"max_grad_rel_diff":0,' "$out"; then want=0; else want=1; fi
    [ "$got" -eq "$want" ] || { echo "FAIL: --tol 1e-300: exit $got, expected $want"; fail=1; }
}
expect_fail_tol

# real-format data: a small corpus for BERT
corpus=${TMPDIR:-/tmp}/train_cli_corpus.$$
i=0
while [ $i -lt 40 ]; do
    echo "the quick brown fox jumps over the lazy dog number $i while the cat sleeps"
    i=$((i + 1))
done >"$corpus"
expect 0 "bert corpus" "$FTMESH" train --model bert --corpus "$corpus" --mesh 2x2 --steps 1 \
    --batch 4 --micro 1 --reduce exact --check --json
grep '"summary":true' "$out" | grep -q '"bitwise_equal":true' ||
    { echo "FAIL: corpus run not bitwise equal"; fail=1; }
rm -f "$corpus"

# CIFAR-10 binary format: 6 records of label 0 and black pixels
cifar=${TMPDIR:-/tmp}/train_cli_cifar.$$
mkdir -p "$cifar"
dd if=/dev/zero of="$cifar/data_batch_1.bin" bs=3073 count=6 2>/dev/null
expect 0 "resnet cifar" "$FTMESH" train --data "$cifar" --mesh 2x2 --fail 1,1 --steps 1 \
    --batch 6 --micro 1 --reduce exact --check --json
grep '"summary":true' "$out" | grep -q '"bitwise_equal":true' ||
    { echo "FAIL: cifar run not bitwise equal"; fail=1; }
rm -rf "$cifar"

# bad input: exit 2, one line naming the argument
for args in "--model gpt" "--steps 0" "--batch x" "--reduce fuzzy" "--algo nope" \
            "--depth 9" "--heads 3 --model bert" "--mesh 0x3" "--fail 9,9" "--micro -1" \
            "--lr abc" "--data /nonexistent/dir" "--model bert --corpus /nonexistent" \
            "--bogus" "--depth 14 --model bert"; do
    # shellcheck disable=SC2086
    expect 2 "bad input $args" "$FTMESH" train --steps 1 --batch 2 --mesh 2x2 $args
    lines=$(wc -l <"$out.err")
    [ "$lines" -eq 1 ] || { echo "FAIL: $args: $lines lines on stderr"; cat "$out.err"; fail=1; }
done
expect 0 "help" "$FTMESH" train --help
grep -q -- "--reduce" "$out" || { echo "FAIL: --help lacks --reduce"; fail=1; }

[ $fail -eq 0 ] && echo "train_cli: all passed"
exit $fail
