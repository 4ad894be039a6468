"""Speed benchmark: one SAUTE outer iteration, plcore vs naive recomputation; and a whole fit.

Data: UCI semeion (1593 x 256, q = 10) from the data home, uniform bags with r = 2 false
positives (``UniformBags(r=2, random_state=0)``), features z-scored; d' = ceil(0.15 d) = 39.

One outer iteration = Table 1 steps 3-15: ``H(c|f)`` of every feature, the greedy selection
of d' features by Eq. (7), and the kNN update of ``Y`` (Eq. 12-14), starting from the
uniform ``Y`` of Eq. (1). Implementations:

* ``plcore``: ``plcore_saute`` -- ``H(c|f)`` once, vectorised over all features (row
  chunks of a (rows, q, d) array); redundancy sums updated incrementally after each pick
  (one ``bincount`` over the m x d joint bin codes); one kNN search;
* ``recompute (vectorised)``: the same vectorised primitives, but at every greedy step
  ``H(c|f)`` is recomputed and every redundancy sum ``sum_{f_i in A} I(f; f_i)`` is rebuilt
  from scratch (what Table 1 literally lists); isolates the algorithmic saving;
* ``naive (literal)``: ``plugins/plcore-saute/tests/saute_reference.py`` -- the test-suite
  reference: loops over features / classes, ``scipy.stats.norm.logpdf``,
  :func:`sklearn.metrics.mutual_info_score` per pair, ``H`` and the full criterion
  recomputed at every greedy step, and a per-example kNN update.

A whole fit (every outer iteration until the selected set repeats) at the largest d' of the
selection grid, ceil(0.6 d) = 154, where most of the field table's SAUTE time goes:

* ``plcore``: :class:`plcore_saute.reducers.SauteReducer` -- each ``I(., f_j)`` column computed
  once per fit (it depends on the discretised features alone) and kept across iterations;
* ``uncached``: the same fit with every iteration computing its picks' columns anew.

The script asserts that all variants select the same features in the same order and give the
same ``Y``. The literal reference is slow (about 12 CPU-minutes on semeion: each of the
~178k ``mutual_info_score`` calls costs ~3 ms of input validation) and runs only with
``--literal``. Run from the repository root (well under a minute without ``--literal``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/saute.py --data-home ../shared/datasets [--repeats 3] [--literal]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler

from plcore.datasets import UniformBags, load_dataset
import plcore_saute.reducers as saute_reducers
from plcore_saute._greedy import greedy_select, initial_confidences, knn_update
from plcore_saute._info import (
    bin_counts,
    conditional_entropy,
    discretize,
    mutual_info_with,
    standardize_columns,
)
from plcore_saute.reducers import SauteReducer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins" / "plcore-saute" / "tests"))
from saute_reference import greedy_naive, knn_update_literal  # noqa: E402  (the tests' literal reference)

VS, ALPHA, K = 0.1, 0.6, 8


def iteration_plcore(X, S, n_select):
    Z, constant = standardize_columns(X)
    B = discretize(X)
    Y = initial_confidences(S)
    H = conditional_entropy(Z, constant, Y, S, VS)
    A = greedy_select(H, B, n_select, marginals=bin_counts(B))
    return A, knn_update(X[:, A], Y, S, K, ALPHA)


def iteration_recompute(X, S, n_select):
    Z, constant = standardize_columns(X)
    B = discretize(X)
    marg = bin_counts(B)
    Y = initial_confidences(S)
    d = X.shape[1]
    A = []
    for _ in range(n_select):
        H = conditional_entropy(Z, constant, Y, S, VS)            # step 5, every step
        crit = -H
        if A:
            R = np.zeros(d)
            for g in A:                                            # step 6, from scratch
                R += mutual_info_with(B, g, marg)
            crit = crit - R / len(A)
        crit[A] = -np.inf
        A.append(int(np.argmax(crit)))
    return A, knn_update(X[:, A], Y, S, K, ALPHA)


def fit_plcore(X, S, n_select):
    """A whole SAUTE fit (every outer iteration), as the reducer runs it: each ``I(., f_j)``
    column computed once per fit."""
    est = SauteReducer(n_features=n_select).fit(X, S)
    return list(est.selected_features_), est.confidences_, est.n_iter_


def fit_uncached(X, S, n_select):
    """The same fit with every outer iteration computing its picks' ``I(., f_j)`` columns anew
    (the reducer before it kept them across iterations)."""
    original = saute_reducers.greedy_select
    saute_reducers.greedy_select = lambda *a, cache=None, **kw: original(*a, **kw)
    try:
        return fit_plcore(X, S, n_select)
    finally:
        saute_reducers.greedy_select = original


def iteration_naive(X, S, n_select):
    Y = initial_confidences(S)
    A = greedy_naive(X, Y, S, n_select, VS, redundancy=True)
    return A, knn_update_literal(X[:, A], Y, S, K, ALPHA)


def timed(fn, *args, repeats=1):
    """Best (wall, CPU) seconds over ``repeats`` runs and the last output.

    With one thread, process CPU time is the robust figure on a shared machine (wall time
    also counts the time other processes hold the core).
    """
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return (min(walls), min(cpus)), out


def table_rows(quick: bool = True) -> list[dict]:
    """Row for ``benchmarks/run_all.py``: one SAUTE iteration on semeion, plcore vs the same
    vectorised primitives recomputed at every greedy step (same features, same Y, asserted)."""
    ds = load_dataset("semeion", data_home=os.environ.get("PLCORE_DATA_HOME",
                                                          str(REPO.parent / "shared" / "datasets")))
    S = UniformBags(r=2, random_state=0).generate(ds.y_true, n_classes=ds.n_classes)
    X = StandardScaler().fit_transform(ds.X)
    n_select = math.ceil(0.15 * X.shape[1] - 1e-9)
    (_, cpu_fast), (A_fast, Y_fast) = timed(iteration_plcore, X, S, n_select, repeats=2 if quick else 3)
    (_, cpu_rec), (A_rec, Y_rec) = timed(iteration_recompute, X, S, n_select, repeats=1)
    same = A_rec == A_fast and np.allclose(Y_rec, Y_fast, rtol=1e-12)
    first = _row(f"one iteration on semeion (1593 x 256, d'={n_select}), CPU s: plcore {cpu_fast:.2f} vs "
                 f"recomputed every greedy step {cpu_rec:.2f}", cpu_rec / cpu_fast, same)
    n_big = math.ceil(0.6 * X.shape[1] - 1e-9)   # a whole fit at the grid's largest d', plcore vs uncached
    (_, cpu_fit), (A_fit, Y_fit, n_iter) = timed(fit_plcore, X, S, n_big, repeats=1 if quick else 2)
    (_, cpu_unc), (A_unc, Y_unc, _) = timed(fit_uncached, X, S, n_big, repeats=1)
    same = A_unc == A_fit and np.array_equal(Y_unc, Y_fit)
    return [first, _row(f"a whole fit on semeion at d'={n_big} ({n_iter} iterations), CPU s: plcore {cpu_fit:.2f} vs "
                        f"I(., f_j) computed anew every iteration {cpu_unc:.2f}", cpu_unc / cpu_fit, same)]


def _row(measure, ratio, same):
    """One ``run_all.py`` row: plcore against the in-repo straightforward version."""
    return {
        "method": "saute",
        "measure": measure + ("" if same else "; OUTPUTS DIFFER"),
        "ratio": float(ratio),
        "goal": "> 1x (speed-up over the in-repo straightforward version)",
        "met": bool(ratio > 1 and same),
        "note": "benchmarks/saute.py, measured in this run (process CPU time, 1 thread)",
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME",
                                                         str(REPO.parent / "shared" / "datasets")))
    p.add_argument("--repeats", type=int, default=3, help="repeats of the fast variants (best time)")
    p.add_argument("--literal", action="store_true",
                   help="also time the literal test reference (about 12 CPU-minutes: ~178k "
                        "mutual_info_score calls at ~3 ms each, H recomputed 39 times)")
    args = p.parse_args(argv)

    ds = load_dataset("semeion", data_home=args.data_home)
    S = UniformBags(r=2, random_state=0).generate(ds.y_true, n_classes=ds.n_classes)
    X = StandardScaler().fit_transform(ds.X)
    m, d = X.shape
    n_select = math.ceil(0.15 * d - 1e-9)

    rows = []
    t_fast, (A_fast, Y_fast) = timed(iteration_plcore, X, S, n_select, repeats=args.repeats)
    rows.append(("plcore (incremental, vectorised)", args.repeats, t_fast))
    t_rec, (A_rec, Y_rec) = timed(iteration_recompute, X, S, n_select, repeats=1)
    assert A_rec == A_fast, (A_rec, A_fast)
    np.testing.assert_allclose(Y_rec, Y_fast, rtol=1e-12)
    rows.append(("recompute every step (vectorised primitives)", 1, t_rec))
    if args.literal:
        t_naive, (A_naive, Y_naive) = timed(iteration_naive, X, S, n_select, repeats=1)
        assert A_naive == A_fast, (A_naive, A_fast)
        np.testing.assert_allclose(Y_naive, Y_fast, rtol=1e-10)
        rows.append(("naive literal reference (tests/saute_reference.py)", 1, t_naive))

    n_big = math.ceil(0.6 * d - 1e-9)
    t_fit, (A_fit, Y_fit, n_iter) = timed(fit_plcore, X, S, n_big, repeats=args.repeats)
    t_unc, (A_unc, Y_unc, _) = timed(fit_uncached, X, S, n_big, repeats=1)
    assert A_unc == A_fit, (A_unc, A_fit)
    np.testing.assert_array_equal(Y_unc, Y_fit)

    print(f"semeion: m={m}, d={d}, q={S.shape[1]}, uniform bags r=2, d'={n_select}; "
          f"numpy {np.__version__}, Python {platform.python_version()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"identical selection order in all variants: {A_fast[:10]}...\n")
    print("| implementation | repeats (best of) | wall s | CPU s | ratio vs plcore (wall) | ratio vs plcore (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, rep, (wall, cpu) in rows:
        print(f"| {name} | {rep} | {wall:.3f} | {cpu:.3f} | {wall / t_fast[0]:.1f}x | {cpu / t_fast[1]:.1f}x |")
    print(f"\nA whole fit at d'={n_big} ({n_iter} outer iterations), identical selection and Y:\n")
    print("| implementation | repeats (best of) | wall s | CPU s | ratio vs plcore (wall) | ratio vs plcore (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, rep, (wall, cpu) in (("plcore (I(., f_j) once per fit)", args.repeats, t_fit),
                                   ("uncached (I(., f_j) anew every iteration)", 1, t_unc)):
        print(f"| {name} | {rep} | {wall:.3f} | {cpu:.3f} | {wall / t_fit[0]:.1f}x | {cpu / t_fit[1]:.1f}x |")


if __name__ == "__main__":
    main()
