"""Learners for the fault tests, named by ``learner._target_=faulty.<Class>`` (PYTHONPATH=tests/faultlib)."""

import os
import subprocess
import time

from plcore.learners import PlKnnLearner
from plcore.validation import Interval, Real


class SlowKnn(PlKnnLearner):
    """PL-KNN that sleeps ``delay`` seconds per fit (so that a signal lands mid-run), or raises
    inside ``fit`` when ``fail`` (a plugin bug); ``leak_fds``: its first fit starts a child
    process that inherits every open file descriptor and outlives the run by ``leak_fds`` s
    (a helper process a plugin forgot to close them for)."""

    _parameter_constraints = {**PlKnnLearner._parameter_constraints,
                              "delay": [Interval(Real, 0, None, closed="left")], "fail": ["boolean"],
                              "leak_fds": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, k=10, weights="linear", metric="euclidean", n_jobs=None, delay=0.0, fail=False,
                 leak_fds=0.0):
        super().__init__(k=k, weights=weights, metric=metric, n_jobs=n_jobs)
        self.delay = delay
        self.fail = fail
        self.leak_fds = leak_fds

    def _fit(self, X, S):
        if self.fail:
            raise RuntimeError("deliberate failure inside fit")
        if self.leak_fds and not getattr(SlowKnn, "_leaked", False):
            SlowKnn._leaked = True
            for fd in map(int, os.listdir("/proc/self/fd")):  # as a C library's fork/exec would
                try:
                    os.set_inheritable(fd, True)
                except OSError:
                    pass
            subprocess.Popen(["sleep", str(self.leak_fds)], close_fds=False, start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(self.delay)
        super()._fit(X, S)
