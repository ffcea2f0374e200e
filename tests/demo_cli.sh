#!/bin/sh
# ftmesh demo in plain text (stdout not a terminal): no colour, no waiting
# (--step and --delay are ignored), lines within 80 columns, and after the
# last step every healthy chip holds the exact sums (tests/demo_cli.py
# computes them from the inputs). Every algorithm; the whole lesson too.
set -u
ftmesh=${FTMESH:-./ftmesh}
here=$(dirname "$0")
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the whole lesson (parts 1-6); --step and a long --delay must not wait
start=$(date +%s)
"$ftmesh" demo --step --delay 30 </dev/null >"$tmp/out" || bad "demo exited $?"
[ $(( $(date +%s) - start )) -lt 30 ] || bad "demo waited with stdout not a terminal"
python3 "$here/demo_cli.py" "$tmp/out" 4 4 "1,1" || bad "demo sums"
for part in "1. The mesh and its hole" "2. ring allreduce" "3. The 2-D algorithm" \
            "4. A chip dies in the middle" "dies at the start of this step" "The recovery run" \
            "6. The chip comes back" "Chip (3,3) is repaired"; do
    grep -q "$part" "$tmp/out" || bad "demo: no '$part'"
done
tr "\n" " " <"$tmp/out" | grep -q "Here 7 B and 8 w: 1 ring edge must join" || bad "demo: no two-colour argument"
# part 1 says what this mesh is: its holes (if any), the numbers per chip
tr "\n" " " <"$tmp/out" | grep -q "== 1. The mesh and its hole == A 4x4 mesh of chips; 1 dead, 15 healthy. Each healthy chip holds 15 small numbers;" ||
    bad "demo: part 1 of the default lesson: $(head -3 "$tmp/out")"
"$ftmesh" demo --algo ring --mesh 8x8 >"$tmp/out" || bad "demo --mesh 8x8 exited $?"
tr "\n" " " <"$tmp/out" | grep -q "== 1. The mesh == An 8x8 mesh of chips; 0 dead, 64 healthy. Each healthy chip holds 64 small numbers;" ||
    bad "demo --mesh 8x8: part 1: $(head -3 "$tmp/out")"
"$ftmesh" demo --algo bidir --mesh 4x4 --fail 0,0 --fail 3,3 >"$tmp/out" || bad "demo two holes exited $?"
tr "\n" " " <"$tmp/out" | grep -q "== 1. The mesh and its holes == A 4x4 mesh of chips; 2 dead, 14 healthy. Each healthy chip holds 28 small numbers;" ||
    bad "demo two holes: part 1: $(head -3 "$tmp/out")"
for algo in ring bidir tree; do
    "$ftmesh" demo --algo $algo --no-color >"$tmp/out" || bad "demo --algo $algo"
    python3 "$here/demo_cli.py" "$tmp/out" 4 4 "1,1" || bad "demo --algo $algo sums"
done
# 2d's band around a hole: both its rings drawn, and why the second one
# detours between neighbours ((1,3) -> (2,3) goes round the torus column:
# the first ring sends (1,3) -> (2,3) over that link)
"$ftmesh" demo --algo 2d --mesh 4x4 --torus --fail 1,1 --no-color >"$tmp/out" &&
    grep -q "^Band rows 1-2, around its faults: its ring one way" "$tmp/out" &&
    grep -q "^detour (1,3) -> (2,3): 3 hops via N,N,N" "$tmp/out" &&
    tr "\n" " " <"$tmp/out" | grep -q "routed to avoid, where it can, the links its first one uses in the same direction.* Here no link carries both rings the same way" ||
    bad "demo --algo 2d: the band's second ring's detours unexplained"
# ... and why its column phase crosses columns (the drift layout)
tr "\n" " " <"$tmp/out" | tr -s " " | grep -q "the drift layout), so a column-phase transfer may cross columns" ||
    bad "demo --algo 2d: the drift layout of the column phase not told"
"$ftmesh" demo --algo 2d --mesh 8x8 --torus --fail 3,3 --no-color | grep -q "drift layout" &&
    bad "demo --algo 2d: the drift layout told where column rings run"
# ... how many columns hold a hole, and the whole sentence where the bands
# are many (8x8 torus, a dead host: seven bands)
tr "\n" " " <"$tmp/out" | tr -s " " | grep -q "Here 1 of the 4 columns holds a dead chip, more than the 1/8" ||
    bad "demo --algo 2d: the drift layout's reason not counted"
"$ftmesh" demo --algo 2d --mesh 8x8 --torus --fail-host 2,2 --no-color | tr "\n" " " | tr -s " " |
    grep -q "may cross columns\. " || bad "demo --algo 2d, 8x8 torus: the drift layout's sentence cut short"
