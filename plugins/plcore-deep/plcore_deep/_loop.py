"""The mini-batch training loop every deep learner shares (PyTorch). It knows no method by name.

A method (:class:`plcore_deep._methods.Method`) is a class whose hooks the loop calls, as
Lightning calls a ``LightningModule``'s: ``initial_confidences`` once, ``setup`` before the
first epoch (extra modules to train), ``start_epoch``, ``batch_loss`` per mini-batch,
``after_step`` after each optimiser step (a confidence update), ``end_epoch`` (POP's
purification). The loop's settings travel as one :class:`LoopConfig`. Data live on the device
as two tensors for the whole fit (no DataLoader: rows are indexed in place).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from plcore_deep._methods import candidate_posterior
from plcore_deep._image_networks import IMAGE_NETWORKS, set_input_statistics
from plcore_deep._networks import make_network
from plcore_deep._views import ImageShiftFlip
from plcore_deep._threads import step_flops
from plcore_deep.plugin import SHARED

__all__ = ["LoopConfig", "Plan", "plan", "State", "Result", "LrSchedule", "EarlyStopping", "train", "prepare",
           "final_confidences", "batch_size_for"]


@dataclass(frozen=True)
class LoopConfig:
    """The settings of one fit (the learners' shared parameters, validated by the learner).

    ``seed`` fixes the initial weights, the batch order and the early-stopping split. With
    ``early_stopping`` a ``validation_fraction`` of the rows is held out, ``score(S_val,
    logits_val)`` (a criterion of candidate sets only) is evaluated after every epoch, the best
    epoch's weights are kept, and training stops after ``n_iter_no_change`` epochs without an
    improvement of more than ``tol``. ``batch_size`` may be ``"auto"`` (:func:`batch_size_for`).
    The defaults are the learners' (:data:`plcore_deep.plugin.SHARED`).
    """

    hidden_layer_sizes: tuple = SHARED["hidden_layer_sizes"]
    n_epochs: int = SHARED["n_epochs"]
    batch_size: object = SHARED["batch_size"]
    learning_rate: float = SHARED["learning_rate"]
    weight_decay: float = SHARED["weight_decay"]
    optimizer: str = SHARED["optimizer"]
    momentum: float = SHARED["momentum"]
    early_stopping: bool = SHARED["early_stopping"]
    validation_fraction: float = SHARED["validation_fraction"]
    n_iter_no_change: int = SHARED["n_iter_no_change"]
    tol: float = SHARED["tol"]
    score: object = None
    device: torch.device = torch.device("cpu")
    seed: int = 0
    batch_norm: bool = SHARED["batch_norm"]
    lr_schedule: str = SHARED["lr_schedule"]
    network: str = SHARED["network"]


@dataclass
class State:
    """The training state a method's hooks read and change: the network, the data on the device,
    the confidences ``W``, the training rows, the epoch and the loop's settings."""

    model: nn.Module
    X: torch.Tensor
    S: torch.Tensor
    W: torch.Tensor
    train: torch.Tensor
    batch_size: int
    epoch: int = 0
    n_epochs: int = 0
    n_purified: int = 0
    generator: torch.Generator | None = None
    config: LoopConfig | None = None

    @torch.no_grad()
    def logits_of(self, rows: torch.Tensor) -> torch.Tensor:
        out = [self.model(self.X[rows[i:i + self.batch_size]]) for i in range(0, len(rows), self.batch_size)]
        return torch.cat(out) if out else torch.empty((0, self.S.shape[1]), device=self.X.device)


@dataclass
class Result:
    """What :func:`train` returns: the model (float64, on the CPU), the training rows'
    candidate-set confidences, the per-epoch history and the early-stopping outcome."""

    model: nn.Module
    confidences: np.ndarray
    candidates: np.ndarray
    loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    best_epoch: int | None = None
    n_epochs: int = 0
    n_purified: int = 0


def _optimizer(name, params, lr, weight_decay, momentum):
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, momentum=momentum)


def batch_size_for(batch_size, n_train: int) -> int:
    """``"auto"``: the rule of the field's tabular recipe (Fuchs & Kalinke, UAI 2025): 16 rows
    below 5,000 training rows, else 256; an integer is kept."""
    if batch_size == "auto":
        return 16 if n_train < 5000 else 256
    return int(batch_size)


@dataclass(frozen=True)
class Plan:
    """A fit's size, decided once before it trains (:func:`plan`): the rows of a step and one
    network's floating-point operations a step, from which its CPU threads
    (:meth:`plcore_deep._estimator.DeepLearner._threads`) and whether stacking its configurations
    pays (:func:`plcore_deep._stacked.stacking_pays`) are chosen.

    Sized from all of the fit's rows. The loop's own batch (:func:`prepare`) is sized from the
    training rows that early stopping's validation split leaves; the two differ only with
    ``batch_size="auto"``, early stopping and 5,000 to 5,556 rows, and are kept apart so that
    every fit stays the same."""

    batch_size: int
    step_flops: float


