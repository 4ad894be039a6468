"""Where a deep learner's fit spends its time (issue 65, item 1), beside PLENCH's own code.

    OMP_NUM_THREADS=1 python benchmarks/deep_step_profile.py --plench PATH [--dataset lost] [--steps 1000]
        [--algorithms PRODEN CC ...] [--seed 0] [--fused]

For each algorithm, plcore's learner is fitted at PLENCH's settings (its defaults for the data set,
the split of ``benchmarks/plench_parity.py``, one thread) with every part of the loop timed:
``forward+loss`` (the method's ``batch_loss``: the network's forward pass and the loss), ``backward``
(``loss.backward()``), ``optimizer`` (``opt.step()``, through PyTorch's global step hooks),
``hooks`` (``after_step``, ``start_epoch``, ``end_epoch``, ``setup`` and a cleaner's calibration:
confidence updates, POP's purification, conformal sets), ``eval passes`` (``State.logits_of``: the
final confidences, early stopping) and ``loop`` (the rest: batch order and indexing, bookkeeping).
``floor`` is the same network's forward and backward passes alone, on as many random batches of the
same size, with no optimizer: the arithmetic no loop can avoid on one thread. With ``--plench`` the
algorithm's fit by PLENCH's code, 1000 steps, is timed beside it (PLENCH's algorithms only; CroSel
and the conformal variants are plcore's, at PRODEN's PLENCH settings). ``--fused`` adds what PyTorch's
fused optimiser would give (a counterfactual: plcore's loop uses the single-tensor Adam, whose
fits the committed results hold to the bit): the fit's seconds without the timers (``fit s``),
then with the loop's optimiser swapped for ``torch.optim.Adam(..., fused=True)``, and whether the
two fits' test predictions are the same.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
DEFAULT = ["PRODEN", "CC", "LWS", "PiCO", "VALEN", "POP", "ABLE", "CRDPLL", "SCL_NL", "CroSel", "Conf+PRODEN"]
#: plcore-only rows: their learner option, at PRODEN's PLENCH settings
EXTRA = {"CroSel": "crosel", "Conf+PRODEN": "conf_proden"}


@contextlib.contextmanager
def _timed(clock: dict):
    """Time ``Tensor.backward``, every optimizer step and ``State.logits_of`` into ``clock``."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    from plcore_deep import _loop

    backward, logits_of = torch.Tensor.backward, _loop.State.logits_of
    started = {}

    def timed_backward(self, *a, **k):
        t = time.perf_counter()
        try:
            return backward(self, *a, **k)
        finally:
            clock["backward"] += time.perf_counter() - t

    def timed_logits(self, rows):
        t = time.perf_counter()
        try:
            return logits_of(self, rows)
        finally:
            clock["eval passes"] += time.perf_counter() - t

    pre = register_optimizer_step_pre_hook(lambda opt, a, k: started.__setitem__(id(opt), time.perf_counter()))
    post = register_optimizer_step_post_hook(
        lambda opt, a, k: clock.__setitem__("optimizer", clock["optimizer"] + time.perf_counter() - started[id(opt)]))
    torch.Tensor.backward, _loop.State.logits_of = timed_backward, timed_logits
    try:
        yield
    finally:
        torch.Tensor.backward, _loop.State.logits_of = backward, logits_of
        pre.remove()
        post.remove()


def _time_hooks(method, clock: dict, steps: list):
    """Wrap a method's hooks in timers (``forward+loss`` for ``batch_loss``, ``hooks`` for the rest)."""
    def wrap(name, bucket):
        fn = getattr(method, name)

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                clock[bucket] += time.perf_counter() - t
                if name == "batch_loss":
                    steps.append(1)
        setattr(method, name, timed)

    wrap("batch_loss", "forward+loss")
    for name in ("after_step", "start_epoch", "end_epoch", "setup"):
        wrap(name, "hooks")
    if getattr(method, "cleaner", None) is not None:
        cleaner = method.cleaner
        calibrate = cleaner.calibrate

        def timed_calibrate(*a, **k):
            t = time.perf_counter()
            try:
                return calibrate(*a, **k)
            finally:
                clock["hooks"] += time.perf_counter() - t
        cleaner.calibrate = timed_calibrate
    return method


def profile_plcore(option: str, params: dict, data, n_epochs: int, seed: int) -> dict:
    """One fit of plcore's learner ``option`` with the loop's parts timed (the module's buckets)."""
    import plcore_deep
    from plcore_deep.plugin import LEARNER_OPTIONS

    X, S, _, _, _ = data
    cls = getattr(plcore_deep, LEARNER_OPTIONS[option].split(":")[1])
    est = cls(**params, n_epochs=n_epochs, device="cpu", random_state=seed)
    clock, steps = defaultdict(float), []
    make = est._make_method
    est._make_method = lambda: _time_hooks(make(), clock, steps)
    with _timed(clock):
        t = time.perf_counter()
        est.fit(X, S.astype(bool))
        total = time.perf_counter() - t
    clock["loop"] = total - sum(clock.values())
    return {"total": total, "steps": len(steps), **clock}


@contextlib.contextmanager
def _fused_optimizer():
    """plcore's loop with PyTorch's fused Adam and SGD (one kernel for all parameters) in place of its own choice."""
    import torch

    from plcore_deep import _loop

    chosen = _loop._optimizer

    def fused(name, params, lr, weight_decay, momentum):
        if name == "adam":
            return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, momentum=momentum, fused=True)

    _loop._optimizer = fused
    try:
        yield
    finally:
        _loop._optimizer = chosen