# ... and where it cannot, how many links carry both (the default lesson's
# first ring detours over three links its second one takes one hop)
"$ftmesh" demo --algo 2d --no-color >"$tmp/out" &&
    tr "\n" " " <"$tmp/out" | tr -s " " | grep -q "Here 3 links carry both rings the same way" ||
    bad "demo --algo 2d: the links both rings cross not told"
# a detoured transfer names its route; a line is cut only where it would
# pass 80 columns, and says how many positions it leaves out
"$ftmesh" demo --algo 2d-concurrent --mesh 4x4 --fail 1,1 --no-color >"$tmp/out" &&
    grep -q "^  (1,0) -> (1,2) #4: 2 + 9 = 11 (detour 4 hops: S,E,E,N)$" "$tmp/out" ||
    bad "demo: a detour's route not shown"
"$ftmesh" demo --algo tree --mesh 2x2 --no-color >"$tmp/out" &&
    grep -q "^  (1,1) -> (0,1) #0: 2 + 4 = 6, #1: 3 + 5 = 8, #2: 4 + 6 = 10, #3: 5 + 7 = 12$" "$tmp/out" ||
    bad "demo: a line that fits in 80 columns was cut"
"$ftmesh" demo --algo tree --mesh 8x8 --fail 3,4 --no-color >"$tmp/out" &&
    grep -q "^  (7,7) -> (6,7) #0: 2 + 1 = 3, #1: 3 + 2 = 5, #2: 4 + 3 = 7, ... (60 more)$" "$tmp/out" ||
    bad "demo: a cut line does not say how many positions it leaves out"
# the page's words for a part are whole, however long (2d-lines's, with
# its usable rows and columns, on the largest mesh)
"$ftmesh" demo --algo 2d-lines --mesh 8x8 --fail 3,4 --html "$tmp/l8.html" >/dev/null &&
    grep -q 'in step n - 1\. The lesson ends here: with --fail-during R,C a chip dies too, and the recovery and its comeback follow\."' "$tmp/l8.html" ||
    bad "demo --algo 2d-lines --html: the part's words are cut"
# 2d-lines says which rows and columns are usable and who owns nothing,
# asked for alone as in the default lesson's part 3
for args in "--algo 2d-lines --mesh 4x4 --fail 1,1" ""; do
    # shellcheck disable=SC2086 # the options
    "$ftmesh" demo $args --no-color >"$tmp/out" &&
        tr "\n" " " <"$tmp/out" | grep -q "Usable columns (all chips alive): [0-9 ]*; usable rows: [0-9 ]*\. In half A the healthy chips of the other columns own nothing" ||
        bad "demo $args: 2d-lines's usable rows and columns not told"
done
# trees draws its first tree as tree does: an arrow from each chip to its
# parent ((2,1) hangs off (2,0), not the other way), not edges both ways
"$ftmesh" demo --algo trees --no-color >"$tmp/out" &&
    sed -n '/^== 1/,/^== 2/p' "$tmp/out" | grep -q "^ 2  o<--o<--o   o$" &&
    ! sed -n '/^== 1/,/^== 2/p' "$tmp/out" | grep -q "<->" ||
    bad "demo --algo trees: the first tree not drawn toward its root"
# 2d-concurrent's halves need not be in the same phase: each is named
"$ftmesh" demo --algo 2d-concurrent --mesh 8x8 --fail 3,4 --no-color >"$tmp/out" &&
    grep -q "^Step 16 of 74  rows (half A) and rows (half B) reduce-scatter" "$tmp/out" &&
    grep -q "^Step 1 of 74  rows (half A) and columns (half B) reduce-scatter" "$tmp/out" ||
    bad "demo --algo 2d-concurrent names each half's phase"
for algo in 2d 2d-concurrent trees; do
    "$ftmesh" demo --algo $algo --mesh 4x4 --torus --fail-host 2,2 >"$tmp/out" ||
        bad "demo --algo $algo"
    python3 "$here/demo_cli.py" "$tmp/out" 4 4 "2,2;2,3;3,2;3,3" || bad "demo --algo $algo sums"
done
# one global order: every value a step line prints follows from the values
# printed before it (tests/demo_order.py replays them), for every algorithm
# on meshes and tori, with and without holes, the failure part included
# (one python3 over every run's output, after the runs: starting it per run
# was most of the time)
while read -r args; do
    ko=$((${ko:-0} + 1))
    "$ftmesh" demo $args --no-color >"$tmp/order.$ko" || bad "demo $args: exit $?"
    echo "$tmp/order.$ko: demo $args" >>"$tmp/order.list"
