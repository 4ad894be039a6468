"""Many configurations trained together (plcore_deep._stacked): every learner that stacks gives
each configuration what its own fit gives, to float tolerance; the stacked optimiser is
PyTorch's Adam and SGD with a learning rate and weight decay per model; a nested selection
through the stacked path selects what scikit-learn's search selects."""

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from plcore.metrics import get_scorer
from plcore.run.shared_search import SharedSearchCV, path_keys
from plcore.tags import get_pll_tags
from plcore.testing import make_pl_data
import plcore_deep
from plcore_deep import CcLearner, GaLearner, PicoLearner, PopLearner, ProdenLearner, RcLearner
from plcore_deep._methods import ConfidenceMethod, Method
from plcore_deep._stacked import StackedOptimizer, train_stacked
from plcore_deep.plugin import LEARNER_OPTIONS

_FAST = {"hidden_layer_sizes": (24,), "n_epochs": 12, "batch_size": 32, "device": "cpu", "random_state": 0}
_POINTS = [{"learning_rate": lr, "weight_decay": wd} for lr in (3e-4, 1e-2) for wd in (1e-5, 1e-3)]


def _deep_learners():
    return {name: getattr(plcore_deep, path.split(":")[1]) for name, path in LEARNER_OPTIONS.items()}


def test_a_learner_stacks_exactly_when_its_method_does():
    learners = _deep_learners()
    assert len(learners) == 36
    stacking = sorted(name for name, cls in learners.items() if cls._stacks)
    assert len(stacking) == 17 and "proden" in stacking and "pico" not in stacking and "ga" not in stacking
    for name, cls in learners.items():
        method = cls()._make_method()
        assert cls._stacks == method.stacks, name
        assert get_pll_tags(cls()).path_params == (("learning_rate", "weight_decay") if cls._stacks else ()), name
        if method.stacks:   # its step is loss (and targets): no hook of its own
            base = ConfidenceMethod if isinstance(method, ConfidenceMethod) else Method
            for hook in ("batch_loss", "after_step", "start_epoch", "end_epoch"):
                assert getattr(type(method), hook) is getattr(base, hook), (name, hook)


def _compare(learner, X, S, X_test, points=_POINTS):
    fitted = learner.fit_path(X, S, points)
    assert len(fitted) == len(points)
    for point, got in zip(points, fitted):
        own = type(learner)(**{**learner.get_params(), **point}).fit(X, S)
        assert got.get_params() == own.get_params()
        np.testing.assert_allclose(got.predict_proba(X_test), own.predict_proba(X_test), rtol=0, atol=2e-5,
                                   err_msg=str(point))
        np.testing.assert_allclose(got.confidences_, own.confidences_, rtol=0, atol=2e-5)
        np.testing.assert_allclose(got.loss_curve_, own.loss_curve_, rtol=1e-4, atol=1e-6)
        assert (got.n_epochs_, got.best_epoch_) == (own.n_epochs_, own.best_epoch_)
        np.testing.assert_allclose(got.validation_scores_, own.validation_scores_, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(got.classes_, own.classes_)
    return fitted


@pytest.mark.parametrize("name", sorted(n for n, c in _deep_learners().items() if c._stacks))
def test_every_stacking_learner_fits_each_configuration_as_its_own_fit(name):
    X, S, _ = make_pl_data(n_samples=160, random_state=1)
    learner = _deep_learners()[name](**_FAST)
    fitted = _compare(learner, X[:120], S[:120], X[120:])
    # the configurations learned different networks (the test is not comparing one model with itself)
    assert not np.allclose(fitted[0].predict_proba(X[120:]), fitted[-1].predict_proba(X[120:]), atol=1e-3)


@pytest.mark.parametrize("learner", [
    ProdenLearner(batch_norm=True, early_stopping=True, n_iter_no_change=2, **_FAST),
    RcLearner(optimizer="sgd", lr_schedule="one_cycle", **_FAST),
    CcLearner(lr_schedule="one_cycle", batch_norm=True, **_FAST),
    ProdenLearner(hidden_layer_sizes=(), n_epochs=6, batch_size=33, device="cpu", random_state=3),
], ids=["batch-norm-early-stopping", "sgd-one-cycle", "adam-one-cycle-batch-norm", "linear-odd-batches"])
def test_stacking_follows_each_loop_setting(learner):
    X, S, _ = make_pl_data(n_samples=160, random_state=2)
    fitted = _compare(learner, X[:120], S[:120], X[120:])
    if learner.early_stopping:   # the models stopped at epochs of their own
        assert len({f.n_epochs_ for f in fitted}) > 1 or all(f.n_epochs_ < learner.n_epochs for f in fitted)


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_the_stacked_optimizer_is_pytorchs_with_a_rate_and_decay_per_model(kind):
    torch.manual_seed(0)
    lrs, wds = [1e-3, 3e-2, 0.1], [0.0, 1e-3, 0.5]
    start = {"w": torch.randn(3, 4, 5), "b": torch.randn(3, 5)}
    stacked = {name: t.clone().requires_grad_() for name, t in start.items()}
    schedule = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=1.0) if kind == "adam" else \
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    ours = StackedOptimizer(stacked, lrs, wds, kind, 0.9, schedule)
    alone = [{name: t[k].clone().requires_grad_() for name, t in start.items()} for k in range(3)]
    theirs = [torch.optim.Adam(list(p.values()), lr=lr, weight_decay=wd) if kind == "adam" else
              torch.optim.SGD(list(p.values()), lr=lr, weight_decay=wd, momentum=0.9)
              for p, lr, wd in zip(alone, lrs, wds)]
    for step in range(5):
        grads = {name: torch.randn_like(t) for name, t in start.items()}
        for name, p in stacked.items():
            p.grad = grads[name].clone()
        ours.step()
        for k, (params, opt) in enumerate(zip(alone, theirs)):
            for name, p in params.items():
                p.grad = grads[name][k].clone()
            opt.step()
    for k in range(3):
        for name in start:
            torch.testing.assert_close(stacked[name][k].detach(), alone[k][name].detach(), rtol=1e-6, atol=1e-7)
    assert not torch.allclose(stacked["w"][0], start["w"][0])


