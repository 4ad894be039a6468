"""``leaderboard page`` (issue 56, items 5 and 7; design note 2.7, 2.8 and tests 6, 8, 9): the page
from run files alone, every score recomputed from the predictions (a tampered file refused), rows
with a final state everywhere ranked with their failed cells imputed as the worst, rows not yet
run shown unranked without touching the ranked table, Nemenyi groups as the CD diagram's bars, the
reference section, superseded revisions, and two machines' merged files rendering the page of a
single run."""

import json

import numpy as np
import pytest

from plcore.leaderboard import iter_runs, load_protocol, merge_trees, write_run
from plcore.leaderboard.jobs import chosen, entries
from plcore.leaderboard.page import _tie_groups, collect, render_markdown, tables
from plcore.leaderboard.runner import run_missing
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry, hookimpl

PROTOCOL = load_protocol("field-smoke/1")
ROWS = ["learner:plknn", "learner:k3", "learner:k9", "learner:wobbly", "learner:truth"]

def _records(*args):
    """``(path, record)`` of the run files under a folder (:func:`iter_runs`), each as the dict it is written as."""
    return [(p, r.to_dict()) for p, r in iter_runs(*args)]



class _FailsOnWine(PlKnnLearner):
    """PL-KNN that fails on data with 13 features (wine)."""

    def fit(self, X, y):
        if X.shape[1] == 13:
            raise MemoryError("needs 40 GB on wine")
        return super().fit(X, y)


class _Truth(PlKnnLearner):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.exact_label_baseline = True
        return tags


class _Plugin:
    @hookimpl
    def plcore_components(self):
        return [ComponentSpec("learner", "k3", PlKnnLearner, config_overrides={"k": 3}, display_name="kNN-3"),
                ComponentSpec("learner", "k9", PlKnnLearner, config_overrides={"k": 9}, display_name="kNN-9"),
                ComponentSpec("learner", "wobbly", _FailsOnWine, config_overrides={"k": 5}, display_name="Wobbly"),
                ComponentSpec("learner", "late", PlKnnLearner, config_overrides={"k": 15}, display_name="Late"),
                ComponentSpec("learner", "truth", _Truth, display_name="Truth")]


@pytest.fixture(scope="module")
def registry():
    reg = Registry()
    reg.register(_Plugin(), name="page-plugin", distribution="plcore-page", version="0.2")
    return reg.load(entry_points=False)


def _run(registry, results, only=ROWS, datasets=None):
    return run_missing(PROTOCOL, chosen(entries(PROTOCOL, registry), only), results, registry=registry,
                       datasets=datasets, echo=lambda line: None)


