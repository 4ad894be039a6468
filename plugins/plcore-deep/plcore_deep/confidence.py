"""Confidence-based learners: a weighted cross-entropy whose label confidences are re-estimated as
the model trains (methods: :mod:`plcore_deep._confidence`)."""

from __future__ import annotations

from plcore.validation import Integral, Interval, Real
from plcore_deep._estimator import VIEW_CONSTRAINTS, DeepLearner

__all__ = ["ProdenLearner", "RcLearner", "CavlLearner", "PopLearner", "CrdpllLearner"]


class ProdenLearner(DeepLearner):
    """PRODEN (Lv et al., ICML 2020): confidence-weighted cross-entropy, confidences re-estimated per batch.

    Loss Eq. (6) ``-sum_j w_ij log p_j(x_i)``; after each step the batch's weights become the
    outputs the step was computed on, renormalised over the candidates (Eq. 7). Weights start
    uniform on the candidates.
    """

    _method = "confidence:Proden"
    _stacks = True


class RcLearner(DeepLearner):
    """RC, the risk-consistent estimator of Feng et al. (NeurIPS 2020).

    The importance-reweighted risk Eq. (6) is PRODEN's weighted cross-entropy; the weights
    (Eq. 7, ``p(y|x)`` renormalised on the candidates) are recomputed for each batch from a
    forward pass after the optimiser step, as in the authors' code.
    """

    _method = "confidence:Rc"
    _stacks = True


class CavlLearner(DeepLearner):
    """CAVL (Zhang et al., ICLR 2022): cross-entropy on the candidate with the largest class activation value.

    The target of each row is one-hot on ``argmax_{j in S} f_j |1 - f_j|`` of the raw outputs
    (Eq. 3), re-chosen per batch after the step; it starts uniform on the candidates.
    """

    _method = "confidence:Cavl"
    _stacks = True


class PopLearner(DeepLearner):
    """POP, progressive purification (Xu et al., ICML 2023).

    PRODEN's loss and updates; from epoch ``warm_up`` on, every ``window`` epochs, each candidate
    whose mean confidence over the last ``window`` epochs is below ``theta`` times its row's
    largest is removed for good (Algorithm 1). ``theta`` grows by the factor ``1 + inc`` after a
    round that changed almost nothing, up to ``theta_max``. Defaults: the authors' code.
    """

    _method = "confidence:Pop"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "warm_up": [Interval(Integral, 0, None, closed="left")],
                              "window": [Interval(Integral, 1, None, closed="left")],
                              "theta": [Interval(Real, 0, 1, closed="right")],
                              "inc": [Interval(Real, 0, None, closed="left")],
                              "theta_max": [Interval(Real, 0, 1, closed="right")]}

    def _fit(self, X, S, **kwargs):
        result = super()._fit(X, S, **kwargs)
        self.candidates_ = result.candidates
        self.n_purified_ = result.n_purified
        return result


class CrdpllLearner(DeepLearner):
    """CRDPLL (Wu et al., ICML 2022): consistency regularization for deep partial-label learning.

    Supervised learning on the non-candidates, ``-sum_{j not in S} log(1 - p_j)`` on the first of
    ``n_views`` views of each row, plus ``lam_t`` times the KL divergence from the row's
    confidences to the model's posterior on every view, ``lam_t`` growing linearly to ``lam``
    over the first half of the steps; after each step the confidences become the geometric mean
    of the views' posteriors, renormalised on the candidates (the closed form of the paper).
    It sits with the confidence-based learners: like PRODEN it keeps one confidence vector per
    row, re-estimated from the model as it trains. The views come from ``augmentation``
    (:mod:`plcore_deep._views`, as PiCO's): ``"auto"`` (default) is ``x + noise_scale N(0, I)``
    on tabular rows and a random shift and flip for ``network="lenet"``; ``"identity"`` is
    PLENCH's tabular choice (every view the row itself). ``n_views=3`` and ``lam=1`` are the
    authors' code's (one weak, two strong augmentations); PLENCH runs two views.
    """

    _method = "confidence:Crdpll"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "lam": [Interval(Real, 0, None, closed="left")],
                              "n_views": [Interval(Integral, 1, None, closed="left")],
                              **VIEW_CONSTRAINTS}
