"""PLC benchmark: scaling of the default fit vs the dense S/D solver, and the F step.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        .venv/bin/python benchmarks/plc.py [--sizes 5000 20000 50000] [--dense-max 5000] \
                                           [--timeout 3600] [--part2-n 5000] [--skip-part2]
    ... benchmarks/plc.py --eigen 1000 2000 3000 5000

Data: synthetic, BirdSong-like (d = 38, q = 13): Gaussian blobs; a fraction rho = 0.1 of
the rows is labelled (true label + one false positive), the others are unlabelled (all q
labels as candidates). ACC and NMI: the clustering against the true labels on the
unlabelled rows.

Part 1 fits ``PlcClusterer(random_state=0)`` with the defaults (``sd_solver="classwise"``:
Eq. (14) exactly per pseudo-label class, O(q n) memory) at every ``--sizes`` n and, for
n <= ``--dense-max``, with ``sd_solver="dense"`` (the demo's n x n S and D, about
8 * 6 * n^2 bytes). Every fit runs in a fresh child process (after a 200-sample warm-up
fit that loads the compiled kernels), so that its peak RSS is its own; a child that runs
past ``--timeout`` seconds is stopped. ``f_init iters`` = iterations of the initial
Eq. (12) solve (``f_init_info_["n_iter"]``).

Part 2 takes T of Eq. (12) from the Eq. (1) weights of a ``--part2-n`` problem (as a fit
does) and times ``solve_eq12`` (restarted FISTA) to its default tolerance against
repeated ``sequential_pass`` sweeps (the demo's Eq. (13) pass) until the same Frank-Wolfe
gap target (at most ``--max-sweeps``; the gap checks are not timed); then one compiled
``sequential_pass`` against its plain-Python reference (``jit=False``) at ``--python-n``
(best of 3). Part 3 times the W step (Eq. (11), n QPs over the simplex, k = 10 and 40):
the compiled solver (``plcore_plc._simplex``) against one block-diagonal OSQP problem of all
blocks, and the difference of their objectives. Part 4 (``--eigen 1000 2000 3000 5000``, alone)
times the spectral step's eigensolvers on PLC's own final W: dense ``eigh`` against LOBPCG, and
how far apart their embedded subspaces are (the measurement behind ``_spectral.DENSE_MAX``).
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np


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


def child(n, sd_solver):
    """One fit in this (fresh) process; prints a JSON line."""
    from plcore.metrics import clustering_accuracy, nmi
    from plcore_plc import PlcClusterer

    PlcClusterer(random_state=0, sd_solver=sd_solver).fit(*synthetic(200)[:2])  # warm-up
    X, S, y = synthetic(n)
    unl = S.all(axis=1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    est = PlcClusterer(random_state=0, sd_solver=sd_solver).fit(X, S)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall_s": wall, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "before_mb": before, "acc": clustering_accuracy(y[unl], est.labels_[unl]),
                      "nmi": nmi(y[unl], est.labels_[unl]), "f_iters": est.f_init_info_["n_iter"],
                      "components": getattr(est, "n_graph_components_", None)}))


def run_child(n, sd_solver, timeout):
    """The child's JSON result, or a string saying why there is none."""
    cmd = [sys.executable, __file__, "--child", str(n), sd_solver]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out (> {timeout:.0f} s)"
    if res.returncode != 0:
        return f"failed (exit {res.returncode})"
    return json.loads(res.stdout.strip().splitlines()[-1])


def fit_cells(r, n_cells):
    """Table cells of one child result: time, peak RSS, ACC, NMI[, f_init iters]."""
    if isinstance(r, str):
        return [r] + ["-"] * (n_cells - 1)
    cells = [f"{r['wall_s']:.2f}", f"{r['peak_mb']:.0f}", f"{r['acc']:.3f}", f"{r['nmi']:.3f}",
             str(r["f_iters"])]
    return cells[:n_cells]


