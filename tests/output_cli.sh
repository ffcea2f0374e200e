#!/bin/sh
# End-to-end test of what ftmesh writes and when: output files (--svg,
# --html, --trace) are written whole or not at all (a refused, failed or
# interrupted run leaves the old file as it was and no temporary file);
# every output path is checked before any work; SIGTERM and SIGINT; train
# checks --fail-step, --resume and --checkpoint before printing anything;
# a finished checkpoint; sizes past the limit; --trace's size bound.
# FTMESH is the binary.
set -u
FTMESH=${FTMESH:-./ftmesh}
TO="timeout 120"
. "$(dirname "$0")/cli_lib.sh"
no_stdout() { [ ! -s "$out" ] || { echo "FAIL: $1: printed on stdout:"; head -5 "$out"; fail=1; }; }
# same FILE COPY: FILE is unchanged (equal to COPY)
same() { cmp -s "$1" "$2" || { echo "FAIL: $3: $1 changed"; fail=1; }; }
no_tmp() {
    if ls "$tmp"/d | grep -q tmp-; then echo "FAIL: $1: temporary files left:"; ls "$tmp"/d; fail=1; fi
}
mkdir "$tmp/d"
d=$tmp/d

# ---- a refused run creates or changes no file
expect 0 "demo page" "$FTMESH" demo --html "$d/lesson.html"
cp "$d/lesson.html" "$tmp/lesson.copy"
expect 2 "demo, bad trace path" "$FTMESH" demo --html "$d/lesson.html" --trace /nonexistent/t.json
err_is "--trace /nonexistent/t.json"
no_stdout "demo refused"
same "$d/lesson.html" "$tmp/lesson.copy" "demo refused"
# a mesh too wide for the terminal: the text names the --svg file given
expect 0 "wide rings with svg" "$FTMESH" rings --mesh 64x64 --algo tree --size 1M --svg "$d/wide.svg"
grep -q "^(64 columns do not fit in 80: the picture is in $d/wide.svg)" "$out" ||
    { echo "FAIL: wide rings: no pointer to the --svg file"; cat "$out"; fail=1; }
expect 0 "wide ring with svg" "$FTMESH" rings --mesh 64x64 --fail 3,3 --svg "$d/wide2.svg"
grep -q "^(64 columns do not fit in 80: the picture is in $d/wide2.svg)" "$out" &&
    grep -q "^detour (2,1) -> (3,2): 2 hops via E,S" "$out" && ! grep -q "with --svg FILE" "$out" ||
    { echo "FAIL: wide ring: the text around the picture"; cat "$out"; fail=1; }
# the median of an even count of iterations is the mean of the middle two
expect 0 "median of two" "$FTMESH" allreduce --mesh 4x4 --size 64K --iters 2 --json
json 'abs(j["wall_s"] - (j["wall_min_s"] + j["wall_max_s"]) / 2) <= 1e-8 * j["wall_max_s"]'
expect 0 "allreduce svg" "$FTMESH" allreduce --mesh 4x4 --size 4K --iters 1 --svg "$d/heat.svg"
cp "$d/heat.svg" "$tmp/heat.copy"
expect 2 "allreduce, bad trace path" "$FTMESH" allreduce --mesh 4x4 --size 4K --svg "$d/heat.svg" \
    --trace /no/x.json
err_is "--trace /no/x.json" "cannot create"
same "$d/heat.svg" "$tmp/heat.copy" "allreduce refused"
expect 2 "refused after the paths" "$FTMESH" allreduce --mesh 4x4 --svg "$d/new.svg" --trace "$d/new.json" \
    --model-only
[ ! -e "$d/new.svg" ] && [ ! -e "$d/new.json" ] || { echo "FAIL: a refused run created a file"; fail=1; }
expect 2 "a directory" "$FTMESH" allreduce --mesh 4x4 --svg "$d"
err_is "--svg $d" "directory"
expect 2 "rings, bad svg path" "$FTMESH" rings --mesh 4x4 --svg /nonexistent/r.svg
err_is "--svg /nonexistent/r.svg"
no_tmp "refusals"

