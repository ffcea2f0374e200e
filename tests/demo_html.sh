#!/bin/sh
# ftmesh demo --html in a real browser: headless Chromium loads the page at
# its first and last step (#step=N), the dumped DOM is checked against the
# page contract and the sums (computed in tests/demo_html.py, not read from
# the page); every part of the whole lesson at its last step
# (#part=P&step=N: the dead chip, the verified sums), the --fail-during
# chip, a torus' wraps as stubs, the tree's root and bidir's two rings; screenshots at the first and last step
# must be neither blank nor identical. Skips (77) when Chromium is not
# installed.
set -u
ftmesh=${FTMESH:-./ftmesh}
here=$(dirname "$0")
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
    echo "SKIP: $chromium not found; install it (apt-get install chromium) to test the page"
    exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
browse() { # OUTPUT-OPTION URL: one headless run with a fresh profile, bounded
    prof=$(mktemp -d "$tmp/prof.XXXXXX")
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --hide-scrollbars --user-data-dir="$prof" "$@" 2>>"$tmp/chromium.log"
}

page() { # NAME ROWS COLS DEAD DEMO-ARGS...
    name=$1 rows=$2 cols=$3 dead=$4; shift 4
    "$ftmesh" demo "$@" --html "$tmp/$name.html" >"$tmp/$name.out" || { bad "demo $*"; return; }
    [ "$(cat "$tmp/$name.out")" = "wrote $tmp/$name.html" ] ||
        bad "$name: --html printed more than 'wrote FILE'"
    grep -Eq '(src|href)=' "$tmp/$name.html" && bad "$name: the page loads a resource"
    url="file://$tmp/$name.html"
    # each run also takes a screenshot of that step (checked at the end)
    (cd "$tmp" && browse --window-size=1100,900 --screenshot="$tmp/$name.first.png" \
        --dump-dom "$url#step=0") >"$tmp/$name.0.dom" || bad "$name: chromium failed at step 0"
    steps=$(sed -n 's/.*id="steps">\([0-9]*\)<.*/\1/p' "$tmp/$name.0.dom")
    [ -n "$steps" ] || { bad "$name: no #steps"; return; }
    (cd "$tmp" && browse --window-size=1100,900 --screenshot="$tmp/$name.last.png" \
        --dump-dom "$url#step=$steps") >"$tmp/$name.last.dom" || bad "$name: chromium failed"
    python3 "$here/demo_html.py" dom "$tmp/$name.0.dom" "$rows" "$cols" "$dead" 0 ||
        bad "$name: step 0"
    python3 "$here/demo_html.py" dom "$tmp/$name.last.dom" "$rows" "$cols" "$dead" last ||
        bad "$name: last step"
}

page ring 4 4 "1,1" --algo ring
# Each browser run costs a second or two of CPU: make check loads the
# parts that differ most (the dead chip, the end) and the torus, check-full
# (FTMESH_TEST_SCALE=full) every part and the --fail-during page too.
full=; [ "${FTMESH_TEST_SCALE:-}" = full ] && full=1
# the whole lesson: every part at its last step (#part=P&step=N, clamped),
# the chip that dies marked dead in part 4, verified sums said at the end
# (part 6: the chip back)
"$ftmesh" demo --html "$tmp/all.html" >/dev/null || bad "demo --html"
if [ -n "$full" ]; then set -- "1 - 0" "2 - 1" "3 - 1" "4 3,3 0" "5 - 1" "6 - 1"; else set -- "4 3,3 0" "6 - 1"; fi
for p in "$@"; do
    set -- $p
    browse --dump-dom "file://$tmp/all.html#part=$1&step=999" >"$tmp/all.$1.dom" ||
        bad "chromium failed at part $1"
    python3 "$here/demo_html.py" part "$tmp/all.$1.dom" "$1" "$2" "$3" || bad "part $1"
