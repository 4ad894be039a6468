"""The environment of a ``python -m plcore`` child process in the sweep and fault tests (this
folder is on the tests' ``sys.path``: pytest's ``pythonpath`` in pyproject.toml)."""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child_env(**extra) -> dict:
    """The test process's environment with one BLAS / OpenMP thread, no inherited
    ``MLFLOW_TRACKING_URI``, this folder importable (``learner._target_=faulty.<Class>``), and
    ``extra`` on top."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("MLFLOW_TRACKING_URI", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env
