"""Slow, literal reference of SAUTE (not collected by pytest; loaded by the tests and the benchmark).

Written from the paper's formulas with loops over features, classes and pairs, and with
scikit-learn / scipy doing the statistics, so that it shares no code with the plugin:

* ``H(c|f)`` (Eq. 8-10): for each feature, for each class, the members of ``D_l`` are listed
  and their mean / variance taken with ``np.mean`` / ``np.var``, with the documented
  smoothing (variance floor ``var_smoothing`` x the feature's overall variance; classes
  with < 2 members: mean ``sum / (n + 1)`` around the overall mean, overall variance;
  constant features: ``H(c)``); ``p(l|x)`` with ``scipy.stats.norm.logpdf`` and
  ``scipy.special.softmax``;
* Eq. (11) with ``np.select`` on the literal conditions; ``I(f; f_i)`` with
  :func:`sklearn.metrics.mutual_info_score`;
* the greedy criterion Eq. (7) recomputed from scratch (``H`` for every remaining feature
  and the full redundancy sum of every pair) at every step, as the paper's Table 1 lists it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax
from scipy.stats import norm
from sklearn.metrics import mutual_info_score
from sklearn.neighbors import NearestNeighbors


def discretize_literal(X):
    X = np.asarray(X, dtype=float)
    out = np.empty(X.shape, dtype=int)
    for f in range(X.shape[1]):
        x = X[:, f]
        mu, sd = x.mean(), x.std()
        out[:, f] = np.select(
            [x <= mu - 2 * sd, x <= mu - sd, x <= mu + sd, x <= mu + 2 * sd],
            [-2, -1, 0, 1], default=2)
    return out


def conditional_entropy_one(x, Y, S, var_smoothing):
    """``H(c|f)`` of one feature column ``x`` (Eq. 10)."""
    m, q = Y.shape
    prior = Y.mean(axis=0)
    if np.all(x == x[0]):
        p = prior[prior > 0]
        return float(-(p * np.log(p)).sum())
    z = (x - x.mean()) / x.std()
    sizes = S.sum(axis=1)
    log_joint = []
    for l in range(q):
        if prior[l] <= 0:
            continue
        members = [i for i in range(m) if S[i, l] and Y[i, l] >= (1 - 1e-12) / sizes[i]]
        if len(members) < 2:
            mu = z[members].sum() / (len(members) + 1)
            var = 1.0
        else:
            mu = np.mean(z[members])
            var = np.var(z[members])
        var = max(var, var_smoothing)
        log_joint.append(norm.logpdf(z, loc=mu, scale=np.sqrt(var)) + np.log(prior[l]))
    post = softmax(np.array(log_joint), axis=0)          # (q', m): p(l | x_i), Eq. (8)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(post > 0, post * np.log(post), 0.0)
    return float(-plogp.sum() / m)


def conditional_entropies(X, Y, S, var_smoothing):
    return np.array([conditional_entropy_one(X[:, f], Y, S, var_smoothing) for f in range(X.shape[1])])


def greedy_naive(X, Y, S, n_select, var_smoothing, redundancy=True):
    """Eq. (7) (or Eq. 5 without ``redundancy``) recomputed from scratch at every step."""
    d = X.shape[1]
    Bd = discretize_literal(X)
    A = []
    for _p in range(n_select):
        best, best_val = None, -np.inf
        H = conditional_entropies(X, Y, S, var_smoothing)   # Table 1, step 5: every step
        for f in range(d):
            if f in A:
                continue
            val = -H[f]
            if redundancy and A:
                val -= sum(mutual_info_score(Bd[:, f], Bd[:, g]) for g in A) / len(A)
            if val > best_val:
                best, best_val = f, val
        A.append(best)
    return A


def knn_update_literal(Xs, Y, S, k, alpha):
    m, q = Y.shape
    nn = NearestNeighbors(n_neighbors=k + 1).fit(Xs)
    Y_new = np.zeros_like(Y)
    for i in range(m):
        ind = nn.kneighbors(Xs[i:i + 1], return_distance=False)[0]
        ind = [j for j in ind if j != i][:k]
        L = np.zeros(q)
        for a, j in enumerate(ind, start=1):
            L += (k - a + 1) * Y[j]
        Yp = (1 - alpha) * Y[i] + alpha * L
        Yp = np.where(S[i], Yp, 0.0)
        Y_new[i] = Yp / Yp.sum()
    return Y_new


def saute_naive(X, S, n_select, alpha=0.6, k=8, max_iter=20, var_smoothing=0.3, redundancy=True):
    """The whole of Table 1: returns (selected order of the last iteration, Y, n_iter)."""
    S = np.asarray(S, dtype=bool)
    Y = S / S.sum(axis=1, keepdims=True)
    prev = None
    for it in range(1, max_iter + 1):
        A = greedy_naive(X, Y, S, n_select, var_smoothing, redundancy)
        Y = knn_update_literal(X[:, A], Y, S, k, alpha)
        if prev is not None and set(A) == prev:
            break
        prev = set(A)
    return A, Y, it