done <<EOF
--algo ring --mesh 5x5 --torus --fail 2,2 --fail-during 0,1
--algo bidir --mesh 4x6 --fail-link 1,1-1,2
--algo tree
--algo tree --mesh 5x7 --torus --fail 2,2 --fail-during 0,0
--algo 2d --mesh 6x6 --torus
--algo 2d --mesh 4x4 --torus --fail-host 2,2
--algo 2d-concurrent --mesh 6x6 --torus --fail-host 2,2
--algo 2d-lines --mesh 8x8 --torus --fail-host 2,2
--algo 2d-lines --mesh 6x4
--algo trees --mesh 6x6 --torus --fail-host 2,2
--algo trees --mesh 5x5 --fail 2,2 --fail-during 0,1
--mesh 3x5 --fail 1,2
EOF
python3 "$here/demo_order.py" "$tmp"/order.[0-9]* >"$tmp/order.report" || {
    grep -v '^ok: ' "$tmp/order.report"; cat "$tmp/order.list"; bad "demo: order (the runs above)"; }
# a step that says its receivers copy finished sums copies only final sums
# (a 2-D schedule's column phase copies partial sums too); the 2-D row
# phase stays in the bands the lesson names (on a mesh rows are paired); a
# step told by what moved names exactly the positions moved along rows and
# along columns (one python3 over every run's output, as above)
while read -r args; do
    kw=$((${kw:-0} + 1))
    "$ftmesh" demo $args >"$tmp/words.$kw" || bad "demo $args: exit $?"
    echo "$tmp/words.$kw: demo $args" >>"$tmp/words.list"
done <<EOF
--algo 2d --mesh 4x4
--algo 2d-concurrent --mesh 4x4
--algo 2d --mesh 5x1
--algo 2d-concurrent --mesh 6x6 --fail-link 0,0>0,1
--algo 2d --mesh 8x8 --fail 3,4
--algo trees --mesh 5x5 --fail 2,2
--algo 2d --mesh 6x6 --fail-link 0,0>0,1
--algo 2d --mesh 4x4 --torus --fail-host 2,2
--algo 2d-lines
--algo 2d-lines --mesh 8x8 --torus --fail-host 2,2
--algo 2d-lines --mesh 6x4
EOF
python3 "$here/demo_words.py" "$tmp"/words.[0-9]* >"$tmp/words.report" || {
    grep -v '^demo_words: ' "$tmp/words.report"; cat "$tmp/words.list"; bad "demo: step words (the runs above)"; }
"$ftmesh" demo --algo 2d --mesh 4x4 >"$tmp/out"
grep -q "Each row runs a ring" "$tmp/out" && bad "demo 2d: each row a ring, on a mesh"
grep -q "^Here the bands are rows 0-1, 2-3\.$" "$tmp/out" || bad "demo 2d: the bands not named"
for algo in ring bidir tree; do
    "$ftmesh" demo --algo $algo --mesh 4x4 --fail-during 2,3 >"$tmp/a"
    "$ftmesh" demo --algo $algo --mesh 4x4 --fail-during 2,3 >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || bad "demo --algo $algo --fail-during: differs between runs"
done
# the tree's root dies: its step shows the lost copies; who is behind is
# told in the lesson's global steps (never a chip's own step count)
"$ftmesh" demo --algo tree --fail-during 1,2 >"$tmp/out" || bad "demo tree root dies"
sed -n '/^== 3/,/^== 4/p' "$tmp/out" | grep -q '^  (1,2) -> .*(lost)' ||
    bad "demo tree root dies: nothing marked lost"
"$ftmesh" demo --algo tree --fail-during 2,2 >"$tmp/out" || bad "demo tree --fail-during 2,2"
grep -q '^ *[0-9]* of *[0-9]*:' "$tmp/out" && bad "demo: behind told in per-chip steps"
die=$(tr "\n" " " <"$tmp/out" | sed -n 's/.*dies at the *start of step \([0-9]*\),.*/\1/p')
tr "\n" " " <"$tmp/out" | grep -q "The step of each survivor's last transfer (1 to $die)" ||
    bad "demo: behind list not in the lesson's steps"
# ... the page tells the same list
"$ftmesh" demo --algo tree --fail-during 2,2 --html "$tmp/behind.html" >/dev/null &&
    grep -q "The step of each survivor's last transfer (\*: its transfer of that step touched the dead chip and was lost): step 7: (0,2) (1,2)\* (1,3); step 4: (0,3);" "$tmp/behind.html" ||
    bad "demo --html: the death part's page lacks the survivors' list"
# ... and where every survivor was in one step, that is said on the page too
"$ftmesh" demo --html "$tmp/def.html" >/dev/null &&
    grep -q "Every survivor was in step 15; the transfers marked lost went to, from or through the dead chip\." "$tmp/def.html" ||
    bad "demo --html: the death part's page does not say where the survivors were"
