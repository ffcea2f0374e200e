#!/bin/sh
# End-to-end test of repairs in `ftmesh train`: --repair, repair lines in
# --faults files, --repair-after with --random-kills, the refusals (exit 2,
# one line naming the option), the log line of a repair, the JSON events'
# kind and the availability figures, bitwise equal to one chip. FTMESH is
# the binary.
set -u
FTMESH=${FTMESH:-./ftmesh}
. "$(dirname "$0")/cli_lib.sh"

T="$FTMESH train --mesh 4x4 --steps 6 --batch 12 --micro 2 --reduce exact --check"

# a host dies and comes back; the log tells who sent the state
expect 0 "host repaired" $T --kill host:2,2@1:allreduce --repair host:2,2@3
grep -q "^# step 3: host (2,2) repaired; state from (1,2): [0-9]* bytes, [0-9.e+-]* us modeled; 16 chips; gradient allreduce modeled" "$out" \
    || { echo "FAIL: repair line"; cat "$out"; fail=1; }
grep -q "^# availability: 88 of 96 chip-steps alive" "$out" || { echo "FAIL: availability"; cat "$out"; fail=1; }
grep -q "check PASSED" "$out" || { echo "FAIL: --check"; cat "$out"; fail=1; }

# the state transfer meets a link nobody had noticed dead: the recovery
# gives the chip its state, and the repair is told, before its step
expect 0 "rejoin over a dead link" $T --model bert --kill link:2,1-3,1@1 --kill 3,1@2 --repair 3,1@4 \
    --svg "$tmp/rl.svg"
order=$(awk '/^# step 1 .start.: link/ { print NR, "link" } /^# step 4: chip .3,1. repaired; its state came with the recovery; 16 chips/ { print NR, "repair" } /^ +4 / { print NR, "step" }' "$out")
[ "$(echo "$order" | head -3 | cut -d' ' -f2 | tr '\n' ' ')" = "link repair step " ] && grep -q "check PASSED" "$out" &&
    grep -q "back at step 4 on 16 chips" "$tmp/rl.svg" || { echo "FAIL: rejoin over a dead link"; cat "$out"; fail=1; }
expect 0 "rejoin over a dead link, json" $T --model bert --kill link:2,1-3,1@1 --kill 3,1@2 --repair 3,1@4 --json
json '[(e["kind"], e["chips_after"], e["state_from"]) for e in j["events"] if e["kind"] == "repair"] == [("repair", 16, None)]'
json '[(e["kind"], e["step"]) for e in j["events"]] == [("kill", 2), ("kill", 1), ("repair", 4)]'

# --svg: the timeline, kills red (one mark: the step it died in is redone) and repairs green
expect 0 "repair svg" $T --kill 1,1@1 --repair 1,1@3 --svg "$tmp/run.svg"
python3 - "$tmp/run.svg" <<'EOF' || { echo "FAIL: svg timeline"; fail=1; }
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
cls = [e.getAttribute("class") for e in d.getElementsByTagName("*")]
sys.exit(0 if cls.count("alive") == 6 and cls.count("repair") == 1 and cls.count("kill") == 1 and "step-time" in cls else 1)
EOF

# JSON: kind on every event, the same keys, availability
expect 0 "repair json" $T --kill 1,1@1:backward --repair 1,1@2 --kill 1,1@4 --json
json '[e["kind"] for e in j["events"]] == ["kill", "repair", "kill"] and len({frozenset(e) for e in j["events"]}) == 1 and j["events"][1]["state_from"] == "(0,1)" and j["events"][1]["state_bytes"] > 0 and j["events"][0]["state_from"] is None and j["bitwise_equal"] and j["chips"] == 15'
json 'j["availability"]["chip_steps_alive"] == 16 * 6 - 3 and j["availability"]["chip_steps_all"] == 96 and j["availability"]["repairs"] == 1 and j["availability"]["run_examples_per_s"] > 0'
json '[s["chips"] for s in steps] == [16, 15, 16, 16, 15, 15]'