# ---- interrupted: the old file stays, no temporary file; SIGTERM 143
echo old >"$d/t.json"
cp "$d/t.json" "$tmp/t.copy"
ar_long="allreduce --mesh 8x8 --size 8M --iters 100000 --trace $d/t.json --trace-iters 1 --svg $d/s.svg"
# shellcheck disable=SC2086
$TO "$FTMESH" $ar_long >"$out" 2>"$out.err" &
pid=$!
i=0
while [ $i -lt 200 ] && ! ls "$d" | grep -q "t.json.tmp-"; do sleep 0.05; i=$((i + 1)); done
sleep 0.5
kill -TERM $pid
wait $pid
got=$?
[ "$got" -eq 143 ] || { echo "FAIL: allreduce SIGTERM: exit $got, expected 143"; cat "$out.err"; fail=1; }
same "$d/t.json" "$tmp/t.copy" "allreduce SIGTERM"
[ ! -e "$d/s.svg" ] || { echo "FAIL: allreduce SIGTERM: s.svg written"; fail=1; }
no_tmp "allreduce SIGTERM"
# SIGINT: a background job of a script starts with SIGINT ignored (and a
# signal ignored at start stays ignored); env --default-signal resets it
if env --default-signal=INT true 2>/dev/null; then
    # shellcheck disable=SC2086
    $TO env --default-signal=INT "$FTMESH" $ar_long >"$out" 2>"$out.err" &
    pid=$!
    i=0
    while [ $i -lt 200 ] && ! ls "$d" | grep -q "t.json.tmp-"; do sleep 0.05; i=$((i + 1)); done
    sleep 0.5
    pkill -INT -P $pid ftmesh 2>/dev/null || pkill -INT -P $pid 2>/dev/null
    wait $pid
    got=$?
    [ "$got" -eq 130 ] || { echo "FAIL: allreduce SIGINT: exit $got, expected 130"; cat "$out.err"; fail=1; }
    same "$d/t.json" "$tmp/t.copy" "allreduce SIGINT"
    no_tmp "allreduce SIGINT"
fi

# ---- train: everything checked before anything is printed
T="$FTMESH train --mesh 3x3 --batch 9 --reduce exact"
expect 2 "fail-step past the run" $T --steps 2 --fail-during 1,1 --fail-step 5
err_is "--fail-step 5" "0..1"
no_stdout "fail-step"
if grep -q "@" "$out.err"; then echo "FAIL: fail-step names the --kill form"; fail=1; fi
expect 2 "missing resume file" $T --steps 2 --resume "$tmp/none.ckpt"
err_is "--resume $tmp/none.ckpt"
no_stdout "resume"
expect 2 "checkpoint dir" $T --steps 2 --checkpoint /nonexistent/dir/c.ckpt
err_is "--checkpoint /nonexistent/dir/c.ckpt"
no_stdout "checkpoint"
ck=$d/run.ckpt
expect 0 "checkpoint" $T --steps 2 --checkpoint "$ck"
expect 0 "finished checkpoint" $T --steps 2 --resume "$ck"
grep -q "nothing to do: the checkpoint is at step 2" "$out" || { echo "FAIL: finished checkpoint:"; cat "$out"; fail=1; }
if grep -q "nan\|inf" "$out"; then echo "FAIL: finished checkpoint prints nan/inf"; fail=1; fi
expect 0 "resumed" $T --steps 3 --resume "$ck"
grep -q "^# resumed from $ck at step 2" "$out" || { echo "FAIL: no resumed-from line"; fail=1; }
expect 2 "fail-step before the resume step" $T --steps 4 --resume "$ck" --fail-during 1,1 --fail-step 1
err_is "--fail-step 1" "2..3"
expect 2 "other reduce mode" "$FTMESH" train --mesh 3x3 --batch 9 --steps 3 --resume "$ck"
err_is "exact in the checkpoint, float in this run"

# SIGTERM: train finishes the step, writes the checkpoint, exits 143
stop_at TERM "^ *1 " "$out" "$FTMESH" train --mesh 2x2 --steps 100000 --batch 8 \
    --checkpoint "$d/term.ckpt" --check
[ "$got" -eq 143 ] || { echo "FAIL: train SIGTERM: exit $got, expected 143"; cat "$out.err"; fail=1; }
grep -q "interrupted: stopped after step .*; --check not run" "$out" || { echo "FAIL: train SIGTERM: no message (or none on --check)"; fail=1; }
[ -s "$d/term.ckpt" ] || { echo "FAIL: train SIGTERM: no checkpoint"; fail=1; }
no_tmp "train SIGTERM"

