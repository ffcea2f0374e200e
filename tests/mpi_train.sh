#!/bin/sh
# ftmesh train over MPI ranks gives the single-process results: with 2 and
# 4 ranks, every step's loss (the printed JSON, so bit for bit) and the
# summary equal one process's except for times, CPU figures and "ranks",
# and the checkpointed parameters are byte for byte the same file. Exact
# mode for ResNet and BERT with --check, static faults, a rank with no
# healthy chip, a chip dying mid-run on rank 1 (rank 3 with 4 ranks) and
# the lead chip (rank 0) dying, so that a survivor's state crosses ranks;
# float mode is deterministic (the same schedules sum in the same order
# whatever process runs a chip), so it must agree exactly too. Skipped
# without an MPI build.
. "$(dirname "$0")/mpi_lib.sh"

# same_train A B: the outputs agree line by line except for what is
# measured (wall times, CPU figures and shares, who noticed a failure
# first, "ranks") and the checkpoint's name (each run writes its own).
same_train() {
    python3 - "$1" "$2" <<'PY'
import json, sys
def timing(k):
    return ("wall" in k or "cpu" in k or k.endswith("_share") or k.endswith("_loadfree")
            or k.endswith("per_s") or "gflops" in k or k in ("detected_by", "ranks", "checkpoint"))
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if not timing(k)}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
if len(a) != len(b) or not a:
    print("lines:", len(a), "vs", len(b)); sys.exit(1)
bad = 0
for x, y in zip(a, b):
    if strip(x) != strip(y):
        bad = 1
        for k in x:
            if strip(x.get(k)) != strip(y.get(k)):
                print("differs:", k, x.get(k), "vs", y.get(k))
sys.exit(bad)
PY
}

# case NAME ARGS...: one process, then 2 and 4 ranks; outputs and
# checkpoints must agree.
case_() {
    name=$1; shift
    single "$tmp/$name.1" train "$@" $HANG --json --checkpoint "$tmp/$name.1.ckpt" \
        || bad "$name: one process failed: $(cat "$tmp/$name.1.err")"
    for np in 2 4; do
        out="$tmp/$name.$np"
        mpi "$np" "$out" train "$@" $HANG --json --checkpoint "$out.ckpt" \
            || { bad "$name over $np ranks failed: $(cat "$out.err")"; continue; }
        same_train "$tmp/$name.1" "$out" && ok || bad "$name over $np ranks differs from one process"
        cmp -s "$tmp/$name.1.ckpt" "$out.ckpt" && ok \
            || bad "$name over $np ranks: checkpoint differs from one process's"
        python3 -c "import json,sys; sys.exit(0 if json.loads(open('$out').readlines()[-1])['ranks']['count'] == $np else 1)" \
            && ok || bad "$name over $np ranks: no ranks.count $np in the summary"
        # /proc/stat counts the job's other ranks on this machine as other processes
        python3 -c "import json,sys; sys.exit(0 if json.loads(open('$out').readlines()[-1])['outside_math_share_loadfree'] is None else 1)" \
            && ok || bad "$name over $np ranks: a load-free share net of its own ranks' CPU"
    done
}

small="--mesh 2x4 --steps 3 --batch 16 --micro 2"
case_ resnet-exact $small --reduce exact --check
case_ bert-exact --model bert $small --reduce exact --check
# the ranks' grid is 1x2 / 1x4 on 2x4: chip (0,3) and (1,3) are rank 3's
# block with 4 ranks, so it runs no healthy chip
case_ static $small --reduce exact --fail 1,1 --fail 0,3 --fail 1,3
# (0,2) is rank 1's with 2 ranks, (1,3) rank 3's with 4 (rank 1's with 2)
case_ middeath-r1 $small --reduce exact --fail-during 0,2 --check
case_ middeath-r3 $small --reduce exact --fail-during 1,3
# the lead (chip (0,0), rank 0) dies: the state the others resume from
# comes from another rank; a link between ranks dies too
case_ leaddeath $small --reduce exact --kill 0,0@1:allreduce --kill link:1,1-1,2@2:forward
case_ repair $small --reduce exact --kill 1,2@1:allreduce --repair 1,2@2 --check
# rank 0's chips (columns 0-1) are all dead when a chip of another rank
# comes back: the repair is told alike on every process
case_ repair-away --model bert --mesh 4x4 --steps 6 --batch 16 --micro 2 --reduce exact \
    --kill host:0,0@1 --kill host:2,0@1 --kill 0,3@1 --repair 0,3@3 --repair host:0,0@5
