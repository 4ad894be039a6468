"""A leaderboard protocol's cost per group, measured from its run files, beside the estimate that
``leaderboard list`` makes from the other protocols' files alone (the cost model of
docs/leaderboard.md, "field/2: the cost model").

Run from the repository root::

    .venv/bin/python benchmarks/leaderboard_cost.py --protocol field/2

Prints one row per group: its rows, folds, the core-hours its folds took (the sum of their wall
times), the estimate made as if none of them had run, and their ratio; then the run's wall time
(from the first fold's start to the last one's end, which spans a single resumed run only when it
was not stopped) and the machines the files were measured on. A benchmark, not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from datetime import datetime


def main(argv=None) -> int:
    from plcore.leaderboard.jobs import cell_states, entries, estimate_missing
    from plcore.leaderboard.protocol import load_protocol
    from plcore.leaderboard.runfile import iter_runs, row_key
    from plcore.registry import get_registry

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", default="field/2")
    ap.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    args = ap.parse_args(argv)
    protocol, registry = load_protocol(args.protocol), get_registry()
    rows = entries(protocol, registry)
    group_of = {e.key: e.group for e in rows}
    spent, folds, stamps, machines = defaultdict(float), defaultdict(int), [], set()
    for _, rec in iter_runs(args.results, f"{protocol.data['id']}-{protocol.data['version']}"):
        if rec["protocol"]["hash"] != protocol.hash:
            continue
        group = group_of.get(row_key(rec["component"]), rec["component"].get("group", "?"))
        spent[group] += rec.get("timing", {}).get("wall_s", 0.0)
        folds[group] += 1
        for key in ("started_at", "finished_at"):
            if rec.get(key):
                stamps.append(datetime.strptime(rec[key], "%Y-%m-%dT%H:%M:%SZ"))
        if rec.get("machine"):
            m = rec["machine"]
            machines.add(f"{m['cpus']} CPU(s) {m['arch']}" + (f", {m['gpu']}" if m.get("gpu") else ""))
    print(f"protocol {protocol.key}: cost per group, measured beside the estimate made before it ran")
    print(f"{'group':<12} {'rows':>5} {'folds':>6} {'measured (core-h)':>18} {'estimate (core-h)':>18} {'ratio':>6}")
    total_spent = total_est = 0.0
    for group in ("classic", "deep", "clustering"):
        mine = [e for e in rows if e.group == group]
        if not mine:
            continue
        est = estimate_missing(protocol, mine, {}, args.results, registry, own=False)
        total_spent += spent[group]
        total_est += est.seconds
        ratio = f"{spent[group] / est.seconds:.2f}" if est.seconds else "-"
        note = f"  ({est.unknown} cells with nothing to scale from)" if est.unknown else ""
        print(f"{group:<12} {len(mine):>5} {folds[group]:>6} {spent[group] / 3600:>18.2f} {est.seconds / 3600:>18.2f} "
              f"{ratio:>6}{note}")
    print(f"{'total':<12} {len(rows):>5} {sum(folds.values()):>6} {total_spent / 3600:>18.2f} {total_est / 3600:>18.2f}")
    states = cell_states(protocol, rows, args.results)
    todo = sum(1 for s in states.values() if s == "not run" or s.startswith("partial"))
    if stamps:
        print(f"wall: {(max(stamps) - min(stamps)).total_seconds() / 3600:.2f} h from the first fold's start to the "
              f"last fold's end; {todo} cell(s) still to run; measured on {'; '.join(sorted(machines))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
