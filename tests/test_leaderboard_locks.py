"""Two runners, one folder (issue 63, item 5): concurrent ``leaderboard run`` s into one results
folder split the folds instead of each computing all of them; a fold another live run holds is
left to it; the lock of a killed run is taken over by the next one."""

import subprocess
import sys
import threading
import time

from plcore.leaderboard import load_protocol
from plcore.leaderboard.jobs import chosen, entries
from plcore.leaderboard.runfile import claim_path
from plcore.leaderboard.runner import _fold_path as fold_place, run_missing
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry, hookimpl

PROTOCOL = load_protocol("field-smoke/1")


class _Slow(PlKnnLearner):
    """PL-KNN that takes a while to fit (so that two runners overlap)."""

    def fit(self, X, y):
        time.sleep(0.4)
        return super().fit(X, y)


class _Plugin:
    @hookimpl
    def plcore_components(self):
        return [ComponentSpec("learner", "slow", _Slow, display_name="Slow kNN")]


def _registry():
    reg = Registry()
    reg.register(_Plugin(), name="slow-plugin", distribution="plcore-slow", version="0.1")
    return reg.load(entry_points=False)


def _runner(reg, results, said):
    rows = chosen(entries(PROTOCOL, reg), ["learner:slow"])
    return run_missing(PROTOCOL, rows, results, registry=reg, echo=said.append)


def _fold_path(reg, results, dataset="iris", fold=0):
    (entry,) = chosen(entries(PROTOCOL, reg), ["learner:slow"])
    return fold_place(results, PROTOCOL, entry, dataset, fold)


def test_two_concurrent_runs_split_the_folds(tmp_path):
    reg = _registry()
    said_a, said_b, written = [], [], {}
    start = threading.Barrier(2)

    def run(name, said):
        start.wait()
        written[name] = _runner(reg, tmp_path, said)

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in (("a", said_a), ("b", said_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    computed = [line for line in said_a + said_b if ": accuracy=" in line]
    assert len(computed) == 4  # 2 data sets x 2 folds, each computed once between the two runs
    assert len(written["a"]) + len(written["b"]) == 4 and written["a"] and written["b"]
    assert sorted(p.name for p in tmp_path.rglob("fold-*.json")) == ["fold-0.json", "fold-0.json", "fold-1.json",
                                                                      "fold-1.json"]
    assert list(tmp_path.rglob("*.lock")) == []  # every lock given back


def _holder(path):
    """A process holding the lock of the fold whose file is ``path`` until killed."""
    code = ("import sys, time\nfrom filelock import FileLock\nlock = FileLock(sys.argv[1], timeout=0)\n"
            "lock.acquire()\nprint('held', flush=True)\ntime.sleep(120)\n")
    claim_path(path).parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", code, str(claim_path(path))], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_fold_another_live_run_holds_is_left_to_it(tmp_path):
    reg = _registry()
    path = _fold_path(reg, tmp_path)
    proc = _holder(path)
    try:
        said = []
        written = _runner(reg, tmp_path, said)
    finally:
        proc.kill()
        proc.wait()
    assert len(written) == 3 and not path.exists()
    assert "learner:slow on iris fold 0: held by another run, left to it" in said
    assert said[-1] == f"1 fold(s) held by another run into {tmp_path} were left to it"


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path):
    reg = _registry()
    path = _fold_path(reg, tmp_path)
    proc = _holder(path)
    proc.kill()  # killed while it held the fold: its lock file stays behind
    proc.wait()
    assert claim_path(path).exists()
    said = []
    written = _runner(reg, tmp_path, said)
    assert len(written) == 4 and path.exists() and not any("held by another run" in line for line in said)
