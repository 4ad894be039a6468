"""Losses of candidate sets: a loss defined on the whole candidate set of a row, with no or fixed
per-label weights (PyTorch).

=======  =======================================================  =============================
method   loss                                                     weights
=======  =======================================================  =============================
CC       ``-log sum_{j in S_i} p_j(x_i)``, Feng et al. 2020 Eq.   none
         (4) with uniform candidate generation
LWS      ``sum_{j in S} w_j psi(f_j) + beta sum_{j notin S}       ``p`` renormalised on the
         w_j psi(-f_j)``, Wen et al. 2021 Eq. (6)                 candidates and on the others
EXP      ``(q-1)/s_i exp(-sum_{j in S_i} p_j(x_i))``, Feng et     none
         al. 2020 (multiple complementary labels), upper bound
MCL-GCE  ``sum_{j in S_i} L_j - (q-1-s_i)/s_i sum_{j notin S_i}   none
         L_j``, the same paper's unbiased estimator, ``L`` GCE
MCL-MSE  the same estimator, ``L`` the squared error              none
ABS-MAE  ``1/|S_i| sum_{j in S_i} L_j``, Lv et al. 2024 (average  fixed: ``1/|S_i|`` on the
         loss), ``L`` the absolute error                          candidates
ABS-GCE  the same average, ``L`` GCE                              fixed: ``1/|S_i|``
=======  =======================================================  =============================

``s_i = q - |S_i|`` is the number of complementary labels of row ``i`` (the labels outside its
candidate set) and ``p = softmax(logits)``. The complementary-label papers assume
``1 <= s_i <= q - 1``: a row whose candidate set is every label (``s_i = 0``) says nothing
about its label, and EXP and MCL-* give it a loss of 0 (their formulas divide by ``s_i``).
"""

from __future__ import annotations

import torch

from plcore_deep._methods import (ConfidenceMethod, Method, candidate_posterior, uniform_confidence,
                                  uniform_over_classes)

__all__ = ["Cc", "Lws", "Exp", "MclGce", "MclMse", "AbsMae", "AbsGce", "cc_loss", "lws_loss", "lws_weights",
           "sigmoid_loss", "exp_loss", "mcl_gce_loss", "mcl_mse_loss", "abs_mae_loss", "abs_gce_loss",
           "gce_per_label", "mse_per_label", "mae_per_label", "unbiased_mcl_risk", "average_risk"]


def cc_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``mean_i -log sum_{j in S_i} softmax(logits_i)_j`` (CC, Feng et al. 2020, Eq. 4 with the
    uniform transition matrix), computed as ``logsumexp`` over all classes minus over the
    candidates, which is stable for any logits."""
    masked = logits.masked_fill(S <= 0, float("-inf"))
    return (torch.logsumexp(logits, dim=1) - torch.logsumexp(masked, dim=1)).mean()


def sigmoid_loss(z: torch.Tensor) -> torch.Tensor:
    """LWS's binary loss ``psi(z) = 1 / (1 + exp(z))`` (Wen et al. 2021, Section 4)."""
    return torch.sigmoid(-z)


def lws_loss(logits: torch.Tensor, S: torch.Tensor, W: torch.Tensor, beta: float) -> torch.Tensor:
    """LWS (Wen et al. 2021, Eq. 6): ``mean_i [sum_{j in S_i} w_ij psi(f_ij)
    + beta sum_{j notin S_i} w_ij psi(-f_ij)]`` with ``psi`` the sigmoid loss."""
    candidate = (S * W * sigmoid_loss(logits)).sum(dim=1)
    other = ((1 - S) * W * sigmoid_loss(-logits)).sum(dim=1)
    return (candidate + beta * other).mean()


