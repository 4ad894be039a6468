"""Instance-dependent methods (PyTorch): VALEN (Xu et al., NeurIPS 2021), label enhancement by
variational inference, and IDGP (Qiao et al., ICLR 2023), a decomposed generation process of
the candidate sets.

VALEN
-----
Each row's label distribution ``d`` is a latent Dirichlet variable.
The first ``warm_up`` epochs train the classifier alone with PRODEN's loss (its confidences
``o``, the rows' posteriors renormalised on the candidates). Then a kNN graph of the warmed-up
network's last hidden layer is built (``A = D^-1 (K + I)``, ``K`` each row's ``n_neighbors``
nearest rows: ``n x k`` indices, never an ``n x n`` matrix), the encoder starts as a copy of
the classifier, and every mini-batch minimises (the authors' code; the paper's Eq. 9-12):

* ``L_o = -sum_j d_ij log p_j(x_i)``: the classifier against the label distributions ``d``;
* ``L_d = -sum_j o_ij log softmax(g(x_i))_j``: the encoder ``g`` against the confidences ``o``;
* ``KL(Dir(alpha_i) || Dir(1))`` with ``alpha = clip(exp(g(x)/4), 0.01, 30)`` (the prior term);
* the reconstruction of the features, candidates and graph from a draw
  ``d ~ Dir(softmax(g(x)) on the candidates, renormalised, + 0.01)``:
  ``0.01 mse(dec(d), x) + 0.01 BCE-with-logits(d, S) + mse(softmax_rows(sigmoid(d d^T)), A_bb)``,
  ``A_bb`` the batch's block of ``A`` and ``dec`` a ``Linear -> ReLU -> Linear`` decoder.

After the step ``d`` becomes the draw renormalised on the candidates, ``o`` the classifier's
posterior on the candidates (from the outputs before the step). Confidences: ``o``.

IDGP
----
The candidate set is generated in two steps: the annotator first has the correct label ``y ~
Cat(f(x))`` in mind, then each other label ``j`` joins it with an instance-dependent flipping
probability ``g_j(x)`` (independent Bernoullis). Two networks of the same architecture are
trained: the classifier ``f`` (softmax, the learner's network) and the flipping network ``g``
(a sigmoid per label, ``z = g``'s logits). Each row keeps ``d`` (the posterior of the correct
label, on the candidates; the confidences) and ``b`` (``g``'s outputs on the candidates,
started at ``S``). For a batch (``sigma`` the sigmoid, means over the batch's rows):

* warm-up (the first ``warm_up`` epochs): ``L_F = -sum_j d_j log f_j`` and
  ``L_G = -sum_j [b_j log sigma(z_j) + (1 - b_j) log(1 - sigma(z_j))]``;
* then ``L_F = -sum_j d_j log f_j - sum_j w_j log f_j + lam KL(d || f)`` and
  ``L_G = -sum_j [b_j log sigma(z_j) + (1 - b_j) log(1 - sigma(z_j))] - sum_j u_j log(1 - sigma(z_j))
  - sum_j [S_j log sigma(z_j) + (1 - S_j) log(1 - sigma(z_j))] + lam sum_j b_j (log b_j - log sigma(z_j))``
  (:func:`idgp_g_loss`, :func:`idgp_consistency`), where ``u = f`` renormalised on the
  candidates and ``w`` (:func:`idgp_f_targets`) is ``g``'s posterior of the correct label: on
  the candidates ``w_j ~ (1 - g~_j) / g~_j`` with ``g~ = g`` except at the row's current
  pseudo-label ``argmax_{j in S} d_j``, where ``g~ = 1 - g`` -- the authors' code multiplies
  this by ``prod_{k in S} g~_k``, the same for every candidate of a row, which cancels in the
  normalisation; here ``w = softmax`` over the candidates of ``-z_j`` (``+z`` at the
  pseudo-label), the same quantity without the product's underflow. Both ``w`` and ``u`` are
  constants (no gradient into the other network). ``lam = min(t / (0.2 T), 1)``, ``t`` the
  steps done, ``T`` the run's steps.

After the step, from the outputs the step was computed on: ``d = f`` renormalised on the
candidates, ``b = sigma(z) S``. The loss terms are the authors' code's (PLENCH's IDGP is that
code with one view of each row, as here; the authors' image runs sum every term over the row
and two augmented views). The loss the loop records is ``L_F + L_G``.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from sklearn.neighbors import NearestNeighbors
from torch import nn

from plcore.exceptions import DataValidationError
from plcore_deep._methods import Method, candidate_posterior, ramp, weighted_nll
from plcore_deep._image_networks import set_input_statistics
from plcore_deep._networks import make_network

__all__ = ["Valen", "Idgp", "batch_adjacency", "dirichlet_kl", "knn_indices", "valen_reconstruction",
           "bernoulli_nll", "idgp_f_targets", "idgp_g_loss", "idgp_consistency"]


def dirichlet_kl(alpha: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    """``mean_i KL(Dir(alpha_i) || Dir(prior))`` in closed form: ``lnG(a0) - sum lnG(a) - lnG(b0) +
    sum lnG(b) + sum (a - b)(digamma(a) - digamma(a0))``, ``a0 = sum a``, ``b0 = sum b``."""
    a0 = alpha.sum(dim=1)
    prior = prior.expand_as(alpha)
    return (torch.lgamma(a0) - torch.lgamma(alpha).sum(dim=1) - torch.lgamma(prior.sum(dim=1))
            + torch.lgamma(prior).sum(dim=1)
            + ((alpha - prior) * (torch.digamma(alpha) - torch.digamma(a0)[:, None])).sum(dim=1)).mean()


def knn_indices(features, n_neighbors: int):
    """Each row's ``n_neighbors`` nearest other rows (Euclidean), shape (n, k)."""
    k = min(int(n_neighbors), features.shape[0] - 1)
    return NearestNeighbors(n_neighbors=k).fit(features).kneighbors(return_distance=False)


