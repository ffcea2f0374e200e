#!/usr/bin/env python3
"""Prints the tables of doc/results.md from the program's own output:

    ./ftmesh sweep --json > sweep.json
    ./ftmesh sweep --throughput --json > tput.json
    python3 doc/results_tables.py sweep.json tput.json
"""
import json
import sys

MODELS = ("resnet50", "bert-large")


def sweep_tables(j):
    algos = []
    for r in j["rows"]:
        if r["algo"] not in algos:
            algos.append(r["algo"])
    for mesh in sorted({r["mesh"] for r in j["rows"]}, key=lambda m: int(m.split("x")[0])):
        rows = [r for r in j["rows"] if r["mesh"] == mesh]
        scen = []
        for r in rows:
            if r["scenario"] not in scen:
                scen.append(r["scenario"])
        print(f"\n{mesh} torus ({rows[0]['chips'] if rows[0]['scenario'] == 'healthy' else ''} chips), "
              "modeled ms; in brackets the schedule that ran where it is another algorithm's, "
              "and the overhead against the best healthy time; bold: fastest\n")
        for md in MODELS:
            print(f"| {md} | " + " | ".join(f"`{a}`" for a in algos) + " |")
            print("|---" * (len(algos) + 1) + "|")
            for sc in scen:
                cells = []
                for a in algos:
                    r = next(x for x in rows if x["scenario"] == sc and x["model"] == md and x["algo"] == a)
                    # "(ring; +397%)": another algorithm's schedule ran, as sweep's text tags it
                    tags = [r["schedule"]] if "fallback" in r else []
                    if sc != "healthy":
                        tags.append(f"{r['overhead_vs_best_healthy_pct']:+.0f}%")
                    c = f"{r['modeled_s'] * 1e3:.3f}" + (f" ({'; '.join(tags)})" if tags else "")
                    cells.append(f"**{c}**" if r["best"] else c)
                print(f"| {sc} | " + " | ".join(cells) + " |")
            print()
    print("Each faulty case's fastest algorithm against its goal (the `goal` rows of `--json`):\n")
    print("| torus | scenario | model | fastest | overhead | goal | met |")
    print("|---|---|---|---|---|---|---|")
    for g in j["goal"]:
        print(f"| {g['mesh']} | {g['scenario']} | {g['model']} | `{g['algo']}` | "
              f"{g['overhead_vs_best_healthy_pct']:+.2f}% | {g['goal_pct']:g}% | {'yes' if g['met'] else 'no'} |")


def tput_table(j):
    print("| torus | model | scenario | chips | batch | busiest chip | algo | compute (ms) | allreduce (ms) | step (ms) | examples/s | impact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in j["rows"]:
        print(f"| {r['mesh']} | {r['model']} | {r['scenario']} | {r['chips']} | {r['global_batch']} | "
              f"{r['examples_busiest_chip']} | "
              f"`{r['algo']}` | {r['compute_s'] * 1e3:.2f} | {r['allreduce_s'] * 1e3:.3f} | "
              f"{r['step_s'] * 1e3:.2f} | {r['examples_per_s']:.0f} | {r['impact_pct']:.2f}% |")


if __name__ == "__main__":
    which = sys.argv[3] if len(sys.argv) > 3 else "all"
    if which in ("all", "sweep"):
        sweep_tables(json.load(open(sys.argv[1])))
    if which in ("all", "tput"):
        tput_table(json.load(open(sys.argv[2])))
