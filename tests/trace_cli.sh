#!/bin/sh
# --trace on allreduce and train: the JSON parses, every healthy chip has
# its track, and on the modeled clock the trace spans the reported modeled
# time with one send and one receive per transfer (tests/trace_cli.py).
set -u
ftmesh=${FTMESH:-./ftmesh}
here=$(dirname "$0")
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { python3 "$here/trace_cli.py" "$@" || bad "trace check $*"; }
modeled_s() { sed -n 's/.*"modeled_s":\([^,]*\),.*/\1/p' "$1"; }

for algo in ring bidir tree; do
    "$ftmesh" allreduce --mesh 4x4 --fail 1,1 --algo $algo --size 4K --iters 1 --json \
        --trace "$tmp/m.json" --trace-clock modeled >"$tmp/out" || bad "allreduce $algo"
    check "$tmp/m.json" modeled 4 4 "1,1" "$(modeled_s "$tmp/out")" 1
done
for algo in 2d 2d-concurrent; do
    "$ftmesh" allreduce --mesh 4x4 --torus --fail-host 0,0 --algo $algo --size 8K --iters 2 \
        --json --trace "$tmp/m.json" --trace-clock=modeled >"$tmp/out" || bad "allreduce $algo"
    check "$tmp/m.json" modeled 4 4 "0,0;0,1;1,0;1,1" "$(modeled_s "$tmp/out")" 2
done
# slices end where the next begins without overlapping it once printed
"$ftmesh" allreduce --mesh 4x4 --fail 1,1 --size 64K --iters 3 --json --trace "$tmp/m.json" \
    --trace-clock modeled >"$tmp/out" || bad "allreduce 64K"
check "$tmp/m.json" modeled 4 4 "1,1" "$(modeled_s "$tmp/out")" 3
# past 2^63 ps of modeled time (hops of 1000 s) the times stay right (1x2:
# 4800 iterations of 2000 s, a third of 2x2's events for the same 9.6e6 s)
"$ftmesh" allreduce --mesh 1x2 --size 16 --iters 4800 --hop-us 1e9 --trace "$tmp/h.json" \
    --trace-clock modeled >/dev/null || bad "allreduce --hop-us 1e9 modeled"
python3 - "$tmp/h.json" <<'PY' || bad "modeled trace past 2^63 ps: negative or wrong times"
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
end = max(e["ts"] + e["dur"] for e in ev)
sys.exit(0 if min(e["ts"] for e in ev) >= 0 and min(e["dur"] for e in ev) > 0
         and abs(end - d["otherData"]["span_us"]) <= 1e-6 * end else 1)
PY
# on the modeled clock a chip dies after what it did in its last step
"$ftmesh" allreduce --mesh 8x8 --fail 3,4 --fail-during 5,5 --size 256K --iters 2 \
    --trace "$tmp/k.json" --trace-clock modeled >/dev/null || bad "allreduce --fail-during modeled"
check "$tmp/k.json" modeled 8 8 "3,4;5,5"
"$ftmesh" allreduce --mesh 3x3 --size 64K --iters 2 --trace "$tmp/w.json" >/dev/null ||
    bad "allreduce wall trace"
check "$tmp/w.json" wall 3 3 ""
# a chip dies mid-allreduce: both runs recorded, recovery marked
"$ftmesh" allreduce --mesh 3x3 --size 64K --iters 1 --fail-during 1,1 --trace "$tmp/f.json" \
    >/dev/null || bad "allreduce --fail-during trace"
check "$tmp/f.json" wall 3 3 "1,1"
grep -q '"cat":"fail"' "$tmp/f.json" || bad "no fail event"
grep -q '"cat":"recover"' "$tmp/f.json" || bad "no recover event"
# a host dies with its four chips, each on its own track (mid-allreduce,
# and at a training phase outside any allreduce)
"$ftmesh" allreduce --mesh 4x4 --size 16K --iters 4 --kill 'host:2,2@2:allreduce' \
    --trace "$tmp/h.json" >/dev/null || bad "allreduce host kill trace"
[ "$(grep -o '"cat":"fail"' "$tmp/h.json" | wc -l)" = 4 ] || bad "host kill: not four deaths in the trace"
"$ftmesh" train --mesh 4x4 --steps 3 --batch 16 --kill host:2,2@1:forward --trace "$tmp/h.json" \
    >/dev/null || bad "train host kill trace"
