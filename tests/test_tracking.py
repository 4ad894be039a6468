"""plcore.tracking: what it changes in MLflow is checked against MLflow's own behaviour, so an
upgrade that makes a change useless or wrong fails here."""

import numpy as np
from sklearn.dummy import DummyClassifier


def test_requirements_check_is_skipped_only_while_plcore_logs_a_model(tmp_path, monkeypatch):
    """MLflow calls ``environment.warn_dependency_requirement_mismatches`` when it saves a model
    with explicit requirements (0.7 s per default run, docs/runs.md); plcore skips that call,
    and only inside its own model logging."""
    import mlflow.sklearn
    from mlflow.utils import environment

    from plcore.tracking.mlflow_run import _pinned_requirements_unchecked

    calls = []
    monkeypatch.setattr(environment, "warn_dependency_requirement_mismatches", lambda reqs: calls.append(reqs))
    model = DummyClassifier().fit(np.zeros((4, 2)), [0, 1, 0, 1])
    mlflow.sklearn.save_model(model, tmp_path / "upstream", pip_requirements=["numpy"])
    assert calls, "MLflow no longer checks requirements through this name: remove the skip"
    calls.clear()
    with _pinned_requirements_unchecked():
        mlflow.sklearn.save_model(model, tmp_path / "skipped", pip_requirements=["numpy"])
    assert calls == []
    mlflow.sklearn.save_model(model, tmp_path / "restored", pip_requirements=["numpy"])
    assert calls, "the check was not restored"
