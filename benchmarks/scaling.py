"""Scaling table: fit time exponent and peak memory of every registered method, n = 1k .. 64k.

Run from the repository root (one thread; the full table takes most of an hour)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/scaling.py [--quick] [--cap 60] [--budget 3000] \\
        [--sizes 1000 2000 ...] [--methods learner:plknn reducer:cenda ...] [--output FILE] [--json FILE]
    .venv/bin/python benchmarks/scaling.py --render FILE.json      # re-print a saved run's tables

Data
----
Synthetic, the same for every method: ``sklearn.datasets.make_classification`` with
``n_features = d = 20`` (10 informative, 5 redundant), ``q = 10`` classes, one cluster per
class, ``random_state = 0``, then z-scored; uniform candidate sets: the true label plus
``r = 2`` distinct false labels drawn uniformly (``numpy`` seed 0), so every candidate set has
3 of the 10 labels. Each size n is its own sample of n rows. Learners and reducers are fitted
with ``fit(X, S)`` (``S`` the n x q 0/1 candidate matrix); clusterers with ``fit(X, S)`` too
(PLC uses the candidate sets, k-means and spectral clustering ignore them).

Methods
-------
Every learner, reducer and clusterer of ``plcore.registry.get_registry()`` (``--methods``
narrows it), built by ``registry.create(kind, name, **params)`` with its defaults, except
``random_state = 0`` where it exists and, for the deep learners (``plcore-deep``),
``n_epochs = 5`` on the CPU (``device = "cpu"``; batch 128, one hidden layer of 500: their
defaults), so that their time is 5 epochs, not 200.

Measurement
-----------
One fresh subprocess per method (its own imports, numba caches and memory), which first
fits once on 200 rows of the same distribution (untimed: numba compilation and lazy imports
happen there), then fits n = 1000, 2000, 4000, ... in turn. For each fit:

* **time**: wall seconds of ``est.fit(X, S)`` (``time.perf_counter``) on a fresh estimator;
  one fit, or the best of up to 3 while they add up to less than 1 s;
* **peak memory**: the peak resident set size during the fit minus the resident set size
  just before it (data already in memory; previous estimator deleted, ``gc.collect()`` and
  ``malloc_trim(0)`` first). The peak is Linux's ``VmHWM``, reset before each fit by writing
  ``5`` to ``/proc/self/clear_refs``, so the number is the fit's own extra memory.

A method stops at the first size whose fit took longer than ``--cap`` seconds (that size is
reported), or before a size whose predicted time (the last time scaled by the last local
exponent, at least 1) exceeds the cap or what is left of the method's share of
``--budget``; a fit that runs past its share plus the cap is killed. The share is the
budget left divided by the methods left, so quick methods give their unused time to the
slow ones. **Exponent** = least-squares slope of log(time) on log(n) over the (up to) four
largest sizes reached whose fit took at least 0.01 s (below that, fixed costs and timer
noise dominate); "-" when fewer than two did.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import json
import math
import os
import platform
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

D, Q, R = 20, 10, 2  # features, classes, false positives per candidate set
SIZES = (1000, 2000, 4000, 8000, 16000, 32000, 64000)
QUICK_SIZES = (1000, 2000, 4000)
QUICK_METHODS = ("learner:plknn", "learner:ipal", "learner:avg_perceptron", "reducer:cenda", "reducer:saute",
                 "clusterer:kmeans")
KINDS = ("learner", "reducer", "clusterer")
WARMUP_N = 200
DEEP_DISTRIBUTION = "plcore-deep"
DEEP_PARAMS = {"n_epochs": 5, "device": "cpu"}
MIN_TIME = 0.01  # seconds: fits shorter than this are left out of the exponent
SHORT = 1.0  # seconds: fits shorter than this are repeated (best of up to 3)


# ------------------------------------------------------------------------------ data
def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(X, S)``: n x D z-scored features, n x Q uniform candidate matrix (true + R others)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=D, n_informative=10, n_redundant=5, n_classes=Q,
                               n_clusters_per_class=1, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(seed)
    scores = rng.random((n, Q))
    scores[np.arange(n), y] = np.inf  # never a false positive
    S = np.zeros((n, Q), dtype=np.int64)
    S[np.arange(n)[:, None], np.argpartition(scores, R, axis=1)[:, :R]] = 1
    S[np.arange(n), y] = 1
    return X, S


# ------------------------------------------------------------------------------ memory
def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _release_memory() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ------------------------------------------------------------------------------ child
def build(kind: str, name: str):
    from plcore.registry import get_registry

    registry = get_registry()
    comp = registry.get(kind, name)
    est = registry.create(kind, name)
    params = {}
    names = est.get_params(deep=False)
    if "random_state" in names:
        params["random_state"] = 0
    if comp.distribution == DEEP_DISTRIBUTION:
        params.update({k: v for k, v in DEEP_PARAMS.items() if k in names})
    return est.set_params(**params), params


def child(kind: str, name: str, sizes: list[int], cap: float, allowance: float) -> None:
    """Fit ``kind:name`` at each size; one JSON line per event on stdout."""

    def emit(**event):
        print(json.dumps(event), flush=True)

    t_start = time.perf_counter()
    est, params = build(kind, name)
    emit(event="params", params={k: repr(v) for k, v in params.items()})
    X, S = make_data(WARMUP_N, seed=1)
    t0 = time.perf_counter()
    est.fit(X, S)
    emit(event="warmup", seconds=time.perf_counter() - t0)
    del est
    last = []  # (n, seconds)
    for n in sizes:
        left = allowance - (time.perf_counter() - t_start)
        if last:
            pred = predict_next(last, n)
            if pred > cap:
                emit(event="stop", reason=f"next fit (n={n}) predicted {pred:.0f} s > cap {cap:.0f} s")
                return
            if pred > left:
                emit(event="stop", reason=f"next fit (n={n}) predicted {pred:.0f} s > {max(left, 0):.0f} s left "
                                          "of the method's time share")
                return
        X, S = make_data(n)
        est, _ = build(kind, name)
        _release_memory()
        exact = _reset_peak()
        rss0 = _status_kb("VmRSS")
        emit(event="start", n=n)
        t0 = time.perf_counter()
        est.fit(X, S)
        seconds = time.perf_counter() - t0
        peak = _status_kb("VmHWM")
        spent, repeats = seconds, 1
        while spent < SHORT and repeats < 3:  # a short fit: best of up to 3 (memory of the first)
            del est
            est, _ = build(kind, name)
            t0 = time.perf_counter()
            est.fit(X, S)
            again = time.perf_counter() - t0
            seconds, spent, repeats = min(seconds, again), spent + again, repeats + 1
        emit(event="fit", n=n, seconds=seconds, peak_mb=(peak - rss0) / 1024 if exact else None,
             rss_mb=rss0 / 1024)
        last.append((n, seconds))
        del est, X, S
        if seconds > cap:
            emit(event="stop", reason=f"fit took {seconds:.0f} s > cap {cap:.0f} s")
            return
    emit(event="stop", reason="all sizes")


def predict_next(points: list[tuple[int, float]], n: int) -> float:
    """The next fit's time: the last one scaled by the last local exponent (at least 1)."""
    n1, t1 = points[-1]
    slope = 1.0
    if len(points) >= 2:
        n0, t0 = points[-2]
        if t0 >= MIN_TIME and t1 >= MIN_TIME:
            slope = max(1.0, math.log(t1 / t0) / math.log(n1 / n0))
    return t1 * (n / n1) ** slope


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log t on log n over the (up to) 4 largest sizes with t >= MIN_TIME."""
    pts = [(n, t) for n, t in points if t >= MIN_TIME][-4:]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


# ------------------------------------------------------------------------------ parent
def _env() -> dict:
    """The children's environment: one thread each, the data home (as ``run_all.py``'s)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run_all import _env as run_all_env

    return run_all_env()


