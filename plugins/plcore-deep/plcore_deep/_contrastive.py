"""Contrastive / prototype methods: PiCO (Wang et al., ICLR 2022), contrastive label disambiguation;
ABLE (Xia et al., IJCAI 2022), ambiguity-induced contrastive learning; DIRK (Wu et al., AAAI 2024),
distilling reliable knowledge from a momentum teacher. The three share the projection head
(:func:`projection_head`), the momentum update (:func:`momentum_update`), MoCo's queue of keys
(:func:`random_keys`, :func:`ring_slots`) and the second view of a row (:mod:`plcore_deep._views`).

PiCO. The classifier is the learner's network; its last hidden layer feeds a projection head
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

ABLE and DIRK: see :class:`Able` and :class:`Dirk`.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from plcore_deep._methods import ConfidenceMethod, Method, candidate_posterior, weighted_nll
from plcore_deep._views import make_view

__all__ = ["Pico", "Able", "Dirk", "conf_ema_at", "confidence_update", "moco_loss", "prototype_update",
           "supcon_loss", "masked_supcon_loss", "contrast_log_prob", "anchor_logits", "supcon_from_log_prob",
           "weighted_contrastive_loss", "able_weights", "rectified_confidence",
           "dirk_weights", "projection_head", "random_keys", "ring_slots", "momentum_update"]


def projection_head(width: int, feat_dim: int, device) -> nn.Sequential:
    """The projection head of PiCO, ABLE and DIRK on the network's last hidden layer (``width``
    units): ``Linear(width, width) -> ReLU -> Linear(width, feat_dim)``; its output is L2-normalised
    by the caller."""
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, feat_dim)).to(device)


def random_keys(size: int, feat_dim: int, device) -> torch.Tensor:
    """MoCo's initial queue, as the authors of PiCO and DIRK start it: Gaussian keys normalised
    along the queue (``dim=0``)."""
    return F.normalize(torch.randn(size, feat_dim, device=device), dim=0)


def ring_slots(ptr: int, n: int, size: int, device) -> tuple:
    """The queue slots of ``n`` new keys written at ``ptr`` of a ring of ``size`` (wrapping around),
    and the next ``ptr``."""
    return (ptr + torch.arange(n, device=device)) % size, int((ptr + n) % size)


@torch.no_grad()
def momentum_update(source, target, m: float) -> None:
    """``theta_target <- m theta_target + (1 - m) theta_source``, parameter by parameter (MoCo's key
    encoder, DIRK's teacher)."""
    for ps, pt in zip(source, target):
        pt.mul_(m).add_(ps.detach(), alpha=1 - m)


def supcon_loss(q: torch.Tensor, features: torch.Tensor, labels_q: torch.Tensor, labels: torch.Tensor,
                temperature: float) -> torch.Tensor:
    """The supervised contrastive loss of PiCO's Eq. (5) (Khosla et al. 2020), anchors ``q`` (b, e)
    against ``features`` (m, e) whose first b rows are the anchors themselves (left out of their
    own sums) and whose other rows take no gradient (:func:`contrast_log_prob`): ``mean_i -1/|P(i)| sum_{p in P(i)} log(exp(q_i.z_p/t) / sum_{a != i} exp(q_i.z_a/t))``,
    ``P(i)`` the other rows with ``labels == labels_q[i]``."""
    return masked_supcon_loss(q, features, labels_q[:, None] == labels[None, :], temperature)


def masked_supcon_loss(q: torch.Tensor, features: torch.Tensor, positive: torch.Tensor, temperature: float,
                       weights: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`supcon_loss` with the positives given as a mask (b, m) (the diagonal is ignored; an
    anchor without a positive adds 0) and, with ``weights`` (b,), the anchors' terms weighted:
    ``mean_i w_i l_i`` (PiCO+'s reliable and kNN positives)."""
    return supcon_from_log_prob(contrast_log_prob(q, features, temperature), positive, weights)


def contrast_log_prob(q: torch.Tensor, features: torch.Tensor, temperature: float) -> torch.Tensor:
    """``log(exp(q_i.z_a/t) / sum_{c != i} exp(q_i.z_c/t))`` (b, m), ``-inf`` at ``a = i``: what
    every supervised contrastive loss over the same anchors and features shares. The rows of
    ``features`` after its first b (the anchors) are constants: no gradient reaches them
    (:func:`anchor_logits`), as none may in the losses built on it."""
    logits = anchor_logits(q, features, temperature)
    return logits - torch.logsumexp(logits, dim=1, keepdim=True)


def anchor_logits(anchors: torch.Tensor, features: torch.Tensor, temperature: float) -> torch.Tensor:
    """``a_i . z_k / t`` (b, m) for anchors ``a`` (b, e) against ``features`` (m, e) whose first b rows
    are the anchors themselves, ``-inf`` at ``k = i``. The rows after the first b (a second view's
    keys, a queue) take no gradient (:class:`_AnchorProduct`): a caller whose later rows need one
    (a second view of the anchors through the network) must not use it."""
    rest = features.shape[0] > anchors.shape[0]          # ABLE's features are its anchors, nothing after
    product = _AnchorProduct.apply(anchors, features) if rest else anchors @ features.T
    return (product / temperature).fill_diagonal_(float("-inf"))


class _AnchorProduct(torch.autograd.Function):
    """``anchors @ features.T`` whose backward computes the gradient of ``features``' first b rows
    only (the anchors' own, ``b = len(anchors)``) and leaves the rest 0: the keys and the queue after
    them are constants, and PyTorch's product would compute a gradient for all ``m`` rows (for
    PiCO's 8,192 queued keys, a third of a step's products; issue 65). The same products as
    PyTorch's ``mm`` backward, restricted to those rows: the same numbers to the last bit."""

    @staticmethod
    def forward(ctx, anchors, features):
        ctx.save_for_backward(anchors, features)
        return anchors @ features.T

    @staticmethod
    def backward(ctx, grad):
        anchors, features = ctx.saved_tensors
        b = anchors.shape[0]
        grad_anchors = grad.mm(features) if ctx.needs_input_grad[0] else None
        grad_features = None
        if ctx.needs_input_grad[1]:
            grad_features = torch.zeros_like(features)
            grad_features[:b] = grad[:, :b].t().mm(anchors)      # as PyTorch's mm backward for features.T
        return grad_anchors, grad_features


def supcon_from_log_prob(log_prob: torch.Tensor, positive: torch.Tensor,
                         weights: torch.Tensor | None = None) -> torch.Tensor:
    """``-mean_i w_i mean_{p in P(i)} log_prob_ip`` over the positives ``P(i)`` (the diagonal left
    out; an anchor without a positive adds 0)."""
    b = log_prob.shape[0]
    positive = positive.clone()
    positive[torch.arange(b), torch.arange(b)] = False
    mean_pos = torch.where(positive, log_prob, 0.0).sum(dim=1) / positive.sum(dim=1).clamp(min=1)
    return -(mean_pos if weights is None else weights * mean_pos).mean()


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
        self.head = projection_head(width, self.feat_dim, device)
        self.query = nn.Sequential(body, self.head)
        self.key = copy.deepcopy(self.query)
        for p in self.key.parameters():
            p.requires_grad_(False)
        q = state.S.shape[1]
        # the authors' initial queue: Gaussian keys normalised along the queue; labels that match none
        self.queue = random_keys(self.queue_size, self.feat_dim, device)
        self.queue_labels = torch.full((self.queue_size,), -1, dtype=torch.long, device=device)
        self.ptr = 0
        self.prototypes = torch.zeros((q, self.feat_dim), device=device)
        return [self.head]

    def start_epoch(self, state) -> None:
        self.m = conf_ema_at(state.epoch, state.n_epochs, *self.conf_ema)
        self.key.train(True)

    @torch.no_grad()
    def _momentum_update(self):
        momentum_update(self.query.parameters(), self.key.parameters(), self.moco_m)

    @torch.no_grad()
    def _enqueue(self, k: torch.Tensor, labels: torch.Tensor):
        slots, self.ptr = ring_slots(self.ptr, k.shape[0], self.queue_size, k.device)
        self.queue[slots] = k
        self.queue_labels[slots] = labels

    def update_confidences(self, state, idx: torch.Tensor, scores: torch.Tensor, sb: torch.Tensor) -> None:
        """Eq. (9) on the batch's rows from the prototype ``scores`` (ALIM changes the target)."""
        state.W[idx] = confidence_update(state.W[idx], scores, sb, self.m)

    def batch_loss(self, state, idx, xb, sb):
        """Steps 1-5 above; ``self.scores`` keeps the batch's prototype scores for a subclass."""
        body_out = state.model[:-1](xb)
        logits = state.model[-1](body_out)
        q = F.normalize(self.head(body_out), dim=1)
        with torch.no_grad():
            pseudo = (torch.softmax(logits, dim=1) * self.cleaned(logits, sb)).argmax(dim=1)
            scores = torch.softmax(q @ self.prototypes.T, dim=1)
            self.prototypes = prototype_update(self.prototypes, q.detach(), pseudo, self.proto_m)
            self._momentum_update()
            k = F.normalize(self.key(self.view(xb, state.generator)), dim=1)
        self.scores = scores
        features = torch.cat([q, k, self.queue])
        if state.epoch >= self.prot_start:
            self.update_confidences(state, idx, scores, sb)
            labels = torch.cat([pseudo, pseudo, self.queue_labels])
            contrast = supcon_loss(q, features, pseudo, labels, self.temperature)
        else:
            contrast = moco_loss(q, k, features[2 * q.shape[0]:].detach(), self.temperature)
        self._enqueue(k, pseudo)
        return weighted_nll(logits, state.W[idx]) + self.loss_weight * contrast, logits


def weighted_contrastive_loss(anchors: torch.Tensor, features: torch.Tensor, weights: torch.Tensor,
                              temperature: float, base_temperature: float = 0.07) -> torch.Tensor:
    """The supervised contrastive loss with weighted positives, ABLE's and DIRK's: anchors ``a``
    (b, e) against ``features`` (m, e) whose first b rows are the anchors themselves (left out of
    their own sums; the other rows take no gradient, :func:`contrast_log_prob`), ``weights`` (b, m) on the positives (0 elsewhere; the diagonal is ignored):
    ``(t / t_base) mean_i -sum_{k != i} w_ik log(exp(a_i.z_k/t) / sum_{c != i} exp(a_i.z_c/t))``.
    ``t_base = 0.07`` is the constant of both authors' code (SupCon's)."""
    log_prob = contrast_log_prob(anchors, features, temperature)
    log_prob = log_prob.diagonal_scatter(torch.zeros(anchors.shape[0], dtype=log_prob.dtype, device=log_prob.device))
    return -(temperature / base_temperature) * (weights * log_prob).sum(dim=1).mean()


def able_weights(W: torch.Tensor, S: torch.Tensor, pseudo: torch.Tensor) -> torch.Tensor:
    """ABLE's ambiguity-induced positives of one view (b, b): for anchor ``i`` and row ``k``,
    ``w_ik = s_ij / n_j`` with ``j = c_k`` the pseudo-label of row ``k`` if ``j`` is a candidate of
    ``i`` (else 0), ``s_ij`` the anchor's confidence and ``n_j`` the number of the batch's rows
    predicted ``j``: each candidate's group of rows currently predicted as it, weighted by the
    candidate's confidence and averaged within the group."""
    onehot = F.one_hot(pseudo, S.shape[1]).to(W.dtype)                    # (b, q)
    per_class = (W * S) / onehot.sum(dim=0).clamp(min=1)                  # s_ij / n_j
    return per_class @ onehot.T


def rectified_confidence(logits: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """DIRK's rectification of the teacher's posterior ``p = softmax(logits)``: its candidate and
    non-candidate parts, each renormalised (``u = p|S / P_S``, ``v = p|not S / (1 - P_S)``,
    ``P_S = sum_{j in S} p_j``), mixed as ``a u + (1 - a) v`` with
    ``a = max(v) / (max(v) + P_S min_{j in S} u_j)`` (``a = 1`` where ``max(v) = 0``: every label a
    candidate, or no mass outside the set). The least candidate's confidence is then ``1 / P_S``
    times the largest non-candidate's, never below it, and the candidates keep ``p``'s ratios.
    The authors' code writes ``a`` with ``M = 1 / P_S`` as ``M max(v) / (M max(v) + min u)``, the
    same number."""
    part = candidate_posterior(logits, S)
    outside = S <= 0
    has_outside = outside.any(dim=1, keepdim=True)
    comp = torch.softmax(logits.masked_fill(~outside, float("-inf")), dim=1)
    comp = torch.where(has_outside, comp, torch.zeros_like(comp))
    p_s = torch.exp(torch.logsumexp(logits.masked_fill(outside, float("-inf")), dim=1)
                    - torch.logsumexp(logits, dim=1))
    comp_max = comp.max(dim=1).values
    part_min = part.masked_fill(outside, float("inf")).min(dim=1).values
    a = torch.where(comp_max > 0, comp_max / (comp_max + p_s * part_min), torch.ones_like(comp_max))
    return a[:, None] * part + (1 - a)[:, None] * comp


def dirk_weights(S_anchor: torch.Tensor, dist_anchor: torch.Tensor, partial: torch.Tensor, dist: torch.Tensor,
                 dist_temperature: float) -> torch.Tensor:
    """DIRK's weights on the positives (b, m) of the anchors (the first b of the m rows): ``k != i``
    is a positive of ``i`` if their candidate sets meet and their rectified confidences have the
    same argmax; ``w_i = softmax`` over the positives of the cosine similarity of the confidences
    divided by ``dist_temperature``."""
    b = S_anchor.shape[0]
    positive = (S_anchor @ partial.T > 0) & (dist_anchor.argmax(dim=1)[:, None] == dist.argmax(dim=1)[None, :])
    positive[torch.arange(b), torch.arange(b)] = False
    similarity = F.normalize(dist_anchor, dim=1) @ F.normalize(dist, dim=1).T / dist_temperature
    weights = torch.softmax(similarity.masked_fill(~positive, float("-inf")), dim=1)
    return torch.nan_to_num(weights, nan=0.0)            # an anchor without a positive adds nothing


class Able(ConfidenceMethod):
    """ABLE inside :func:`plcore_deep._loop.train`.

    Per mini-batch, the network (with a projection head of ``feat_dim`` on its last hidden
    layer, L2-normalised ``z``) sees the rows and their second view (``augmentation``); with
    ``c_k = argmax_{j in S_k} p_j(x_k)`` the pseudo-label of row ``k`` (its first view) and ``s``
    the confidences, the loss is ``-sum_j s_ij log p_j(x_i)`` (the first view) + ``loss_weight`` x
    :func:`weighted_contrastive_loss` over the 2b embeddings of both views, each one an anchor, with
    :func:`able_weights` on both views' copies of the rows (the ambiguity-induced positives).
    After the step the confidences become the posterior renormalised on the candidates,
    ``s_ij = p_j(x_i) / sum_{k in S_i} p_k(x_i)``, from the outputs the loss was computed on.
    """

    fresh = False
    stacks = False                   # a projection head of its own

    def __init__(self, feat_dim: int, temperature: float, loss_weight: float, noise_scale: float,
                 augmentation: str = "auto"):
        self.feat_dim, self.temperature, self.loss_weight = int(feat_dim), temperature, loss_weight
        self.noise_scale, self.augmentation = noise_scale, augmentation

    def setup(self, state) -> list:
        self.view = make_view(self.augmentation, network=state.config.network if state.config else "mlp",
                              noise_scale=self.noise_scale)
        self.head = projection_head(state.model[-1].in_features, self.feat_dim, state.X.device)
        return [self.head]

    def batch_loss(self, state, idx, xb, sb):
        b = xb.shape[0]
        body_out = state.model[:-1](torch.cat([xb, self.view(xb, state.generator)]))
        logits = state.model[-1](body_out[:b])
        z = F.normalize(self.head(body_out), dim=1)
        W = state.W[idx]
        with torch.no_grad():
            pseudo = (torch.softmax(logits, dim=1) * sb).argmax(dim=1)
            weights = able_weights(W, sb, pseudo).repeat(2, 2)
        contrast = weighted_contrastive_loss(z, z, weights, self.temperature)
        return weighted_nll(logits, W) + self.loss_weight * contrast, logits


class Dirk(Method):
    """DIRK inside :func:`plcore_deep._loop.train`.

    The student is the learner's network with a projection head; the teacher, the same
    architecture initialised on its own draw, follows the student's parameters as a moving
    average (``moco_m``) after every step. Per mini-batch:

    1. the teacher's rectified confidences ``r_i`` (:func:`rectified_confidence`) of the rows, and
       its key ``k_i`` of their second view (``augmentation``);
    2. loss = ``-sum_j r_ij log p_j(x_i)`` (the student distils the rectified teacher, non-candidates
       included) + ``loss_weight`` x the contrastive term over the student's ``z``, the keys and a
       queue of ``queue_size`` earlier keys with their candidate sets and confidences: from epoch
       ``prot_start`` on :func:`weighted_contrastive_loss` with :func:`dirk_weights` (the paper's
       representation refinement, DIRK-REF), before that MoCo's (:func:`moco_loss`);
    3. the keys enter the queue; after the step the teacher moves.

    Queue slots not yet written match no candidate set (no positive of any anchor). ``state.W``
    keeps each row's last rectified confidences (its ``confidences_``, on the candidates).
    """

    def __init__(self, feat_dim: int, queue_size: int, moco_m: float, temperature: float, dist_temperature: float,
                 loss_weight: float, prot_start: int, noise_scale: float, augmentation: str = "auto"):
        self.feat_dim, self.queue_size, self.moco_m = int(feat_dim), int(queue_size), moco_m
        self.temperature, self.dist_temperature, self.loss_weight = temperature, dist_temperature, loss_weight
        self.prot_start, self.noise_scale, self.augmentation = int(prot_start), noise_scale, augmentation

    def setup(self, state) -> list:
        self.view = make_view(self.augmentation, network=state.config.network if state.config else "mlp",
                              noise_scale=self.noise_scale)
        device, width, q = state.X.device, state.model[-1].in_features, state.S.shape[1]
        self.head = projection_head(width, self.feat_dim, device)
        self.teacher = copy.deepcopy(state.model)
        for module in self.teacher.modules():            # a fresh draw, as the authors' teacher
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        self.teacher_head = projection_head(width, self.feat_dim, device)
        for p in list(self.teacher.parameters()) + list(self.teacher_head.parameters()):
            p.requires_grad_(False)
        self.queue = random_keys(self.queue_size, self.feat_dim, device)
        self.queue_partial = torch.zeros((self.queue_size, q), device=device)     # matches no candidate set
        self.queue_dist = torch.full((self.queue_size, q), 1.0 / q, device=device)
        self.ptr = 0
        return [self.head]

    def start_epoch(self, state) -> None:
        self.teacher.train(True)
        self.teacher_head.train(True)

    def _student(self, state):
        return list(state.model.parameters()) + list(self.head.parameters())

    def batch_loss(self, state, idx, xb, sb):
        body_out = state.model[:-1](xb)
        logits = state.model[-1](body_out)
        z = F.normalize(self.head(body_out), dim=1)
        with torch.no_grad():
            x_key = self.view(xb, state.generator)
            key_body = self.teacher[:-1](x_key)
            k = F.normalize(self.teacher_head(key_body), dim=1)
            teacher_logits = self.teacher[-1](key_body) if x_key is xb else self.teacher(xb)
            target = rectified_confidence(teacher_logits, sb)
        if self.loss_weight == 0:                         # DIRK without the refinement
            contrast = torch.zeros((), device=xb.device)
        elif state.epoch >= self.prot_start:
            partial = torch.cat([sb, sb, self.queue_partial])
            dist = torch.cat([target, target, self.queue_dist])
            weights = dirk_weights(sb, target, partial, dist, self.dist_temperature)
            contrast = weighted_contrastive_loss(z, torch.cat([z, k, self.queue]), weights, self.temperature)
        else:
            contrast = moco_loss(z, k, self.queue.clone(), self.temperature)
        self._enqueue(k, sb, target)
        state.W[idx] = target
        return weighted_nll(logits, target) + self.loss_weight * contrast, logits

    @torch.no_grad()
    def _enqueue(self, k, partial, dist):
        slots, self.ptr = ring_slots(self.ptr, k.shape[0], self.queue_size, k.device)
        self.queue[slots], self.queue_partial[slots], self.queue_dist[slots] = k, partial, dist

    def after_step(self, state, idx, xb, sb, logits):
        momentum_update(self._student(state), list(self.teacher.parameters()) + list(self.teacher_head.parameters()),
                        self.moco_m)
