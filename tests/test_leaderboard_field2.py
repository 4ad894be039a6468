"""field/2, the headline leaderboard, and vision/1 (issue 62): many tasks, few folds, the deep rows
at one budget without selection; the tests beyond Nemenyi (Wilcoxon-Holm against the best row,
bootstrap intervals of average ranks); verify's three verdicts and the thread counts a run file
records; the cost estimate of a row that has never run."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from plcore.leaderboard import load_protocol
from plcore.leaderboard.protocol import DeepBudget
from plcore.leaderboard.jobs import Entry, entries, estimate_missing, fits_per_fold
from plcore.leaderboard.runfile import iter_runs
from plcore.leaderboard.verify import ALIKE, recorded_threads, verdict
from plcore.registry import get_registry
from plcore.stats import against_best, average_ranks, rank_intervals

FIELD2 = load_protocol("field/2")
VISION = load_protocol("vision/1")

def _records(*args):
    """``(path, record)`` of the run files under a folder (:func:`iter_runs`), each as the dict it is written as."""
    return [(p, r.to_dict()) for p, r in iter_runs(*args)]



def test_field2_has_many_tasks_every_real_set_and_each_exact_label_set_with_two_generators():
    names = FIELD2.track_datasets("classification")
    assert len(names) >= 20
    native = [n for n, d in FIELD2.datasets.items() if d["candidates"] == "native"]
    assert native == ["lost", "msrc-v2", "fg-net"]
    generated = {d["data"]: [] for d in FIELD2.datasets.values() if "data" in d}
    for d in FIELD2.datasets.values():
        if "data" in d:
            generated[d["data"]].append(d["candidates"]["generator"])
    assert set(generated) >= {"ecoli", "satimage", "semeion", "first-order-theorem", "flare", "glass", "segment",
                              "digits"}
    assert all(sorted(g) == ["instance_dependent", "uniform"] for g in generated.values())
    spec = FIELD2.track("classification")
    assert spec.n_splits == 3 and spec.deep == DeepBudget(n_epochs=50, select={"method": "none"})
    assert all(len(d["splits"]["classification"]) == 3 for d in FIELD2.datasets.values())
    assert "fashion-mnist" not in {d.get("data", n) for n, d in FIELD2.datasets.items()}


def test_vision_takes_only_the_deep_rows_and_fashion_mnist():
    rows = entries(VISION, get_registry())
    assert rows and {e.group for e in rows} == {"deep"}
    assert {d["data"] for d in VISION.datasets.values()} == {"fashion-mnist"}
    assert VISION.data["requires"] == "gpu"


def test_vision_runs_nothing_on_a_machine_without_a_gpu(plcore_cli, tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = plcore_cli(["leaderboard", "run", "--protocol", "vision/1", "--results", "out"], tmp_path, check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "meant for a machine with a GPU" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_deep_row_makes_one_fit_per_fold_at_the_stated_epochs():
    from plcore.leaderboard.jobs import component_setup as _setup

    registry = get_registry()
    (proden,) = [e for e in entries(FIELD2, registry) if e.name == "proden"]
    (plknn,) = [e for e in entries(FIELD2, registry) if e.name == "plknn"]
    setup, select = _setup(FIELD2, proden, registry)
    assert setup.learner.n_epochs == 50 and select["method"] == "none"
    default_epochs = registry.create("learner", "proden").get_params()["n_epochs"]
    assert fits_per_fold(FIELD2.track("classification"), proden, registry) == 50 / default_epochs
    _, classic = _setup(FIELD2, plknn, registry)
    assert classic["method"] == "random" and classic["n_iter"] == 3 and classic["cv"] == 2


def _holm(p):
    """Holm's step-down adjustment written out: sorted ascending, times (m - i), running maximum."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (len(p) - i) * p[j]))
        adjusted[j] = running
    return adjusted


def test_against_best_is_wilcoxon_against_the_best_ranked_row_with_holms_adjustment():
    rng = np.random.default_rng(3)
    methods, datasets = [f"m{i}" for i in range(5)], [f"d{j}" for j in range(20)]
    means = {(m, d): 0.6 + 0.03 * i + rng.normal(0, 0.04) for i, m in enumerate(methods) for d in datasets}
    got = against_best(means, methods, datasets)
    ranks = average_ranks(means, methods, datasets)
    assert got["best"] == methods[int(np.argmin(ranks))]
    others = [m for m in methods if m != got["best"]]
    best = np.array([means[(got["best"], d)] for d in datasets])
    raw = [stats.wilcoxon(best, [means[(m, d)] for d in datasets]).pvalue for m in others]
    for m, p, adj in zip(others, raw, _holm(raw)):
        p_got, adj_got, significant, wins, losses = got["tests"][m]
        assert p_got == pytest.approx(p) and adj_got == pytest.approx(adj) and significant == (adj <= 0.05)
        diff = best - np.array([means[(m, d)] for d in datasets])
        assert (wins, losses) == (int(np.sum(diff > 0)), int(np.sum(diff < 0)))
    # the worst row, 0.12 below the best on average over 20 data sets, is beaten; rows of equal scores are not
    assert got["tests"]["m0"][2]
    tied = {(m, d): 0.5 for m in methods for d in datasets}
    assert all(not t[2] and t[1] == 1.0 for t in against_best(tied, methods, datasets)["tests"].values())


