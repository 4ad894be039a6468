"""Learners with a loss of the whole candidate set (methods:
:mod:`plcore_deep._candidate_losses`)."""

from __future__ import annotations

from plcore.validation import Interval, Real
from plcore_deep._estimator import DeepLearner

__all__ = ["CcLearner", "LwsLearner", "ExpLearner", "MclGceLearner", "MclMseLearner", "AbsMaeLearner", "AbsGceLearner"]


class CcLearner(DeepLearner):
    """CC, the classifier-consistent estimator of Feng et al. (NeurIPS 2020).

    With candidate sets drawn uniformly (the paper's assumption) Eq. (4) is
    ``-log sum_{j in S_i} p_j(x_i)``: the probability of the candidate set. No confidences.
    """

    _method = "candidate_losses:Cc"
    _stacks = True


class LwsLearner(DeepLearner):
    """LWS, the leveraged weighted loss (Wen et al., ICML 2021).

    Eq. (6) with the sigmoid loss ``psi(z) = 1/(1+e^z)``: candidates are pushed up with weights
    ``w_j`` (``p`` renormalised on the candidates), non-candidates down with ``beta`` times
    their weights (``p`` renormalised on the non-candidates); weights updated per batch.
    """

    _method = "candidate_losses:Lws"
    _stacks = True
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "beta": [Interval(Real, 0, None, closed="left")]}

#: GCE's exponent (Zhang & Sabuncu, NeurIPS 2018, their ``q``; named ``gce_q`` here because
#: plcore's ``q`` is the number of classes): in (0, 1], 1 is MAE up to a factor, 0 the limit CE
_GCE_Q = {"gce_q": [Interval(Real, 0, 1, closed="right")]}


class ExpLearner(DeepLearner):
    """EXP, the exponential upper-bound loss of Feng et al. (ICML 2020, "Learning with multiple
    complementary labels"), run on candidate sets as PLENCH does.

    The labels outside a candidate set are its ``s = q - |S|`` complementary labels. With the
    absolute error ``||p - e_j||_1 = 2 (1 - p_j)``, the paper's unbiased estimator of a row
    (see :class:`MclGceLearner`) is ``2 (q - 1)/s * (1 - sum_{j in S} p_j(x))``; the paper
    replaces ``1 - u`` by its upper bound ``exp(-u)``, and the loss is
    ``(q - 1)/s * exp(-sum_{j in S} p_j(x))``.
    No confidences: ``confidences_`` is the final model's posterior on the candidates.

    A row whose candidate set is every label (``s = 0``) is outside the paper's setting
    (``1 <= s <= q - 1``) and its term would be ``(q - 1)/0 * exp(-1)``: it contributes 0.
    PLENCH's code computes the same factor and divides by 0 there (an infinite loss and NaN
    weights); for every other row it is this loss.
    """

    _method = "candidate_losses:Exp"
    _stacks = True


class MclGceLearner(DeepLearner):
    """MCL-GCE: the unbiased risk estimator of Feng et al. (ICML 2020, "Learning with multiple
    complementary labels") with the generalised cross-entropy, run on candidate sets.

    With ``s = q - |S|`` complementary labels the estimator of one row is
    ``sum_{j in S} L(f(x), j) - (q - 1 - s)/s * sum_{j notin S} L(f(x), j)``; unbiased when
    the complementary labels are drawn uniformly among the false labels. Here ``L(f(x), j) =
    (1 - p_j(x)^gce_q)/gce_q``. A row with ``|S| = 1`` is the ordinary loss of its label; a
    row with ``|S| = q`` (``s = 0``, outside the paper's ``1 <= s <= q - 1``) contributes 0.

    Departure from PLENCH's code (``URE_LMCL``), which computes
    ``candidate - (q - s - 1)/(s * noncandidate + 1e-20)``: it divides by the non-candidate
    loss (an operator-precedence slip), which turns the second term's gradient around (it
    then pushes the non-candidates' loss down). plcore follows the paper. PLENCH's rows with
    ``s = 0`` get ``candidate - (q - 1) * 1e20``; here 0.

    Parameters
    ----------
    gce_q : float in (0, 1], default=0.7
        GCE's exponent (the GCE paper's ``q``, renamed: plcore's ``q`` is the number of
        classes); PLENCH fixes 0.7.
    """

    _method = "candidate_losses:MclGce"
    _stacks = True
    _parameter_constraints = {**DeepLearner._parameter_constraints, **_GCE_Q}

class MclMseLearner(DeepLearner):
    """MCL-MSE: the unbiased risk estimator of Feng et al. (ICML 2020) with the squared error
    ``L(f(x), j) = ||p(x) - e_j||_2^2``, run on candidate sets.

    The estimator, its edge rows (``|S| = 1``: the ordinary loss; ``|S| = q``: 0) and the
    departure from PLENCH's code (its division by the non-candidate loss) are
    :class:`MclGceLearner`'s.
    """

    _method = "candidate_losses:MclMse"
    _stacks = True


class AbsMaeLearner(DeepLearner):
    """ABS-MAE: the average partial-label loss of Lv et al. (TPAMI 2024, "On the robustness of
    average losses for partial-label learning") with the absolute error.

    The loss of a row is ``1/|S| sum_{j in S} ||p(x) - e_j||_1 = 1/|S| sum_{j in S} 2 (1 -
    p_j(x))``: every candidate weighted ``1/|S|`` for the whole of training (the
    average-based strategy; nothing is re-estimated). A bounded loss makes the average
    robust (the paper's result). No confidences: ``confidences_`` is the final model's
    posterior on the candidates. Same loss as PLENCH's ``ABS_MAE``.
    """

    _method = "candidate_losses:AbsMae"
    _stacks = True


class AbsGceLearner(DeepLearner):
    """ABS-GCE: the average partial-label loss of Lv et al. (TPAMI 2024) with the generalised
    cross-entropy, ``1/|S| sum_{j in S} (1 - p_j(x)^gce_q)/gce_q``.

    Weights fixed at ``1/|S|`` on the candidates, as in :class:`AbsMaeLearner`; same loss as
    PLENCH's ``ABS_GCE``.

    Parameters
    ----------
    gce_q : float in (0, 1], default=0.7
        GCE's exponent (PLENCH's ``q``, fixed at 0.7 in its search space; renamed: plcore's
        ``q`` is the number of classes).
    """

    _method = "candidate_losses:AbsGce"
    _stacks = True
    _parameter_constraints = {**DeepLearner._parameter_constraints, **_GCE_Q}