done
# a hole is a .chip too (class dead); the heading names the shown part's
# algorithm and mesh (part 3: 2d-lines on its fixed 4x4 torus)
grep -q 'class="chip dead" data-row="1" data-col="1"' "$tmp/all.6.dom" ||
    bad "part 6: the hole (1,1) has no .chip.dead"
browse --dump-dom "file://$tmp/all.html#part=3&step=0" >"$tmp/all.h3.dom" || bad "chromium: part 3"
grep -q '<h1>ftmesh demo: 2d-lines allreduce on a 4x4 torus</h1>' "$tmp/all.h3.dom" ||
    bad "part 3: heading $(grep -o '<h1>[^<]*' "$tmp/all.h3.dom")"
grep -q 'Shown on a 4x4 torus with a dead host, whatever --mesh is' "$tmp/all.h3.dom" ||
    bad "part 3: does not say its mesh is fixed"
# --fail-during: that chip dies in the page's failure part (part 3 with --algo)
if [ -n "$full" ]; then
    "$ftmesh" demo --algo ring --fail-during 2,2 --html "$tmp/fd.html" >/dev/null ||
        bad "fail-during page"
    browse --dump-dom "file://$tmp/fd.html#part=3&step=999" >"$tmp/fd.dom" || bad "chromium: fd"
    python3 "$here/demo_html.py" part "$tmp/fd.dom" 3 2,2 0 || bad "--fail-during page"
    # ... and comes back in the last part: alive, every chip verified
    browse --dump-dom "file://$tmp/fd.html#part=5&step=999" >"$tmp/fd5.dom" || bad "chromium: fd 5"
    python3 "$here/demo_html.py" part "$tmp/fd5.dom" 5 - 1 || bad "--fail-during page: chip back"
    python3 "$here/demo_html.py" dom "$tmp/fd5.dom" 4 4 "1,1" last || bad "--fail-during: part 5 sums"
fi
# a torus: wrap-around links, the ring's wraps and the arrows' are stubs at
# both borders (part 2 at step 1 draws all three)
"$ftmesh" demo --algo ring --mesh 6x6 --torus --fail-host 2,2 --html "$tmp/t6.html" >/dev/null ||
    bad "torus page"
for h in "part=2&step=1"; do
    browse --dump-dom "file://$tmp/t6.html#$h" >"$tmp/t6.dom" || bad "chromium: torus"
    python3 "$here/demo_html.py" wraps "$tmp/t6.dom" || bad "torus wraps at $h"
done
# the tree's root (the healthy chip nearest the centre, ties: the lowest
# number) and bidir's two rings, each marked; neither on the ring's page
# (check-full: another tree and the ring too)
set -- "tree 1,2 0" "bidir - 1"
[ -n "$full" ] && set -- "$@" "tree 2,1 0 --mesh 4x3 --fail 1,1" "ring - 0"
for m in "$@"; do
    # shellcheck disable=SC2086 # m is several words
    set -- $m
    algo=$1 root=$2 two=$3
    shift 3
    "$ftmesh" demo --algo "$algo" "$@" --html "$tmp/m.html" >/dev/null ||
        { bad "demo --algo $algo $*"; continue; }
    browse --dump-dom "file://$tmp/m.html#part=2&step=1" >"$tmp/m.dom" || bad "chromium: $algo"
    python3 "$here/demo_html.py" marks "$tmp/m.dom" "$root" "$two" || bad "marks: --algo $algo $*"
done
# the screenshots of the ring page at its first and last step (page above)
if [ -s "$tmp/ring.first.png" ] && [ -s "$tmp/ring.last.png" ]; then
    python3 "$here/demo_html.py" png "$tmp/ring.first.png" "$tmp/ring.last.png" || bad "screenshots"
else
    bad "no screenshots"
fi
if [ $fails != 0 ]; then
    tail -20 "$tmp/chromium.log"
    exit 1
fi
echo "demo_html: all passed"
