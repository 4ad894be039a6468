"""Many configurations of one deep learner trained together: one batched network (PyTorch).

A nested selection fits the same small network once per grid point, and a step of such a
network is mostly per-call overhead (issue 44: a batch-16 step of the published MLP on lost
reaches 4% of the thread's arithmetic rate). :func:`train_stacked` trains ``K`` configurations
that differ only in ``learning_rate`` and ``weight_decay`` as one model: the ``K`` copies of the
network start from the same weights (the same seed), their parameters are stacked
(:func:`torch.func.stack_module_state`) and evaluated together by
:func:`torch.func.vmap` over :func:`torch.func.functional_call`, on the same batches in the
same order. The loss is the sum of the ``K`` losses (each model's gradient is its own), the
method's loss and confidence update are vmapped over the models, and the optimiser
(:class:`StackedOptimizer`) is PyTorch's Adam or SGD with a learning rate and weight decay per
model. Early stopping keeps each model's best epoch and stops when every model has stopped.
Each model's result is what :func:`plcore_deep._loop.train` gives that configuration alone,
to float tolerance (a batched product rounds differently from a single one).

A method stacks when its step is a pure function of the batch: ``loss(logits, S, W)`` and, for
a :class:`~plcore_deep._methods.ConfidenceMethod`, ``targets(logits, S)`` (its ``stacks``
attribute). Methods with modules of their own, a queue, a graph, sampling or epoch hooks
(PiCO, VALEN, POP, ...) are trained one configuration at a time.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from plcore_deep._loop import EarlyStopping, LrSchedule, Result, _optimizer, final_confidences, prepare
from plcore_deep._methods import ConfidenceMethod

__all__ = ["StackedOptimizer", "train_stacked", "stacked_forward", "stacking_pays", "STACKED_PARAMS"]

#: the parameters whose values the configurations of one stacked fit may differ in
STACKED_PARAMS = ("learning_rate", "weight_decay")


def stacking_pays(config, n_rows: int, n_features: int, n_classes: int) -> bool:
    """Whether stacking a fit's configurations is faster than fitting them one at a time: always
    on a GPU, where a small network's step is kernel launches (a nested selection of PRODEN, 24
    configurations: 8.6x on an H100); on a CPU only when one configuration's step is below
    :data:`plcore_deep._threads.SMALL_STEP_FLOPS`, the size under which a step is per-call
    overhead. Above it the step is arithmetic, which stacking does not shorten, and the K copies'
    optimiser state leaves the cache (Fashion-MNIST's MLP, 305 MFLOP a step: four stacked
    configurations 0.7x their four single fits; docs/performance.md). Never for the CIFAR networks."""
    from plcore_deep._image_networks import IMAGE_NETWORKS

    if config.network in IMAGE_NETWORKS:     # convolutions: arithmetic, and the training view is the loop's
        return False
    if config.device.type != "cpu":
        return True
    from plcore_deep._loop import plan
    from plcore_deep._threads import SMALL_STEP_FLOPS

    return plan(config, n_rows, n_features, n_classes).step_flops < SMALL_STEP_FLOPS


class StackedOptimizer:
    """PyTorch's Adam (``betas`` from the schedule, ``eps=1e-8``, L2 ``weight_decay`` added to the
    gradient) or SGD (``momentum``, no dampening) on parameters stacked along a first axis of
    ``K`` models, with one learning rate and one weight decay per model. ``schedule`` is a
    one-parameter optimiser of the same kind whose learning rate (1 at its peak) and Adam betas
    a PyTorch scheduler moves: model ``k`` steps with ``learning_rate[k]`` times its learning
    rate, as ``OneCycleLR`` scales every phase by ``max_lr``."""

    def __init__(self, params: dict, learning_rate, weight_decay, kind: str, momentum: float, schedule):
        self.params = params
        self.kind, self.momentum, self.schedule = kind, float(momentum), schedule
        some = next(iter(params.values()))
        self.lr = torch.as_tensor(learning_rate, dtype=some.dtype, device=some.device)
        self.wd = torch.as_tensor(weight_decay, dtype=some.dtype, device=some.device)
        self.state = {name: {} for name in params}
        self.steps = 0

    def _per_model(self, values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        return values.view(-1, *([1] * (like.dim() - 1)))

    @torch.no_grad()
    def step(self) -> None:
        """One step of every model, in place (the gradients are overwritten: they are set anew
        before the next step)."""
        group = self.schedule.param_groups[0]
        lr = self.lr * group["lr"]
        self.steps += 1
        for name, param in self.params.items():
            grad = param.grad
            if grad is None:
                continue
            grad.addcmul_(param, self._per_model(self.wd, param))        # L2: grad + wd * param
            state = self.state[name]
            if self.kind == "adam":
                beta1, beta2 = group["betas"]
                if not state:
                    state["m"], state["v"], state["buf"] = (torch.zeros_like(param), torch.zeros_like(param),
                                                            torch.empty_like(param))
                m, v, buf = state["m"], state["v"], state["buf"]
                m.lerp_(grad, 1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                torch.sqrt(v, out=buf).div_(math.sqrt(1 - beta2 ** self.steps)).add_(1e-8)
                torch.div(m, buf, out=buf).mul_(self._per_model(lr / (1 - beta1 ** self.steps), param))
                param.sub_(buf)
            else:
                if self.momentum != 0:
                    if "buf" not in state:
                        state["buf"] = grad.clone()
                    else:
                        state["buf"].mul_(self.momentum).add_(grad)
                    grad = state["buf"]
                param.sub_(grad.mul_(self._per_model(lr, param)) if grad is param.grad else
                           grad * self._per_model(lr, param))


def train_stacked(X: np.ndarray, S: np.ndarray, method, config, settings, *, iterations=lambda it, desc: it,
                  desc: str = "") -> list:
    """Fit one network per ``settings`` entry (a dict of :data:`STACKED_PARAMS`) on ``X`` and
    ``S`` with ``method`` and the rest of ``config`` (:class:`plcore_deep._loop.LoopConfig`),
    together; returns one :class:`plcore_deep._loop.Result` per entry, each as
    ``train(X, S, method, config with the entry's values)`` gives it, to float tolerance."""
    if not getattr(method, "stacks", False) or method.cleaner is not None:
        raise ValueError(f"{type(method).__name__} does not stack: train its configurations one at a time")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(config.seed))
        return _train_stacked(X, S, method, config, list(settings), iterations, desc)


