#!/bin/sh
# The watchdog over ranks. tests/mpi_hang.c under mpirun -np 2: a chip of
# rank 1 waits for data that never comes; every rank stops with a hang and
# rank 0's report names the stuck chip; a rank whose chip computes for
# several hang timeouts is busy, not hung, and so is a rank that computes
# that long before it starts a run. A rank that stops (SIGSTOP) is named
# silent and the job ends with exit 3: rank 1 before it starts a run that
# rank 0 is in, rank 1 between runs, rank 0 between runs. Then ftmesh
# train with rank 1, then rank 0, stopped in the middle of training: exit
# 3 and the line naming the silent rank; and SIGTERM or SIGINT to rank 1:
# exit 143 or 130, as in one process. Skipped without an MPI build.
. "$(dirname "$0")/mpi_lib.sh"
prog=${FTMESH%ftmesh}tests/mpi_hang

# Each rank's process writes its pid to $tmp/pid.RANK, then becomes the
# program (exec keeps the pid; so does libtool's wrapper script).
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
echo \$\$ >"$tmp/pid.\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-x}}"
exec "\$@"
EOF
chmod +x "$tmp/rank.sh"
job=""
# A rank a test stopped, if the job did not end it, is continued and
# killed: nothing is left stopped or running, whatever happens.
reap() {
    for f in "$tmp"/pid.*; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            kill -CONT "$p" 2>/dev/null
            kill -KILL "$p" 2>/dev/null
        fi
        rm -f "$f"
    done
}
trap '[ -n "$job" ] && kill "$job" 2>/dev/null; reap; rm -rf "$tmp"' EXIT

# The runs that must end by themselves with exit 0 (tests/mpi_hang.c checks).
for arg in hang busy slow; do
    if timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$prog" $arg >"$tmp/out" 2>"$tmp/err"; then
        ok
    else
        bad "mpi_hang $arg: $(cat "$tmp/out" "$tmp/err" | tail -8)"
    fi
done

# silent MODE WANT: a rank of tests/mpi_hang MODE stops itself; the job
# must end within 60 s (the hang timeout is 0.5 s) with exit 3 and the
# line WANT on stderr.
silent() {
    timeout 60 "$MPIRUN" $quiet -np 2 "$tmp/rank.sh" "$prog" "$1" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    reap
    if [ "$rc" = 124 ]; then
        bad "mpi_hang $1: the job still ran 60 s later (the stopped rank was not found)"
    elif [ "$rc" != 3 ]; then
        bad "mpi_hang $1: exit $rc, want 3: $(cat "$tmp/out" "$tmp/err" | tail -8)"
    elif ! grep -q "$2" "$tmp/err"; then
        bad "mpi_hang $1: no line '$2' on stderr: $(cat "$tmp/err" | tail -8)"
    else
        ok
    fi
}
# rank 0's run returns the hang with its stuck chip (it never heard from
# rank 1 in that run)
silent early "^rank 0: run hung: chip 0 waits; rank 1 went silent"
# rank 0 waits in a collective between runs
silent between "^rank 0: rank 1 went silent"
# rank 0 is the one stopped: rank 1 reports it
silent root "^rank 1: rank 0 went silent"

# wait_for SECONDS CMD...: polls CMD every 0.2 s; 1 if it never held.
wait_for() {
    n=$(($1 * 5)); shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.2
        n=$((n - 1))
    done
    return 1
}
training() { [ -s "$tmp/pid.0" ] && [ -s "$tmp/pid.1" ] && grep -q '^ *[0-9]' "$tmp/train.out"; }
ended() { ! kill -0 "$job" 2>/dev/null; }

# stop_train RANK WANT...: ftmesh train, RANK stopped once training runs;
# the job must end with exit 3 and every line WANT on stderr. The run
# never finishes by itself (--steps): it ends by the hang or not at all.
# The limit after the stop: the hang timeout (3 s), then a loaded
# machine's delays.
stop_train() {
    r=$1; shift
    timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$tmp/rank.sh" "$ftmesh" train --mesh 2x4 \
        --steps 1000000 --batch 16 --hang-timeout 3 >"$tmp/train.out" 2>"$tmp/train.err" &
    job=$!
    if ! wait_for 90 training; then
        bad "mpi_hang stop $r: training did not start: $(tail -5 "$tmp/train.err")"
        kill "$job"
    elif ! kill -STOP "$(cat "$tmp/pid.$r")"; then
        bad "mpi_hang stop $r: cannot stop rank $r"
        kill "$job"
    elif ! wait_for 40 ended; then
        bad "mpi_hang stop $r: rank $r stopped, the job still ran 40 s later"
        kill "$job"
    else
        wait "$job"
        rc=$?
        missing=""
        for want in "$@"; do
            grep -q "$want" "$tmp/train.err" || missing="$missing '$want'"
        done
        if [ "$rc" != 3 ]; then
            bad "mpi_hang stop $r: exit $rc, want 3: $(tail -5 "$tmp/train.err")"
        elif [ -n "$missing" ]; then
            bad "mpi_hang stop $r: the report lacks$missing:
$(cat "$tmp/train.err")"
        else
            ok
        fi
    fi
    wait "$job" 2>/dev/null
    job=""
    reap
    rm -f "$tmp/train.out" "$tmp/train.err"
}
# signal_train RANK SIG WANT: ftmesh train, SIG sent to RANK once training
# runs; every rank stops after the step and the job exits WANT (128 + the
# signal, whichever rank got it).
signal_train() {
    timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$tmp/rank.sh" "$ftmesh" train --mesh 2x4 \
        --steps 1000000 --batch 16 >"$tmp/train.out" 2>"$tmp/train.err" &
    job=$!
    if ! wait_for 90 training; then
        bad "mpi_hang $2 to rank $1: training did not start: $(tail -5 "$tmp/train.err")"
        kill "$job"
    else
        kill -"$2" "$(cat "$tmp/pid.$1")"
        wait "$job"
        rc=$?
        [ "$rc" = "$3" ] && grep -q "interrupted: stopped after step" "$tmp/train.out" && ok ||
            bad "mpi_hang $2 to rank $1: exit $rc, want $3: $(tail -3 "$tmp/train.out" "$tmp/train.err")"
    fi
    job=""
    reap
    rm -f "$tmp/train.out" "$tmp/train.err"
}
signal_train 1 TERM 143
signal_train 1 INT 130

# rank 0 declares the hang: the stuck chips, then the silent rank
stop_train 1 "^ftmesh: hang: rank 1 went silent" "waiting to receive .* on link"
# rank 0 itself stops: rank 1 names it, on its own stderr
stop_train 0 "^ftmesh: hang: rank 0 went silent .*(reported by rank 1)"
finish
