"""Confidence-based methods: a weighted cross-entropy whose per-row label confidences are
re-estimated from the model as it trains (PyTorch).

=======  ===========================================  =========================================
method   loss                                         confidence update
=======  ===========================================  =========================================
PRODEN   ``-sum_j w_ij log p_j(x_i)``, Lv et al. 2020  Eq. (7): ``p`` renormalised on the
         Eq. (6)                                      candidates, from the step's own outputs
RC       the same risk, Feng et al. 2020 Eq. (6)      Eq. (7), from a forward pass after the step
CAVL     cross-entropy on a one-hot target            the candidate with the largest class
                                                      activation value ``f |1 - f|`` (Eq. 3)
POP      PRODEN's                                     PRODEN's, plus progressive purification
CRDPLL   ``-sum_{j not in S} log(1 - p_j(v_1))`` +    the geometric mean of ``p`` over the
         ``lam_t sum_k KL(w || p(v_k))`` over ``K``    views, renormalised on the candidates
         views ``v_k`` of the row (Wu et al. 2022)
=======  ===========================================  =========================================

CRDPLL belongs here because, like PRODEN, it keeps a confidence vector per row, re-estimated
after every step from the model on the candidates, and trains the model towards it (by a
KL term on several views rather than a weighted cross-entropy).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from plcore_deep._methods import ConfidenceMethod, Method, log_one_minus_softmax, ramp
from plcore_deep._views import make_view

__all__ = ["Proden", "Rc", "Cavl", "Pop", "Crdpll", "cavl_targets", "purify", "crdpll_loss", "crdpll_targets"]


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


class Proden(ConfidenceMethod):
    """PRODEN (Lv et al., ICML 2020): Eq. (6) with the weights of Eq. (7) taken from the outputs
    the step was computed on."""


class Rc(ConfidenceMethod):
    """RC (Feng et al., NeurIPS 2020): Eq. (6) with Eq. (7)'s weights from a forward pass after
    the step, as in the authors' code."""

    fresh = True


class Cavl(ConfidenceMethod):
    """CAVL (Zhang et al., ICLR 2022): cross-entropy on the one-hot target of :func:`cavl_targets`,
    re-chosen after each step."""

    fresh = True

    def targets(self, logits, S):
        return cavl_targets(logits, S)

    def cleaned(self, logits, S, *, masked=False):
        """In a conformal variant the one-hot target is chosen among the cleaned candidates (the
        paper); the authors' code intersects the target chosen among all candidates with the
        cleaned set and restores it when that is empty, which changes nothing
        (``as_authors_code``: the given sets)."""
        if self.cleaner is not None and self.cleaner.as_authors_code:
            return S
        return super().cleaned(logits, S, masked=masked)


class Pop(Proden):
    """POP (Xu et al., ICML 2023, Algorithm 1, with the schedule of the authors' code): PRODEN's
    loss and per-batch update; from epoch ``warm_up`` on, every ``window`` epochs, the
    confidences averaged over the last ``window`` epochs purify the candidate sets
    (:func:`purify` with ratio ``theta``): removed labels leave for good and the confidences
    restart from the averages on what is left. While ``theta < theta_max``, a round that changes
    fewer than 0.01% of the entries raises it by the factor ``1 + inc``."""

    stacks = False                   # its purification is an epoch hook on each model's own history

    def __init__(self, warm_up: int, window: int, theta: float, inc: float, theta_max: float):
        self.warm_up, self.window, self.theta, self.inc, self.theta_max = (int(warm_up), int(window), float(theta),
                                                                          float(inc), float(theta_max))
        self.record = None

    def end_epoch(self, state) -> None:
        rows = state.train
        if self.record is None:
            self.record = torch.zeros((self.window, len(rows), state.S.shape[1]), device=state.W.device)
        self.record[state.epoch % self.window] = state.W[rows]
        if state.epoch < self.warm_up or state.epoch % self.window != 0:
            return
        mean = self.record.mean(dim=0)
        mean = mean / mean.sum(dim=1, keepdim=True)
        S_old = state.S[rows]
        S_new = purify(mean, S_old, self.theta)
        W = mean * S_new
        state.S[rows] = S_new
        state.W[rows] = W / W.sum(dim=1, keepdim=True)
        n_changed = int((S_new != S_old).sum())
        state.n_purified += n_changed
        if self.theta < self.theta_max and n_changed < 1e-4 * S_old.numel():
            self.theta *= 1 + self.inc


def crdpll_loss(view_logits: list, S: torch.Tensor, W: torch.Tensor, lam: float) -> torch.Tensor:
    """CRDPLL's objective (Wu et al. 2022) on the outputs of ``K`` views of the batch:
    ``mean_i -sum_{j not in S_i} log(1 - p_j(v_1(x_i)))`` (supervised learning on the non-candidates,
    first view) ``+ lam sum_k KL(w_i || p(v_k(x_i)))`` (consistency of every view with the
    confidences ``w``; batch mean, ``0 log 0 = 0``)."""
    log1m = log_one_minus_softmax(view_logits[0])
    supervised = -torch.where(S <= 0, log1m, torch.zeros_like(log1m)).sum(dim=1).mean()
    consistency = sum(F.kl_div(F.log_softmax(logits, dim=1), W, reduction="batchmean") for logits in view_logits)
    return supervised + lam * consistency


def crdpll_targets(view_logits: list, S: torch.Tensor) -> torch.Tensor:
    """CRDPLL's closed-form confidences: ``w_j ~ prod_k p_j(v_k)^(1/K)`` on the candidates (the
    geometric mean of the views' posteriors), renormalised; computed as a softmax over the
    candidates of the mean log-posterior."""
    mean_log = torch.stack([F.log_softmax(logits, dim=1) for logits in view_logits]).mean(dim=0)
    return torch.softmax(mean_log.masked_fill(S <= 0, float("-inf")), dim=1)


class Crdpll(Method):
    """CRDPLL (Wu et al., ICML 2022): ``n_views`` views of every row of the batch
    (:func:`plcore_deep._views.make_view`), the loss :func:`crdpll_loss` with ``lam_t = lam
    min(t / (T/2), 1)`` (``t`` the steps done, ``T`` the run's steps), then the batch's
    confidences :func:`crdpll_targets` from the outputs the step was computed on."""

    def __init__(self, lam: float, n_views: int, augmentation: str, noise_scale: float):
        self.lam, self.n_views, self.augmentation, self.noise_scale = (float(lam), int(n_views), augmentation,
                                                                      float(noise_scale))

    def setup(self, state) -> list:
        self.view = make_view(self.augmentation, network=state.config.network, noise_scale=self.noise_scale)
        self.step = 0
        self.total_steps = state.n_epochs * math.ceil(len(state.train) / state.batch_size)
        return []

    def batch_loss(self, state, idx, xb, sb):
        view_logits = [state.model(self.view(xb, state.generator)) for _ in range(self.n_views)]
        lam = self.lam * ramp(self.step, self.total_steps, 0.5)
        self._views = [logits.detach() for logits in view_logits]
        return crdpll_loss(view_logits, sb, state.W[idx], lam), view_logits[0]

    def after_step(self, state, idx, xb, sb, logits):
        state.W[idx] = crdpll_targets(self._views, sb)
        self.step += 1