def _train_stacked(X, S, method, config, settings, iterations, desc) -> list:
    n = S.shape[0]
    K = len(settings)
    state, given, val_rows = prepare(X, S, method, config)
    if method.setup(state):
        raise ValueError(f"{type(method).__name__} trains modules of its own: it does not stack")
    template, Xt, St, train_rows, batch_size, gen = (state.model, state.X, state.S, state.train, state.batch_size,
                                                      state.generator)
    device = config.device
    params, buffers = stack_module_state([copy.deepcopy(template) for _ in range(K)])
    template = copy.deepcopy(template).to("meta")      # the code of the network; its weights are `params`

    def forward(x):
        return stacked_forward(template, params, buffers, x)

    losses = vmap(method.loss, in_dims=(0, None, 0))
    W = state.W.unsqueeze(0).repeat(K, 1, 1)
    n_train = len(train_rows)
    steps_per_epoch = math.ceil(n_train / batch_size)
    dummy = [torch.zeros(1, requires_grad=True)]
    stand_in = _optimizer(config.optimizer, dummy, 1.0, 0.0, config.momentum)
    schedule = LrSchedule(stand_in, config, steps_per_epoch, learning_rate=1.0, drive=True)
    opt = StackedOptimizer(params, [float(s.get("learning_rate", config.learning_rate)) for s in settings],
                           [float(s.get("weight_decay", config.weight_decay)) for s in settings],
                           config.optimizer, config.momentum, stand_in)
    smallest = 2 if config.batch_norm else 1
    results = [Result(model=None, confidences=None, candidates=None) for _ in range(K)]
    best_weights, final_W = [None] * K, [None] * K
    early = EarlyStopping(config, K)
    running = early.running
    S_val = S[val_rows.cpu().numpy()]
    for epoch in iterations(range(config.n_epochs), desc):
        template.train()
        order = train_rows[torch.randperm(n_train, generator=gen).to(device)]
        total = torch.zeros(K, device=device)
        for start in range(0, n_train, batch_size):
            idx = order[start:start + batch_size]
            if len(idx) >= smallest:
                xb, sb = Xt[idx], St[idx]
                logits = forward(xb)
                loss = losses(logits, sb, W[:, idx])
                for p in params.values():
                    p.grad = None
                loss.sum().backward()
                opt.step()
                total += loss.detach() * len(idx)
                _update(method, forward, W, idx, xb, sb, logits)
            schedule.on_batch_end()
        template.eval()
        for k in running:
            results[k].loss_curve.append(float(total[k]) / n_train)
            results[k].n_epochs = epoch + 1
        if config.early_stopping:
            val_logits = _logits(forward, Xt, val_rows, batch_size, K, St.shape[1])
            for k in list(running):
                value = float(config.score(S_val, val_logits[k].double().cpu().numpy()))
                verdict = early.on_epoch_end(k, value, epoch, results[k])
                if verdict == "best":
                    best_weights[k] = _weights_of(params, buffers, k)
                elif verdict == "stop":
                    final_W[k] = W[k].clone()
            if not running:
                break
    return [_result(results[k], template, params, buffers, best_weights[k], W[k] if final_W[k] is None else final_W[k],
                    k, Xt, St, given, train_rows, batch_size, method, n) for k in range(K)]


