"""Threads of a deep fit: per-step time on one thread and on every core, and two fits side by side.

Run from the repository root (nothing else running)::

    PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/deep_threads.py [--quick]

Part 1, the threshold of ``n_threads="auto"`` (``plcore_deep._threads.SMALL_STEP_FLOPS``): PRODEN
trained a few epochs on random data of each shape, once on one thread and once on every core
this process may use, in the same process; the time per step and the step's arithmetic
(``_threads.step_flops``). A shape where every core is not clearly faster than one belongs below
the threshold.

Part 2, two fits side by side: the published recipe (``experiment=deep_published``'s learner:
3 x 300 units with batch norm, batch 16, one-cycle Adam) on lost, one 80/20 split, in fresh
processes: one alone, then two at once, with ``n_threads="auto"`` and with every core
(PyTorch's default before ``"auto"``). A pair that runs past 3 x the single run's time plus 30 s
is stopped and reported as such. Without lost (``PLCORE_DATA_HOME``), the embedded digits.

Prints markdown tables; ``table_rows`` gives ``benchmarks/run_all.py`` the side-by-side row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

#: (label, network, n_features, n_classes, hidden, batch_size)
SHAPES = (
    ("MLP 108-500-16, batch 16 (lost, the published batch)", "mlp", 108, 16, (500,), 16),
    ("MLP 108-3x300-16, batch 16 (lost, the published network)", "mlp", 108, 16, (300, 300, 300), 16),
    ("MLP 108-500-16, batch 128 (lost, PLENCH)", "mlp", 108, 16, (500,), 128),
    ("MLP 784-500-10, batch 256 (Fashion-MNIST rows)", "mlp", 784, 10, (500,), 256),
    ("LeNet-5 28x28, batch 256 (Fashion-MNIST)", "lenet", 784, 10, (), 256),
)

_CHILD = r"""
import json, sys, time
import numpy as np
from plcore.datasets import load_dataset
from plcore_deep import ProdenLearner
args = json.loads(sys.argv[1])
if args["data_home"]:
    ds = load_dataset("lost", data_home=args["data_home"])
    X, S = ds.X, ds.S
else:
    from sklearn.datasets import load_digits
    from plcore.datasets.bags import UniformBags
    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=3).generate(y, random_state=0)
rng = np.random.RandomState(0)
train = rng.permutation(X.shape[0])[: int(0.8 * X.shape[0])]
X = (X - X[train].mean(0)) / (X[train].std(0) + 1e-12)
est = ProdenLearner(hidden_layer_sizes=(300, 300, 300), batch_norm=True, learning_rate=0.01, lr_schedule="one_cycle",
                    weight_decay=1e-4, batch_size=16, n_epochs=args["epochs"], n_threads=args["threads"],
                    device="cpu", random_state=0)
