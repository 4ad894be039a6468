"""Contrastive / prototype methods: PiCO (Wang et al., ICLR 2022), contrastive label disambiguation.

The classifier is the learner's network; its last hidden layer feeds a projection head
(``Linear -> ReLU -> Linear`` to ``feat_dim``, L2-normalised: the query embedding ``q``). A
momentum copy of network body and head embeds a second view of each row (the key ``k``); keys
and their pseudo-labels wait in a queue of ``queue_size``. Per mini-batch (the paper's
Algorithm 1, in the order of the authors' code):

1. pseudo-label ``c_i = argmax_{j in S_i} softmax(f(x_i))_j`` of the classifier (Eq. 7's mask);
2. prototype scores ``softmax(q_i . mu_j)`` with the class prototypes ``mu`` before this batch;
3. prototypes move: ``mu_c <- normalise(proto_m mu_c + (1 - proto_m) q_i)`` for each row with
   ``c_i = c``, row by row (Eq. 8);
4. from epoch ``prot_start`` on, confidences move towards the candidate with the best
   prototype score: ``s_i <- m s_i + (1 - m) onehot(argmax_{j in S_i} score_ij)`` (Eq. 9), with
   ``m`` going linearly from ``conf_ema[0]`` to ``conf_ema[1]`` over the epochs;
5. loss = ``-sum_j s_ij log p_j(x_i)`` (Eq. 10's classification term) + ``loss_weight`` x the
   contrastive term: the supervised contrastive loss over ``q``, the keys and the queue with
   positives of equal pseudo-label (Eq. 4-5) from ``prot_start`` on, before that MoCo's.

The second view comes from :mod:`plcore_deep._views`: the paper uses image augmentations
(random crops, flips, colour jitter, RandAugment on CIFAR); for tabular rows the field's recipe
(Fuchs & Kalinke, UAI 2025) adds Gaussian noise ``x + noise_scale N(0, I)``, PLENCH uses the
row itself.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from plcore_deep._methods import Method, weighted_nll
from plcore_deep._views import make_view

__all__ = ["Pico", "conf_ema_at", "confidence_update", "moco_loss", "prototype_update", "supcon_loss"]


def supcon_loss(q: torch.Tensor, features: torch.Tensor, labels_q: torch.Tensor, labels: torch.Tensor,
                temperature: float) -> torch.Tensor:
    """The supervised contrastive loss of PiCO's Eq. (5) (Khosla et al. 2020), anchors ``q`` (b, e)
    against ``features`` (m, e) whose first b rows are the anchors themselves (left out of their
    own sums): ``mean_i -1/|P(i)| sum_{p in P(i)} log(exp(q_i.z_p/t) / sum_{a != i} exp(q_i.z_a/t))``,
    ``P(i)`` the other rows with ``labels == labels_q[i]``."""
    b = q.shape[0]
    logits = q @ features.T / temperature
    self_mask = torch.zeros_like(logits, dtype=torch.bool)
    self_mask[torch.arange(b), torch.arange(b)] = True
    logits = logits.masked_fill(self_mask, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positive = (labels_q[:, None] == labels[None, :]) & ~self_mask
    mean_pos = (log_prob.masked_fill(~positive, 0.0)).sum(dim=1) / positive.sum(dim=1).clamp(min=1)
    return -mean_pos.mean()


def moco_loss(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, temperature: float) -> torch.Tensor:
    """MoCo's InfoNCE (He et al. 2020): each query's own key against the queue, ``-log(exp(q.k/t) /
    (exp(q.k/t) + sum_n exp(q.n/t)))``, averaged: PiCO's contrastive term before ``prot_start``."""
    logits = torch.cat([(q * k).sum(dim=1, keepdim=True), q @ queue.T], dim=1) / temperature
    return F.cross_entropy(logits, torch.zeros(q.shape[0], dtype=torch.long, device=q.device))


def prototype_update(prototypes: torch.Tensor, q: torch.Tensor, labels: torch.Tensor, m: float) -> torch.Tensor:
    """PiCO's Eq. (8) applied row by row in batch order, ``mu_c <- m mu_c + (1 - m) q_i``, then every
    prototype L2-normalised. Vectorised: a prototype whose class has ``n_c`` rows in the batch
    becomes ``m^n_c mu_c + (1 - m) sum_r m^(n_c - 1 - r) q_(r)``, ``r`` the row's rank in its class."""
    onehot = F.one_hot(labels, prototypes.shape[0]).to(q.dtype)           # (b, C)
    count = onehot.sum(dim=0)                                             # n_c
    rank = (onehot.cumsum(dim=0) * onehot).sum(dim=1) - 1                 # r of each row
    weight = (1 - m) * m ** (count[labels] - 1 - rank)                    # (b,)
    moved = prototypes * (m ** count)[:, None] + onehot.T @ (weight[:, None] * q)
    return F.normalize(moved, p=2, dim=1)