# every part of 2d's page draws the bands' rings (the recovery: the rebuilt
# ones); part 1 says what its picture draws, as the text does
"$ftmesh" demo --algo 2d --mesh 4x4 --torus --fail 1,1 --fail-during 2,2 --html "$tmp/b5.html" >/dev/null &&
    [ "$(grep -o 'bands:\[{chips' "$tmp/b5.html" | wc -l)" = 5 ] &&
    grep -q "The pale bands are the rings of the bands that go around a fault, both ways" "$tmp/b5.html" ||
    bad "demo --algo 2d --html: a part without its bands' rings, or part 1 without its words"
"$ftmesh" demo --algo trees --html "$tmp/tp1.html" >/dev/null &&
    grep -q "The tree of position #0, one of the 15 trees that carry the 15 positions here (this one carries #0 alone): each arrow points to a chip's parent" "$tmp/tp1.html" ||
    bad "demo --algo trees --html: part 1 does not say what it draws"
# ... nor the text: which tree, how many, which positions it carries
"$ftmesh" demo --algo trees --mesh 8x8 --no-color >"$tmp/t8" &&
    tr "\n" " " <"$tmp/t8" | tr -s " " | grep -q "The tree of position #0, one of the 16 trees that carry the 64 positions here (this one carries #0, #1, #2, #3)" ||
    bad "demo --algo trees: part 1 does not say which tree it draws"
# ... and a leaf listed at step 1 is not called slow: it waits for the sums
tr "\n" " " <"$tmp/out" | grep -q "one listed at an earlier step is not slow.*a tree's leaves send once" ||
    bad "demo: the survivors' list calls idle leaves behind"
# the root (1,2) copied down to the dead (2,2) in step 7: there, not behind
grep -q '^  step  7: (0,2) (1,2)\* (1,3)$' "$tmp/out" || bad "demo: behind list"
grep -q '^  step  4: (0,3)$' "$tmp/out" || bad "demo: behind list, step 4"
# the step cut by the death is not "of" a count of steps the run never had
grep -q "^Step $die (the chip dies in it)" "$tmp/out" && ! grep -q "^Step $die of $die " "$tmp/out" ||
    bad "demo: the death's step header"
# where the survivors stand is what ran: no step 0, no lockstep (chips run
# at their own pace); a leaf dies before its sums come down, once both
# survivors hold every sum: not unfinished, but counting the dead chip
"$ftmesh" demo --mesh 1x3 --algo tree --fail-during 0,0 >"$tmp/out" || bad "demo 1x3 tree"
sed -n '/health monitor/,/^== /p' "$tmp/out" >"$tmp/behind"
grep -q 'step 0\|lockstep\|unfinished' "$tmp/behind" && bad "demo 1x3 tree: $(cat "$tmp/behind")"
tr "\n" " " <"$tmp/out" | grep -q "Every survivor holds the sums already, but they count the dead chip's numbers" ||
    bad "demo 1x3 tree: the survivors' finished sums not said"
# tree and trees: part 1 draws the tree the lesson runs, with its root,
# not the router's ring; so does the recovery
"$ftmesh" demo --mesh 6x6 --fail 2,3 --algo tree --fail-during 4,4 >"$tmp/out" || bad "demo tree dies"
sed -n '/^== 1/,/^== 2/p' "$tmp/out" | grep -q "The router's ring\|detour" && bad "demo tree: the router's ring in part 1"
[ "$(grep -c '^The tree it runs (arrows point to the parent; R: the root):$' "$tmp/out")" = 2 ] &&
    grep -q '^ 2  o-->o-->R   X   o   o$' "$tmp/out" || bad "demo tree: its tree and root not drawn"
tr "\n" " " <"$tmp/out" | grep -q "dies at the start of step 11, having sent 1 of its 2 transfers" ||
    bad "demo tree dies: what the chip had sent"
"$ftmesh" demo --mesh 4x4 --fail 1,1 --fail-during 2,2 --algo trees >"$tmp/out" || bad "demo trees dies"
sed -n '/health monitor/,/^== /p' "$tmp/out" | grep -q 'lockstep' && bad "demo trees dies: lockstep claimed"
# the recovery draws the mesh after the death; the router's ring only for
# the algorithms that run it
"$ftmesh" demo --algo tree --fail-during 2,2 --mesh 4x4 --fail 1,1 >"$tmp/out" || bad "demo tree recovery"
sed -n '/^== 4. The recovery/,/recovery run takes/p' "$tmp/out" >"$tmp/rec"
grep -q '^ 2  o   o   X   o$' "$tmp/rec" || bad "demo tree recovery: no mesh after the death"
grep -qi 'ring\|detour' "$tmp/rec" && bad "demo tree recovery: a ring the tree never runs"
grep -q '^The tree it runs' "$tmp/rec" || bad "demo tree recovery: its tree not drawn"
"$ftmesh" demo --algo ring --fail-during 2,2 --mesh 4x4 --fail 1,1 >"$tmp/out" || bad "demo ring recovery"
sed -n '/^== 4. The recovery/,/recovery run takes/p' "$tmp/out" | grep -q "The router's ring" ||
    bad "demo ring recovery: no ring"