# a write that fails says why (a full device; a file past the size limit,
# where nothing is left behind)
if [ -w /dev/full ]; then
    expect 1 "svg on a full device" "$FTMESH" allreduce --mesh 4x4 --size 64K --iters 1 --svg /dev/full
    err_is "--svg /dev/full: cannot write it: No space left on device"
fi
expect 1 "svg past the size limit" sh -c "ulimit -f 1; exec \"\$0\" allreduce --mesh 16x16 --size 64K --iters 1 --svg \"\$1\" >/dev/null" "$FTMESH" "$d/big.svg"
err_is "--svg $d/big.svg: cannot write it: File too large"
[ -e "$d/big.svg" ] && { echo "FAIL: svg past the size limit: a file left"; fail=1; }
no_tmp "svg past the size limit"

# ---- sizes, warnings
expect 2 "size past the limit" "$FTMESH" allreduce --mesh 2x2 --model-only --size 1024G
err_is "--size 1024G" "1099511627772"
expect 0 "size at the limit" "$FTMESH" allreduce --mesh 2x2 --model-only --size 1099511627772
expect 0 "random-faults 0" "$FTMESH" allreduce --mesh 3x3 --size 4K --iters 1 --random-faults 0 --seed 5
[ ! -s "$out.err" ] || { echo "FAIL: --random-faults 0 --seed warns:"; cat "$out.err"; fail=1; }

# ---- --trace keeps to a bound: --trace-iters, a note, refusal of a huge one
expect 0 "trace-iters" "$FTMESH" allreduce --mesh 4x4 --size 16K --iters 5 --trace "$d/ti.json" --trace-iters 2
grep -q "^# trace: the first 2 of 5 iterations" "$out" || { echo "FAIL: no trace note"; cat "$out"; fail=1; }
expect 0 "trace-iters json" "$FTMESH" allreduce --mesh 4x4 --size 16K --iters 5 --trace "$d/tj.json" \
    --trace-iters 2 --json
