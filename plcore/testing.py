"""Public conformance suite: checks every plcore component must pass.

Use it from a plugin's tests in a few lines::

    from plcore.testing import parametrize_with_checks

    @parametrize_with_checks([MyLearner(k=3), MyReducer()])
    def test_conformance(estimator, check):
        check(estimator)

Checks are chosen by the component's kind (``BaseLearner``, ``BaseReducer``,
``BaseClusterer``, ``BaseBagGenerator``):

* scikit-learn's own estimator checks (learners, reducers, clusterers): a learner
  fitted with 1-D labels is an ordinary classifier;
* partial-label checks: the candidate matrix is accepted dense and sparse with the same
  result; predictions lie in ``classes_`` (a candidate DataFrame's columns name them);
  ``confidences_`` rows lie on the candidates and sum to 1; reducers keep rows (and their order) and compose in
  ``make_pipeline(reducer, learner)``; the same ``random_state`` gives the same output;
  ``clone`` and pickle keep behaviour; bad input raises ``ValueError``; a learner learns
  on easy, well-separated data.

``check_component(estimator)`` runs every check at once and raises the first failure.
Known failures are declared with ``expected_failed_checks={"check_name": "reason"}``
(they become ``xfail`` marks, as in scikit-learn).

``parametrize_with_registry()`` is the common test (as imbalanced-learn's
``test_common.py``): every installed component, core or plugin, discovered through the
registry, at its ``ComponentSpec.test_params``.
"""

from __future__ import annotations

import pickle
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.pipeline import make_pipeline

from plcore.base import BaseBagGenerator, BaseClusterer, BaseLearner, BaseReducer
from plcore.tags import PLLTags, get_pll_tags

__all__ = [
    "parametrize_with_checks",
    "parametrize_with_registry",
    "registered_instances",
    "yield_pll_checks",
    "all_checks",
    "check_component",
    "make_pl_data",
]


# ----------------------------------------------------------------------------- data
def make_pl_data(n_samples=90, n_features=4, n_classes=3, r=1, random_state=0, cluster_std=0.6):
    """Small well-separated blobs with uniform bags of ``r`` false positives.

    Returns ``X, S, y`` (S boolean (n, q), y the true labels).
    """
    rng = np.random.RandomState(random_state)
    centers = rng.uniform(-10, 10, size=(n_classes, n_features))
    X, y = make_blobs(n_samples=n_samples, centers=centers, cluster_std=cluster_std,
                      random_state=random_state)
    S = np.zeros((n_samples, n_classes), dtype=bool)
    S[np.arange(n_samples), y] = True
    for i in range(n_samples):
        others = np.setdiff1d(np.arange(n_classes), [y[i]])
        S[i, rng.choice(others, size=r, replace=False)] = True
    return X, S, y


def _set_seed(estimator, seed=0):
    est = clone(estimator)
    if "random_state" in est.get_params():
        est.set_params(random_state=seed)
    return est


def _output(estimator, X):
    """What an estimator 'does' after fit, for comparisons."""
    if isinstance(estimator, BaseLearner):
        return np.asarray(estimator.predict(X))
    if isinstance(estimator, BaseReducer):
        return np.asarray(estimator.transform(X))
    if isinstance(estimator, BaseClusterer):
        return np.asarray(estimator.labels_)
    raise TypeError(type(estimator))


def _fit(estimator, X, S):
    if isinstance(estimator, BaseClusterer):
        # rows 0,3,6,... keep their candidate sets, the rest are unlabelled (all ones)
        was_sparse, dtype = sp.issparse(S), S.dtype
        S = np.array(S.toarray() if was_sparse else S, dtype=bool, copy=True)
        S[np.arange(S.shape[0]) % 3 != 0] = True
        S = sp.csr_matrix(S.astype(dtype)) if was_sparse else S.astype(dtype)
    return estimator.fit(X, S)


def _assert_close(a, b, msg):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{msg}: shapes differ {a.shape} vs {b.shape}"
    if np.issubdtype(a.dtype, np.floating):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, err_msg=msg)
    else:
        assert np.array_equal(a, b), f"{msg}: outputs differ"


# ----------------------------------------------------------------------------- checks
def check_candidate_matrix_dense_and_sparse(name, estimator):
    """Dense bool, dense int and scipy sparse candidate matrices give the same result."""
    X, S, _ = make_pl_data()
    outs = []
    for S_form in (S, S.astype(np.int64), sp.csr_matrix(S.astype(np.float64))):
        est = _fit(_set_seed(estimator), X, S_form)
        outs.append(_output(est, X))
    _assert_close(outs[0], outs[1], f"{name}: dense int and dense bool candidate matrices differ")
    _assert_close(outs[0], outs[2], f"{name}: sparse and dense candidate matrices differ")


