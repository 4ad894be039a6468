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


class _ConformalCleaning:
    """What every conformal variant adds to its base learner: the cleaner on its method (its
    parameters, before the base learner's own, are its record's: ``plcore_deep.plugin.conformal``)."""

    _stacks = False

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

class ConformalCcLearner(_ConformalCleaning, CcLearner):
    """Conf+CC: CC with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025); with
    ``as_authors_code`` its ``beta`` is 0, as in the authors' code."""

    _parameter_constraints = {**CcLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

class ConformalCavlLearner(_ConformalCleaning, CavlLearner):
    """Conf+CAVL: CAVL with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025); with
    ``as_authors_code`` the cleaning changes nothing, as in the authors' code."""

    _parameter_constraints = {**CavlLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

class ConformalPopLearner(_ConformalCleaning, PopLearner):
    """Conf+POP: POP with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**PopLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

class ConformalValenLearner(_ConformalCleaning, ValenLearner):
    """Conf+VALEN: VALEN with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**ValenLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

class ConformalPicoLearner(_ConformalCleaning, PicoLearner):
    """Conf+PiCO: PiCO with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**PicoLearner._parameter_constraints, **CLEANING_CONSTRAINTS}

class ConformalCroselLearner(_ConformalCleaning, CroselLearner):
    """Conf+CroSel: CroSel with conformal candidate cleaning (Fuchs & Kalinke, UAI 2025)."""

    _parameter_constraints = {**CroselLearner._parameter_constraints, **CLEANING_CONSTRAINTS}