def stacked_forward(template, params: dict, buffers: dict, x: torch.Tensor) -> torch.Tensor:
    """The ``K`` stacked networks' outputs (K, b, q) for the rows ``x`` (b, d), in ``template``'s
    train or eval mode. An MLP runs as batched products: the first layer as one product of ``x``
    with every model's weights side by side, the others as ``bmm``; batch normalisation as one
    :func:`torch.nn.functional.batch_norm` over the models' units side by side (its running
    statistics updated in place in ``buffers``). Other networks (LeNet):
    :func:`torch.func.vmap` over :func:`torch.func.functional_call`."""
    if not all(isinstance(m, (nn.Linear, nn.ReLU, nn.BatchNorm1d)) for m in template):
        return vmap(lambda p, b, x: functional_call(template, (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)
    K = next(iter(params.values())).shape[0]
    h = x
    for i, module in enumerate(template):
        if isinstance(module, nn.Linear):
            weight, bias = params[f"{i}.weight"], params[f"{i}.bias"]
            if h.dim() == 2:     # the rows are shared: one product with the K weight matrices side by side
                out = torch.addmm(bias.reshape(-1), h, weight.reshape(-1, weight.shape[2]).t())
                h = out.view(h.shape[0], K, -1).transpose(0, 1)
            else:
                h = torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
        elif isinstance(module, nn.ReLU):
            h = torch.relu(h)
        else:
            b, width = h.shape[1], h.shape[2]
            flat = h.transpose(0, 1).reshape(b, K * width)
            if module.training:
                buffers[f"{i}.num_batches_tracked"].add_(1)
            flat = F.batch_norm(flat, buffers[f"{i}.running_mean"].view(-1), buffers[f"{i}.running_var"].view(-1),
                                params[f"{i}.weight"].reshape(-1), params[f"{i}.bias"].reshape(-1),
                                module.training, module.momentum, module.eps)
            h = flat.view(b, K, width).transpose(0, 1)
    return h


@torch.no_grad()
def _update(method, forward, W, idx, xb, sb, logits) -> None:
    """A :class:`~plcore_deep._methods.ConfidenceMethod`'s update of the batch's confidences, for
    every model (from the step's outputs, or from a forward pass after it when ``fresh``)."""
    if isinstance(method, ConfidenceMethod):
        source = forward(xb) if method.fresh else logits.detach()
        W[:, idx] = vmap(method.targets, in_dims=(0, None))(source, sb)


@torch.no_grad()
def _logits(forward, Xt, rows, batch_size, K, q) -> torch.Tensor:
    out = [forward(Xt[rows[i:i + batch_size]]) for i in range(0, len(rows), batch_size)]
    return torch.cat(out, dim=1) if out else torch.empty((K, 0, q), device=Xt.device)


def _weights_of(params, buffers, k) -> dict:
    """Model ``k``'s parameters and buffers, copied (a ``state_dict`` of the network)."""
    return {name: t[k].detach().clone() for name, t in (*params.items(), *buffers.items())}


def _result(result, template, params, buffers, best, W, k, Xt, St, given, train_rows, batch_size, method, n):
    """Model ``k`` as a network of its own (its best epoch's weights with early stopping), with
    its final confidences: what :func:`plcore_deep._loop.train` returns."""
    model = copy.deepcopy(template).to_empty(device=Xt.device)
    model.load_state_dict(best if best is not None else _weights_of(params, buffers, k))
    model.eval()
    with torch.no_grad():
        rows = torch.arange(n, device=Xt.device)
        logits = torch.cat([model(Xt[rows[i:i + batch_size]]) for i in range(0, n, batch_size)])
    result.confidences = final_confidences(logits, given, W, train_rows, method.has_confidences)
    result.candidates = St.cpu().numpy() > 0
    result.model = model.to("cpu").double()
    return result
