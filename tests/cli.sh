#!/bin/sh
# End-to-end checks of the ftmesh command: exit codes, one-line errors,
# JSON keys, and that results are verified. FTMESH is the binary.
set -u
ftmesh=${FTMESH:-./ftmesh}
fails=0; passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE ARGS...: exit code is CODE; for 2, stderr is exactly one line
expect() {
    want=$1; shift
    "$ftmesh" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" != "$want" ]; then
        bad "ftmesh $* exited $got, want $want: $(head -c 300 "$tmp/err")"
        return
    fi
    if [ "$want" = 2 ] && [ "$(wc -l <"$tmp/err")" != 1 ]; then
        bad "ftmesh $*: want one line on stderr, got: $(cat "$tmp/err")"
        return
    fi
    ok
}

# has_keys FILE KEY...: every key appears in the JSON object
has_keys() {
    f=$1; shift
    for k in "$@"; do
        grep -q "\"$k\":" "$f" || { bad "JSON key $k missing in $(head -c 200 "$f")"; return; }
    done
    ok
}

# Bad input: exit 2, one line, never a crash.
expect 2 rings --mesh 8x
expect 2 rings --mesh 0x8
expect 2 rings --mesh 65x2
expect 2 rings --fail 8,0
expect 2 rings --fail 3
expect 2 rings --fail-host 7,7
expect 2 rings --fail-link 1,1-2,2
expect 2 rings --fail-link 1,1=1,2
expect 2 rings --random-faults 64
expect 2 rings --mesh 3x3 --fail 0,1 --fail 1,1 --fail 2,1
expect 2 rings --mesh 1x2 --fail 0,0 --fail 0,1
expect 2 rings --bogus
expect 2 rings --mesh
expect 2 allreduce --algo nope
expect 2 allreduce --size 3
expect 2 allreduce --size 12Q
expect 2 allreduce --iters 0
expect 2 allreduce --hang-timeout -1
expect 2 allreduce --link-GBps 0
expect 2 sweep --bogus
expect 2 sweep --throughput --overlap 2
expect 2 sweep --throughput --algos 2d,nope
expect 2 sweep --throughput --bert-batch-1024 0
expect 2 allreduce --fail-after 3
expect 2 train --fail-step 2
expect 2 rings --algo bidir
expect 2 allreduce --mesh 64x64 --size 1G
expect 2 frobnicate

# Help and version.
expect 0 --help
expect 0 --version
expect 0 rings --help
expect 0 allreduce --help
expect 0 sweep --help
expect 0 sweep --throughput --help

# rings: picture, quality, JSON.
expect 0 rings --mesh 8x8 --fail 3,4
grep -q "X" "$tmp/out" && grep -q "1 detour edge" "$tmp/out" && ok || bad "rings picture"
expect 0 rings --mesh 8x8 --fail 3,4 --json
has_keys "$tmp/out" healthy ring_chips hops detours longest_edge max_link_load valid
grep -q '"healthy":63,"ring_chips":63,"hops":64,"detours":1' "$tmp/out" && ok || bad "rings JSON values"
expect 0 rings --mesh 8x8 --fail 3,4 --algo 2d --json
# The band around (3,4) has 15 chips, an odd number: a grid is bipartite, so
# its ring cannot be all one-hop edges; the figures must show a detour.
grep -Eq '"rows":2,"chips":15,"alternate":true,"hops":(1[6-9]|[2-9][0-9]),"detours":[1-9]' "$tmp/out" &&
    ok || bad "rings 2d band figures: $(cat "$tmp/out")"
grep -q '"column_layout":"column","usable_columns":\[0,1,2,3,5,6,7\]' "$tmp/out" &&
    ok || bad "rings 2d columns: column 4 holds the hole: $(cat "$tmp/out")"
expect 0 rings --mesh 8x8 --torus --fail-host 2,2 --algo 2d --svg "$tmp/r.svg"
grep -q "</svg>" "$tmp/r.svg" && ok || bad "rings --svg"

# allreduce: verified, nccl-style, JSON keys; every algorithm; faults.
for algo in ring bidir 2d tree auto; do
    expect 0 allreduce --mesh 6x6 --fail 2,3 --fail-link 0,0-0,1 --algo $algo --size 64K --iters 2 --json
    has_keys "$tmp/out" algo chips bytes iters wall_s algbw_GBps busbw_GBps max_link_bytes wrong \
        modeled_s modeled_algbw_GBps modeled_busbw_GBps
    grep -q '"wrong":0' "$tmp/out" && grep -q '"links_match_schedule":true' "$tmp/out" &&
        grep -q '"chips":35' "$tmp/out" && ok || bad "allreduce $algo JSON: $(cat "$tmp/out")"
done
expect 0 allreduce --mesh 4x4 --torus --fail-host 1,1 --size 16K --iters 1
grep -q "verified" "$tmp/out" && ok || bad "allreduce text"
expect 0 allreduce --mesh 16x16 --torus --algo 2d --size 64M --model-only --json
grep -q '"model_only":true' "$tmp/out" && ok || bad "model-only"

# A chip dies mid-allreduce: recovery on the chips left, still verified.
expect 0 allreduce --mesh 6x6 --fail-during 2,2 --size 64K --iters 1 --json
grep -q '"died_during_run":\[2,2\]' "$tmp/out" && grep -q '"chips":35' "$tmp/out" &&
    grep -q '"wrong":0' "$tmp/out" && ok || bad "fail-during: $(cat "$tmp/out")"
expect 2 allreduce --mesh 6x6 --fail 2,2 --fail-during 2,2
expect 2 allreduce --fail-during 1,1 --model-only

# A chip dies mid-training: recovered, and exact mode still equals one chip.
expect 0 train --mesh 3x3 --fail-during 1,1 --fail-step 1 --steps 3 --batch 12 --reduce exact --check --json
tail -1 "$tmp/out" > "$tmp/sum"
grep -q '"died_chip":\[1,1\]' "$tmp/sum" && grep -q '"bitwise_equal":true' "$tmp/sum" &&
    grep -q '"chips":8' "$tmp/sum" && ok || bad "train fail-during: $(cat "$tmp/sum")"
expect 2 train --mesh 3x3 --fail-during 3,3

# Training throughput at pod scale: 20 rows with the documented keys.
expect 0 sweep --throughput --algos 2d --json
has_keys "$tmp/out" mesh model scenario chips global_batch compute_s allreduce_s step_s \
    examples_per_s impact_pct
[ "$(grep -o '"scenario":' "$tmp/out" | wc -l)" = 20 ] && ok || bad "sweep --throughput: want 20 rows"

# Modeled time is deterministic.
"$ftmesh" allreduce --mesh 8x8 --fail 3,4 --algo bidir --size 1M --model-only --json >"$tmp/a"
"$ftmesh" allreduce --mesh 8x8 --fail 3,4 --algo bidir --size 1M --model-only --json >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" && ok || bad "modeled time differs between runs"

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
