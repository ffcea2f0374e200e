"""Checks a --trace file: valid Chrome trace-event JSON, one named track per
healthy chip, X events with finite ts/dur; sends and receives last (on the
wall clock from their step's start to their last byte); on the modeled
clock the span is the modeled time and sends/receives pair up one for one
by tag.
usage: trace_cli.py FILE CLOCK ROWS COLS DEAD(r,c;...) [MODELED_S|- ITERS]"""
import decimal
import json
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    path, clock, rows, cols, dead = sys.argv[1:6]
    rows, cols = int(rows), int(cols)
    dead = {tuple(map(int, d.split(","))) for d in dead.split(";") if d}
    with open(path) as f:
        doc = json.load(f)  # NaN/Infinity would parse: checked below
    evs = doc["traceEvents"]
    if doc["otherData"]["clock"] != clock:
        fail("clock %s, want %s" % (doc["otherData"]["clock"], clock))
    names = {e["args"]["name"] for e in evs
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for r in range(rows):
        for c in range(cols):
            if (r, c) not in dead and "chip (%d,%d)" % (r, c) not in names:
                fail("no track chip (%d,%d)" % (r, c))
    xs = [e for e in evs if e["ph"] == "X"]
    if not xs:
        fail("no X events")
    for e in xs:
        for k in ("ts", "dur"):
            v = e[k]
            if not isinstance(v, (int, float)) or v != v or v in (float("inf"), -float("inf")):
                fail("bad %s in %r" % (k, e))
        if e["dur"] < 0 or e["ts"] < 0:
            fail("negative time in %r" % e)
    lo = min(e["ts"] for e in xs)
    hi = max(e["ts"] + e["dur"] for e in xs)
    if lo != 0:
        fail("first event at %g us, want 0" % lo)
    if clock == "modeled" and len(sys.argv) > 6 and sys.argv[6] != "-":
        modeled_us, iters = float(sys.argv[6]) * 1e6, int(sys.argv[7])
        if abs((hi - lo) - iters * modeled_us) > 1e-3 + 1e-9 * modeled_us:
            fail("span %.6f us, want %d x %.6f us" % (hi - lo, iters, modeled_us))
    if clock == "modeled":
        if any(e["cat"] in ("wait", "compute") for e in xs):
            fail("wait/compute events on the modeled clock")
    ops = [e for e in xs if e["cat"] in ("send", "recv") and e["args"]["bytes"] > 0]
    if any(e["dur"] <= 0 for e in ops):
        fail("a send or receive of no duration: %r" % [e for e in ops if e["dur"] <= 0][0])
    # sends and receives pair up by (run, exec, tag): one of each, peers crossed
    tid_chip = {}
    for e in evs:
        if e["ph"] == "M" and e["name"] == "thread_name":
            tid_chip[e["tid"]] = e["args"]["name"].split(")")[0] + ")"
    pairs = {}
    for e in xs:
        if e["cat"] in ("send", "recv"):
            a = e["args"]
            key = (a["run"], a["exec"], a["tag"])
            pairs.setdefault(key, []).append((e["cat"], tid_chip[e["tid"]][5:], a["peer"],
                                              a["bytes"]))
    if not pairs:
        fail("no sends or receives")
    # a run a chip died in stops mid-transfer: only finished transfers pair
    broken = {e["args"].get("run") for e in xs if e["cat"] == "fail"}
    for key, v in pairs.items():
        kinds = sorted(x[0] for x in v)
        if key[0] in broken and len(v) == 1:
            continue
        if kinds != ["recv", "send"]:
            fail("transfer %r has %r" % (key, kinds))
        s = [x for x in v if x[0] == "send"][0]
        r = [x for x in v if x[0] == "recv"][0]
        if s[1] != r[2] or s[2] != r[1] or s[3] != r[3]:
            fail("transfer %r: send %r does not match recv %r" % (key, s, r))
    nesting(path)
    for f in (e for e in xs if e["cat"] == "fail"):
        # its transfers end and its steps begin before it dies (the step
        # it dies in may hold the death)
        late = [e for e in xs if e["tid"] == f["tid"] and e["args"].get("run") == f["args"].get("run")
                and ((e["cat"] in ("send", "recv", "forward") and e["ts"] + e["dur"] > f["ts"] + 1e-6)
                     or (e["cat"] == "step" and e["ts"] > f["ts"] + 1e-6))]
        if late:
            fail("%s drawn after the chip died at %.6f us" % (late[0]["name"], f["ts"]))
    print("ok: %d events, %d transfers, span %.3f us" % (len(xs), len(pairs), hi - lo))


def nesting(path):
    """Slices of one track nest or are disjoint, to the printed digit (the
    times read as decimals: a viewer stacks overlapping slices wrongly)."""
    with open(path) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    tracks = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            tracks.setdefault(e["tid"], []).append((e["ts"], -e["dur"], e["name"]))
    for tid, sl in tracks.items():
        open_ends = []  # ends of the slices enclosing the current one
        for ts, mdur, name in sorted(sl):
            end = ts - mdur
            while open_ends and open_ends[-1][0] <= ts:
                open_ends.pop()
            if open_ends and end > open_ends[-1][0]:
                fail("track %s: %s [%s, %s] overlaps %s ending at %s" % (
                     tid, name, ts, end, open_ends[-1][1], open_ends[-1][0]))
            open_ends.append((end, name))


main()
