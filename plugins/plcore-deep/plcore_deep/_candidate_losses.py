"""Losses of candidate sets: a loss defined on the whole candidate set of a row, with no or fixed
per-label weights (PyTorch).

=======  =======================================================  =============================
method   loss                                                     weights
=======  =======================================================  =============================
CC       ``-log sum_{j in S_i} p_j(x_i)``, Feng et al. 2020 Eq.   none
         (4) with uniform candidate generation
LWS      ``sum_{j in S} w_j psi(f_j) + beta sum_{j notin S}       ``p`` renormalised on the
         w_j psi(-f_j)``, Wen et al. 2021 Eq. (6)                 candidates and on the others
=======  =======================================================  =============================
"""

from __future__ import annotations

import torch

from plcore_deep._methods import ConfidenceMethod, Method, candidate_posterior, uniform_over_classes

__all__ = ["Cc", "Lws", "cc_loss", "lws_loss", "lws_weights", "sigmoid_loss"]


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