def lws_weights(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """LWS's weights (Wen et al. 2021, Section 4.2): the model's ``p`` renormalised over the
    candidates on the candidates, plus ``p`` renormalised over the non-candidates on those
    (each part sums to 1; a row whose candidates are every label has no second part)."""
    cand = candidate_posterior(logits, S)
    others = 1 - S
    has_other = others.sum(dim=1, keepdim=True) > 0
    other = torch.softmax(logits.masked_fill(others <= 0, float("-inf")), dim=1)
    return cand + torch.where(has_other, other, torch.zeros_like(other))


class Cc(Method):
    """CC (Feng et al., NeurIPS 2020): :func:`cc_loss`; no confidences."""

    has_confidences = False
    stacks = True

    def loss(self, logits, S, W):
        return cc_loss(logits, S)


class Lws(ConfidenceMethod):
    """LWS (Wen et al., ICML 2021): :func:`lws_loss` with the weights of :func:`lws_weights`,
    recomputed after each step; they start at ``1/q`` on every label (the authors' code)."""

    fresh = True

    def __init__(self, beta: float):
        self.beta = float(beta)

    def initial_confidences(self, S):
        return uniform_over_classes(S)

    def loss(self, logits, S, W):
        return lws_loss(logits, S, W, self.beta)

    def targets(self, logits, S):
        return lws_weights(logits, S)


# ----------------------------------------------------------------------------- per-label losses
def gce_per_label(logits: torch.Tensor, gce_q: float) -> torch.Tensor:
    """The generalised cross-entropy of every label, ``(1 - p_k^gce_q) / gce_q`` (Zhang &
    Sabuncu, NeurIPS 2018), as a (b, q) matrix. ``p^gce_q`` is computed as
    ``exp(gce_q log_softmax)``, which has a finite gradient where ``p`` underflows to 0."""
    return (1 - torch.exp(gce_q * torch.log_softmax(logits, dim=1))) / gce_q


def mse_per_label(logits: torch.Tensor) -> torch.Tensor:
    """The squared error of every label, ``||p - e_k||_2^2 = sum_j p_j^2 - 2 p_k + 1``, (b, q)."""
    p = torch.softmax(logits, dim=1)
    return (p * p).sum(dim=1, keepdim=True) - 2 * p + 1


def mae_per_label(logits: torch.Tensor) -> torch.Tensor:
    """The absolute error of every label, ``||p - e_k||_1 = 2 (1 - p_k)`` (the softmax sums to 1), (b, q)."""
    return 2 * (1 - torch.softmax(logits, dim=1))


# ----------------------------------------------------------------------------- risks
def _complementary_counts(S: torch.Tensor) -> torch.Tensor:
    """``s_i = q - |S_i|``, the number of labels outside each row's candidate set."""
    return S.shape[1] - S.sum(dim=1)


def exp_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """EXP (Feng et al., ICML 2020, learning with multiple complementary labels): the upper
    bound ``mean_i (q - 1) / s_i * exp(-sum_{j in S_i} p_j(x_i))`` with ``s_i = q - |S_i|``.

    A row with ``s_i = 0`` (every label a candidate) is outside the paper's setting, its
    term ``exp(-1)`` is constant: it contributes 0 (it still counts in the batch mean)."""
    s = _complementary_counts(S)
    q = S.shape[1]
    coef = torch.where(s > 0, (q - 1) / s.clamp(min=1), torch.zeros_like(s))
    mass = (torch.softmax(logits, dim=1) * S).sum(dim=1)
    return (coef * torch.exp(-mass)).mean()


def unbiased_mcl_risk(L: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """The unbiased risk estimator of Feng et al. (ICML 2020) for ``s_i`` complementary labels,
    ``mean_i [sum_{j in S_i} L_ij - (q - 1 - s_i) / s_i * sum_{j notin S_i} L_ij]``, from the
    per-label losses ``L`` (b, q). A row with ``s_i = 0`` contributes 0 (see the module)."""
    s = _complementary_counts(S)
    q = S.shape[1]
    coef = (q - 1 - s) / s.clamp(min=1)
    row = (S * L).sum(dim=1) - coef * ((1 - S) * L).sum(dim=1)
    return torch.where(s > 0, row, torch.zeros_like(row)).mean()


def mcl_gce_loss(logits: torch.Tensor, S: torch.Tensor, gce_q: float) -> torch.Tensor:
    """MCL-GCE: :func:`unbiased_mcl_risk` with the generalised cross-entropy."""
    return unbiased_mcl_risk(gce_per_label(logits, gce_q), S)


def mcl_mse_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """MCL-MSE: :func:`unbiased_mcl_risk` with the squared error."""
    return unbiased_mcl_risk(mse_per_label(logits), S)


def average_risk(L: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """The average partial-label loss (Lv et al., TPAMI 2024): ``mean_i 1/|S_i| sum_{j in S_i}
    L_ij``, every candidate weighted ``1/|S_i|`` for the whole of training."""
    return (uniform_confidence(S) * L).sum(dim=1).mean()


def abs_mae_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """ABS-MAE: :func:`average_risk` with the absolute error."""
    return average_risk(mae_per_label(logits), S)


def abs_gce_loss(logits: torch.Tensor, S: torch.Tensor, gce_q: float) -> torch.Tensor:
    """ABS-GCE: :func:`average_risk` with the generalised cross-entropy."""
    return average_risk(gce_per_label(logits, gce_q), S)


# ----------------------------------------------------------------------------- methods
class Exp(Method):
    """EXP (Feng et al., ICML 2020): :func:`exp_loss`; no confidences."""

    has_confidences = False
    stacks = True

    def loss(self, logits, S, W):
        return exp_loss(logits, S)


class MclGce(Method):
    """MCL-GCE (Feng et al., ICML 2020): :func:`mcl_gce_loss`; no confidences."""

    has_confidences = False
    stacks = True

    def __init__(self, gce_q: float):
        self.gce_q = float(gce_q)

    def loss(self, logits, S, W):
        return mcl_gce_loss(logits, S, self.gce_q)


class MclMse(Method):
    """MCL-MSE (Feng et al., ICML 2020): :func:`mcl_mse_loss`; no confidences."""

    has_confidences = False
    stacks = True

    def loss(self, logits, S, W):
        return mcl_mse_loss(logits, S)


class AbsMae(Method):
    """ABS-MAE (Lv et al., TPAMI 2024): :func:`abs_mae_loss`. Its weights are fixed (``1/|S_i|``),
    not confidences: the final model's posterior stands in, as for CC."""

    has_confidences = False
    stacks = True

    def loss(self, logits, S, W):
        return abs_mae_loss(logits, S)


class AbsGce(Method):
    """ABS-GCE (Lv et al., TPAMI 2024): :func:`abs_gce_loss`; fixed weights, no confidences."""

    has_confidences = False
    stacks = True

    def __init__(self, gce_q: float):
        self.gce_q = float(gce_q)

    def loss(self, logits, S, W):
        return abs_gce_loss(logits, S, self.gce_q)
