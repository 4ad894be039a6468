"""The data home and the search for a named data set's file in it.

Named data sets are looked up in a *data home*: the ``data_home`` argument, else the
``PLCORE_DATA_HOME`` environment variable, else ``~/plcore_data``. The data home and
its immediate subfolders are searched (so ``datasets/palm/lost.mat`` is found from
``datasets/``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from plcore.datasets.catalog import CIFAR_DATASETS, IDX_DATASETS, PALM_DATASETS, SKLEARN_DATASETS, UCI_DATASETS
from plcore.datasets.formats import suffixes
from plcore.exceptions import DataValidationError, DatasetNotFoundError

PALM_URL = "https://palm.seu.edu.cn/zhangml/Resources.htm#partial_data (Min-Ling Zhang's PALM lab)"
UCI_URL = "https://archive.ics.uci.edu/ (UCI repository; ARFF copies in the UCI++ collection)"



def _norm(stem: str) -> str:
    return re.sub(r"[^a-z0-9]", "", stem.lower())


def get_data_home(data_home=None) -> Path:
    """The data home: argument, else ``$PLCORE_DATA_HOME``, else ``~/plcore_data``."""
    if data_home is None:
        data_home = os.environ.get("PLCORE_DATA_HOME") or Path.home() / "plcore_data"
    return Path(data_home).expanduser()


def _search_dirs(home: Path) -> list[Path]:
    dirs = [home]
    if home.is_dir():
        dirs += sorted(p for p in home.iterdir() if p.is_dir())
    return dirs


def _data_home_contents(home: Path, limit: int = 20) -> str:
    """One phrase saying which data files the data home (and its subfolders) holds."""
    if not home.is_dir():
        return f"the data home {home} does not exist"
    files = sorted(
        str(f.relative_to(home))
        for d in _search_dirs(home) if d.is_dir()
        for f in d.iterdir() if f.suffix.lower() in suffixes() and f.is_file()
    )
    if not files:
        return f"the data home {home} holds no {'/'.join(suffixes())} files"
    more = f", ... ({len(files)} in total)" if len(files) > limit else ""
    return f"the data home {home} holds {', '.join(files[:limit])}{more}"


def find_dataset_file(name: str, data_home=None) -> Path:
    """Locate the file of a named PALM/UCI data set; raise a helpful error if absent."""
    if name in PALM_DATASETS:
        stems, suffix, source = PALM_DATASETS[name], ".mat", PALM_URL
    elif name in UCI_DATASETS:
        stems, suffix, source = UCI_DATASETS[name], ".arff", UCI_URL
    else:
        raise DataValidationError(
            f"unknown data set name {name!r}; known: {sorted(known_names())}; "
            f"{_data_home_contents(get_data_home(data_home))}"
        )
    home = get_data_home(data_home)
    wanted = {_norm(s) for s in stems}
    dirs = _search_dirs(home)
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix.lower() == suffix and _norm(f.stem) in wanted:
                return f
    looked = ", ".join(str(d) for d in dirs) if home.is_dir() else f"{home} (does not exist)"
    holds = f" ({_data_home_contents(home)})" if home.is_dir() else ""
    raise DatasetNotFoundError(
        f"data set {name!r} not found: looked for {stems[0]}{suffix} in {looked}{holds}. "
        f"Set PLCORE_DATA_HOME (or pass data_home) to the folder holding it; "
        f"a public copy is at {source}"
    )


def known_names() -> list[str]:
    return (list(PALM_DATASETS) + list(UCI_DATASETS) + list(SKLEARN_DATASETS) + list(IDX_DATASETS)
            + list(CIFAR_DATASETS))
