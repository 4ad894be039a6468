"""Noise-robust methods: learners for candidate sets that may miss the true label (noisy partial
labels); PyTorch.

**FREDIS** (Qiao et al., ICML 2023, "FREDIS: A fusion framework of refinement and disambiguation
for unreliable partial label learning"). Disambiguation: the loss (the authors' code, one view)

    lam KL(w_i || p(x_i)) + alpha (-sum_{j not in S'_i} log(1 - p_j(x_i)))      (batch means)

with ``w_i`` the posterior renormalised on the *refined* candidate set ``S'_i``, updated per batch
from the outputs the step was computed on, and the posterior ``p`` of every row kept. Refinement,
every ``update_interval`` epochs (:func:`fredis_refine`): with ``d_ij = max_k p_ik - p_ij``, the
labels with ``d_ij < theta`` join ``S'`` (at most ``change_size``, drawn at random), and the
candidates with ``d_ij > delta`` leave it (at most ``times x change_size``), ``delta`` lowered in
steps of ``dec`` until at least ``times`` times as many could leave as joined; a row left empty
keeps its previous set; then ``w = p`` renormalised on ``S'``, and after a round with fewer than
``change_size`` changes ``theta += inc``, ``delta -= dec`` (while ``theta < 0.9`` and ``delta >
0.1``). ``theta`` grows and ``delta`` shrinks, so ``S'`` moves towards the model's confident
labels, which may lie outside the given set.

**ALIM** (Xu et al., NeurIPS 2023, "ALIM: Adjusting label importance mechanism for noisy partial
label learning"), on PiCO (:class:`plcore_deep._contrastive.Pico`: its projection head, momentum
encoder, queue, prototypes and views). PiCO's pseudo-label ``argmax_{j in S} score_j`` becomes
``argmax_j ((S + lambda (1 - S)) * score)_j`` (the one-hot version, Eq. 5): a non-candidate can win
where its prototype score beats the best candidate's by a factor ``1/lambda``. ``lambda`` is set
adaptively at the start of every epoch from ``start_epoch`` on: the ``noise_rate`` quantile of the
previous epoch's margins ``max_{j in S} score_j / max_{j not in S} score_j`` (0 before). The
loss adds mixup (Zhang et al. 2018): ``l ~ Beta(mixup_alpha, mixup_alpha)``, ``l = max(l, 1 - l)``,
the batch mixed with as many training rows drawn at random, their confidences mixed alike, and
``-sum_j w_mix,j log p_j(x_mix)`` weighted by ``mixup_weight``.

**PiCO+** (Wang et al., TPAMI 2024, "PiCO+: Contrastive label disambiguation for robust partial
label learning"), on PiCO, in the order of the authors' ``train_pico_plus.py``. Each row keeps its
distance ``d_i = -q_i . mu_{c_i}`` to the prototype of its classifier's best candidate ``c_i``
(prototypes before the batch's update). At the start of every epoch from ``prot_start`` on, the
``pure_ratio`` of the training rows with the smallest ``d`` form the *reliable* set R (before,
every row is reliable). Per mini-batch:

1. pseudo-labels: the best candidate for a reliable row, the best label of all for another (the
   queue stores them with the row's reliability); only reliable rows move the prototypes;
2. from ``prot_start`` on, confidences move as PiCO's (Eq. 9, within the candidates);
3. contrastive term: the supervised contrastive loss with positives of equal pseudo-label among
   reliable anchors and reliable columns (every anchor's own key always a positive), plus
   ``ur_weight`` x the same loss over all rows and columns; from ``knn_start`` on an unreliable
   anchor's positives are its ``n_neighbors`` nearest embeddings (cosine) and the anchors' terms
   are weighted ``loss_weight`` (reliable) or ``ur_weight`` (unreliable);
4. classification term: ``cls_weight`` x PiCO's weighted cross-entropy on the reliable rows,
   ``ur_weight`` x the cross-entropy on the unreliable rows against the guessed label
   distribution ``softmax(q . mu / temperature_guess)`` (the prototype scores sharpened), and
   mixup (``l ~ Beta(4, 4)``, ``l = max(l, 1 - l)``, the batch mixed with a permutation of itself)
   on the confidences (reliable rows) and guesses (the others);
5. before ``prot_start``: PiCO's warm-up, ``-sum_j s_ij log p_j + loss_weight`` x MoCo's loss.

An empty reliable (or unreliable) part of a batch adds 0 to its mean (the authors' code would
give ``nan``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from plcore_deep._contrastive import (Pico, contrast_log_prob, moco_loss, prototype_update, ring_slots,
                                     supcon_from_log_prob)
from plcore_deep._methods import Method, candidate_posterior, log_one_minus_softmax, weighted_nll

__all__ = ["Fredis", "fredis_loss", "fredis_refine", "Alim", "alim_confidence_update", "alim_margins", "PicoPlus",
           "reliable_rows", "pico_plus_positives", "mean_over"]


# ----------------------------------------------------------------------------------- FREDIS
def fredis_loss(logits: torch.Tensor, S: torch.Tensor, W: torch.Tensor, lam: float, alpha: float) -> torch.Tensor:
    """``lam mean_i KL(w_i || p_i) + alpha mean_i -sum_{j not in S_i} log(1 - p_ij)``, ``p =
    softmax(logits)``, ``0 log 0 = 0``; ``log(1 - p)`` computed exactly where ``p`` rounds to 1."""
    log1m = log_one_minus_softmax(logits)
    supervised = -torch.where(S <= 0, log1m, torch.zeros_like(log1m)).sum(dim=1).mean()
    consistency = F.kl_div(F.log_softmax(logits, dim=1), W, reduction="batchmean")
    return lam * consistency + alpha * supervised


def _draw(mask: torch.Tensor, limit: int, generator: torch.Generator) -> torch.Tensor:
    """``mask`` with at most ``limit`` of its True entries kept, drawn uniformly at random."""
    where = mask.nonzero()
    if len(where) <= limit:
        return mask
    keep = where[torch.randperm(len(where), generator=generator)[:limit].to(where.device)]
    out = torch.zeros_like(mask)
    out[keep[:, 0], keep[:, 1]] = True
    return out


def fredis_refine(posterior: torch.Tensor, S: torch.Tensor, theta: float, delta: float, dec: float, times: int,
                  change_size: int, generator: torch.Generator):
    """One refinement round of FREDIS (module docstring) on ``S`` (n, q, 0/1) from the posterior
    ``p`` (n, q). Returns the refined ``S'`` and the lowered ``delta``.

    Joins: ``J = {d < theta, S = 0}``, all of it or ``change_size`` entries of it at random.
    Leaves: ``delta`` is lowered by the fewest steps of ``dec`` for which ``L = {d > delta, S = 1}``
    has at least ``times |J|`` entries (no further than it takes to reach every candidate that is
    not its row's largest); all of ``L`` leaves, or ``times x change_size`` entries of it at random.
    """
    d = posterior.max(dim=1, keepdim=True).values - posterior
    is_candidate = S > 0
    join = _draw((d < theta) & ~is_candidate, int(change_size), generator)
    need = int(times) * int(join.sum())
    removable = d[is_candidate & (d > 0)].sort(descending=True).values
    need = min(need, len(removable))
    if need > 0 and int(((d > delta) & is_candidate).sum()) < need:
        target = float(removable[need - 1])            # delta must fall below the need-th largest gap
        steps = math.floor((delta - target) / dec) + 1
        delta = delta - steps * dec
        while int(((d > delta) & is_candidate).sum()) < need:    # floating-point rounding
            delta -= dec
    leave = _draw((d > delta) & is_candidate, int(times) * int(change_size), generator)
    refined = torch.where(join, torch.ones_like(S), S)
    refined = torch.where(leave, torch.zeros_like(S), refined)
    empty = refined.sum(dim=1) == 0
    refined[empty] = S[empty]
    return refined, delta


class Fredis(Method):
    """FREDIS inside :func:`plcore_deep._loop.train` (see the module docstring). The refined sets
    live in ``state.S`` (the learner's ``candidates_``); ``state.n_purified`` counts the entries
    the rounds changed (joined or left)."""

    def __init__(self, theta: float, inc: float, delta: float, dec: float, times: int, change_size: int,
                 update_interval: int, lam: float, alpha: float):
        self.theta0, self.inc, self.delta0, self.dec = float(theta), float(inc), float(delta), float(dec)
        self.times, self.change_size, self.update_interval = int(times), int(change_size), int(update_interval)
        self.lam, self.alpha = float(lam), float(alpha)

    def setup(self, state) -> list:
        self.theta, self.delta = self.theta0, self.delta0
        q = state.S.shape[1]
        self.posterior = torch.full_like(state.W, 1.0 / q)
        return []

    def loss(self, logits, S, W):
        return fredis_loss(logits, S, W, self.lam, self.alpha)

    def after_step(self, state, idx, xb, sb, logits):
        logits = logits.detach()
        state.W[idx] = candidate_posterior(logits, sb)
        self.posterior[idx] = torch.softmax(logits, dim=1)

    def end_epoch(self, state) -> None:
        if (state.epoch + 1) % self.update_interval:
            return
        rows = state.train
        S_old = state.S[rows]
        S_new, self.delta = fredis_refine(self.posterior[rows], S_old, self.theta, self.delta, self.dec, self.times,
                                          self.change_size, state.generator)
        state.S[rows] = S_new
        W = self.posterior[rows] * S_new
        state.W[rows] = W / W.sum(dim=1, keepdim=True)
        changed = int((S_new != S_old).sum())
        state.n_purified += changed
        if self.theta < 0.9 and self.delta > 0.1 and changed < self.change_size:
            self.theta += self.inc
            self.delta -= self.dec


# ------------------------------------------------------------------------------------- ALIM
def alim_confidence_update(confidence: torch.Tensor, scores: torch.Tensor, S: torch.Tensor, prior: float,
                           m: float) -> torch.Tensor:
    """ALIM's Eq. (5), one-hot version, as a moving average (PiCO's Eq. 9): ``m w + (1 - m)
    onehot(argmax_j ((S + prior (1 - S)) * scores)_j)``."""
    best = ((S + prior * (1 - S)) * scores).argmax(dim=1)
    return m * confidence + (1 - m) * F.one_hot(best, S.shape[1]).to(confidence.dtype)


def alim_margins(scores: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``max_{j in S} scores_j / max_{j not in S} scores_j`` per row (``inf`` for a row whose
    candidate set is every label)."""
    inside = scores.masked_fill(S <= 0, float("-inf")).max(dim=1).values
    outside = scores.masked_fill(S > 0, float("-inf")).max(dim=1).values
    return torch.where(torch.isinf(outside), torch.full_like(inside, float("inf")), inside / outside)


class Alim(Pico):
    """ALIM inside :func:`plcore_deep._loop.train`: PiCO with the adjusted pseudo-label and the
    mixup term (see the module docstring)."""

    def __init__(self, start_epoch: int, noise_rate: float, mixup_weight: float, mixup_alpha: float, **pico):
        super().__init__(**pico)
        self.start_epoch_, self.noise_rate = int(start_epoch), float(noise_rate)
        self.mixup_weight, self.mixup_alpha = float(mixup_weight), float(mixup_alpha)

    def setup(self, state) -> list:
        extra = super().setup(state)
        self.prior, self.margins = 0.0, []
        self.beta = torch.distributions.Beta(torch.tensor(self.mixup_alpha), torch.tensor(self.mixup_alpha))
        return extra

    def start_epoch(self, state) -> None:
        super().start_epoch(state)
        if state.epoch >= self.start_epoch_ and self.margins:
            margins = torch.cat(self.margins).sort().values
            self.prior = float(margins[int(len(margins) * self.noise_rate)])
        self.margins = []

    def update_confidences(self, state, idx, scores, sb) -> None:
        state.W[idx] = alim_confidence_update(state.W[idx], scores, sb, self.prior, self.m)

    def batch_loss(self, state, idx, xb, sb):
        loss, logits = super().batch_loss(state, idx, xb, sb)
        self.margins.append(alim_margins(self.scores, sb))
        # drawn from the global generator (seeded by the loop), not the batch order's
        lam = float(self.beta.sample())
        lam = max(lam, 1 - lam)
        partner = state.train[torch.randint(len(state.train), (len(idx),)).to(state.train.device)]
        x_mix = lam * xb + (1 - lam) * state.X[partner]
        w_mix = lam * state.W[idx] + (1 - lam) * state.W[partner]
        return loss + self.mixup_weight * weighted_nll(state.model(x_mix), w_mix), logits


# ------------------------------------------------------------------------------------ PiCO+
def reliable_rows(distance: torch.Tensor, pure_ratio: float) -> torch.Tensor:
    """PiCO+'s reliable set: the ``int(n pure_ratio)`` rows of smallest ``distance`` (n,), as a
    boolean mask (ties: the first in order)."""
    reliable = torch.zeros_like(distance, dtype=torch.bool)
    reliable[torch.argsort(distance, stable=True)[:int(len(distance) * pure_ratio)]] = True
    return reliable


def pico_plus_positives(pseudo: torch.Tensor, labels: torch.Tensor, reliable: torch.Tensor,
                        reliable_columns: torch.Tensor, neighbours: torch.Tensor | None) -> torch.Tensor:
    """PiCO+'s positives (b, m) of the b anchors among the m = 2b + queue columns (queries, keys,
    queue): equal pseudo-label where anchor and column are both reliable; an unreliable anchor's
    ``neighbours`` rows (b, m, its nearest embeddings) where given; each anchor's own key always."""
    b = pseudo.shape[0]
    positive = (pseudo[:, None] == labels[None, :]) & reliable[:, None] & reliable_columns[None, :]
    if neighbours is not None:
        positive = torch.where(reliable[:, None], positive, neighbours)
    positive[torch.arange(b), b + torch.arange(b)] = True
    return positive


def mean_over(values: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``values[rows].mean()``, 0 where no row is selected."""
    return values[rows].mean() if bool(rows.any()) else values.sum() * 0.0


def _cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-sum_j t_ij log softmax(logits_i)_j`` per row (b,)."""
    return -(targets * F.log_softmax(logits, dim=1)).sum(dim=1)


class PicoPlus(Pico):
    """PiCO+ inside :func:`plcore_deep._loop.train` (see the module docstring). ``state.W`` holds
    PiCO's confidences (on the candidates); ``self.reliable`` the reliable set of every row."""

    def __init__(self, pure_ratio: float, knn_start: int, n_neighbors: int, temperature_guess: float,
                 ur_weight: float, cls_weight: float, mixup_alpha: float, **pico):
        super().__init__(**pico)
        self.pure_ratio, self.knn_start, self.n_neighbors = float(pure_ratio), int(knn_start), int(n_neighbors)
        self.temperature_guess, self.ur_weight, self.cls_weight = temperature_guess, ur_weight, cls_weight
        self.mixup_alpha = float(mixup_alpha)

    def setup(self, state) -> list:
        extra = super().setup(state)
        n, device = state.X.shape[0], state.X.device
        self.distance = torch.zeros(n, device=device)
        self.reliable = torch.ones(n, dtype=torch.bool, device=device)
        self.queue_reliable = torch.zeros(self.queue_size, dtype=torch.bool, device=device)
        self.beta = torch.distributions.Beta(torch.tensor(self.mixup_alpha), torch.tensor(self.mixup_alpha))
        return extra

    def start_epoch(self, state) -> None:
        super().start_epoch(state)
        if state.epoch >= self.prot_start:
            self.reliable[state.train] = reliable_rows(self.distance[state.train], self.pure_ratio)

    def batch_loss(self, state, idx, xb, sb):
        b = xb.shape[0]
        rel = self.reliable[idx]
        body_out = state.model[:-1](xb)
        logits = state.model[-1](body_out)
        q = F.normalize(self.head(body_out), dim=1)
        with torch.no_grad():
            p = torch.softmax(logits, dim=1)
            within = (p * sb).argmax(dim=1)
            pseudo = torch.where(rel, within, p.argmax(dim=1))
            prototype_logits = q @ self.prototypes.T
            scores = torch.softmax(prototype_logits, dim=1)
            self.distance[idx] = -(q * self.prototypes[within]).sum(dim=1)
            if bool(rel.any()):
                self.prototypes = prototype_update(self.prototypes, q[rel], pseudo[rel], self.proto_m)
            self._momentum_update()
            k = F.normalize(self.key(self.view(xb, state.generator)), dim=1)
        features = torch.cat([q, k, self.queue])
        if state.epoch < self.prot_start:
            self._enqueue(k, pseudo, rel)
            loss = weighted_nll(logits, state.W[idx]) + self.loss_weight * moco_loss(q, k, features[2 * b:].detach(),
                                                                                      self.temperature)
            return loss, logits
        self.update_confidences(state, idx, scores, sb)
        labels = torch.cat([pseudo, pseudo, self.queue_labels])
        columns = torch.cat([rel, rel, self.queue_reliable])
        knn = state.epoch >= self.knn_start
        neighbours = None
        if knn:
            with torch.no_grad():
                nearest = (q @ features.T).topk(min(self.n_neighbors, features.shape[0]), dim=1).indices
                neighbours = torch.zeros((b, features.shape[0]), dtype=torch.bool, device=xb.device)
                neighbours.scatter_(1, nearest, True)
        positive = pico_plus_positives(pseudo, labels, rel, columns, neighbours)
        weights = torch.where(rel, self.loss_weight, self.ur_weight).to(q.dtype) if knn else None
        log_prob = contrast_log_prob(q, features, self.temperature)       # one product for both terms
        contrast = (supcon_from_log_prob(log_prob, positive, weights)
                    + self.ur_weight * supcon_from_log_prob(log_prob, pseudo[:, None] == labels[None, :]))
        self._enqueue(k, pseudo, rel)
        with torch.no_grad():
            guess = torch.softmax(prototype_logits / self.temperature_guess, dim=1)
            target = torch.where(rel[:, None], state.W[idx], guess)
        ce = _cross_entropy(logits, target)
        lam = float(self.beta.sample())           # the global generator (seeded by the loop), as ALIM's
        lam = max(lam, 1 - lam)
        perm = torch.randperm(b).to(xb.device)
        mix = _cross_entropy(state.model(lam * xb + (1 - lam) * xb[perm]), lam * target + (1 - lam) * target[perm])
        loss = (mix.mean() + self.cls_weight * mean_over(ce, rel) + self.ur_weight * mean_over(ce, ~rel)
                + contrast)
        return loss, logits

    @torch.no_grad()
    def _enqueue(self, k: torch.Tensor, labels: torch.Tensor, reliable: torch.Tensor):
        slots, self.ptr = ring_slots(self.ptr, k.shape[0], self.queue_size, k.device)
        self.queue[slots] = k
        self.queue_labels[slots] = labels
        self.queue_reliable[slots] = reliable
