"""Loads pages in one headless Chromium, as many `chromium --headless
--dump-dom` (and --screenshot) runs would, for tests/demo_html.sh: a run
costs a second or two of CPU, and the test loads about ten pages.

usage: browse.py CHROMIUM PROFILE-DIR < JOBS
Each line of JOBS: URL DOM-FILE [PNG-FILE]. Each URL is loaded in a fresh
tab (1100x900); once its load event has fired, DOM-FILE gets the document
as --dump-dom prints it (the doctype, then the root element's outerHTML)
and PNG-FILE a screenshot. Talks the DevTools protocol over
--remote-debugging-pipe (fds 3 and 4: JSON messages ended by NUL bytes).
Exit 1 if any page failed (its files are not written)."""
import base64
import json
import os
import subprocess
import sys

DOM = ("(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')"
       " + document.documentElement.outerHTML")


def launch(chromium, profile):
    cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
    out_r, out_w = os.pipe()  # Chromium writes fd 4

    def child():
        os.dup2(cmd_r, 3)
        os.dup2(out_w, 4)

    p = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + profile,
         "--window-size=1100,900", "--remote-debugging-pipe", "about:blank"],
        pass_fds=(3, 4, cmd_r, out_w), preexec_fn=child, stdout=subprocess.DEVNULL)
    os.close(cmd_r)
    os.close(out_w)
    return p, os.fdopen(cmd_w, "wb", buffering=0), os.fdopen(out_r, "rb", buffering=0)


class Pipe:
    """The DevTools protocol: calls and the events that arrive meanwhile."""

    def __init__(self, w, r):
        self.w, self.r, self.last, self.buf, self.events = w, r, 0, b"", []

    def read(self):
        while b"\0" not in self.buf:
            data = self.r.read(1 << 16)
            if not data:
                raise EOFError("Chromium closed the pipe")
            self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.last += 1
        msg = {"id": self.last, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.w.write(json.dumps(msg).encode() + b"\0")
        while True:
            m = self.read()
            if m.get("id") == self.last:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m["result"]
            self.events.append(m)

    def wait_event(self, method, session):
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self.read())


def load(c, url, dom_file, png_file):
    target = c.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = c.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    c.call("Page.enable", session=s)
    c.call("Page.navigate", {"url": url}, session=s)
    c.wait_event("Page.loadEventFired", s)
    dom = c.call("Runtime.evaluate", {"expression": DOM, "returnByValue": True},
                 session=s)["result"]["value"]
    png = None
    if png_file:
        png = base64.b64decode(c.call("Page.captureScreenshot", {"format": "png"}, session=s)["data"])
    c.call("Target.closeTarget", {"targetId": target})
    with open(dom_file, "w") as f:
        f.write(dom + "\n")
    if png is not None:
        with open(png_file, "wb") as f:
            f.write(png)


def main():
    jobs = [line.split() for line in sys.stdin if line.strip()]
    p, w, r = launch(sys.argv[1], sys.argv[2])
    c = Pipe(w, r)
    failed = 0
    try:
        for job in jobs:
            try:
                load(c, job[0], job[1], job[2] if len(job) > 2 else None)
            except (RuntimeError, KeyError) as e:
                print("browse.py: %s: %s" % (job[0], e), file=sys.stderr)
                failed = 1
        c.call("Browser.close")
    except (EOFError, OSError) as e:
        print("browse.py: %s" % e, file=sys.stderr)
        failed = 1
        p.kill()
    p.wait()
    sys.exit(failed)


main()
