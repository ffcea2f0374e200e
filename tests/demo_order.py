"""Causality of ftmesh demo's step lines: replays every value the lesson
prints and checks it against the values printed before.

usage: demo_order.py FILE...  (each checked; exit 1 if any fails)

Chip (r,c) is chip n = r * COLS + c (COLS as the lesson states it for each
part, "n = r*COLS + c") and starts with 1 + (n + i) mod 9 at
position #i (checked against the first table of each part). In a step,
each line  A -> B  #i: x + y = z  must have y equal to what A held after
the step before, x equal to what B held just before the line (after the
step before and the lines into B above it in the step), and z = x + y; a
copy  #i = z  must carry what A held after the step before; a lost
transfer  #i: y (lost)  carries what A held and changes nothing. Every
table printed after steps must equal the replayed values. Positions cut
from a long line (", ...") become unknown until the next table, which is
then adopted. Tables that follow a run not told line by line (the
recovery, "go as above") are adopted without a check. No line is wider
than 80 columns."""
import re
import sys

CHIP = re.compile(r"^  \((\d+),(\d+)\)\s+(.*)$")
BAND = re.compile(r"^  positions? #(\d+)(?:-#(\d+))?:$")
STEP = re.compile(r"^Step (\d+)(?: of (\d+)| \(the chip dies in it\))")
LINE = re.compile(r"^  \((\d+),(\d+)\)\s+->\s+\((\d+),(\d+)\)\s+(#.*?)(?: \(detour \d+ hops: [NESW,.]+\))?$")
SUM = re.compile(r"#(\d+): (-?\d+) \+ (-?\d+) = (-?\d+)$")
COPY = re.compile(r"#(\d+) = (-?\d+)$")
LOST = re.compile(r"#(\d+): (-?\d+) \(lost\)$")


class Fail(Exception):
    pass


def parse_table(lines, i):
    """The table starting at lines[i]: ({chip: {pos: value}}, next index)."""
    vals, base = {}, 0
    while i < len(lines):
        b = BAND.match(lines[i])
        m = CHIP.match(lines[i])
        if b:
            base = int(b.group(1))
        elif m and "->" not in lines[i]:
            chip = (int(m.group(1)), int(m.group(2)))
            row = vals.setdefault(chip, {})
            if "(dead)" in m.group(3):
                row.clear()
            for k, v in enumerate(re.findall(r"-?\d+", m.group(3))):
                row[base + k] = int(v)
        else:
            break
        i += 1
    return vals, i


class Replay:
    def __init__(self, cols):
        self.cols = cols
        self.state = None   # {chip: {pos: value or None}}
        self.start = None   # the state after the step before
        self.lines = 0
        self.steps = 0

    def inputs(self, table, where):
        for (r, c), row in table.items():
            n = r * self.cols + c
            for i, v in row.items():
                if v != 1 + (n + i) % 9:
                    raise Fail("%s: chip (%d,%d) starts with %d at #%d" % (where, r, c, v, i))
        self.adopt(table)

    def adopt(self, table):
        self.state = {ch: dict(row) for ch, row in table.items()}

    def check_table(self, table, where):
        if self.state is None:
            raise Fail("%s: a table before the inputs" % where)
        for ch, row in table.items():
            have = self.state.get(ch, {})
            for i, v in row.items():
                if have.get(i) is not None and have[i] != v:
                    raise Fail("%s: chip %r holds %d at #%d, replayed %d" % (where, ch, v, i, have[i]))
        self.adopt(table)

    def begin_step(self):
        self.start = {ch: dict(row) for ch, row in self.state.items()}
        self.steps += 1

    def line(self, a, b, text, where):
        items = [t.strip() for t in text.split(", ")]
        cut = items[-1].startswith("... (")
        if cut:
            items = items[:-1]
        last = -1
        for it in items:
            s, c, lost = SUM.match(it), COPY.match(it), LOST.match(it)
            if s:
                i, x, y, z = (int(g) for g in s.groups())
                self.want(self.start[a].get(i), y, "y", a, i, where)
                self.want(self.state[b].get(i), x, "x", b, i, where)
                if x + y != z:
                    raise Fail("%s: %d + %d is not %d" % (where, x, y, z))
                self.state[b][i] = z
            elif c:
                i, z = int(c.group(1)), int(c.group(2))
                self.want(self.start[a].get(i), z, "copied value", a, i, where)
                self.state[b][i] = z
            elif lost:
                i, y = int(lost.group(1)), int(lost.group(2))
                self.want(self.start[a].get(i), y, "lost value", a, i, where)
            else:
                raise Fail("%s: cannot read %r" % (where, it))
            last = i
            self.lines += 1
        if cut:  # the rest of the transfer: unknown until the next table
            for i in list(self.state[b]):
                if i > last:
                    self.state[b][i] = None

    @staticmethod
    def want(have, got, what, chip, i, where):
        if have is not None and have != got:
            raise Fail("%s: %s at #%d is %d, but chip %r held %d" % (where, what, i, got, chip, have))


def run(path, cols):
    lines = open(path).read().split("\n")
    for n, ln in enumerate(lines, 1):
        if len(ln) > 80:
            raise Fail("line %d has %d columns" % (n, len(ln)))
    rp = Replay(cols)
    step = None
    pending = None  # "inputs", "adopt" or None (check)
    i = 0
    while i < len(lines):
        ln = lines[i]
        where = "line %d" % (i + 1)
        if "Every chip starts with" in ln and "as above" not in ln:
            pending = "inputs"
        n = re.search(r"n = r\*(\d+) \+ c", ln)
        if n:
            rp.cols = int(n.group(1))
        elif "as above" in ln or "The recovery run takes" in ln:
            pending = "adopt"
        m = STEP.match(ln)
        if m:
            step = int(m.group(1))
            rp.begin_step()
            i += 1
            continue
        x = LINE.match(ln)
        if x and step is not None:
            a = (int(x.group(1)), int(x.group(2)))
            b = (int(x.group(3)), int(x.group(4)))
            rp.line(a, b, x.group(5), "%s (step %d)" % (where, step))
            i += 1
            continue
        if (CHIP.match(ln) or BAND.match(ln)) and "->" not in ln:
            table, i = parse_table(lines, i)
            if pending == "inputs":
                rp.inputs(table, where)
            elif pending == "adopt":
                rp.adopt(table)
            else:
                rp.check_table(table, where)
            pending = None
            step = None if pending else step
            continue
        i += 1
    if rp.lines == 0:
        raise Fail("no step lines")
    return rp


def main():
    bad = 0
    for path in sys.argv[1:]:
        try:
            rp = run(path, 0)
        except Fail as e:
            print("FAIL: %s: %s" % (path, e))
            bad = 1
            continue
        print("ok: %s: %d steps, %d values replayed" % (path, rp.steps, rp.lines))
    sys.exit(bad if len(sys.argv) > 1 else 2)


main()