def check_predictions_in_classes(name, estimator):
    """Predictions come from ``classes_``, also for string labels and candidate matrices; a
    candidate DataFrame's columns are the classes (in their order), so ``predict`` returns them."""
    import pandas as pd

    X, S, y = make_pl_data()
    est = _set_seed(estimator).fit(X, S)
    assert np.array_equal(est.classes_, np.arange(S.shape[1])), (
        f"{name}: classes_ must be arange(q) for a candidate matrix, got {est.classes_}")
    pred = est.predict(X)
    assert pred.shape == (X.shape[0],), f"{name}: predict must return shape (n,), got {pred.shape}"
    assert np.isin(pred, est.classes_).all(), f"{name}: predictions outside classes_"
    names = np.array(["c", "a", "b"])
    named = _set_seed(estimator).fit(X, pd.DataFrame(S, columns=names))
    assert list(named.classes_) == list(names), (
        f"{name}: classes_ must be a candidate DataFrame's columns {list(names)}, got {list(named.classes_)}")
    assert np.array_equal(named.predict(X), names[pred]), (
        f"{name}: with a candidate DataFrame, predict must return its column names for the same predictions")
    labels = np.array(["c", "a", "b"])[y]
    est = _set_seed(estimator).fit(X, labels)
    assert list(est.classes_) == ["a", "b", "c"], f"{name}: classes_ must be the sorted labels"
    assert np.isin(est.predict(X), est.classes_).all(), f"{name}: string predictions outside classes_"


def check_scores_shape(name, estimator):
    """``predict_proba`` rows are distributions; scores have one column per class."""
    X, S, _ = make_pl_data()
    est = _set_seed(estimator).fit(X, S)
    q = S.shape[1]
    if hasattr(est, "predict_proba"):
        P = est.predict_proba(X)
        assert P.shape == (X.shape[0], q), f"{name}: predict_proba shape {P.shape} != {(X.shape[0], q)}"
        assert np.all(P >= -1e-12), f"{name}: negative probabilities"
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-8,
                                   err_msg=f"{name}: predict_proba rows must sum to 1")
        assert np.array_equal(est.classes_[np.argmax(P, axis=1)], est.predict(X)), (
            f"{name}: predict must equal the argmax of predict_proba")
    if hasattr(est, "decision_function"):
        D = np.asarray(est.decision_function(X))
        assert D.shape[0] == X.shape[0], f"{name}: decision_function has {D.shape[0]} rows"


def check_confidences(name, estimator):
    """``confidences_``: shape (n, q), non-negative, zero off the candidates, rows sum to 1."""
    X, S, _ = make_pl_data(r=2, n_classes=4)
    est = _fit(_set_seed(estimator), X, S)
    conf = getattr(est, "confidences_", None)
    if conf is None:
        assert not isinstance(est, BaseReducer), f"{name}: reducers must set confidences_"
        return
    conf = conf.toarray() if sp.issparse(conf) else np.asarray(conf, dtype=float)
    assert conf.shape == S.shape, f"{name}: confidences_ shape {conf.shape} != {S.shape}"
    assert np.all(np.isfinite(conf)), f"{name}: confidences_ has NaN/inf"
    assert np.all(conf >= -1e-12), f"{name}: negative confidences_"
    off = np.abs(conf[~S]).max(initial=0.0)
    assert off <= 1e-10, f"{name}: confidences_ put mass {off:g} outside the candidate sets"
    np.testing.assert_allclose(conf.sum(axis=1), 1.0, atol=1e-8,
                               err_msg=f"{name}: confidences_ rows must sum to 1")


def check_learns_on_separable_data(name, estimator):
    """On well-separated blobs with one false positive per bag, test accuracy >= 0.8."""
    X, S, y = make_pl_data(n_samples=150, n_classes=3, r=1, random_state=1)
    est = _set_seed(estimator).fit(X[:100], S[:100])
    acc = float(np.mean(est.predict(X[100:]) == y[100:]))
    chance = 1.0 / S.shape[1]
    assert acc >= 0.8, f"{name}: accuracy {acc:.2f} on easy separable data (chance {chance:.2f})"


