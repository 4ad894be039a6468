"""The streaming inner loop of Algorithms 1-4 (Bhattacharjee & Manwani, PAKDD 2020).

One function, :func:`run_stream`, processes a stream of examples in order: for each
example it predicts with the current weights (``argmax_k w_k . x``), computes the loss
of Eq. (2) (``loss="avg"``, APH) or Eq. (3) (``loss="max"``, MPH) and, when the loss is
positive, applies the sub-gradient step of Eq. (4) / Eq. (5):

* Perceptron (Algorithms 1-2): ``w_k <- w_k + eta * tau_k * x``;
* Pegasos (Algorithms 3-4, Eq. 6): ``eta_t = 1 / (lam * t)``,
  ``W <- (1 - eta_t lam) W + eta_t tau x^T`` followed by the projection onto the ball
  ``||W||_F <= 1 / sqrt(lam)``.

with ``tau_k = 1/|Y|`` for ``k in Y`` and ``-1`` for ``k = argmax_{j not in Y} w_j . x``
(APH, Eq. 4), or ``tau = +1`` for ``argmax_{i in Y}`` and ``-1`` for
``argmax_{j not in Y}`` (MPH, Eq. 5); every other ``tau_k`` is 0. Ties in an argmax go
to the lowest class index (``numpy.argmax``). A candidate set holding every class has
no non-candidate: its loss is 0 and nothing is updated.

The loop works on small vectors with plain numpy (one example at a time, no per-class
Python loop). The weights are stored transposed, ``Wt`` of shape ``(K, d)`` (row ``k``
is the paper's column ``w_k``) so that every update touches contiguous rows. For
Pegasos the shrink factor ``(1 - 1/t)`` and the projection are kept in a scalar
``c`` (``W = c * V``) and ``||W||^2`` is updated in O(K) from the scores already
computed, so neither costs an O(dK) pass per example; ``c`` is folded back into ``Wt``
before returning (mathematically identical to the literal algorithm, equal up to
rounding; checked against a literal implementation in the tests).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["run_stream", "StreamState"]

#: recompute ``||W||^2`` exactly after this many Pegasos updates (bounds rounding drift)
_NORM_REFRESH = 512


class StreamState:
    """Mutable learner state shared by successive :func:`run_stream` calls.

    Attributes
    ----------
    Wt : ndarray of shape (K, d)
        Transposed weight matrix (the paper's ``W`` is ``Wt.T``).
    t : int
        Examples seen so far (Pegasos' trial counter ``t``).
    n_updates : int
        Examples on which the loss was positive (an update was made).
    """

    __slots__ = ("Wt", "t", "n_updates")

    def __init__(self, n_classes: int, n_features: int):
        self.Wt = np.zeros((n_classes, n_features))
        self.t = 0
        self.n_updates = 0


def _masks(S):
    """Per-row helpers: -inf on candidates (for the non-candidate max) and vice versa."""
    S = np.asarray(S, dtype=bool)
    neg = np.where(S, -np.inf, 0.0)  # s + neg: scores of the non-candidates only
    pos = np.where(S, 0.0, -np.inf)  # s + pos: scores of the candidates only
    full = S.all(axis=1)             # no non-candidate: loss 0, no update
    return S, neg, pos, full


def run_stream(state: StreamState, X, S, *, loss: str, algorithm: str, eta: float = 1.0,
               lam: float = 0.1, shrink_on_zero_loss: bool = False) -> np.ndarray:
    """Process the rows of ``X`` in order; return the class index predicted before each update.

    Parameters
    ----------
    state : StreamState
        Weights and counters, updated in place.
    X : ndarray of shape (n, d)
        Features (already with the constant column appended if an intercept is fitted).
    S : ndarray of shape (n, K)
        Boolean candidate matrix.
    loss : {"avg", "max"}
        APH (Eq. 2, sub-gradient Eq. 4) or MPH (Eq. 3, sub-gradient Eq. 5).
    algorithm : {"perceptron", "pegasos"}
        Algorithms 1-2 (constant step ``eta``) or 3-4 (step ``1/(lam t)`` + projection).
    eta : float
        Perceptron step size.
    lam : float
        Pegasos regularisation constant.
    shrink_on_zero_loss : bool
        Pegasos only: when the loss is 0, Algorithms 3-4 keep ``W`` unchanged (False);
        True applies the regulariser's step ``W <- (1 - 1/t) W`` as the original Pegasos.

    Returns
    -------
    ndarray of shape (n,), int
        Predicted class indices (before each example's update).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    S, neg, pos, full = _masks(S)
    n = X.shape[0]
    preds = np.empty(n, dtype=np.int64)
    if n == 0:
        return preds
    avg = loss == "avg"
    if avg:
        sizes = S.sum(axis=1)
        A = S / sizes[:, None]            # tau on the candidates (1/|Y|)
        tau2 = 1.0 / sizes + 1.0           # ||tau||^2
    if algorithm == "perceptron":
        _perceptron(state, X, A if avg else None, neg, pos, full, preds, float(eta))
    elif algorithm == "pegasos":
        _pegasos(state, X, A if avg else None, tau2 if avg else None, neg, pos, full, preds,
                 float(lam), bool(shrink_on_zero_loss))
    else:  # pragma: no cover - validated by the learners
        raise ValueError(f"unknown algorithm {algorithm!r}")
    return preds


def _perceptron(state, X, A, neg, pos, full, preds, eta):
    """Algorithms 1 (A given: APH) and 2 (A None: MPH)."""
    Wt = state.Wt
    EX = eta * X                      # the step eta * x of every example
    no_update = full.tolist()         # Python bools: cheaper to test than numpy scalars
    out = []
    append = out.append
    outer = np.multiply.outer
    updates = 0
    for k in range(X.shape[0]):
        s = Wt @ X[k]
        append(s.argmax())
        if no_update[k]:
            continue
        sn = s + neg[k]
        j = sn.argmax()
        if A is not None:
            a = A[k]
            if s @ a - sn[j] < 1.0:                    # L_APH > 0
                ex = EX[k]
                Wt += outer(a, ex)                     # + eta x / |Y| on the candidates
                Wt[j] -= ex                            # - eta x on the top non-candidate
                updates += 1
        else:
            sp = s + pos[k]
            i = sp.argmax()
            if sp[i] - sn[j] < 1.0:                    # L_MPH > 0
                ex = EX[k]
                Wt[i] += ex
                Wt[j] -= ex
                updates += 1
    preds[:] = out
    state.t += X.shape[0]
    state.n_updates += updates


def _pegasos(state, X, A, tau2, neg, pos, full, preds, lam, shrink_on_zero_loss):
    """Algorithms 3 (A given: APH) and 4 (A None: MPH), with W = c * V."""
    V = state.Wt
    t = state.t
    c = 1.0
    nw2 = float(np.vdot(V, V))        # ||W||^2 with W = c V
    r2 = 1.0 / lam                    # squared radius of the ball B
    x2 = np.einsum("ij,ij->i", X, X)  # ||x||^2 per row
    updates = 0
    since_refresh = 0
    no_update = full.tolist()
    out = []
    append = out.append
    outer = np.multiply.outer
    for k in range(X.shape[0]):
        t += 1
        x = X[k]
        s = V @ x                     # unscaled scores; the true scores are c * s (c > 0)
        append(s.argmax())
        decay = 1.0 - 1.0 / t         # 1 - eta_t lam
        positive = False
        if not no_update[k]:
            sn = s + neg[k]
            j = sn.argmax()
            if A is not None:
                a = A[k]
                m = s @ a - sn[j]     # unscaled margin (tau . s)
                t2 = tau2[k]
            else:
                sp = s + pos[k]
                i = sp.argmax()
                m = sp[i] - sn[j]
                t2 = 2.0
            positive = c * m < 1.0    # loss > 0
        if positive:
            g = 1.0 / (lam * t)       # eta_t
            # ||decay W + g tau x^T||^2 from quantities at hand (tau . V x = m)
            nw2 = decay * decay * nw2 + 2.0 * decay * c * g * m + g * g * t2 * x2[k]
            if decay == 0.0:          # t = 1: (1 - eta_1 lam) W = 0
                V[...] = 0.0
                c = 1.0
            else:
                c *= decay
            gx = (g / c) * x          # W + g tau x^T = c (V + (g/c) tau x^T)
            if A is not None:
                V += outer(a, gx)
            else:
                V[i] += gx
            V[j] -= gx
            if nw2 > r2:              # projection onto ||W|| <= 1/sqrt(lam)
                c *= math.sqrt(r2 / nw2)
                nw2 = r2
            updates += 1
            since_refresh += 1
        elif shrink_on_zero_loss:
            if decay == 0.0:
                V[...] = 0.0
                c, nw2 = 1.0, 0.0
            else:
                c *= decay
                nw2 *= decay * decay
        if c < 1e-30 or c > 1e30 or since_refresh >= _NORM_REFRESH:
            V *= c
            c = 1.0
            nw2 = float(np.vdot(V, V))
            since_refresh = 0
    if c != 1.0:
        V *= c
    preds[:] = out
    state.t = t
    state.n_updates += updates
