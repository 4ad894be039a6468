"""The mini-batch training loop shared by every deep learner (PyTorch), and its methods.

One loop, one network builder; a method (:class:`Method`) supplies the loss, when and how the
confidences are updated, and an optional end-of-epoch step (POP's purification). Data live
on the device as two tensors for the whole fit (no DataLoader: rows are indexed in place).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from plcore_deep import _losses as L

__all__ = ["METHODS", "Method", "batch_size_for", "build_lenet", "build_network", "lenet_side", "resolve_device",
           "train", "predict_logits", "network_state", "network_from_state"]


# ----------------------------------------------------------------------------- networks
def build_network(n_features: int, n_classes: int, hidden_layer_sizes, batch_norm: bool = False) -> nn.Sequential:
    """``Linear -> ReLU`` per hidden layer (``Linear -> ReLU -> BatchNorm1d`` with ``batch_norm``,
    the order of the field's tabular MLP, Fuchs & Kalinke's ``models/mlp.py``), then a linear
    output layer (no hidden layer: the linear model). PyTorch's default initialisation, drawn
    from the global generator."""
    layers, width = [], n_features
    for size in hidden_layer_sizes:
        layers += [nn.Linear(width, int(size)), nn.ReLU()] + ([nn.BatchNorm1d(int(size))] if batch_norm else [])
        width = int(size)
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def lenet_side(n_features: int) -> int:
    """The side of the square one-channel images a LeNet takes from rows of ``n_features`` pixels;
    a ``ValueError`` when they are not such images (at least 12 x 12)."""
    side = math.isqrt(int(n_features))
    if side * side != n_features or side < 12:
        raise ValueError(f"network='lenet' needs rows of square one-channel images of at least 12 x 12 pixels "
                         f"(d = side^2, e.g. 784 for 28 x 28), got d={n_features}")
    return side


def build_lenet(n_features: int, n_classes: int) -> nn.Sequential:
    """LeNet-5 (LeCun et al. 1998) on rows of ``side x side`` pixels, as deep-PLL papers train on
    (Fashion-/K-)MNIST: 5x5 conv (6, padding 2) -> ReLU -> 2x2 max-pool -> 5x5 conv (16) -> ReLU
    -> 2x2 max-pool -> 120 -> 84 -> ``n_classes``, ReLU between (28 x 28: 16 * 5 * 5 = 400 inputs to
    the first linear layer)."""
    side = lenet_side(n_features)
    flat = 16 * ((side // 2 - 4) // 2) ** 2
    return nn.Sequential(nn.Unflatten(1, (1, side, side)),
                         nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, n_classes))


def network_state(model: nn.Module, architecture: dict) -> dict:
    """A fitted network as plain data: its ``architecture`` (the arguments of
    :func:`build_network` / :func:`build_lenet`) and its weights as NumPy arrays. A learner is
    written this way (skops, a logged model's format, holds no PyTorch object)."""
    return {"architecture": dict(architecture),
            "weights": {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}}


def network_from_state(state: dict) -> nn.Module:
    """The float64 network of :func:`network_state`, in eval mode, with the same weights (the
    global PyTorch generator is left as it was)."""
    arch = state["architecture"]
    with torch.random.fork_rng(devices=[]):
        model = (build_lenet(arch["n_features"], arch["n_classes"]) if arch["network"] == "lenet" else
                 build_network(arch["n_features"], arch["n_classes"], tuple(arch["hidden_layer_sizes"]),
                               bool(arch["batch_norm"])))
    model = model.double()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state["weights"].items()})
    return model.eval()


def resolve_device(device: str) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; ``"cuda"`` without CUDA is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but PyTorch sees no CUDA device "
                         f"(torch {torch.__version__}); use device='cpu' or 'auto'")
    return torch.device(device)