def check_partial_fit_stream(name, estimator):
    """Online learners (tag ``online``): chunked ``partial_fit`` == one call; a registered
    prequential kernel == the protocol's per-example ``predict`` + ``partial_fit`` loop."""
    if not get_pll_tags(estimator).online:
        return
    from plcore.run.protocols import prequential
    from plcore.registry import get_registry

    assert hasattr(estimator, "partial_fit"), f"{name}: tagged online but has no partial_fit"
    X, S, _ = make_pl_data(n_samples=40)
    classes = np.arange(S.shape[1])
    one = _set_seed(estimator).partial_fit(X, S, classes=classes)
    chunked = _set_seed(estimator).partial_fit(X[:13], S[:13], classes=classes)
    chunked.partial_fit(X[13:], S[13:])
    _assert_close(chunked.predict(X), one.predict(X), f"{name}: chunked partial_fit differs from one call")
    kernel = get_registry().prequential_kernel(estimator)
    if kernel is not None:
        fast_est, slow_est = _set_seed(estimator), _set_seed(estimator)
        fast = prequential(fast_est, X, S, classes, kernel)
        slow = prequential(slow_est, X, S, classes)
        _assert_close(fast, slow, f"{name}: the registered prequential kernel differs from predict + partial_fit")
        _assert_close(fast_est.predict(X), slow_est.predict(X),
                      f"{name}: the model left by the prequential kernel differs from the per-example loop's")


def check_epoch_checkpoints(name, estimator):
    """Learners tagged ``epoch_checkpoints``: ``fit(X, S, on_epoch=f)`` calls ``f(epoch, learner)``
    after every epoch, ``epoch`` 0, 1, ... in order, ``predict`` answering with that epoch's model;
    the fitted model is the last epoch's (what ``protocol=plench`` relies on)."""
    if not get_pll_tags(estimator).epoch_checkpoints:
        return
    X, S, _ = make_pl_data(n_samples=40)
    seen = []
    est = _set_seed(estimator)
    if "n_epochs" in est.get_params(deep=False):   # a few epochs show the contract
        est.set_params(n_epochs=min(int(est.get_params(deep=False)["n_epochs"]), 3))
    est.fit(X, S, on_epoch=lambda epoch, learner: seen.append((epoch, learner.predict(X))))
    assert seen, f"{name}: tagged epoch_checkpoints but fit(X, S, on_epoch=...) never called on_epoch"
    assert [e for e, _ in seen] == list(range(len(seen))), (
        f"{name}: on_epoch must see the epochs 0, 1, ... in order, got {[e for e, _ in seen]}")
    _assert_close(seen[-1][1], est.predict(X), f"{name}: the fitted model is not the last epoch's checkpoint")


def check_fit_path(name, estimator):
    """Learners tagged ``path_params``: ``fit_path(X, S, points)`` returns one fitted learner per
    point, each with the point's parameters and predicting as its own fit does (what the shared
    search, :mod:`plcore.run.shared_search`, relies on to select as scikit-learn's search does)."""
    params = get_pll_tags(estimator).path_params
    if not params:
        return
    assert hasattr(estimator, "fit_path"), f"{name}: tagged path_params {params} but has no fit_path"
    from sklearn.model_selection import ParameterGrid

    space = {}
    for param in params:
        declared = estimator.get_params(deep=False)[param]
        values = [v for v in _PATH_VALUES.get(param, []) if v != declared]
        space[param] = [declared] + values[:2]
    points = list(ParameterGrid(space))
    X, S, _ = make_pl_data(n_samples=60, random_state=3)
    fitted = _set_seed(estimator).fit_path(X[:40], S[:40], points)
    assert len(fitted) == len(points), f"{name}: fit_path returned {len(fitted)} learners for {len(points)} points"
    for point, learner in zip(points, fitted):
        own = _set_seed(estimator).set_params(**point).fit(X[:40], S[:40])
        assert learner.get_params() == own.get_params(), f"{name}: fit_path's learner for {point} has other parameters"
        _assert_close(learner.predict(X[40:]), own.predict(X[40:]), f"{name}: fit_path's learner for {point} "
                      "predicts otherwise than its own fit")


#: values the fit_path check tries, beside the declared one
_PATH_VALUES = {"k": [1, 3, 7], "weights": ["linear", "uniform"], "k_max": [5, 12], "c": [0.25, 1.0],
                "delta": [0.1, 0.5], "alpha": [0.5, 0.8], "max_iter": [5, 20],
                "learning_rate": [3e-3, 3e-2], "weight_decay": [1e-4, 1e-3], "code_length": [4, 12]}


