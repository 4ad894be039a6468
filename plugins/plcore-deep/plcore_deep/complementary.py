"""Learners with a complementary-label loss, run as partial-label learners as PLENCH runs them
(methods: :mod:`plcore_deep._complementary`).

Every non-candidate label of a row is one complementary example of it; each loss is averaged
over these (row, label) pairs, and a row whose candidate set is every label adds nothing. None
keeps confidences: ``confidences_`` is the final model's posterior on the candidates.
"""

from __future__ import annotations

from plcore.validation import Interval, Real
from plcore_deep._estimator import DeepLearner

__all__ = ["PcLearner", "ForwardLearner", "NnLearner", "GaLearner", "SclExpLearner", "SclNlLearner", "LwLearner",
           "OpwLearner"]


class PcLearner(DeepLearner):
    """PC, the pairwise-comparison loss of Ishida et al. (NeurIPS 2017).

    Theorem 1's unbiased estimator with the sigmoid loss ``l(z) = 1/(1+e^z)``, per pair
    ``(x, k)``: ``(q-1) sum_{y != k} l(f_y - f_k) - q(q-1)/2 + (q-1)``. PLENCH's code (Ishida et
    al.'s) also sums the term ``y = k``: its loss is ``(q-1)/2`` higher, its gradient the same.
    """

    _method = "complementary:Pc"
    _stacks = True


class ForwardLearner(DeepLearner):
    """Forward, the forward-corrected loss of Yu et al. (ECCV 2018), with the uniform transition
    matrix (as PLENCH): ``-log((1 - p_k)/(q-1))`` per pair ``(x, k)``.

    The paper estimates the transition matrix for biased complementary labels; PLENCH and this
    learner take it uniform. ``log(1 - p_k)`` is computed from the logits, finite where
    ``p_k`` rounds to 1 (PLENCH's ``log`` of the product is ``-inf`` there).
    """

    _method = "complementary:Forward"
    _stacks = True


class NnLearner(DeepLearner):
    """NN, the non-negative risk estimator of Ishida et al. (ICML 2019).

    ``sum_j max(R_j, -beta)`` over the partial risks of the cross-entropy, ``R_j = sum_k pi_k
    E_k[-log p_j] - (q-1) pi_j E_j[-log p_j]`` (Theorem 1 split by class), ``E_k`` the mean over
    the batch's pairs with complementary label ``k``, ``pi`` the complementary-class prior of
    the training rows' candidate sets. PLENCH's code (Ishida et al.'s) weighs the first sum by
    ``pi_j`` instead of ``pi_k``: the same for a uniform prior (the paper's experiments), not for
    the prior of candidate sets; this learner follows the paper. ``beta = 0``: PLENCH's value.
    """

    _method = "complementary:Nn"
    _stacks = True
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "beta": [Interval(Real, 0, None, closed="left")]}

class GaLearner(DeepLearner):
    """GA, gradient ascent on the unbiased risk estimator (Ishida et al., ICML 2019, Algorithm 1
    with ``beta = 0``).

    The partial risks of :class:`NnLearner`; a step descends on ``sum_j R_j`` when every
    ``R_j >= 0``, else ascends on ``sum_j min(R_j, 0)``. ``loss_curve_`` records ``sum_j R_j``.
    PLENCH's code (Ishida et al.'s) multiplies each ``R_j`` by the number of the batch's pairs
    with label ``j`` in the ascent step (not in the descent step); the paper does not, nor does
    this learner. The prior is weighed as in :class:`NnLearner` (the paper's).
    """

    _method = "complementary:Ga"


class SclExpLearner(DeepLearner):
    """SCL-EXP, the surrogate complementary loss ``exp(p_k)`` (Chou et al., ICML 2020)."""

    _method = "complementary:SclExp"
    _stacks = True


class SclNlLearner(DeepLearner):
    """SCL-NL, the surrogate complementary loss ``-log(1 - p_k)`` (Chou et al., ICML 2020).

    Computed from the logits; PLENCH's code takes ``log(1 - p_k + 1e-6)``, which caps the loss
    near 13.8 and flattens its gradient where ``p_k`` is within 1e-6 of 1.
    """

    _method = "complementary:SclNl"
    _stacks = True


class LwLearner(DeepLearner):
    """L-W, the weighted discriminative loss of Gao & Zhang (ICML 2021), as PLENCH's code computes
    it: with ``u = 1 - p``, ``-(1 + u_k/(q-1)) log softmax(u)_k`` per pair
    ``(x, k)``, the weight not detached."""

    _method = "complementary:Lw"
    _stacks = True


class OpwLearner(DeepLearner):
    """OP-W, the reweighted order-preserving loss of Liu et al. (AISTATS 2023), as PLENCH's code
    computes it: with ``c = softmax(-f)``, ``-w_k log c_k`` per pair ``(x, k)``,
    ``w = p * softmax(1/(c + 1e-18)) + 1e-6`` (not detached)."""

    _method = "complementary:Opw"
    _stacks = True