def test_rank_intervals_hold_the_average_rank_and_collapse_when_every_task_agrees():
    methods, datasets = ["a", "b", "c"], [f"d{j}" for j in range(12)]
    agree = {(m, d): s for m, s in zip(methods, (0.9, 0.8, 0.7)) for d in datasets}
    assert rank_intervals(agree, methods, datasets) == {"a": (1.0, 1.0), "b": (2.0, 2.0), "c": (3.0, 3.0)}
    rng = np.random.default_rng(0)
    noisy = {(m, d): rng.random() for m in methods for d in datasets}
    ranks = dict(zip(methods, average_ranks(noisy, methods, datasets)))
    for m, (low, high) in rank_intervals(noisy, methods, datasets).items():
        assert 1.0 <= low <= ranks[m] <= high <= 3.0 and high > low


def test_verdict_same_equivalent_differs():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 600)
    assert verdict(y, y.copy(), 0.7, 0.7) == "same"
    near = y.copy()
    near[:6] = (near[:6] + 1) % 5  # 1% of the rows, the score within one standard error
    se = math.sqrt(0.7 * 0.3 / 600)
    assert verdict(y, near, 0.7, 0.7 + 0.5 * se) == "equivalent"
    assert verdict(y, near, 0.7, 0.7 + 2 * se) == "differs"  # the score moved too far
    far = y.copy()
    far[: int(600 * (1 - ALIKE)) + 6] = (far[: int(600 * (1 - ALIKE)) + 6] + 1) % 5  # more than 3% changed
    assert verdict(y, far, 0.7, 0.7) == "differs"
    assert verdict(y, y[:-1], 0.7, 0.7) == "differs"


def test_a_run_file_records_its_numerics_and_verify_reads_the_thread_counts(tmp_path):
    from plcore.leaderboard.runner import fold_record
    from plcore.leaderboard.protocol import checked_data

    smoke = load_protocol("field-smoke/1")
    registry = get_registry()
    (plknn,) = [e for e in entries(smoke, registry) if e.name == "plknn"]
    data, splits = checked_data(smoke, "iris")
    rec = fold_record(smoke, plknn, "iris", 0, registry=registry, data=data, splits=splits["classification"])
    libs = rec.numerics["libraries"]
    assert libs and all({"api", "version", "threads"} <= set(lib) for lib in libs)
    assert "environment" in rec.numerics
    counts = recorded_threads({"numerics": {"libraries": [{"api": "openblas", "threads": 1, "version": "0.3"},
                                                          {"api": "openmp", "threads": 2, "version": None}],
                                            "torch": {"threads": 3, "version": "2", "cuda": None}}})
    assert counts == {"blas": 1, "openmp": 2, "torch": 3}


def test_a_row_that_never_ran_is_estimated_from_its_groups_measured_rows(plcore_cli, tmp_path):
    """A new classic row (no run file anywhere) costs its group's median seconds per training row
    and fit times its own fits and rows; a measured row is scaled from its own folds."""
    plcore_cli(["leaderboard", "run", "--protocol", "field-smoke/1", "--results", "out", "--only", "learner:plknn"],
               tmp_path)
    smoke, registry = load_protocol("field-smoke/1"), get_registry()
    (plknn,) = [e for e in entries(smoke, registry) if e.name == "plknn"]
    new = Entry("learner", "brand_new", "Brand new", "classification", "ranked", 1, "sha256:" + "0" * 64,
                "plcore-new", "0.1", ["brand_new"], {}, "classic")
    fresh = estimate_missing(smoke, [new], {}, tmp_path / "out", registry)
    assert fresh.group == 2 and fresh.row == fresh.same == fresh.unknown == 0 and fresh.seconds > 0
    (deep,) = [e for e in entries(smoke, registry) if e.name == "proden"]
    nothing = estimate_missing(smoke, [deep], {}, tmp_path / "out", registry)
    assert nothing.unknown == 2 and nothing.seconds == 0  # no deep row measured: counted, not guessed
    quick = load_protocol("field-quick/1")
    scaled = estimate_missing(quick, [plknn], {}, tmp_path / "out", registry)
    assert scaled.row == len(quick.track_datasets("classification")) and scaled.seconds > 0
    rate = np.median([r["timing"]["wall_s"] / (fits_per_fold(smoke.track("classification"), plknn, registry)
                                               * smoke.datasets[r["dataset"]["name"]]["n_samples"] / 2)
                      for _, r in _records(tmp_path / "out")])
    want = sum(3 * rate * fits_per_fold(quick.track("classification"), plknn, registry)
               * quick.datasets[d]["n_samples"] * 2 / 3 for d in quick.track_datasets("classification"))
    assert scaled.seconds == pytest.approx(want)


def test_the_page_names_the_rows_the_best_one_beats_and_compares_it_with_the_median_row():
    """The committed smoke results: the page's lines beyond Nemenyi are what :func:`against_best`
    computes from the table's means, the beaten rows named, the median row the middle place."""
    from plcore.leaderboard.page import collect, render_markdown, tables
    from plcore.stats import ranked_methods

    board = collect(load_protocol("field-smoke/1"), Path(__file__).resolve().parents[1] / "leaderboard")
    text = render_markdown(board, command="cmd")
    by_key = {r.key: r for r in board.rows}
    for t in tables(board):
        if t.comparison is None:
            continue
        want = against_best(t.comparison.mean, t.comparison.methods, t.comparison.datasets)
        assert t.versus_best == want
        order = ranked_methods(t.comparison)
        assert t.median_row == order[len(order) // 2]
        beaten = [k for k in order if k in want["tests"] and want["tests"][k][2]]
        assert f"the best row, {by_key[want['best']].label}, against each other row" in text
        assert f"significantly better than {len(beaten)} of the {len(order) - 1} other rows" in text
        p_holm = want["tests"][t.median_row][1]
        assert f"Best against the median row ({by_key[t.median_row].label})" in text and f"Holm p = {p_holm:.3g}" in text
        assert set(t.intervals) == set(t.comparison.methods)
