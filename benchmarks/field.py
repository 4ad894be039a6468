"""The field table, one leaderboard tier at a time: its missing folds run, then its page rendered.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py --tier smoke
    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py --tier quick
    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py --tier headline
    PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py --tier vision   # on a machine with a GPU

A thin wrapper of ``python -m plcore leaderboard run`` (every installed component the tier's
protocol takes, one Hydra joblib job per row, only the folds without a run file) and ``leaderboard
page`` (the tier's page under docs/results/ from the run files under ``leaderboard/``). It prints
the wall time of the run. The rows, data sets, folds and selection are the protocol's
(``plcore/leaderboard/frozen/``), not this script's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

#: each tier's protocol and page
TIERS = {"headline": ("field/2", "docs/results/leaderboard.md"),
         "vision": ("vision/1", "docs/results/leaderboard_vision.md"),
         "full": ("field/1", "docs/results/leaderboard_field1.md"),
         "quick": ("field-quick/1", "docs/results/leaderboard_quick.md"),
         "smoke": ("field-smoke/1", "docs/results/leaderboard_smoke.md")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=sorted(TIERS), default="headline")
    ap.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    ap.add_argument("--group", choices=["classic", "deep", "clustering"], default=None, help="only these rows")
    ap.add_argument("--only", nargs="+", default=None, metavar="KIND:NAME", help="only these rows")
    ap.add_argument("--jobs", type=int, default=-1, help="joblib workers (-1: one per core)")
    ap.add_argument("--page-only", action="store_true", help="render the page from the files already there")
    args = ap.parse_args(argv)
    protocol, page = TIERS[args.tier]
    lb = [sys.executable, "-m", "plcore", "leaderboard"]
    code = 0
    if not args.page_only:
        cmd = [*lb, "run", "--protocol", protocol, "--results", args.results, "--launcher", "joblib",
               "--override", f"hydra.launcher.n_jobs={args.jobs}"]
        cmd += (["--group", args.group] if args.group else []) + (["--only", *args.only] if args.only else [])
        start = time.perf_counter()
        code = subprocess.run(cmd).returncode
        print(f"{protocol}: the run took {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    page_code = subprocess.run([*lb, "page", "--protocol", protocol, "--results", args.results, "--out", page]).returncode
    return code or page_code


if __name__ == "__main__":
    sys.exit(main())