err_is "warning: --trace records the first 2 of 5 iterations"
python3 - "$d/ti.json" <<'EOF' || { echo "FAIL: trace-iters trace"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
o = d["otherData"]
assert o["iterations"] == 5 and o["iterations_traced"] == 2 and "note" in o, o
ex = {e["args"]["exec"] for e in d["traceEvents"] if e["ph"] == "X" and "exec" in e["args"]}
assert ex == {0, 1}, ex
EOF
expect 2 "huge trace" "$FTMESH" allreduce --mesh 32x32 --size 64K --iters 2 --trace "$d/huge.json"
err_is "--trace" "--trace-iters 1"
[ ! -e "$d/huge.json" ] || { echo "FAIL: refused trace written"; fail=1; }
no_tmp "trace bound"

# ---- a run records its static faults; given back as flags they reproduce it
A="allreduce --mesh 6x6 --size 4K --iters 1 --model-only"
# shellcheck disable=SC2086
expect 0 "random faults" "$FTMESH" $A --random-faults 2 --seed 3 --fail-host 2,2 --fail-link 4,4\>4,5
# the whole line after "# faults:" pastes (the note on the draw is a comment)
flags=$(sed -n 's/^# faults:\(.*\)$/\1/p' "$out")
echo "$flags" | grep -q -- "  # 2 drawn by --random-faults from seed 3$" || { echo "FAIL: the draw's note: $flags"; fail=1; }
echo "$flags" | grep -q -- "--fail-link '4,4>4,5'" || { echo "FAIL: no faults line: $flags"; cat "$out"; fail=1; }
# shellcheck disable=SC2086
expect 0 "faults json" "$FTMESH" $A --random-faults 2 --seed 3 --fail-host 2,2 --fail-link 4,4\>4,5 --json
cp "$out" "$tmp/f1.json"
# pasted into a shell as printed (a one-way link is quoted)
eval "set -- $flags"
# shellcheck disable=SC2086
expect 0 "faults given back" "$FTMESH" $A "$@" --json
python3 - "$tmp/f1.json" "$out" <<'EOF2' || { echo "FAIL: the faults record does not reproduce the run"; fail=1; }
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["faults"] == b["faults"] and a["modeled_s"] == b["modeled_s"] and a["chips"] == b["chips"], (a, b)
assert len(a["faults"]["chips"]) == 2 and a["faults"]["hosts"] == [[2, 2]], a["faults"]
assert a["faults"]["links_one_way"] == [[[4, 4], [4, 5]]], a["faults"]
EOF2

# --fault-seed draws the random faults apart from --seed (default: --seed)
fs() { "$FTMESH" allreduce --mesh 6x6 --size 4K --model-only --random-faults 3 "$@" | grep "^# faults:" | sed 's/ (.*//'; }
[ "$(fs --seed 5)" = "$(fs --seed 7 --fault-seed 5)" ] || { echo "FAIL: --fault-seed 5 differs from --seed 5"; fail=1; }
[ "$(fs --seed 5)" != "$(fs --seed 5 --fault-seed 6)" ] || { echo "FAIL: --fault-seed has no effect"; fail=1; }
expect 0 "train faults line" "$FTMESH" train --mesh 3x3 --steps 1 --batch 9 --fail 1,1
grep -q "^# faults: --fail 1,1$" "$out" || { echo "FAIL: train header lacks the faults"; fail=1; }

# --random-kills: events in time order
expect 0 "random kills" "$FTMESH" allreduce --mesh 6x6 --size 16K --iters 3 --random-kills 3 --seed 4 --json
python3 -c "
import json, sys
w = [e['step'] for e in json.load(open(sys.argv[1]))['events']]
assert len(w) == 3 and w == sorted(w), w
" "$out" || { echo "FAIL: --random-kills events out of time order"; cat "$out"; fail=1; }

# ---- reports name the schedule that ran
expect 0 "fallback" "$FTMESH" allreduce --mesh 8x8 --torus --fail-host 2,2 --algo 2d --size 64K --model-only --json
python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
assert j['algo'] == '2d' and j['schedule'] == 'ring' and j['fallback'], j
" "$out" || { echo "FAIL: allreduce --json: no schedule/fallback"; cat "$out"; fail=1; }
expect 0 "fallback text" "$FTMESH" allreduce --mesh 8x8 --torus --fail-host 2,2 --algo 2d --size 64K --model-only
grep -q "^#   schedule run: ring (" "$out" || { echo "FAIL: text header lacks the schedule"; fail=1; }
expect 0 "own schedule" "$FTMESH" allreduce --mesh 8x8 --torus --algo 2d --size 64K --model-only --json
python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
assert j['schedule'] == '2d' and 'fallback' not in j, j
" "$out" || { echo "FAIL: allreduce --json: own schedule"; cat "$out"; fail=1; }

# /dev/stdout where stdout is redirected to a file: written through the
# stream, after what the file held and beside the run's own text (a
# temporary file renamed over it wiped both); a checkpoint cannot go there
echo KEPT >"$d/log"
expect 0 "svg to a redirected stdout" sh -c 'exec "$0" rings --mesh 2x2 --svg /dev/stdout >>"$1"' "$FTMESH" "$d/log"
grep -q KEPT "$d/log" && grep -q "ring of" "$d/log" && grep -q "<svg" "$d/log" ||
    { echo "FAIL: --svg /dev/stdout >> file"; cat "$d/log"; fail=1; }
echo KEPT >"$d/log"
expect 2 "checkpoint to a redirected stdout" sh -c 'exec "$0" train --mesh 2x2 --steps 1 --checkpoint /dev/stdout >>"$1"' "$FTMESH" "$d/log"
err_is "--checkpoint /dev/stdout: is this run's standard output"
[ "$(cat "$d/log")" = KEPT ] || { echo "FAIL: --checkpoint /dev/stdout changed the file"; fail=1; }
no_tmp "stdout redirected"
# a pipe closed early (| head; here a reader that reads nothing, gone
# before the model is built): no death by SIGPIPE; the run ends, train
# writes its checkpoint, and exits 141 (as a death by SIGPIPE shows)
# without a word on stderr
rc=$( { "$FTMESH" train --mesh 2x2 --steps 3 --checkpoint "$d/pipe.ckpt" --json 2>"$d/err"; echo $? >"$d/rc"; } | true; cat "$d/rc")
[ "$rc" = 141 ] && [ -s "$d/pipe.ckpt" ] && [ ! -s "$d/err" ] ||
    { echo "FAIL: train | true: exit $rc, $(cat "$d/err")"; fail=1; }
# an output written to a pipe through /dev/stdout, whose reader stops
# early: the same quiet 141
rc=$( { "$FTMESH" demo --html /dev/stdout 2>"$d/err"; echo $? >"$d/rc"; } | head -c 1 >/dev/null; cat "$d/rc")
[ "$rc" = 141 ] && [ ! -s "$d/err" ] ||
    { echo "FAIL: demo --html /dev/stdout | head -c 1: exit $rc, $(cat "$d/err")"; fail=1; }
# a reader that stops after one line of a long lesson
rc=$( { "$FTMESH" demo --mesh 8x8 2>"$d/err"; echo $? >"$d/rc"; } | head -n 1 >/dev/null; cat "$d/rc")
[ "$rc" = 141 ] && [ ! -s "$d/err" ] ||
    { echo "FAIL: demo | head -n 1: exit $rc, $(cat "$d/err")"; fail=1; }
# with --json, standard output carries the JSON: an output sent there too
# (a file or a pipe) is refused, so the JSON stays valid
echo KEPT >"$d/log"
expect 2 "svg into --json's file" sh -c 'exec "$0" rings --mesh 2x2 --json --svg /dev/stdout >>"$1"' "$FTMESH" "$d/log"
err_is "--svg /dev/stdout: is standard output, which carries --json's output"
[ "$(cat "$d/log")" = KEPT ] || { echo "FAIL: rings --json --svg /dev/stdout wrote the file"; fail=1; }
for c in "allreduce --mesh 2x2 --size 4K --iters 1 --trace" "train --mesh 2x2 --steps 1 --svg"; do
    # shellcheck disable=SC2086 # the command's words
    "$FTMESH" $c /dev/stdout --json 2>"$d/err" | cat >"$d/out"
    grep -q "is standard output, which carries --json's output" "$d/err" && [ ! -s "$d/out" ] ||
        { echo "FAIL: $c /dev/stdout --json into a pipe: $(cat "$d/err")"; fail=1; }
done
# a file name of 250 characters: the temporary name beside it still fits
long=$(printf 'a%.0s' $(seq 250))
expect 0 "a long file name" "$FTMESH" rings --mesh 2x2 --svg "$d/$long"
[ -s "$d/$long" ] || { echo "FAIL: --svg with a 250-character name not written"; fail=1; }
expect 0 "a long checkpoint name" "$FTMESH" train --mesh 2x2 --steps 1 --checkpoint "$d/c$long"
[ -s "$d/c$long" ] || { echo "FAIL: --checkpoint with a 251-character name not written"; fail=1; }
no_tmp "long names"

# ---- no output replaces a file an input option reads (but --checkpoint
# may replace the checkpoint its run resumed from)
printf 'kill 1,1@1\n' >"$d/in.txt"
cp "$d/in.txt" "$tmp/in.copy"
expect 2 "--faults file as --svg" "$FTMESH" allreduce --mesh 4x4 --size 4K --iters 2 --faults "$d/in.txt" --svg "$d/in.txt"
err_is "--svg $d/in.txt: --faults reads that file"
expect 2 "--faults file as --checkpoint" "$FTMESH" train --mesh 2x2 --steps 2 --faults "$d/in.txt" --checkpoint "$d/in.txt"
err_is "--checkpoint $d/in.txt: --faults reads that file"
mkdir "$d/cif"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"".join(bytes([r % 10]) + bytes((r * 31 + i) % 256 for i in range(3072)) for r in range(16)))' "$d/cif/data_batch_1.bin"
cp "$d/cif/data_batch_1.bin" "$tmp/cif.copy"
expect 0 "--data read" "$FTMESH" train --mesh 2x2 --steps 1 --batch 32 --data "$d/cif"
grep -q "^# data: --data $d/cif, 16 images (fewer than a step's batch of 32: a step repeats some)$" "$out" ||
    { echo "FAIL: --data: the header does not say what was read: $(head -3 "$out")"; fail=1; }
