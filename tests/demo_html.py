"""Checks for tests/demo_html.sh.

dom FILE ROWS COLS DEAD STEP|last: the DOM Chromium dumped for the page at
  a step: the page contract (#step, #steps, one text.chip per healthy chip
  with data-row/data-col) and the values: step 0 the inputs
  1 + (n + i) mod 9 of chip n = r * cols + c, the last step the exact sums,
  both computed here.
png A.png B.png: two screenshots are neither blank nor identical.
part FILE P DEAD(r,c or -) VERIFIED(0/1): the DOM at part P's last step:
  #part is P, #step equals #steps, #parts at least P; chip DEAD (if any) has
  class dead; a verified part's caption says every chip holds the same sums.
wraps FILE [norows]: no line of the picture (links, ring, arrows) spans
  more than half of the picture: torus wraps are stubs at both borders
  (norows: a torus side of 2 rows, with no stub between rows).
apart FILE: no two arrows, nor two value labels, in the same place.
heads FILE: every ring hop has its arrowhead (an open mesh).
marks FILE ROOT(r,c or -) BIDIR(0/1): the DOM of a part at step 1: the
  tree's root (one box of class root, one "root" label at data-row/data-col
  ROOT; none when -); bidir's two rings (as many ring segments of class r1
  as of r2, arrows of both at this step; no r2 anywhere when 0).
oneway FILE: a link dead one way only is drawn so: a line of class
  "link oneway" (an arrow the dead way), no link of class dead.
caption FILE TEXT: the caption holds TEXT, and the legend never calls a
  green arrow a finished sum outright (a copy may carry a partial sum)."""
import re
import struct
import sys
import zlib
from html.parser import HTMLParser


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.chips = {}
        self.ids = {}
        self.cls = {}
        self.holes = set()
        self.lines = []
        self.viewbox = None
        self.stack = []
        self.all = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("br", "img", "meta", "input", "link"):
            return
        cls = (a.get("class") or "").split()
        self.all.append((tag, cls, a))
        key = None
        if "chip" in cls:
            key = ("chip", (int(a["data-row"]), int(a["data-col"])))
            self.chips[key[1]] = ""
            self.cls[key[1]] = cls
            if "data-id" not in a:  # a hole: dead before the part starts
                self.holes.add(key[1])
        elif a.get("id") in ("step", "steps", "part", "parts", "caption"):
            key = ("id", a["id"])
            self.ids[a["id"]] = ""
        if tag == "line" and all(k in a for k in ("x1", "y1", "x2", "y2")):
            self.lines.append([float(a[k]) for k in ("x1", "y1", "x2", "y2")] + [a.get("class", "")])
        if tag == "svg" and a.get("viewbox"):
            self.viewbox = [float(v) for v in a["viewbox"].split()]
        self.stack.append((tag, key))

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        for _, key in self.stack:
            if key and key[0] == "chip":
                self.chips[key[1]] += data
            elif key and key[0] == "id":
                self.ids[key[1]] += data


def check_dom(path, rows, cols, dead, step):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    if "step" not in d.ids or "steps" not in d.ids:
        fail("no #step or #steps in %s" % path)
    steps = int(d.ids["steps"])
    want_step = steps if step == "last" else int(step)
    if int(d.ids["step"]) != want_step:
        fail("#step shows %s, want %d" % (d.ids["step"], want_step))
    dead = {tuple(map(int, x.split(","))) for x in dead.split(";") if x}
    healthy = [(r, c) for r in range(rows) for c in range(cols) if (r, c) not in dead]
    # every chip position carries .chip; a hole's has class dead
    if sorted(d.chips) != sorted(healthy + list(dead)):
        fail("chips on the page %r, want %r" % (sorted(d.chips), sorted(healthy + list(dead))))
    for p in dead:
        if "dead" not in d.cls[p]:
            fail("hole (%d,%d): its .chip lacks class dead" % p)
    ids = [r * cols + c for r, c in healthy]
    count = len(ids)
    for (r, c), text in d.chips.items():
        if (r, c) in dead:
            continue
        vals = [int(v) for v in text.split()]
        n = r * cols + c
        if step == "last":
            want = [sum(1 + (m + i) % 9 for m in ids) for i in range(count)]
        else:
            want = [1 + (n + i) % 9 for i in range(count)]
        if want_step in (0, steps) and vals != want:
            fail("step %d: chip (%d,%d) shows %r, want %r" % (want_step, r, c, vals, want))
    print("ok: step %d of %d, %d chips" % (want_step, steps, len(healthy)))


