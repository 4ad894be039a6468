"""PLC benchmark: batched OSQP steps vs one OSQP call per row, and a full run at n = 5000.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        .venv/bin/python benchmarks/plc.py [--n-steps 1000] [--n-full 5000] [--skip-full]

Part 1 times the W step (Eq. (11), n QPs with k variables) and the F row step (Eq. (13),
n QPs with q variables) on synthetic BirdSong-like data (d = 38, q = 13): batched into one
block-diagonal OSQP problem (first call = setup + solve; later calls = update + warm
start, as inside a fit) vs the straightforward loop with one OSQP setup+solve per row.
Part 2 fits PlcClusterer with the defaults on n = 5000 samples (run in a child process so
that its peak RSS is its own) and reports wall time, peak memory and ACC/NMI.
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import osqp
import scipy.sparse as sp


def synthetic(n, d=38, q=13, seed=0, rho=0.1, r=1):
    from sklearn.datasets import make_blobs

    rng = np.random.RandomState(seed)
    centers = rng.uniform(-3, 3, size=(q, d))
    X, y = make_blobs(n_samples=n, centers=centers, cluster_std=2.0, random_state=seed)
    S = np.ones((n, q), bool)
    lab = rng.rand(n) < rho
    S[lab] = False
    S[lab, y[lab]] = True
    for i in np.nonzero(lab)[0]:
        S[i, rng.choice(np.setdiff1d(np.arange(q), [y[i]]), size=r, replace=False)] = True
    return X, S, y


def per_row(Q, c, upper, settings):
    """The straightforward version: one OSQP problem per row (setup + solve each)."""
    n, m = c.shape
    out = np.empty((n, m))
    A = sp.vstack([sp.csc_matrix(np.ones((1, m))), sp.identity(m, format="csc")], format="csc")
    for j in range(n):
        Qj = Q[j] if Q.ndim == 3 else Q[j] * np.eye(m)
        P = sp.triu(sp.csc_matrix(2.0 * 0.5 * (Qj + Qj.T)), format="csc")
        s = osqp.OSQP()
        s.setup(P, c[j], A, np.r_[1.0, np.zeros(m)], np.r_[1.0, upper[j]], **settings)
        out[j] = s.solve(raise_error=False).x
    return out


def bench_steps(n):
    from plcore.utils import normalise_rows
    from plcore_plc._graph import gram_blocks, knn, neighbour_sqdist, symmetrise, t_matrix, weights_matrix
    from plcore_plc._qp import DEFAULT_OSQP, BatchedSimplexQP, f_row_step

    X, S, _ = synthetic(n)
    Y = S.astype(float)
    q = Y.shape[1]
    Z = normalise_rows((X - X.mean(0)) / X.std(0))
    nbr = knn(Z, 10)
    k = nbr.shape[1]
    Gx = gram_blocks(Z, nbr)
    settings = dict(DEFAULT_OSQP)
    rows = []

    # W step, Eq. (1) then Eq. (11)
    qp = BatchedSimplexQP(n, k)
    t = time.perf_counter(); w = qp.solve(Gx, np.zeros((n, k))); t_setup = time.perf_counter() - t
    F = Y / Y.sum(1, keepdims=True)
    rng = np.random.RandomState(0)
    M = rng.rand(n, n); M = M + M.T
    Q = Gx + gram_blocks(F, nbr)
    c = 0.01 * neighbour_sqdist(M, nbr) + 0.01 * neighbour_sqdist(M.T.copy(), nbr)
    t = time.perf_counter(); w2 = qp.solve(Q, c, x0=w); t_upd = time.perf_counter() - t
    t = time.perf_counter(); ref = per_row(Q, c, np.ones((n, k)), settings); t_loop = time.perf_counter() - t
    rows.append(("W step, Eq. (11)", n, k, t_setup, t_upd, t_loop, np.abs(w2 - ref).max()))

    # F row step, Eq. (13)
    W = symmetrise(weights_matrix(w, nbr))
    T = t_matrix(W)
    fq = BatchedSimplexQP(n, q, diagonal=True, upper=Y)
    t = time.perf_counter(); F1, *_ = f_row_step(T, F, fq); t_setup = time.perf_counter() - t
    TF = T @ F1 + T.T @ F1
    tt = np.maximum(T.diagonal(), 1e-12)
    cF = TF - 2 * tt[:, None] * F1
    t = time.perf_counter(); rows_b = fq.solve(tt, cF, x0=F1); t_upd = time.perf_counter() - t
    t = time.perf_counter(); ref = per_row(tt, cF, Y, settings); t_loop = time.perf_counter() - t
    rows.append(("F rows, Eq. (13)", n, q, t_setup, t_upd, t_loop, np.abs(rows_b - ref).max()))

    print(f"\n### Batched vs per-row OSQP (n = {n}, d = 38, q = 13, k = 10; eps 1e-7, polishing)\n")
    print("| step | n QPs | vars/QP | batched: setup+solve (s) | batched: update+warm solve (s) "
          "| per-row loop (s) | ratio loop / setup+solve | ratio loop / update | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, nn, m, a, b, lp, diff in rows:
        print(f"| {name} | {nn} | {m} | {a:.3f} | {b:.3f} | {lp:.3f} | {lp / a:.1f}x | {lp / b:.1f}x | {diff:.1e} |")


def full_child(n):
    from plcore.metrics import clustering_accuracy, nmi
    from plcore_plc import PlcClusterer

    X, S, y = synthetic(n)
    X = (X - X.mean(0)) / X.std(0)
    unl = S.all(axis=1)
    t = time.perf_counter()
    est = PlcClusterer(random_state=0, osqp_options={"eps_abs": 1e-5, "eps_rel": 1e-5}).fit(X, S)
    wall = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n": n, "wall_s": wall, "peak_mb": peak_mb,
                      "acc": clustering_accuracy(y[unl], est.labels_[unl]),
                      "nmi": nmi(y[unl], est.labels_[unl])}))


def bench_full(n):
    out = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True,
                         check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n### Full PLC run, synthetic n = {n}, d = 38, q = 13, rho = 0.1 (defaults, OSQP eps 1e-5)\n")
    print("| n | wall time (s) | peak RSS (MB) | ACC (unlabelled) | NMI |")
    print("|---|---|---|---|---|")
    print(f"| {r['n']} | {r['wall_s']:.1f} | {r['peak_mb']:.0f} | {r['acc']:.3f} | {r['nmi']:.3f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-steps", type=int, default=1000)
    ap.add_argument("--n-full", type=int, default=5000)
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--skip-steps", action="store_true")
    ap.add_argument("--child", type=int, default=None)
    a = ap.parse_args()
    if a.child is not None:
        full_child(a.child)
    else:
        if not a.skip_steps:
            bench_steps(a.n_steps)
        if not a.skip_full:
            bench_full(a.n_full)