def check_parameter_constraints(name, estimator):
    """Every constructor parameter is declared in ``_parameter_constraints`` and the
    estimator's own parameters satisfy them (one validation mechanism)."""
    from plcore.validation import validate_params

    constraints = getattr(type(estimator), "_parameter_constraints", None)
    assert isinstance(constraints, dict), f"{name}: declare _parameter_constraints (plcore.validation)"
    params = estimator.get_params(deep=False)
    missing = sorted(set(params) - set(constraints))
    assert not missing, f"{name}: parameters without constraints: {', '.join(missing)}"
    unknown = sorted(set(constraints) - set(params))
    assert not unknown, f"{name}: constraints for unknown parameters: {', '.join(unknown)}"
    validate_params(estimator)


def check_param_validation(name, estimator):
    """A bad type for any constrained parameter gives scikit-learn's informative error
    (``The 'p' parameter of Est must be ... Got ... instead.``) from ``fit`` / ``partial_fit`` /
    ``fit_predict`` / ``generate``: the constraints are really checked, not only declared."""
    import re

    from sklearn.base import clone as _clone
    from sklearn.utils.estimator_checks import check_param_validation as sklearn_check

    from plcore.exceptions import InvalidParameterError

    if not isinstance(estimator, BaseBagGenerator):
        sklearn_check(name, estimator)
        return
    y = np.arange(20) % 3
    bad = type("BadType", (), {})()
    for param, constraints in type(estimator)._parameter_constraints.items():
        if constraints == "no_validation":
            continue
        gen = _clone(estimator).set_params(**{param: bad})
        try:
            gen.generate(y, np.zeros((20, 2)))
        except InvalidParameterError as err:
            assert re.search(rf"The '{param}' parameter of {name} must be .* Got .* instead", str(err)), (
                f"{name}: uninformative message for {param}: {err}")
        else:
            raise AssertionError(f"{name}: generate accepted a bad type for {param}")


def check_search_space(name, estimator):
    """A declared nested-selection grid (``ComponentSpec.search_space``) and random space
    (``search_distributions``) name constructor parameters with values their constraints accept
    (a distribution: 20 seeded draws), and ``protocol.select.method=random`` searches them
    (learners and reducers: every fold's ``selected.<kind>.<param>`` is a value of the space)."""
    from plcore.data import PLDataset
    from plcore.learners import PlKnnLearner
    from plcore.run.protocols import Setup, kfold
    from plcore.registry import get_registry
    from plcore.utils.distributions import sampler
    from plcore.validation import validate_params

    comp = get_registry().component_of(estimator)
    if comp is None or not (comp.spec.search_space or comp.spec.search_distributions):
        return
    params = estimator.get_params(deep=False)
    for field, declared in (("search_space", comp.spec.search_space),
                            ("search_distributions", comp.spec.search_distributions)):
        for key, values in (declared or {}).items():
            assert key in params, f"{name}: {field} names {key!r}, which is not a constructor parameter"
            if field == "search_space":
                assert isinstance(values, (list, tuple)) and values, (
                    f"{name}: search_space[{key!r}] must be a non-empty list")
            dist = sampler(values)
            rng = np.random.RandomState(0)
            for value in (dist if isinstance(dist, list) else [dist.rvs(random_state=rng) for _ in range(20)]):
                validate_params(clone(estimator).set_params(**{key: value}))
    space = {k: sampler(v) for k, v in (comp.spec.search_distributions or comp.spec.search_space).items()}
    if get_pll_tags(estimator).exact_label_baseline or not isinstance(estimator, (BaseLearner, BaseReducer)):
        return
    kind = "learner" if isinstance(estimator, BaseLearner) else "reducer"
    setup = (Setup(learner=_set_seed(estimator)) if kind == "learner"
             else Setup(reducer=_set_seed(estimator), learner=PlKnnLearner(k=3)))
    X, S, y = make_pl_data(n_samples=90, n_classes=3, r=1)
    res = kfold(setup, PLDataset(X, S, y), n_splits=2, select={"method": "random", "n_iter": 2, "cv": 2},
                refit=False, progress=False)
    for step in res.steps:
        for key, values in space.items():
            value = step[f"selected.{kind}.{key}"]
            inside = value in values if isinstance(values, list) else values.contains(value)
            assert inside, f"{name}: selected {key}={value!r} outside the declared space"