expect 0 "--data in JSON" "$FTMESH" train --mesh 2x2 --steps 1 --batch 32 --data "$d/cif" --json
tail -n 1 "$out" | python3 -c 'import json,sys; assert json.load(sys.stdin)["data"] == sys.argv[1]' "$d/cif" ||
    { echo "FAIL: --data: the JSON summary does not name it"; fail=1; }
expect 2 "--data batch as --svg" "$FTMESH" train --mesh 2x2 --steps 1 --batch 8 --data "$d/cif" --svg "$d/cif/data_batch_1.bin"
err_is "--svg $d/cif/data_batch_1.bin: --data reads that file"
same "$d/cif/data_batch_1.bin" "$tmp/cif.copy" "--data named by --svg"
same "$d/in.txt" "$tmp/in.copy" "an input named by an output"
expect 0 "a checkpoint to resume" "$FTMESH" train --mesh 2x2 --steps 1 --checkpoint "$d/in.ck"
cp "$d/in.ck" "$tmp/in.ck.copy"
expect 2 "--resume file as --trace" "$FTMESH" train --mesh 2x2 --steps 2 --resume "$d/in.ck" --trace "$d/in.ck"
err_is "--trace $d/in.ck: --resume reads that file"
same "$d/in.ck" "$tmp/in.ck.copy" "--resume named by --trace"
expect 0 "--checkpoint over --resume" "$FTMESH" train --mesh 2x2 --steps 2 --resume "$d/in.ck" --checkpoint "$d/in.ck"
no_tmp "inputs"

