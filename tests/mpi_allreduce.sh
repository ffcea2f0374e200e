#!/bin/sh
# Allreduce over MPI ranks (mpirun -np 2 and 4) against the same run in one
# process: every algorithm (and auto) exact under faults, the link bytes equal to the
# schedule's and to the one-process run's, the same modeled time; a chip
# that dies mid-run on another rank; scripted chip, host and link deaths;
# a killed rank ends the run. Skipped without an MPI build.
. "$(dirname "$0")/mpi_lib.sh"

faults="--mesh 6x6 --torus --fail 2,2 --fail-link 0,0-0,1 --size 96K --iters 2 --json $HANG"
np=2
for algo in ring tree bidir 2d 2d-concurrent 2d-lines auto; do
    single "$tmp/s.json" allreduce $faults --algo "$algo" || bad "one process, $algo: $(cat "$tmp/s.json.err")"
    if mpi $np "$tmp/m.json" allreduce $faults --algo "$algo"; then ok; else
        bad "mpirun -np $np allreduce --algo $algo exited $?: $(tail -5 "$tmp/m.json.err")"; continue
    fi
    python3 -c "
import json, sys
j = json.load(open('$tmp/m.json'))
sys.exit(0 if j['wrong'] == 0 and j['links_match_schedule'] and j['ranks']['count'] == $np else 1)" \
        && ok || bad "$algo over $np ranks: $(cat "$tmp/m.json")"
    same "$tmp/s.json" "$tmp/m.json" && ok || bad "$algo over $np ranks differs from one process"
    np=$((6 - np)) # 2, 4, 2, 4, ...
done

# --ranks picks the blocks; a grid that does not fit is one line, exit 2.
mpi 4 "$tmp/r.json" allreduce --mesh 4x6 --ranks 4x1 --size 32K --iters 1 --json $HANG &&
    python3 -c "
import json, sys
j = json.load(open('$tmp/r.json'))
sys.exit(0 if j['wrong'] == 0 and j['links_match_schedule'] and (j['ranks']['rows'], j['ranks']['cols']) == (4, 1) else 1)" \
    && ok || bad "--ranks 4x1: $(cat "$tmp/r.json" "$tmp/r.json.err")"
mpi 2 "$tmp/e.json" allreduce --mesh 4x4 --ranks 2x2 --size 4K
[ $? = 2 ] && [ "$(wc -l <"$tmp/e.json.err")" = 1 ] && ok ||
    bad "--ranks 2x2 with 2 ranks: want exit 2 and one line, got: $(cat "$tmp/e.json.err")"
# more ranks than any grid of the mesh holds: run fewer, says the line
mpi 2 "$tmp/e.json" allreduce --mesh 1x1 --size 4K
[ $? = 2 ] && [ "$(wc -l <"$tmp/e.json.err")" = 1 ] && grep -q "run fewer ranks" "$tmp/e.json.err" && ok ||
    bad "2 ranks on a 1x1 mesh: want exit 2 and 'run fewer ranks', got: $(cat "$tmp/e.json.err")"
# the lesson and the sweep run in one process: refused over ranks
for cmd in demo sweep; do
    mpi 2 "$tmp/e.txt" $cmd
    [ $? = 2 ] && [ "$(wc -l <"$tmp/e.txt.err")" = 1 ] && grep -q "without mpirun" "$tmp/e.txt.err" &&
        [ ! -s "$tmp/e.txt" ] && ok || bad "$cmd over 2 ranks: want exit 2 and one line, got: $(cat "$tmp/e.txt.err")"
done
# a trace holds one process's chips: refused over ranks, nothing written
mpi 2 "$tmp/t.txt" allreduce --mesh 4x4 --size 4K --iters 1 --trace "$tmp/t.json"
[ $? = 2 ] && [ "$(wc -l <"$tmp/t.txt.err")" = 1 ] && grep -q "^ftmesh allreduce: --trace records the chips of one process" "$tmp/t.txt.err" &&
    [ ! -e "$tmp/t.json" ] && ok || bad "allreduce --trace over ranks: want exit 2, one line and no file: $(cat "$tmp/t.txt.err")"

# A chip of rank 1's block dies in the middle of the allreduce: every rank
# stops, the rings are rebuilt without it, the sums are exact again.
mid="--mesh 5x5 --fail-during 2,4 --size 64K --iters 2 --json $HANG"
single "$tmp/s.json" allreduce $mid
mpi 2 "$tmp/m.json" allreduce $mid && ok || bad "mid-run death: $(tail -5 "$tmp/m.json.err")"
python3 -c "
import json, sys
j = json.load(open('$tmp/m.json'))
sys.exit(0 if j['died_during_run'] == [[2, 4]] and j['wrong'] == 0 and j['links_match_schedule'] else 1)" \
    && ok || bad "mid-run death on rank 1: $(cat "$tmp/m.json")"
same "$tmp/s.json" "$tmp/m.json" && ok || bad "mid-run death differs from one process"

# A fault script: a host on rank 0, a link between ranks 0 and 1, a chip
# on rank 3, each in the middle of an allreduce.
kills="--mesh 6x6 --size 64K --iters 3 --json $HANG --kill host:0,0@0:allreduce
       --kill link:2,2-2,3@1:allreduce --kill 4,4@2:3"