# part 3's torus picture draws its wrap links, and its legend says so
"$ftmesh" demo >"$tmp/out" || bad "demo"
sed -n '/^== 3/,/chessboard/p' "$tmp/out" >"$tmp/p3"
grep -q 'torus wrap links' "$tmp/p3" && grep -q '^ 0    - o   o   o   o -$' "$tmp/p3" ||
    bad "demo part 3: the torus's wrap links not drawn: $(cat "$tmp/p3")"
"$ftmesh" demo --algo ring --mesh 4x4 --torus >"$tmp/out" || bad "demo torus ring"
sed -n '/^== 1/,/chessboard/p' "$tmp/out" | grep -q 'torus wrap links' || bad "demo torus ring: wrap legend lost"
# an odd-sided torus: the colours say nothing there, and the lesson does
# not claim the holes leave no better ring (this router does not look)
"$ftmesh" demo --mesh 5x5 --torus --fail 2,2 >"$tmp/out" || bad "demo odd torus"
tr '\n' ' ' <"$tmp/out" | grep -q "The colours do not explain it: on a torus with an odd side this router does not look" ||
    bad "demo odd torus: why the detour"
tr '\n' ' ' <"$tmp/out" | grep -q "leave this router no ring\|Equal counts are needed" && bad "demo odd torus: a false reason"
# tables and step headers fit 80 columns; a finished sum's mark never runs
# into the next value
for args in "--mesh 5x5 --fail 0,4 --fail-during 3,2" "--algo 2d --mesh 6x6 --torus --fail-host 2,2" \
            "--algo 2d-concurrent --mesh 8x8 --fail 3,4"; do
    "$ftmesh" demo $args >"$tmp/out" || bad "demo $args"
    long=$(awk 'length > 80' "$tmp/out")
    [ -z "$long" ] || bad "demo $args: over 80 columns: $long"
    grep -q '[0-9]\*[0-9]' "$tmp/out" && bad "demo $args: values run together"
done
# the default hole only without --mesh: a named 4x4 mesh has the faults given
"$ftmesh" demo --mesh 4x4 --algo ring >"$tmp/out" || bad "demo --mesh 4x4"
grep -q "0 dead, 16 healthy" "$tmp/out" || bad "demo --mesh 4x4: a hole nobody asked for"
python3 "$here/demo_cli.py" "$tmp/out" 4 4 "" || bad "demo --mesh 4x4 sums"
# the packed trees' steps say which way they went (up / down the trees),
# never rows and columns they do not have
"$ftmesh" demo --algo trees >"$tmp/out" || bad "demo --algo trees"
grep -q '^Step 1 of [0-9]*  up the trees: partial sums of \(#\|[0-9]* in #\)' "$tmp/out" || bad "trees: step 1 header"
grep -q '^Step [0-9]* of [0-9]*  down the trees: finished sums of \(#\|[0-9]* in #\)' "$tmp/out" || bad "trees: no copy down"
grep -q '^Step .*\(rows\|columns\) #' "$tmp/out" && bad "trees: steps told as rows and columns"
# rings --algo trees draws the first tree: on a 5x5 mesh without (2,2),
# 23 links (a spanning tree of the 24 live chips) and its root R
"$ftmesh" rings --mesh 5x5 --fail 2,2 --algo trees >"$tmp/out" || bad "rings --algo trees"
sed -n '/^the first tree/,/^o chip/p' "$tmp/out" | sed '1,2d;$d' >"$tmp/pic"
[ "$(grep -o '<->\|\^v' "$tmp/pic" | wc -l)" = 23 ] || bad "rings --algo trees: not a spanning tree"
[ "$(grep -o R "$tmp/pic" | wc -l)" = 1 ] || bad "rings --algo trees: not one root"
# --trace on the demo: the lesson's run as Chrome trace JSON
"$ftmesh" demo --algo bidir --trace "$tmp/d.json" --trace-clock modeled >/dev/null ||
    bad "demo --trace"
python3 "$here/trace_cli.py" "$tmp/d.json" modeled 4 4 "1,1" - || bad "demo --trace JSON"
# the largest lesson mesh still fits 80 columns
"$ftmesh" demo --algo ring --mesh 8x8 --fail 3,4 >"$tmp/out" || bad "demo 8x8"
python3 "$here/demo_cli.py" "$tmp/out" 8 8 "3,4" || bad "demo 8x8 sums"
# a terminal: colour unless --no-color or NO_COLOR (when script(1) can fake one)
if command -v script >/dev/null 2>&1; then
    script -qec "$ftmesh demo --algo tree" /dev/null </dev/null >"$tmp/tty" 2>&1
    grep -q "$(printf '\033')\[" "$tmp/tty" || bad "no colour on a terminal"
    NO_COLOR=1 script -qec "$ftmesh demo --algo tree" /dev/null </dev/null >"$tmp/tty" 2>&1
    grep -q "$(printf '\033')\[" "$tmp/tty" && bad "colour despite NO_COLOR"
    script -qec "$ftmesh demo --algo tree --no-color" /dev/null </dev/null >"$tmp/tty" 2>&1
    grep -q "$(printf '\033')\[" "$tmp/tty" && bad "colour despite --no-color"
