"""Instance-dependent methods: VALEN (Xu et al., NeurIPS 2021), label enhancement by variational inference.

Instance-dependent PLL: each row's label distribution ``d`` is a latent Dirichlet variable.
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
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from sklearn.neighbors import NearestNeighbors
from torch import nn

from plcore.exceptions import DataValidationError
from plcore_deep._methods import Method, candidate_posterior, weighted_nll

__all__ = ["Valen", "batch_adjacency", "dirichlet_kl", "knn_indices", "valen_reconstruction"]


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
                + weighted_nll(g, O[idx]) + weighted_nll(logits, self.D[idx]))
        self.D[idx] = _renormalised_on(d.detach(), sb)
        O[idx] = candidate_posterior(logits.detach(), sb)
        return loss, logits
