#!/bin/sh
# End-to-end test of `ftmesh train`: exit codes (0 ok, 2 bad input), the
# --json step records and summary keys, --check in both reduce modes on a
# faulty mesh. FTMESH is the binary (set by make check).
set -u
FTMESH=${FTMESH:-./ftmesh}
. "$(dirname "$0")/cli_lib.sh"

# an algorithm that runs another one's schedule says so (2d on a small mesh)
expect 0 "2d fallback" "$FTMESH" train --mesh 6x6 --fail 2,2 --algo 2d --steps 1 --batch 36 --json
json 'j["algo"] == "2d" and j["schedule"] == "ring" and "faster" in j["fallback"]'
expect 0 "2d fallback text" "$FTMESH" train --mesh 6x6 --fail 2,2 --algo 2d --steps 1 --batch 36
grep -qF "gradient schedule run: ring (the ring is faster" "$out" || { echo "FAIL: train text lacks the schedule run"; fail=1; }
expect 0 "own schedule" "$FTMESH" train --mesh 4x4 --torus --algo 2d --steps 1 --batch 16 --json
json 'j["schedule"] == "2d" and "fallback" not in j'
# the note on idle chips reaches --json users too (on stderr: stdout is JSON)
expect 0 "idle note json" "$FTMESH" train --mesh 4x4 --batch 3 --steps 1 --json
grep -q "warning: a batch of 3 examples for 16 chips, at most one each, so 13 chips idle" "$out.err" ||
    { echo "FAIL: train --json: no idle note on stderr"; fail=1; }
# --checkpoint-every past --steps does nothing: warned; a resume with nothing
# to do says --checkpoint's file is not written
expect 0 "every past steps" "$FTMESH" train --mesh 2x2 --steps 2 --batch 8 --checkpoint "$tmp/cx.ckpt" --checkpoint-every 5
grep -q "warning: --checkpoint-every 5 has no effect with --steps 2" "$out.err" ||
    { echo "FAIL: --checkpoint-every 5 with --steps 2: no warning"; fail=1; }
expect 0 "nothing to do" "$FTMESH" train --mesh 2x2 --steps 2 --batch 8 --resume "$tmp/cx.ckpt" --checkpoint "$tmp/rx.ckpt"
grep -q "^# nothing to do: .*(no --checkpoint, --svg or --trace file is written)" "$out" && [ ! -e "$tmp/rx.ckpt" ] ||
    { echo "FAIL: resume with nothing to do: $(cat "$out")"; fail=1; }
# the batch-norm sums' schedule is told likewise where it is not bn_algo's own
expect 0 "bn fallback" "$FTMESH" train --mesh 4x4 --bn-algo 2d --steps 1 --batch 16 --json
json 'j["bn_algo"] == "2d" and j["bn_schedule"] == "ring" and "faster" in j["bn_fallback"] and 0 < j["bn_fallback_widths"] <= j["bn_widths"]'
expect 0 "bn fallback text" "$FTMESH" train --mesh 4x4 --bn-algo 2d --steps 1 --batch 16
grep -q "batch-norm schedule run: ring for [0-9]* of [0-9]* widths (the ring is faster" "$out" || { echo "FAIL: train text lacks the batch-norm schedule run"; fail=1; }
expect 0 "bn own" "$FTMESH" train --mesh 4x4 --bn-algo ring --steps 1 --batch 16 --json
json '"bn_fallback" not in j and "bn_schedule" not in j and j["bn_asked"] == "ring"'
# float mode aligns micro-batches to the chips' shares: where that lowers
# --micro, the summary says from what and why (16 chips, 2 examples each)
expect 0 "micro lowered" "$FTMESH" train --mesh 4x4 --steps 1
grep -q "reduce float, micro 2 (of --micro 4: the largest divisor every chip's first example is a multiple of)" "$out" ||
    { echo "FAIL: train does not say why micro is 2"; fail=1; }
# --bn-algo auto: its pick, and that it was auto's
expect 0 "bn auto" "$FTMESH" train --mesh 2x2 --bn-algo auto --steps 1 --batch 8 --json
json 'j["bn_asked"] == "auto" and j["bn_algo"] != "auto"'
expect 0 "bn auto text" "$FTMESH" train --mesh 2x2 --bn-algo auto --steps 1 --batch 8
grep -q "(bn [a-z0-9-]*, auto's pick)" "$out" || { echo "FAIL: train text does not say the bn algorithm is auto's pick"; fail=1; }
# each recovery and repair says the schedule that runs from there: 2d falls
# back to the ring on the 15 chips a death leaves, and runs its own again
# once the chip is repaired
expect 0 "schedule after a death" "$FTMESH" train --mesh 4x4 --torus --algo 2d --steps 3 \
    --batch 16 --kill 1,1@1:allreduce --repair 1,1@2 --json
