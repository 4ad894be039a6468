"""The leaderboard (issue 56): results kept as one file per (protocol, component revision, data
set, fold), so that they are recomputed rather than trusted, resume for free and merge across
machines (``../shared/design/leaderboard.md``, section 2.4 and 2.6).

So far: the run file (:mod:`plcore.leaderboard.runfile`: its schema ``plcore.leaderboard.run/1``,
packed predictions, atomic writes, validation) and merging trees of them
(:func:`~plcore.leaderboard.runfile.merge_trees`). The frozen protocols, the registry-driven job
list, the commands and the page follow.
"""

from plcore.utils import lazy_exports

__all__ = ["SCHEMA", "STATUSES", "MergeReport", "pack_predictions", "unpack_predictions", "run_key", "run_path",
           "validate_run", "write_run", "read_run", "iter_runs", "merge_trees"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__, "plcore.leaderboard.runfile"))
