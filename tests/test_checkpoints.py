"""PLENCH's selection among checkpoints (``plcore.run.checkpoints``): CR, AA, the oracle and the
oracle with early stopping, against a literal loop; the table cell; the benchmark that uses them."""

import numpy as np
import pytest

from plcore.run import checkpoints
from plcore.run.checkpoints import CRITERIA, select_checkpoints


def _literal(curves, ties="earliest"):
    """The selection rule as a plain loop: strict improvement keeps the earliest checkpoint within a
    draw and the first draw across draws (``latest``: within a draw a tie moves to the later one)."""
    out = {}
    for name, col in (("cr", 0), ("aa", 1), ("oracle_es", 2)):
        best = None
        for d, curve in enumerate(curves):
            best_e = 0
            for e in range(len(curve)):
                if curve[e][col] > curve[best_e][col] or (ties == "latest" and curve[e][col] == curve[best_e][col]):
                    best_e = e
            if best is None or curve[best_e][col] > best[2]:
                best = (d, best_e, curve[best_e][col], curve[best_e][3])
        out[name] = best
    best = None
    for d, curve in enumerate(curves):
        if best is None or curve[-1][2] > best[2]:
            best = (d, len(curve) - 1, curve[-1][2], curve[-1][3])
    out["oracle"] = best
    return out


def test_selection_of_a_hand_made_curves_array():
    #            CR    AA    val   test
    curves = [[[0.50, 0.40, 0.30, 0.10],
               [0.90, 0.40, 0.60, 0.20],     # draw 0: CR's best (0.9) first at epoch 1 ...
               [0.90, 0.70, 0.50, 0.30]],    # ... and again at epoch 2: the earliest wins
              [[0.90, 0.70, 0.60, 0.40],     # draw 1 ties draw 0 on CR (0.9) and AA (0.7): the first draw wins
               [0.80, 0.60, 0.80, 0.50],     # the best validation accuracy over all checkpoints
               [0.70, 0.50, 0.55, 0.60]]]    # last epochs: 0.50 (draw 0) < 0.55 (draw 1)
    got = select_checkpoints(np.array(curves))
    assert {k: (c.draw, c.checkpoint, c.value, c.test_accuracy) for k, c in got.items()} == {
        "cr": (0, 1, 0.9, 0.2), "aa": (0, 2, 0.7, 0.3), "oracle_es": (1, 1, 0.8, 0.5), "oracle": (1, 2, 0.55, 0.6)}
    latest = select_checkpoints(curves, ties="latest")
    assert (latest["cr"].draw, latest["cr"].checkpoint) == (0, 2)
    assert set(got) == set(CRITERIA)


def test_selection_matches_the_literal_loop_with_many_ties():
    rng = np.random.RandomState(0)
    for _ in range(300):
        curves = [rng.randint(0, 3, size=(rng.randint(1, 5), 4)) / 2 for _ in range(rng.randint(1, 5))]  # ragged
        for ties in ("earliest", "latest"):
            got = select_checkpoints(curves, ties=ties)
            want = _literal(curves, ties)
            assert {k: (c.draw, c.checkpoint, c.value, c.test_accuracy) for k, c in got.items()} == want


def test_selection_refuses_malformed_records():
    with pytest.raises(ValueError, match="expected"):
        select_checkpoints([np.zeros((2, 3))])
    with pytest.raises(ValueError, match="no draws"):
        select_checkpoints([])
    with pytest.raises(ValueError, match="ties"):
        select_checkpoints([np.zeros((1, 4))], ties="first")


def test_cell_is_plench_format_mean():
    values = [0.78, 0.80, 0.77]
    mean = 100 * np.mean(values)
    err = 100 * np.std(list(values / np.sqrt(3)))    # collect_results.format_mean, restated
    assert checkpoints.cell(values) == f"{mean:.2f} ± {err:.2f}" == "78.33 ± 0.72"
    assert checkpoints.standard_error(values) == pytest.approx(np.std(values) / np.sqrt(3), abs=1e-15)


def test_the_selection_benchmark_uses_this_rule():
    """``benchmarks/deep_selection.py`` names the same choices (its ``oracle`` is ``oracle_es``, its
    ``oracle, last`` the oracle) and formats its cells with :func:`checkpoints.cell`."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "deep_selection.py"
    spec = importlib.util.spec_from_file_location("plcore_bench_deep_selection", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rng = np.random.RandomState(1)
    curves = rng.randint(0, 3, size=(4, 5, 4)) / 2
    got, latest = select_checkpoints(curves), select_checkpoints(curves, ties="latest")
    as_tuple = lambda c: (c.draw, c.checkpoint, c.value, c.test_accuracy)  # noqa: E731
    assert bench.select(curves) == {"CR": as_tuple(got["cr"]), "AA": as_tuple(got["aa"]),
                                    "oracle": as_tuple(got["oracle_es"]), "oracle, last": as_tuple(got["oracle"]),
                                    "CR, latest tie": as_tuple(latest["cr"])}
    assert bench._cell([0.78, 0.80, 0.77]) == "78.33 ± 0.72"
