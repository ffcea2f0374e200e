#!/bin/sh
# ftmesh demo --html in a real browser: headless Chromium loads the page at
# its first and last step (#step=N), the dumped DOM is checked against the
# page contract and the sums (computed in tests/demo_html.py, not read from
# the page); every part of the whole lesson at its last step
# (#part=P&step=N: the dead chip, the verified sums), the --fail-during
# chip, a torus' wraps as stubs, the tree's root and bidir's two rings, a
# link dead one way, a copy of partial sums; screenshots at the first and last step
# must be neither blank nor identical. Skips (77) when Chromium is not
# installed. The pages load in two Chromium runs (tests/browse.py): the
# ring page's last step is known only from its first.
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
browse() { # reads jobs (URL DOM-FILE [PNG-FILE]); one bounded Chromium, fresh profile
    prof=$(mktemp -d "$tmp/prof.XXXXXX")
    timeout 120 python3 "$here/browse.py" "$chromium" "$prof" 2>>"$tmp/chromium.log"
}
# demo NAME ARGS...: writes $tmp/NAME.html
demo() {
    name=$1; shift
    "$ftmesh" demo "$@" --html "$tmp/$name.html" >"$tmp/$name.out" || { bad "demo $* --html"; return 1; }
}

# Each browser run costs a second or two of CPU: make check loads the
# parts that differ most (the dead chip, the end) and the torus, check-full
# (FTMESH_TEST_SCALE=full) every part and the --fail-during page too.
full=; [ "${FTMESH_TEST_SCALE:-}" = full ] && full=1
if [ -n "$full" ]; then
    parts="1,-,0 2,-,1 3,-,1 4,3:3,0 5,-,1 6,-,1"
    marks="tree,1:2,0 bidir,-,1 tree,2:1,0,--mesh,4x3,--fail,1:1 ring,-,0"
else
    parts="4,3:3,0 6,-,1"
    marks="tree,1:2,0 bidir,-,1"
fi

# The pages, then every load but the ring page's last step in one run.
demo ring --algo ring
[ "$(cat "$tmp/ring.out")" = "wrote $tmp/ring.html" ] || bad "ring: --html printed more than 'wrote FILE'"
grep -Eq '(src|href)=' "$tmp/ring.html" && bad "ring: the page loads a resource"
demo all
[ -n "$full" ] && demo fd --algo ring --fail-during 2,2
demo t6 --algo ring --mesh 6x6 --torus --fail-host 2,2
demo ow --algo ring --mesh 6x6 --fail-link '0,0>0,1'
demo c2 --algo 2d --mesh 4x4
demo t28 --algo ring --mesh 2x8 --torus
demo ln --algo 2d-lines
demo tp --algo trees
demo big --algo ring --mesh 8x8 --fail 3,4
demo bd --algo 2d --mesh 4x4 --torus --fail 1,1
n=0
for m in $marks; do
    n=$((n + 1))
    # shellcheck disable=SC2046,SC2086 # the demo options after the third field
    demo "m$n" --algo "${m%%,*}" $(echo "$m" | cut -d, -f4- | tr ",:" " ,")
done
{
    echo "file://$tmp/ring.html#step=0 $tmp/ring.0.dom $tmp/ring.first.png"
    for p in $parts; do
        echo "file://$tmp/all.html#part=${p%%,*}&step=999 $tmp/all.${p%%,*}.dom"
    done
    echo "file://$tmp/all.html#part=3&step=0 $tmp/all.h3.dom"
    if [ -n "$full" ]; then
        echo "file://$tmp/fd.html#part=3&step=999 $tmp/fd.dom"
        echo "file://$tmp/fd.html#part=5&step=999 $tmp/fd5.dom"
    fi
    echo "file://$tmp/t6.html#part=2&step=1 $tmp/t6.dom"
    echo "file://$tmp/ow.html#part=2&step=1 $tmp/ow.dom"
    echo "file://$tmp/c2.html#part=2&step=8 $tmp/c2.dom"
    echo "file://$tmp/c2.html#part=2&step=10 $tmp/c2d.dom"
    echo "file://$tmp/t28.html#part=2&step=1 $tmp/t28.dom"
    echo "file://$tmp/ln.html#part=2&step=1 $tmp/ln.dom"
    i=0
    for m in $marks; do
        i=$((i + 1))
        echo "file://$tmp/m$i.html#part=2&step=1 $tmp/m$i.dom"
    done
    echo "file://$tmp/m1.html#part=1&step=0 $tmp/m1p1.dom"
    echo "file://$tmp/m2.html#part=2&step=0 $tmp/m2s0.dom"
    echo "file://$tmp/tp.html#part=1&step=0 $tmp/tp1.dom"
    echo "file://$tmp/big.html#part=2&step=0 $tmp/big.dom"
    echo "file://$tmp/bd.html#part=1&step=0 $tmp/bd.dom"
} | browse || bad "chromium failed (the first run)"

