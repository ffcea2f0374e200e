#!/bin/sh
# ftmesh train under mpirun: training is not spread over ranks yet, so it
# refuses with one line and exit 2 (never runs K copies of the job); rings
# over ranks prints what one process prints, plus "ranks". Skipped without
# an MPI build.
. "$(dirname "$0")/mpi_lib.sh"

mpi 2 "$tmp/t.out" train --mesh 2x2 --steps 1
[ $? = 2 ] && [ "$(wc -l <"$tmp/t.out.err")" = 1 ] && grep -q "not spread over MPI ranks" "$tmp/t.out.err" \
    && ok || bad "train over 2 ranks: want exit 2 and one line, got: $(cat "$tmp/t.out.err")"

single "$tmp/s.json" rings --mesh 6x6 --fail 1,1 --json
mpi 2 "$tmp/m.json" rings --mesh 6x6 --fail 1,1 --json && ok || bad "rings over 2 ranks: $(cat "$tmp/m.json.err")"
same "$tmp/s.json" "$tmp/m.json" && ok || bad "rings over 2 ranks differs from one process"
python3 -c "import json,sys; sys.exit(0 if json.load(open('$tmp/m.json'))['ranks']['count'] == 2 else 1)" \
    && ok || bad "rings --json over 2 ranks has no ranks.count 2"
finish
