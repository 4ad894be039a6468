"""``leaderboard run --launcher L``: the chosen rows as one Hydra multirun, one job per row, sent
out by a Hydra launcher (``joblib`` on this machine's cores, ``ray``, ``submitit_slurm`` on a
cluster; issue 56, item 4). Each job runs its row's missing folds (:func:`run_missing`) into the
same results folder: run files are written atomically under distinct names, so jobs never
collide, and a job that dies leaves its finished folds for the next run.

Any launcher option passes through as a Hydra override (``--override hydra.launcher.n_jobs=4``).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field

__all__ = ["launch", "LaunchConfig"]


@dataclass
class LaunchConfig:
    """One job: the protocol, the results folder (absolute), the row and the data sets."""

    protocol: str = "field-quick/1"
    results: str = "leaderboard"
    row: str = ""
    datasets: list = field(default_factory=list)
    tracking_uri: str = ""


def _job(cfg) -> None:
    from plcore.leaderboard.jobs import chosen, entries
    from plcore.leaderboard.protocol import load_protocol
    from plcore.leaderboard.runner import run_missing
    from plcore.registry import get_registry

    protocol = load_protocol(cfg.protocol)
    registry = get_registry()
    rows = chosen(entries(protocol, registry), [cfg.row])
    run_missing(protocol, rows, cfg.results, registry=registry, datasets=list(cfg.datasets) or None,
                echo=lambda line: print(line, flush=True), tracking_uri=cfg.tracking_uri or None)


def launch(protocol: str, rows: list, results, *, launcher: str, datasets=None, overrides=(),
           tracking_uri: str | None = None) -> None:
    """Run ``rows`` (``KIND:NAME``) as a Hydra multirun over ``launcher``; its own outputs (the
    jobs' logs and configs) go to a temporary folder, the run files to ``results``."""
    from pathlib import Path

    import hydra
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="plcore_leaderboard_launch", node=LaunchConfig)
    quoted = ",".join(f"'{r}'" for r in rows)
    argv = ["--multirun", f"hydra/launcher={launcher}", f"protocol={protocol}",
            f"results='{Path(results).resolve().as_posix()}'", f"row={quoted}",
            f"datasets=[{','.join(datasets or [])}]", f"tracking_uri='{tracking_uri or ''}'",
            "hydra/job_logging=none", "hydra/hydra_logging=none",
            f"hydra.sweep.dir='{tempfile.mkdtemp(prefix='plcore-leaderboard-')}'", "hydra.job.chdir=false",
            *overrides]
    app = hydra.main(version_base=None, config_name="plcore_leaderboard_launch")(_job)
    saved = sys.argv
    sys.argv = ["plcore-leaderboard", *argv]
    try:
        app()
    finally:
        sys.argv = saved
