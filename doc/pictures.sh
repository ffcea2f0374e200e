#!/bin/sh
# Regenerates the pictures of the README (doc/*.svg and doc/*.txt) with the
# ftmesh command: `make pictures`, or doc/pictures.sh [FTMESH [OUTDIR]].
# Every picture is drawn by the program from the mesh, the faults and the
# schedule it really builds; nothing here is drawn by hand.
set -eu
ftmesh=${1:-./ftmesh}
out=${2:-$(dirname "$0")}
run() { echo "ftmesh $*" >&2; "$ftmesh" "$@"; }

# The quick start's ring: 8x8 mesh, chip (3,4) dead, one 2-hop detour.
run rings --mesh 8x8 --fail 3,4 --svg "$out/ring-8x8-hole.svg" >"$out/ring-8x8-hole.txt"
# A torus with a dead host, a one-way dead link and a link dead both ways.
run rings --mesh 8x8 --torus --fail-host 2,2 --fail-link '0,0>0,1' --fail-link 5,5-5,6 \
    --svg "$out/ring-8x8-torus-faults.svg" >/dev/null
# The 2-D algorithm's row bands around a dead host, on a torus (16x16:
# on smaller ones with a hole the ring models faster and 2d runs its
# schedule, which the picture would say under its title).
run rings --mesh 16x16 --torus --fail-host 6,6 --algo 2d --svg "$out/2d-torus-dead-host.svg" \
    >"$out/2d-torus-dead-host.txt"
# The other algorithms on a 6x6 mesh with a hole.
for algo in bidir tree; do
    run rings --mesh 6x6 --fail 2,2 --algo "$algo" --svg "$out/$algo-6x6-hole.svg" \
        >"$out/$algo-6x6-hole.txt"
done
# 2d-concurrent's own halves need a torus of 8x8: on smaller or open
# meshes with a hole the ring models faster and it runs the ring's schedule.
run rings --mesh 8x8 --torus --fail 3,4 --algo 2d-concurrent \
    --svg "$out/2d-concurrent-8x8-torus-hole.svg" >"$out/2d-concurrent-8x8-torus-hole.txt"
# Where the bytes go: link heat of a 2d allreduce on a torus with a dead host.
run allreduce --mesh 16x16 --torus --fail-host 6,6 --algo 2d --size 1M --iters 1 \
    --svg "$out/allreduce-2d-heat.svg" >/dev/null
# Training through a chip failure: the loss curve beside the mesh.
run train --mesh 4x4 --fail 1,1 --steps 12 --fail-during 2,2 --fail-step 5 \
    --svg "$out/train-chip-dies.svg" >/dev/null
