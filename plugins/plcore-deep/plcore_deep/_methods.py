"""What every method shares: the :class:`Method` hooks the loop calls, and the confidence-weighted
loss and candidate posterior most methods are built from (PyTorch).

Pure functions of a mini-batch: ``logits`` (b, q), the candidate mask ``S`` (b, q, float 0/1)
and the rows' current confidences ``W`` (b, q). Every loss is a mean over the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["Method", "ConfidenceMethod", "uniform_confidence", "uniform_over_classes", "weighted_nll",
           "candidate_posterior", "log_one_minus_softmax", "ramp"]


def uniform_confidence(S: torch.Tensor) -> torch.Tensor:
    """``1/|S_i|`` on each row's candidates, 0 elsewhere (most methods' initial weights)."""
    return S / S.sum(dim=1, keepdim=True)


def uniform_over_classes(S: torch.Tensor) -> torch.Tensor:
    """``1/q`` on every label: LWS's initial weights (the authors' code), which give the
    non-candidates weight from the first step on."""
    return torch.full_like(S, 1.0 / S.shape[1])


def weighted_nll(logits: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``mean_i -sum_j W_ij log softmax(logits_i)_j`` (PRODEN Eq. 6, RC Eq. 6; with one-hot
    ``W`` the cross-entropy of CAVL)."""
    return -(W * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


def candidate_posterior(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``p_j(x) / sum_{k in S} p_k(x)`` on the candidates, 0 elsewhere: the confidence update of
    PRODEN (Lv et al. 2020, Eq. 7) and RC (Feng et al. 2020, Eq. 7). Computed as a softmax over
    the candidates' logits, which is the same quantity and cannot underflow to 0/0."""
    return torch.softmax(logits.masked_fill(S <= 0, float("-inf")), dim=1)


def log_one_minus_softmax(logits: torch.Tensor) -> torch.Tensor:
    """``log(1 - p_k)`` for every ``k`` (b, q), ``p = softmax(logits)``, as ``logsumexp_{j != k} f_j -
    logsumexp_j f_j``: exact where ``p_k`` rounds to 1. A single class has ``log 0 = -inf``."""
    q = logits.shape[1]
    others = logits.unsqueeze(1).expand(-1, q, q).masked_fill(
        torch.eye(q, dtype=torch.bool, device=logits.device), float("-inf"))
    return torch.logsumexp(others, dim=2) - torch.logsumexp(logits, dim=1, keepdim=True)


def ramp(step: int, total_steps: int, fraction: float) -> float:
    """``min(step / (fraction * total_steps), 1)``: a weight that grows linearly over the first
    ``fraction`` of the run's optimiser steps (IDGP: 0.2, CRDPLL: 0.5, as PLENCH)."""
    return min(step / max(fraction * total_steps, 1e-12), 1.0)


class Method:
    """A deep partial-label method: the hooks :func:`plcore_deep._loop.train` calls.

    A subclass sets ``has_confidences`` (whether ``state.W`` holds the method's confidences on
    the candidates at the end, or the final model's posterior stands in, as for CC) and
    overrides what it needs. ``state`` is the loop's :class:`~plcore_deep._loop.State`.
    """

    has_confidences = True
    #: whether many configurations of the method train together (:mod:`plcore_deep._stacked`):
    #: its step is ``loss(logits, S, W)`` on the batch and, for a :class:`ConfidenceMethod`,
    #: ``targets(logits, S)``, pure functions vmapped over the models; no module of its own, no
    #: sampling, no hook overridden but :meth:`setup` (returning no module)
    stacks = False
    #: the conformal candidate cleaner of a conformal variant
    #: (:class:`plcore_deep._cleaning.ConformalCleaner`, set by the learner); None: the given sets
    cleaner = None

    def cleaned(self, logits: torch.Tensor, S: torch.Tensor, *, masked: bool = False) -> torch.Tensor:
        """The batch's candidate sets as the method's targets see them: ``S``, or with a cleaner the
        sets cleaned by the conformal p-values of ``softmax(logits)`` (``masked``: see the cleaner)."""
        if self.cleaner is None:
            return S
        return self.cleaner(torch.softmax(logits.detach(), dim=1), S, masked=masked)

    def probabilities(self, state, rows: torch.Tensor) -> torch.Tensor:
        """The model's class probabilities on ``rows`` (the network in eval mode): what the
        cleaner calibrates on."""
        return torch.softmax(state.logits_of(rows), dim=1)

    def initial_confidences(self, S: torch.Tensor) -> torch.Tensor:
        """The confidences ``W`` before the first step (uniform on the candidates)."""
        return uniform_confidence(S)

    def setup(self, state) -> list:
        """Called once before training; returns extra modules whose parameters are trained with
        the network's (PiCO's projection head, VALEN's encoder and decoder)."""
        return []

    def start_epoch(self, state) -> None:
        return None

    def batch_loss(self, state, idx: torch.Tensor, xb: torch.Tensor, sb: torch.Tensor):
        """The mini-batch's loss and the network's outputs it was computed from; in a conformal
        variant the loss sees the cleaned sets (CC's: the authors' code takes ``beta`` from
        probabilities masked by the sets, hence ``masked``)."""
        logits = state.model(xb)
        return self.loss(logits, self.cleaned(logits, sb, masked=True), state.W[idx]), logits

    def loss(self, logits: torch.Tensor, S: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def after_step(self, state, idx: torch.Tensor, xb: torch.Tensor, sb: torch.Tensor, logits: torch.Tensor) -> None:
        """After the optimiser step: a confidence update (``logits`` are the outputs the loss was
        computed on, before the step)."""
        return None

    def end_epoch(self, state) -> None:
        return None


class ConfidenceMethod(Method):
    """The confidence-weighted cross-entropy ``-sum_j w_ij log p_j(x_i)`` with the batch's
    confidences recomputed by :meth:`targets` after every step: from the outputs the loss was
    computed on (``fresh = False``, PRODEN) or from a forward pass after the step (``fresh =
    True``, RC, CAVL, LWS)."""

    fresh = False
    stacks = True

    def loss(self, logits, S, W):
        return weighted_nll(logits, W)

    def targets(self, logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
        return candidate_posterior(logits, S)

    def after_step(self, state, idx, xb, sb, logits):
        if self.fresh:
            with torch.no_grad():
                logits = state.model(xb)
        logits = logits.detach()
        state.W[idx] = self.targets(logits, self.cleaned(logits, sb))
