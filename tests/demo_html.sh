#!/bin/sh
# ftmesh demo --html in a real browser: headless Chromium loads the page at
# its first and last step (#step=N), the dumped DOM is checked against the
# page contract and the sums (computed in tests/demo_html.py, not read from
# the page), and screenshots at both steps must be neither blank nor
# identical. Skips (77) when Chromium is not installed.
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
    "$ftmesh" demo "$@" --html "$tmp/$name.html" >/dev/null || { bad "demo $*"; return; }
    grep -Eq '(src|href)=' "$tmp/$name.html" && bad "$name: the page loads a resource"
    steps=$(sed -n 's/.*id="steps">\([0-9]*\)<.*/\1/p' "$tmp/$name.html")
    [ -n "$steps" ] || { bad "$name: no #steps"; return; }
    url="file://$tmp/$name.html"
    browse --dump-dom "$url#step=0" >"$tmp/$name.0.dom" || bad "$name: chromium failed at step 0"
    browse --dump-dom "$url#step=$steps" >"$tmp/$name.last.dom" || bad "$name: chromium failed"
    python3 "$here/demo_html.py" dom "$tmp/$name.0.dom" "$rows" "$cols" "$dead" 0 ||
        bad "$name: step 0"
    python3 "$here/demo_html.py" dom "$tmp/$name.last.dom" "$rows" "$cols" "$dead" last ||
        bad "$name: last step"
}

page ring 4 4 "1,1" --algo ring
page twod 4 4 "2,2;2,3;3,2;3,3" --algo 2d --mesh 4x4 --torus --fail-host 2,2
# screenshots of the ring page at its first and last step
steps=$(sed -n 's/.*id="steps">\([0-9]*\)<.*/\1/p' "$tmp/ring.html")
(cd "$tmp" && browse --window-size=1100,900 --screenshot="$tmp/first.png" \
    "file://$tmp/ring.html#step=0") >/dev/null || bad "screenshot at step 0"
(cd "$tmp" && browse --window-size=1100,900 --screenshot="$tmp/last.png" \
    "file://$tmp/ring.html#step=$steps") >/dev/null || bad "screenshot at the last step"
if [ -s "$tmp/first.png" ] && [ -s "$tmp/last.png" ]; then
    python3 "$here/demo_html.py" png "$tmp/first.png" "$tmp/last.png" || bad "screenshots"
else
    bad "no screenshots"
fi
if [ $fails != 0 ]; then
    tail -20 "$tmp/chromium.log"
    exit 1
fi
echo "demo_html: all passed"
