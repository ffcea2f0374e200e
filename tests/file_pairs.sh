#!/bin/sh
# No two source files of the schedule, collective and runtime modules call
# each other's functions: each pair of files depends one way at most, so a
# file can be read knowing only the files below it. Read from the built
# objects (nm: what each defines and what it uses), so it checks what the
# compiler saw. Run from the build directory (make check does); FTMESH_OBJS
# overrides where the objects are.
set -u
top=${FTMESH_OBJS:-.}
dirs="src/sched src/collective src/runtime"
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for d in $dirs; do
    objs="$top/$d/.libs/libftmesh_la-*.o"
    set -- $objs
    [ -f "$1" ] || set -- "$top/$d"/libftmesh_la-*.o # a static-only build
    for o in "$@"; do
        [ -f "$o" ] || continue
        f=$(basename "$o" .o | sed 's/^libftmesh_la-//')
        name="$d/$f.c"
        nm "$o" | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort -u >"$tmp/$n.def"
        nm "$o" | awk '$1 == "U" { print $2 }' | sort -u >"$tmp/$n.use"
        echo "$name" >"$tmp/$n.name"
        n=$((n + 1))
    done
done
[ "$n" -gt 0 ] || { echo "FAIL: no objects under $top/{$dirs} (build first)"; exit 1; }
# One pass over every file's definitions and uses (forking comm per pair
# took seconds): a use of a symbol another file defines is an edge; a pair
# with edges both ways fails.
for i in $(seq 0 $((n - 1))); do
    name=$(cat "$tmp/$i.name")
    sed "s|^|D $name |" "$tmp/$i.def"
    sed "s|^|U $name |" "$tmp/$i.use"
done | awk -v n="$n" '
$1 == "D" { def[$3] = $2; next }
{ use[++nu] = $2; sym[nu] = $3 }
END {
    for (k = 1; k <= nu; k++) {
        g = def[sym[k]]
        if (g == "" || g == use[k])
            continue
        e = use[k] SUBSEP g
        if (cnt[e] < 3)
            ex[e] = ex[e] sym[k] " "
        cnt[e]++
        if (!(e in order))
            order[e] = ++ne
    }
    fails = 0
    for (e in order) {
        split(e, fg, SUBSEP)
        r = fg[2] SUBSEP fg[1]
        if (!(r in order) || fg[1] > fg[2])
            continue
        print "FAIL: " fg[1] " and " fg[2] " call each other (uses " ex[e] "; used " ex[r] ")"
        fails++
    }
    printf "file_pairs: %d files, %d pairs, %d calling each other\n", n, n * (n - 1) / 2, fails
    exit fails != 0
}'
