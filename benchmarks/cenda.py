"""Speed and memory benchmark: plcore's CENDA against the literal dense implementation.

Run from the repository root (threads pinned to 1 by default; the machine is shared)::

    .venv/bin/python benchmarks/cenda.py [--sizes 1000 5000 20000] [--dense-max 5000]
                                         [--big 100000] [--iters 5] [--threads 1]

Data: synthetic, d = 200 features, q = 20 classes; class means drawn in a random
10-dimensional subspace plus isotropic noise; candidate sets = true label + 2 uniformly
drawn false positives (the ``uniform`` bags of the paper, r = 2).

Implementations (same parameters: thr 0.999, mu 0.5, k 8, alpha 1, ``max_iter=--iters``,
``tol=0`` so both run exactly the same number of iterations):

* ``plcore``: :class:`plcore_cenda.CendaReducer` (X^T H Y is d x q, B factored once, the
  generalised problem reduced to an SVD of a d x q matrix, tree/brute kNN in d').
* ``dense``: ``plugins/plcore-cenda/tests/cenda_reference.py::dense_cenda``, the paper
  written literally: H and L = Y Y^T as m x m matrices, ``scipy.linalg.eigh(A, B)``, all
  m x m distances, argsort. The script checks that both give the same n_components and
  subspace where both ran.

Every configuration runs in a fresh subprocess. Peak memory = ``ru_maxrss`` after the fit
minus ``ru_maxrss`` just before it (data already allocated), i.e. the extra resident memory
the fit needed (includes BLAS/LAPACK and scikit-learn internals). Sizes above
``--dense-max`` are not run densely: the dense method needs at least four m x m float64
arrays at once (H, L, the distance matrix, its argsort), 12.8 GB at m = 20000 on a shared
23 GB machine, so its time and memory there are extrapolated from the two largest measured
sizes with the fitted power law ``c * m^p`` (marked "extrapolated").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT / "plugins" / "plcore-cenda" / "tests"


def make_data(m, d=200, q=20, r=2, seed=0):
    import numpy as np

    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=m)
    basis = np.linalg.qr(rng.normal(size=(d, 10)))[0]
    means = 3.0 * rng.normal(size=(q, 10)) @ basis.T
    X = means[y] + rng.normal(size=(m, d))
    S = np.zeros((m, q), dtype=bool)
    S[np.arange(m), y] = True
    others = np.argsort(rng.rand(m, q) + np.eye(q)[y] * 2, axis=1)[:, :r]   # r labels != y
    S[np.arange(m)[:, None], others] = True
    return X, S, y


def child(impl, m, iters, algorithm):
    """Run one fit in this (fresh) process and print a JSON line."""
    import resource
    import warnings

    import numpy as np

    warnings.simplefilter("ignore")
    X, S, _ = make_data(m)
    if impl == "plcore":
        from plcore_cenda import CendaReducer

        est = CendaReducer(max_iter=iters, tol=0.0, algorithm=algorithm)
        fit = lambda: est.fit(X, S)  # noqa: E731
    else:
        sys.path.insert(0, str(REF_DIR))
        from cenda_reference import dense_cenda

        fit = lambda: dense_cenda(X, S, max_iter=iters, tol=0.0)  # noqa: E731
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    out = fit()
    t = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before   # KiB on Linux
    P = est.projection_ if impl == "plcore" else out[0]
    np.save(f"/tmp/cenda_bench_P_{impl}_{m}.npy", P)
    print(json.dumps({"impl": impl, "m": m, "time": t, "peak_mb": peak / 1024.0,
                      "d_out": int(P.shape[1])}))


def run_child(impl, m, iters, threads, algorithm):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--child", impl, str(m), "--iters", str(iters),
           "--algorithm", algorithm]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def power_law(ms, vs, m):
    import numpy as np

    p = np.log(vs[1] / vs[0]) / np.log(ms[1] / ms[0])
    return vs[1] * (m / ms[1]) ** p, p


def table_rows(quick: bool = True) -> list[dict]:
    """Rows for ``benchmarks/run_all.py``: CENDA at m = 100k (minutes) and plcore vs the dense literal version.

    quick: 2 iterations (tol=0) at m = 20000 in a fresh 1-thread subprocess; the 100k full
    fit (50 iterations) is *extrapolated* as m^2 (the all-pairs neighbour search, ~95% of an
    iteration there, is quadratic; the rest is linear, so this slightly overestimates) times
    25 iterations-per-2. (A power law fitted at 5k-10k, where the linear parts still weigh,
    gave 7 min: an underestimate.) Not quick: 2 iterations
    measured at m = 100000, times 25 (still an extrapolation over iterations; a full
    50-iteration run is ``python benchmarks/cenda.py --sizes 100000 --big 0 --iters 50 --dense-max 0``).
    """
    iters = 2
    if quick:
        b = run_child("plcore", 20000, iters, 1, "auto")
        t100 = b["time"] * (100000 / 20000) ** 2
        how = (f"extrapolated: {iters} iterations at m=20000 ({b['time']:.2f} s) x (100k/20k)^2 (quadratic search), "
               f"x{50 // iters} iterations")
        d_out = b["d_out"]
    else:
        big = run_child("plcore", 100000, iters, 1, "auto")
        t100, d_out = big["time"], big["d_out"]
        how = f"{iters} iterations measured at m=100000 ({t100:.1f} s), x{50 // iters} iterations"
    minutes = t100 * (50 / iters) / 60.0
    dense = run_child("dense", 2000, iters, 1, "auto")
    small = run_child("plcore", 2000, iters, 1, "auto")
    return [{
        "method": "CENDA full fit at m=100k (minutes)",
        "measure": f"synthetic d=200, q=20, d'={d_out}, 50 iterations, 1 thread; {how}",
        "ratio": float(minutes),
        "goal": "<= 10 min",
        "met": bool(minutes <= 10),
        "note": ("recorded: a full 50-iteration fit at m=100k took 12.2 min (732 s, d'=15; commit 534c227, "
                 "this script's --child plcore 100000 --iters 50, 1 thread), and 8.5 min on 2 threads (509 s, "
                 "--sizes 100000 --big 0 --iters 50 --dense-max 0 --threads 2: the search's tiles on both cores, "
                 "docs/performance.md); the m^2 extrapolation overestimates. "
                 "Documented reason: the exact all-pairs kNN (brute32, ~11-14 s of the 14.6 s per iteration "
                 "at m=100k) is O(m^2 d'), and its "
                 "float32 GEMM alone ~2/3 of the search; at d' ~ 15-18 no tree or box bound prunes (measured: ball "
                 "bounds skip 0 of 128 leaves at m=20000), so exact search stays above 10 min on this machine; "
                 "anchor ~60 min (210 s/iteration, KD-tree)"),
    }, {
        "method": "CENDA vs in-repo dense literal version",
        "measure": f"m=2000, {iters} iterations: plcore {small['time']:.3f} s vs dense {dense['time']:.2f} s",
        "ratio": float(dense["time"] / small["time"]),
        "goal": "> 1x",
        "met": bool(dense["time"] > small["time"]),
        "note": "benchmarks/cenda.py, fresh 1-thread subprocesses, measured in this run",
    }]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--dense-max", type=int, default=5000)
    ap.add_argument("--big", type=int, default=100000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--child", nargs=2, metavar=("IMPL", "M"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.iters, args.algorithm)
        return

    import numpy as np

    rows, dense_meas = [], []
    for m in args.sizes:
        pl = run_child("plcore", m, args.iters, args.threads, args.algorithm)
        print(f"# plcore m={m}: {pl}", file=sys.stderr, flush=True)
        if m <= args.dense_max:
            de = run_child("dense", m, args.iters, args.threads, args.algorithm)
            print(f"# dense  m={m}: {de}", file=sys.stderr, flush=True)
            dense_meas.append((m, de["time"], de["peak_mb"]))
            Pa = np.load(f"/tmp/cenda_bench_P_plcore_{m}.npy")
            Pb = np.load(f"/tmp/cenda_bench_P_dense_{m}.npy")
            import scipy.linalg as sla

            same = Pa.shape == Pb.shape and float(np.max(sla.subspace_angles(Pa, Pb))) < 1e-6
            rows.append((m, pl, de["time"], de["peak_mb"], "measured", "yes" if same else "NO"))
        elif len(dense_meas) < 2:
            rows.append((m, pl, float("nan"), float("nan"), "not run (no two dense sizes to extrapolate from)", "-"))
        else:
            (m1, t1, p1), (m2, t2, p2) = dense_meas[-2], dense_meas[-1]
            t_ex, pt = power_law((m1, m2), (t1, t2), m)
            mem_ex = max(power_law((m1, m2), (p1, p2), m)[0], 4 * m * m * 8 / 2**20)
            rows.append((m, pl, t_ex, mem_ex, f"extrapolated (time ~ m^{pt:.2f}, mem >= 4 m^2 float64)", "-"))
    big = run_child("plcore", args.big, args.iters, args.threads, args.algorithm) if args.big else None

    print(f"\nCENDA fit, synthetic d=200, q=20, r=2, {args.iters} iterations (tol=0), "
          f"{args.threads} thread(s), neighbour algorithm {args.algorithm!r}\n")
    print("| m | plcore time (s) | dense time (s) | speed-up | plcore peak (MB) | dense peak (MB) "
          "| memory ratio | d' | dense | same subspace |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, pl, dt, dm, how, same in rows:
        print(f"| {m} | {pl['time']:.2f} | {dt:.1f} | {dt / pl['time']:.0f}x | {pl['peak_mb']:.1f} | "
              f"{dm:.0f} | {dm / max(pl['peak_mb'], 1e-3):.0f}x | {pl['d_out']} | {how} | {same} |")
    if big:
        print(f"| {args.big} | {big['time']:.2f} | - | - | {big['peak_mb']:.1f} | - | - | {big['d_out']} "
              "| not run (m^2 = 80 GB per matrix) | - |")


if __name__ == "__main__":
    main()