# a script file: plain and kill lines are kills, repair lines repairs
printf '# failure and repair\n1,2@0:backward\nkill link:0,0-0,1@1\nrepair 1,2@2\nrepair link:0,0-0,1@4\n' >"$tmp/script"
expect 0 "script file" $T --faults "$tmp/script" --json
json '[(e["kind"], e["what"]) for e in j["events"]] == [("kill", "chip (1,2)"), ("kill", "link (0,0)-(0,1)"), ("repair", "chip (1,2)"), ("repair", "link (0,0)-(0,1)")] or [(e["kind"], e["what"]) for e in j["events"]][0] == ("kill", "chip (1,2)")'
json 'j["chips"] == 16 and j["bitwise_equal"] and j["availability"]["repairs"] == 2'

# failures and repairs drawn at random
expect 0 "random kills repaired" $T --random-kills 3 --repair-after 2 --json
json 'j["bitwise_equal"] and j["availability"]["repairs"] >= 1'

# --repair-after brings back a link nobody noticed dying, and a host kill
# that found a chip dead brings back only the chips it killed
expect 0 "unnoticed link repaired" $FTMESH train --mesh 4x4 --torus --steps 6 --batch 12 --micro 2 \
    --reduce exact --check --kill 'link:1,0>1,3@2:optimizer' --repair-after 2
grep "^# step [0-9]" "$out" | sed 's/;.*//' >"$tmp/log"
printf '# step 2 (optimizer): link (1,0)->(1,3) died\n# step 4: link (1,0)->(1,3) repaired\n' | cmp -s - "$tmp/log" \
    || { echo "FAIL: unnoticed link: its kill, then its repair"; cat "$out"; fail=1; }
grep -q "check PASSED" "$out" || { echo "FAIL: --check unnoticed link"; cat "$out"; fail=1; }
expect 0 "partial host repaired" $T --kill 1,1@1 --kill host:0,0@2 --repair-after 2 --json
json '[(e["kind"], e["what"], e["step"]) for e in j["events"]] == [("kill", "chip (1,1)", 1), ("kill", "host (0,0)", 2), ("repair", "chip (1,1)", 3), ("repair", "chip (0,0)", 4), ("repair", "chip (0,1)", 4), ("repair", "chip (1,0)", 4)] and j["chips"] == 16 and j["bitwise_equal"]'
# died_during_run: every chip that died, in order (died_chip kept)
json 'j["died_during_run"] == [[1, 1], [0, 0], [0, 1], [1, 0]] and j["died_chip"] == [1, 1]'
expect 0 "died_during_run null" $T --steps 2 --json
json 'j["died_during_run"] is None and j["died_chip"] is None'

# --resume goes on with the checkpoint's mesh and its pending events (a
# --repair-after repair past the first run included); fault options given
# again add to them: those before the resumed step are history, one equal
# to a pending event counts once, new ones are checked against the
# checkpoint's mesh before anything is printed
R="$FTMESH train --mesh 4x4 --batch 12 --micro 2 --reduce exact"
K="--kill host:2,0@1 --kill 0,3@2:allreduce --repair-after 3"
expect 0 "checkpoint with pending repairs" $R --steps 4 $K --checkpoint "$tmp/r.ckpt"
for again in "" "--repair 0,3@5" "$K"; do
    expect 0 "resume ($again)" $R --steps 7 --resume "$tmp/r.ckpt" --check --json $again
    json '[(e["kind"], e["what"], e["step"]) for e in j["events"]] == [("repair", "host (2,0)", 4), ("repair", "chip (0,3)", 5)] and [s["chips"] for s in steps] == [15, 16, 16] and j["bitwise_equal"]'
