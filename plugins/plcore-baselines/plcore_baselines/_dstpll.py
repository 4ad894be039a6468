"""DST-PLL's kernels (private): candidate sets as bit masks, Yager's rule, belief and plausibility.

The numerics of :class:`plcore_baselines.dstpll.DstPllLearner` (Fuchs, Kalinke & Boehm, TMLR 2025;
see :mod:`plcore_baselines.dstpll` for the steps): a set of classes is a Python ``int`` whose bit
``c`` says whether class ``c`` is in it (arbitrary precision, so any number of classes), a mass
function a ``dict`` ``{set: mass}``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

__all__ = ["PRUNE", "masks_from_candidates", "masks_to_matrix", "yager_combine", "neighbour_masses",
           "belief_plausibility", "decide"]

#: Yager's rule deletes focal sets whose combined mass is below this (the authors' ``prune_prob``)
PRUNE = 1e-10


def masks_from_candidates(S) -> list:
    """One bit mask (``int``, bit ``c`` = class ``c``) per row of the boolean ``(n, q)`` matrix ``S``."""
    S = np.asarray(S, dtype=bool)
    packed = np.packbits(S, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def masks_to_matrix(masks, q: int) -> np.ndarray:
    """The boolean ``(len(masks), q)`` matrix of the bit masks ``masks`` (the inverse of
    :func:`masks_from_candidates`)."""
    nbytes = max(1, (q + 7) // 8)
    buf = b"".join(int(m).to_bytes(nbytes, "little") for m in masks)
    packed = np.frombuffer(buf, dtype=np.uint8).reshape(len(masks), nbytes)
    return np.unpackbits(packed, axis=1, count=q, bitorder="little").astype(bool)


def yager_combine(masses, universe: int, prune: float = PRUNE) -> dict:
    """Yager's rule: the conjunctive combination of the mass functions ``masses`` (dicts
    ``{mask: mass}``), starting from the vacuous ``{universe: 1}``.

    Every pair of focal sets puts the product of their masses on their intersection; after all
    are combined, the mass on the empty set (the conflict) moves to ``universe``, focal sets with
    mass below ``prune`` are deleted and the rest is renormalised to sum 1 (should everything be
    pruned, the vacuous ``{universe: 1}``). Focal sets keep the order in which they first
    appear (the fallback of :func:`decide` breaks ties by it, as the authors' code does).
    """
    current = {universe: 1.0}
    for m in masses:
        nxt = {}
        for b, pb in current.items():
            for a, pa in m.items():
                key = a & b
                nxt[key] = nxt.get(key, 0.0) + pb * pa
        current = nxt
    conflict = current.pop(0, 0.0)
    if conflict:
        current[universe] = current.get(universe, 0.0) + conflict
    current = {s: v for s, v in current.items() if v >= prune}
    total = sum(current.values())
    if not current or total <= 0.0:
        return {universe: 1.0}
    return {s: v / total for s, v in current.items()}


def neighbour_masses(universe: int, neighbour_masks) -> list:
    """The evidence of a row's neighbours: ``{A: 0.5, T: 0.5}`` with ``A = S_j & T`` for each
    neighbour's candidate mask ``S_j`` (``T = universe``), skipped where ``A`` is empty or ``T``
    (no information about ``T``)."""
    out = []
    for s in neighbour_masks:
        a = s & universe
        if a and a != universe:
            out.append({a: 0.5, universe: 0.5})
    return out


def belief_plausibility(mass_functions, q: int):
    """``(bel, pl)`` of the mass functions (one per row), each ``(n, q)``: ``bel[i, c] = m_i({c})``
    and ``pl[i, c] = sum of m_i(A) over the focal sets A that hold c``."""
    n = len(mass_functions)
    sets, values, rows = [], [], []
    for i, m in enumerate(mass_functions):
        sets.extend(m)
        values.extend(m.values())
        rows.extend([i] * len(m))
    M = masks_to_matrix(sets, q).astype(np.float64)              # (n_focal, q)
    P = sp.csr_matrix((np.asarray(values, dtype=np.float64), (np.asarray(rows, dtype=np.intp),
                                                              np.arange(len(sets)))), shape=(n, len(sets)))
    pl = np.asarray(P @ M)
    singleton = M.sum(axis=1) == 1
    bel = np.asarray(P[:, singleton] @ M[singleton]) if singleton.any() else np.zeros((n, q))
    return bel, pl


def _row_rng(seed: int, key: bytes) -> np.random.Generator:
    """A generator of its own for one row: from ``seed`` and the row's ``key`` (its features'
    bytes), so a row's tie-break does not depend on which other rows are predicted with it."""
    digest = hashlib.blake2b(key, digest_size=8, key=int(seed).to_bytes(8, "little")).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest, "little")])


def decide(mass_functions, bel, pl, seed: int, keys):
    """DST-PLL's prediction and reject score per row: ``(pred, r)``.

    ``pred``: the argmax of ``bel`` (classes within ``np.isclose`` of the row's normalised maximum
    tie, one drawn uniformly); where no singleton has mass (``bel`` all 0), the focal set with
    the largest mass (ties: fewest elements, then the first in combination order) and a class
    drawn uniformly from it. Draws use a generator per row from ``seed`` and ``keys[i]`` (bytes).
    ``r = bel(pred) - max over c != pred of pl(c)``.
    """
    n, q = bel.shape
    pred = np.empty(n, dtype=np.intp)
    total = bel.sum(axis=1)
    for i in range(n):
        if total[i] > 0.0:
            share = bel[i] / total[i]
            ties = np.flatnonzero(np.isclose(share, share.max()))
        else:   # no singleton mass: the largest focal set mass, the fewest elements
            m = mass_functions[i]
            best = min(m, key=lambda s: (-m[s], s.bit_count()))   # min keeps the first of equal keys
            ties = np.flatnonzero(masks_to_matrix([best], q)[0])
        pred[i] = ties[0] if ties.size == 1 else _row_rng(seed, keys[i]).choice(ties)
    others = pl.copy()
    others[np.arange(n), pred] = -np.inf
    r = bel[np.arange(n), pred] - (others.max(axis=1) if q > 1 else 0.0)
    return pred, r
