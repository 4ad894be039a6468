"""Learners for the fault tests, named by ``learner._target_=faulty.<Class>`` (PYTHONPATH=tests/faultlib)."""

import time

from plcore.learners import PlKnnLearner
from plcore.validation import Interval, Real


class SlowKnn(PlKnnLearner):
    """PL-KNN that sleeps ``delay`` seconds per fit (so that a signal lands mid-run), or raises
    inside ``fit`` when ``fail`` (a plugin bug)."""

    _parameter_constraints = {**PlKnnLearner._parameter_constraints,
                              "delay": [Interval(Real, 0, None, closed="left")], "fail": ["boolean"]}

    def __init__(self, k=10, weights="linear", metric="euclidean", n_jobs=None, delay=0.0, fail=False):
        super().__init__(k=k, weights=weights, metric=metric, n_jobs=n_jobs)
        self.delay = delay
        self.fail = fail

    def _fit(self, X, S):
        if self.fail:
            raise RuntimeError("deliberate failure inside fit")
        time.sleep(self.delay)
        super()._fit(X, S)
