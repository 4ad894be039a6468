"""Losses and confidence updates of the deep partial-label learners (PyTorch).

Pure functions of a mini-batch: ``logits`` (b, q), the candidate mask ``S`` (b, q, float 0/1)
and, for the confidence-weighted losses, the rows' current confidences ``W`` (b, q). Every
loss is a mean over the batch. The tests check each one against a literal formula.

=============  ===================================================  ==========================
method         loss                                                 confidence update
=============  ===================================================  ==========================
PRODEN         ``-sum_j w_ij log p_j(x_i)``, Lv et al. 2020 Eq. (6)  Eq. (7): ``p`` renormalised
                                                                    on the candidates
RC             the same risk, Feng et al. 2020 Eq. (6)              Eq. (7), the same rule
CC             ``-log sum_{j in S_i} p_j(x_i)``, Feng et al. Eq.    none
               (4) with uniform candidate generation
LWS            ``sum_{j in S} w_j psi(f_j) + beta sum_{j notin S}   ``p`` renormalised on the
               w_j psi(-f_j)``, Wen et al. 2021 Eq. (6)             candidates and on the others
POP            PRODEN's                                             PRODEN's, plus purification
CAVL           cross-entropy on a one-hot target                    the candidate with the
                                                                    largest class activation
                                                                    value ``f |1 - f|`` (Eq. 3)
=============  ===================================================  ==========================
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["weighted_nll", "cc_loss", "lws_loss", "sigmoid_loss", "candidate_posterior",
           "lws_weights", "cavl_targets", "uniform_confidence", "uniform_over_classes", "purify"]


def uniform_confidence(S: torch.Tensor) -> torch.Tensor:
    """``1/|S_i|`` on each row's candidates, 0 elsewhere (every method's initial weights)."""
    return S / S.sum(dim=1, keepdim=True)


def uniform_over_classes(S: torch.Tensor) -> torch.Tensor:
    """``1/q`` on every label: LWS's initial weights (the authors' code), which give the
    non-candidates weight from the first step on."""
    return torch.full_like(S, 1.0 / S.shape[1])


def weighted_nll(logits: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``mean_i -sum_j W_ij log softmax(logits_i)_j`` (PRODEN Eq. 6, RC Eq. 6; with one-hot
    ``W`` the cross-entropy of CAVL)."""
    return -(W * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


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


def candidate_posterior(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``p_j(x) / sum_{k in S} p_k(x)`` on the candidates, 0 elsewhere: the confidence update of
    PRODEN (Lv et al. 2020, Eq. 7) and RC (Feng et al. 2020, Eq. 7). Computed as a softmax over
    the candidates' logits, which is the same quantity and cannot underflow to 0/0."""
    return torch.softmax(logits.masked_fill(S <= 0, float("-inf")), dim=1)


def lws_weights(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """LWS's weights (Wen et al. 2021, Section 4.2): the model's ``p`` renormalised over the
    candidates on the candidates, plus ``p`` renormalised over the non-candidates on those
    (each part sums to 1; a row whose candidates are every label has no second part)."""
    cand = candidate_posterior(logits, S)
    others = 1 - S
    has_other = others.sum(dim=1, keepdim=True) > 0
    other = torch.softmax(logits.masked_fill(others <= 0, float("-inf")), dim=1)
    return cand + torch.where(has_other, other, torch.zeros_like(other))


def cavl_targets(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """CAVL (Zhang et al. 2022, Eq. 3): one-hot on the candidate with the largest class activation
    value ``cav_j = f_j |1 - f_j|`` of the raw outputs ``f``; ties to the lowest index. The
    argmax runs over the candidates only (the authors' code multiplies by the mask, so a row
    whose candidates all have a negative value would pick a non-candidate)."""
    cav = (logits * (1 - logits).abs()).masked_fill(S <= 0, float("-inf"))
    return F.one_hot(cav.argmax(dim=1), S.shape[1]).to(logits.dtype)


def purify(confidence: torch.Tensor, S: torch.Tensor, theta: float) -> torch.Tensor:
    """POP's purification (Xu et al. 2023, Algorithm 1, as in the authors' code): remove every
    candidate ``j`` whose confidence is below ``theta`` times the row's largest,
    ``w_j / max_k w_k < theta`` -- the relative gap ``(max - w_j) / max`` exceeds ``1 - theta``.
    The most confident candidate always stays, so no set becomes empty. Returns the new mask."""
    top = confidence.max(dim=1, keepdim=True).values
    keep = (S > 0) & (confidence >= theta * top)
    return keep.to(S.dtype)