# the ring page at its first and last step: the contract and the sums
rows=4 cols=4 dead=1,1
steps=$(sed -n 's/.*id="steps">\([0-9]*\)<.*/\1/p' "$tmp/ring.0.dom")
if [ -n "$steps" ]; then
    echo "file://$tmp/ring.html#step=$steps $tmp/ring.last.dom $tmp/ring.last.png" | browse ||
        bad "ring: chromium failed at the last step"
    python3 "$here/demo_html.py" dom "$tmp/ring.0.dom" "$rows" "$cols" "$dead" 0 ||
        bad "ring: step 0"
    python3 "$here/demo_html.py" dom "$tmp/ring.last.dom" "$rows" "$cols" "$dead" last ||
        bad "ring: last step"
else
    bad "ring: no #steps"
fi

# the whole lesson: every part at its last step (#part=P&step=N, clamped),
# the chip that dies marked dead in part 4, verified sums said at the end
# (part 6: the chip back)
for p in $parts; do
    # shellcheck disable=SC2046 # the three fields
    set -- $(echo "$p" | tr ',:' ' ,')
    python3 "$here/demo_html.py" part "$tmp/all.$1.dom" "$1" "$2" "$3" || bad "part $1"
done
# a hole is a .chip too (class dead); the heading names the shown part's
# algorithm and mesh (part 3: 2d-lines on its fixed 4x4 torus)
grep -q 'class="chip dead" data-row="1" data-col="1"' "$tmp/all.6.dom" ||
    bad "part 6: the hole (1,1) has no .chip.dead"
grep -q '<h1>ftmesh demo: 2d-lines allreduce on a 4x4 torus</h1>' "$tmp/all.h3.dom" ||
    bad "part 3: heading $(grep -o '<h1>[^<]*' "$tmp/all.h3.dom")"
grep -q 'Shown on a fixed 4x4 torus with a dead host at (2,2), whatever --mesh is' "$tmp/all.h3.dom" ||
    bad "part 3: does not say its mesh is fixed"
# --fail-during: that chip dies in the page's failure part (part 3 with --algo)
# ... and comes back in the last part: alive, every chip verified
if [ -n "$full" ]; then
    python3 "$here/demo_html.py" part "$tmp/fd.dom" 3 2,2 0 || bad "--fail-during page"
    python3 "$here/demo_html.py" part "$tmp/fd5.dom" 5 - 1 || bad "--fail-during page: chip back"
    python3 "$here/demo_html.py" dom "$tmp/fd5.dom" 4 4 "1,1" last || bad "--fail-during: part 5 sums"
fi
# a torus: wrap-around links, the ring's wraps and the arrows' are stubs at
# both borders (part 2 at step 1 draws all three)
python3 "$here/demo_html.py" wraps "$tmp/t6.dom" || bad "torus wraps at part=2&step=1"
# a torus side of 2 has no wrap link: no stubs between its rows
python3 "$here/demo_html.py" wraps "$tmp/t28.dom" norows || bad "2x8 torus wraps"
# 2d-lines' first step sends two transfers over some links: side by side
python3 "$here/demo_html.py" apart "$tmp/ln.dom" || bad "2d-lines part=2&step=1: overlaps"
# a link dead one way only: an arrow the dead way beside it, never drawn
# dead both ways (the ring runs over its other way)
python3 "$here/demo_html.py" oneway "$tmp/ow.dom" || bad "one-way dead link at part=2&step=1"
# 2d's column phase copies partial sums: the caption says so
python3 "$here/demo_html.py" caption "$tmp/c2.dom" "green arrows carry partial sums" ||
    bad "2d part=2&step=8: caption"
