"""The leaderboard end to end, as a plugin author and CI use it (issue 56, "Done when"): a plugin
plcore has never heard of (a package with a ``plcore`` entry point, on the path) is listed, run
with ``--only`` on field-smoke/1 and ranked on the page beside the committed results of every
other component, with no file of plcore changed; ``verify`` reproduces the stored predictions;
Hydra's joblib launcher runs rows as jobs; and field-smoke/1 runs for every installed component
(the CI tier), each row ranked."""

import shutil
import textwrap
from pathlib import Path

import pytest

from plcore.leaderboard import iter_runs, load_protocol

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "leaderboard"
PROTOCOL = load_protocol("field-smoke/1")


def _records(*args):
    """``(path, record)`` of the run files under a folder (:func:`iter_runs`), each as the dict it is written as."""
    return [(p, r.to_dict()) for p, r in iter_runs(*args)]


_PLUGIN = '''
"""A third-party plugin: PL-KNN that votes among the 4 nearest neighbours."""
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, hookimpl

@hookimpl
def plcore_components():
    return [ComponentSpec("learner", "knn4", "plcore_knn4.plugin:Knn4", display_name="kNN-4 (third party)",
                          description="PL-KNN with k = 4", config={"k": 4, "metric": "euclidean", "n_jobs": None,
                                                                   "weights": "linear"})]


class Knn4(PlKnnLearner):
    def __init__(self, k=4, metric="euclidean", n_jobs=None, weights="linear"):
        super().__init__(k=k, metric=metric, n_jobs=n_jobs, weights=weights)
'''


def _install_on_path(site: Path) -> None:
    """``plcore_knn4`` with its ``dist-info`` (entry point ``plcore: knn4``) in ``site``, as pip
    would leave it."""
    pkg = site / "plcore_knn4"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(textwrap.dedent(_PLUGIN))
    info = site / "plcore_knn4-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plcore-knn4\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[plcore]\nknn4 = plcore_knn4.plugin\n")


def test_an_unknown_plugin_joins_the_committed_leaderboard_with_no_file_of_plcore_changed(tmp_path, plcore_cli):
    site, results = tmp_path / "site", tmp_path / "results"
    _install_on_path(site)
    shutil.copytree(COMMITTED / "field-smoke-1", results / "field-smoke-1")
    env = {"PYTHONPATH": str(site)}
    listed = plcore_cli(["leaderboard", "list", "--protocol", "field-smoke/1", "--results", str(results)], tmp_path,
                        env_extra=env).stdout
    row = next(line for line in listed.splitlines() if line.startswith("knn4@r1-"))
    assert "plcore-knn4 0.1" in row and row.split()[-2:] == ["not", "run"]
    before = {p: p.read_bytes() for p in results.rglob("*.json")}
    ran = plcore_cli(["leaderboard", "run", "--protocol", "field-smoke/1", "--only", "learner:knn4", "--results",
                      str(results)], tmp_path, env_extra=env).stdout
    assert ran.strip().splitlines()[-1] == f"4 run file(s) written under {results}"
    assert {p: p.read_bytes() for p in before} == before  # the others' files untouched
    page = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", str(results)], tmp_path,
                      env_extra=env).stdout
    classic = page[page.index("## classification: classic"):page.index("## classification: deep")]
    ranked = [line for line in classic.splitlines() if line.startswith("| ") and line[2].isdigit()]
    (mine,) = [line for line in ranked if "kNN-4 (third party)" in line]
    assert "plcore-knn4 0.1" in mine and len(ranked) == 1 + sum(
        1 for line in ranked if "kNN-4" not in line) and len(ranked) >= 15
    assert "Not ranked yet" not in classic


def test_verify_reproduces_the_committed_predictions_of_a_seeded_learner(plcore_cli, tmp_path):
    proc = plcore_cli(["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(COMMITTED),
                       "--only", "learner:plknn", "learner:plsvm", "clusterer:kmeans"], tmp_path)
    lines = proc.stdout.strip().splitlines()
    assert lines[0].endswith("every stored score agrees with its predictions")
    assert lines[-1] == "verified: 6 fold(s) the same, 0 numerically equivalent, 0 differ, 0 row(s) not re-run, 0 invalid file(s)"


