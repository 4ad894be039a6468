"""Complementary-label losses run as partial-label learners (PyTorch), as PLENCH runs them.

Every non-candidate label of a row is one complementary example of that row: the pairs
``(i, k)`` with ``S_ik = 0`` (the mask ``M = 1 - S``). A per-pair loss ``L(f(x_i), k)`` is
averaged over the pairs of the batch, so a row with many non-candidates weighs more than one
with few, and a row whose candidate set is every label contributes nothing. A batch with no
pair at all has loss 0 with a zero gradient (never NaN; the optimiser still applies its
momentum and weight decay). ``p = softmax(f)``, ``q`` classes, ``pi`` the complementary-class
prior (the share of each label among the training rows' non-candidates).

=========  ==========================================================  ===========================
method     loss (per pair ``(x, k)``, averaged over the pairs)         paper
=========  ==========================================================  ===========================
PC         ``(q-1) sum_{y != k} l(f_y - f_k) - q(q-1)/2 + (q-1)``,      Ishida et al., NeurIPS
           sigmoid loss ``l(z) = 1/(1+e^z)``                            2017, Theorem 1
Forward    ``-log((T^T p)_k)``, uniform ``T``: ``-log((1-p_k)/(q-1))``  Yu et al., ECCV 2018
NN         ``sum_j max(R_j, -beta)`` with the partial risks ``R_j``     Ishida et al., ICML 2019,
           of the cross-entropy (batch level, :func:`partial_risks`)   Theorem 1, Section 4
GA         ``sum_j R_j``; when some ``R_j < 0``, a step of gradient     Ishida et al., ICML 2019,
           ascent on ``sum_j min(R_j, 0)``                              Algorithm 1
SCL-EXP    ``exp(p_k)``                                                 Chou et al., ICML 2020
SCL-NL     ``-log(1 - p_k)``                                            Chou et al., ICML 2020
L-W        ``-(1 + (1-p_k)/(q-1)) log softmax(1 - p)_k``                Gao & Zhang, ICML 2021
OP-W       ``-(p_k softmax(1/(softmax(-f) + 1e-18))_k + 1e-6)``         Liu et al., AISTATS 2023
           ``x log softmax(-f)_k``
=========  ==========================================================  ===========================

None of these methods keeps confidences: ``confidences_`` is the final model's posterior on
the candidates (as for CC).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from plcore_deep._methods import Method, log_one_minus_softmax

__all__ = ["Pc", "Forward", "Nn", "Ga", "SclExp", "SclNl", "Lw", "Opw", "complementary_prior", "pair_mean",
           "pc_loss", "forward_loss", "partial_risks", "nn_loss", "ga_objective", "scl_exp_loss", "scl_nl_loss",
           "lw_loss", "opw_loss"]


def pair_mean(per_pair: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """The mean of ``per_pair`` (b, q: the loss of row ``i`` with complementary label ``k``)
    over the pairs ``S_ik = 0``; 0 with a zero gradient when the batch has no pair."""
    M = S <= 0
    total = torch.where(M, per_pair, torch.zeros_like(per_pair)).sum()
    return total / M.sum().clamp(min=1)


def complementary_prior(S: torch.Tensor) -> torch.Tensor:
    """The complementary-class prior ``pi`` (q,): each label's share of all the non-candidate
    entries of ``S`` (PLENCH's estimate from the training candidate sets); zeros when every
    row's candidate set is every label."""
    counts = (S <= 0).to(S.dtype).sum(dim=0)
    return counts / counts.sum().clamp(min=1)


def pc_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """PC (Ishida et al. 2017, Theorem 1 with the pairwise-comparison loss and the sigmoid loss
    ``l(z) = 1/(1+e^z)``): ``(q-1) mean_pairs sum_{y != k} l(f_y - f_k) - q(q-1)/2 + (q-1)``."""
    q = logits.shape[1]
    # l(f_y - f_k) = sigmoid(f_k - f_y); the term y = k (l(0) = 1/2) is left out, as in the paper
    margins = torch.sigmoid(logits.unsqueeze(2) - logits.unsqueeze(1))       # [i, k, y] = sigmoid(f_k - f_y)
    per_pair = margins.sum(dim=2) - 0.5
    if not bool((S <= 0).any()):
        return pair_mean(per_pair, S)
    return (q - 1) * pair_mean(per_pair, S) - q * (q - 1) / 2 + (q - 1)


def forward_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """Forward correction (Yu et al. 2018) with the uniform transition matrix ``T_jk = 1/(q-1)``
    (``j != k``): ``mean_pairs -log((1 - p_k)/(q-1))``."""
    q = logits.shape[1]
    return pair_mean(math.log(max(q - 1, 1)) - log_one_minus_softmax(logits), S)


def partial_risks(logits: torch.Tensor, S: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """The partial risks ``R_j`` (q,) of Ishida et al. (2019) with the cross-entropy
    ``l(f(x), j) = -log p_j(x)``: ``R_j = sum_k pi_k E_k[l(f(x), j)] - (q-1) pi_j E_j[l(f(x), j)]``,
    ``E_k`` the mean over the batch's pairs with complementary label ``k`` (a label with no
    pair in the batch contributes no term). ``sum_j R_j`` is Theorem 1's unbiased risk; each
    ``R_j`` estimates ``pi^true_j E[l(f(x), j) | y = j] >= 0``."""
    q = logits.shape[1]
    M = (S <= 0).to(logits.dtype)
    neglog = -F.log_softmax(logits, dim=1)
    E = (M.T @ neglog) / M.sum(dim=0).clamp(min=1).unsqueeze(1)        # [k, j] = E_k[l(f(x), j)]
    return (prior.unsqueeze(1) * E).sum(dim=0) - (q - 1) * prior * torch.diagonal(E)


def nn_loss(logits: torch.Tensor, S: torch.Tensor, prior: torch.Tensor, beta: float) -> torch.Tensor:
    """NN, the non-negative correction (Ishida et al. 2019, Section 4): ``sum_j max(R_j, -beta)``."""
    return torch.clamp(partial_risks(logits, S, prior), min=-beta).sum()


def ga_objective(logits: torch.Tensor, S: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """GA (Ishida et al. 2019, Algorithm 1 with ``beta = 0``): a tensor whose value is the risk
    ``sum_j R_j`` and whose gradient is the step's: that of ``sum_j R_j`` when every ``R_j >= 0``,
    else that of ``-sum_j min(R_j, 0)`` (gradient ascent on the negative partial risks)."""
    R = partial_risks(logits, S, prior)
    risk = R.sum()
    if bool((R < 0).any()):
        objective = -torch.clamp(R, max=0).sum()
        return objective + (risk - objective).detach()
    return risk


def scl_exp_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """SCL-EXP (Chou et al. 2020): ``mean_pairs exp(p_k)``."""
    return pair_mean(torch.exp(torch.softmax(logits, dim=1)), S)


def scl_nl_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """SCL-NL (Chou et al. 2020): ``mean_pairs -log(1 - p_k)``."""
    return pair_mean(-log_one_minus_softmax(logits), S)


def lw_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """L-W (Gao & Zhang 2021), the loss as PLENCH's code computes it: with
    ``u = 1 - p`` (which sums to ``q-1``), ``mean_pairs -(1 + u_k/(q-1)) log softmax(u)_k``: the
    unweighted term plus the weighted one, the weight ``u_k/(q-1)`` not detached."""
    q = logits.shape[1]
    u = 1 - torch.softmax(logits, dim=1)
    return pair_mean(-(1 + u / (q - 1)) * F.log_softmax(u, dim=1), S)


def opw_loss(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """OP-W (Liu et al. 2023), the loss as PLENCH's code computes it: with
    ``c = softmax(-f)``, ``mean_pairs -w_k log c_k``, ``w = p * softmax(1/(c + 1e-18)) + 1e-6``
    (not detached); ``log c`` computed as ``log_softmax(-f)``."""
    c = torch.softmax(-logits, dim=1)
    w = torch.softmax(logits, dim=1) * torch.softmax(1 / (c + 1e-18), dim=1) + 1e-6
    return pair_mean(-w * F.log_softmax(-logits, dim=1), S)


class _Complementary(Method):
    """A loss of the complementary pairs alone (``_loss(logits, S)``); no confidences."""

    has_confidences = False
    stacks = True
    _loss = None

    def loss(self, logits, S, W):
        return type(self)._loss(logits, S)


class Pc(_Complementary):
    """PC (Ishida et al., NeurIPS 2017): :func:`pc_loss`."""

    _loss = staticmethod(pc_loss)


class Forward(_Complementary):
    """Forward (Yu et al., ECCV 2018): :func:`forward_loss`."""

    _loss = staticmethod(forward_loss)


class SclExp(_Complementary):
    """SCL-EXP (Chou et al., ICML 2020): :func:`scl_exp_loss`."""

    _loss = staticmethod(scl_exp_loss)


class SclNl(_Complementary):
    """SCL-NL (Chou et al., ICML 2020): :func:`scl_nl_loss`."""

    _loss = staticmethod(scl_nl_loss)


class Lw(_Complementary):
    """L-W (Gao & Zhang, ICML 2021): :func:`lw_loss`."""

    _loss = staticmethod(lw_loss)


class Opw(_Complementary):
    """OP-W (Liu et al., AISTATS 2023): :func:`opw_loss`."""

    _loss = staticmethod(opw_loss)


class _PriorMethod(Method):
    """A method of the partial risks: the complementary-class prior from the training rows'
    candidate sets (:func:`complementary_prior`), computed once in :meth:`setup`."""

    has_confidences = False
    prior = None

    def setup(self, state):
        self.prior = complementary_prior(state.S[state.train])
        return []


class Nn(_PriorMethod):
    """NN (Ishida et al., ICML 2019): :func:`nn_loss`."""

    stacks = True

    def __init__(self, beta: float = 0.0):
        self.beta = float(beta)

    def loss(self, logits, S, W):
        return nn_loss(logits, S, self.prior, self.beta)


class Ga(_PriorMethod):
    """GA (Ishida et al., ICML 2019): :func:`ga_objective`. It does not stack: the objective
    branches on the batch's values (gradient ascent where a partial risk is negative), which
    ``vmap`` cannot batch."""

    def loss(self, logits, S, W):
        return ga_objective(logits, S, self.prior)