# the tree's root (the healthy chip nearest the centre, ties: the lowest
# number) and bidir's two rings, each marked; neither on the ring's page
# (check-full: another tree and the ring too)
i=0
for m in $marks; do
    i=$((i + 1))
    # shellcheck disable=SC2046 # algo, root, two, then the demo options
    set -- $(echo "$m" | tr ',:' ' ,')
    algo=$1 root=$2 two=$3
    shift 3
    python3 "$here/demo_html.py" marks "$tmp/m$i.dom" "$root" "$two" || bad "marks: --algo $algo $*"
done
# step 0 marks the chip the ring's detour passes through, as the text's '*'
grep -q 'class="box fwd" id="box8"' "$tmp/ring.0.dom" || bad "ring page step 0: the detour's forwarder (2,0) not marked"
python3 "$here/demo_html.py" heads "$tmp/ring.0.dom" || bad "ring page step 0: a hop without its head"
# the tree's page: part 1 draws the tree (a link to its parent for each of
# the 15 chips but the root) and the root, and its legend says nothing of
# rings (no part runs one)
grep -q "The mesh; the gold box is the tree's root (1,2)" "$tmp/m1p1.dom" &&
    [ "$(grep -o 'class="ring tree"' "$tmp/m1p1.dom" | wc -l)" = 14 ] &&
    grep -q 'class="lg-ring" style="display: none;"' "$tmp/m1p1.dom" &&
    ! grep -q 'class="lg-root" style="display: none;"' "$tmp/m1p1.dom" ||
    bad "tree page part 1: no root, or a ring legend"
# a page's legend names only the marks some part has: no torus, dead link,
# one-way link or second ring on the tree's page
for k in torus dead2 oneway bidir lost; do
    grep -q "class=\"lg-$k\" style=\"display: none;\"" "$tmp/m1p1.dom" ||
        bad "tree page: the legend explains $k marks it does not draw"
done
# 2d's part 1 draws the band around the hole, its ring both ways (the
# second one's detours: (1,0) -> (1,3) over 5 links, (1,2) -> (1,0) over 4,
# (1,3) -> (2,3) over 3), and its legend says so; no other page's does
[ "$(grep -o 'class="ring r1[ "]' "$tmp/bd.dom" | wc -l)" = 9 ] &&
    [ "$(grep -o 'class="ring r2[ "]' "$tmp/bd.dom" | wc -l)" = 21 ] &&
    grep -q 'class="lg-bands">' "$tmp/bd.dom" && grep -q 'class="lg-bands" style="display: none;"' "$tmp/m1p1.dom" &&
    grep -q "the pale bands are the rings that go around a fault, two per band" "$tmp/bd.dom" ||
    bad "2d page part 1: the band's two rings not drawn, or not explained"
# a page with too many numbers to read when fitted starts at full size
grep -q 'id="view" class=""' "$tmp/big.dom" && grep -q 'id="view" class="fit"' "$tmp/m1p1.dom" ||
    bad "the 8x8 page starts fitted (unreadable), or the 4x4 one does not"
# ... and keeps those it draws: the one-way link's, the torus' wraps, the
# forwarders of 2d's detours on a mesh (no ring is drawn there)
grep -q 'class="lg-oneway">' "$tmp/ow.dom" && grep -q 'class="lg-torus">' "$tmp/t28.dom" &&
    grep -q 'class="lg-lost">' "$tmp/all.4.dom" ||
    bad "the legend hides the one-way, wrap or lost marks of pages that draw them"
grep -q 'class="box fwd"' "$tmp/c2d.dom" && grep -q 'class="lg-fwd">' "$tmp/c2d.dom" &&
    grep -q 'class="lg-fwd" style="display: none;"' "$tmp/m1p1.dom" ||
    bad "the legend explains the forwarders' boxes where none is drawn, or not where 2d draws them"
# bidir's second ring is drawn with its own detour (through (3,1), chip
# 13, as its schedule runs it), so both forwarders are boxed at step 0
grep -q 'class="box fwd" id="box13"' "$tmp/m2s0.dom" && grep -q 'class="box fwd" id="box8"' "$tmp/m2s0.dom" ||
    bad "bidir page step 0: the two rings' forwarders (2,0) and (3,1) not both boxed"
# the trees page's part 1 draws the first tree (a link to the parent for
# each of the 14 chips but its root) and names its root, as the text does
grep -q "The mesh; the gold box is the first tree's root (0,0)" "$tmp/tp1.dom" &&
    [ "$(grep -o 'class="ring tree"' "$tmp/tp1.dom" | wc -l)" = 14 ] ||
    bad "trees page part 1: no first tree or root"
# the screenshots of the ring page at its first and last step
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