def check_declared_config(name, estimator):
    """The config node the component declares (``ComponentSpec.config``, composed without
    importing the class) names the class in ``_target_`` and equals its constructor's
    parameters **value by value**; a value the Hydra config sets differently on purpose is
    declared in ``ComponentSpec.config_overrides`` (e.g. ``bags=uniform`` composes ``r: 3``),
    must be a constructor parameter and must really differ. The composed node instantiates to
    a valid estimator."""
    from hydra.utils import get_class, instantiate
    from omegaconf import OmegaConf

    from plcore.registry import get_registry
    from plcore.validation import validate_params

    comp = get_registry().component_of(estimator)
    if comp is None or comp.kind == "preprocessor":
        return
    cls = type(estimator)
    spec = comp.spec
    defaults = OmegaConf.to_container(OmegaConf.create(cls().get_params(deep=False)))
    if spec.config is not None:  # declared statically (composing imports nothing): checked value by value
        declared = OmegaConf.to_container(OmegaConf.create(spec.config))
        target = declared.pop("_target_", spec.target)
        assert get_class(target) is cls, (
            f"{name}: declared _target_ {target!r} does not name {cls.__module__}.{cls.__qualname__}")
        differ = {k: (declared.get(k, "<missing>"), defaults.get(k, "<not a parameter>"))
                  for k in sorted(set(declared) | set(defaults)) if declared.get(k, ...) != defaults.get(k, ...)}
        assert not differ, (
            f"{name}: the declared config of {comp.kind} {comp.name!r} differs from the constructor's defaults "
            f"{differ} (declared, constructor); declare config={defaults!r} and put deliberate differences in "
            "config_overrides")
    overrides = OmegaConf.to_container(OmegaConf.create(spec.config_overrides))
    for key, value in overrides.items():
        assert key in defaults, f"{name}: config_overrides names {key!r}, which is not a constructor parameter"
        assert value != defaults[key], (
            f"{name}: config_overrides sets {key}={value!r}, the constructor's default already: remove it")
    validate_params(instantiate(comp.config(), _convert_="all"))


def check_pll_tags(name, estimator):
    """``__sklearn_tags__`` carries the partial-label tags (:class:`plcore.tags.PLLTags`) and
    the tags agree with the kind."""
    from sklearn.utils import get_tags

    tags = get_tags(estimator)
    assert isinstance(getattr(tags, "pll_tags", None), PLLTags), (
        f"{name}: __sklearn_tags__ must return plcore.tags.Tags (call super().__sklearn_tags__())")
    pll = tags.pll_tags
    if not isinstance(estimator, BaseBagGenerator):
        assert not (pll.needs_features or pll.corrupts_existing_labels or pll.noisy_candidates), (
            f"{name}: needs_features / corrupts_existing_labels / noisy_candidates are bag-generator tags")
    if not isinstance(estimator, BaseLearner):
        assert not (pll.online or pll.exact_label_baseline or pll.epoch_checkpoints or pll.path_params
                    or pll.reject_option), (
            f"{name}: online / exact_label_baseline / epoch_checkpoints / path_params / reject_option are learner tags")


def check_reject_score(name, estimator):
    """Learners with the tag ``reject_option``: ``reject_score(X)`` gives one finite score per row,
    the same for a row whatever rows are scored with it."""
    if not get_pll_tags(estimator).reject_option:
        return
    X, S, _ = make_pl_data()
    est = _set_seed(estimator).fit(X[:60], S[:60])
    assert hasattr(est, "reject_score"), f"{name}: tag reject_option but no reject_score method"
    r = np.asarray(est.reject_score(X[60:]))
    assert r.shape == (30,), f"{name}: reject_score must return shape (n,), got {r.shape}"
    assert np.all(np.isfinite(r)), f"{name}: reject_score has NaN/inf"
    _assert_close(est.reject_score(X[75:]), r[15:], f"{name}: reject_score of a row depends on the other rows")


def check_reducer_keeps_rows(name, estimator):
    """``transform`` keeps the number and order of rows; n_components_ = output width."""
    X, S, _ = make_pl_data()
    est = _set_seed(estimator).fit(X, S)
    Z = np.asarray(est.transform(X))
    assert Z.ndim == 2 and Z.shape[0] == X.shape[0], f"{name}: transform changed the rows: {Z.shape}"
    assert Z.shape[1] == est.n_components_, (
        f"{name}: transform gives {Z.shape[1]} columns but n_components_={est.n_components_}")
    perm = np.random.RandomState(0).permutation(X.shape[0])
    _assert_close(est.transform(X[perm]), Z[perm], f"{name}: transform reorders or mixes rows")


