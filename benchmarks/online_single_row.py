"""Speed benchmark: the online learners' ``partial_fit`` / ``predict`` one row at a time (issue 19).

Run from the repository root (``OMP_NUM_THREADS=1`` on a shared machine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/online_single_row.py [--full] [--data-home DIR]

Data: satimage (2859 x 36, q = 6), z-scored, one random order (seed 0), candidate sets of size
2 (``FixedSizeBags``, seed 0); the exact-label baselines get the true labels as singleton
sets. If the data set cannot be loaded, a Gaussian stream of the same shape is used (said in
the output).

For every learner, measured in the same run, round-robin (best of the rounds for each):

* **fast**: ``partial_fit(X[i:i+1], S[i:i+1])`` row after row on the single-row fast path
  (the default; cheap type/shape/dtype checks, NaN/inf and empty-set checks in the kernel);
* **old**: the same with ``plcore_online.learners.SINGLE_ROW_FAST_PATH = False``: full
  validation on every call (the path before issue 19);
* **batched**: ``partial_fit(X, S)`` on the whole stream in one call;
* ``predict(X[i:i+1])`` row after row, fast and old (printed, not in ``table_rows``).

The learner is initialised (``partial_fit(X[:0], S[:0], classes=...)``, full validation)
before the clock starts; numba compiles the kernels once per process before any timing.
The fast and old paths are checked to give bit-identical weights on the timed rows.

``table_rows(quick)`` (the ``benchmarks/run_all.py`` convention) returns one row per learner:
``ratio`` = speed-up of the fast path over the old per-call path, ``met`` = fast rows/s
>= 50,000 (the goal of issue 19), absolute rows/s in ``note``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
GOAL_ROWS_PER_S = 50_000


def _data(data_home=None):
    """(X, S, truth, source) in stream order."""
    data_home = data_home or os.environ.get("PLCORE_DATA_HOME", str(REPO.parent / "shared" / "datasets"))
    from plcore.datasets.bags import FixedSizeBags

    try:
        from plcore.datasets.loaders import load_dataset

        ds = load_dataset("satimage", data_home)
        X, y, q = ds.X, ds.y_true, ds.n_classes
        source = f"satimage {X.shape[0]}x{X.shape[1]}, q={q}"
    except Exception as exc:  # noqa: BLE001 - any loading problem: fall back to synthetic data
        rng = np.random.RandomState(0)
        q = 6
        y = rng.randint(0, q, 2859)
        X = rng.randn(2859, 36) + 2.0 * rng.randn(q, 36)[y]
        source = f"synthetic 2859x36, q=6 (satimage not loaded: {type(exc).__name__})"
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    order = np.random.RandomState(0).permutation(len(y))
    X, y = np.ascontiguousarray(X[order], dtype=np.float64), y[order]
    S = np.ascontiguousarray(FixedSizeBags(2).generate(y, random_state=0, n_classes=q), dtype=bool)
    truth = np.eye(q, dtype=bool)[y]
    return X, S, truth, source


def _learner_classes() -> dict:
    """Option name -> class, in the order of the paper's figures."""
    from plcore_online.learners import (AvgPegasosLearner, AvgPerceptronLearner, MaxPegasosLearner,
                                        MaxPerceptronLearner, PegasosLearner, PerceptronLearner)

    return {"perceptron": PerceptronLearner, "avg_perceptron": AvgPerceptronLearner,
            "max_perceptron": MaxPerceptronLearner, "pegasos": PegasosLearner,
            "avg_pegasos": AvgPegasosLearner, "max_pegasos": MaxPegasosLearner}


def measure(quick: bool = True, data_home=None):
    """Rows/s of every learner on every path; returns ``(results, info)``."""
    import plcore_online._stream as kernels
    from plcore.tags import get_pll_tags
    from plcore_online import learners

    LEARNERS = _learner_classes()

    X, S, truth, source = _data(data_home)
    n, q = S.shape
    classes = np.arange(q)
    rounds = 3 if quick else 7
    m_fast = n                        # rows streamed one at a time on the fast path
    m_old = 300 if quick else 1000    # the old path is ~20x slower: fewer rows
    kernels.USE_JIT = True
    t0 = time.perf_counter()
    kernels.compile_kernels()
    compile_s = time.perf_counter() - t0

    def start(cls):
        return cls().partial_fit(X[:0], S[:0], classes=classes)

    def one_row(cls, target, m, fast):
        def run():
            learners.SINGLE_ROW_FAST_PATH = fast
            est = start(cls)
            t = time.perf_counter()
            for i in range(m):
                est.partial_fit(X[i:i + 1], target[i:i + 1])
            dt = time.perf_counter() - t
            learners.SINGLE_ROW_FAST_PATH = True
            return dt, est
        return run

    def predict_rows(cls, target, m, fast):
        fitted = start(cls).partial_fit(X, target)

        def run():
            learners.SINGLE_ROW_FAST_PATH = fast
            t = time.perf_counter()
            for i in range(m):
                fitted.predict(X[i:i + 1])
            dt = time.perf_counter() - t
            learners.SINGLE_ROW_FAST_PATH = True
            return dt, None
        return run

    def batched(cls, target):
        def run():
            est = start(cls)
            t = time.perf_counter()
            est.partial_fit(X, target)
            return time.perf_counter() - t, est
        return run

    jobs = {}  # (learner, what) -> (rows, callable)
    for name, cls in LEARNERS.items():
        target = truth if get_pll_tags(cls).exact_label_baseline else S
        # same numbers on both paths (the tests check this in depth)
        _, a = one_row(cls, target, m_old, True)()
        _, b = one_row(cls, target, m_old, False)()
        assert np.array_equal(a.W_, b.W_) and a.n_updates_ == b.n_updates_, name
        jobs[name, "fast"] = (m_fast, one_row(cls, target, m_fast, True))
        jobs[name, "old"] = (m_old, one_row(cls, target, m_old, False))
        jobs[name, "batched"] = (n, batched(cls, target))
        jobs[name, "predict fast"] = (m_fast, predict_rows(cls, target, m_fast, True))
        jobs[name, "predict old"] = (m_old, predict_rows(cls, target, m_old, False))
    best = dict.fromkeys(jobs, np.inf)
    for _ in range(rounds):
        for key, (_, fn) in jobs.items():
            best[key] = min(best[key], fn()[0])
    results = {name: {what: jobs[name, what][0] / best[name, what]
                      for what in ("fast", "old", "batched", "predict fast", "predict old")}
               for name in LEARNERS}
    info = {"source": source, "rounds": rounds, "m_fast": m_fast, "m_old": m_old, "compile_s": compile_s}
    return results, info


