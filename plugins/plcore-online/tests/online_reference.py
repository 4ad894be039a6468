"""Slow, literal implementations of Algorithms 1-4 for the tests (one Python loop per class).

Written from the paper's pseudo-code with no vectorisation and no tricks: ``W`` is a
``(d, K)`` matrix, losses Eq. (2)/(3), sub-gradients Eq. (4)/(5), Pegasos step
``1/(lam t)``, shrink, then projection onto ``||W|| <= 1/sqrt(lam)``.
"""

from __future__ import annotations

import math

import numpy as np


def _argmax(values, labels):
    """Label with the largest value; ties to the lowest label."""
    best = None
    for k in labels:
        if best is None or values[k] > values[best]:
            best = k
    return best


def literal_stream(X, S, *, loss, algorithm, eta=1.0, lam=1e-4, shrink_on_zero_loss=False,
                   W=None, t=0):
    """Return (predictions, W, t, n_updates) after streaming the rows of ``X`` in order."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    K = S.shape[1]
    W = np.zeros((d, K)) if W is None else np.array(W, dtype=float)
    preds, updates = [], 0
    for r in range(n):
        x = X[r]
        t += 1
        scores = [float(sum(W[f, k] * x[f] for f in range(d))) for k in range(K)]
        preds.append(_argmax(scores, range(K)))
        Y = [k for k in range(K) if S[r, k]]
        Ybar = [k for k in range(K) if not S[r, k]]
        if Ybar:
            j = _argmax(scores, Ybar)
            if loss == "avg":
                L = max(0.0, 1 - sum(scores[k] for k in Y) / len(Y) + scores[j])   # Eq. (2)
            else:
                i = _argmax(scores, Y)
                L = max(0.0, 1 - scores[i] + scores[j])                           # Eq. (3)
        else:
            L = 0.0
        if L > 0:
            grad = np.zeros((d, K))                                               # Eq. (4)/(5)
            if loss == "avg":
                for k in Y:
                    grad[:, k] = -x / len(Y)
            else:
                grad[:, i] = -x
            grad[:, j] = x
            if algorithm == "perceptron":
                W = W - eta * grad
            else:
                eta_t = 1.0 / (lam * t)
                W = (1 - eta_t * lam) * W - eta_t * grad
                norm = math.sqrt(float((W * W).sum()))
                if norm > 0:
                    W = min(1.0, (1 / math.sqrt(lam)) / norm) * W
            updates += 1
        elif algorithm == "pegasos" and shrink_on_zero_loss:
            W = (1 - 1.0 / t) * W
    return np.array(preds), W, t, updates


def textbook_multiclass_perceptron(X, y, K):
    """Mistake-driven multiclass Perceptron (Duda & Hart; Crammer & Singer's max version).

    Update when the true class does not strictly win (ties count as mistakes):
    ``w_y += x``, ``w_r -= x`` with ``r`` the best-scoring other class.
    Returns (W (d, K), number of updates).
    """
    X = np.asarray(X, dtype=float)
    W = np.zeros((X.shape[1], K))
    updates = 0
    for x, label in zip(X, y):
        scores = x @ W
        others = [k for k in range(K) if k != label]
        r = _argmax(scores, others)
        if scores[label] <= scores[r]:
            W[:, label] += x
            W[:, r] -= x
            updates += 1
    return W, updates