json '[(e["kind"], e["algo_after"], e["schedule_after"], "faster" in (e["fallback_after"] or "")) for e in j["events"]] == [("kill", "2d", "ring", True), ("repair", "2d", "2d", False)]'
expect 0 "schedule after a death, text" "$FTMESH" train --mesh 4x4 --torus --algo 2d --steps 3 \
    --batch 16 --kill 1,1@1:allreduce --repair 1,1@2
grep -A1 "chip (1,1) died" "$out" | grep -qF "gradient allreduce from here: the ring schedule (2d's fallback: the ring is faster" ||
    { echo "FAIL: train: the death line does not say the ring runs from there"; fail=1; }
grep -A1 "chip (1,1) repaired" "$out" | grep -qF "gradient allreduce from here: the 2d schedule" ||
    { echo "FAIL: train: the repair line does not say 2d runs again"; fail=1; }
# ... once per recovery, and not where the schedule stays the ring's
expect 0 "two deaths at once" "$FTMESH" train --mesh 4x4 --torus --algo 2d --steps 3 --batch 16 \
    --kill 1,1@1 --kill 2,2@1
[ "$(grep -c "from here" "$out")" = 1 ] || { echo "FAIL: train: the schedule's change told more than once"; fail=1; }
expect 0 "the ring stays" "$FTMESH" train --mesh 4x4 --steps 3 --batch 16 --kill 1,1@1
grep -q "from here" "$out" && { echo "FAIL: train: a schedule change told where the ring stays"; fail=1; }
# --fail-during R,C --fail-step S is the short form of --kill R,C@S:allreduce:
# the same header, events and summary line, numbers aside (the lines on
# CPU shares depend on the machine's load)
norm() { grep -E '^# (ftmesh train|step [0-9]|resnet on|loss )|^#   gradient allreduce from here' |
         sed 's/[0-9][0-9.e+-]*/N/g' | tr -s ' '; }
expect 0 "--fail-during" "$FTMESH" train --mesh 3x3 --steps 3 --fail-during 1,1
norm <"$out" >"$tmp/how.0"
expect 0 "its --kill" "$FTMESH" train --mesh 3x3 --steps 3 --kill 1,1@1:allreduce
norm <"$out" >"$tmp/how.1"
grep -q '^# step N (allreduce): chip (N,N) died' "$tmp/how.0" && cmp -s "$tmp/how.0" "$tmp/how.1" || { echo "FAIL: train --fail-during and its --kill differ:"; diff "$tmp/how.0" "$tmp/how.1"; fail=1; }
# --algo auto names its pick, and what was asked
expect 0 "auto" "$FTMESH" train --mesh 4x4 --steps 2 --algo auto --kill 1,1@1 --json
json 'j["asked"] == "auto" and j["algo"] != "auto" and j["algo"] in ("ring", "bidir", "tree", "trees", "2d", "2d-concurrent", "2d-lines")'
expect 0 "auto text" "$FTMESH" train --mesh 4x4 --steps 2 --algo auto
grep -q "algo [a-z0-9-]* (auto's pick for the last mesh)" "$out" || { echo "FAIL: train --algo auto: no pick said"; fail=1; }

# one chip
expect 0 "one chip" "$FTMESH" train --model resnet --mesh 1x1 --steps 2 --batch 4 --seed 3

# faulty mesh, exact mode, --check, JSON
expect 0 "exact check json" "$FTMESH" train --model resnet --mesh 3x3 --fail 1,1 \
    --fail-link 0,0-0,1 --steps 2 --batch 8 --micro 1 --reduce exact --check --json
json 'len(steps) == 2 and all(k in st for st in steps for k in ("step", "loss", "wall_s", "modeled_allreduce_s"))'
json 'j["summary"] and all(k in j for k in ("max_abs_diff", "max_rel_diff", "max_ulp", "bitwise_equal", "loss_first", "loss_last", "steps", "chips", "wall_s", "check_pass", "replicas_equal", "first_diff", "max_grad_rel_diff", "ref_loss", "diverged_step"))'
json 'j["bitwise_equal"] is True and j["chips"] == 8 and j["diverged_step"] is None'