t0 = time.perf_counter()
est.fit(X[train], S[train])
print(json.dumps({"seconds": time.perf_counter() - t0, "threads": est.n_threads_}))
"""


def per_step(quick: bool):
    """Part 1: ``[(label, flops, ms per step on 1 thread, on every core, cores)]``."""
    import torch  # noqa: F401 -- imported before timing

    from plcore_deep import ProdenLearner
    from plcore_deep._threads import available_cores, step_flops

    cores = available_cores()
    rows = []
    rng = np.random.RandomState(0)
    for label, network, d, q, hidden, batch in SHAPES:
        n = batch * (8 if quick else 24)
        X = rng.normal(size=(n, d))
        S = rng.rand(n, q) < 0.2
        S[np.arange(n), rng.randint(q, size=n)] = True
        times = {}
        for threads in (1, cores):
            est = ProdenLearner(network=network, hidden_layer_sizes=hidden, batch_size=batch, n_epochs=2,
                                n_threads=threads, device="cpu", random_state=0)
            est.fit(X, S)   # warm-up: allocations, thread pool
            t0 = time.perf_counter()
            est.fit(X, S)
            times[threads] = (time.perf_counter() - t0) / (2 * (n // batch)) * 1e3
        rows.append((label, step_flops(network, d, q, hidden, batch), times[1], times[cores], cores))
    return rows


def _children(n: int, threads, epochs: int, data_home, timeout: float):
    """``n`` fits at once in fresh processes: ``[seconds or None (stopped)]``."""
    arg = json.dumps({"threads": threads, "epochs": epochs, "data_home": data_home})
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, arg], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(n)]
    start, out = time.perf_counter(), []
    for p in procs:
        try:
            stdout, _ = p.communicate(timeout=max(1.0, timeout - (time.perf_counter() - start)))
            out.append(json.loads(stdout.strip().splitlines()[-1])["seconds"])
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            out.append(None)
    return out


def side_by_side(quick: bool, data_home=None):
    """Part 2: ``{setting: (alone s, [each of two at once s or None])}``."""
    from plcore_deep._threads import available_cores

    epochs = 5 if quick else 20
    out = {}
    for setting, threads in (("auto", "auto"), ("every core", available_cores())):
        alone = _children(1, threads, epochs, data_home, timeout=3600)[0]
        out[setting] = (alone, _children(2, threads, epochs, data_home, timeout=3 * alone + 30))
    return epochs, out


def _fmt(seconds):
    return "stopped" if seconds is None else f"{seconds:.1f}"


def table_rows(quick: bool = True) -> list[dict]:
    """The side-by-side row for ``benchmarks/run_all.py``."""
    epochs, out = side_by_side(quick, os.environ.get("PLCORE_DATA_HOME"))
    alone, pair = out["auto"]
    worst = max((s if s is not None else float("inf")) for s in pair)
    d_alone, d_pair = out["every core"]
    return [{"method": "deep learners: two fits side by side (n_threads=auto)",
             "measure": f"published recipe, lost, {epochs} epochs: alone {alone:.1f} s, two at once "
                        f"{' / '.join(_fmt(s) for s in pair)} s (slower / alone)",
             "ratio": float(worst / alone), "goal": "<= 1.3x", "met": bool(worst / alone <= 1.3),
             "note": f"every core (PyTorch's default): alone {_fmt(d_alone)} s, two at once "
                     f"{' / '.join(_fmt(s) for s in d_pair)} s; benchmarks/deep_threads.py"}]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and epochs")
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    args = ap.parse_args(argv)
    from plcore_deep._threads import SMALL_STEP_FLOPS

    print(f"Part 1: time per training step (PRODEN), one thread vs every core; threshold {SMALL_STEP_FLOPS:.0e}\n")
    print("| network and batch | MFLOP per step | 1 thread (ms) | every core (ms) | cores | 1 thread / every core | auto |")
    print("|---|---|---|---|---|---|---|")
    for label, flops, t1, tn, cores, in per_step(args.quick):
        auto = "1" if flops < SMALL_STEP_FLOPS else str(cores)
        print(f"| {label} | {flops / 1e6:.1f} | {t1:.2f} | {tn:.2f} | {cores} | {t1 / tn:.2f} | {auto} |", flush=True)
    epochs, out = side_by_side(args.quick, args.data_home)
    print(f"\nPart 2: the published recipe on {'lost' if args.data_home else 'digits'}, one 80/20 split, {epochs} epochs, "
          "fresh processes\n")
    print("| threads | alone (s) | two at once (s) | slower of the two / alone |")
    print("|---|---|---|---|")
    for setting, (alone, pair) in out.items():
        worst = max((s if s is not None else float("inf")) for s in pair)
        ratio = f"{worst / alone:.2f}x" if np.isfinite(worst) else f"> {(3 * alone + 30) / alone:.1f}x (stopped)"
        print(f"| {setting} | {alone:.1f} | {' / '.join(_fmt(s) for s in pair)} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
