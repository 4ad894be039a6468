"""Speed benchmark: plcore-online learners vs scikit-learn's Perceptron / SGDClassifier on one epoch.

Run from the repository root (``OMP_NUM_THREADS=1`` recommended on a shared machine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/online.py [--data-home DIR] [--repeats 5] [--s 2]

Data: satimage (statlog-landsat-satellite, 2859 x 36, q = 6), z-scored, one random order
(seed 0). The partial-label learners get candidate sets of size ``s`` (FixedSizeBags,
seed 0); the exact-label baselines and scikit-learn get the true labels. Time = best of
``--repeats`` runs of one full pass, in examples per second.

Rows
----
* plcore-online learners, ``plcore_online.learners.prequential`` (the online protocol's registered kernel:
  predict each example, then update, one call per stream), on both inner-loop paths:
  ``compiled`` (numba, the default) and ``numpy`` (the plain-numpy reference loop,
  ``plcore_online._stream.USE_JIT = False`` / ``PLCORE_ONLINE_NO_JIT=1``). The compiled rows
  are warm: numba compiles each kernel on its first call in a process, and that first call
  is timed separately (printed above the tables, not part of the examples/s);
* the same through the public API one example at a time (``predict`` + ``partial_fit``
  per row: what the protocol does for a learner without the fast path), compiled path;
* ``literal``: the straightforward pure-Python implementation of Algorithm 1 from the
  tests (``plugins/plcore-online/tests/online_reference.py``), on the first 500 rows;
* scikit-learn ``Perceptron`` and ``SGDClassifier(loss="hinge")``: (a) ``partial_fit``
  on the whole stream in one call -- one compiled epoch of one-vs-rest updates, *without*
  a prediction before each update; (b) ``predict`` + ``partial_fit`` per example, the
  online protocol (first 300 rows; it is slow).

Ratios are examples/s divided by scikit-learn's one-call epoch (goal >= 0.5). The
implementations are timed round-robin (``--repeats`` rounds, best time of each kept) so that
load changes on a shared machine hit them alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.linear_model import Perceptron, SGDClassifier

from plcore.datasets.bags import FixedSizeBags
from plcore.datasets.loaders import load_dataset
from plcore.tags import get_pll_tags
import plcore_online._stream as kernels
from plcore_online.learners import (AvgPegasosLearner, AvgPerceptronLearner, MaxPegasosLearner,
                                    MaxPerceptronLearner, PegasosLearner, PerceptronLearner, prequential)

#: option name -> class, in the order of the paper's figures
LEARNERS = {"perceptron": PerceptronLearner, "avg_perceptron": AvgPerceptronLearner,
            "max_perceptron": MaxPerceptronLearner, "pegasos": PegasosLearner,
            "avg_pegasos": AvgPegasosLearner, "max_pegasos": MaxPegasosLearner}

REPO = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME", str(REPO.parent / "shared" / "datasets")))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--s", type=int, default=2)
    args = ap.parse_args(argv)

    ds = load_dataset("satimage", args.data_home)
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    order = np.random.RandomState(0).permutation(ds.n_samples)
    X, y = X[order], ds.y_true[order]
    n, q = len(y), ds.n_classes
    classes = np.arange(q)
    S = FixedSizeBags(args.s).generate(y, random_state=0, n_classes=q)
    truth = np.eye(q, dtype=bool)[y]

    jobs = []  # (implementation, mode, n_examples, callable)
    for name, make in (("Perceptron", lambda: Perceptron(max_iter=1, tol=None, shuffle=False)),
                       ("SGDClassifier(hinge)", lambda: SGDClassifier(loss="hinge", max_iter=1, tol=None,
                                                                       shuffle=False))):
        def per_example(make=make, m=300):
            e = make().partial_fit(X[:1], y[:1], classes=classes)
            for i in range(1, m):
                e.predict(X[i:i + 1])
                e.partial_fit(X[i:i + 1], y[i:i + 1])

        jobs.append((f"sklearn {name}", "partial_fit(whole stream), one call", n,
                     lambda make=make: make().partial_fit(X, y, classes=classes)))
        jobs.append((f"sklearn {name}", "predict + partial_fit per example", 299, per_example))

    def stream(cls, target, jit):
        def run():
            kernels.USE_JIT = jit
            return prequential(cls(), X, target, classes)
        return run

    # one-off costs of the compiled path, timed apart: importing numba (the plugin imports it
    # lazily, on the first compiled stream) and the first call of each kernel (compilation)
    t0 = time.perf_counter()
    import numba
    numba_import = time.perf_counter() - t0
    first_call = {}
    for kernel, lname in (("perceptron", "avg_perceptron"), ("pegasos", "avg_pegasos")):
        t0 = time.perf_counter()
        stream(LEARNERS[lname], S, True)()
        first_call[kernel] = time.perf_counter() - t0

    for lname, cls in LEARNERS.items():  # same arithmetic: identical predictions on both paths
        target = truth if get_pll_tags(cls).exact_label_baseline else S
        assert np.array_equal(stream(cls, target, True)(), stream(cls, target, False)()), lname
    for path, jit in (("compiled", True), ("numpy", False)):
        for lname, cls in LEARNERS.items():
            target = truth if get_pll_tags(cls).exact_label_baseline else S
            jobs.append((f"plcore {lname} [{path}]", "prequential kernel (one call)", n, stream(cls, target, jit)))
    for lname in ("avg_perceptron", "avg_pegasos"):
        def generic(cls=LEARNERS[lname], m=1000):
            kernels.USE_JIT = True
            e = cls().partial_fit(X[:0], S[:0], classes=classes)
            for i in range(m):
                e.predict(X[i:i + 1])
                e.partial_fit(X[i:i + 1], S[i:i + 1])

        jobs.append((f"plcore {lname} [compiled]", "predict + partial_fit per example", 1000, generic))

    sys.path.insert(0, str(REPO / "plugins" / "plcore-online" / "tests"))
    from online_reference import literal_stream

    Xa = np.hstack([X, np.ones((n, 1))])[:500]
    jobs.append(("literal Algorithm 1 (pure Python)", "tests/online_reference.py", 500,
                 lambda: literal_stream(Xa, S[:500], loss="avg", algorithm="perceptron")))

    best = [np.inf] * len(jobs)
    for _ in range(args.repeats):
        for k, (_, _, _, fn) in enumerate(jobs):
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    kernels.USE_JIT = True
    rows = [(impl, mode, m / b) for (impl, mode, m, _), b in zip(jobs, best)]
    rate = {impl + " | " + mode: r for impl, mode, r in rows}
    ref = {"Perceptron": rows[0][2], "SGDClassifier(hinge)": rows[2][2]}

    print(f"satimage n={n} d={X.shape[1]} q={q}, candidate sets of size {args.s}; "
          f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"numba {numba.__version__}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"best of {args.repeats}\n")
    warm = {k: n / rate[f"plcore {lname} [compiled] | prequential kernel (one call)"]
            for k, lname in (("perceptron", "avg_perceptron"), ("pegasos", "avg_pegasos"))}
    print(f"One-off costs of the compiled path per process (not in the examples/s below): "
          f"import numba {numba_import:.2f} s; first call of each kernel (numba compilation + one epoch): " + "; ".join(
              f"{k}: {first_call[k]:.2f} s (warm epoch {1e3 * warm[k]:.1f} ms)" for k in first_call) + "\n")

    print("| learner | compiled examples/s | numpy examples/s | compiled / numpy | compiled vs Perceptron "
          "| compiled vs SGDClassifier | numpy vs Perceptron | numpy vs SGDClassifier |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for lname in LEARNERS:
        c = rate[f"plcore {lname} [compiled] | prequential kernel (one call)"]
        p = rate[f"plcore {lname} [numpy] | prequential kernel (one call)"]
        print(f"| {lname} | {c:,.0f} | {p:,.0f} | {c / p:.1f}x | {c / ref['Perceptron']:.2f}x | "
              f"{c / ref['SGDClassifier(hinge)']:.2f}x | {p / ref['Perceptron']:.2f}x | "
              f"{p / ref['SGDClassifier(hinge)']:.2f}x |")
    print()
    print("| implementation | mode | examples/s | vs sklearn Perceptron epoch | vs SGDClassifier epoch |")
    print("|---|---|---:|---:|---:|")
    for impl, mode, r in rows:
        print(f"| {impl} | {mode} | {r:,.0f} | {r / ref['Perceptron']:.2f}x | "
              f"{r / ref['SGDClassifier(hinge)']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