def check_reducer_in_pipeline(name, estimator):
    """``make_pipeline(reducer, PL-KNN).fit(X, S)`` works and predicts within classes_."""
    from plcore.learners import PlKnnLearner

    X, S, _ = make_pl_data()
    pipe = make_pipeline(_set_seed(estimator), PlKnnLearner(k=3)).fit(X, S)
    pred = pipe.predict(X)
    assert pred.shape == (X.shape[0],) and np.isin(pred, np.arange(S.shape[1])).all(), (
        f"{name}: pipeline predictions malformed")


def check_clusterer_labels(name, estimator):
    """``labels_`` has one entry per row; ``fit_predict`` equals it; y=None is accepted."""
    X, S, _ = make_pl_data()
    est = _fit(_set_seed(estimator), X, S)
    assert np.asarray(est.labels_).shape == (X.shape[0],), f"{name}: labels_ must have shape (n,)"
    S_part = np.array(S, copy=True)
    S_part[np.arange(S.shape[0]) % 3 != 0] = True
    fp = _set_seed(estimator).fit_predict(X, S_part)
    _assert_close(fp, est.labels_, f"{name}: fit_predict differs from labels_")


def check_deterministic_under_seed(name, estimator):
    """Two fits with the same ``random_state`` give the same output."""
    X, S, y = make_pl_data(n_classes=5)
    if isinstance(estimator, BaseBagGenerator):
        a = _set_seed(estimator, 3).generate(y, X, n_classes=5)
        b = _set_seed(estimator, 3).generate(y, X, n_classes=5)
        assert np.array_equal(a, b), f"{name}: same random_state gave different bags"
        return
    a = _output(_fit(_set_seed(estimator, 3), X, S), X)
    b = _output(_fit(_set_seed(estimator, 3), X, S), X)
    _assert_close(a, b, f"{name}: same random_state gave different results")


def check_clone_and_pickle(name, estimator):
    """A clone behaves like the original; a pickled fitted estimator gives the same output."""
    X, S, y = make_pl_data(n_classes=5)
    if isinstance(estimator, BaseBagGenerator):
        gen = _set_seed(estimator, 5)
        out = gen.generate(y, X, n_classes=5)
        assert np.array_equal(clone(gen).generate(y, X, n_classes=5), out), (
            f"{name}: clone changes the bags")
        restored = pickle.loads(pickle.dumps(gen))
        assert np.array_equal(restored.generate(y, X, n_classes=5), out), (
            f"{name}: pickling changes the bags")
        return
    est = _fit(_set_seed(estimator), X, S)
    out = _output(est, X)
    _assert_close(_output(_fit(clone(est), X, S), X), out, f"{name}: clone changes behaviour")
    restored = pickle.loads(pickle.dumps(est))
    _assert_close(_output(restored, X), out, f"{name}: pickling changes behaviour")


def _expect_value_error(name, what, fn):
    try:
        fn()
    except ValueError:
        return
    except Exception as err:  # noqa: BLE001 - any other exception type is the failure
        raise AssertionError(f"{name}: {what} raised {type(err).__name__} instead of ValueError") from err
    raise AssertionError(f"{name}: {what} was accepted; it must raise ValueError")


def check_bad_input_raises(name, estimator):
    """Empty candidate rows, X/S row mismatch, NaN/inf, q < 2 and non-binary S raise ValueError."""
    X, S, y = make_pl_data()
    if isinstance(estimator, BaseBagGenerator):
        gen = _set_seed(estimator)
        _expect_value_error(name, "negative labels", lambda: gen.generate(y - 5, X))
        _expect_value_error(name, "X/y row mismatch", lambda: gen.generate(y, X[:-1]))
        _expect_value_error(name, "2-D y", lambda: gen.generate(S.astype(int), X))
        return
    fit = (lambda e, X_, S_: e.fit(X_, S_))
    empty = S.copy()
    empty[4] = False
    nonbin = S.astype(float)
    nonbin[2, 0] = 0.5
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    cases = {
        "an empty candidate row": (X, empty),
        "an empty candidate row (sparse)": (X, sp.csr_matrix(empty)),
        "X/S row-count mismatch": (X[:-1], S),
        "NaN in X": (X_nan, S),
        "inf in X": (X_inf, S),
        "a single class (q < 2)": (X, np.zeros(X.shape[0], dtype=int)),
        "a non-binary candidate matrix": (X, nonbin),
    }
    for what, (X_, S_) in cases.items():
        _expect_value_error(name, what, lambda X_=X_, S_=S_: fit(_set_seed(estimator), X_, S_))