def part1(sizes, dense_max, timeout):
    ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    print("\n### Part 1: PlcClusterer fit, classwise (default) vs dense S/D "
          "(synthetic d = 38, q = 13, rho = 0.1)\n")
    print("| n | classwise: time (s) | peak RSS (MB) | ACC | NMI | f_init iters "
          "| dense: time (s) | peak RSS (MB) | ACC | NMI | time dense / classwise "
          "| peak RSS dense / classwise |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    baselines = []
    for n in sizes:
        cw = run_child(n, "classwise", timeout)
        if n > dense_max:
            dense, ratios = (f"not run (n > --dense-max): S and D need ~{48.0 * n * n / 1e9:.1f} GB "
                             f"(8 * 6 * n^2 B), machine RAM {ram_gb:.0f} GB"), ["-", "-"]
        else:
            dense = run_child(n, "dense", timeout)
            ratios = (["-", "-"] if isinstance(cw, str) or isinstance(dense, str) else
                      [f"{dense['wall_s'] / cw['wall_s']:.1f}x", f"{dense['peak_mb'] / cw['peak_mb']:.1f}x"])
        baselines += [r["before_mb"] for r in (cw, dense) if isinstance(r, dict)]
        print("| " + " | ".join([str(n)] + fit_cells(cw, 5) + fit_cells(dense, 4) + ratios) + " |",
              flush=True)
    if baselines:
        print(f"\nPeak RSS = the child process's maximum resident set, including Python, the imports, "
              f"the data and a 200-sample warm-up fit ({min(baselines):.0f}-{max(baselines):.0f} MB "
              f"before the timed fit).")


def eq12_problem(n):
    """T of Eq. (12) from the Eq. (1) weights of synthetic(n), as in a fit, and Y."""
    from plcore.utils import normalise_rows
    from plcore_plc._graph import gram_blocks, knn, t_matrix, weights_matrix
    from plcore_plc._simplex import solve_simplex_qps

    X, S, _ = synthetic(n)
    Z = normalise_rows((X - X.mean(0)) / X.std(0))
    nbr = knn(Z, 10)
    w, _ = solve_simplex_qps(gram_blocks(Z, nbr), np.zeros(nbr.shape))
    return t_matrix(weights_matrix(w, nbr).T), S.astype(np.float64)


def osqp_simplex_qps(Q, c):
    """The straightforward batched solve of the W step: ONE block-diagonal OSQP problem of all
    n blocks (eps 1e-5, polishing), as plcore did before the compiled solver."""
    import osqp
    import scipy.sparse as sp

    from plcore.utils import osqp_settings, osqp_solution, upper_block_pattern

    n, k = c.shape
    indptr, indices, r, col = upper_block_pattern(n, k)
    Qs = 0.5 * (Q + np.transpose(Q, (0, 2, 1)))
    P = sp.csc_matrix(((2.0 * Qs[:, r, col]).ravel(), indices, indptr), shape=(n * k, n * k))
    rows = np.repeat(np.arange(n), k)
    A = sp.vstack([sp.csc_matrix((np.ones(n * k), (rows, np.arange(n * k))), shape=(n, n * k)),
                   sp.identity(n * k, format="csc")], format="csc")
    solver = osqp.OSQP()
    solver.setup(P, c.ravel(), A, np.r_[np.ones(n), np.zeros(n * k)], np.r_[np.ones(n), np.ones(n * k)],
                 **osqp_settings(1e-5, max_iter=200_000))
    x = np.clip(osqp_solution(solver.solve(raise_error=False), "W step").reshape(n, k), 0.0, None)
    return x / x.sum(axis=1, keepdims=True)


def part3(n):
    """The W step (Eq. (11)) at k = 10 and 40: the compiled solver vs one batched OSQP problem."""
    from plcore.utils import normalise_rows
    from plcore_plc._graph import gram_blocks, knn
    from plcore_plc._simplex import block_objectives, solve_simplex_qps

    X, _, y = synthetic(n)
    Z = normalise_rows((X - X.mean(0)) / X.std(0))
    F = np.eye(int(y.max()) + 1)[y] * 0.8 + 0.2 / (int(y.max()) + 1)
    print(f"\n### Part 3: the W step, Eq. (11), n = {n}: compiled simplex FISTA vs one batched OSQP "
          "problem\n")
    print("| k | compiled (s) | OSQP (s) | ratio OSQP / compiled | objective: compiled - OSQP (sum over blocks) |")
    print("|---|---|---|---|---|")
    solve_simplex_qps(np.eye(3)[None], np.zeros((1, 3)))  # load the kernel
    for k in (10, 40):
        nbr = knn(Z, k)
        Q = gram_blocks(Z, nbr) + gram_blocks(F, nbr)
        c = 0.01 * np.random.RandomState(0).rand(n, k) * n / 10
        t0 = time.perf_counter()
        w, _ = solve_simplex_qps(Q, c)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        w_osqp = osqp_simplex_qps(Q, c)
        t_osqp = time.perf_counter() - t0
        diff = float(np.sum(block_objectives(Q, c, w) - block_objectives(Q, c, w_osqp)))
        print(f"| {k} | {t_ours:.3f} | {t_osqp:.3f} | {t_osqp / t_ours:.1f}x | {diff:.2e} |")


def best_of(fn, repeats=3):
    """Best wall time of ``repeats`` calls and the last result."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def part2(n, python_n, max_sweeps):
    from plcore_plc._simplex import fw_gap, objective, sequential_pass, solve_eq12

    tol = inspect.signature(solve_eq12).parameters["tol"].default
    T, Y = eq12_problem(200)
    solve_eq12(T, Y)  # compile / load the kernels
    sequential_pass(T, Y / Y.sum(1, keepdims=True), Y)

    T, Y = eq12_problem(n)
    F0 = Y / Y.sum(1, keepdims=True)
    target = tol * objective(T, F0)
    t0 = time.perf_counter()
    F_fista, info = solve_eq12(T, Y)
    t_fista = time.perf_counter() - t0
    F, t_seq, sweeps, gap = F0, 0.0, 0, np.inf
    while sweeps < max_sweeps and gap > target:
        t0 = time.perf_counter()
        F = sequential_pass(T, F, Y)
        t_seq += time.perf_counter() - t0
        sweeps += 1
        gap = fw_gap(2.0 * (T @ F), F, Y)
    reached = "yes" if gap <= target else f"NO (cap {max_sweeps} hit)"
    print(f"\n### Part 2: Eq. (12) at n = {n}, q = {Y.shape[1]}, nnz(T) = {T.nnz}: solve_eq12 vs "
          f"sequential_pass sweeps, to Frank-Wolfe gap <= tol * objective(uniform F), tol = {tol:g}\n")
    print("| method | iterations | time (s) | objective | gap / target | target reached |")
    print("|---|---|---|---|---|---|")
    print(f"| solve_eq12 (restarted FISTA) | {info['n_iter']} | {t_fista:.3f} | {info['objective']:.6e} "
          f"| {info['gap'] / target:.2f} | {'yes' if info['gap'] <= target else 'NO'} |")
    print(f"| sequential_pass sweeps | {sweeps} | {t_seq:.3f} | {objective(T, F):.6e} "
          f"| {gap / target:.2f} | {reached} |")
    print(f"\nTime ratio sweeps / solve_eq12: {t_seq / t_fista:.1f}x"
          f"{'' if gap <= target else ' (a lower bound: the sweeps stopped at the cap)'}; "
          f"max |F_sweeps - F_fista| = {np.abs(F - F_fista).max():.1e}.")

    T, Y = eq12_problem(python_n)
    F0 = Y / Y.sum(1, keepdims=True)
    t_jit, F_jit = best_of(lambda: sequential_pass(T, F0, Y))
    t_py, F_py = best_of(lambda: sequential_pass(T, F0, Y, jit=False))
    print(f"\n### Part 2: one sequential_pass at n = {python_n}, compiled vs plain Python (jit=False), "
          f"best of 3\n")
    print("| compiled (s) | plain Python (s) | ratio Python / compiled | max abs diff |")
    print("|---|---|---|---|")
    print(f"| {t_jit:.4f} | {t_py:.3f} | {t_py / t_jit:.0f}x | {np.abs(F_jit - F_py).max():.1e} |")


def part4(sizes, q=13):
    """The spectral step's eigensolvers on PLC's own final W (synthetic data, defaults): dense
    ``eigh`` vs LOBPCG, time and agreement of the embedded subspaces (how DENSE_MAX was set)."""
    import scipy.linalg

    from plcore_plc import PlcClusterer
    from plcore_plc._spectral import njw_embedding

    print(f"\n### Part 4: the spectral step's eigensolvers on PLC's final W (q = {q}), best of 3\n")
    print("| n | components of W | dense eigh (s) | LOBPCG (s) | ratio dense / LOBPCG | LOBPCG vs dense: min cos "
          "principal angle | ARPACK (before) (s) | ARPACK vs dense: min cos |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        X, S, _ = synthetic(n, q=q)
        est = PlcClusterer(random_state=0).fit(X, S)
        W = est.affinity_
        t_dense, U = best_of(lambda: njw_embedding(W, q, 0, solver="dense"))
        t_block, V = best_of(lambda: njw_embedding(W, q, 0, solver="lobpcg"))
        t_arpack, A = best_of(lambda: njw_embedding(W, q, 0, solver="arpack"))
        cos = [scipy.linalg.svdvals(np.linalg.qr(U)[0].T @ np.linalg.qr(M)[0]).min() for M in (V, A)]
        print(f"| {n} | {est.n_graph_components_} | {t_dense:.2f} | {t_block:.2f} | {t_dense / t_block:.1f}x "
              f"| {cos[0]:.8f} | {t_arpack:.2f} | {cos[1]:.8f} |", flush=True)


def table_rows(quick: bool = True) -> list[dict]:
    """Rows for ``benchmarks/run_all.py``: the default fit against the dense S/D solver
    (fresh processes, same data), and the compiled Eq. (13) pass against plain Python."""
    from plcore_plc._simplex import sequential_pass

    n = 2000 if quick else 5000
    cw, dense = run_child(n, "classwise", 900), run_child(n, "dense", 900)
    rows = []
    if isinstance(cw, dict) and isinstance(dense, dict):
        ratio = dense["wall_s"] / cw["wall_s"]
        rows.append({
            "method": "plc",
            "measure": (f"fit at n={n} (synthetic d=38, q=13): classwise S/D {cw['wall_s']:.2f} s, "
                        f"{cw['peak_mb']:.0f} MB, ACC {cw['acc']:.3f} vs dense S/D {dense['wall_s']:.2f} s, "
                        f"{dense['peak_mb']:.0f} MB, ACC {dense['acc']:.3f}"),
            "ratio": float(ratio), "goal": "> 1x (speed-up over the dense S/D version)", "met": bool(ratio > 1),
            "note": "benchmarks/plc.py part 1, measured in this run (fresh processes)",
        })
    else:
        rows.append({"method": "plc", "measure": f"fit at n={n}: {cw if isinstance(cw, str) else dense}",
                     "ratio": float("nan"), "goal": "> 1x", "met": False, "note": "benchmarks/plc.py"})
    T, Y = eq12_problem(200)
    F0 = Y / Y.sum(1, keepdims=True)
    sequential_pass(T, F0, Y)  # compile / load
    t_jit, F_jit = best_of(lambda: sequential_pass(T, F0, Y))
    t_py, F_py = best_of(lambda: sequential_pass(T, F0, Y, jit=False), repeats=1)
    rows.append({
        "method": "plc (Eq. 13 pass)",
        "measure": (f"one sequential pass at n=200: compiled {t_jit * 1e3:.2f} ms vs plain Python "
                    f"{t_py * 1e3:.0f} ms (max diff {np.abs(F_jit - F_py).max():.0e})"),
        "ratio": float(t_py / t_jit), "goal": "> 1x (speed-up over the plain-Python reference)",
        "met": bool(t_py > t_jit and np.allclose(F_jit, F_py)),
        "note": "benchmarks/plc.py part 2, measured in this run",
    })
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000, 50000])
    ap.add_argument("--dense-max", type=int, default=5000)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per child fit")
    ap.add_argument("--part2-n", type=int, default=5000)
    ap.add_argument("--python-n", type=int, default=500)
    ap.add_argument("--max-sweeps", type=int, default=2000)
    ap.add_argument("--skip-part2", action="store_true")
    ap.add_argument("--eigen", type=int, nargs="*", default=None, metavar="N",
                    help="only part 4: the spectral step's eigensolvers at these n (e.g. 1000 2000 3000 5000)")
    ap.add_argument("--child", nargs=2, metavar=("N", "SD_SOLVER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(int(args.child[0]), args.child[1])
        return
    print(f"numpy {np.__version__}, Python {platform.python_version()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPU(s)")
    if args.eigen:
        part4(args.eigen)
        return
    part1(args.sizes, args.dense_max, args.timeout)
    if not args.skip_part2:
        part2(args.part2_n, args.python_n, args.max_sweeps)
        part3(args.part2_n)


if __name__ == "__main__":
    main()
