#!/bin/sh
# The watchdog over ranks (tests/mpi_hang.c under mpirun -np 2): a chip of
# rank 1 waits for data that never comes; every rank stops with a hang and
# rank 0's report names the stuck chip. Skipped without an MPI build.
. "$(dirname "$0")/mpi_lib.sh"
prog=${FTMESH%ftmesh}tests/mpi_hang
if timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$prog" >"$tmp/out" 2>"$tmp/err"; then ok; else
    bad "mpi_hang: $(cat "$tmp/out" "$tmp/err" | tail -8)"
fi
finish
