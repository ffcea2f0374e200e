# Sourced by the end-to-end test scripts: JSON checks deferred to one python3
# run at the end (tests/json_checks.py), as starting python3 per check was
# most of these scripts' time. Needs $tmp (a directory the script removes).
#
# json_check FILE EXPR WHAT: FILE is JSON lines and EXPR holds (j the last
# value, objs all, steps the step records); FILE is copied aside now, WHAT
# (the command that wrote it) names it in a failure.
# json_report: runs every check; prints each failure; sets json_passed and
# json_failed (a check that could not run counts as failed).
json_n=0
json_dir=$tmp/json_checks
mkdir -p "$json_dir"

json_check() {
    json_n=$((json_n + 1))
    cp "$1" "$json_dir/$json_n" 2>/dev/null || : >"$json_dir/$json_n"
    printf '%s' "$2" >"$json_dir/$json_n.expr"
    printf '%s' "$3" >"$json_dir/$json_n.what"
}

json_report() {
    python3 "$(dirname "$0")/json_checks.py" "$json_dir" "$json_n" >"$json_dir/report"
    sed '$d' "$json_dir/report"
    # shellcheck disable=SC2046 # the three words of the last line
    set -- $(tail -n 1 "$json_dir/report")
    if [ "${1:-}" = checked ] && [ $(($2 + $3)) = "$json_n" ]; then
        json_passed=$2 json_failed=$3
    else
        echo "FAIL: the JSON checks did not all run: $(tail -n 3 "$json_dir/report")"
        json_passed=0 json_failed=$json_n
        [ "$json_n" -gt 0 ] || json_failed=1
    fi
}