def check_extreme_features_refused(name, estimator):
    """Features whose squares overflow float64 (X * 1e200) are refused in one line at ``fit``,
    never turned into silently wrong predictions (the one validation, :func:`plcore.data.check_features`)."""
    X, S, y = make_pl_data()
    try:
        _fit(_set_seed(estimator), X * 1e200, S)
    except ValueError as err:
        assert len(str(err).strip().splitlines()) == 1, f"{name}: a multi-line error for X * 1e200: {err}"
        return
    raise AssertionError(f"{name}: fit accepted X * 1e200, whose squares overflow float64")


def check_data_limits_refused(name, estimator):
    """A parameter bounded by the data's shape (``_data_limits``) above that bound is refused
    in one line at ``fit`` (and by the command line before a run), not capped silently or left
    to fail deep inside the method."""
    X, S, y = make_pl_data()
    for param in getattr(estimator, "_data_limits", {}):
        est = _set_seed(estimator).set_params(**{param: 10 ** 6})
        try:
            _fit(est, X, S)
        except ValueError as err:
            message = str(err).strip()
            assert len(message.splitlines()) == 1 and param in message, f"{name}: {param}=10**6 gave: {err}"
            continue
        raise AssertionError(f"{name}: fit accepted {param}=10**6 on {X.shape[0]} rows of {X.shape[1]} features")


def check_bags_valid(name, estimator):
    """Bags are a bool (n, q) matrix without empty rows; q follows ``n_classes``; a bag without
    its true label only from a generator tagged ``noisy_candidates``."""
    X, S, y = make_pl_data(n_samples=200, n_classes=5, r=1)
    out = _set_seed(estimator, 1).generate(y, X, n_classes=6)
    assert isinstance(out, np.ndarray) and out.dtype == bool, f"{name}: bags must be a bool ndarray"
    assert out.shape == (200, 6), f"{name}: bags shape {out.shape} != (200, 6)"
    assert out.any(axis=1).all(), f"{name}: empty bags at rows {np.nonzero(~out.any(axis=1))[0][:10]}"
    outside = np.flatnonzero(~out[np.arange(200), y])
    assert get_pll_tags(estimator).noisy_candidates or not outside.size, (
        f"{name}: true label left out at rows {outside[:10]} without the tag noisy_candidates")
    other = _set_seed(estimator, 2).generate(y, X, n_classes=6)
    same = all(np.array_equal(_set_seed(estimator, s).generate(y, X, n_classes=6), out) for s in (2, 3))
    if same and np.array_equal(other, out):
        trivially_deterministic = out.sum(axis=1).max() == 1 and np.array_equal(np.argmax(out, 1), y)
        assert trivially_deterministic, f"{name}: different random_state values give identical bags"


# ----------------------------------------------------------------------------- selection
_COMMON_CHECKS = (check_parameter_constraints, check_param_validation, check_pll_tags, check_search_space,
                  check_declared_config)
#: preprocessors (kind ``preprocessor``) are plain scikit-learn transformers
_PREPROCESSOR_CHECKS = (check_parameter_constraints, check_param_validation)
_LEARNER_CHECKS = _COMMON_CHECKS + (check_candidate_matrix_dense_and_sparse, check_predictions_in_classes,
                   check_scores_shape, check_confidences, check_learns_on_separable_data,
                   check_partial_fit_stream, check_epoch_checkpoints, check_fit_path, check_reject_score,
                   check_deterministic_under_seed,
                   check_clone_and_pickle,
                   check_bad_input_raises, check_extreme_features_refused, check_data_limits_refused)
_REDUCER_CHECKS = _COMMON_CHECKS + (check_candidate_matrix_dense_and_sparse, check_reducer_keeps_rows,
                   check_confidences, check_reducer_in_pipeline, check_deterministic_under_seed,
                   check_clone_and_pickle, check_bad_input_raises, check_extreme_features_refused,
                   check_data_limits_refused)
_CLUSTERER_CHECKS = _COMMON_CHECKS + (check_candidate_matrix_dense_and_sparse, check_clusterer_labels,
                     check_deterministic_under_seed, check_clone_and_pickle, check_bad_input_raises,
                     check_extreme_features_refused, check_data_limits_refused)
_BAG_CHECKS = _COMMON_CHECKS + (check_bags_valid, check_deterministic_under_seed, check_clone_and_pickle,
               check_bad_input_raises)


