"""CroSel (Tian et al., CVPR 2024): two networks that select confident pseudo-labels for each other
from their prediction history (PyTorch).

Each network keeps a memory bank of its predictions over the training rows for the last three
epochs. A row is *selected* (Section 3.2, Eq. 3) when its argmax is the same in all three, the mean
over the three of its largest probability exceeds ``threshold`` (0.9) and the latest argmax is a
candidate; its pseudo-label is that argmax (:func:`selection`). Network 1 learns the rows network 2
selected by cross-entropy on their pseudo-labels and network 2 those of network 1; every row also
enters a partial-label term weighted by ``lam_cr`` times the unselected fraction (Eq. 7). The
networks start with ``warm_up`` epochs of the CC loss. Predictions average the two networks'
probabilities (:class:`Twin`).

``variant="paper"`` (the paper and the official code, the latter's defects left out): the
banks are filled after each epoch by an evaluation pass of each network over the training rows;
the partial-label term is the co-mix consistency loss (Eq. 6): the targets are the network's
probabilities on the other view (weak <-> strong) restricted to the candidates and renormalised,
inputs and targets mixed with a shuffled copy by ``lam ~ Beta(mix_alpha, mix_alpha)``,
``lam = max(lam, 1 - lam)``; the weight is ``1 - `` the mean of both networks' selected
fractions. On tabular rows the weak view is the row and the strong view ``x + noise_scale N(0,
I)`` (``augmentation``, :mod:`plcore_deep._views`); the warm-up epochs count among ``n_epochs``.

``variant="fuchs"`` (Fuchs & Kalinke's re-implementation, which made every stored CroSel figure of
the field's frontier): two networks from the same initial weights, each warmed up by ``warm_up``
epochs of CC with its own Adam (learning rate 1e-3, before the ``n_epochs``); no views and no
co-mix; the partial-label term is ``-sum_j S_ij b_ij log p_ij`` with ``b`` the other bank's last
epoch (not renormalised), weighted by ``lam_cr`` times network 1's (2's) unselected fraction;
the selected rows' term is PyTorch's cross-entropy applied to the softmax outputs, and only when
more than 5% and at least two rows are selected; each network writes its batch outputs into the
*other* network's bank, so after three epochs each network selects from its own history. The
training rows' confidences are the two banks' last epochs averaged on the candidates.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from plcore_deep._candidate_losses import cc_loss
from plcore_deep._methods import Method
from plcore_deep._image_networks import set_input_statistics
from plcore_deep._networks import Twin, make_network
from plcore_deep._views import make_view

__all__ = ["CroSel", "selection", "co_mix_loss"]


@torch.no_grad()
def selection(history: list, S: torch.Tensor, threshold: float):
    """``(selected, pseudo)`` from the last three epochs' probabilities ``history`` (oldest
    first, each (n, q)): the same argmax in all three, mean of the largest probability over the
    three ``> threshold``, and the latest argmax a candidate (a tie for the largest counts when any
    tied label is a candidate, as Fuchs & Kalinke's ``isclose``)."""
    latest = history[-1]
    top = latest.argmax(dim=1)
    same = torch.ones_like(top, dtype=torch.bool)
    for older in history[:-1]:
        same &= older.argmax(dim=1) == top
    confident = torch.stack(history).mean(dim=0).max(dim=1).values > threshold
    tied = torch.isclose(latest, latest.max(dim=1, keepdim=True).values)
    candidate = (tied & (S > 0)).any(dim=1)
    return same & confident & candidate, top


def co_mix_loss(network, strong_logits, weak_logits, x_weak, x_strong, S, lam: float, perm: torch.Tensor):
    """CroSel's Eq. (6) on a batch: targets from the network's (detached) outputs on the swapped
    views restricted to the candidates and renormalised; inputs ``[weak; strong]`` and their
    targets mixed with ``perm`` by ``lam``; ``-mean sum_j t_j log softmax(f(mixed))_j``."""
    with torch.no_grad():
        swapped = torch.cat([strong_logits, weak_logits])
        targets = torch.softmax(swapped, dim=1) * torch.cat([S, S])
        targets = targets / targets.sum(dim=1, keepdim=True).clamp(min=1e-12)
    inputs = torch.cat([x_weak, x_strong])
    mixed = lam * inputs + (1 - lam) * inputs[perm]
    mixed_targets = lam * targets + (1 - lam) * targets[perm]
    return -(mixed_targets * F.log_softmax(network(mixed), dim=1)).sum(dim=1).mean()


class _Selected:
    """Batches of one network's selected rows and pseudo-labels, reshuffled when used up (the
    other network's step cycles through them, one batch per step)."""

    def __init__(self, rows, pseudo, batch_size, generator):
        self.rows, self.pseudo, self.batch_size, self.generator = rows, pseudo, batch_size, generator
        self.batches = []

    def next(self):
        if not self.batches:
            order = self.rows[torch.randperm(len(self.rows), generator=self.generator).to(self.rows.device)]
            chunks = list(torch.split(order, self.batch_size))
            if len(chunks) > 1 and len(chunks[-1]) <= 5:       # Fuchs & Kalinke's drop_last rule
                chunks.pop()
            self.batches = chunks
        rows = self.batches.pop(0)
        return rows, self.pseudo[rows]


class CroSel(Method):
    """CroSel inside :func:`plcore_deep._loop.train` (see the module docstring)."""

    def __init__(self, variant: str, warm_up: int, threshold: float, lam_cr: float, mix_alpha: float,
                 augmentation: str, noise_scale: float):
        self.variant, self.warm_up, self.threshold, self.lam_cr = variant, int(warm_up), float(threshold), lam_cr
        self.mix_alpha, self.augmentation, self.noise_scale = float(mix_alpha), augmentation, float(noise_scale)

    # ------------------------------------------------------------------ set-up and warm-up
    def setup(self, state) -> list:
        first = state.model
        if self.variant == "fuchs":
            second = copy.deepcopy(first)
        else:
            config = state.config
            second = make_network(config.network, state.X.shape[1], state.S.shape[1], config.hidden_layer_sizes,
                                  config.batch_norm).to(state.X.device)
            set_input_statistics(second, state.X)
        state.model = Twin(first, second)
        n, q = state.S.shape
        self.history = [[], []]              # per bank: the last three epochs' (n, q) probabilities
        self.current = [torch.zeros((n, q), device=state.X.device) for _ in range(2)]
        self.view = make_view(self.augmentation, network=state.config.network, noise_scale=self.noise_scale)
        if self.variant == "fuchs":
            for k, net in enumerate((first, second)):
                self.history[k] = self._warm_up(state, net)
        return []

    def _warm_up(self, state, net) -> list:
        """Fuchs & Kalinke's warm-up: ``warm_up`` epochs of CC with Adam at PyTorch's defaults; the
        bank keeps the train-mode outputs each batch was computed on."""
        opt = torch.optim.Adam(net.parameters())
        net.train()
        history = []
        smallest = 2 if state.config.batch_norm else 1
        for _ in range(self.warm_up):
            bank = torch.zeros_like(self.current[0])
            order = state.train[torch.randperm(len(state.train), generator=state.generator).to(state.X.device)]
            for start in range(0, len(order), state.batch_size):
                idx = order[start:start + state.batch_size]
                if len(idx) < smallest:
                    continue
                logits = net(state.X[idx])
                loss = cc_loss(logits, state.S[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                bank[idx] = torch.softmax(logits.detach(), dim=1)
            history = (history + [bank])[-3:]
        return history

    # ------------------------------------------------------------------ each epoch
    def start_epoch(self, state) -> None:
        n = state.S.shape[0]
        rows = state.train
        self.selected = []
        for k in range(2):
            history = self.history[k]
            if len(history) == 3:
                mask, pseudo = selection(history, state.S, self.threshold)
                mask[torch.ones(n, dtype=torch.bool, device=mask.device).index_fill_(0, rows, False)] = False
            else:
                mask, pseudo = torch.zeros(n, dtype=torch.bool, device=state.X.device), None
            chosen = torch.nonzero(mask).flatten()
            self.selected.append(_Selected(chosen, pseudo, state.batch_size, state.generator) if len(chosen) else None)
            if history:
                self.current[k] = history[-1].clone()
        self.fraction = [0.0 if s is None else len(s.rows) / len(rows) for s in self.selected]

    def _selected_term(self, net, k: int, loss_on_softmax: bool):
        """The cross-entropy of ``net`` on a batch of bank ``k``'s selected rows and pseudo-labels."""
        chosen = self.selected[k]
        if chosen is None or len(chosen.rows) < 2 or (loss_on_softmax and self.fraction[k] <= 0.05):
            return 0.0
        rows, pseudo = chosen.next()
        logits = net(self._X[rows])
        return F.cross_entropy(torch.softmax(logits, dim=1) if loss_on_softmax else logits, pseudo)

    def batch_loss(self, state, idx, xb, sb):
        self._X = state.X
        nets = (state.model.first, state.model.second)
        if self.variant == "fuchs":
            return self._fuchs_loss(state, nets, idx, xb, sb)
        return self._paper_loss(state, nets, idx, xb, sb)

    def _fuchs_loss(self, state, nets, idx, xb, sb):
        outputs = [net(xb) for net in nets]
        probs = [torch.softmax(out, dim=1) for out in outputs]
        cleaned = self.cleaned(torch.log((probs[0] + probs[1]).detach() / 2), sb)
        loss = 0.0
        for k, net in enumerate(nets):
            other = 1 - k                          # network 1 reads bank 2 and writes it
            bank = self.current_last(other)[idx]
            weights = self._weights(bank, sb, cleaned)
            pll = -(weights * torch.log(probs[k] + 1e-10)).sum(dim=1).mean()
            loss = loss + self._selected_term(net, other, True) + (1 - self.fraction[k]) * self.lam_cr * pll
        for k in range(2):
            self.current[1 - k][idx] = probs[k].detach()
        return loss, torch.log((probs[0] + probs[1]) / 2)

    def _weights(self, bank, sb, cleaned):
        """The partial-label term's weights: ``S * b`` (Fuchs & Kalinke), in a conformal variant
        ``b`` on the cleaned sets renormalised (``b + 1e-3`` on the given sets where that is empty)."""
        if self.cleaner is None:
            return sb * bank
        kept = bank * cleaned
        total = kept.sum(dim=1, keepdim=True)
        fallback = (bank + 1e-3) * sb
        fallback = fallback / fallback.sum(dim=1, keepdim=True)
        return torch.where(total > 0, kept / total.clamp(min=1e-30), fallback)

    def current_last(self, k: int) -> torch.Tensor:
        """Bank ``k``'s last completed epoch."""
        return self.history[k][-1]

    def _paper_loss(self, state, nets, idx, xb, sb):
        if state.epoch < self.warm_up:
            outputs = [net(xb) for net in nets]
            return sum(cc_loss(out, sb) for out in outputs), self._twin_logits(outputs)
        ratio = (self.fraction[0] + self.fraction[1]) / 2
        lam = float(torch.distributions.Beta(self.mix_alpha, self.mix_alpha).sample())
        lam = max(lam, 1 - lam)
        perm = torch.randperm(2 * len(idx), generator=state.generator).to(xb.device)
        strong = self.view(xb, state.generator)
        loss, outputs = 0.0, []
        for k, net in enumerate(nets):
            with torch.no_grad():              # the co-mix targets: no gradient flows through them
                weak_logits = net(xb)
                strong_logits = net(strong)
            outputs.append(weak_logits)
            targets_S = self.cleaned(weak_logits, sb)
            consistency = co_mix_loss(net, strong_logits, weak_logits, xb, strong, targets_S, lam, perm)
            loss = loss + self._selected_term(net, 1 - k, False) + (1 - ratio) * self.lam_cr * consistency
        return loss, self._twin_logits(outputs)

    @staticmethod
    def _twin_logits(outputs):
        return torch.logsumexp(torch.stack([F.log_softmax(o, dim=1) for o in outputs]), dim=0) - math.log(2)

    @torch.no_grad()
    def end_epoch(self, state) -> None:
        if self.variant == "paper":            # an evaluation pass of each network fills its own bank
            for k, net in enumerate((state.model.first, state.model.second)):
                probs = torch.softmax(_outputs(net, state), dim=1)
                self.history[k] = (self.history[k] + [probs])[-3:]
        else:
            for k in range(2):
                self.history[k] = (self.history[k] + [self.current[k].clone()])[-3:]
        rows = state.train
        mean = (self.history[0][-1][rows] + self.history[1][-1][rows]) * state.S[rows]
        total = mean.sum(dim=1, keepdim=True)
        state.W[rows] = torch.where(total > 0, mean / total.clamp(min=1e-30), state.W[rows])

    def probabilities(self, state, rows):
        """The two networks' probabilities averaged (the Twin's output is their log)."""
        return torch.exp(state.logits_of(rows))


@torch.no_grad()
def _outputs(net: nn.Module, state) -> torch.Tensor:
    """``net``'s outputs on every row, in eval mode, in batches."""
    net.eval()
    n = state.X.shape[0]
    out = torch.cat([net(state.X[i:i + 4096]) for i in range(0, n, 4096)])
    net.train()
    return out