fi
# 2d-concurrent's merged steps name each half's phases once
"$ftmesh" demo --algo 2d-concurrent --mesh 8x8 --fail 3,4 >"$tmp/out" || bad "demo 2d-concurrent 8x8"
grep '^Step' "$tmp/out" | grep -q '; \|\(reduce-scatter\|all-gather\).*half A.*\1.*half A' &&
    bad "demo 2d-concurrent: a phase named twice in a header"
# balanced colours do not promise a ring of one-hop edges: (0,0) keeps one link
"$ftmesh" demo --mesh 4x4 --fail-link 0,0-0,1 >"$tmp/out" || bad "demo --fail-link"
tr '\n' ' ' <"$tmp/out" | grep -q 'one-hop edges can exist' && bad "demo: a one-hop ring promised"
tr '\n' ' ' <"$tmp/out" | grep -q 'not enough: chip (0,0) has one live link' ||
    bad "demo: the detour of a balanced mesh not explained"
# long step headers wrap without a trailing space
"$ftmesh" demo --algo trees --mesh 6x6 --fail 2,3 --fail-during 4,4 >"$tmp/out" || bad "demo trees dies"
grep -n ' $' "$tmp/out" | head -n 2 | grep . && bad "demo trees: lines end in a space"
# unbalanced colours force one detour here; the router's ring has more,
# told as its own (a ring with fewer may exist), and the two chips with
# one live link each need a detour, the forced one or their own
"$ftmesh" demo --mesh 4x4 --fail 1,2 --fail 3,1 --fail 3,3 >"$tmp/out" || bad "demo three holes"
tr '\n' ' ' <"$tmp/out" | tr -s ' ' | grep -q 'force 1 of them; this router.s ring has [0-9]* more (it builds rings by a rule of thumb: a ring with fewer may exist). Chips (3,0) and (3,2) have one live link: a ring passes each chip over two, so each needs a detour at it' ||
    bad "demo: detours beyond what the colours force not explained"
# where allreduce runs another schedule than the one taught, the lesson says so
"$ftmesh" demo --algo 2d >"$tmp/out" || bad "demo 2d"
tr '\n' ' ' <"$tmp/out" | grep -q 'ftmesh allreduce --algo 2d` (at its default --size 8M) runs the ring schedule instead' ||
    bad "demo 2d: the fallback of allreduce not named"
"$ftmesh" demo --algo ring >"$tmp/out" || bad "demo ring"
grep -q 'schedule instead' "$tmp/out" && bad "demo ring: a fallback that is not"
# a mesh that is one band: the lesson says there is no column phase (none
# runs: as many steps as the ring's) and no drift layout
"$ftmesh" demo --mesh 5x5 --fail 1,1 --algo 2d >"$tmp/out" || bad "demo 2d one band"
tr '\n' ' ' <"$tmp/out" | tr -s ' ' | grep -q 'The whole mesh is one band, so there is no column phase' ||
    bad "demo 2d one band: not said"
grep -q 'drift layout\|column reduce' "$tmp/out" && bad "demo 2d one band: a column phase told"
"$ftmesh" demo --mesh 5x5 --fail 1,1 --algo ring >"$tmp/ring" || bad "demo ring one band"
[ "$(grep -c '^Step' "$tmp/out")" = "$(grep -c '^Step' "$tmp/ring")" ] ||
    bad "demo 2d one band: not as many steps as the ring"
# one band whose ring has no second way round: one way, not both
"$ftmesh" demo --algo 2d --mesh 2x3 --fail 0,1 >"$tmp/out" || bad "demo 2d one band one way"
tr '\n' ' ' <"$tmp/out" | tr -s ' ' | grep -q "this run is the band's ring, with as many steps as one long ring" ||
    bad "demo 2d one band one way: not said as it ran"
# a limit named in an error is the demo's own
"$ftmesh" demo --random-faults 16 2>"$tmp/err" >/dev/null
grep -q 'at most 14 here' "$tmp/err" || bad "demo --random-faults: $(cat "$tmp/err")"
"$ftmesh" demo --random-faults 14 --fault-seed 3 >/dev/null 2>"$tmp/err" ||
    grep -q 'cut into parts' "$tmp/err" || bad "demo --random-faults 14: $(cat "$tmp/err")"