def confidence_update(confidence: torch.Tensor, scores: torch.Tensor, S: torch.Tensor, m: float) -> torch.Tensor:
    """PiCO's Eq. (9): ``m s + (1 - m) onehot(argmax_{j in S} scores_j)``."""
    best = scores.masked_fill(S <= 0, float("-inf")).argmax(dim=1)
    return m * confidence + (1 - m) * F.one_hot(best, S.shape[1]).to(confidence.dtype)


def conf_ema_at(epoch: int, n_epochs: int, start: float, end: float) -> float:
    """The confidences' moving-average weight in ``epoch``: linear from ``start`` to ``end`` (the
    authors' ``conf_ema_range`` 0.95 -> 0.8)."""
    return start + (end - start) * epoch / max(1, n_epochs)


class Pico(Method):
    """PiCO inside :func:`plcore_deep._loop.train` (see the module docstring)."""

    def __init__(self, feat_dim: int, queue_size: int, moco_m: float, proto_m: float, temperature: float,
                 loss_weight: float, prot_start: int, conf_ema: tuple, noise_scale: float,
                 augmentation: str = "auto"):
        self.feat_dim, self.queue_size, self.moco_m, self.proto_m = int(feat_dim), int(queue_size), moco_m, proto_m
        self.temperature, self.loss_weight, self.prot_start = temperature, loss_weight, int(prot_start)
        self.conf_ema, self.noise_scale = (float(conf_ema[0]), float(conf_ema[1])), noise_scale
        self.m = self.conf_ema[0]
        self.augmentation = augmentation

    def setup(self, state) -> list:
        self.view = make_view(self.augmentation, network=state.config.network if state.config else "mlp",
                              noise_scale=self.noise_scale)
        body = state.model[:-1]                 # shares the classifier's hidden layers
        width = state.model[-1].in_features
        device = state.X.device
        self.head = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, self.feat_dim)).to(device)
        self.query = nn.Sequential(body, self.head)
        self.key = copy.deepcopy(self.query)
        for p in self.key.parameters():
            p.requires_grad_(False)
        q = state.S.shape[1]
        # the authors' initial queue: Gaussian keys normalised along the queue; labels that match none
        self.queue = F.normalize(torch.randn(self.queue_size, self.feat_dim, device=device), dim=0)
        self.queue_labels = torch.full((self.queue_size,), -1, dtype=torch.long, device=device)
        self.ptr = 0
        self.prototypes = torch.zeros((q, self.feat_dim), device=device)
        return [self.head]

    def start_epoch(self, state) -> None:
        self.m = conf_ema_at(state.epoch, state.n_epochs, *self.conf_ema)
        self.key.train(True)

    @torch.no_grad()
    def _momentum_update(self):
        for pq, pk in zip(self.query.parameters(), self.key.parameters()):
            pk.mul_(self.moco_m).add_(pq.detach(), alpha=1 - self.moco_m)

    @torch.no_grad()
    def _enqueue(self, k: torch.Tensor, labels: torch.Tensor):
        slots = (self.ptr + torch.arange(k.shape[0], device=k.device)) % self.queue_size
        self.queue[slots] = k
        self.queue_labels[slots] = labels
        self.ptr = int((self.ptr + k.shape[0]) % self.queue_size)

    def batch_loss(self, state, idx, xb, sb):
        body_out = state.model[:-1](xb)
        logits = state.model[-1](body_out)
        q = F.normalize(self.head(body_out), dim=1)
        with torch.no_grad():
            pseudo = (torch.softmax(logits, dim=1) * sb).argmax(dim=1)
            scores = torch.softmax(q @ self.prototypes.T, dim=1)
            self.prototypes = prototype_update(self.prototypes, q.detach(), pseudo, self.proto_m)
            self._momentum_update()
            k = F.normalize(self.key(self.view(xb, state.generator)), dim=1)
        features = torch.cat([q, k, self.queue.clone()])
        if state.epoch >= self.prot_start:
            state.W[idx] = confidence_update(state.W[idx], scores, sb, self.m)
            labels = torch.cat([pseudo, pseudo, self.queue_labels.clone()])
            contrast = supcon_loss(q, features, pseudo, labels, self.temperature)
        else:
            contrast = moco_loss(q, k, self.queue.clone(), self.temperature)
        self._enqueue(k, pseudo)
        return weighted_nll(logits, state.W[idx]) + self.loss_weight * contrast, logits