# ---- an output file gets the umask's mode, a replaced one keeps its own
(umask 077 && "$FTMESH" rings --mesh 4x4 --svg "$d/um.svg" >/dev/null &&
    "$FTMESH" train --mesh 2x2 --steps 1 --checkpoint "$d/um.ck" >/dev/null)
[ "$(stat -c %a "$d/um.svg") $(stat -c %a "$d/um.ck")" = "600 600" ] ||
    { echo "FAIL: umask 077: $(stat -c %a "$d/um.svg" "$d/um.ck" | tr '\n' ' ')"; fail=1; }
chmod 640 "$d/um.svg" "$d/um.ck"
"$FTMESH" rings --mesh 4x4 --svg "$d/um.svg" >/dev/null
"$FTMESH" train --mesh 2x2 --steps 1 --checkpoint "$d/um.ck" >/dev/null
[ "$(stat -c %a "$d/um.svg") $(stat -c %a "$d/um.ck")" = "640 640" ] ||
    { echo "FAIL: a replaced file's mode: $(stat -c %a "$d/um.svg" "$d/um.ck" | tr '\n' ' ')"; fail=1; }
no_tmp "modes"
# ---- JSON stays valid UTF-8 whatever bytes a file name holds: UTF-8
# passes unchanged, anything else (a lone byte, an overlong form, a
# surrogate, past U+10FFFF) becomes U+FFFD
"$FTMESH" train --mesh 2x2 --steps 1 --checkpoint "$d/u.ck" >/dev/null
for pair in 'c\303\251\342\202\254\360\237\230\200k:c\u00e9\u20ac\U0001f600k' 'c\377k:c\ufffdk' \
            'c\340\200\200k:c\ufffd\ufffd\ufffdk' 'c\355\240\200k:c\ufffd\ufffd\ufffdk' \
            'c\364\220\200\200k:c\ufffd\ufffd\ufffd\ufffdk'; do
    name=$(printf "%s/${pair%%:*}" "$d")
    cp "$d/u.ck" "$name"
    "$FTMESH" train --mesh 2x2 --steps 1 --resume "$name" --json >"$tmp/nj.json" 2>/dev/null
    python3 -c 'import json,sys; d=json.loads(open(sys.argv[1],"rb").read().decode("utf-8")); w=sys.argv[2].encode().decode("unicode_escape"); assert d["resumed_from"].endswith("/" + w), (d["resumed_from"], w)' "$tmp/nj.json" "${pair#*:}" ||
        { echo "FAIL: file name ${pair%%:*} in JSON: $(cat "$tmp/nj.json")"; fail=1; }
    rm -f "$name"
done

cli_done
