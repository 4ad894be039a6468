"""The clean command's noise-model fit (issue 73 item 5): the profiled fit of
``plcore.run.label_cleaning.fit_noise_model`` beside the straightforward joint fit it replaced
(Nelder-Mead over log T, logit q and logit eta from four starts, every step a pass over the
``(n, q)`` probabilities), on the same synthetic out-of-fold probabilities and noisy sets.

    python benchmarks/clean_noise_fit.py [--repeat 3]

Prints, per size: seconds of each (best of ``--repeat``), their ratio, and the log-likelihood each
reaches (the profiled fit must reach the joint one's, or above).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, softmax

from plcore.run.label_cleaning import _parts, fit_noise_model

SIZES = [(2000, 10), (11000, 10), (2000, 500)]


def joint_fit(P, S) -> float:
    """The previous fit: Nelder-Mead on all three parameters from (T, eta) in {1, 0.3} x {0.05, 0.2}, of
    the same eq. 1' (eq. 1 over the chance of a non-empty set)."""
    size, Q = S.sum(axis=1), S.shape[1]

    def nll(theta):
        T, q, eta = np.exp(theta[0]), expit(theta[1]), expit(theta[2])
        _, log_in, log_out = _parts(P, S, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.log1p(-eta) + (size - 1) * np.log(q) + (Q - size) * np.log1p(-q) + log_in
            outside = np.log(eta) + size * np.log(q) + (Q - size - 1) * np.log1p(-q) + log_out
            value = -float(np.logaddexp(inside, outside).sum()) + size.size * np.log1p(-eta * (1 - q) ** (Q - 1))
        return value if np.isfinite(value) else np.inf

    q0 = np.log((size.mean() - 1 + 0.5) / max(Q - size.mean(), 0.5))
    fits = [minimize(nll, np.array([np.log(T0), q0, np.log(e0 / (1 - e0))]), method="Nelder-Mead",
                     options={"maxiter": 4000, "xatol": 1e-5, "fatol": 1e-7}) for T0 in (1.0, 0.3) for e0 in (0.05, 0.2)]
    return -min(f.fun for f in fits)


def case(n, Q, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2.0, (n, Q))
    y = (logits + rng.gumbel(size=(n, Q))).argmax(axis=1)
    q = min(0.3, 3.0 / Q)
    S = rng.random((n, Q)) < q
    S[np.arange(n), y] = rng.random(n) >= 0.2
    keep = S.any(axis=1)
    return softmax(logits / 2.0, axis=1)[keep], S[keep]


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'rows':>6} {'classes':>7} {'joint s':>8} {'profiled s':>10} {'ratio':>6} {'joint loglik':>14} "
          f"{'profiled loglik':>16}")
    for n, Q in SIZES:
        P, S = case(n, Q)
        t_joint, ll_joint = best_of(lambda: joint_fit(P, S), args.repeat)
        t_fast, noise = best_of(lambda: fit_noise_model(P, S), args.repeat)
        print(f"{n:>6} {Q:>7} {t_joint:>8.2f} {t_fast:>10.2f} {t_joint / t_fast:>6.1f} {ll_joint:>14.3f} "
              f"{noise['log_likelihood']:>16.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
