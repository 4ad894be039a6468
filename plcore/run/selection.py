"""Nested hyperparameter selection from candidate sets only (``protocol.select``).

Inside every outer training part a scikit-learn search (``GridSearchCV`` or
``RandomizedSearchCV``) picks the parameters by inner cross-validation scored with a
label-free criterion (:data:`plcore.metrics.SCORERS`, default the covering rate); the
outer test part is never seen, and no true label is used. The chosen values are logged per
outer step as ``selected.<component>.<parameter>``.

``protocol.select``::

    method: none | grid | random     # none (default): no selection
            | oracle                 # reproduction only: the grid point with the best TEST score
    space: {learner.k: [5, 10, 20], reducer.mu: [0.2, 0.5]}   # null (default): the declared spaces
           # random also takes distributions: {learner.learning_rate: {log10_uniform: [-4.5, -2.5]}}
           # (plcore.utils.distributions); null: each component's search_distributions, else its grid
    scoring: covering_rate           # or partial_log_likelihood, or a scikit-learn scorer name
    cv: 3                            # inner folds (shuffled, seeded by the run's seed)
    n_iter: 10                       # random: candidates drawn from the space
    missing: error                   # skip: drop space keys this run's components lack (sweeps
                                     # over several learners); nothing left = no selection
    shared: true                     # fit together what the candidates share where the learner
                                     # offers it (its path_params, e.g. PL-KNN's k: one neighbour
                                     # search for every k; plcore.run.shared_search); the same
                                     # selections as false (scikit-learn's search, every point alone)
"""

from __future__ import annotations

from plcore.exceptions import ConfigError
from plcore.run.defaults import SELECT_DEFAULTS

__all__ = ["check_select", "make_search", "selected_values", "select_clusterer", "candidates", "oracle",
           "with_params"]

_KINDS = ("learner", "reducer", "clusterer")


def _declared_space(setup, registry, method: str) -> dict:
    """The components' declared space: ``search_distributions`` for ``method=random`` where
    declared, else the grid ``search_space``."""
    out = {}
    for kind in _KINDS:
        est = getattr(setup, kind)
        if est is None:
            continue
        comp = registry.component_of(est, kind)
        if comp is None:
            continue
        declared = (method == "random" and comp.spec.search_distributions) or comp.spec.search_space
        out.update({f"{kind}.{p}": v for p, v in (declared or {}).items()})
    return out


def _plain_values(key: str, values, method: str):
    """One parameter's values as plain data (a list, or a distribution's ``{name: [a, b]}``);
    one-line ``ConfigError`` for what ``method`` cannot search."""
    from plcore.utils.distributions import check_distribution, is_distribution

    if is_distribution(values):
        try:
            dist = check_distribution(values)
        except ValueError as err:
            raise ConfigError(f"protocol.select.space[{key!r}]: {err}") from None
        if method != "random":
            raise ConfigError(f"protocol.select.method={method} needs a list of values for {key}, got the "
                              f"distribution {dist.spec}: use method=random, or give a list")
        return dist.spec
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or not len(values):
        raise ConfigError(f"protocol.select.space[{key!r}] must be a non-empty list of values or, for "
                          "method=random, a distribution such as {log10_uniform: [-4.5, -2.5]}")
    return list(values)