def png_pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                fail("%s: unexpected PNG format %d/%d" % (path, depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return [bytes(r[i:i + 3]) for r in rows for i in range(0, stride, bpp)]


def check_png(a, b):
    pa, pb = png_pixels(a), png_pixels(b)
    for path, px in ((a, pa), (b, pb)):
        colours = {}
        for p in px:
            colours[p] = colours.get(p, 0) + 1
        top = max(colours.values())
        if len(colours) < 8 or top > 0.995 * len(px):
            fail("%s looks blank: %d colours, %d of %d pixels alike" % (path, len(colours), top, len(px)))
    if len(pa) == len(pb):
        diff = sum(1 for x, y in zip(pa, pb) if x != y)
    else:
        diff = max(len(pa), len(pb))
    if diff < 50:
        fail("first and last screenshots are (nearly) identical: %d pixels differ" % diff)
    print("ok: screenshots differ in %d pixels" % diff)


def check_part(path, part, dead, verified):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    for k in ("part", "parts", "step", "steps", "caption"):
        if k not in d.ids:
            fail("%s: no #%s" % (path, k))
    if int(d.ids["part"]) != part or int(d.ids["parts"]) < part:
        fail("%s: #part %s of %s, want %d" % (path, d.ids["part"], d.ids["parts"], part))
    if d.ids["step"] != d.ids["steps"]:
        fail("%s: step %s of %s, want the last" % (path, d.ids["step"], d.ids["steps"]))
    if dead != "-":
        rc = tuple(map(int, dead.split(",")))
        if "dead" not in d.cls.get(rc, []):
            fail("%s: chip %r is not marked dead: %r" % (path, rc, d.cls.get(rc)))
    for rc, cls in d.cls.items():
        if rc in d.holes:
            continue
        if "dead" in cls and (dead == "-" or rc != tuple(map(int, dead.split(",")))):
            fail("%s: chip %r marked dead" % (path, rc))
    if verified == "1" and "every chip now holds the same sums" not in d.ids["caption"]:
        fail("%s: the last step does not say the sums are verified: %r" % (path, d.ids["caption"]))
    print("ok: part %d at step %s: %s" % (part, d.ids["step"], d.ids["caption"][:60]))


def check_wraps(path, rows_wrap=True):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    if not d.viewbox or not d.lines:
        fail("%s: no picture" % path)
    w, h = d.viewbox[2], d.viewbox[3]
    wraps = 0
    for x1, y1, x2, y2, cls in d.lines:
        if abs(x2 - x1) > w / 2 or abs(y2 - y1) > h / 2:
            fail("%s: a %s line spans the picture: %r" % (path, cls, (x1, y1, x2, y2)))
        wraps += "wrap" in cls
        if "wrap" in cls and x1 == x2 and not rows_wrap:
            fail("%s: a wrap stub between rows, on a torus side of 2" % path)
    if not wraps:
        fail("%s: no wrap stubs on a torus" % path)
    print("ok: %d lines, %d wrap stubs, none across the mesh" % (len(d.lines), wraps))


def check_apart(path):
    """Two transfers of a step on one link: neither arrow nor label drawn
    on top of the other."""
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    arrows = [tuple(l[:4]) for l in d.lines if "arrow" in l[4].split()]
    labels = [(a.get("x"), a.get("y")) for t, c, a in d.all if t == "text" and "sent" in c]
    if len(set(arrows)) != len(arrows) or len(set(labels)) != len(labels):
        fail("%s: arrows or labels drawn on top of each other (%d arrows, %d places; "
             "%d labels, %d places)" % (path, len(arrows), len(set(arrows)), len(labels),
                                        len(set(labels))))
    print("ok: %d arrows and %d labels, each in its own place" % (len(arrows), len(labels)))


def check_marks(path, root, bidir):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    labels = [(int(a["data-row"]), int(a["data-col"])) for _, c, a in d.all if "rootlabel" in c]
    boxes = [a.get("id") for t, c, a in d.all if t == "rect" and "box" in c and "root" in c]
    want = [] if root == "-" else [tuple(map(int, root.split(",")))]
    if labels != want or len(boxes) != len(want):
        fail("%s: root labels %r and boxes %r, want %r" % (path, labels, boxes, want))
    rings = {k: sum(1 for t, c, _ in d.all if t == "line" and "ring" in c and k in c)
             for k in ("r1", "r2")}
    arrows = {k: sum(1 for t, c, _ in d.all if t == "line" and "arrow" in c and k in c)
              for k in ("r1", "r2")}
    if bidir == "1" and not (rings["r1"] == rings["r2"] > 0 and arrows["r1"] and arrows["r2"]):
        fail("%s: bidir's two rings: segments %r, arrows %r" % (path, rings, arrows))
    if bidir == "0" and any("r2" in c for _, c, _ in d.all):
        fail("%s: a second ring drawn" % path)
    print("ok: root %r, ring segments %r, arrows %r" % (labels, rings, arrows))


def check_oneway(path):
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    ones = [c for t, c, _ in d.all if t == "line" and "oneway" in c]
    dead = [c for t, c, _ in d.all if t == "line" and "link" in c and "dead" in c]
    if not ones or dead:
        fail("%s: %d one-way lines, %d links drawn dead both ways" % (path, len(ones), len(dead)))


def check_caption(path, text):
    d = Dom()
    page = open(path, encoding="utf-8").read()
    d.feed(page)
    if text not in d.ids.get("caption", ""):
        fail("%s: caption %r lacks %r" % (path, d.ids.get("caption"), text))
    if "green arrow: a finished sum" in page:
        fail("%s: the legend calls every copy a finished sum" % path)


def check_heads(path):
    """heads FILE: on an open mesh every hop of the ring (a detour's too)
    ends in an arrowhead at step 0: as many heads as ring segments."""
    d = Dom()
    d.feed(open(path, encoding="utf-8").read())
    segs = sum(1 for t, c, _ in d.all if t == "line" and "ring" in c and "tree" not in c)
    heads = sum(1 for t, c, _ in d.all if t == "line" and "ringhead" in c)
    if not segs or heads != segs:
        fail("%s: %d ring segments but %d arrowheads" % (path, segs, heads))
    print("ok: %d ring hops, each with its head" % segs)


if sys.argv[1] == "heads":
    check_heads(sys.argv[2])
elif sys.argv[1] == "marks":
    check_marks(sys.argv[2], sys.argv[3], sys.argv[4])
elif sys.argv[1] == "part":
    check_part(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
elif sys.argv[1] == "oneway":
    check_oneway(sys.argv[2])
elif sys.argv[1] == "caption":
    check_caption(sys.argv[2], sys.argv[3])
elif sys.argv[1] == "wraps":
    check_wraps(sys.argv[2], len(sys.argv) < 4 or sys.argv[3] != "norows")
elif sys.argv[1] == "apart":
    check_apart(sys.argv[2])
elif sys.argv[1] == "dom":
    check_dom(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6])
else:
    check_png(sys.argv[2], sys.argv[3])
