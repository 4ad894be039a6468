"""A leaderboard protocol's cost per group, measured from its run files, beside the estimate that
``leaderboard list`` makes from the other protocols' files alone (the cost model of
docs/leaderboard.md, "field/2: the cost model").

Run from the repository root::

    PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/leaderboard_cost.py --protocol field/2

Prints one row per group: its rows, folds, the core-hours its folds took (the sum of their wall
times, as the page's compute line), the estimate made as if none of them had run, and their
ratio; then the wall time the files' timestamps span (one uninterrupted run's wall time) and the
machines they were measured on. A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from plcore.leaderboard.checks import cell_states
    from plcore.leaderboard.jobs import entries, estimate_missing
    from plcore.leaderboard.page import collect
    from plcore.leaderboard.protocol import load_protocol
    from plcore.leaderboard.runfile import to_run
    from plcore.registry import get_registry

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", default="field/2")
    ap.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    args = ap.parse_args(argv)
    protocol, registry = load_protocol(args.protocol), get_registry()
    rows = entries(protocol, registry)
    board = collect(protocol, args.results)
    print(f"protocol {protocol.key}: cost per group, measured beside the estimate made before it ran")
    print(f"{'group':<12} {'rows':>5} {'folds':>6} {'measured (core-h)':>18} {'estimate (core-h)':>18} {'ratio':>6}")
    total_spent = total_est = 0.0
    for group in ("classic", "deep", "clustering"):
        mine = [e for e in rows if e.group == group]
        if not mine:
            continue
        spent = sum(s for (_, g), s in board.timings.items() if g == group)
        folds = sum(len(f) for r in board.rows if r.group == group for f in r.folds.values())
        est = estimate_missing(protocol, mine, {}, args.results, registry, own=False)
        total_spent, total_est = total_spent + spent, total_est + est.seconds
        ratio = f"{spent / est.seconds:.2f}" if est.seconds else "-"
        note = f"  ({est.unknown} cells with nothing to scale from)" if est.unknown else ""
        print(f"{group:<12} {len(mine):>5} {folds:>6} {spent / 3600:>18.2f} {est.seconds / 3600:>18.2f} {ratio:>6}{note}")
    print(f"{'total':<12} {len(rows):>5} {board.n_files:>6} {total_spent / 3600:>18.2f} {total_est / 3600:>18.2f}")
    todo = sum(1 for s in cell_states(protocol, rows, args.results).values() if to_run(s))
    if board.wall_hours is not None:
        print(f"wall: {board.wall_hours:.2f} h from the first fold's start to the last fold's end; {todo} cell(s) "
              f"still to run; measured on {'; '.join(board.machines)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
