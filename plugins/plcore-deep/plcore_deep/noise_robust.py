"""Noise-robust learners: candidate sets that may miss the true label (methods:
:mod:`plcore_deep._noise_robust`). All three accept any candidate matrix; nothing assumes the true
label is a candidate."""

from __future__ import annotations

from plcore.validation import Integral, Interval, Real
from plcore_deep._estimator import DeepLearner
from plcore_deep.contrastive import PicoLearner

__all__ = ["FredisLearner", "AlimLearner", "PicoPlusLearner"]


class FredisLearner(DeepLearner):
    """FREDIS (Qiao et al., ICML 2023): refinement and disambiguation for unreliable partial labels.

    The classifier learns from the consistency ``lam KL(w || p)`` with confidences ``w`` on the
    (refined) candidate set, and ``alpha`` x the loss ``-log(1 - p_j)`` of every non-candidate;
    every ``update_interval`` epochs the candidate sets are refined: labels within ``theta`` of a
    row's most probable join, candidates more than ``delta`` below it leave (at most
    ``change_size`` joins and ``times`` x as many leaves per round), and ``theta`` grows by ``inc``,
    ``delta`` shrinks by ``dec`` (:mod:`plcore_deep._noise_robust`). Defaults: PLENCH's.
    ``candidates_``: the refined sets; ``n_purified_``: the entries the rounds changed.
    """

    _method = "noise_robust:Fredis"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "theta": [Interval(Real, 0, None, closed="left")],
                              "inc": [Interval(Real, 0, None, closed="left")],
                              "delta": [Interval(Real, 0, None, closed="left")],
                              "dec": [Interval(Real, 0, None, closed="neither")],
                              "times": [Interval(Integral, 1, None, closed="left")],
                              "change_size": [Interval(Integral, 1, None, closed="left")],
                              "update_interval": [Interval(Integral, 1, None, closed="left")],
                              "lam": [Interval(Real, 0, None, closed="left")],
                              "alpha": [Interval(Real, 0, None, closed="left")]}

    def _method_params(self):
        return {"theta": self.theta, "inc": self.inc, "delta": self.delta, "dec": self.dec, "times": self.times,
                "change_size": self.change_size, "update_interval": self.update_interval, "lam": self.lam,
                "alpha": self.alpha}

    def _fit(self, X, S, **kwargs):
        result = super()._fit(X, S, **kwargs)
        self.candidates_ = result.candidates
        self.n_purified_ = result.n_purified
        return result


class AlimLearner(PicoLearner):
    """ALIM (Xu et al., NeurIPS 2023): PiCO with an adjusted label importance for noisy candidates.

    PiCO (:class:`~plcore_deep.contrastive.PicoLearner`, all its parameters) whose confidences move
    towards ``argmax_j ((S + lambda (1 - S)) * score)_j``: a non-candidate whose prototype score is
    ``1/lambda`` times the best candidate's wins. From epoch ``start_epoch`` on, ``lambda`` is the
    ``noise_rate`` quantile of the previous epoch's margins ``max_{j in S} score / max_{j not in S}
    score``. The loss adds a mixup term (``mixup_weight``; mixing weight ``Beta(mixup_alpha,
    mixup_alpha)``) on the batch mixed with random training rows and their confidences
    (:mod:`plcore_deep._noise_robust`). Defaults: PLENCH's for ALIM's own; PiCO's as plcore's PiCO.
    """

    _method = "noise_robust:Alim"
    _parameter_constraints = {**PicoLearner._parameter_constraints,
                              "start_epoch": [Interval(Integral, 0, None, closed="left")],
                              "noise_rate": [Interval(Real, 0, 1, closed="left")],
                              "mixup_weight": [Interval(Real, 0, None, closed="left")],
                              "mixup_alpha": [Interval(Real, 0, None, closed="neither")]}

    def _method_params(self):
        return {**super()._method_params(), "start_epoch": self.start_epoch, "noise_rate": self.noise_rate,
                "mixup_weight": self.mixup_weight, "mixup_alpha": self.mixup_alpha}


class PicoPlusLearner(PicoLearner):
    """PiCO+ (Wang et al., TPAMI 2024): PiCO made robust to candidate sets that miss the true label.

    PiCO (:class:`~plcore_deep.contrastive.PicoLearner`, all its parameters) with a reliable set:
    from epoch ``prot_start`` on, the ``pure_ratio`` of the rows nearest (in the contrastive
    embedding) to the prototype of their classifier's best candidate are reliable; they alone
    move the prototypes and carry PiCO's classification and contrastive terms (``cls_weight`` x
    the cross-entropy on the confidences); the others learn, with weight ``ur_weight``, from the
    prototype scores sharpened by ``temperature_guess`` and, from epoch ``knn_start`` on, from
    their ``n_neighbors`` nearest embeddings as contrastive positives; mixup
    (``Beta(mixup_alpha, mixup_alpha)``) on the whole batch (:mod:`plcore_deep._noise_robust`).
    Defaults: the authors' code (``pure_ratio=0.6``, ``knn_start=100`` epochs, ``n_neighbors=16``,
    ``temperature_guess=0.07``, ``ur_weight=0.1``, ``cls_weight=2``, ``mixup_alpha=4``); PiCO's as
    plcore's PiCO. PLENCH's defaults differ: ``pure_ratio=1`` (every row reliable) and
    ``knn_start`` at 5,000 optimiser steps.
    """

    _method = "noise_robust:PicoPlus"
    _parameter_constraints = {**PicoLearner._parameter_constraints,
                              "pure_ratio": [Interval(Real, 0, 1, closed="right")],
                              "knn_start": [Interval(Integral, 0, None, closed="left")],
                              "n_neighbors": [Interval(Integral, 1, None, closed="left")],
                              "temperature_guess": [Interval(Real, 0, None, closed="neither")],
                              "ur_weight": [Interval(Real, 0, None, closed="left")],
                              "cls_weight": [Interval(Real, 0, None, closed="left")],
                              "mixup_alpha": [Interval(Real, 0, None, closed="neither")]}

    def _method_params(self):
        return {**super()._method_params(), "pure_ratio": self.pure_ratio, "knn_start": self.knn_start,
                "n_neighbors": self.n_neighbors, "temperature_guess": self.temperature_guess,
                "ur_weight": self.ur_weight, "cls_weight": self.cls_weight, "mixup_alpha": self.mixup_alpha}
