#!/bin/sh
# Data-parallel training benchmark: on an 8x8 mesh, the default
# ResNet (depth 8) at global batch 256, the share of wall time spent outside
# forward/backward math (allreduce, synchronisation, waiting); goal < 25%.
# Also exact vs float reduce, healthy vs faulty. Usage: bench/train.sh BUILD_DIR
#
# How "outside math" is measured. The emulator runs 64 chip threads on a few
# cores, so a chip's wall time inside forward/backward is mostly time spent
# preempted by other chips: per-chip wall clocks say nothing. Instead every
# chip measures its forward/backward CPU time (CLOCK_THREAD_CPUTIME_ID,
# minus the CPU of the batch-norm allreduces it makes from inside), and:
#   capacity view: math share = sum of chips' math CPU / (step wall x cores)
#                  (cores = min(online CPUs, chips)). Everything else - the
#                  allreduces, barriers, thread wake-ups, and cores left idle
#                  while chips wait - counts as outside. Honest on an idle
#                  machine; other users' load makes it look worse.
#                  The machine is shared: the headline figure subtracts the
#                  CPU other processes took during the timed steps (from
#                  /proc/stat) from the capacity; "raw" does not.
#   CPU view:      math share = math CPU / this process's CPU. Immune to
#                  other users' load, but blind to idle cores.
# Steps >= 1 are counted (step 0 builds schedules and touches fresh memory).
set -e
ftmesh=${1:-.}/ftmesh
steps=${STEPS:-6}
run() { # label args...
    label=$1; shift
    "$ftmesh" train --mesh 8x8 --batch 256 --steps "$steps" --json "$@" | tail -n 1 |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
lf = d["outside_math_share_loadfree"]  # null when not measurable (busy machine)
print("%-28s %5.3f s/step %6.1f ex/s  modeled %5.1f us (grad %5.1f)  outside math: %5s%%  (raw %5.1f%%, others %4.1f cpu-s; cpu view %4.1f%%)" % (
    sys.argv[1], d["step_wall_s"], d["examples_per_s"], d["modeled_allreduce_s"] * 1e6,
    d["modeled_grad_s"] * 1e6, "n/a" if lf is None else "%.1f" % (100 * lf),
    100 * d["outside_math_share"], d["others_cpu_s"], 100 * (1 - d["cpu_math_share"])))
' "$label"
}
echo "# ftmesh train, 8x8 mesh, resnet depth 8, batch 256, $steps steps (steps >= 1 timed), micro 4"
echo "# CPUs: $(getconf _NPROCESSORS_ONLN); load average (includes our own 64 threads): $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
algos="ring bidir"
"$ftmesh" train --help | grep -q '^ *2d ' && algos="$algos 2d"
for algo in $algos; do
    run "healthy  float $algo" --algo "$algo"
    run "healthy  exact $algo" --algo "$algo" --reduce exact
done
run "fail 3,3 float bidir" --algo bidir --fail 3,3
run "fail 3,3 exact bidir" --algo bidir --fail 3,3 --reduce exact
run "host 2,2 + link float ring" --fail-host 2,2 --fail-link 5,5-5,6
echo "# goal: outside math < 25% (capacity left to us; the CPU view bounds it from below)"