def run_method(kind: str, name: str, sizes, cap: float, allowance: float, log) -> dict:
    """Run the child for one method; returns its record (fits, stop reason, seconds)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, name, "--cap", str(cap),
           "--allowance", str(allowance), "--sizes", *map(str, sizes)]
    rec = {"kind": kind, "name": name, "fits": [], "stop": None, "params": {}, "warmup_s": None}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: queue.Queue = queue.Queue()
    err_tail: list[str] = []

    def pump_out():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err():  # keep the last lines, for the reason of a failure
        for line in proc.stderr:
            err_tail.append(line)
            del err_tail[:-20]

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    deadline = t0 + allowance + cap + 60  # hard limit: the share, one capped fit, start-up
    running_n = None
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            os.killpg(proc.pid, signal.SIGKILL)
            rec["stop"] = (f"killed: fit at n={running_n} still running after "
                           f"{time.perf_counter() - t0:.0f} s (time share)" if running_n else "killed (time share)")
            break
        if line is None:
            break
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # something the method printed
        if ev["event"] == "params":
            rec["params"] = ev["params"]
        elif ev["event"] == "warmup":
            rec["warmup_s"] = ev["seconds"]
        elif ev["event"] == "start":
            running_n = ev["n"]
            log(f"  {kind}:{name} n={running_n} ...")
        elif ev["event"] == "fit":
            running_n = None
            rec["fits"].append({"n": ev["n"], "seconds": ev["seconds"], "peak_mb": ev["peak_mb"]})
            log(f"  {kind}:{name} n={ev['n']}: {ev['seconds']:.2f} s, peak +{ev['peak_mb'] or float('nan'):.1f} MB")
        elif ev["event"] == "stop":
            rec["stop"] = ev["reason"]
    proc.wait()
    if rec["stop"] is None:
        msg = next((line.strip() for line in reversed(err_tail) if line.strip()), "no output")
        rec["stop"] = f"failed at n={running_n}: {msg}" if running_n else f"failed: {msg}"
    rec["seconds"] = time.perf_counter() - t0
    return rec


def all_methods() -> list[str]:
    from plcore.registry import get_registry

    registry = get_registry()
    out = []
    for kind in KINDS:
        for name in registry.names(kind):
            comp = registry.get(kind, name)
            if comp.distribution in ("plcore-example-plugin", "plcore-broken-plugin", "plcore-shadow-plugin"):
                continue
            out.append(f"{kind}:{name}")
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def _git(*args) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30).stdout
        return out.rstrip("\n")  # not strip(): a porcelain line starts with a space
    except (OSError, subprocess.SubprocessError):
        return "?"


def run(methods, sizes, cap, budget, log) -> dict:
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    # uncommitted changes to the code that is measured (not to benchmarks, docs or tests)
    dirty = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()
             if not line[3:].startswith(("benchmarks/", "docs/", "tests/", "mkdocs.yml"))]
    meta = {"command": " ".join(["benchmarks/scaling.py", *sys.argv[1:]]),
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _git("rev-parse", "--short", "HEAD"), "uncommitted": dirty,
            "machine": f"{platform.node()}: {os.cpu_count()} CPUs ({_cpu_model()}), "
                       f"Python {platform.python_version()}, {platform.system()} {platform.release()}",
            "sizes": list(sizes), "cap": cap, "budget": budget, "d": D, "q": Q, "r": R,
            "threads": os.environ.get("OMP_NUM_THREADS", "(unset: 1 set for the children)")}
    records = []
    for i, method in enumerate(methods):
        kind, name = method.split(":", 1)
        left = budget - (time.perf_counter() - t0)
        share = max(left / (len(methods) - i), 0.0)
        log(f"[{i + 1}/{len(methods)}] {method}: time share {share:.0f} s")
        if share < 5:
            records.append({"kind": kind, "name": name, "fits": [], "stop": "run budget spent", "seconds": 0.0})
            continue
        rec = run_method(kind, name, sizes, cap, share, log)
        log(f"[{i + 1}/{len(methods)}] {method}: {rec['stop']} ({rec['seconds']:.0f} s)")
        records.append(rec)
    meta["seconds"] = time.perf_counter() - t0
    return {"meta": meta, "records": records}


# ------------------------------------------------------------------------------ tables
def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _mb(x) -> str:
    if x is None:
        return "?"
    x = max(x, 0.0)
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def render(result: dict) -> str:
    meta, records = result["meta"], result["records"]
    sizes = meta["sizes"]
    head = [f"Command: `{meta['command']}`; {meta['date']}; commit {meta['commit']}"
            + (f" with uncommitted changes in {len(meta['uncommitted'])} files" if meta.get("uncommitted") else "")
            + f"; {meta['machine']}; {meta['threads']} thread(s); cap {meta['cap']:.0f} s per fit, "
              f"budget {meta['budget']:.0f} s, took {meta['seconds']:.0f} s.",
            f"Data: d = {meta['d']}, q = {meta['q']}, candidate sets = true label + {meta['r']} uniform "
            "false positives.", ""]
    cols = ["kind", "method", "exponent", "largest n", "stopped because"] + [_k(n) for n in sizes]
    t_lines = ["Fit time (s):", "", "| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    m_lines = ["Peak memory during fit (MB above the RSS before it):", "",
               "| " + " | ".join(["kind", "method"] + [_k(n) for n in sizes]) + " |",
               "|" + " --- |" * (2 + len(sizes))]
    for rec in records:
        fits = {f["n"]: f for f in rec["fits"]}
        expo = exponent([(f["n"], f["seconds"]) for f in rec["fits"]])
        largest = _k(max(fits)) if fits else "-"
        times = [f"{fits[n]['seconds']:.3g}" if n in fits else "" for n in sizes]
        mems = [_mb(fits[n]["peak_mb"]) if n in fits else "" for n in sizes]
        stop = (rec["stop"] or "").replace("|", "\\|")
        t_lines.append("| " + " | ".join([rec["kind"], rec["name"], "-" if expo is None else f"{expo:.2f}", largest,
                                          stop, *times]) + " |")
        m_lines.append("| " + " | ".join([rec["kind"], rec["name"], *mems]) + " |")
    return "\n".join(head + t_lines + [""] + m_lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Fit time exponent and peak memory of every registered method.")
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, methods {QUICK_METHODS}, cap 30 s")
    ap.add_argument("--sizes", type=int, nargs="+")
    ap.add_argument("--methods", nargs="+", metavar="KIND:NAME", help="default: every learner, reducer, clusterer")
    ap.add_argument("--cap", type=float, help="seconds per fit (default 60, 30 with --quick)")
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds for the whole run (default 3600)")
    ap.add_argument("--output", type=Path, help="also write the markdown to this file")
    ap.add_argument("--json", type=Path, help="write the raw results to this JSON file")
    ap.add_argument("--render", type=Path, metavar="JSON", help="print the tables of a saved --json run")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "NAME"), help=argparse.SUPPRESS)
    ap.add_argument("--allowance", type=float, default=math.inf, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        child(*args.child, args.sizes or list(SIZES), args.cap or 60.0, args.allowance)
        return 0
    if args.render:
        sys.stdout.write(render(json.loads(args.render.read_text())))
        return 0
    sizes = args.sizes or list(QUICK_SIZES if args.quick else SIZES)
    methods = args.methods or (list(QUICK_METHODS) if args.quick else all_methods())
    cap = args.cap or (30.0 if args.quick else 60.0)

    def log(msg):
        print(f"scaling: {msg}", file=sys.stderr, flush=True)

    result = run(methods, sizes, cap, args.budget, log)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    text = render(result)
    sys.stdout.write(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