def plan(config: LoopConfig, n_rows: int, n_features: int, n_classes: int) -> Plan:
    """The :class:`Plan` of a fit of ``config`` on ``n_rows`` rows."""
    batch = min(batch_size_for(config.batch_size, n_rows), n_rows)
    return Plan(batch, step_flops(config.network, n_features, n_classes, config.hidden_layer_sizes, batch))


def _schedule(opt, name: str, learning_rate: float, n_epochs: int, steps_per_epoch: int):
    """``"one_cycle"``: :class:`torch.optim.lr_scheduler.OneCycleLR` up to ``learning_rate`` over
    the whole run, stepped after every batch (PyTorch's defaults: 30% warm-up, cosine
    annealing, from and to ``learning_rate / 25`` and ``/ 1e4``; with Adam its beta1 cycles
    between 0.85 and 0.95, as in the published recipe; SGD keeps the given ``momentum``);
    ``"cosine"``: PiCO's per-epoch cosine decay, ``lr_t = m + (lr - m) (1 + cos(pi t / n_epochs)) / 2`` at
    epoch ``t`` with ``m = lr / 1000`` (its ``adjust_learning_rate`` with ``--cosine``, decay rate
    0.1 cubed); ``"constant"``: none."""
    if name == "constant":
        return None
    if name == "cosine":
        per_epoch = max(1, steps_per_epoch)

        def factor(step):
            epoch = min(step // per_epoch, n_epochs)
            return 1e-3 + (1 - 1e-3) * (1 + math.cos(math.pi * epoch / n_epochs)) / 2
        return torch.optim.lr_scheduler.LambdaLR(opt, factor)
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=learning_rate, epochs=n_epochs,
                                               steps_per_epoch=max(1, steps_per_epoch),
                                               cycle_momentum=isinstance(opt, torch.optim.Adam))


class LrSchedule:
    """The learning-rate schedule (``config.lr_schedule``, :func:`_schedule`) as a callback: both
    loops call :meth:`on_batch_end` after every batch, a skipped one too. ``drive``: step
    ``optimizer`` first (the stacked loop's stand-in, which has no gradient: a scheduler must
    not step before its optimiser)."""

    def __init__(self, optimizer, config: LoopConfig, steps_per_epoch: int, *, learning_rate=None, drive=False):
        self.optimizer, self.drive = optimizer, drive
        self.scheduler = _schedule(optimizer, config.lr_schedule,
                                   config.learning_rate if learning_rate is None else learning_rate,
                                   config.n_epochs, steps_per_epoch)

    def on_batch_end(self) -> None:
        if self.scheduler is not None:
            if self.drive:
                self.optimizer.step()
            self.scheduler.step()


class EarlyStopping:
    """Early stopping (``config.early_stopping``) as a callback for ``n_models`` networks trained
    together (one in :func:`train`, one per configuration in :mod:`plcore_deep._stacked`): both
    loops call :meth:`on_epoch_end` with each running model's validation score. A model's epoch
    is its best when the score beats its best by more than ``tol``; the model stops after
    ``n_iter_no_change`` epochs without one (it leaves :attr:`running`)."""

    def __init__(self, config: LoopConfig, n_models: int = 1):
        self.tol, self.patience = config.tol, config.n_iter_no_change
        self.best = [-math.inf] * n_models
        self.stall = [0] * n_models
        self.running = list(range(n_models))

    def on_epoch_end(self, k: int, value: float, epoch: int, result: Result) -> str:
        """Record model ``k``'s score of ``epoch`` in its ``result``; ``"best"`` (keep its
        weights), ``"stop"`` or ``""``."""
        result.validation_scores.append(value)
        if value > self.best[k] + self.tol:
            self.best[k], self.stall[k], result.best_epoch = value, 0, epoch
            return "best"
        self.stall[k] += 1
        if self.stall[k] >= self.patience:
            self.running.remove(k)
            return "stop"
        return ""


def train(X: np.ndarray, S: np.ndarray, method, config: LoopConfig, *, iterations=lambda it, desc: it,
          desc: str = "", on_epoch=None) -> Result:
    """Fit a network on ``X`` (n, d) and candidate matrix ``S`` (n, q, bool) with ``method``.

    On the CPU the result is bit-identical under ``config.seed``; with ``batch_norm`` a last
    batch of one row is skipped (batch statistics need two). ``on_epoch(epoch, model)``, when
    given, is called after every epoch with the network in eval mode (benchmarks read
    per-epoch criteria from it). The global PyTorch generator is forked and seeded for the
    whole fit, so methods that sample (VALEN's Dirichlet draws) are reproducible too.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(config.seed))
        return _train(X, S, method, config, iterations, desc, on_epoch)


def prepare(X: np.ndarray, S: np.ndarray, method, config: LoopConfig):
    """What a fit starts from, drawn from ``config.seed`` in a fixed order (the batch-order
    generator, the initial network, the early-stopping split): ``(state, given, val_rows)``,
    ``given`` the candidate sets as given (a method may refine ``state.S``: POP, FREDIS). Called
    inside :func:`train`'s forked generator; :mod:`plcore_deep._stacked` starts from it too."""
    n, q = S.shape
    device = config.device
    rng = np.random.RandomState(config.seed)
    gen = torch.Generator().manual_seed(int(rng.randint(2**31 - 1)))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.randint(2**31 - 1)))
        model = make_network(config.network, X.shape[1], q, config.hidden_layer_sizes, config.batch_norm)
    model.to(device)
    Xt = torch.from_numpy(X.astype(np.float32)).to(device)
    set_input_statistics(model, Xt)                  # an image network's channel statistics
    St = torch.from_numpy(S.astype(np.float32)).to(device)
    given = St.clone()
    rows = np.arange(n)
    val = np.empty(0, dtype=np.int64)
    if config.early_stopping:
        n_val = max(1, int(math.ceil(config.validation_fraction * n)))
        perm = rng.permutation(n)
        val, rows = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    train_rows = torch.as_tensor(rows, device=device)
    W = method.initial_confidences(St)
    batch_size = batch_size_for(config.batch_size, len(rows))
    state = State(model, Xt, St, W, train_rows, batch_size, n_epochs=config.n_epochs, generator=gen, config=config)
    return state, given, torch.as_tensor(val, device=device)