@pytest.fixture(scope="module")
def results(registry, tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    _run(registry, root)
    return root


def _section(page: str, title: str) -> str:
    """The page's text from the heading ``title`` to the next heading."""
    start = page.index(title)
    end = page.find("\n## ", start + 1)
    return page[start:end if end >= 0 else None]


def test_the_ranked_table_is_the_files_scores_with_failures_imputed_as_the_worst(results):
    board = collect(PROTOCOL, results)
    (t,) = [t for t in tables(board) if t.group == "classic"]
    assert sorted(r.name for r in t.ranked) == ["k3", "k9", "plknn", "wobbly"] and not t.unranked
    c = t.comparison
    by_name = {r.name: r.key for r in t.ranked}
    files = {}
    for _, rec in _records(results):
        files.setdefault((rec["component"]["name"], rec["dataset"]["name"]), []).append(rec)
    for name, key in by_name.items():
        assert c.mean[(key, "iris")] == pytest.approx(np.mean([r["scores"]["accuracy"]
                                                              for r in files[(name, "iris")]]))
    assert {r["status"] for r in files[("wobbly", "wine")]} == {"failed"}
    worst = min(c.mean[(by_name[n], "wine")] for n in ("k3", "k9", "plknn"))
    assert c.mean[(by_name["wobbly"], "wine")] == worst and t.imputed == {(by_name["wobbly"], "wine")}
    page = render_markdown(board, command="page")
    row = next(line for line in page.splitlines() if "| Wobbly |" in line)
    assert "† failed" in row and "| 50% |" in row
    assert "MemoryError: needs 40 GB on wine" in _section(page, "## Failures")
    assert "| Truth |" in _section(page, "## Reference") and "Truth" not in _section(page, "## classification")
    w, tie, loss = t.wtl[by_name["k3"]]
    assert w + tie + loss == 2  # k3 against PL-KNN on the two data sets


def test_a_tampered_score_is_an_invalid_cell_named_in_one_line(results, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    path, rec = next((p, r) for p, r in _records(copy) if r["status"] == "ok")
    rec["scores"]["accuracy"] = min(1.0, rec["scores"]["accuracy"] + 0.1)
    path.write_text(json.dumps(rec))
    board = collect(PROTOCOL, copy)
    (line,) = [f"{p}: {r}" for p, r in board.invalid]
    assert line.startswith(f"{path.relative_to(copy).as_posix()}: the stored accuracy ") and "\n" not in line
    assert "disagrees with its predictions" in line
    (row,) = [r for r in board.rows if r.name == rec["component"]["name"]]
    assert board.state(row, rec["dataset"]["name"]) == "invalid"
    assert (row.key, rec["dataset"]["name"]) not in board.scores or rec["fold"]["index"] not in board.scores[
        (row.key, rec["dataset"]["name"])]  # never a result


def test_a_row_not_yet_run_leaves_the_ranked_table_as_it_was(registry, results, tmp_path):
    import shutil

    before = render_markdown(collect(PROTOCOL, results), command="page")
    grown = tmp_path / "grown"
    shutil.copytree(results, grown)
    _run(registry, grown, only=["learner:late"], datasets=["iris"])
    (late,) = [p for p, r in _records(grown) if r["component"]["name"] == "late" and r["fold"]["index"] == 1]
    late.unlink()  # as if killed after one fold
    after = render_markdown(collect(PROTOCOL, grown), command="page")
    title = "## classification: classic"
    ranked_before = _section(before, title).split("\n\n")[:3]
    assert [part.strip() for part in _section(after, title).split("\n\n")[:3]] == [
        part.strip() for part in ranked_before]  # the table and its Friedman line
    late = next(line for line in after.splitlines() if line.startswith("| Late (`learner:late@r1-"))
    assert "(partial 1/2)" in late and late.endswith("| iris 1/2, wine not run |")


def test_nemenyi_groups_are_the_pairs_within_the_critical_difference():
    from plcore.stats import compare

    rng = np.random.default_rng(3)
    quality = np.linspace(0, 1, 8)
    scores = {(f"m{i}", f"d{j}"): list(quality[i] + rng.normal(0, 0.4, 3)) for i in range(8) for j in range(12)}
    c = compare(scores)
    groups = _tie_groups(c)
    assert len(set("".join(groups.values()))) >= 2  # the data separate some methods
    for i, a in enumerate(c.methods):
        for j, b in enumerate(c.methods):
            together = bool(set(groups[a]) & set(groups[b]))
            assert together == (abs(c.ranks[i] - c.ranks[j]) < c.critical_difference), (a, b)


def test_an_older_revision_is_superseded_and_never_ranked(results, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    for _, rec in _records(copy):
        if rec["component"]["name"] == "k9":
            write_run(copy, {**rec, "component": {**rec["component"], "revision": 0}})
    board = collect(PROTOCOL, copy)
    assert [r.key.split("-")[0] for r in board.superseded] == ["k9@r0"]
    (t,) = [t for t in tables(board) if t.group == "classic"]
    assert "k9@r0" not in {r.key.split("-")[0] for r in t.ranked}
    assert "## Superseded" in render_markdown(board, command="page")


def test_two_machines_files_merged_render_the_page_of_a_single_run(registry, results, tmp_path):
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    _run(registry, a, datasets=["iris"])
    _run(registry, b, datasets=["wine"])
    merge_trees([a, b], merged)
    pages = [render_markdown(collect(PROTOCOL, root), command="page", timings=False) for root in (merged, results)]
    assert pages[0] == pages[1]


def test_a_file_out_of_its_place_or_of_other_folds_is_invalid(results, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    path, rec = next((p, r) for p, r in _records(copy) if r["fold"]["index"] == 0)
    moved = path.with_name("fold-1.json")
    moved.write_text(path.read_text())  # fold 0's file where fold 1's belongs
    (line,) = [f"{p}: {r}" for p, r in collect(PROTOCOL, copy).invalid]
    assert line.startswith(f"{moved.relative_to(copy).as_posix()}: its content places it at ")
    moved.unlink()
    rec["fold"]["test_digest"] = "sha256:" + "0" * 64
    path.write_text(json.dumps(rec))
    (line,) = [f"{p}: {r}" for p, r in collect(PROTOCOL, copy).invalid]
    assert "its fold digest sha256:0000" in line and "is not the protocol's" in line


def test_an_imputed_cell_wins_nothing_against_the_reference(results):
    board = collect(PROTOCOL, results)
    (t,) = [t for t in tables(board) if t.group == "classic"]
    wobbly = next(r.key for r in t.ranked if r.name == "wobbly")
    assert sum(t.wtl[wobbly]) == 1  # iris only: its failed wine cell is not paired with PL-KNN
