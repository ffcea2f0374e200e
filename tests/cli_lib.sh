# Sourced by the end-to-end test scripts that run the ftmesh binary and
# check its exit code, stderr and JSON: sets fail=0, a temporary
# directory $tmp (removed on exit) and the output file $out (stderr in
# $out.err). TO, if set, prefixes every command (a timeout).
fail=0
tmp=$(mktemp -d)
out=$tmp/out
trap 'rm -rf "$tmp"' EXIT
last_cmd=

# expect CODE DESCRIPTION COMMAND...: runs COMMAND, which must exit CODE
expect() {
    want=$1; what=$2; shift 2
    last_cmd="$what: $*"
    ${TO:-} "$@" >"$out" 2>"$out.err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want: $*"; cat "$out.err"; fail=1
    fi
}

# stop_at SIG PATTERN FILE COMMAND...: runs COMMAND in the background
# (stdout to FILE, stderr to FILE.err), sends it SIG once a line of FILE
# matches PATTERN (or after 120 s: sanitizer builds are slow), waits, and
# sets got to its exit code
stop_at() {
    sig=$1; pat=$2; to=$3; shift 3
    ${TO:-} "$@" >"$to" 2>"$to.err" &
    pid=$!
    i=0
    while [ $i -lt 2400 ] && ! grep -q "$pat" "$to"; do sleep 0.05; i=$((i + 1)); done
    kill -"$sig" $pid
    wait $pid
    got=$?
}

# err_is TEXT...: stderr is one line containing every TEXT
err_is() {
    lines=$(wc -l <"$out.err")
    [ "$lines" -eq 1 ] || { echo "FAIL: want one line on stderr, got:"; cat "$out.err"; fail=1; return; }
    for t in "$@"; do
        grep -qF -- "$t" "$out.err" || { echo "FAIL: want '$t' in: $(cat "$out.err")"; fail=1; }
    done
}

# json EXPR: every line of $out is JSON and EXPR holds (j: the last
# object, steps: the step records, objs: all); checked at the end by
# cli_done (tests/json_lib.sh)
. "$(dirname "$0")/json_lib.sh"
json() { json_check "$out" "$1" "$last_cmd"; }

# cli_done: runs the JSON checks and exits with the result
cli_done() {
    json_report
    [ "$json_failed" = 0 ] || fail=1
    exit $fail
}