def _kind_checks(estimator):
    for base, checks in ((BaseLearner, _LEARNER_CHECKS), (BaseReducer, _REDUCER_CHECKS),
                         (BaseClusterer, _CLUSTERER_CHECKS), (BaseBagGenerator, _BAG_CHECKS)):
        if isinstance(estimator, base):
            return checks
    if hasattr(estimator, "fit") and hasattr(estimator, "transform"):
        return _PREPROCESSOR_CHECKS
    raise TypeError(
        f"{type(estimator).__name__} is not a plcore component: subclass BaseLearner, "
        "BaseReducer, BaseClusterer or BaseBagGenerator")


def yield_pll_checks(estimator):
    """Yield ``partial(check, name)`` for the partial-label checks of this kind."""
    name = type(estimator).__name__
    for check in _kind_checks(estimator):
        yield partial(check, name)


def all_checks(estimator, *, sklearn_checks=True, expected_failed_checks=None, mark=None):
    """Yield ``(estimator, check)`` pairs: scikit-learn's checks, then the PLL checks.

    With ``mark="xfail"`` (as in pytest parametrisation) checks named in
    ``expected_failed_checks`` are wrapped as expected failures; with ``mark=None`` they
    are skipped.
    """
    expected = dict(expected_failed_checks or {})
    if sklearn_checks and not isinstance(estimator, BaseBagGenerator):
        from sklearn.utils.estimator_checks import estimator_checks_generator

        yield from estimator_checks_generator(
            estimator, legacy=True, expected_failed_checks=expected, mark=mark or "skip")
    for check in yield_pll_checks(estimator):
        cname = check.func.__name__
        if cname in expected:
            if mark == "xfail":
                import pytest

                yield pytest.param(estimator, check, marks=pytest.mark.xfail(reason=expected[cname]))
            continue
        yield estimator, check


def parametrize_with_checks(estimators, *, expected_failed_checks=None, sklearn_checks=True):
    """pytest decorator running every applicable check on every estimator.

    ``expected_failed_checks`` is a dict ``{check_name: reason}`` or a callable
    ``estimator -> dict``.
    """
    import pytest
    from sklearn.utils.estimator_checks import _get_check_estimator_ids

    params = []
    for est in estimators:
        expected = (expected_failed_checks(est) if callable(expected_failed_checks)
                    else expected_failed_checks)
        params.extend(all_checks(est, sklearn_checks=sklearn_checks,
                                 expected_failed_checks=expected, mark="xfail"))
    return pytest.mark.parametrize("estimator, check", params, ids=_get_check_estimator_ids)


def registered_instances(registry=None, *, distributions=None):
    """``[(component, instance, expected_failed_checks)]`` for every registered estimator and
    preprocessor (optionally only those of the given distributions), created with its
    ``test_params``."""
    from plcore.registry import ESTIMATOR_KINDS, get_registry

    registry = registry or get_registry()
    out = []
    for (kind, _), comp in sorted(registry.components.items()):
        if kind not in ESTIMATOR_KINDS + ("preprocessor",):
            continue
        if distributions is not None and comp.distribution not in distributions:
            continue
        est = comp.spec.cls(**(comp.spec.test_params or {}))
        out.append((comp, est, dict(comp.spec.expected_failed_checks or {})))
    return out


def parametrize_with_registry(*, distributions=None, sklearn_checks=True):
    """pytest decorator: the common test over every installed component (core and plugins).

    Each component is checked at its ``ComponentSpec.test_params``, with its declared
    ``expected_failed_checks``; test ids start with ``kind:name``.
    """
    import pytest
    from sklearn.utils.estimator_checks import _get_check_estimator_ids

    params = []
    for comp, est, expected in registered_instances(distributions=distributions):
        for p in all_checks(est, sklearn_checks=sklearn_checks, expected_failed_checks=expected, mark="xfail"):
            values, marks = (p.values, p.marks) if hasattr(p, "values") else (p, ())
            check_id = _get_check_estimator_ids(values[1])
            params.append(pytest.param(*values, marks=marks, id=f"{comp.kind}:{comp.name}-{check_id}"))
    return pytest.mark.parametrize("estimator, check", params)


def check_component(estimator, *, sklearn_checks=True, expected_failed_checks=None):
    """Run every applicable check now; raise the first failure (``AssertionError`` etc.)."""
    import unittest
    import warnings

    for est, check in all_checks(estimator, sklearn_checks=sklearn_checks,
                                 expected_failed_checks=expected_failed_checks):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                check(est)
            except unittest.SkipTest:
                continue
