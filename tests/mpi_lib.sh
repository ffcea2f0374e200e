# Shared by the MPI tests (sourced): skips without an MPI build, runs
# mpirun (as root too, oversubscribed: CI has 2 cores), with a timeout.
set -u
ftmesh=${FTMESH:-./ftmesh}
fails=0; passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

if [ -z "${MPIRUN:-}" ]; then
    echo "SKIP: ftmesh was built without MPI (./configure --with-mpi runs these tests)"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each test script its own Open MPI session directory: make -j runs the
# MPI tests at once, and launchers creating their session directories
# under one /tmp at the same moment can fail ("session_dir.c").
export OMPI_MCA_orte_tmpdir_base="$tmp" PRTE_MCA_prte_tmpdir_base="$tmp"
# Open MPI: more ranks than cores is fine here; MPICH ignores the variable.
export OMPI_MCA_rmaps_base_oversubscribe=1
# A rank runs many threads: Open MPI would bind each of 2 ranks to one core.
export OMPI_MCA_hwloc_base_binding_policy=none
# One run may take at most this long (mpirun itself starts in ~2-4 s on a
# loaded 2-core machine).
MPI_TIMEOUT=${MPI_TIMEOUT:-180}

# Open MPI's launcher adds its own lines when a rank exits non-zero; -q
# keeps stderr to the command's one line.
quiet=""
"$MPIRUN" --version 2>/dev/null | grep -q "Open MPI" && quiet="-q"

# The watchdog's timeout for the runs: a shared, oversubscribed CI machine
# can leave every thread of a rank off the CPU for seconds.
HANG="--hang-timeout ${MPI_HANG_TIMEOUT:-30}"

# mpi NP OUT ARGS...: mpirun -np NP ftmesh ARGS > OUT; returns its status.
mpi() {
    np=$1; out=$2; shift 2
    timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np "$np" "$ftmesh" "$@" >"$out" 2>"$out.err"
}

# single OUT ARGS...: the same run in one process.
single() {
    out=$1; shift
    timeout "$MPI_TIMEOUT" "$ftmesh" "$@" >"$out" 2>"$out.err"
}

# same A B: the JSON results agree except for wall-clock figures, who
# noticed a failure first (a race in one process too) and "ranks".
same() {
    python3 - "$1" "$2" <<'PY'
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items()
                if not (k.startswith("wall") or k.endswith("bw_GBps") and not k.startswith("modeled")
                        or k in ("lost_wall_s", "detected_by", "ranks"))}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if strip(a) != strip(b):
    for k in a:
        if strip(a.get(k)) != strip(b.get(k)):
            print("differs:", k, a.get(k), "vs", b.get(k))
    sys.exit(1)
PY
}

finish() {
    echo "$passes passed, $fails failed"
    [ "$fails" = 0 ]
}