def batch_adjacency(neighbors: torch.Tensor, idx: torch.Tensor, n: int) -> torch.Tensor:
    """The block ``A[idx][:, idx]`` of ``A = D^-1 (K + I)`` (every row of ``K + I`` has ``k + 1``
    ones), built from the (n, k) neighbour indices without forming ``A``."""
    b, k = len(idx), neighbors.shape[1]
    position = torch.full((n,), -1, dtype=torch.long, device=idx.device)
    position[idx] = torch.arange(b, device=idx.device)
    cols = position[neighbors[idx]]                                        # (b, k), -1 outside the batch
    block = torch.zeros((b, b), device=idx.device)
    rows = torch.arange(b, device=idx.device)[:, None].expand(b, k)
    inside = cols >= 0
    block[rows[inside], cols[inside]] = 1.0
    block[torch.arange(b), torch.arange(b)] = 1.0
    return block / (k + 1)


def valen_reconstruction(d: torch.Tensor, x_hat: torch.Tensor, x: torch.Tensor, S: torch.Tensor,
                         A_block: torch.Tensor) -> torch.Tensor:
    """The reconstruction term: ``0.01 mse(x_hat, x) + 0.01 BCE-with-logits(d, S) + mse(softmax_rows(
    sigmoid(d d^T)), A_block)`` (the authors' weights)."""
    A_hat = torch.softmax(torch.sigmoid(d @ d.T), dim=1)
    return (0.01 * F.mse_loss(x_hat, x) + 0.01 * F.binary_cross_entropy_with_logits(d, S)
            + F.mse_loss(A_hat, A_block))


