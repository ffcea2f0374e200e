#!/bin/sh
# The allreduce against its lower bound, in one run: every goal of
# "near the bound" as a measured ratio next to its target (model only,
# TPU-v3 defaults), and the time and memory it takes to get them.
#   1. ftmesh sweep --json: each faulty case's fastest algorithm against
#      the best healthy time, and the best healthy time against its bound;
#   2. the 64x64 torus with 400 random dead chips at 100 MB: trees against
#      the bound, and auto's CPU time and peak memory to decide;
#   3. a 32x32 torus with a dead host (8,16): building and modeling trees;
#      and on the sweep's dead host (16,16) the trees schedule's steps
#      against a lower bound on any order of its sends (bench/trees_steps,
#      when built: make bench builds it);
#   4. ftmesh sweep --throughput: training throughput lost to a fault,
#      with the global batch kept (the default) and with each survivor
#      keeping its share (--batch-policy per-chip).
# Usage: bench/bound.sh BUILD_DIR
set -eu
build=${1:-.}
ftm="$build/ftmesh"
[ -x "$ftm" ] || { echo "bench/bound.sh: no $ftm (build first, or give the build directory)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timed() { # timed LABEL CMD...: runs CMD, stdout to $tmp/out, and reports its cost
    label=$1
    shift
    /usr/bin/time -f "%e %U %M" -o "$tmp/time" "$@" >"$tmp/out"
    read -r wall user kb <"$tmp/time"
    printf '# %-34s %7.2f s wall %7.2f s CPU %6d MB peak\n' "$label" "$wall" "$user" $((kb / 1024))
}

echo "# ftmesh bench bound $(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
timed "sweep (goal: at most 60 s)" "$ftm" sweep --json
python3 - "$tmp/out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
print("%-6s %-10s %-10s %-6s %10s %6s %s" % ("torus", "case", "model", "algo", "overhead", "goal", "met"))
for g in j["goal"]:
    print("%-6s %-10s %-10s %-6s %+9.2f%% %5g%% %s" % (g["mesh"], g["scenario"], g["model"], g["algo"],
          g["overhead_vs_best_healthy_pct"], g["goal_pct"], "yes" if g["met"] else "no"))
for r in j["rows"]:
    if r["best"] and r["scenario"] == "healthy":
        print("%-6s %-10s %-10s %-6s %8.3f x bound (goal 1.05) %s" % (r["mesh"], "healthy", r["model"],
              r["algo"], r["over_bound"], "yes" if r["over_bound"] <= 1.05 else "no"))
EOF
big="--mesh 64x64 --torus --random-faults 400 --size 100M --model-only --json"
# shellcheck disable=SC2086 # big is several options
timed "64x64/400 trees" "$ftm" allreduce $big --algo trees
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("64x64/400 trees %.1f us = %.3f x bound (goal 2)" % (j["modeled_s"]*1e6, j["over_bound"]))' "$tmp/out"
# shellcheck disable=SC2086
timed "64x64/400 auto (goal: 20 s, 2 GB)" "$ftm" allreduce $big --algo auto
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("64x64/400 auto picks %s: %.3f x bound" % (j["schedule"], j["over_bound"]))' "$tmp/out"
timed "32x32 dead host trees (goal: 2 s)" "$ftm" allreduce --mesh 32x32 --torus --fail-host 8,16 \
    --algo trees --size 100M --model-only --json
if [ -x "$build/bench/trees_steps" ]; then
    "$build/bench/trees_steps"
fi
for policy in global per-chip; do
    timed "sweep --throughput --batch-policy $policy" "$ftm" sweep --throughput \
        --batch-policy $policy --json
    python3 - "$tmp/out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
one = ("dead-host", "dead-chip", "dead-link")  # the goals for one fault
for r in j["rows"]:
    if r["scenario"] != "healthy":
        goal = ("goal 1%%: %s" % ("met" if r["impact_pct"] <= 1 else "not met")
                if r["scenario"] in one else "no goal: two faults")
        print("%-6s %-10s %-15s %-6s %-8s throughput lost %5.2f%% (%s)" % (
              r["mesh"], r["model"], r["scenario"], r["algo"], j["batch_policy"], r["impact_pct"], goal))
EOF
done
