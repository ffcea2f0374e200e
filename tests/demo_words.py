"""What ftmesh demo's step headers say against the values the steps show.

usage: demo_words.py FILE...  (each checked; exit 1 if any fails)

A step header that says its receivers copy "finished sums" must show only
copies of the run's final sums (the "sum" line the lesson prints after its
last step, added up from the inputs); one that says "partial sums" must
show no copy of a final sum. Steps are checked against the sums of the run
they belong to: those told under the same "== part ==" heading before its
sums line (the failure part, whose run never ends, is left out)."""
import re
import sys

STEP = re.compile(r"^Step (\d+)(?: of (\d+)| \(the chip dies in it\))\s+(.*)$")
COPY = re.compile(r"#(\d+) = (-?\d+)")
SUMS = "The sums, added up directly"
BANDS = re.compile(r"Here the bands are rows ([-0-9, ]+)")
XFER = re.compile(r"^  \((\d+),\d+\)\s+->\s+\((\d+),\d+\)")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_sums(lines, i):
    """The final sums printed from lines[i + 1] on ("  sum   36  44 ...")."""
    vals = []
    for line in lines[i + 1:]:
        if not line.startswith("  sum "):
            break
        vals += [int(v) for v in line[6:].split()]
    return vals


def check(steps, sums):
    """steps: [(header, [(pos, value) copied], transfer lines)]; returns
    how many headers told by what moved were checked."""
    moved = 0
    for head, copies, xfers in steps:
        moved += check_moved(head, xfers)
        if "finished sums" in head and "partial" not in head:
            wrong = [(p, v) for p, v in copies if v != sums[p]]
            if wrong:
                fail("'%s' copies partial sums: #%d = %d (the sum is %d)"
                     % (head, wrong[0][0], wrong[0][1], sums[wrong[0][0]]))
        if "partial sums" in head and "finished" not in head:
            done = [(p, v) for p, v in copies if v == sums[p]]
            if done:
                fail("'%s' copies a finished sum: #%d = %d" % (head, done[0][0], done[0][1]))
    return moved


MOVED = re.compile(r"^(?:along rows ([^a-z]*?))?(?:, )?(?:along columns ([^a-z]*?))?(?:, adding|, copying)?$")
FULL = re.compile(r"^  \((\d+),(\d+)\)\s+->\s+\((\d+),(\d+)\)\s+(.*)$")


def named(spec):
    """The positions a header names: a set, or (count, lo, hi)."""
    m = re.match(r"^(\d+) in #(\d+)-#(\d+)$", spec)
    if m:
        return tuple(int(v) for v in m.groups())
    pos = set()
    for a, b in re.findall(r"#(\d+)(?:-#(\d+))?", spec):
        pos |= set(range(int(a), int(b or a) + 1))
    return pos


def check_moved(head, lines):
    """The header's positions per way against the step's transfer lines."""
    m = MOVED.match(head.split(": receivers")[0])
    if not m or not (m.group(1) or m.group(2)) or any(", ..." in x for x in lines):
        return 0
    got = [set(), set()]
    for line in lines:
        x = FULL.match(line)
        way = 0 if x.group(1) == x.group(3) else 1
        got[way] |= {int(p) for p in re.findall(r"#(\d+)", x.group(5))}
    for way, spec in enumerate(m.groups()):
        want = named(spec) if spec else set()
        have = got[way]
        if isinstance(want, tuple):
            ok = have and (len(have), min(have), max(have)) == want
        else:
            ok = have == want
        if not ok:
            fail("'%s': the %s carry %s" % (head, ("rows", "columns")[way], sorted(have)))
    return 1


def band_of(spec):
    """{row: band index} from "0-1, 2-3"."""
    rows = {}
    for i, part in enumerate(spec.split(",")):
        a, _, b = part.strip().partition("-")
        for r in range(int(a), int(b or a) + 1):
            rows[r] = i
    return rows


def check_bands(text):
    """Row-phase transfers stay in the bands the lesson names."""
    n = 0
    for part in text.split("\n== ")[1:]:
        m = BANDS.search(part.replace("\n", " "))
        if not m or "for the second half" in part:
            continue  # 2d-concurrent: its steps run rows and columns at once
        band, head = band_of(m.group(1).rstrip(", ")), ""
        for line in part.split("\n"):
            s = STEP.match(line)
            head = s.group(3) if s else head
            x = XFER.match(line)
            if x and "row" in head and "column" not in head:
                a, b = int(x.group(1)), int(x.group(2))
                if band.get(a) != band.get(b):
                    fail("'%s': %s crosses the bands %s" % (head, line.strip(), m.group(1)))
                n += 1
    return n


def check_file(path):
    lines = open(path).read().split("\n")
    steps, told, moved = [], 0, 0
    for i, line in enumerate(lines):
        m = STEP.match(line)
        if line.startswith("== "):
            steps = []
        elif m:
            head = m.group(3)
            if i + 1 < len(lines) and lines[i + 1].startswith("  receivers"):
                head += " " + lines[i + 1].strip()  # the hint on its own line
            steps.append((head, [], []))
        elif steps and line.startswith("  (") and "->" in line:
            steps[-1][1].extend((int(p), int(v)) for p, v in COPY.findall(line))
            steps[-1][2].append(line)
        elif line.startswith(SUMS):
            moved += check(steps, read_sums(lines, i))
            told += len(steps)
            steps = []
    if not told:
        fail("no steps checked")
    print("demo_words: %s: %d steps (%d told by what moved), %d row-band transfers checked"
          % (path, told, moved, check_bands("\n".join(lines))))


def main():
    bad = 0
    for path in sys.argv[1:]:
        try:
            check_file(path)
        except SystemExit as e:  # fail(): its FAIL line printed
            if e.code:
                print("FAIL: in %s" % path)
                bad = 1
    sys.exit(bad if len(sys.argv) > 1 else 2)


main()
