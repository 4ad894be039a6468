"""Conformal candidate cleaning around the deep learners that re-estimate their targets (Fuchs &
Kalinke, UAI 2025): ``Conf+X`` for PRODEN, CC, CAVL, POP, VALEN, PiCO and CroSel.

Each variant is its base learner with the candidate sets of its targets cleaned each batch by the
one mechanism of :mod:`plcore_deep._cleaning` (where it enters each method: the table of
``docs/conformal_cleaning.md``). Parameters beyond the base learner's:

cleaning_alpha : float, default=0.05
    The conformal level ``alpha``; a label stays while its p-value exceeds ``alpha + beta``.
cleaning_warm_up : int, default=10
    Epochs before the first cleaning.
correction : bool, default=True
    ``beta`` (the batch's probability mass outside the candidates) and ``eps_t = 0.5^(t - warm_up
    + 1)``; ``False`` is the paper's ablation (both 0).
as_authors_code : bool, default=False
    Reproduce the authors' code where it departs from the paper (CC's ``beta`` always 0, CAVL's
    cleaning a no-op), so that their stored runs can be checked; the other variants are the same
    either way.
"""

from __future__ import annotations

import inspect

from plcore.validation import Integral, Interval, Real
from plcore_deep.confidence import CavlLearner, PopLearner, ProdenLearner
from plcore_deep.candidate_losses import CcLearner
from plcore_deep.instance_dependent import ValenLearner
from plcore_deep.contrastive import PicoLearner
from plcore_deep.crosel import CroselLearner

__all__ = [
    "ConformalProdenLearner",
    "ConformalCcLearner",
    "ConformalCavlLearner",
    "ConformalPopLearner",
    "ConformalValenLearner",
    "ConformalPicoLearner",
    "ConformalCroselLearner",
]

#: the parameters of the cleaning, on every variant
CLEANING_CONSTRAINTS = {
    "cleaning_alpha": [Interval(Real, 0, 1, closed="neither")],
    "cleaning_warm_up": [Interval(Integral, 0, None, closed="left")],
    "correction": ["boolean"],
    "as_authors_code": ["boolean"],
}


def _base_arguments(arguments: dict, base) -> dict:
    """The base learner's constructor arguments among a variant's ``__init__`` arguments (``locals()``)."""
    return {name: arguments[name] for name in inspect.signature(base.__init__).parameters if name != "self"}


class _ConformalCleaning:
    """What every conformal variant adds to its base learner: the cleaner on its method."""

    _stacks = False

    def _set_cleaning(self, cleaning_alpha, cleaning_warm_up, correction, as_authors_code):
        self.cleaning_alpha = cleaning_alpha
        self.cleaning_warm_up = cleaning_warm_up
        self.correction = correction
        self.as_authors_code = as_authors_code

    def _method_params(self) -> dict:
        return {k: v for k, v in super()._method_params().items() if k not in CLEANING_CONSTRAINTS}

    def _make_method(self):
        from plcore_deep._cleaning import ConformalCleaner

        method = super()._make_method()
        method.stacks = False
        method.cleaner = ConformalCleaner(
            self.cleaning_alpha, self.cleaning_warm_up, self.correction, self.as_authors_code
        )
        return method


class ConformalProdenLearner(_ConformalCleaning, ProdenLearner):
    """Conf+PRODEN: PRODEN with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**ProdenLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128,
                 learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant",
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), ProdenLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalCcLearner(_ConformalCleaning, CcLearner):
    """Conf+CC: CC with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025); with
    ``as_authors_code`` its ``beta`` is 0, as in the authors' code."""

    _parameter_constraints = {**CcLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128,
                 learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant",
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), CcLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalCavlLearner(_ConformalCleaning, CavlLearner):
    """Conf+CAVL: CAVL with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025); with
    ``as_authors_code`` the cleaning changes nothing, as in the authors' code."""

    _parameter_constraints = {**CavlLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128,
                 learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant",
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), CavlLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalPopLearner(_ConformalCleaning, PopLearner):
    """Conf+POP: POP with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**PopLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 warm_up=20, window=5, theta=1e-3, inc=1e-3, theta_max=0.4, network="mlp", hidden_layer_sizes=(500,),
                 batch_norm=False, n_epochs=200, batch_size=128, learning_rate=1e-3, weight_decay=1e-5,
                 optimizer="adam", momentum=0.9, lr_schedule="constant", early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=20, tol=1e-4, scoring="partial_log_likelihood",
                 device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), PopLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalValenLearner(_ConformalCleaning, ValenLearner):
    """Conf+VALEN: VALEN with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**ValenLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 warm_up=10, n_neighbors=3, network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200,
                 batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), ValenLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalPicoLearner(_ConformalCleaning, PicoLearner):
    """Conf+PiCO: PiCO with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**PicoLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 feat_dim=128, queue_size=8192, moco_m=0.999, proto_m=0.99, temperature=0.07, loss_weight=0.5,
                 prot_start=1, conf_ema=(0.95, 0.8), noise_scale=0.1, augmentation="auto", network="mlp",
                 hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128, learning_rate=1e-3,
                 weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant", early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=20, tol=1e-4, scoring="partial_log_likelihood",
                 device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), PicoLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)


class ConformalCroselLearner(_ConformalCleaning, CroselLearner):
    """Conf+CroSel: CroSel with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**CroselLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

    def __init__(self, *, cleaning_alpha=0.05, cleaning_warm_up=10, correction=True, as_authors_code=False,
                 variant="paper", warm_up=10, threshold=0.9, lam_cr=1.0, mix_alpha=0.75, augmentation="auto",
                 noise_scale=0.1, network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200,
                 batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", n_threads="auto", random_state=None):
        super().__init__(**_base_arguments(locals(), CroselLearner))
        self._set_cleaning(cleaning_alpha, cleaning_warm_up, correction, as_authors_code)
