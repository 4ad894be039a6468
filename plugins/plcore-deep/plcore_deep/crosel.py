"""CroSel, cross selection of confident pseudo-labels by two networks (method:
:mod:`plcore_deep._crosel`)."""

from __future__ import annotations

from plcore.validation import Integral, Interval, Real, StrOptions
from plcore_deep._estimator import VIEW_CONSTRAINTS, DeepLearner, shared_parameters

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

    def __init__(self, *, variant="paper", warm_up=10, threshold=0.9, lam_cr=1.0, mix_alpha=0.75,
                 augmentation="auto", noise_scale=0.1, network="mlp", hidden_layer_sizes=(500,), batch_norm=False,
                 n_epochs=200, batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**shared_parameters(locals()))
        self.variant = variant
        self.warm_up = warm_up
        self.threshold = threshold
        self.lam_cr = lam_cr
        self.mix_alpha = mix_alpha
        self.augmentation = augmentation
        self.noise_scale = noise_scale

    def _set_result(self, result, X, S) -> None:
        super()._set_result(result, X, S)
        self._architecture["twin"] = True