# a host and a link inside it die at one instant: the same records (the
# link nobody noticed, both repaired) however the chips are spread
case_ instant --mesh 4x4 --torus --algo 2d --batch 16 --micro 2 --steps 7 --reduce exact \
    --kill link:2,1-2,0@3:forward --kill host:2,0@3:forward --repair-after 2
# a link dies and nobody notices: the checkpoint keeps it, written by the
# lead's process while the kill fired in another's
case_ unnoticed --mesh 4x4 --batch 16 --micro 1 --steps 6 --reduce exact --kill link:0,2-1,2@2
case_ float $small --check

mpi 2 "$tmp/t.txt" train $small --reduce exact $HANG \
    && grep -q "^# 2 MPI ranks" "$tmp/t.txt" && ok \
    || bad "text output over 2 ranks: no ranks line: $(cat "$tmp/t.txt.err")"
# an input that only some ranks can read ends the run on every rank, with
# one line (standard input reaches rank 0 only; /dev/stdin is read by
# every rank and is empty on the others), never a hang
printf 'the cat sat on the mat\n' >"$tmp/corpus.txt"
for src in - /dev/stdin; do
    mpi 2 "$tmp/c.txt" train --model bert --mesh 2x2 --steps 1 --batch 8 --corpus $src <"$tmp/corpus.txt"
    [ $? = 2 ] && [ "$(wc -l <"$tmp/c.txt.err")" = 1 ] && grep -q "^ftmesh train: --corpus $src: " "$tmp/c.txt.err" &&
        ok || bad "train --corpus $src over 2 ranks: want exit 2 and one line: $(cat "$tmp/c.txt.err")"
done
# files that differ between ranks (nodes without a shared disk): the
# ranks compare what they read and refuse, never train on two fault sets
mkdir -p "$tmp/wa" "$tmp/wb"
printf 'kill 1,1@1\n' >"$tmp/wa/f.txt"
printf 'kill 1,2@1\n' >"$tmp/wb/f.txt"
T="train --mesh 2x4 --steps 3 --batch 8 --micro 1 --reduce exact --faults f.txt"
timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 1 -wdir "$tmp/wa" "$ftmesh" $T : \
    -np 1 -wdir "$tmp/wb" "$ftmesh" $T >"$tmp/d.txt" 2>"$tmp/d.txt.err"
[ $? = 2 ] && [ "$(wc -l <"$tmp/d.txt.err")" = 1 ] &&
    grep -q "^ftmesh train: the ranks read different inputs" "$tmp/d.txt.err" && ok ||
    bad "different --faults files on 2 ranks: want exit 2 and one line: $(cat "$tmp/d.txt.err")"
mpi 2 "$tmp/tr.txt" train $small --trace "$tmp/tr.json"
[ $? = 2 ] && [ "$(wc -l <"$tmp/tr.txt.err")" = 1 ] && ok \
    || bad "--trace over ranks: want exit 2 and one line, got: $(cat "$tmp/tr.txt.err")"

single "$tmp/s.json" rings --mesh 6x6 --fail 1,1 --json
mpi 2 "$tmp/m.json" rings --mesh 6x6 --fail 1,1 --json && ok || bad "rings over 2 ranks: $(cat "$tmp/m.json.err")"
same "$tmp/s.json" "$tmp/m.json" && ok || bad "rings over 2 ranks differs from one process"
python3 -c "import json,sys; sys.exit(0 if json.load(open('$tmp/m.json'))['ranks']['count'] == 2 else 1)" \
    && ok || bad "rings --json over 2 ranks has no ranks.count 2"
finish
