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
: >"$tmp/names"
for d in $dirs; do
    objs="$top/$d/.libs/libftmesh_la-*.o"
    set -- $objs
    [ -f "$1" ] || set -- "$top/$d"/libftmesh_la-*.o # a static-only build
    for o in "$@"; do
        [ -f "$o" ] || continue
        f=${o##*/}; f=${f%.o}; f=${f#libftmesh_la-}
        echo "$o $d/$f.c" >>"$tmp/names"
        n=$((n + 1))
    done
done
[ "$n" -gt 0 ] || { echo "FAIL: no objects under $top/{$dirs} (build first)"; exit 1; }
# One nm over every object (nm -A: each line starts with its file) and one
# pass over every file's definitions and uses (forking comm per pair, or
# nm, sort and sed per file, took seconds): a use of a symbol another file
# defines is an edge; a pair with edges both ways fails.
# shellcheck disable=SC2046 # the objects' names hold no spaces
nm -A $(cut -d' ' -f1 "$tmp/names") | awk '
NR == FNR { name[$1] = $2; next }
{ p = $1; sub(/:[0-9a-fA-F]*$/, "", p) }
$2 ~ /^[TDBR]$/ && !seen["D", p, $3]++ { print "D", name[p], $3 }
$2 == "U" && !seen["U", p, $3]++ { print "U", name[p], $3 }' "$tmp/names" - | awk -v n="$n" '
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
