"""``protocol=plench`` with the deep learners (a checkpoint per epoch) and the preset
``experiment=plench_tabular``."""

import os
import subprocess
import sys

from plcore.data import PLDataset
from plcore.registry import get_registry, load_presets
from plcore.run.protocols import PROTOCOLS, plench
from plcore.testing import make_pl_data
from plcore_deep import ProdenLearner
from plcore_deep.plugin import CONFORMAL_BASES, LEARNER_OPTIONS

FAST = {"hidden_layer_sizes": (16,), "batch_size": 32, "learning_rate": 1e-2, "device": "cpu", "random_state": 0}


def test_a_deep_run_records_one_checkpoint_per_epoch():
    X, S, y = make_pl_data(n_samples=120)
    res = plench(ProdenLearner(n_epochs=3, **FAST), PLDataset(X, S, y, name="blobs"), n_trials=2, n_draws=2,
                 progress=False)
    assert [s["n_checkpoints"] for s in res.steps] == [6, 6]
    assert all(1 <= s[f"{c}_epoch"] <= 3 for s in res.steps for c in ("cr", "aa", "oracle_es"))
    assert all(s["oracle_epoch"] == 3 for s in res.steps)                    # the oracle's last epoch
    assert {"selected.learner.learning_rate", "selected.learner.batch_size"} <= set(res.steps[0])


def test_the_preset_sweeps_every_deep_learner_under_plench():
    node = load_presets("plcore_deep")["plench_tabular"]
    params = node["hydra"]["sweeper"]["params"]
    frontier = {"crosel", *CONFORMAL_BASES}          # the 2025 frontier: not PLENCH's
    assert sorted(params["learner"].split(",")) == sorted(set(LEARNER_OPTIONS) - frontier)
    assert params["dataset"].split(",") == ["lost", "msrc-v2"]
    assert {"/learner": "proden"} in node["defaults"] and {"override /protocol": "plench"} in node["defaults"]
    assert set(node["protocol"]) <= set(PROTOCOLS["plench"].defaults)
    assert node["hydra"]["callbacks"]["report"]["writer"] == "plench_table"
    assert "plench_table" in get_registry().report_writers


def _plcore(args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return subprocess.run([sys.executable, "-m", "plcore", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def test_the_preset_composes(tmp_path):
    out = _plcore(["experiment=plench_tabular", "learner=cc", "--cfg", "job"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "name: plench" in out.stdout and "n_draws: 10" in out.stdout and "zscore: all_rows" in out.stdout
    assert "_target_: plcore_deep.candidate_losses.CcLearner" in out.stdout and "n_epochs: 50" in out.stdout


def test_a_tiny_plench_run_through_the_app(tmp_path):
    out = _plcore(["+learner=proden", "learner.n_epochs=2", "learner.hidden_layer_sizes=[32]", "learner.device=cpu",
                   "protocol=plench", "protocol.n_draws=2", "protocol.n_trials=2", "dataset=digits", "tracking=none"],
                  tmp_path)
    assert out.returncode == 0, out.stderr
    assert "[plench digits] trial 1 (2 of 2 done) cr_accuracy=" in out.stderr
    last = out.stdout.strip().splitlines()[-1].split()
    assert [kv.split("=")[0] for kv in last] == list(PROTOCOLS["plench"].summary_keys)
