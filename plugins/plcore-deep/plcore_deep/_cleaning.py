"""Conformal candidate cleaning (Fuchs & Kalinke, UAI 2025): one mechanism every deep method that
re-estimates targets from its outputs can use (PyTorch).

Before each epoch the network (eval mode) scores a calibration set: ``a_i = 1 - max_{j in S_i}
p_j(x_i)``, the nonconformity of its candidate set with the model's best candidate as the
pseudo-label. During the epoch, from ``warm_up`` on, a batch's candidate sets are cleaned where the
method forms its targets: label ``j`` of row ``i`` stays if its conformal p-value

    ``pi_ij = (#{a >= 1 - (1 - eps_t) p_ij} + 1) / (n_cal + 1)``

exceeds ``alpha + beta``, with ``eps_t = 0.5^(t - warm_up + 1)`` (0.5 at the first cleaned epoch,
halving each epoch) and ``beta`` the batch's mean probability mass outside the candidate sets
(the paper's correction for the model's own mistakes); a row with nothing left keeps its set. The
cleaning is recomputed from the given sets at every batch; it is not cumulative (the paper's
Algorithm 1; the authors' ``conformal_*.py``). ``correction=False`` is the paper's ablation
(``beta = eps = 0``).

Calibration rows (the authors' rule): ``n_val = max(100, floor(0.2 n))``; the rows with one
candidate if there are at least ``n_val`` of them, else ``n_val`` random rows; when ``n / q >= 1000``
those random rows are also held out of training, otherwise every row trains (and calibration
overlaps training, as in every published run on the real-world sets).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["ConformalCleaner", "calibration_rows", "p_values", "clean"]


def calibration_rows(S: np.ndarray, rng: np.random.RandomState):
    """``(train, calibration)`` row indices of the authors' rule (module docstring), drawn with ``rng``."""
    n, q = S.shape
    n_val = max(100, int(0.2 * n))
    order = rng.permutation(n)
    singletons = rng.permutation(np.flatnonzero(S.sum(axis=1) == 1))
    train = np.sort(order if n / q < 1000 else order[:-n_val])
    calibration = singletons if len(singletons) >= n_val else order[-n_val:]
    return train, np.sort(calibration)


def p_values(sorted_scores: torch.Tensor, probabilities: torch.Tensor, eps: float) -> torch.Tensor:
    """``(#{a >= 1 - (1 - eps) p} + 1) / (n_cal + 1)`` for every entry of ``probabilities`` (b, q),
    ``sorted_scores`` the calibration nonconformities in ascending order."""
    n_cal = sorted_scores.shape[0]
    s = 1 - (1 - eps) * probabilities
    below = torch.searchsorted(sorted_scores, s.contiguous(), side="left")     # #{a < s}
    return (n_cal - below + 1).to(probabilities.dtype) / (n_cal + 1)


def clean(sorted_scores, probabilities, S, *, alpha: float, eps: float, beta: float) -> torch.Tensor:
    """The cleaned candidate mask: ``S`` and ``p-value > alpha + beta``; a row left empty keeps ``S``."""
    keep = (p_values(sorted_scores, probabilities, eps) > alpha + beta).to(S.dtype) * S
    return torch.where(keep.sum(dim=1, keepdim=True) > 0, keep, S)


class ConformalCleaner:
    """The calibration state of one fit and the cleaning rule (module docstring).

    ``as_authors_code=True`` reproduces two departures of the authors' code from their paper, so
    that parity with their stored runs can be checked: CC's ``beta`` is always 0 (its
    probabilities are masked by the candidates before ``beta`` is taken) and CAVL's cleaning
    changes nothing (its one-hot target is intersected with the cleaned set, then restored when
    that is empty). Each method asks :meth:`applies` with its own name.
    """

    def __init__(self, alpha: float = 0.05, warm_up: int = 10, correction: bool = True,
                 as_authors_code: bool = False):
        self.alpha, self.warm_up, self.correction = float(alpha), int(warm_up), bool(correction)
        self.as_authors_code = bool(as_authors_code)
        self.rows = None
        self.sorted_scores = None
        self.epoch = 0

    def setup(self, state, seed: int) -> None:
        """Choose the calibration rows; narrow the training rows when the rule holds them out."""
        S = state.S[state.train].cpu().numpy() > 0
        train, calibration = calibration_rows(S, np.random.RandomState(seed))
        rows = state.train
        state.train = rows[torch.as_tensor(train, device=rows.device)]
        self.rows = rows[torch.as_tensor(calibration, device=rows.device)]

    def on_train_begin(self, state) -> None:
        """The training loop's callback before the first epoch (:func:`plcore_deep._loop.train`)."""
        self.setup(state, state.config.seed)

    def on_epoch_begin(self, state, method) -> None:
        """The training loop's callback before every epoch: calibrated on ``method``'s
        probabilities of the network as it stands, in eval mode."""
        state.model.eval()
        self.calibrate(state, method.probabilities(state, self.rows))
        state.model.train()

    @torch.no_grad()
    def calibrate(self, state, probabilities: torch.Tensor) -> None:
        """The calibration rows' nonconformities, sorted, from the model's ``probabilities`` on them
        (the network in eval mode, before the epoch)."""
        S = state.S[self.rows]
        best = probabilities.masked_fill(S <= 0, float("-inf")).max(dim=1).values
        self.sorted_scores = torch.sort(1 - best).values.contiguous()
        self.epoch = state.epoch

    def applies(self, method: str) -> bool:
        """Whether cleaning changes ``method``'s targets (not CAVL's when reproducing the code)."""
        return not (self.as_authors_code and method == "cavl")

    @torch.no_grad()
    def __call__(self, probabilities: torch.Tensor, S: torch.Tensor, *, masked: bool = False) -> torch.Tensor:
        """The batch's cleaned candidate mask from its probabilities (b, q) and sets ``S``;
        ``masked``: the probabilities were multiplied by ``S`` before ``beta`` (the authors' CC)."""
        if self.sorted_scores is None or self.epoch < self.warm_up:
            return S
        if masked and self.as_authors_code:
            probabilities = probabilities * S
        if self.correction:
            eps = 0.5 ** (self.epoch - self.warm_up + 1)
            beta = float((probabilities * (1 - S)).sum(dim=1).mean())
        else:
            eps, beta = 0.0, 0.0
        return clean(self.sorted_scores, probabilities, S, alpha=self.alpha, eps=eps, beta=beta)