def check_select(select, setup, registry=None) -> dict:
    """The normalised ``select`` settings for ``setup``; raises one-line ``ConfigError``s."""
    from plcore.metrics import get_scorer
    from plcore.registry import get_registry

    select = {**SELECT_DEFAULTS, **dict(select or {})}
    unknown = sorted(set(select) - set(SELECT_DEFAULTS))
    if unknown:
        raise ConfigError(f"protocol.select has no key(s) {', '.join(unknown)}; keys: {', '.join(SELECT_DEFAULTS)}")
    if select["method"] not in ("none", "grid", "random", "oracle"):
        raise ConfigError(f"protocol.select.method must be none, grid, random or oracle, got {select['method']!r}")
    if select["missing"] not in ("error", "skip"):
        raise ConfigError(f"protocol.select.missing must be error or skip, got {select['missing']!r}")
    if not isinstance(select["shared"], bool):
        raise ConfigError(f"protocol.select.shared must be true or false, got {select['shared']!r}")
    if select["method"] == "none":
        return select
    if not isinstance(select["cv"], int) or isinstance(select["cv"], bool) or select["cv"] < 2:
        raise ConfigError(f"protocol.select.cv must be an integer >= 2, got {select['cv']!r}")
    if not isinstance(select["n_iter"], int) or isinstance(select["n_iter"], bool) or select["n_iter"] < 1:
        raise ConfigError(f"protocol.select.n_iter must be an integer >= 1, got {select['n_iter']!r}")
    try:
        get_scorer(select["scoring"])
    except ValueError as err:
        raise ConfigError(f"protocol.select.scoring {select['scoring']!r} is unknown: {err}") from None
    space = dict(select["space"] or {}) or _declared_space(setup, registry or get_registry(), select["method"])
    if not space and select["missing"] == "skip":  # a sweep's untuned baseline (k-means beside PLC)
        return {**select, "method": "none", "space": None}
    if not space:
        raise ConfigError("protocol.select.space is empty and the components declare no search space; "
                          "give one, e.g. 'protocol.select.space={learner.k:[5,10,20]}'")
    if select["missing"] == "skip":
        space = {k: v for k, v in space.items() if _has_param(setup, str(k))}
        if not space:
            return {**select, "method": "none", "space": None}
    for key, values in space.items():
        kind, _, param = str(key).partition(".")
        est = getattr(setup, kind, None) if kind in _KINDS else None
        if est is None or not param:
            raise ConfigError(f"protocol.select.space key {key!r} must be learner.<param> or reducer.<param> "
                              "of a component of this run")
        if param not in est.get_params(deep=False):
            raise ConfigError(f"protocol.select.space: {type(est).__name__} has no parameter {param!r}")
    select["space"] = {str(k): _plain_values(str(k), v, select["method"]) for k, v in space.items()}
    return select


def _has_param(setup, key: str) -> bool:
    kind, _, param = key.partition(".")
    est = getattr(setup, kind, None) if kind in _KINDS else None
    return est is not None and param in est.get_params(deep=False)


def _pipeline_key(pipe, key: str) -> str:
    """``learner.k`` -> the pipeline parameter (``plknnlearner__k``; a wrapped reducer's
    ``rescaledreducer__reducer__mu``)."""
    from plcore.preprocessing import RescaledReducer

    kind, _, param = key.partition(".")
    name, step = pipe.steps[-1] if kind == "learner" else pipe.steps[-2]
    inner = "reducer__" if isinstance(step, RescaledReducer) else ""
    return f"{name}__{inner}{param}"


def make_search(pipe, select: dict, random_state, n_jobs=None):
    """``pipe`` wrapped in the scikit-learn search ``select`` asks for (or ``pipe`` itself);
    ``n_jobs`` candidates at a time (scikit-learn's ``n_jobs``)."""
    if select["method"] == "none":
        return pipe
    from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV

    from plcore.metrics import get_scorer

    from plcore.utils.distributions import sampler

    space = {_pipeline_key(pipe, k): sampler(v) for k, v in select["space"].items()}
    inner = KFold(n_splits=select["cv"], shuffle=True, random_state=random_state)
    if select["shared"]:
        from plcore.run.shared_search import SharedSearchCV, path_keys

        path = path_keys(pipe, space)
        if path:   # the learner fits these together: once per other point and inner fold
            from sklearn.model_selection import ParameterGrid, ParameterSampler

            points = (ParameterGrid(space) if select["method"] == "grid" else
                      ParameterSampler(space, n_iter=select["n_iter"], random_state=random_state))
            return SharedSearchCV(pipe, list(points), path, get_scorer(select["scoring"]), inner)
    common = dict(scoring=get_scorer(select["scoring"]), cv=inner, refit=True, error_score="raise", n_jobs=n_jobs)
    if select["method"] == "grid":
        return GridSearchCV(pipe, space, **common)
    return RandomizedSearchCV(pipe, space, n_iter=select["n_iter"], random_state=random_state, **common)


def selected_values(search, select: dict) -> dict:
    """``{"selected.<kind>.<param>": value}`` of the fitted search (numbers only; others as strings)."""
    if select["method"] == "none":
        return {}
    best = search.best_params_
    pipe = search.best_estimator_
    out = {}
    for key in select["space"]:
        value = best[_pipeline_key(pipe, key)]
        out[f"selected.{key}"] = value
    return out


