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
fails=0; pairs=0
i=0
while [ "$i" -lt "$n" ]; do
    j=$((i + 1))
    while [ "$j" -lt "$n" ]; do
        ab=$(comm -12 "$tmp/$i.use" "$tmp/$j.def" | head -3 | tr '\n' ' ')
        ba=$(comm -12 "$tmp/$j.use" "$tmp/$i.def" | head -3 | tr '\n' ' ')
        pairs=$((pairs + 1))
        if [ -n "$ab" ] && [ -n "$ba" ]; then
            echo "FAIL: $(cat "$tmp/$i.name") and $(cat "$tmp/$j.name") call each other" \
                "(uses ${ab}; used ${ba})"
            fails=$((fails + 1))
        fi
        j=$((j + 1))
    done
    i=$((i + 1))
done
echo "file_pairs: $n files, $pairs pairs, $fails calling each other"
[ "$fails" -eq 0 ]