single "$tmp/s.json" allreduce $kills
mpi 4 "$tmp/m.json" allreduce $kills --ranks 2x2 && ok || bad "fault script: $(tail -5 "$tmp/m.json.err")"
same "$tmp/s.json" "$tmp/m.json" && ok || bad "fault script over 4 ranks differs from one process"

# More dead links noticed at once than a runtime keeps notices of (16):
# every rank keeps the same ones and rebuilds the same mesh (ranks that
# kept those that reached them first rebuilt different meshes and hung).
# Three runs: which notices reach a rank first is a race.
k24=
for r in 0 2 4 6; do
    for c in 0 2 4 6; do k24="$k24 --kill link:$r,$c-$r,$((c + 1))@1"; done
done
for c in 1 3 5 7; do k24="$k24 --kill link:1,$c-2,$c@1 --kill link:5,$c-6,$c@1"; done
for i in 1 2 3; do
    mpi 4 "$tmp/m.json" allreduce --mesh 8x8 --torus --size 8K --iters 3 --json --algo bidir $k24 $HANG &&
        python3 -c "
import json, sys
j = json.load(open('$tmp/m.json'))
sys.exit(0 if j['wrong'] == 0 and len(j['events']) == 24 else 1)" && ok ||
        bad "24 links at once over 4 ranks: $(tail -3 "$tmp/m.json.err")"
done

# --faults from a pipe reaches rank 0 alone: refused on every rank (the
# others ran another script and waited forever), exit 2
echo 'kill 1,1@0:2' | mpi 2 "$tmp/p.txt" allreduce --mesh 4x4 --size 16K --iters 2 --faults /dev/stdin
[ $? = 2 ] && grep -q "must be a regular file every rank can read" "$tmp/p.txt.err" && ok ||
    bad "--faults /dev/stdin over ranks: want exit 2 and the reason, got: $(cat "$tmp/p.txt.err")"
# a missing file gets the reason one process gives
mpi 2 "$tmp/p.txt" allreduce --mesh 4x4 --size 16K --iters 2 --faults "$tmp/none"
[ $? = 2 ] && grep -q "faults $tmp/none: cannot open" "$tmp/p.txt.err" && ok ||
    bad "--faults missing over ranks: want exit 2 and 'cannot open', got: $(cat "$tmp/p.txt.err")"

# The chips send their own packets (FTMESH_MPI_SEND=chips): the same
# results, under static faults and under the fault script.
for np in 2 4; do
    single "$tmp/s.json" allreduce $faults --algo 2d-concurrent
    FTMESH_MPI_SEND=chips mpi $np "$tmp/m.json" allreduce $faults --algo 2d-concurrent &&
        same "$tmp/s.json" "$tmp/m.json" && ok || bad "chips send, $np ranks: $(tail -5 "$tmp/m.json.err")"
done
single "$tmp/s.json" allreduce $kills
FTMESH_MPI_SEND=chips mpi 4 "$tmp/m.json" allreduce $kills --ranks 2x2 &&
    same "$tmp/s.json" "$tmp/m.json" && ok || bad "chips send, fault script: $(tail -5 "$tmp/m.json.err")"
FTMESH_MPI_SEND=both mpi 2 "$tmp/e.json" allreduce --mesh 4x4 --size 4K
[ $? = 2 ] && grep -q "FTMESH_MPI_SEND=both: expected chips or progress" "$tmp/e.json.err" && ok ||
    bad "FTMESH_MPI_SEND=both: want exit 2 and the message, got: $(cat "$tmp/e.json.err")"

# Open MPI bound to one core per rank (its default for 2 ranks): rank 0
# says so and how to fix it; the run itself is unchanged.
if [ -n "$quiet" ] && [ "$(nproc)" -ge 2 ]; then
    OMPI_MCA_hwloc_base_binding_policy=core mpi 2 "$tmp/b.json" allreduce --mesh 4x4 --size 4K \
        && grep -q "bound to 1 of .* --bind-to none" "$tmp/b.json.err" && ok \
        || bad "no warning for a rank bound to one core: $(cat "$tmp/b.json.err")"
fi

# A rank killed for real (SIGKILL): the launcher ends the run on every
# rank and names the rank. (Surviving it would need ULFM.)
timeout "$MPI_TIMEOUT" "$MPIRUN" -np 2 sh -c 'echo $$ > "$0/pid.$OMPI_COMM_WORLD_RANK"; exec "$1" allreduce --mesh 8x8 --size 4M --iters 1000' \
    "$tmp" "$ftmesh" >"$tmp/k.out" 2>"$tmp/k.err" &
launcher=$!
i=0
while [ ! -s "$tmp/pid.1" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
sleep 2
t0=$(date +%s)
[ -s "$tmp/pid.1" ] && kill -9 "$(cat "$tmp/pid.1")"
wait $launcher
rc=$?
t1=$(date +%s)
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "rank 1" "$tmp/k.err" && [ $((t1 - t0)) -le 30 ]; then ok; else
    bad "killed rank 1: exit $rc after $((t1 - t0)) s: $(tail -8 "$tmp/k.err")"
fi
finish