# float mode, BERT, --check passes its bound
expect 0 "bert float check" "$FTMESH" train --model bert --mesh 2x3 --fail 0,2 --algo bidir \
    --steps 2 --batch 6 --micro 1 --check --json
json 'j["check_pass"] is True'
expect 0 "bert text" "$FTMESH" train --model bert --mesh 1x2 --steps 1 --batch 2 --micro 1
grep -qi "batch-norm\|(bn \|BN allreduce" "$out" && { echo "FAIL: BERT summary mentions batch norm"; cat "$out"; fail=1; }

# a bound no float run meets: exit 1 (only if the run differs at all)
expect_fail_tol() {
    "$FTMESH" train --mesh 3x3 --fail 1,1 --steps 2 --batch 9 --check --tol 1e-300 --json >"$out" 2>"$out.err"
    got=$?
    if python3 -c 'import json,sys; sys.exit(0 if json.loads(open(sys.argv[1]).readlines()[-1])["max_grad_rel_diff"] == 0 else 1)' "$out"; then want=0; else want=1; fi
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
json 'j["bitwise_equal"] is True'
loss_file=$(tail -n 1 "$out")
# the same corpus through a pipe and through /dev/stdin: read once, same run
cat "$corpus" | "$FTMESH" train --model bert --corpus - --mesh 2x2 --steps 1 \
    --batch 4 --micro 1 --reduce exact --check --json >"$out" 2>"$out.err" ||
    { echo "FAIL: corpus from a pipe"; cat "$out.err"; fail=1; }
python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(open(sys.argv[2]).readlines()[-1]); sys.exit(0 if a["loss_first"] == b["loss_first"] and a["loss_last"] == b["loss_last"] else 1)' "$loss_file" "$out" ||
    { echo "FAIL: corpus from a pipe trains differently"; fail=1; }
"$FTMESH" train --model bert --corpus /dev/stdin --mesh 1x1 --steps 1 --batch 2 --micro 1 \
    <"$corpus" >"$out" 2>"$out.err" || { echo "FAIL: corpus from /dev/stdin"; cat "$out.err"; fail=1; }
# a checkpoint is tied to its data: resumed with it, not without it or
# with another corpus
expect 0 "corpus checkpoint" "$FTMESH" train --model bert --corpus "$corpus" --mesh 2x2 --steps 1 \
    --batch 4 --checkpoint "$tmp/corpus.ck"
expect 0 "resume with the corpus" "$FTMESH" train --model bert --corpus "$corpus" --mesh 2x2 \
    --steps 2 --batch 4 --resume "$tmp/corpus.ck"
expect 2 "resume without the corpus" "$FTMESH" train --model bert --mesh 2x2 --steps 2 --batch 4 \
    --resume "$tmp/corpus.ck"
err_is "made for another dataset: a file's in the checkpoint, synthetic data in this run"
sed 's/the/a/' "$corpus" >"$tmp/other.txt"
expect 2 "resume with another corpus" "$FTMESH" train --model bert --corpus "$tmp/other.txt" \
    --mesh 2x2 --steps 2 --batch 4 --resume "$tmp/corpus.ck"
err_is "made for another dataset: a file's in the checkpoint, another file's in this run"
# corpus errors: exit 2, one line naming the option, the path and the reason
: >"$corpus"
expect 2 "empty corpus" "$FTMESH" train --model bert --corpus "$corpus" --mesh 1x1 --steps 1
err_is "--corpus $corpus: empty"
printf '... ,,, !!!\n' >"$corpus"
expect 2 "corpus without words" "$FTMESH" train --model bert --corpus "$corpus" --mesh 1x1 --steps 1
err_is "--corpus $corpus: no word in it"
expect 2 "endless corpus" "$FTMESH" train --model bert --corpus /dev/zero --mesh 1x1 --steps 1
err_is "--corpus /dev/zero: more than 64 MiB"
expect 2 "missing corpus" "$FTMESH" train --model bert --corpus /nonexistent/c.txt --mesh 1x1 --steps 1
err_is "--corpus /nonexistent/c.txt: No such file or directory"
rm -f "$corpus"

# CIFAR-10 binary format: 6 records of label 0 and black pixels
cifar=${TMPDIR:-/tmp}/train_cli_cifar.$$
mkdir -p "$cifar"
dd if=/dev/zero of="$cifar/data_batch_1.bin" bs=3073 count=6 2>/dev/null
expect 0 "resnet cifar" "$FTMESH" train --data "$cifar" --mesh 2x2 --fail 1,1 --steps 1 \
    --batch 6 --micro 1 --reduce exact --check --json
json 'j["bitwise_equal"] is True'
# CIFAR errors: exit 2, one line naming the option, the file and the reason
rm -f "$cifar/data_batch_1.bin"
expect 2 "cifar: no batch 1" "$FTMESH" train --data "$cifar" --mesh 1x1 --steps 1
err_is "--data $cifar: no data_batch_1.bin in it"
dd if=/dev/zero of="$cifar/data_batch_1.bin" bs=1 count=$((3 * 3073 + 3066)) 2>/dev/null
expect 2 "cifar: short record" "$FTMESH" train --data "$cifar" --mesh 1x1 --steps 1
err_is "CIFAR batch $cifar/data_batch_1.bin: record 3 is 3066 bytes, want 3073"
truncate -s $((3 * 3073)) "$cifar/data_batch_1.bin"
printf '\012' | dd of="$cifar/data_batch_1.bin" bs=1 seek=$((2 * 3073)) conv=notrunc 2>/dev/null
expect 2 "cifar: bad label" "$FTMESH" train --data "$cifar" --mesh 1x1 --steps 1
err_is "record 2: label 10 out of range 0..9"
: >"$cifar/data_batch_1.bin"
expect 2 "cifar: empty batch" "$FTMESH" train --data "$cifar" --mesh 1x1 --steps 1
err_is "CIFAR batch $cifar/data_batch_1.bin: empty"
rm -rf "$cifar"
expect 2 "cifar: no dir" "$FTMESH" train --data "$cifar" --mesh 1x1 --steps 1
err_is "--data $cifar: No such file or directory"

# divergence: the step, a hint, exit 1; the JSON still ends with a summary.
# (BERT: with exact batch-norm sums a ResNet at lr 100 stays finite, its
# loss in the hundreds; BERT's loss is not finite at step 13.)
expect 1 "diverges" "$FTMESH" train --model bert --mesh 1x1 --lr 100 --steps 16 --batch 8
err_is "training diverged: the loss is not finite at step"
grep -q -- "--lr" "$out.err" || { echo "FAIL: no --lr hint"; fail=1; }
expect 1 "diverges, json" "$FTMESH" train --model bert --mesh 1x1 --lr 100 --steps 16 --batch 8 --json
json 'j["summary"] and isinstance(j["diverged_step"], int) and j["loss_last"] is None and j["steps"] == j["diverged_step"] + 1'
grep -q "at step $(tail -n 1 "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["diverged_step"])');" "$out.err" ||
    { echo "FAIL: message and JSON name different steps"; fail=1; }