@torch.no_grad()
def final_confidences(logits: torch.Tensor, given: torch.Tensor, W: torch.Tensor, train_rows: torch.Tensor,
                      has_confidences: bool) -> np.ndarray:
    """Every row's confidences on its given candidate set (float64, rows summing to 1): a method's
    weights ``W`` restricted to the set on the training rows (POP's purified sets are subsets,
    FREDIS's refined ones need not be); held-out rows, methods without confidences (CC) and rows
    whose weights left the given set (FREDIS, ALIM) take the posterior of the final ``logits``
    on the candidates."""
    conf = candidate_posterior(logits, given)
    if has_confidences:
        trained = W[train_rows] * given[train_rows]
        total = trained.sum(dim=1, keepdim=True)
        conf[train_rows] = torch.where(total > 0, trained / total, conf[train_rows])
    conf = conf.double().cpu().numpy()                 # rows sum to 1 in float64, not only float32
    return conf / conf.sum(axis=1, keepdims=True)


def _train(X, S, method, config: LoopConfig, iterations, desc, on_epoch) -> Result:
    n = S.shape[0]
    device = config.device
    state, given, val_rows = prepare(X, S, method, config)
    model, Xt, St, train_rows, batch_size, gen = (state.model, state.X, state.S, state.train, state.batch_size,
                                                   state.generator)
    val = val_rows.cpu().numpy()
    cleaner = method.cleaner                 # the conformal cleaner, a callback (plcore_deep._cleaning)
    if cleaner is not None:                  # its calibration rows may leave the training rows
        cleaner.on_train_begin(state)
        train_rows = state.train
    n_train = len(train_rows)
    n_epochs = config.n_epochs
    extra = method.setup(state)
    model = state.model                      # a method may wrap the network (CroSel's two)
    params = list(model.parameters()) + [p for module in extra for p in module.parameters()]
    opt = _optimizer(config.optimizer, params, config.learning_rate, config.weight_decay, config.momentum)
    schedule = LrSchedule(opt, config, math.ceil(n_train / batch_size))
    early = EarlyStopping(config)
    smallest = 2 if config.batch_norm else 1
    weak = ImageShiftFlip() if config.network in IMAGE_NETWORKS else None   # the papers' training view
    result = Result(model=model, confidences=None, candidates=None)
    best_state = None
    for epoch in iterations(range(n_epochs), desc):
        model.train()
        for module in extra:
            module.train()
        state.epoch = epoch
        if cleaner is not None:
            cleaner.on_epoch_begin(state, method)
        method.start_epoch(state)
        order = train_rows[torch.randperm(n_train, generator=gen).to(device)]
        total = torch.zeros((), device=device)
        for start in range(0, n_train, batch_size):
            idx = order[start:start + batch_size]
            if len(idx) < smallest:
                schedule.on_batch_end()
                continue
            xb, sb = Xt[idx], St[idx]
            if weak is not None:
                xb = weak(xb, gen)
            loss, logits = method.batch_loss(state, idx, xb, sb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            schedule.on_batch_end()
            total += loss.detach() * len(idx)
            method.after_step(state, idx, xb, sb, logits)
        model.eval()
        for module in extra:
            module.eval()
        method.end_epoch(state)
        result.loss_curve.append(float(total) / n_train)
        result.n_epochs = epoch + 1
        if on_epoch is not None:
            on_epoch(epoch, model)
        if config.early_stopping:
            value = float(config.score(S[val], state.logits_of(val_rows).double().cpu().numpy()))
            verdict = early.on_epoch_end(0, value, epoch, result)
            if verdict == "best":
                best_state = copy.deepcopy(model.state_dict())
            elif verdict == "stop":
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    result.confidences = final_confidences(state.logits_of(torch.arange(n, device=device)), given, state.W,
                                           train_rows, method.has_confidences)
    result.candidates = St.cpu().numpy() > 0
    result.n_purified = state.n_purified
    result.model = model.to("cpu").double()
    return result