done
# a run split in two can give its whole script to both parts: the first
# part's --checkpoint keeps a kill past its steps, and the resumed part
# ends with the checkpoint the run without a stop writes (byte for byte)
W="--kill link:1,1-1,2@1:allreduce --kill 2,2@3:forward --kill host:0,0@5:backward --repair-after 2"
expect 0 "whole run" $R --steps 8 $W --checkpoint "$tmp/w.ckpt"
expect 0 "first part" $R --steps 4 $W --checkpoint "$tmp/w1.ckpt"
err_is "events at step 4 or later fall past the run (4 steps): the --checkpoint keeps them"
expect 0 "second part" $R --steps 8 $W --resume "$tmp/w1.ckpt" --checkpoint "$tmp/w2.ckpt"
cmp -s "$tmp/w.ckpt" "$tmp/w2.ckpt" || { echo "FAIL: a run split in two ends elsewhere"; fail=1; }
# an event wrong in itself is refused for that, past the run or not
expect 2 "bad kill past the run" $R --steps 4 --kill 9,9@5
err_is "--kill 9,9@5: outside the 4x4 mesh"
grep -q "checkpoint" "$out.err" && { echo "FAIL: a --checkpoint offered for an event it would refuse"; fail=1; }
# without a --checkpoint nothing would keep it: refused, saying what would
expect 2 "kill past the run" $R --steps 4 --kill 1,1@5
err_is "--kill 1,1@5: the run has only 4 steps (0..3); drop or change that event (a --checkpoint would keep it, for --resume)"
expect 0 "resume plus a kill" $R --steps 7 --resume "$tmp/r.ckpt" --check --json --kill 1,1@6
json '[s["chips"] for s in steps] == [15, 16, 15] and j["events"][-1]["kind"] == "kill" and j["bitwise_equal"]'
expect 0 "resume header" $R --steps 5 --resume "$tmp/r.ckpt" --checkpoint "$tmp/r2.ckpt"
grep -q "^# ftmesh train: resnet, 4x4 mesh, 11 healthy chips" "$out" || { echo "FAIL: resumed header"; cat "$out"; fail=1; }
# the checkpoint's dead chips are its, not this run's flags
grep -q "^# resumed from $tmp/r.ckpt at step 4; the checkpoint's mesh has --fail 0,3 --fail 2,0 --fail 2,1 --fail 3,0 --fail 3,1$" "$out" &&
    ! grep -q "^# faults:" "$out" || { echo "FAIL: resumed faults line"; cat "$out"; fail=1; }
# from a checkpoint of another shape the run's own faults rule, and the header says so
expect 0 "resume on another shape" $R --steps 5 --resume "$tmp/r.ckpt" --mesh 2x4 --fail 1,1
OTHER="(its mesh is of another shape: its dead chips, links and events to come are not carried over; this run's faults rule)"
grep -qF "# resumed from $tmp/r.ckpt at step 4 $OTHER; faults: --fail 1,1" "$out" ||
    { echo "FAIL: resumed on another shape: header"; cat "$out"; fail=1; }
# ... also with no fault options; an event given before the resumed step
# is said not to be played there (no mesh holds it)
expect 0 "resume on another shape, no faults" $R --steps 5 --resume "$tmp/r.ckpt" --mesh 2x4 --kill 1,1@2
grep -qF "# resumed from $tmp/r.ckpt at step 4 $OTHER; no faults" "$out" ||
    { echo "FAIL: resumed on another shape, no faults: header"; cat "$out"; fail=1; }
grep -qF "ftmesh train: warning: --kill 1,1@2: before step 4, where the run resumes, and the checkpoint's mesh is not taken: not played" "$out.err" ||
    { echo "FAIL: an event before the resumed step on another shape: $(cat "$out.err")"; fail=1; }
# repairs past the run: kept by a --checkpoint, and the warning says which
expect 0 "repairs past the run, no checkpoint" $R --steps 2 --kill 1,1@1 --repair-after 5
grep -qF "nothing comes back within the run (2 steps): only a --checkpoint keeps the repairs" "$out.err" ||
    { echo "FAIL: repairs past the run: $(cat "$out.err")"; fail=1; }
expect 0 "repairs past the run, checkpoint" $R --steps 2 --kill 1,1@1 --repair-after 5 --checkpoint "$tmp/p.ckpt"
grep -qF "nothing comes back within the run (2 steps); the --checkpoint keeps the repairs, for --resume" "$out.err" ||
    { echo "FAIL: repairs past the run, checkpointed: $(cat "$out.err")"; fail=1; }
expect 0 "random kills, resumed on another shape" $R --steps 5 --resume "$tmp/r.ckpt" --mesh 2x4 --random-kills 1
grep -qF "random-kills with --resume draws nothing: draws span a run from its step 0, and the checkpoint's mesh is not taken" "$out.err" ||
    { echo "FAIL: random kills on another shape: $(cat "$out.err")"; fail=1; }