def floor(d: int, q: int, batch: int, steps: int, hidden: int = 500, seed: int = 0, adam: str | None = None) -> float:
    """Seconds of the bare MLP's forward and backward passes on ``steps`` random batches; with
    ``adam`` (``"single"``, ``"foreach"`` or ``"fused"``: PyTorch's three implementations) an Adam
    step after each."""
    import torch
    from torch import nn

    g = torch.Generator().manual_seed(seed)
    X = torch.randn(max(batch * 4, 512), d, generator=g)
    net = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, q))
    how = {"single": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    opt = None if adam is None else torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-5, **how[adam])
    t = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(0, X.shape[0], (batch,), generator=g)
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        net(X[idx]).logsumexp(dim=1).mean().backward()
        if opt is not None:
            opt.step()
    return time.perf_counter() - t


def main(argv=None) -> int:
    import plench_parity as pp
    from deep_before_after import timed_fit

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--plench", type=Path, default=None, help="a checkout of github.com/wwangwitsel/PLENCH")
    ap.add_argument("--dataset", default="lost", choices=list(pp.PLENCH_DATASETS))
    ap.add_argument("--algorithms", nargs="+", default=DEFAULT)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    ap.add_argument("--fused", action="store_true",
                    help="also fit each algorithm with PyTorch's fused optimiser (seconds, same predictions?)")
    args = ap.parse_args(argv)
    if args.plench is None or not (args.plench / "plench" / "core" / "algorithms.py").is_file():
        raise SystemExit("give --plench PATH: a checkout of PLENCH (its hyperparameters and split are read there)")
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(args.plench.resolve()))
    from plench.core import algorithms, hparams_registry
    from plench.lib import misc

    from plcore.datasets.loaders import find_dataset_file

    data = pp._split(find_dataset_file(args.dataset, args.data_home), misc.seed_hash, misc.split_dataset, args.seed)
    X, S = data[0], data[1]
    name = pp.PLENCH_DATASETS[args.dataset]
    parts = ["forward+loss", "backward", "optimizer", "hooks", "eval passes", "loop"]
    batch = int(hparams_registry.default_hparams("PRODEN", name)["batch_size"])
    floor(X.shape[1], S.shape[1], batch, 50)  # warm-up
    times = {k: floor(X.shape[1], S.shape[1], batch, args.steps, adam=None if k == "none" else k)
             for k in ("none", "single", "foreach", "fused")}
    print(f"the bare network, {args.steps} steps of {batch} rows: forward and backward {times['none']:.2f} s; with "
          f"PyTorch's Adam: single-tensor (plcore's and PLENCH's on the CPU) {times['single']:.2f} s, foreach "
          f"{times['foreach']:.2f} s, fused {times['fused']:.2f} s\n")
    print(f"{args.dataset}: {X.shape[0]} training rows, d={X.shape[1]}, q={S.shape[1]}; {args.steps} PLENCH steps; "
          "one thread; seconds of one fit (share of plcore's total)")
    head = ["algorithm", "steps", "plcore s", *parts, "floor s", "PLENCH s", "plcore/PLENCH"]
    head += ["fit s", "fused s", "fused/PLENCH", "same predictions"] if args.fused else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for algorithm in args.algorithms:
        base = "PRODEN" if algorithm in EXTRA else algorithm
        hp = hparams_registry.default_hparams(base, name)
        per_epoch = max(1, len(X) // int(hp["batch_size"]))
        params = pp._plcore_params(base, hp, per_epoch)
        option = EXTRA.get(algorithm) or pp.OPTIONS[algorithm]
        n_epochs = math.ceil(args.steps / per_epoch)
        profile_plcore(option, params, data, 1, args.seed)  # warm-up (first-call costs, imports)
        got = profile_plcore(option, params, data, n_epochs, args.seed)
        bare = floor(X.shape[1], S.shape[1], int(hp["batch_size"]), got["steps"], seed=args.seed)
        theirs = None
        if algorithm not in EXTRA:
            t = time.perf_counter()
            pp.run_plench(algorithms, hparams_registry.default_hparams, algorithm, args.dataset, data, args.steps,
                          args.seed)
            theirs = time.perf_counter() - t
        shares = [f"{got[p]:.2f} ({100 * got[p] / got['total']:.0f}%)" for p in parts]
        cells = ""
        if args.fused:
            fit_data = (X, S.astype(bool), data[3])
            slow, plain = timed_fit(option, fit_data, n_epochs, args.seed, params)       # uninstrumented
            with _fused_optimizer():
                fast, predicted = timed_fit(option, fit_data, n_epochs, args.seed, params)
            cells = (f" {slow:.2f} | {fast:.2f} | {'–' if theirs is None else f'{fast / theirs:.2f}x'} | "
                     f"{'yes' if np.array_equal(plain, predicted) else f'{100 * np.mean(plain == predicted):.1f}%'} |")
        print(f"| {algorithm} | {got['steps']} | {got['total']:.2f} | " + " | ".join(shares)
              + f" | {bare:.2f} | {'–' if theirs is None else f'{theirs:.2f}'} | "
              + ("–" if theirs is None else f"{got['total'] / theirs:.2f}x") + " |" + cells, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