"$ftmesh" demo --mesh 0x4 2>"$tmp/err" >/dev/null
grep -q 'sides must be 1..8' "$tmp/err" || bad "demo --mesh 0x4: $(cat "$tmp/err")"
# errors: exit 2, one line
for args in "--mesh 9x9" "--algo nope" "--algo auto" "--algo 2d-lines --mesh 1x4" "--delay -1" \
            "--fail-during 1,1" "--json" "--bogus" "--random-faults 15" "--mesh 0x4"; do
    "$ftmesh" demo $args >/dev/null 2>"$tmp/err"; rc=$?
    [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || bad "demo $args: exit $rc, $(cat "$tmp/err")"
done
# the default lesson's own hole is named as such
"$ftmesh" demo --fail-during 1,1 2>"$tmp/err" >/dev/null
grep -q "(1,1) is the default lesson's hole, dead from the start; pick another chip" "$tmp/err" ||
    bad "demo --fail-during 1,1: $(cat "$tmp/err")"
"$ftmesh" demo --step --delay 1 --html "$tmp/sd.html" 2>"$tmp/err" >/dev/null
grep -q "warning: --step and --delay have no effect with --html alone" "$tmp/err" ||
    bad "demo --step --delay --html: $(cat "$tmp/err")"
# a death that cuts the mesh: said as such, with the chip and two chips apart
"$ftmesh" demo --mesh 8x8 --fail 0,1 --fail-during 1,0 --algo 2d-lines >/dev/null 2>"$tmp/err"
grep -qF "ftmesh demo: --fail-during 1,0: once it has died the healthy chips are cut into parts ((0,0) cannot reach (0,2) over live links)" "$tmp/err" ||
    bad "demo: a death that cuts the mesh: $(cat "$tmp/err")"
# bidir's part 1 draws its second ring with the detour that ring takes
# ((2,1) -> (3,0) round the south of the hole, not the first ring's reversed)
"$ftmesh" demo --algo bidir >"$tmp/out" || bad "demo --algo bidir exited $?"
sed -n '/== 1\./,/== 2\./p' "$tmp/out" | grep -q "^detour (2,1) -> (3,0): 2 hops via S,W" ||
    bad "demo --algo bidir: part 1 does not draw the second ring's detour"
# a leaf of the tree dies in the middle of its part, after its one send
# and before the sums come down; the root, before it sent anything: no
# survivor's sum holds its numbers
"$ftmesh" demo --algo tree --fail-during 1,0 >"$tmp/out" || bad "demo tree --fail-during 1,0 exited $?"
tr "\n" " " <"$tmp/out" | grep -q "chip (1,0) dies at the start of step 10, having sent 1 of its 1 transfer" ||
    bad "demo tree --fail-during 1,0: the leaf does not die in the middle of its part"
"$ftmesh" demo --algo tree --fail-during 1,2 >"$tmp/out" || bad "demo tree --fail-during 1,2 exited $?"
tr "\n" " " <"$tmp/out" | grep -q "no survivor's sum holds the dead chip's numbers yet (it had sent none)" &&
    ! grep -q "count the dead chip's" "$tmp/out" ||
    bad "demo tree --fail-during 1,2: says the sums count a chip that sent nothing"
# the recovery reduces the same numbers on fewer chips
"$ftmesh" demo >"$tmp/out"
sed -n '/The recovery ==/,/recovery run takes/p' "$tmp/out" | tr "\n" " " | grep -q "14 healthy. Each healthy chip holds 15 small numbers" ||
    bad "demo: the recovery does not keep the lesson's 15 numbers"
# the recovery says which bands run and that allreduce would fall back
"$ftmesh" demo --algo 2d --fail-during 2,2 >"$tmp/out" || bad "demo 2d --fail-during exited $?"
sed -n '/The recovery ==/,/recovery run takes/p' "$tmp/out" | grep -q "Here the band is rows 0-3" ||
    bad "demo 2d --fail-during 2,2: the recovery names no band"
# a lesson without failure parts says why
"$ftmesh" demo --mesh 1x2 >"$tmp/out" || bad "demo --mesh 1x2 exited $?"
tr "\n" " " <"$tmp/out" | grep -q "The lesson ends here: no chip dies in it, since a death would leave one chip" ||
    bad "demo --mesh 1x2: no word on the missing failure parts"
"$ftmesh" demo --algo ring >"$tmp/out" || bad "demo --algo ring exited $?"
tr "\n" " " <"$tmp/out" | grep -q "The lesson ends here: with --fail-during R,C a chip dies too" ||
    bad "demo --algo ring: no word on --fail-during"
# part 3: chips of usable columns that own nothing are explained too
"$ftmesh" demo >"$tmp/out"
tr "\n" " " <"$tmp/out" | grep -q "where that part has fewer numbers than the column has chips, some of them own nothing either" ||
    bad "demo part 3: does not say why usable-column chips own nothing"
# step headers: the reading aid only where headers name positions
"$ftmesh" demo --algo ring | grep -q "header names the positions" && bad "demo ring: a header aid for headers that name no position"
"$ftmesh" demo --algo trees | grep -q "header names the positions" || bad "demo trees: no header aid"
# part 1 names a dead link as it names holes
"$ftmesh" demo --fail-link '1,1>1,2' | grep -q "^== 1. The mesh and its dead link ==$" ||
    bad "demo with a dead link: part 1's heading"
# the header aid's example is one of this run's headers
"$ftmesh" demo --algo 2d-lines --mesh 3x5 >"$tmp/out"
ex=$(tr "\n" " " <"$tmp/out" | sed -n 's/.*carry ("\([0-9]* in #[0-9]*-#[0-9]*\)":.*/\1/p')
[ -n "$ex" ] && grep -q "^Step .* $ex" "$tmp/out" || bad "demo 3x5 2d-lines: the header aid's example '$ex' is no header"
# 2d's part 1 draws the band that goes around the hole, both its rings
"$ftmesh" demo --algo 2d >"$tmp/out"
sed -n '/== 1\./,/== 2\./p' "$tmp/out" | grep -q "^detour (1,0) -> (1,2): 4 hops via S,E,E,N" ||
    bad "demo --algo 2d: part 1 lacks the band's other ring"
# 2d-lines' headers name the links positions took (half A starts along
# rows, half B along columns), and the lesson says which phases those are
"$ftmesh" demo --algo 2d-lines >"$tmp/out"
grep -q "^Step 1 of [0-9]*  along rows #.*, along columns #" "$tmp/out" && ! grep -q "^Step [0-9]* of [0-9]*  rows" "$tmp/out" &&
    tr "\n" " " <"$tmp/out" | tr -s " " | grep -q "half A's first phase and half B's second phase move along rows, half B's first phase and half A's second phase along columns" ||
    bad "demo 2d-lines: headers do not say which links the positions took"
# a single open row's band has no second way round: both halves go one
# way, and the story says so (not where the second ring differs)
"$ftmesh" demo --mesh 1x4 --algo 2d --no-color | tr "\n" " " | tr -s " " |
    grep -q "The band of row 0 has no second way round that avoids its ring's links, so both halves go the same way round it" ||
    bad "demo 1x4 2d: both halves going one way not told"
"$ftmesh" demo --algo 2d --no-color | grep -q "no second way round" &&
    bad "demo 2d: told one way where the band's rings differ"
# a torus ring that takes no wrap-around link: the picture has none, and
# the text says why (one that takes one: no such words)
"$ftmesh" demo --mesh 2x3 --torus --no-color | tr "\n" " " | tr -s " " |
    grep -q "this ring takes no wrap-around link: the picture draws the ring's links only" ||
    bad "demo 2x3 torus: a picture without wrap links unexplained"
"$ftmesh" demo --mesh 3x3 --torus --no-color | tr "\n" " " | tr -s " " | grep -q "takes no wrap-around link" &&
    bad "demo 3x3 torus: told no wrap-around link where the ring takes one"
# balanced colours, yet more detours than the one-link chips need: said
"$ftmesh" demo --mesh 1x8 --algo ring >"$tmp/out"
tr "\n" " " <"$tmp/out" | sed 's/  */ /g' | grep -q "balanced, so the count does not force a detour.*one detour can serve two); this router's ring has [0-9]* (it builds rings by a rule of thumb: a ring with fewer may exist)" ||
    bad "demo 1x8: the router's extra detours are not told"
# an unknown algorithm names the known ones; --no-color with --html alone is warned
"$ftmesh" demo --algo foo 2>"$tmp/err"
[ $? = 2 ] && grep -q "expected ring, bidir, .*2d-lines" "$tmp/err" || bad "demo --algo foo: $(cat "$tmp/err")"
"$ftmesh" demo --no-color --html "$tmp/x.html" 2>"$tmp/err" >/dev/null
grep -q "no-color has no effect with --html alone" "$tmp/err" || bad "demo --no-color --html: no warning"
# the page's recovery part tells the rebuilt ring as the text does
"$ftmesh" demo --html "$tmp/l.html" >/dev/null
grep -q "on the mesh without chip (3,3): 26 steps\. [^\"]*Colour the chips like a chessboard[^\"]*Here 6 B and 8 w[^\"]*The router's ring: 14 chips, 2 detour edges" "$tmp/l.html" ||
    bad "demo --html: the recovery part does not tell the rebuilt ring"
[ $fails = 0 ] || exit 1
echo "demo_cli: all passed"