# on the checkpoint's own mesh they are its history: each is said not to
# be played again (the checkpoint cannot tell a new one from the first run's)
expect 0 "resume, history given again" $R --steps 5 --resume "$tmp/r.ckpt" $K --kill 1,2@2
grep -qF "ftmesh train: warning: --kill 1,2@2: before step 4, where the run resumes: not played again (the checkpoint's mesh holds what the first run did)" "$out.err" &&
    [ "$(grep -c "not played again" "$out.err")" = 3 ] || { echo "FAIL: history given again: $(cat "$out.err")"; fail=1; }
# a checkpoint is read more than once: a pipe is refused with one line
expect 2 "resume from a pipe" $R --steps 5 --resume /dev/stdin </dev/null
grep -q "not a regular file" "$out.err" || { echo "FAIL: resume from a pipe: $(cat "$out.err")"; fail=1; }
# a repair at the resumed step has the time before it, as without the checkpoint
expect 0 "repair times uninterrupted" $R --steps 5 $K --json
cp "$out" "$tmp/whole.json"
expect 0 "repair times resumed" $R --steps 5 --resume "$tmp/r.ckpt" --json
python3 -c 'import json,sys; ev=lambda f: [(e["step"], e["modeled_before_s"], e["modeled_after_s"]) for e in json.loads(open(f).readlines()[-1])["events"] if e["kind"] == "repair"]; a, b = ev(sys.argv[1]), ev(sys.argv[2]); sys.exit(0 if a == b and a and a[0][1] > 0 else 1)' "$tmp/whole.json" "$out" ||
    { echo "FAIL: a repair at the resumed step: modeled times differ from the whole run"; fail=1; }
expect 0 "pending repair past a resumed run" $R --steps 7 --resume "$tmp/r2.ckpt" --check --json
json '[(e["kind"], e["what"], e["step"]) for e in j["events"]] == [("repair", "chip (0,3)", 5)] and [s["chips"] for s in steps] == [16, 16] and j["bitwise_equal"]'
# --random-kills given again on --resume draw nothing new (the
# checkpoint holds the first run's draws still to come; a redraw on the
# checkpoint's mesh killed other chips): the resumed steps are the
# uninterrupted run's. 40 steps: the run is still going when the signal
# comes (the checkpoint of step 1 is seen within 50 ms)
RK="$R --steps 40 --random-kills 3 --fault-seed 9"
expect 0 "random kills uninterrupted" $RK --json
cp "$out" "$tmp/rk_whole.json"
${TO:-} $RK --checkpoint "$tmp/rk.ckpt" --checkpoint-every 1 --json >"$tmp/rk_part.json" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/rk.ckpt" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $pid
wait $pid
[ $? -eq 130 ] || { echo "FAIL: the run to interrupt did not stop on SIGINT"; cat "$tmp/rk_part.json"; fail=1; }
expect 0 "random kills resumed" $RK --resume "$tmp/rk.ckpt" --json
grep -q "warning: --random-kills with --resume draws nothing" "$out.err" ||
    { echo "FAIL: no word that --resume draws nothing: $(cat "$out.err")"; fail=1; }
python3 - "$tmp/rk_whole.json" "$out" <<'EOF2' || { echo "FAIL: a resumed run with --random-kills differs from the uninterrupted one"; cat "$out"; fail=1; }
import json, sys
def run(f):
    objs = [json.loads(l) for l in open(f)]
    ev = sorted((e["kind"], e["what"], e["step"]) for e in objs[-1]["events"])
    return ev, [(s["step"], s["chips"], s["loss"]) for s in objs[:-1]]
