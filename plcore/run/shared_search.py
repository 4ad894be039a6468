"""Nested selection that fits once what its candidates share (``protocol.select.shared``).

scikit-learn's ``GridSearchCV`` fits ``scaler -> [reducer ->] learner`` anew for every grid
point and inner fold. Where the learner declares ``path_params`` (:class:`plcore.tags.PLLTags`;
PL-KNN: ``k`` and ``weights``), :class:`SharedSearchCV` groups the candidates by their other
parameters and, per group and inner fold, fits the steps before the learner once and the
learner once for all the group's values (its ``fit_path``: one neighbour search at the largest
``k`` serves every ``k``). It scores, ranks and refits as ``GridSearchCV`` (and
``RandomizedSearchCV``, whose draws it takes from the same ``ParameterSampler``) does, so it
selects the same values; :func:`plcore.run.selection.make_search` uses it where it applies and
``GridSearchCV`` otherwise. It runs in the calling process (the shared fits are its speed-up; a
search's ``n_jobs`` applies to scikit-learn's path only).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import _safe_indexing

__all__ = ["SharedSearchCV", "path_keys"]


def path_keys(pipe, space_keys) -> list:
    """The pipeline keys of ``space_keys`` (``<step>__<param>``) that the pipeline's learner
    fits together (its ``path_params`` tag); empty when it declares none."""
    from plcore.tags import get_pll_tags

    name, learner = pipe.steps[-1]
    shared = set(get_pll_tags(learner).path_params)
    if not shared or not hasattr(learner, "fit_path"):
        return []
    return [k for k in space_keys if k.startswith(f"{name}__") and k[len(name) + 2:] in shared]


class SharedSearchCV:
    """A search over ``candidates`` (pipeline parameter dicts, in ``GridSearchCV``'s order)
    whose learner parameters ``path`` are fitted together; the interface of ``GridSearchCV``
    that plcore's protocols read (``fit``, ``best_params_``, ``best_estimator_``,
    ``best_index_``, ``best_score_``, ``cv_results_``).

    Parameters
    ----------
    estimator : Pipeline
        ``[scaler ->] [reducer ->] learner``; the learner has ``fit_path``.
    candidates : list of dict
        ``ParameterGrid(space)`` or ``ParameterSampler(space, n_iter, random_state)``.
    path : list of str
        The candidates' keys the learner fits together (:func:`path_keys`).
    scoring : callable
        ``scorer(estimator, X, S)``; called on the learner with the transformed rows, which is
        what ``scorer(pipeline, X, S)`` computes.
    cv : splitter
        The inner folds (``KFold``).
    """

    def __init__(self, estimator, candidates, path, scoring, cv):
        self.estimator = estimator
        self.candidates = candidates
        self.path = path
        self.scoring = scoring
        self.cv = cv

    def fit(self, X, S):
        candidates = list(self.candidates)
        folds = list(self.cv.split(X))
        scores = np.empty((len(candidates), len(folds)))
        for members, rest in self._groups(candidates):
            learner_points = [{k.split("__", 1)[1]: candidates[i][k] for k in self.path if k in candidates[i]}
                              for i in members]
            for f, (train, test) in enumerate(folds):
                pipe = clone(self.estimator).set_params(**rest)
                Z_train, Z_test = self._prefix(pipe, _safe_indexing(X, train), _safe_indexing(X, test),
                                               _safe_indexing(S, train))
                learners = pipe.steps[-1][1].fit_path(Z_train, _safe_indexing(S, train), learner_points)
                S_test = _safe_indexing(S, test)
                for i, learner in zip(members, learners):
                    scores[i, f] = self.scoring(learner, Z_test, S_test)
        means = np.average(scores, axis=1)   # as GridSearchCV: the mean over the inner folds,
        ranks = _min_ranks(-means)           # the best rank's first candidate
        self.best_index_ = int(ranks.argmin())
        self.best_score_ = float(means[self.best_index_])
        self.best_params_ = candidates[self.best_index_]
        self.cv_results_ = {"params": candidates, "mean_test_score": means, "rank_test_score": ranks,
                            **{f"split{f}_test_score": scores[:, f] for f in range(len(folds))}}
        self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_).fit(X, S)
        return self

    def _groups(self, candidates):
        """``(candidate indices, their shared non-path parameters)``, in first-seen order."""
        groups = {}
        for i, point in enumerate(candidates):
            rest = {k: v for k, v in point.items() if k not in self.path}
            key = repr(sorted(rest.items()))
            groups.setdefault(key, ([], rest))[0].append(i)
        return list(groups.values())

    @staticmethod
    def _prefix(pipe, X_train, X_test, S_train):
        """The steps before the learner fitted on the training rows (as ``Pipeline.fit`` fits
        them: ``fit_transform`` with the candidate sets); both parts transformed."""
        if len(pipe.steps) == 1:
            return X_train, X_test
        prefix = pipe[:-1]
        return prefix.fit_transform(X_train, S_train), prefix.transform(X_test)


def _min_ranks(values) -> np.ndarray:
    """``scipy.stats.rankdata(values, method="min")`` as integers (GridSearchCV's ranks)."""
    from scipy.stats import rankdata

    return np.asarray(rankdata(values, method="min"), dtype=np.int32)
