"""Where a run came from: plcore's and the plugins' versions and the git commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from plcore._version import __version__

__all__ = ["git_provenance", "version_tags"]


def git_provenance() -> dict:
    """MLflow's source tags for the checkout plcore runs from: commit and a dirty flag.

    Empty when plcore is not in a git checkout (an installed wheel) or git is missing.
    """
    root = Path(__file__).resolve().parents[2]  # the checkout holding plcore/
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return {}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"mlflow.source.git.commit": commit.stdout.strip(),
            "plcore.git.dirty": "true" if status.stdout.strip() else "false"}


def version_tags(registry) -> dict:
    """``plcore.version`` and ``plugin.<distribution>`` tags for the components of ``registry``."""
    tags = {"plcore.version": __version__}
    for dist, ver in sorted(registry.distributions().items()):
        tags[f"plugin.{dist}"] = ver
    return tags