def test_fit_path_takes_the_learning_rate_and_weight_decay_only():
    X, S, _ = make_pl_data(n_samples=40, random_state=0)
    with pytest.raises(ValueError, match="learning_rate and weight_decay only, got batch_size"):
        ProdenLearner(**_FAST).fit_path(X, S, [{"batch_size": 16}])
    with pytest.raises(Exception, match="learning_rate"):
        ProdenLearner(**_FAST).fit_path(X, S, [{"learning_rate": -1.0}])
    from plcore_deep._loop import LoopConfig

    with pytest.raises(ValueError, match="does not stack"):
        train_stacked(X, S.astype(float), PopLearner()._make_method(), LoopConfig(), [{}])
    for learner in (GaLearner(), PicoLearner(), PopLearner()):   # one at a time: scikit-learn's search
        assert get_pll_tags(learner).path_params == ()


@pytest.mark.parametrize("scoring", ["covering_rate", "approximated_accuracy"])
def test_the_stacked_search_selects_and_scores_as_grid_search_cv(scoring):
    X, S, _ = make_pl_data(n_samples=150, r=2, n_classes=4, random_state=5, cluster_std=2.5)
    pipe = make_pipeline(StandardScaler(), ProdenLearner(**_FAST))
    space = {"prodenlearner__learning_rate": [3e-4, 3e-3, 3e-2], "prodenlearner__weight_decay": [1e-5, 1e-2]}
    cv = KFold(3, shuffle=True, random_state=0)
    scorer = get_scorer(scoring)
    ref = GridSearchCV(pipe, space, scoring=scorer, cv=cv, error_score="raise").fit(X, S)
    path = path_keys(pipe, space)
    assert sorted(path) == sorted(space)
    ours = SharedSearchCV(pipe, list(ParameterGrid(space)), path, scorer, cv).fit(X, S)
    assert ours.best_params_ == ref.best_params_
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-6)
    assert len(set(np.round(ref.cv_results_["mean_test_score"], 6))) > 1   # the grid's points score differently


def test_a_lenet_stacks_through_vmap():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 90)
    X = rng.rand(90, 144) * 0.3                  # 12 x 12 images, a bright band per class
    for c in range(3):
        X[y == c, c * 40:c * 40 + 30] += 1.0
    S = np.zeros((90, 3), dtype=bool)
    S[np.arange(90), y] = True
    S[rng.rand(90, 3) < 0.3] = True
    learner = CcLearner(network="lenet", n_epochs=3, batch_size=16, device="cpu", random_state=0)
    _compare(learner, X[:60], S[:60], X[60:], points=[{"learning_rate": 1e-3}, {"learning_rate": 1e-2,
                                                                                   "weight_decay": 1e-3}])


def test_stacking_pays_on_a_gpu_and_on_a_cpu_only_below_the_overhead_bound_step():
    from plcore_deep._loop import LoopConfig
    from plcore_deep._stacked import stacking_pays
    from plcore_deep._threads import SMALL_STEP_FLOPS

    lost = LoopConfig(hidden_layer_sizes=(500,), batch_size=128, device=torch.device("cpu"))
    assert stacking_pays(lost, 748, 108, 16)                         # 48 MFLOP a step: overhead
    assert not stacking_pays(lost, 42_000, 784, 10)                  # Fashion-MNIST, 305 MFLOP: arithmetic
    assert stacking_pays(lost, 60, 784, 10)                          # a batch of the 60 rows there are
    on_gpu = LoopConfig(hidden_layer_sizes=(500,), batch_size=128, device=torch.device("meta"))
    assert stacking_pays(on_gpu, 42_000, 784, 10)
    assert 6 * (784 * 500 + 500 * 10) * 128 > SMALL_STEP_FLOPS > 6 * (108 * 500 + 500 * 16) * 128


def test_where_stacking_does_not_pay_fit_path_fits_each_point_alone(monkeypatch):
    from plcore_deep import _stacked

    def refuse(*args, **kwargs):
        raise AssertionError("stacked although a step is arithmetic")

    monkeypatch.setattr(_stacked, "train_stacked", refuse)
    X, S, _ = make_pl_data(n_samples=120, n_features=900, random_state=3)
    learner = ProdenLearner(**{**_FAST, "hidden_layer_sizes": (600,), "n_epochs": 2, "batch_size": 128})
    fitted = learner.fit_path(X[:100], S[:100], _POINTS)
    for point, got in zip(_POINTS, fitted):
        own = ProdenLearner(**{**learner.get_params(), **point}).fit(X[:100], S[:100])
        assert got.get_params() == own.get_params()
        np.testing.assert_array_equal(got.predict_proba(X[100:]), own.predict_proba(X[100:]))
