"""The deferred JSON checks of the end-to-end test scripts (tests/json_lib.sh).

DIR holds checks 1..N: file i is the output to check (every non-empty line
one JSON value, no NaN or Infinity), i.expr a Python expression that must
hold with j = the last value, objs = all of them and steps = those with a
"step" key but no "summary", i.what what wrote the output. Prints one FAIL
line per failing check, naming all three, then "checked PASSED FAILED"."""
import json
import sys


def no_const(c):
    raise ValueError("not JSON: " + c)


def check(base):
    objs = [json.loads(l, parse_constant=no_const) for l in open(base) if l.strip()]
    j = objs[-1] if objs else None
    steps = [o for o in objs if isinstance(o, dict) and "step" in o and "summary" not in o]
    expr = open(base + ".expr").read()
    return bool(objs and eval(expr, {"j": j, "objs": objs, "steps": steps}))


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    good = 0
    for i in range(1, n + 1):
        base = "%s/%d" % (d, i)
        try:
            held, why = check(base), ""
        except Exception as e:  # a bad file or expression fails its check
            held, why = False, " (%s: %s)" % (type(e).__name__, e)
        if held:
            good += 1
            continue
        print("FAIL: JSON check%s: %s\n  on %s\n  from %s" % (
            why, open(base + ".expr").read(), open(base, errors="replace").read(800),
            open(base + ".what").read()))
    print("checked", good, n - good)


main()
