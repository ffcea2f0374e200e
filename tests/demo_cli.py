"""Checks ftmesh demo's plain-text output: no colour codes, lines within 80
columns, and the table after the last step: every healthy chip holds the
exact sums, computed here from the inputs 1 + (n + i) mod 9 of chip
n = r * cols + c. usage: demo_cli.py FILE ROWS COLS DEAD(r,c;...)"""
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    path, rows, cols, dead = sys.argv[1:5]
    rows, cols = int(rows), int(cols)
    dead = {tuple(map(int, d.split(","))) for d in dead.split(";") if d}
    text = open(path).read()
    if "\033[" in text:
        fail("colour codes in plain output")
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > 80:
            fail("line %d has %d columns: %s" % (n, len(line), line))
    healthy = [r * cols + c for r in range(rows) for c in range(cols) if (r, c) not in dead]
    m = re.search(r"Every chip starts with (\d+) numbers", text)
    count = int(m.group(1)) if m else len(healthy)
    want = [sum(1 + (n + i) % 9 for n in healthy) for i in range(count)]
    part = text.split("After the last step:")[1]
    chips = {}
    base = 0
    for line in part.split("\n")[1:]:
        b = re.match(r"  positions? #(\d+)(?:-#(\d+))?:$", line)
        m = re.match(r"  \((\d+),(\d+)\)\s(.*)", line)
        if b:
            base = int(b.group(1))
        elif m:
            vals = chips.setdefault((int(m.group(1)), int(m.group(2))), [])
            if len(vals) != base:
                fail("chip row out of its band: %s" % line)
            vals += [int(v) for v in re.findall(r"-?\d+", m.group(3))]
        else:
            break
    if sorted(chips) != sorted((n // cols, n % cols) for n in healthy):
        fail("chips in the final table: %r" % sorted(chips))
    for rc, vals in chips.items():
        if vals != want:
            fail("chip %r holds %r, want %r" % (rc, vals, want))
    if "Every healthy chip holds exactly these sums." not in part:
        fail("no verdict")
    print("ok: %d chips hold %r" % (len(chips), want[:4]))


main()
