#!/bin/sh
# The watchdog over ranks. tests/mpi_hang.c under mpirun -np 2: a chip of
# rank 1 waits for data that never comes; every rank stops with a hang and
# rank 0's report names the stuck chip; and a rank whose chip computes for
# several hang timeouts is busy, not hung. Then ftmesh train with a rank
# whose process stops (SIGSTOP): rank 0 must declare the hang, name the
# silent rank and end the job with exit 3. Skipped without an MPI build.
. "$(dirname "$0")/mpi_lib.sh"
prog=${FTMESH%ftmesh}tests/mpi_hang
for arg in "" busy; do
    if timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$prog" $arg >"$tmp/out" 2>"$tmp/err"; then
        ok
    else
        bad "mpi_hang $arg: $(cat "$tmp/out" "$tmp/err" | tail -8)"
    fi
done

# Each rank's process writes its pid to $tmp/pid.RANK, then becomes ftmesh
# (exec keeps the pid; so does libtool's wrapper script).
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
echo \$\$ >"$tmp/pid.\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-x}}"
exec "\$@"
EOF
chmod +x "$tmp/rank.sh"
stopped=""
job=""
# Nothing is left stopped or running, whatever happens.
trap '[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
      [ -n "$job" ] && kill "$job" 2>/dev/null; rm -rf "$tmp"' EXIT

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
training() { [ -s "$tmp/pid.1" ] && grep -q '^ *[0-9]' "$tmp/train.out"; }
ended() { ! kill -0 "$job" 2>/dev/null; }

# The run never finishes by itself (--steps): it ends by the hang or not
# at all. The limit after the stop: the hang timeout (3 s), then a loaded
# machine's delays.
timeout "$MPI_TIMEOUT" "$MPIRUN" $quiet -np 2 "$tmp/rank.sh" "$ftmesh" train --mesh 2x4 \
    --steps 1000000 --batch 16 --hang-timeout 3 >"$tmp/train.out" 2>"$tmp/train.err" &
job=$!
if ! wait_for 90 training; then
    bad "mpi_hang stop: training did not start: $(tail -5 "$tmp/train.err")"
elif ! kill -STOP "$(cat "$tmp/pid.1")"; then
    bad "mpi_hang stop: cannot stop rank 1"
else
    stopped=$(cat "$tmp/pid.1")
    late=""
    if ! wait_for 40 ended; then
        late=1
        kill -CONT "$stopped"
        kill "$job"
    fi
    wait "$job"
    rc=$?
    job=""
    kill -CONT "$stopped" 2>/dev/null
    stopped=""
    if [ -n "$late" ]; then
        bad "mpi_hang stop: rank 1 stopped, the job still ran 40 s later"
    elif [ "$rc" != 3 ]; then
        bad "mpi_hang stop: exit $rc, want 3: $(tail -5 "$tmp/train.err")"
    elif ! grep -q "rank 1 went silent" "$tmp/train.err" ||
         ! grep -q "waiting to receive .* on link" "$tmp/train.err"; then
        bad "mpi_hang stop: the report does not name the silent rank and the stuck chips:
$(cat "$tmp/train.err")"
    else
        ok
    fi
fi
finish
