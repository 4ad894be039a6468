"""The leaderboard (issue 56): results kept as one file per (protocol, component revision, data
set, fold), so that they are recomputed rather than trusted, resume for free and merge across
machines (``../shared/design/leaderboard.md``, section 2.4 and 2.6).

The parts: the frozen, versioned protocols (:mod:`plcore.leaderboard.protocol`: ``field/1``,
``field-quick/1`` and ``field-smoke/1`` shipped in ``frozen/``, their hashes pinned by a test,
the data checked against their fingerprints and fold digests), the run file
(:mod:`plcore.leaderboard.runfile`: the typed :class:`RunFile`, its schema and the ``update_to_N``
chain that upgrades older files, packed predictions, atomic writes), one validation
of a file against its protocol, the installed rows and the data, and merging trees
(:mod:`plcore.leaderboard.checks`),
the registry-driven rows, cell states and cost estimates (:mod:`plcore.leaderboard.jobs`),
running the missing folds (:mod:`plcore.leaderboard.runner`, or one Hydra job per row:
:mod:`plcore.leaderboard.sweep`), the page with its ranking with holes
(:mod:`plcore.leaderboard.page`), ``verify`` (:mod:`plcore.leaderboard.verify`) and the command
line (:mod:`plcore.leaderboard.cli`, ``python -m plcore leaderboard``).
"""

from plcore.utils import lazy_exports

_RUNFILE = ["SCHEMA", "SCHEMA_VERSION", "STATUSES", "RunFile", "pack_predictions", "unpack_predictions", "run_key",
            "run_path", "validate_run", "write_run", "read_run", "iter_runs", "upgrade", "update_to"]
_CHECKS = ["Invalid", "Scan", "scan", "MergeReport", "merge_trees"]
_PROTOCOL = ["Protocol", "available_protocols", "load_protocol", "protocol_hash", "describe_dataset", "check_dataset",
             "rows_digest"]
__all__ = _RUNFILE + _CHECKS + _PROTOCOL

__getattr__, __dir__ = lazy_exports(globals(), {**dict.fromkeys(_RUNFILE, "plcore.leaderboard.runfile"),
                                                **dict.fromkeys(_CHECKS, "plcore.leaderboard.checks"),
                                                **dict.fromkeys(_PROTOCOL, "plcore.leaderboard.protocol")})
