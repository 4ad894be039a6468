"""Deciding between two methods over data sets: the Bayesian signed-rank test with a region of
practical equivalence (Benavoli, Corani, Demsar & Zaffalon, JMLR 18(77), 2017, section 4.2; the
reference implementation ``baycomp``), its verdicts, and tiers built from them.

For methods ``a`` and ``b`` with per-data-set means ``x`` and ``y``, the test's posterior (a
Dirichlet process with one pseudo-observation at zero difference, prior weight 0.5) gives the
probability that ``a`` is practically better (the difference ``x - y`` above ``rope``), practically
equivalent (inside ``[-rope, rope]``) or practically worse; a **verdict** is the region whose
probability reaches ``threshold`` (0.95), else ``undecided``. Unlike a p-value, the test can say
"equivalent". ``baycomp`` estimates the probabilities by Monte Carlo (``nsamples`` draws, seeded:
the same inputs give the same figures); with 20,000 draws a probability's error is at most 0.004.
:func:`probabilities` is baycomp's computation on the same draws, vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ROPE", "THRESHOLD", "NSAMPLES", "Verdict", "signed_rank", "probabilities", "tiers"]

#: the region of practical equivalence on an accuracy (one point)
ROPE = 0.01
#: the probability a verdict needs
THRESHOLD = 0.95
#: baycomp's Monte Carlo draws per comparison
NSAMPLES = 20000

_MEMO: dict = {}


@dataclass(frozen=True)
class Verdict:
    """``a`` against ``b``: the probabilities that ``a`` is practically better, equivalent, worse,
    and the verdict (``better``, ``equivalent``, ``worse`` or ``undecided``)."""

    better: float
    equivalent: float
    worse: float
    threshold: float = THRESHOLD

    @property
    def decided(self) -> str:
        for name in ("better", "equivalent", "worse"):
            if getattr(self, name) >= self.threshold:
                return name
        return "undecided"

    @property
    def text(self) -> str:
        """``0.97 / 0.03 / 0.00`` (better / equivalent / worse)."""
        return f"{self.better:.2f} / {self.equivalent:.2f} / {self.worse:.2f}"


def signed_rank(a, b, *, rope: float = ROPE, nsamples: int = NSAMPLES, seed: int = 0,
                threshold: float = THRESHOLD) -> Verdict:
    """The Bayesian signed-rank test of ``a`` against ``b`` (their means on the same data sets, in
    the same order): ``baycomp.SignedRankTest.probs`` (left: ``a`` better; :func:`probabilities`),
    memoised."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"the signed-rank test needs two equally long 1-D samples (>= 2 data sets), got "
                         f"{x.shape} and {y.shape}")
    key = (x.tobytes(), y.tobytes(), float(rope), int(nsamples), int(seed))
    if key not in _MEMO:
        _MEMO[key] = (0.0, 1.0, 0.0) if np.array_equal(x, y) else probabilities(x, y, rope, nsamples, seed)
    return Verdict(*_MEMO[key], threshold=threshold)


def probabilities(x, y, rope: float, nsamples: int, seed: int) -> tuple:
    """``baycomp.SignedRankTest.probs(x, y, rope=rope, nsamples=nsamples, random_state=seed)`` for
    ``rope > 0``, the same draws (one ``RandomState(seed).dirichlet`` call) and the same figures,
    its loop over the draws written as one product: ``P(region)`` is the share of draws in which
    that region holds the most weight, a draw's weight above the region
    ``sum_ij w_i w_j [z_i + z_j > 2 rope]`` (z: the differences ``y - x`` and the prior's 0; ties at
    the edge count half), so a page's hundreds of comparisons take seconds, not minutes
    (tests/test_bayesian.py checks it against baycomp)."""
    z = np.hstack(([0.0], np.asarray(y, dtype=np.float64) - np.asarray(x, dtype=np.float64)))
    sums = z[:, None] + z[None, :]
    above = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    below = (-sums > 2 * rope) + 0.5 * (-sums == 2 * rope)
    weights = np.ones(len(z))
    weights[0] = 0.5                                      # baycomp's prior strength
    W = np.random.RandomState(seed).dirichlet(weights, nsamples)
    left = np.einsum("si,ij,sj->s", W, below, W)          # x better: y - x below the region
    right = np.einsum("si,ij,sj->s", W, above, W)
    sample = np.column_stack([left, 1.0 - left - right, right])
    counts = np.bincount(np.argmax(sample, axis=1), minlength=3) / nsamples
    return float(counts[0]), float(counts[1]), float(counts[2])


def tiers(means: dict, order: list, **test) -> dict:
    """``{method: tier}`` (1 the top): ``order`` (best first) cut into tiers by verdicts. A tier is
    the best method left and every method left that it is not decided practically better than
    (:func:`signed_rank`: equivalent, or undecided); the rest form the tiers below, the same way.
    ``means[method]``: its means on the data sets, in one order for all."""
    out, left, tier = {}, list(order), 1
    while left:
        leader = left[0]
        members = [leader] + [m for m in left[1:] if signed_rank(means[leader], means[m], **test).decided != "better"]
        for m in members:
            out[m] = tier
        left = [m for m in left if m not in members]
        tier += 1
    return out
