"""CroSel, cross selection of confident pseudo-labels by two networks (method:
:mod:`plcore_deep._crosel`)."""

from __future__ import annotations

from plcore.validation import Integral, Interval, Real, StrOptions
from plcore_deep._estimator import VIEW_CONSTRAINTS, DeepLearner

__all__ = ["CroselLearner"]


class CroselLearner(DeepLearner):
    """CroSel (Tian et al., CVPR 2024): two networks train each other on the rows whose pseudo-labels
    they are confident of, and all rows by a partial-label term.

    A row is selected by a network when its argmax over the last three epochs was the same, the
    mean largest probability exceeds ``threshold`` and the argmax is a candidate (Eq. 3); each
    network learns the other's selected rows by cross-entropy, and every row by the partial-label
    term, weighted by ``lam_cr`` times the unselected fraction (Eq. 7). ``warm_up`` epochs of the
    CC loss come first. Predictions average the two networks' probabilities.

    ``variant="paper"`` (default) is the paper's: co-mix consistency (Eq. 6) between the row (weak
    view) and ``x + noise_scale N(0, I)`` (strong view, ``augmentation``), mixed by ``Beta(mix_alpha,
    mix_alpha)``; banks filled by an evaluation pass; the official code's defects (both networks
    the same object, a sharpening that is overwritten) are not reproduced. ``variant="fuchs"`` is
    Fuchs & Kalinke's re-implementation (UAI 2025), which made the field's stored CroSel figures:
    no views and no co-mix, a CC warm-up with its own optimiser before the ``n_epochs``, and their
    selection rule (see :mod:`plcore_deep._crosel`); with it, ``lam_cr=2`` is theirs.
    """

    _method = "crosel:CroSel"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "variant": [StrOptions({"paper", "fuchs"})],
                              "warm_up": [Interval(Integral, 0, None, closed="left")],
                              "threshold": [Interval(Real, 0, 1, closed="both")],
                              "lam_cr": [Interval(Real, 0, None, closed="left")],
                              "mix_alpha": [Interval(Real, 0, None, closed="neither")],
                              **VIEW_CONSTRAINTS}

    def _set_result(self, result, X, S) -> None:
        super()._set_result(result, X, S)
        self._architecture["twin"] = True
