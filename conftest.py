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


@pytest.fixture(scope="session", autouse=True)
def resident_tracking_writers():
    """The ``python -m plcore`` commands of this session (of this xdist worker) share their own
    resident tracking writers, in a folder of their own, stopped when the session ends."""
    import shutil
    import tempfile

    from plcore.tracking_writer import stop_resident

    folder = tempfile.mkdtemp(prefix="plcore-writers-")
    before = os.environ.get("PLCORE_WRITER_DIR")
    os.environ["PLCORE_WRITER_DIR"] = folder
    yield Path(folder)
    stop_resident(Path(folder))
    shutil.rmtree(folder, ignore_errors=True)
    if before is None:
        del os.environ["PLCORE_WRITER_DIR"]
    else:
        os.environ["PLCORE_WRITER_DIR"] = before