# an option without effect is a warning, not an error
expect 0 "tol without check" "$FTMESH" train --mesh 1x1 --steps 1 --batch 2 --tol 1e-3
grep -q "warning: --tol has no effect without --check" "$out.err" || { echo "FAIL: no --tol warning"; fail=1; }
expect 0 "singular wording" "$FTMESH" train --mesh 1x2 --steps 1 --batch 8 --micro 8 --reduce exact
grep -q "1 step," "$out" && grep -q "1 micro-batch of 8 examples" "$out" && grep -q "2 healthy chips" "$out" ||
    { echo "FAIL: wording"; cat "$out"; fail=1; }

# bad input: exit 2, one line naming the argument
for args in "--model gpt" "--steps 0" "--batch x" "--reduce fuzzy" "--algo nope" \
            "--depth 9" "--heads 3 --model bert" "--mesh 0x3" "--fail 9,9" "--micro -1" \
            "--lr abc" "--data /nonexistent/dir" "--model bert --corpus /nonexistent" \
            "--bogus" "--depth 14 --model bert" "--steps=0" "--check=1" "--mode bert"; do
    # shellcheck disable=SC2086
    expect 2 "bad input $args" "$FTMESH" train --steps 1 --batch 2 --mesh 2x2 $args
    lines=$(wc -l <"$out.err")
    [ "$lines" -eq 1 ] || { echo "FAIL: $args: $lines lines on stderr"; cat "$out.err"; fail=1; }
done
expect 0 "help" "$FTMESH" train --help
grep -q -- "--reduce" "$out" || { echo "FAIL: --help lacks --reduce"; fail=1; }

cli_done