def _rows(results):
    rows = []
    for name, r in results.items():
        rows.append({
            "method": name,
            "measure": "partial_fit one row at a time, rows/s",
            "ratio": round(r["fast"] / r["old"], 1),
            "goal": f">= {GOAL_ROWS_PER_S // 1000}k rows/s (ratio: speed-up over the old per-call path)",
            "met": bool(r["fast"] >= GOAL_ROWS_PER_S),
            "note": (f"{r['fast']:,.0f} rows/s (old path {r['old']:,.0f}; batched partial_fit "
                     f"{r['batched']:,.0f}); predict one row {r['predict fast']:,.0f} rows/s "
                     f"(old {r['predict old']:,.0f})"),
        })
    return rows


def table_rows(quick: bool = True) -> list[dict]:
    """One row per learner (``benchmarks/run_all.py`` convention)."""
    results, _ = measure(quick)
    return _rows(results) + _kernel_rows()


def _kernel_rows() -> list[dict]:
    """The compiled prequential kernel (what the online protocol runs) against the plain-numpy
    reference loop (``plcore_online._stream.USE_JIT = False``), one stream of 2000 rows each."""
    import time

    import plcore_online._stream as kernels
    from plcore_online.learners import prequential

    LEARNERS = _learner_classes()

    rng = np.random.RandomState(0)
    X = rng.normal(size=(2000, 36))
    S = rng.rand(2000, 6) < 0.3
    S[np.arange(2000), rng.randint(6, size=2000)] = True
    classes = np.arange(6)
    rows = []
    for name in ("avg_perceptron", "avg_pegasos"):
        times = {}
        for jit in (True, False):
            kernels.USE_JIT = jit
            prequential(LEARNERS[name](), X[:50], S[:50], classes)     # compile / warm up
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                prequential(LEARNERS[name](), X, S, classes)
                best = min(best, time.perf_counter() - t0)
            times[jit] = best
        kernels.USE_JIT = True
        ratio = times[False] / times[True]
        rows.append({
            "method": f"{name} (prequential kernel)",
            "measure": (f"one stream of 2000 rows, d=36, q=6: compiled {times[True] * 1e3:.1f} ms vs plain-numpy "
                        f"reference loop {times[False] * 1e3:.0f} ms"),
            "ratio": float(ratio), "goal": "> 1x (speed-up over the in-repo numpy loop)", "met": bool(ratio > 1),
            "note": "benchmarks/online_single_row.py, measured in this run",
        })
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="more rounds and more rows on the old path")
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args(argv)
    results, info = measure(quick=not args.full, data_home=args.data_home)
    import numba
    import sklearn

    print(f"{info['source']}; candidate sets of size 2; python {platform.python_version()}, numpy "
          f"{np.__version__}, scikit-learn {sklearn.__version__}, numba {numba.__version__}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; best of {info['rounds']} rounds; "
          f"one-row rows: {info['m_fast']} (fast), {info['m_old']} (old); numba compilation before "
          f"timing: {info['compile_s']:.1f} s\n")
    print("| learner | partial_fit one row, fast (rows/s) | old per-call path (rows/s) | fast / old "
          "| batched partial_fit (rows/s) | fast / batched | predict one row, fast (rows/s) "
          "| predict, old (rows/s) | >= 50k rows/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        print(f"| {name} | {r['fast']:,.0f} | {r['old']:,.0f} | {r['fast'] / r['old']:.1f}x | "
              f"{r['batched']:,.0f} | {r['fast'] / r['batched']:.3f} | {r['predict fast']:,.0f} | "
              f"{r['predict old']:,.0f} | {'yes' if r['fast'] >= GOAL_ROWS_PER_S else 'no'} |")
    print()
    print("| method | measure | ratio | goal | met | note |")
    print("|---|---|---:|---|---|---|")
    for row in _rows(results):
        print(f"| {row['method']} | {row['measure']} | {row['ratio']} | {row['goal']} | "
              f"{'yes' if row['met'] else 'no'} | {row['note']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
