"""PL-ECOC's kernels (private): the random coding matrix, the column dichotomies and decoding.

The numerics of :class:`plcore_baselines.plecoc.PlEcocLearner` (Zhang, Yu & Tang, TKDE 2017;
see :mod:`plcore_baselines.plecoc` for the rules): the coding length, strict and relaxed
dichotomies of a column, the random code, the performance weights and loss-based decoding.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["default_code_length", "column_split", "relaxed_split", "generate_code",
           "performance_weights", "decoding_loss"]


def default_code_length(q: int) -> int:
    """The paper's coding length ``ceil(10 log2 q)``."""
    return int(math.ceil(10.0 * math.log2(q)))


def column_split(S, v):
    """Strict dichotomy of column ``v`` (bool, True = +1): ``(S_i in Y+, S_i in Y-)`` masks."""
    S = np.asarray(S, dtype=bool)
    v = np.asarray(v, dtype=bool)
    pos = ~(S & ~v).any(axis=1)
    neg = ~(S & v).any(axis=1)
    return pos, neg


def relaxed_split(S, v):
    """Relaxed (oriented) dichotomy of ``v``: masks ``(S_i meets Y+, S_i in Y-)`` and the
    positive weights ``|S_i n Y+| / |S_i|``."""
    S = np.asarray(S, dtype=bool)
    share = (S & np.asarray(v, dtype=bool)).sum(axis=1) / S.sum(axis=1)
    pos = share > 0
    return pos, ~pos, share


def _side_minimum(n, min_fraction, min_side):
    tau = int(math.ceil(min_fraction * n))
    return tau, max(1, min(int(min_side), tau // 2))


def generate_code(S, length, rng, *, min_fraction=0.1, min_side=5, max_draws=2000):
    """Random PL-ECOC columns.

    Returns ``(code, strict)``: ``code`` a bool (q, L') matrix (True = +1), ``L' <= length``
    (and ``<= 2^(q-1) - 1``, the number of distinct dichotomies), and a bool (L',) array,
    True for a strict column, False for a relaxed one (added only when fewer strict columns
    than wanted were found).
    """
    S = np.asarray(S, dtype=bool)
    n, q = S.shape
    tau, side = _side_minimum(n, min_fraction, min_side)
    n_distinct = 2 ** (q - 1) - 1 if q < 63 else np.inf
    length = int(min(length, n_distinct))
    seen, tried, strict_cols = set(), [], []
    draws = 0
    while len(strict_cols) < length and draws < max_draws and len(seen) < n_distinct:
        v = rng.randint(2, size=q).astype(bool)
        draws += 1
        if v.all() or not v.any():
            continue
        key = (v if v[0] else ~v).tobytes()
        if key in seen:
            continue
        seen.add(key)
        pos, neg = column_split(S, v)
        n_pos, n_neg = int(pos.sum()), int(neg.sum())
        if n_pos + n_neg >= tau and n_pos >= side and n_neg >= side:
            strict_cols.append(v)
        else:
            tried.append(v)
    relaxed_cols = []
    if len(strict_cols) < length:
        # fall back: relaxed columns (both orientations of the rejected dichotomies first)
        pool = [u for v in tried for u in (v, ~v)]
        done = {v.tobytes() for v in strict_cols} | {(~v).tobytes() for v in strict_cols}
        extra = 0
        while len(strict_cols) + len(relaxed_cols) < length and (pool or (
                extra < max_draws and len(done) < 2 ** q - 2)):
            if pool:
                v = pool.pop(0)
            else:
                v = rng.randint(2, size=q).astype(bool)
                extra += 1
                if v.all() or not v.any():
                    continue
            if v.tobytes() in done:
                continue
            done.add(v.tobytes())
            pos, neg, _ = relaxed_split(S, v)
            if pos.sum() >= side and neg.sum() >= side:
                relaxed_cols.append(v)
    cols = strict_cols + relaxed_cols
    code = np.array(cols, dtype=bool).T if cols else np.zeros((q, 0), dtype=bool)
    strict = np.array([True] * len(strict_cols) + [False] * len(relaxed_cols), dtype=bool)
    return code, strict


def performance_weights(S, code, H):
    """``G[y, v]``: accuracy of ``sign(H[:, v])`` against ``M[y, v]`` on ``{i : y in S_i}``, rows sum 1.

    ``code`` is the bool (q, L) code (True = +1), ``H`` the (n, L) real outputs on the
    training set (``h > 0`` counts as +1). A class in no candidate set, or with zero
    accuracy everywhere, gets uniform weights.
    """
    S = np.asarray(S, dtype=bool)
    pred = H > 0                                     # (n, L) predicted +1
    agree = (pred[:, None, :] == code[None, :, :])   # (n, q, L)
    counts = S.sum(axis=0).astype(float)             # examples per class
    hits = np.einsum("iq,iql->ql", S.astype(float), agree.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = hits / counts[:, None]
    acc[counts == 0] = 0.0
    total = acc.sum(axis=1, keepdims=True)
    L = code.shape[1]
    return np.where(total > 0, acc / np.where(total > 0, total, 1.0), 1.0 / max(L, 1))


def decoding_loss(G, code, H):
    """Loss-based decoding: ``loss[x, y] = sum_v G[y, v] exp(-M[y, v] h_v(x))``, shape (n, q)."""
    M = np.where(code, 1.0, -1.0)                    # (q, L)
    expo = np.clip(-H[:, None, :] * M[None, :, :], None, 700.0)
    return np.einsum("ql,nql->nq", G, np.exp(expo))
