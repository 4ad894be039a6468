"""Search distributions written as plain data (``plcore.utils.distributions``): each draw against
its literal formula, the one-line refusals, and ``protocol.select`` with them (declared and from
the command line)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.model_selection import ParameterSampler

from plcore import PlKnnLearner
from plcore.data import PLDataset
from plcore.exceptions import ConfigError, PluginError
from plcore.registry import Component, ComponentSpec, get_registry
from plcore.run.protocols import Setup, kfold
from plcore.testing import make_pl_data
from plcore.utils.distributions import check_distribution, describe, sampler

#: spec -> the literal draw from a RandomState (PLENCH's ``hparams_registry.py`` writes the first two)
LITERAL = [
    ({"log10_uniform": [-4.5, -2.5]}, lambda r: 10 ** r.uniform(-4.5, -2.5)),
    ({"pow2_int": [5, 8]}, lambda r: 2 ** int(r.uniform(5, 8))),
    ({"uniform": [0.1, 0.4]}, lambda r: r.uniform(0.1, 0.4)),
]


@pytest.mark.parametrize("spec, literal", LITERAL)
def test_each_draw_is_the_literal_formula_on_the_same_generator(spec, literal):
    dist, mine, theirs = check_distribution(spec), np.random.RandomState(7), np.random.RandomState(7)
    drawn = [dist.rvs(random_state=mine) for _ in range(500)]
    assert drawn == [literal(theirs) for _ in range(500)]  # exact, value by value
    assert all(dist.contains(v) for v in drawn)


def test_log10_uniform_is_scipy_loguniform_and_pow2_int_is_uniform_on_its_powers():
    """In distribution: 10**U(-4.5, -2.5) is scipy's loguniform(10**-4.5, 10**-2.5) (KS test on
    4000 draws of a fixed seed), and 2**int(U(5, 8)) is 32, 64 or 128 with 1/3 each."""
    rng = np.random.RandomState(0)
    lr = [check_distribution({"log10_uniform": [-4.5, -2.5]}).rvs(random_state=rng) for _ in range(4000)]
    assert stats.kstest(lr, stats.loguniform(10 ** -4.5, 10 ** -2.5).cdf).pvalue > 0.05
    assert stats.kstest(lr, stats.uniform(10 ** -4.5, 10 ** -2.5 - 10 ** -4.5).cdf).pvalue < 1e-6  # not uniform
    batch = [check_distribution({"pow2_int": [5, 8]}).rvs(random_state=rng) for _ in range(3000)]
    values, counts = np.unique(batch, return_counts=True)
    assert values.tolist() == [32, 64, 128]
    assert stats.chisquare(counts).pvalue > 0.05


def test_scikit_learns_random_search_draws_through_rvs():
    """ParameterSampler (RandomizedSearchCV's) passes its generator to ``rvs``: the draws are the
    literal formula on that generator, in sorted key order; a list is drawn from uniformly."""
    space = {"a": sampler({"log10_uniform": [-6, -3]}), "b": sampler([1, 2, 3])}
    got = list(ParameterSampler(space, n_iter=5, random_state=3))
    rng = np.random.RandomState(3)
    want = []
    for _ in range(5):
        rng.choice([space])  # ParameterSampler's pick among a list of spaces
        a = 10 ** rng.uniform(-6, -3)
        want.append({"a": a, "b": [1, 2, 3][rng.randint(3)]})
    assert got == want


@pytest.mark.parametrize("spec, match", [
    ({"loguniform": [-4.5, -2.5]}, r"^\{'loguniform': \[-4.5, -2.5\]\} is not a distribution; write one of "
                                   r"uniform: \[a, b\] = U\(a, b\); log10_uniform"),
    ({"uniform": [1, 2], "pow2_int": [1, 2]}, "is not a distribution"),
    ({"log10_uniform": [-2.5, -4.5]}, r"^log10_uniform needs a < b, got \[-2.5, -4.5\]$"),
    ({"uniform": [1, 1]}, "needs a < b"),
    ({"uniform": [1]}, r"^uniform takes two finite numbers \[a, b\], got \[1\]$"),
    ({"uniform": [0, float("inf")]}, "two finite numbers"),
    ({"uniform": ["a", 1]}, "two finite numbers"),
    ({"uniform": 3}, "two finite numbers"),
    ({"pow2_int": [-1, 3]}, r"^pow2_int needs a >= 0"),
])
def test_bad_specs_are_one_line_errors(spec, match):
    with pytest.raises(ValueError, match=match) as err:
        check_distribution(spec)
    assert "\n" not in str(err.value)


def test_spec_is_plain_data_and_described():
    assert check_distribution({"log10_uniform": [-6, -3]}).spec == {"log10_uniform": [-6, -3]}
    assert check_distribution({"uniform": [0.5, 2]}).spec == {"uniform": [0.5, 2]}
    assert describe({"pow2_int": [5, 8]}) == "2**int(U(5, 8))" and describe([1, 2]) == "{1, 2}"


# ----------------------------------------------------------------------------- in protocol.select
def _dataset():
    X, S, y = make_pl_data(n_samples=90, r=1, n_classes=3, random_state=0)
    return PLDataset(X, S, y)


class Drawn(PlKnnLearner):
    """Registered below with a random space."""


def _register(monkeypatch, **spaces):
    spec = ComponentSpec("learner", "drawn", Drawn, **spaces)
    monkeypatch.setitem(get_registry().components, ("learner", "drawn"), Component(spec, "t", "t", "0"))


def test_method_random_draws_the_declared_distributions_and_grid_keeps_the_grid(monkeypatch):
    _register(monkeypatch, search_space={"k": [3, 5]}, search_distributions={"k": {"pow2_int": [1, 4]}})
    random = kfold(Setup(learner=Drawn()), _dataset(), n_splits=2, refit=False, progress=False,
                   select={"method": "random", "n_iter": 3, "cv": 2})
    assert all(s["selected.learner.k"] in (2, 4, 8) for s in random.steps)
    grid = kfold(Setup(learner=Drawn()), _dataset(), n_splits=2, refit=False, progress=False,
                 select={"method": "grid", "cv": 2})
    assert all(s["selected.learner.k"] in (3, 5) for s in grid.steps)


def test_method_random_without_declared_distributions_samples_the_grid(monkeypatch):
    _register(monkeypatch, search_space={"k": [3, 5]})
    res = kfold(Setup(learner=Drawn()), _dataset(), n_splits=2, refit=False, progress=False,
                select={"method": "random", "n_iter": 2, "cv": 2})
    assert all(s["selected.learner.k"] in (3, 5) for s in res.steps)


@pytest.mark.parametrize("select, match", [
    ({"method": "grid", "space": {"learner.k": {"pow2_int": [1, 4]}}},
     r"^protocol.select.method=grid needs a list of values for learner.k, got the distribution "
     r"\{'pow2_int': \[1, 4\]\}: use method=random, or give a list$"),
    ({"method": "oracle", "space": {"learner.k": {"pow2_int": [1, 4]}}}, "method=oracle needs a list"),
    ({"method": "random", "space": {"learner.k": {"pow2": [1, 4]}}},
     r"^protocol.select.space\['learner.k'\]: \{'pow2': \[1, 4\]\} is not a distribution"),
    ({"method": "random", "space": {"learner.k": {"pow2_int": [4, 1]}}}, "pow2_int needs a < b"),
    ({"method": "random", "space": {"learner.k": 5}}, "must be a non-empty list of values or, for method=random"),
])
def test_bad_spaces_are_one_line_config_errors(select, match):
    with pytest.raises(ConfigError, match=match) as err:
        kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select=select, progress=False)
    assert "\n" not in str(err.value)


def test_a_bad_declared_distribution_fails_the_declaration_in_one_line():
    with pytest.raises(PluginError, match=r"^learner 'drawn': search_distributions\['k'\]: pow2_int needs a < b"):
        ComponentSpec("learner", "drawn", Drawn, search_distributions={"k": {"pow2_int": [4, 1]}})
    with pytest.raises(PluginError, match=r"search_distributions\['k'\]: must be a non-empty list"):
        ComponentSpec("learner", "drawn", Drawn, search_distributions={"k": []})


def test_a_distribution_from_the_command_line_is_drawn_and_logged(tmp_path, plcore_cli):
    """``protocol.select.space={learner.k: {pow2_int: [1, 4]}}`` as a Hydra override: every
    fold's choice is a draw (2, 4 or 8) and the space is logged as given (method=grid's refusal:
    test_bad_spaces_are_one_line_config_errors)."""
    import mlflow

    space = "protocol.select.space={learner.k:{pow2_int:[1,4]}}"
    common = ["dataset=iris", "bags.r=1", "protocol.n_splits=2", "protocol.refit=false", "protocol.select.cv=2",
              space]
    plcore_cli([*common, "protocol.select.method=random", "protocol.select.n_iter=3"], tmp_path)
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    chosen = [m.value for m in client.get_metric_history(run.info.run_id, "selected.learner.k")]
    assert len(chosen) == 2 and set(chosen) <= {2, 4, 8}
    assert run.data.params["protocol.select.space.learner.k.pow2_int.0"] == "1"
    assert run.data.params["protocol.select.space.learner.k.pow2_int.1"] == "4"
