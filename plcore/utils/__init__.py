"""Helpers shared by the core and the method plugins (one copy of each), by topic:

* :mod:`plcore.utils.matrices`: candidate-matrix conversion, confidence initialisation,
  leave-one-out vote confidences, row normalisation, deterministic eigenvector signs;
* :mod:`plcore.utils.osqp`: the block-diagonal QP pattern, OSQP settings and results;
* :mod:`plcore.utils.compile`: numba compilation of kernels (:func:`compiled`);
* :mod:`plcore.utils.distributions`: search distributions written as plain data
  (``{log10_uniform: [a, b]}``) for random hyperparameter search;
* :mod:`plcore.utils.files`: :func:`atomic_write`, a file written whole or not at all;
* :func:`lazy_exports`: a package's public names imported on first use (PEP 562).

The names below are served lazily, so that ``import plcore.utils`` loads nothing heavy.
"""

from __future__ import annotations

from plcore.utils._lazy import lazy_exports

__all__ = ["dense_candidates", "uniform_confidences", "vote_confidences", "normalise_rows", "flip_signs",
           "upper_block_pattern", "osqp_settings", "osqp_solution", "compiled", "atomic_write", "lazy_exports"]

__getattr__, __dir__ = lazy_exports(globals(), {
    **dict.fromkeys(["dense_candidates", "uniform_confidences", "vote_confidences", "normalise_rows",
                     "flip_signs"], "plcore.utils.matrices"),
    **dict.fromkeys(["upper_block_pattern", "osqp_settings", "osqp_solution"], "plcore.utils.osqp"),
    "compiled": "plcore.utils.compile",
    "atomic_write": "plcore.utils.files",
})