# ----------------------------------------------------------------------------- methods
@dataclass
class Method:
    """What distinguishes one learner from another inside the shared loop.

    ``loss(logits, S, W)`` is minimised per mini-batch. ``update`` says when a batch's
    confidences ``W`` are recomputed by ``targets(logits, S)``: ``"before"`` from the outputs
    the loss was computed on (before the optimiser step), ``"after"`` from a fresh forward pass
    after the step, ``"own"`` inside :meth:`batch_loss` (PiCO, VALEN), ``None`` never.
    ``end_epoch(state)`` may change ``state.S`` and ``state.W``. Methods with more than one
    network or loss term override :meth:`setup` and :meth:`batch_loss`.
    """

    loss: object = None
    targets: object = None
    update: str | None = None
    initial: object = L.uniform_confidence

    def setup(self, state: "State") -> list:
        """Called once before training; returns extra modules whose parameters are trained with
        the network's (PiCO's projection head, VALEN's encoder and decoder)."""
        return []

    def start_epoch(self, state: "State") -> None:
        return None

    def batch_loss(self, state: "State", idx: torch.Tensor, xb: torch.Tensor, sb: torch.Tensor):
        """The mini-batch's loss and the network's outputs it was computed from. With
        ``update="own"`` this is also where the method changes ``state.W[idx]``."""
        logits = state.model(xb)
        return self.loss(logits, sb, state.W[idx]), logits

    def end_epoch(self, state: "State") -> None:
        return None


class ProgressivePurification(Method):
    """POP (Xu et al., ICML 2023, Algorithm 1, with the schedule of the authors' code): PRODEN's
    loss and per-batch update; from epoch ``warm_up`` on, every ``window`` epochs, the
    confidences averaged over the last ``window`` epochs purify the candidate sets
    (:func:`plcore_deep._losses.purify` with ratio ``theta``): removed labels leave for good and
    the confidences restart from the averages on what is left. While ``theta < theta_max``, a
    round that changes fewer than 0.01% of the entries raises it by the factor ``1 + inc``."""

    def __init__(self, warm_up: int, window: int, theta: float, inc: float, theta_max: float):
        super().__init__(loss=_weighted, targets=L.candidate_posterior, update="before")
        self.warm_up, self.window, self.theta, self.inc, self.theta_max = warm_up, window, theta, inc, theta_max
        self.record = None

    def end_epoch(self, state: "State") -> None:
        rows = state.train
        if self.record is None:
            self.record = torch.zeros((self.window, len(rows), state.S.shape[1]), device=state.W.device)
        self.record[state.epoch % self.window] = state.W[rows]
        if state.epoch < self.warm_up or state.epoch % self.window != 0:
            return
        mean = self.record.mean(dim=0)
        mean = mean / mean.sum(dim=1, keepdim=True)
        S_old = state.S[rows]
        S_new = L.purify(mean, S_old, self.theta)
        W = mean * S_new
        state.S[rows] = S_new
        state.W[rows] = W / W.sum(dim=1, keepdim=True)
        n_changed = int((S_new != S_old).sum())
        state.n_purified += n_changed
        if self.theta < self.theta_max and n_changed < 1e-4 * S_old.numel():
            self.theta *= 1 + self.inc


def _weighted(logits, S, W):
    return L.weighted_nll(logits, W)


def _cc(logits, S, W):
    return L.cc_loss(logits, S)


def make_method(name: str, params: dict) -> Method:
    """The :class:`Method` of learner ``name`` with its own parameters ``params``."""
    if name in ("proden", "rc"):
        return Method(loss=_weighted, targets=L.candidate_posterior,
                      update="before" if name == "proden" else "after")
    if name == "cc":
        return Method(loss=_cc)
    if name == "lws":
        beta = float(params["beta"])
        return Method(loss=lambda logits, S, W: L.lws_loss(logits, S, W, beta), targets=L.lws_weights,
                      update="after", initial=L.uniform_over_classes)
    if name == "cavl":
        return Method(loss=_weighted, targets=L.cavl_targets, update="after")
    if name == "pop":
        return ProgressivePurification(int(params["warm_up"]), int(params["window"]), float(params["theta"]),
                                       float(params["inc"]), float(params["theta_max"]))
    if name == "pico":
        from plcore_deep._pico import Pico

        return Pico(**params)
    if name == "valen":
        from plcore_deep._valen import Valen

        return Valen(**params)
    raise KeyError(name)