def select_clusterer(clusterer, X, S, select: dict, random_state):
    """Clustering's selection: every candidate of the space (grid, or ``n_iter`` draws) is fitted
    on all rows -- clustering is transductive -- and scored by
    :func:`plcore.metrics.clustering_covering_rate` on the labelled rows' candidate sets only
    (the unlabelled rows, which carry the evaluation, are never scored). Returns the best fitted
    clusterer, ``{"selected.clusterer.<param>": value}`` and every candidate's
    ``(params, labels)`` (for reporting only); ties keep the first candidate."""
    from sklearn.base import clone

    from plcore.metrics import clustering_covering_rate

    if select["scoring"] not in ("covering_rate", "clustering_covering_rate"):
        raise ConfigError("clustering selects by clustering_covering_rate (the labelled rows' candidate sets); "
                          f"protocol.select.scoring={select['scoring']!r} is not available for clusterers")
    best, best_score, best_params, trials = None, -float("inf"), None, []
    for params in candidates(select, random_state):
        fitted = clone(clusterer).set_params(**params).fit(X, S)
        trials.append((params, fitted.labels_))
        score = clustering_covering_rate(S, fitted.labels_)
        if score > best_score:
            best, best_score, best_params = fitted, score, params
    return best, {f"selected.clusterer.{k}": v for k, v in best_params.items()}, trials


def candidates(select: dict, random_state) -> list:
    """The parameter points a clustering selection tries: the grid, or ``n_iter`` draws from it
    (the same draws for every partition of a run: seeded by the run's seed)."""
    from sklearn.model_selection import ParameterGrid, ParameterSampler

    from plcore.utils.distributions import sampler

    space = {k.partition(".")[2]: sampler(v) for k, v in select["space"].items()}
    if select["method"] == "grid":
        return list(ParameterGrid(space))
    return list(ParameterSampler(space, n_iter=select["n_iter"], random_state=random_state))


ORACLE_NOTE = ("ORACLE: the grid point with the best TEST score, chosen with the test rows' true labels -- "
               "for comparison with papers that tuned on true labels; not a result")


def oracle(protocol, setup, dataset, select: dict, *, score_key: str, callback=None, refit=False, **kwargs):
    """Reproduction only, never a default: run ``protocol`` at every point of the grid and keep
    the one with the best mean TEST score (``score_key``, e.g. ``accuracy_mean``) -- what a
    paper that tuned on true labels could have reported. The result is tagged
    ``selection=oracle`` and its steps carry ``selected.<kind>.<param>``."""
    from dataclasses import replace

    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    print(f"note: {ORACLE_NOTE}", flush=True)
    best, best_score = None, -float("inf")
    for point in ParameterGrid(select["space"]):
        trial = _with_params(setup, point, clone, replace)
        res = protocol(trial, dataset, refit=False, progress=False, **kwargs) if "refit" in _params(protocol) \
            else protocol(trial, dataset, progress=False, **kwargs)
        if res.summary[score_key] > best_score:
            best, best_score = point, res.summary[score_key]
    final_kwargs = dict(kwargs, callback=None)
    if "refit" in _params(protocol):
        final_kwargs["refit"] = refit
    result = protocol(_with_params(setup, best, clone, replace), dataset, **final_kwargs)
    chosen = {f"selected.{k}": v for k, v in best.items()}
    for step in result.steps:
        step.update(chosen)
        if callback is not None:
            callback(step)
    result.tags["selection"] = "oracle"
    result.tags["selection.note"] = ORACLE_NOTE
    return result


def _params(fn):
    import inspect

    return inspect.signature(fn).parameters


def with_params(setup, point: dict):
    """A copy of ``setup`` whose components have ``point``'s parameters (``{"learner.k": 5}``)."""
    from dataclasses import replace

    from sklearn.base import clone

    return _with_params(setup, point, clone, replace)


def _with_params(setup, point, clone, replace):
    """A copy of ``setup`` whose components have the grid point's parameters."""
    changes = {}
    for key, value in point.items():
        kind, _, param = key.partition(".")
        est = changes.get(kind) or clone(getattr(setup, kind))
        changes[kind] = est.set_params(**{param: value})
    return replace(setup, **changes)