(ew, sw), (er, sr) = run(sys.argv[1]), run(sys.argv[2])
start = sr[0][0]
sys.exit(0 if start > 0 and sr == sw[start:] and er == [e for e in ew if e[2] >= start] and er else 1)
EOF2
# a checkpoint whose checksum holds but whose pending event names a chip
# outside its mesh (written by hand): refused before anything is printed
expect 0 "checkpoint with a pending repair" $R --steps 3 --kill 1,1@1 --repair-after 4 --checkpoint "$tmp/p.ckpt"
python3 - "$tmp/p.ckpt" "$tmp/bad.ckpt" <<'EOF2' || { echo "FAIL: cannot craft the checkpoint"; fail=1; }
import struct, sys
def crc32c(data):  # Castagnoli, reflected, as the file's trailer
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    crc = 0xFFFFFFFF
    for x in data:
        crc = t[(crc ^ x) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
b = open(sys.argv[1], "rb").read()
assert b.count(b"repair 1,1@5") == 1
b = b.replace(b"repair 1,1@5", b"repair 9,9@5")[:-4]
open(sys.argv[2], "wb").write(b + struct.pack("<I", crc32c(b)))
EOF2
expect 2 "resume: a pending event off the mesh" $R --steps 6 --resume "$tmp/bad.ckpt"
err_is "--resume $tmp/bad.ckpt" "its fault script: repair 9,9@5 is not on its 4x4 mesh"
[ -s "$out" ] && { echo "FAIL: a refused resume printed"; cat "$out"; fail=1; }
expect 2 "resume: repair what the checkpoint has alive" $R --steps 7 --resume "$tmp/r.ckpt" --repair 0,3@6
err_is "--repair 0,3@6" "not (entirely) dead"
[ -s "$out" ] && { echo "FAIL: refused resume printed"; cat "$out"; fail=1; }
expect 2 "resume: kill what the checkpoint has dead" $R --steps 7 --resume "$tmp/r.ckpt" --kill 0,3@4
err_is "--kill 0,3@4" "already dead"

# refusals: one line naming the option
expect 2 "repair a partly dead host" $T --kill 1,1@2 --repair host:1,1@4
err_is "--repair host:1,1@4" "not (entirely) dead"
expect 2 "repair both ways a link dead one way" $T --kill 'link:0,0>0,1@1' --repair link:0,0-0,1@3
err_is "--repair link:0,0-0,1@3" "not (entirely) dead"
expect 2 "repair alive" $T --repair 1,1@3
err_is "--repair 1,1@3" "nothing to repair"
expect 2 "repair outside" $T --kill 1,1@1 --repair 7,7@3
err_is "--repair 7,7@3" "outside the 4x4 mesh"
expect 2 "repair past the run" $T --kill 1,1@1 --repair 1,1@6
err_is "--repair 1,1@6" "only 6 steps"
expect 2 "repair in a phase" $T --kill 1,1@1 --repair 1,1@3:forward
err_is "--repair 1,1@3:forward" "start of a step"
expect 2 "repair-after 0" $T --kill 1,1@1 --repair-after 0
err_is "--repair-after 0"
printf '1,1@1\nrepair 1,1@1\n' >"$tmp/bad"
expect 2 "repair line before its kill" $T --faults "$tmp/bad"
err_is "--faults $tmp/bad: line 2" "nothing to repair"
# allreduce: a repair stops the run at its iteration; the mesh grows and
# every iteration runs again, verified
printf '1,1@1\nrepair 1,1@2\n' >"$tmp/ar"
expect 0 "allreduce repair" "$FTMESH" allreduce --mesh 4x4 --iters 3 --faults "$tmp/ar" --json
json '[e["kind"] for e in j["events"]] == ["kill", "repair"] and j["events"][1]["chips_after"] == 16 and j["chips"] == 16 and j["wrong"] == 0'
# dead from the start and repaired before the first iteration: every run
# is on the grown mesh, with its own rings, exact
for a in ring trees 2d-lines; do
    expect 0 "allreduce repair at 0, $a" "$FTMESH" allreduce --mesh 6x6 --size 4K --iters 2 \
        --fail-host 2,2 --repair host:2,2@0 --algo $a --json
    json 'j["chips"] == 36 and j["wrong"] == 0 and j["max_link_bytes"] == j["modeled_max_link_bytes"]'
done
expect 2 "allreduce repair alive" "$FTMESH" allreduce --mesh 4x4 --iters 3 --repair 1,1@1
err_is "--repair 1,1@1" "nothing to repair"

# A link inside a host, killed in the same allreduce at another count: the
# two strike in either order, and --repair-after gives the link its own
# repair whichever goes first (told as skipped when the host went first)
for i in 1 2 3; do
    expect 0 "any-order repairs $i" "$FTMESH" allreduce --mesh 4x4 --size 64K --iters 4 \
        --kill host:0,0@0:1 --kill link:1,0-1,1@0:2 --repair-after 2 --json
    json 'sorted(e["what"] for e in j["events"] if e["kind"] == "repair") == ["host (0,0)", "link (1,0)-(1,1)"] and j["chips"] == 16'
done

cli_done