METHODS = ("proden", "rc", "cc", "lws", "cavl", "pop", "pico", "valen")


# ----------------------------------------------------------------------------- the loop
@dataclass
class State:
    """The training state a method's ``end_epoch`` may read and change."""

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


def _schedule(opt, name: str, learning_rate: float, n_epochs: int, steps_per_epoch: int):
    """``"one_cycle"``: :class:`torch.optim.lr_scheduler.OneCycleLR` up to ``learning_rate`` over
    the whole run, stepped after every batch (PyTorch's defaults: 30% warm-up, cosine
    annealing, from and to ``learning_rate / 25`` and ``/ 1e4``; with Adam its beta1 cycles
    between 0.85 and 0.95, as in the published recipe; SGD keeps the given ``momentum``);
    ``"constant"``: none."""
    if name == "constant":
        return None
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=learning_rate, epochs=n_epochs,
                                               steps_per_epoch=max(1, steps_per_epoch),
                                               cycle_momentum=isinstance(opt, torch.optim.Adam))


def train(X: np.ndarray, S: np.ndarray, *, method: Method, hidden_layer_sizes, n_epochs: int, batch_size,
          learning_rate: float, weight_decay: float, optimizer: str, momentum: float, early_stopping: bool,
          validation_fraction: float, n_iter_no_change: int, tol: float, score, device: torch.device,
          seed: int, batch_norm: bool = False, lr_schedule: str = "constant", network: str = "mlp",
          iterations=lambda it, desc: it, desc: str = "", on_epoch=None) -> Result:
    """Fit a network on ``X`` (n, d) and candidate matrix ``S`` (n, q, bool) with ``method``.

    ``seed`` fixes the initial weights, the batch order and the early-stopping split (on the
    CPU the result is then bit-identical). With ``early_stopping`` a ``validation_fraction`` of
    the rows is held out, ``score(S_val, logits_val)`` (a criterion of candidate sets only) is
    evaluated after every epoch, the best epoch's weights are kept, and training stops after
    ``n_iter_no_change`` epochs without an improvement of more than ``tol``. ``batch_size`` may
    be ``"auto"`` (:func:`batch_size_for`); with ``batch_norm`` a last batch of one row is
    skipped (batch statistics need two). ``on_epoch(epoch, model)``, when given, is called after
    every epoch with the network in eval mode (benchmarks read per-epoch criteria from it).
    The global PyTorch generator is forked and seeded for the whole fit, so methods that sample
    (VALEN's Dirichlet draws) are reproducible too.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return _train(X, S, method=method, hidden_layer_sizes=hidden_layer_sizes, n_epochs=n_epochs,
                      batch_size=batch_size, learning_rate=learning_rate, weight_decay=weight_decay,
                      optimizer=optimizer, momentum=momentum, early_stopping=early_stopping,
                      validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change, tol=tol,
                      score=score, device=device, seed=seed, batch_norm=batch_norm, lr_schedule=lr_schedule,
                      network=network, iterations=iterations, desc=desc, on_epoch=on_epoch)


def _train(X, S, *, method, hidden_layer_sizes, n_epochs, batch_size, learning_rate, weight_decay, optimizer,
           momentum, early_stopping, validation_fraction, n_iter_no_change, tol, score, device, seed, batch_norm,
           lr_schedule, network, iterations, desc, on_epoch) -> Result:
    n, q = S.shape
    rng = np.random.RandomState(seed)
    gen = torch.Generator().manual_seed(int(rng.randint(2**31 - 1)))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.randint(2**31 - 1)))
        model = (build_lenet(X.shape[1], q) if network == "lenet" else
                 build_network(X.shape[1], q, hidden_layer_sizes, batch_norm))
    model.to(device)
    Xt = torch.from_numpy(X.astype(np.float32)).to(device)
    St = torch.from_numpy(S.astype(np.float32)).to(device)
    rows = np.arange(n)
    val = np.empty(0, dtype=np.int64)
    if early_stopping:
        n_val = max(1, int(math.ceil(validation_fraction * n)))
        perm = rng.permutation(n)
        val, rows = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    train_rows = torch.as_tensor(rows, device=device)
    val_rows = torch.as_tensor(val, device=device)
    W = method.initial(St)
    n_train = len(rows)
    batch_size = batch_size_for(batch_size, n_train)
    state = State(model, Xt, St, W, train_rows, batch_size, n_epochs=n_epochs, generator=gen)
    extra = method.setup(state)
    params = list(model.parameters()) + [p for module in extra for p in module.parameters()]
    opt = _optimizer(optimizer, params, learning_rate, weight_decay, momentum)
    scheduler = _schedule(opt, lr_schedule, learning_rate, n_epochs, math.ceil(n_train / batch_size))
    smallest = 2 if batch_norm else 1
    result = Result(model=model, confidences=None, candidates=None)
    best_score, best_state, stall = -math.inf, None, 0
    for epoch in iterations(range(n_epochs), desc):
        model.train()
        for module in extra:
            module.train()
        state.epoch = epoch
        method.start_epoch(state)
        order = train_rows[torch.randperm(n_train, generator=gen).to(device)]
        total = torch.zeros((), device=device)
        for start in range(0, n_train, batch_size):
            idx = order[start:start + batch_size]
            if len(idx) < smallest:
                if scheduler is not None:
                    scheduler.step()
                continue
            xb, sb = Xt[idx], St[idx]
            loss, logits = method.batch_loss(state, idx, xb, sb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if scheduler is not None:
                scheduler.step()
            total += loss.detach() * len(idx)
            if method.update == "before":
                W[idx] = method.targets(logits.detach(), sb)
            elif method.update == "after":
                with torch.no_grad():
                    W[idx] = method.targets(model(xb), sb)
        model.eval()
        for module in extra:
            module.eval()
        method.end_epoch(state)
        result.loss_curve.append(float(total) / n_train)
        result.n_epochs = epoch + 1
        if on_epoch is not None:
            on_epoch(epoch, model)
        if early_stopping:
            value = float(score(S[val], state.logits_of(val_rows).double().cpu().numpy()))
            result.validation_scores.append(value)
            if value > best_score + tol:
                best_score, best_state, stall, result.best_epoch = value, copy.deepcopy(model.state_dict()), 0, epoch
            else:
                stall += 1
                if stall >= n_iter_no_change:
                    break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    # the rows' confidences on their (possibly purified) candidate sets; held-out rows and
    # methods without confidences (CC) take the final model's posterior on the candidates
    with torch.no_grad():
        conf = L.candidate_posterior(state.logits_of(torch.arange(n, device=device)), St)
        if method.update is not None:
            trained = W[train_rows] * St[train_rows]
            conf[train_rows] = trained / trained.sum(dim=1, keepdim=True)
    conf = conf.double().cpu().numpy()                 # rows sum to 1 in float64, not only float32
    result.confidences = conf / conf.sum(axis=1, keepdims=True)
    result.candidates = St.cpu().numpy() > 0
    result.n_purified = state.n_purified
    result.model = model.to("cpu").double()
    return result


@torch.no_grad()
def predict_logits(model: nn.Module, X: np.ndarray, device: torch.device, batch_size: int = 8192) -> np.ndarray:
    """The float64 outputs of ``model`` for ``X``, in batches on ``device``."""
    model = model.to(device)
    X = np.asarray(X, dtype=np.float64)
    Xt = torch.as_tensor(X if X.flags.writeable else X.copy())  # PyTorch warns on a read-only array
    out = [model(Xt[i:i + batch_size].to(device)).cpu() for i in range(0, X.shape[0], batch_size)]
    model.to("cpu")
    return torch.cat(out).numpy() if out else np.empty((0, model[-1].out_features))
