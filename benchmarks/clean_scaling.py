"""``python -m plcore clean`` end to end on generated data of many rows or many classes (issue 73
item 5): the whole command's seconds, and how much of it the noise-model fits take (every engine's,
the ensemble selection's and the second round's) beside the engines' out-of-fold fits.

    python benchmarks/clean_scaling.py                       # 2,000 rows x 500 classes, 11,000 x 10
    python benchmarks/clean_scaling.py --sizes 500x50        # one size (a smoke check)

Each size: a CSV of ``n`` rows (20 features, one Gaussian blob per class, PiCO+'s noisy sets with
``q = min(0.3, 3 / Q)`` and ``eta = 0.1``) written to a temporary folder, then the command run under
``cProfile`` in a fresh process (its seconds include the profiler's overhead); the table gives the
cumulative seconds in ``fit_noise_model`` and ``out_of_fold_proba`` and their shares.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SIZES = ((2000, 500), (11000, 10))


def write_csv(path: Path, n: int, n_classes: int, seed: int = 0, n_features: int = 20) -> None:
    """``n`` rows of ``n_classes`` Gaussian blobs, a ``candidates`` column of PiCO+'s noisy sets."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    X = 3.0 * rng.normal(size=(n_classes, n_features))[y] + rng.normal(size=(n, n_features))
    q = min(0.3, 3.0 / n_classes)
    S = rng.random((n, n_classes)) < q
    S[np.arange(n), y] = rng.random(n) >= 0.1
    empty = ~S.any(axis=1)
    S[empty, y[empty]] = True  # a set is never empty
    with path.open("w") as fh:
        fh.write(",".join(f"f{j}" for j in range(n_features)) + ",candidates\n")
        for row, s in zip(X, S):
            fh.write(",".join(f"{v:.4f}" for v in row) + "," + ";".join(f"c{j}" for j in np.flatnonzero(s)) + "\n")


def cumulative(stats: pstats.Stats, function: str) -> float:
    """Cumulative seconds of the outermost calls of ``function`` (recursion counted once)."""
    return sum(ct for (_, _, name), (_, _, _, ct, _) in stats.stats.items() if name == function)


def run(n: int, n_classes: int, folder: Path) -> dict:
    data, prof = folder / f"data_{n}x{n_classes}.csv", folder / f"prof_{n}x{n_classes}.out"
    write_csv(data, n, n_classes)
    cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "plcore", "clean", "dataset=file",
           f"dataset.name_or_path={data}", "dataset.candidate_column=candidates", f"out={folder / 'out.csv'}",
           "progress=false", "tracking=none", f"hydra.run.dir={folder / 'hydra'}"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ | {"OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"clean failed on {n}x{n_classes}: {done.stderr.strip().splitlines()[-1]}")
    stats = pstats.Stats(str(prof))
    (folder / "out.csv").unlink()
    said = next((line for line in done.stdout.splitlines() if line.startswith("[clean") and " chosen" in line), "")
    return {"seconds": seconds, "noise": cumulative(stats, "fit_noise_model"),
            "folds": cumulative(stats, "out_of_fold_proba"), "said": said}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=[f"{n}x{q}" for n, q in SIZES], help="ROWSxCLASSES")
    args = parser.parse_args(argv)
    print(f"{'rows':>6} {'classes':>7} {'command s':>9} {'noise fits s':>12} {'share':>6} {'engine folds s':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            n, n_classes = (int(v) for v in size.split("x"))
            r = run(n, n_classes, Path(tmp))
            print(f"{n:>6} {n_classes:>7} {r['seconds']:>9.1f} {r['noise']:>12.1f} {r['noise'] / r['seconds']:>6.2f} "
                  f"{r['folds']:>14.1f}   {r['said'][:100]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
