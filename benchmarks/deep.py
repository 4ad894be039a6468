"""plcore-deep: time per epoch and peak memory against a plain PyTorch training loop.

Run from the repository root::

    .venv/bin/python benchmarks/deep.py [--device cpu|cuda] [--n 20000] [--epochs 5] [--repeats 3]

For every learner it trains the same network (the default MLP, 500 hidden units) on the same
data (synthetic Gaussian classes, ``n`` rows, d = 100, q = 10, uniform bags of r = 3 false
positives) and compares two implementations, each in a fresh process so that the peak
memory is its own:

* ``plcore``: the learner's ``fit`` (data on the device as two tensors, rows indexed in place);
* ``plain``: the textbook loop a user would write -- a ``TensorDataset`` and a shuffling
  ``DataLoader``, PRODEN's weighted cross-entropy and per-batch confidence update (for CC its
  loss, no update) written inline.

Printed: seconds per epoch (median of ``repeats`` fits after one warm-up fit), the ratio
plain / plcore (> 1: plcore is faster), and the peak resident memory of the process (CPU)
or the peak CUDA allocation (GPU). A second table gives the held-out accuracy on digits
with r = 3 (the defaults), trained on the chosen device.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

LEARNERS = ("proden", "rc", "cc", "lws", "cavl", "pop")


def _classes() -> dict:
    """Option name -> class, for the names of ``LEARNERS``."""
    from plcore_deep import CavlLearner, CcLearner, LwsLearner, PopLearner, ProdenLearner, RcLearner

    return {"proden": ProdenLearner, "rc": RcLearner, "cc": CcLearner, "lws": LwsLearner, "cavl": CavlLearner,
            "pop": PopLearner}


def _data(n, d=100, q=10, r=3, seed=0):
    from plcore.datasets.bags import UniformBags

    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=n)
    X = rng.normal(size=(n, d)) + 0.5 * rng.normal(size=(q, d))[y]
    return X.astype(np.float64), UniformBags(r=r).generate(y, random_state=seed), y


def _plain_fit(X, S, *, method, epochs, device, seed):
    """The straightforward loop: DataLoader batches, the loss and update written inline."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(X.shape[1], 500), nn.ReLU(), nn.Linear(500, S.shape[1])).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    Xt, St = torch.tensor(X, dtype=torch.float32), torch.tensor(S, dtype=torch.float32)
    conf = (St / St.sum(1, keepdim=True)).to(device)
    loader = DataLoader(TensorDataset(Xt, St, torch.arange(len(Xt))), batch_size=128, shuffle=True)
    for _ in range(epochs):
        for xb, sb, idx in loader:
            xb, sb, idx = xb.to(device), sb.to(device), idx.to(device)
            out = model(xb)
            p = torch.softmax(out, 1)
            if method == "cc":
                loss = -torch.log((p * sb).sum(1)).mean()
            else:
                loss = -(conf[idx] * torch.log_softmax(out, 1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if method != "cc":
                w = p.detach() * sb
                conf[idx] = w / w.sum(1, keepdim=True)
    if device != "cpu":
        torch.cuda.synchronize()


def _one(impl, method, n, epochs, repeats, device):
    """Seconds per epoch (median) and peak memory of one implementation, in this process."""
    import torch

    CLASSES = _classes()

    X, S, _ = _data(n)
    times = []
    for rep in range(repeats + 1):                    # the first fit warms up (allocator, kernels)
        start = time.perf_counter()
        if impl == "plcore":
            CLASSES[method](n_epochs=epochs, device=device, random_state=rep).fit(X, S)
        else:
            _plain_fit(X, S, method="cc" if method == "cc" else "proden", epochs=epochs, device=device, seed=rep)
        if rep:
            times.append((time.perf_counter() - start) / epochs)
    if device == "cpu":
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # MiB (Linux: KiB)
    else:
        peak = torch.cuda.max_memory_allocated() / 2**20
    return {"s_per_epoch": float(np.median(times)), "peak_mib": peak}


def _accuracy(device):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from plcore.datasets.bags import UniformBags
    CLASSES = _classes()

    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=3).generate(y, random_state=0)
    X_tr, X_te, S_tr, _, _, y_te = train_test_split(X, S, y, test_size=0.25, random_state=0)
    sc = StandardScaler().fit(X_tr)
    rows = []
    for name in LEARNERS:
        start = time.perf_counter()
        est = CLASSES[name](device=device, random_state=0).fit(sc.transform(X_tr), S_tr)
        acc = float(np.mean(est.predict(sc.transform(X_te)) == y_te))
        rows.append((name, acc, time.perf_counter() - start))
    return rows


def table_rows(quick: bool = True) -> list[dict]:
    """Row for ``benchmarks/run_all.py``: PRODEN's time per epoch, the plain PyTorch loop
    (DataLoader, loss and update inline) / plcore's loop, same process, CPU."""
    n, epochs = (4000, 2) if quick else (20000, 3)
    plain = _one("plain", "proden", n, epochs, 2, "cpu")["s_per_epoch"]
    ours = _one("plcore", "proden", n, epochs, 2, "cpu")["s_per_epoch"]
    return [{
        "method": "proden (plcore-deep)",
        "measure": (f"time per epoch, n={n}, d=100, MLP 500, batch 128: plcore {ours:.3f} s vs plain PyTorch "
                    f"loop {plain:.3f} s"),
        "ratio": float(plain / ours), "goal": ">= 1x (no slower than the plain PyTorch loop)",
        "met": bool(plain / ours >= 1.0),
        "note": "benchmarks/deep.py, measured in this run, CPU",
    }]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS)
    ap.add_argument("--one", nargs=2, metavar=("IMPL", "LEARNER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(*args.one, args.n, args.epochs, args.repeats, args.device)))
        return 0
    import torch

    print(f"torch {torch.__version__}, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else
             f" ({torch.get_num_threads()} threads)") + f"; n={args.n}, d=100, q=10, r=3, MLP 500, batch 128")
    print("\n| learner | plcore s/epoch | plain loop s/epoch | ratio plain/plcore | plcore peak MiB | plain peak MiB |")
    print("|---|---|---|---|---|---|")
    base = [sys.executable, __file__, "--device", args.device, "--n", str(args.n), "--epochs", str(args.epochs),
            "--repeats", str(args.repeats), "--one"]
    for name in args.learners:
        res = {impl: json.loads(subprocess.run(base + [impl, name], capture_output=True, text=True,
                                               check=True).stdout.strip().splitlines()[-1])
               for impl in ("plcore", "plain")}
        p, q = res["plcore"], res["plain"]
        print(f"| {name} | {p['s_per_epoch']:.4f} | {q['s_per_epoch']:.4f} | {q['s_per_epoch'] / p['s_per_epoch']:.2f} "
              f"| {p['peak_mib']:.0f} | {q['peak_mib']:.0f} |", flush=True)
    print("\n| learner | digits r=3 held-out accuracy | fit s |")
    print("|---|---|---|")
    for name, acc, secs in _accuracy(args.device):
        print(f"| {name} | {acc:.3f} | {secs:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