[ "$(grep -o '"cat":"fail"' "$tmp/h.json" | wc -l)" = 4 ] || bad "train host kill: not four deaths in the trace"
# the recovery covers the time from the death to the redone step (the old
# runtime down, a new one up: milliseconds), not a point at its end
python3 - "$tmp/h.json" <<'EOF' || bad "train host kill: the recovery is a point, not the time it took"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
rec = [e for e in ev if e["name"].startswith("recovery")]
sys.exit(0 if len(rec) == 12 and all(r["dur"] >= 500 for r in rec) else 1)
EOF
check "$tmp/h.json" wall 4 4 ""
# a link's death has no chip to mark: the trace's events list names it
"$ftmesh" train --mesh 3x3 --steps 3 --batch 9 --kill 'link:1,1-1,2@1:backward' --trace "$tmp/l.json" \
    >/dev/null || bad "train link kill trace"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["otherData"]["events"]; sys.exit(0 if [(x["kind"], x["what"], x["step"]) for x in e] == [("kill", "link (1,1)-(1,2)", 1)] else 1)' "$tmp/l.json" ||
    bad "train link kill: not in the trace's events"
# train: compute phases on the wall clock, allreduces on the modeled one
"$ftmesh" train --mesh 3x3 --steps 2 --batch 18 --micro 2 --fail-during 1,1 --fail-step 1 \
    --trace "$tmp/t.json" >/dev/null || bad "train --trace"
check "$tmp/t.json" wall 3 3 "1,1"
grep -q '"name":"forward+backward"' "$tmp/t.json" || bad "train trace: no forward+backward"
grep -q '"name":"optimizer"' "$tmp/t.json" || bad "train trace: no optimizer"
grep -q '"cat":"recover"' "$tmp/t.json" || bad "train trace: no recovery"
"$ftmesh" train --mesh 2x2 --steps 2 --batch 8 --micro 2 --trace "$tmp/t.json" \
    --trace-clock modeled >/dev/null || bad "train --trace-clock modeled"
check "$tmp/t.json" modeled 2 2 "" -
# --trace-steps: the first N steps of those run, every chip's events and
# allreduces of those steps and none of the others' (each step of this run
# makes as many allreduces); a step redone after a death in it counts anew
count() { python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
n = lambda f: sum(1 for e in ev if e.get("ph") == "X" and f(e["name"]))
print(n(lambda x: x == "forward+backward"), n(lambda x: x == "optimizer"), n(lambda x: x.startswith("allreduce")))' "$1"; }
"$ftmesh" train --mesh 3x3 --steps 5 --batch 18 --trace "$tmp/all.json" >/dev/null || bad "train 5 steps trace"
"$ftmesh" train --mesh 3x3 --steps 5 --batch 18 --trace "$tmp/two.json" --trace-steps 2 >"$tmp/out" ||
    bad "train --trace-steps"
grep -q '^# trace: the first 2 of the 5 steps run (--trace-steps)$' "$tmp/out" || bad "--trace-steps: not said"
set -- $(count "$tmp/all.json") $(count "$tmp/two.json")
[ "$1 $2" = "45 45" ] && [ "$4 $5" = "18 18" ] && [ $(($3 * 2)) = $(($6 * 5)) ] && [ "$6" -gt 0 ] ||
    bad "--trace-steps 2 of 5: events $*"
"$ftmesh" train --mesh 3x3 --steps 5 --batch 18 --trace "$tmp/k.json" --trace-steps 2 \
    --kill 1,1@1:allreduce >/dev/null || bad "train --trace-steps with a death"
set -- $(count "$tmp/k.json")
[ "$1 $2" = "26 17" ] || bad "--trace-steps 2, a death in step 1: fb and optimizer $1 $2, want 9+9+8 and 9+8"
# a repair past the steps traced: its rejoin (transfers and events) is left out too
"$ftmesh" train --mesh 2x2 --steps 5 --batch 8 --kill 1,1@2 --repair 1,1@4 --trace "$tmp/r.json" \
    --trace-steps 1 >/dev/null || bad "train --trace-steps with a repair"
set -- $(count "$tmp/r.json")
[ "$1 $2" = "4 4" ] && ! grep -q rejoin "$tmp/r.json" || bad "--trace-steps 1 with a repair at step 4: $* $(grep -c rejoin "$tmp/r.json")"
"$ftmesh" train --mesh 2x2 --steps 1 --trace-steps 2 2>"$tmp/err" >/dev/null &&
    grep -q "warning: --trace-steps has no effect without --trace FILE" "$tmp/err" || bad "--trace-steps alone: no warning"
"$ftmesh" train --trace-steps 0 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || bad "--trace-steps 0: exit $rc"
# errors: one line, exit 2
"$ftmesh" allreduce --trace-clock sundial 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || bad "bad --trace-clock: exit $rc"
"$ftmesh" allreduce --trace /nonexistent/dir/t.json 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || bad "unwritable --trace: exit $rc"
[ $fails = 0 ] || exit 1
echo "trace_cli: all passed"