def test_hydras_joblib_launcher_runs_the_rows_as_jobs(plcore_cli, tmp_path):
    proc = plcore_cli(["leaderboard", "run", "--protocol", "field-smoke/1", "--results", "out", "--only",
                       "learner:plknn", "clusterer:kmeans", "--launcher", "joblib", "--override",
                       "hydra.launcher.n_jobs=2"], tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "2 row(s) run by Hydra's joblib launcher into out"
    made = {(r["component"]["name"], r["dataset"]["name"], r["fold"]["index"]): r
            for _, r in _records(tmp_path / "out")}
    assert len(made) == 8
    committed = {(r["component"]["name"], r["dataset"]["name"], r["fold"]["index"]): r
                 for _, r in _records(COMMITTED, "field-smoke-1")
                 if r["component"]["name"] in ("plknn", "kmeans")}
    assert {k: r["predictions"]["sha256"] for k, r in made.items()} == \
        {k: r["predictions"]["sha256"] for k, r in committed.items()}


def test_the_smoke_tier_holds_every_installed_component_and_ranks_each():
    """The CI tier: every installed component has its field-smoke/1 files committed, every fold ok,
    every ranked row ranked (no hole). That each of those folds is what this checkout computes is
    ``tests/test_leaderboard_checks.py::test_verify_all_passes_the_committed_smoke_results`` (it
    re-runs every one); ``leaderboard run`` itself is the other tests of this module."""
    from plcore.leaderboard.jobs import entries
    from plcore.leaderboard.page import collect, tables
    from plcore.registry import get_registry

    runs = [r for _, r in _records(COMMITTED, "field-smoke-1")]
    rows = entries(PROTOCOL, get_registry())
    assert {(r.component.kind, r.component.row_key) for _, r in iter_runs(COMMITTED, "field-smoke-1")} == \
        {(e.kind, e.key) for e in rows}
    assert len(runs) == 2 * 2 * len(rows)
    failed = [(r["component"]["name"], r["dataset"]["name"], r["error"]) for r in runs if r["status"] != "ok"]
    assert not failed
    board = collect(PROTOCOL, COMMITTED)
    ranked = {r.key for t in tables(board) for r in t.ranked}
    assert ranked == {e.key for e in rows if e.section == "ranked"}
    assert all(not t.unranked and not t.imputed for t in tables(board))


@pytest.mark.parametrize("tier", ["field-smoke/1", pytest.param("field-quick/1", marks=pytest.mark.data),
                                  pytest.param("field/1", marks=pytest.mark.data),
                                  pytest.param("field/2", marks=pytest.mark.data),
                                  pytest.param("field/3", marks=pytest.mark.data), "vision/1"])
def test_each_committed_page_is_a_fresh_render_of_the_committed_files(tier, request):
    """docs/results/leaderboard*.md and .tex are what ``leaderboard page`` makes of the committed
    run files (the command printed on each page); the quick and full tiers recompute their scores
    on the shared data sets."""
    from plcore.leaderboard.jobs import entries
    from plcore.leaderboard.page import (collect, diagram_files, not_run_lines, page_command, render_latex,
                                         render_markdown)
    from plcore.registry import get_registry

    protocol = load_protocol(tier)
    out = ROOT / "docs" / "results" / PAGES[tier]
    data_home = None if tier in ("field-smoke/1", "vision/1") else request.getfixturevalue("data_home")
    board = collect(protocol, COMMITTED, data_home=data_home)
    unloadable = sorted({why for _, why in board.invalid if "could not be loaded here" in why})
    if unloadable:  # field/1's fashion-mnist comes from Debian's package, which .ci/run installs
        pytest.skip(f"{tier}'s page is rendered where all its data sets load; here: {unloadable[0]}")
    command = page_command(protocol, "leaderboard", out.relative_to(ROOT))
    diagrams = {k: v + ".svg" for k, v in diagram_files(board, out).items()}
    not_run = not_run_lines(board, entries(protocol, get_registry()), COMMITTED, get_registry())
    assert out.read_text() == render_markdown(board, command=command, diagrams=diagrams, not_run=not_run), (
        f"{out.name} is stale: run `{command}`")
    assert out.with_suffix(".tex").read_text() == render_latex(board)
    for name in diagrams.values():
        assert (out.parent / name).is_file()


#: each tier's committed page
PAGES = {"field/3": "leaderboard.md", "field/2": "leaderboard_field2.md", "field/1": "leaderboard_field1.md", "field-quick/1": "leaderboard_quick.md",
         "field-smoke/1": "leaderboard_smoke.md", "vision/1": "leaderboard_vision.md"}