def _renormalised_on(values: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    masked = values * S
    return masked / masked.sum(dim=1, keepdim=True)


class Valen(Method):
    """VALEN inside :func:`plcore_deep._loop.train` (see the module docstring)."""

    def __init__(self, warm_up: int, n_neighbors: int):
        self.warm_up, self.n_neighbors = int(warm_up), int(n_neighbors)
        self.neighbors = None

    def setup(self, state) -> list:
        n_train = len(state.train)
        if n_train < 2 and self.warm_up < state.n_epochs:
            held = (" (early stopping holds out validation_fraction of the rows)" if n_train < state.X.shape[0]
                    else "")
            raise DataValidationError(f"VALEN needs at least 2 training rows for its kNN graph of the rows, got "
                                      f"{n_train}{held}; give it more rows, or set warm_up >= n_epochs (PRODEN alone)")
        n_features, q = state.X.shape[1], state.S.shape[1]
        self.encoder = copy.deepcopy(state.model)
        self.decoder = nn.Sequential(nn.Linear(q, n_features), nn.ReLU(), nn.Linear(n_features, n_features))
        for layer in (self.decoder[0], self.decoder[2]):
            nn.init.xavier_normal_(layer.weight)
            nn.init.constant_(layer.bias, 0.01)
        self.decoder.to(state.X.device)
        self.D = state.W.clone()
        return [self.encoder, self.decoder]

    @torch.no_grad()
    def _build_graph(self, state) -> None:
        """After the warm-up: the kNN graph of the training rows' last hidden layer, the encoder
        started from the classifier, ``d`` from ``o``."""
        state.model.eval()
        rows = state.train
        body = state.model[:-1]
        feats = torch.cat([body(state.X[rows[i:i + 4096]]) for i in range(0, len(rows), 4096)])
        local = knn_indices(feats.cpu().numpy(), self.n_neighbors)
        self.neighbors = torch.full((state.X.shape[0], local.shape[1]), 0, dtype=torch.long, device=rows.device)
        self.neighbors[rows] = rows[torch.as_tensor(local, device=rows.device)]
        self.encoder.load_state_dict(state.model.state_dict())
        self.D = state.W.clone()
        state.model.train()

    def start_epoch(self, state) -> None:
        if state.epoch == self.warm_up and self.neighbors is None:
            self._build_graph(state)

    def batch_loss(self, state, idx, xb, sb):
        logits = state.model(xb)
        O = state.W
        if self.neighbors is None:                                         # warm-up: PRODEN
            loss = weighted_nll(logits, O[idx])
            O[idx] = candidate_posterior(logits.detach(), sb)
            return loss, logits
        g = self.encoder(xb)
        mask = (O[idx] > 0).to(g.dtype)
        s_alpha = torch.softmax(g, dim=1) * mask
        s_alpha = s_alpha / s_alpha.sum(dim=1, keepdim=True).detach() + 1e-2
        alpha = F.hardtanh(torch.exp(g / 4), min_val=1e-2, max_val=30)
        d = torch.distributions.Dirichlet(s_alpha).rsample()
        A_block = batch_adjacency(self.neighbors, idx, state.X.shape[0])
        loss = (valen_reconstruction(d, self.decoder(d), xb, sb, A_block)
                + dirichlet_kl(alpha, torch.ones_like(alpha[:1]))
                + weighted_nll(g, self._cleaned_target(g, O[idx], sb))
                + weighted_nll(logits, self._cleaned_target(logits, self.D[idx], sb)))
        self.D[idx] = _renormalised_on(d.detach(), sb)
        O[idx] = candidate_posterior(logits.detach(), self.cleaned(logits, sb))
        return loss, logits

    def _cleaned_target(self, logits, T, sb):
        """A classification term's target ``T``, in a conformal variant restricted to the sets
        cleaned by that term's own outputs and renormalised (``T`` where nothing is left), as the
        authors' ``conformal_valen.py``."""
        C = self.cleaned(logits, sb)
        if C is sb:                                   # no cleaner, or none yet: the target as it is
            return T
        kept = T * C
        total = kept.sum(dim=1, keepdim=True)
        return torch.where(total > 1e-10, kept / total.clamp(min=1e-30), T)


def bernoulli_nll(z: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``mean_i -sum_j [B_ij log sigma(z_ij) + (1 - B_ij) log(1 - sigma(z_ij))]`` from the logits
    ``z`` (IDGP's loss of ``g`` against the soft targets ``b``; with ``B = S`` its candidate term)."""
    return F.binary_cross_entropy_with_logits(z, B, reduction="sum") / z.shape[0]


def idgp_f_targets(z: torch.Tensor, D: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """IDGP's posterior of the correct label from the flipping network's logits ``z`` (see the
    module docstring): on the candidates ``softmax(-z_j)``, with ``+z`` at the pseudo-label
    ``argmax_{j in S} D_j`` (ties to the lowest index), 0 elsewhere."""
    pseudo = F.one_hot((D * S).argmax(dim=1), S.shape[1]).bool()
    signed = torch.where(pseudo, z, -z)
    return candidate_posterior(signed, S)


def idgp_g_loss(z: torch.Tensor, U: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """IDGP's loss of ``g`` from ``f``: ``mean_i [-sum_j U_ij log(1 - sigma(z_ij))] +`` the
    Bernoulli likelihood of the candidate set, :func:`bernoulli_nll` ``(z, S)``; ``U`` is ``f``'s
    posterior renormalised on the candidates."""
    return -(U * F.logsigmoid(-z)).sum(dim=1).mean() + bernoulli_nll(z, S)


def idgp_consistency(logits: torch.Tensor, D: torch.Tensor, z: torch.Tensor, B: torch.Tensor):
    """IDGP's two consistency terms (PyTorch's ``KLDivLoss``, batch mean, ``0 log 0 = 0``):
    ``KL(d || softmax(logits))`` for ``f`` and ``sum_j b_j (log b_j - log sigma(z_j))`` for ``g``."""
    return (F.kl_div(F.log_softmax(logits, dim=1), D, reduction="batchmean"),
            F.kl_div(F.logsigmoid(z), B, reduction="batchmean"))


class Idgp(Method):
    """IDGP inside :func:`plcore_deep._loop.train` (see the module docstring): the flipping
    network ``g`` is trained with the classifier by the loop's one optimiser (the gradients of
    ``L_F + L_G`` are ``L_F``'s for ``f`` and ``L_G``'s for ``g``, so this is PLENCH's two Adams
    with the same settings)."""

    def __init__(self, warm_up: int):
        self.warm_up = int(warm_up)

    def setup(self, state) -> list:
        config, n_features, q = state.config, state.X.shape[1], state.S.shape[1]
        self.g = make_network(config.network, n_features, q, config.hidden_layer_sizes,
                              config.batch_norm).to(state.X.device)
        set_input_statistics(self.g, state.X[state.train])
        self.B = state.S.clone()
        self.step = 0
        self.total_steps = state.n_epochs * math.ceil(len(state.train) / state.batch_size)
        return [self.g]

    def batch_loss(self, state, idx, xb, sb):
        logits, z = state.model(xb), self.g(xb)
        D, B = state.W[idx], self.B[idx]
        loss = weighted_nll(logits, D) + bernoulli_nll(z, B)
        if state.epoch >= self.warm_up:
            lam = ramp(self.step, self.total_steps, 0.2)
            kl_f, kl_g = idgp_consistency(logits, D, z, B)
            loss = (loss + weighted_nll(logits, idgp_f_targets(z.detach(), D, sb)) + lam * kl_f
                    + idgp_g_loss(z, candidate_posterior(logits.detach(), sb), sb) + lam * kl_g)
        self._z = z.detach()
        return loss, logits

    def after_step(self, state, idx, xb, sb, logits):
        state.W[idx] = candidate_posterior(logits.detach(), sb)
        self.B[idx] = torch.sigmoid(self._z) * sb
        self.step += 1
