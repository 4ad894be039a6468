"""``benchmarks/field.py``'s estimate of the full tier from the quick tier's runs: fits per outer fold
counted from each method's declared grid, with the values a classic learner fits together
(``path_params``: one fit per point of the rest of the grid) counted once."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from plcore.registry import get_registry

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def field(benchmark_module):
    return benchmark_module("field")


def _run(method, protocol="kfold", **params):
    return SimpleNamespace(name=f"{method} · lost", tags={"protocol": protocol}, params=params)


# quick tier: 3 outer folds x (2 random points x 2 inner folds + the refit) = 15 fits
QUICK = 3 * (2 * 2 + 1)


def _space(kind, name, package):
    """Component ``name``'s declared grid (skips when its plugin is not installed)."""
    reg = get_registry()
    if (kind, name) not in reg.components:
        pytest.skip(f"{package} is not installed")
    return reg.components[(kind, name)].spec.search_space


def _grid_size(kind, name, package):
    """The number of points of component ``name``'s declared grid."""
    return math.prod(len(values) for values in _space(kind, name, package).values())


def test_learner_whose_grid_is_all_path_makes_one_fit_per_inner_fold(field):
    # PL-KNN's k: 4 values fitted together -> 10 outer folds x (1 x 3 inner folds + refit)
    assert field.full_over_quick(_run("plknn"), get_registry()) == pytest.approx(10 * (1 * 3 + 1) / QUICK)


def test_reducer_grid_multiplies_and_the_learners_path_is_shared(field):
    n_cenda = _grid_size("reducer", "cenda", "plcore-cenda")
    assert field.full_over_quick(_run("cenda+plknn"), get_registry()) == pytest.approx(10 * (n_cenda * 3 + 1) / QUICK)


def test_learner_without_path_counts_every_grid_point(field):
    n = _grid_size("learner", "plsvm", "plcore-baselines")
    assert n > 2
    assert field.full_over_quick(_run("plsvm"), get_registry()) == pytest.approx(10 * (n * 3 + 1) / QUICK)


def test_learner_sharing_part_of_its_grid_makes_one_fit_per_point_of_the_rest(field):
    space = _space("learner", "plecoc", "plcore-baselines")
    rest = _grid_size("learner", "plecoc", "plcore-baselines") // len(space["code_length"])   # lengths together
    assert field.full_over_quick(_run("plecoc"), get_registry()) == pytest.approx(10 * (rest * 3 + 1) / QUICK)


def test_deep_learner_counts_each_point_and_the_epochs(field):
    n = _grid_size("learner", "proden", "plcore-deep")
    got = field.full_over_quick(_run("proden", **{"learner.n_epochs": "50"}), get_registry())
    assert got == pytest.approx(4 * 10 * (n * 3 + 1) / QUICK)


# --- the pages: the full tier is the headline (docs/results/field.md), the quick tier the smoke test


def _args(field, quick, out, **kw):
    return SimpleNamespace(quick=quick, parts=list(field.PARTS), datasets=None, out=out, **kw)


@pytest.mark.parametrize("quick, page", [(False, "docs/results/field.md"), (True, "docs/results/field_quick.md")])
def test_each_tier_writes_its_own_page(field, monkeypatch, quick, page):
    seen = {}
    monkeypatch.setattr(field, "write_page", lambda args, *rest: seen.setdefault("out", args.out))
    assert field.main(["--report-only"] + (["--quick"] if quick else [])) == 0
    assert seen["out"] == page == field.PAGES["quick" if quick else "full"]


def test_the_page_command_names_out_only_off_the_tiers_page(field, monkeypatch):
    monkeypatch.chdir(REPO)
    full = field.page_command(_args(field, False, field.PAGES["full"]))
    assert full.endswith("benchmarks/field.py")
    assert field.page_command(_args(field, True, field.PAGES["quick"])).endswith("benchmarks/field.py --quick")
    assert field.page_command(_args(field, False, field.PAGES["quick"])).endswith(
        "benchmarks/field.py --out docs/results/field_quick.md")


def test_a_page_links_the_other_tier_and_never_a_machine_path(field, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    assert field.page_link("quick", field.PAGES["full"]) == "[the quick tier's page](field_quick.md)"
    assert field.page_link("full", field.PAGES["quick"]) == "[the full tier's page](field.md)"
    elsewhere = field.page_link("quick", str(tmp_path / "page.md"))
    assert elsewhere == "the quick tier's page (docs/results/field_quick.md)"
    assert str(tmp_path) not in elsewhere and str(REPO) not in elsewhere
