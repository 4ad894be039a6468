"""Shared pytest fixtures for the core and every plugin under plugins/."""

import os
from pathlib import Path

import pytest

# Under pytest-xdist every worker shares the machine's cores with the others: one thread each.
# PyTorch's OpenMP pool otherwise spins on cores another worker is using (the deep plugin's
# conformance tests ran 6x slower with -n 2). Set before any test imports numpy or torch.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# The leaderboard's scan cache (plcore.leaderboard.checks.ScanCache) stays off in the suite, which
# forges and edits run files under its own checks; tests/test_leaderboard_scan_cache.py turns it on.
os.environ.setdefault("PLCORE_SCAN_CACHE", "0")

# A relative data home (the README's ``PLCORE_DATA_HOME=../shared/datasets``) means the folder
# it names from where pytest was started; the commands the tests start run in other folders.
if os.environ.get("PLCORE_DATA_HOME") and not Path(os.environ["PLCORE_DATA_HOME"]).expanduser().is_absolute():
    os.environ["PLCORE_DATA_HOME"] = str(Path(os.environ["PLCORE_DATA_HOME"]).resolve())


@pytest.fixture(scope="session")
def data_home() -> Path:
    """The shared data sets: ``$PLCORE_DATA_HOME``, else ``../shared/datasets`` beside the repo."""
    env = os.environ.get("PLCORE_DATA_HOME")
    candidates = ([Path(env).expanduser()] if env else []) + [
        Path(__file__).resolve().parent.parent / "shared" / "datasets"
    ]
    for home in candidates:
        if home.is_dir():
            return home
    pytest.skip(
        "shared data sets not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); set PLCORE_DATA_HOME to the folder holding palm/ and uci/"
    )



@pytest.fixture(scope="session")
def image_subsets(data_home) -> Path:
    """The folder of the two real CIFAR-10 subsets (``images/`` of the shared data sets)."""
    folder = data_home / "images"
    if not (folder / "cifar10-subset-a.npz").is_file():
        pytest.skip(f"the CIFAR-10 subsets are not in {folder}")
    return folder
