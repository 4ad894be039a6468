"""The leaderboard (issue 56): results kept as one file per (protocol, component revision, data
set, fold), so that they are recomputed rather than trusted, resume for free and merge across
machines (``../shared/design/leaderboard.md``, section 2.4 and 2.6).

So far: the frozen, versioned protocols (:mod:`plcore.leaderboard.protocol`: ``field-smoke/1``
and ``field-quick/1`` shipped in ``protocols/``, their hashes pinned by a test, the data checked
against their fingerprints and fold digests), the run file (:mod:`plcore.leaderboard.runfile`: its
schema ``plcore.leaderboard.run/1``, packed predictions, atomic writes, validation) and merging
trees of them (:func:`~plcore.leaderboard.runfile.merge_trees`), the registry-driven rows and
each cell's state (:mod:`plcore.leaderboard.jobs`), running the missing folds of the
classification track (:mod:`plcore.leaderboard.runner`), and ``python -m plcore leaderboard list``
and ``run`` (:mod:`plcore.leaderboard.cli`). ``field/1`` (with the UCI sets
``first-order-theorem`` and ``flare``), the clustering track's runs, Hydra's launchers, ``merge``,
``page`` and ``verify`` follow.
"""

from plcore.utils import lazy_exports

_RUNFILE = ["SCHEMA", "STATUSES", "MergeReport", "pack_predictions", "unpack_predictions", "run_key", "run_path",
            "validate_run", "write_run", "read_run", "iter_runs", "merge_trees"]
_PROTOCOL = ["Protocol", "available_protocols", "load_protocol", "protocol_hash", "describe_dataset", "check_dataset",
             "rows_digest"]
__all__ = _RUNFILE + _PROTOCOL

__getattr__, __dir__ = lazy_exports(globals(), {**dict.fromkeys(_RUNFILE, "plcore.leaderboard.runfile"),
                                                **dict.fromkeys(_PROTOCOL, "plcore.leaderboard.protocol")})
