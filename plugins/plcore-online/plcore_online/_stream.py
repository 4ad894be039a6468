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

The weights are stored transposed, ``Wt`` of shape ``(K, d)`` (row ``k`` is the paper's
column ``w_k``) so that every update touches contiguous rows. For Pegasos the shrink
factor ``(1 - 1/t)`` and the projection are kept in a scalar ``c`` (``W = c * V``) and
``||W||^2`` is updated in O(K) from the scores already computed, so neither costs an
O(dK) pass per example; ``c`` is folded back into ``Wt`` before returning
(mathematically identical to the literal algorithm, equal up to rounding; checked
against a literal implementation in the tests).

Two implementations of the same arithmetic
------------------------------------------
* **compiled** (default): :func:`_perceptron_kernel` / :func:`_pegasos_kernel`, scalar
  loops compiled with ``numba.njit`` (nopython, float64 C-contiguous arrays, the
  candidate sets as a bool matrix) on first use -- once per process, a few seconds;
* **numpy** (reference / fallback): :func:`_perceptron` / :func:`_pegasos`, one Python
  iteration per example over small numpy vectors.

Both perform the same floating-point operations in the same order, so they give
bit-identical predictions and weights (tested). To that end every sum is taken in index
order: the scores ``Wt @ x`` as ``cumsum(Wt * x, axis=1)[:, -1]`` in the numpy path, not
BLAS, whose blocked kernels round identical rows of ``Wt`` differently for ``d >= 8`` and
so would break the ties-to-the-lowest-index rule (the Avg variants give all candidates the
same update, so identical rows are common). The numpy path is used when ``USE_JIT`` is
false: set at import from the environment variable ``PLCORE_ONLINE_NO_JIT`` (``1``,
``true``, ``yes`` or ``on`` select numpy), assignable at run time
(``plcore_online._stream.USE_JIT = False``), or when numba cannot be imported.
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["run_stream", "run_one_row", "augment_row", "StreamState", "USE_JIT", "jit_available",
           "compile_kernels"]

#: recompute ``||W||^2`` exactly after this many Pegasos updates (bounds rounding drift)
_NORM_REFRESH = 512


def _jit_from_env(environ=os.environ) -> bool:
    """False if ``PLCORE_ONLINE_NO_JIT`` is set to 1/true/yes/on (select the numpy loops)."""
    return environ.get("PLCORE_ONLINE_NO_JIT", "").strip().lower() not in ("1", "true", "yes", "on")


#: use the numba-compiled loops (True) or the plain-numpy reference loops (False)
USE_JIT = _jit_from_env()


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

    def __getstate__(self):  # a plain dict: skops (a logged model's format) writes no __slots__ object
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)


def _masks(S):
    """Per-row helpers: -inf on candidates (for the non-candidate max) and vice versa."""
    S = np.asarray(S, dtype=bool)
    neg = np.where(S, -np.inf, 0.0)  # s + neg: scores of the non-candidates only
    pos = np.where(S, 0.0, -np.inf)  # s + pos: scores of the candidates only
    full = S.all(axis=1)             # no non-candidate: loss 0, no update
    return S, neg, pos, full


def _sqnorm(V):
    """``||V||_F^2`` summed in row-major order (as the compiled kernel does)."""
    return float(np.cumsum(V * V)[-1]) if V.size else 0.0


def run_stream(state: StreamState, X, S, *, loss: str, algorithm: str, eta: float = 1.0,
               lam: float = 0.1, shrink_on_zero_loss: bool = False) -> np.ndarray:
    """Process the rows of ``X`` in order; return the class index predicted before each update.

    Runs the compiled kernels when ``USE_JIT`` is true and numba is importable, else the
    plain-numpy loops; both give bit-identical results.

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
    n = X.shape[0]
    preds = np.empty(n, dtype=np.int64)
    if n == 0:
        return preds
    if algorithm not in ("perceptron", "pegasos"):  # pragma: no cover - validated by the learners
        raise ValueError(f"unknown algorithm {algorithm!r}")
    if USE_JIT and jit_available():
        perceptron, pegasos = _jit_kernels()
        S = np.ascontiguousarray(S, dtype=np.bool_)
        Wt = state.Wt
        if not (Wt.dtype == np.float64 and Wt.flags.c_contiguous and Wt.flags.writeable):
            state.Wt = Wt = np.ascontiguousarray(Wt, dtype=np.float64).copy()
        if algorithm == "perceptron":
            updates = perceptron(Wt, X, S, loss == "avg", float(eta), preds)
        else:
            updates = pegasos(Wt, X, S, loss == "avg", float(lam), bool(shrink_on_zero_loss),
                              int(state.t), int(_NORM_REFRESH), preds)
        state.t += n
        state.n_updates += int(updates)
        return preds
    S, neg, pos, full = _masks(S)
    avg = loss == "avg"
    if avg:
        sizes = S.sum(axis=1)
        A = S / sizes[:, None]            # tau on the candidates (1/|Y|)
        tau2 = 1.0 / sizes + 1.0           # ||tau||^2
    if algorithm == "perceptron":
        _perceptron(state, X, A if avg else None, neg, pos, full, preds, float(eta))
    else:
        _pegasos(state, X, A if avg else None, tau2 if avg else None, neg, pos, full, preds,
                 float(lam), bool(shrink_on_zero_loss))
    return preds


def _perceptron(state, X, A, neg, pos, full, preds, eta):
    """Algorithms 1 (A given: APH) and 2 (A None: MPH)."""
    Wt = state.Wt
    EX = eta * X                      # the step eta * x of every example
    no_update = full.tolist()         # Python bools: cheaper to test than numpy scalars
    out = []
    append = out.append
    outer = np.multiply.outer
    cumsum = np.cumsum
    updates = 0
    for k in range(X.shape[0]):
        s = cumsum(Wt * X[k], axis=1)[:, -1]           # Wt @ x, summed in feature order
        append(s.argmax())
        if no_update[k]:
            continue
        sn = s + neg[k]
        j = sn.argmax()
        if A is not None:
            a = A[k]
            if cumsum(s * a)[-1] - sn[j] < 1.0:        # L_APH > 0 (s @ a in class order)
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
    nw2 = _sqnorm(V)                  # ||W||^2 with W = c V
    r2 = 1.0 / lam                    # squared radius of the ball B
    x2 = np.cumsum(X * X, axis=1)[:, -1]  # ||x||^2 per row
    updates = 0
    since_refresh = 0
    no_update = full.tolist()
    out = []
    append = out.append
    outer = np.multiply.outer
    cumsum = np.cumsum
    for k in range(X.shape[0]):
        t += 1
        x = X[k]
        s = cumsum(V * x, axis=1)[:, -1]  # unscaled scores V x; the true ones are c * s (c > 0)
        append(s.argmax())
        decay = 1.0 - 1.0 / t         # 1 - eta_t lam
        positive = False
        if not no_update[k]:
            sn = s + neg[k]
            j = sn.argmax()
            if A is not None:
                a = A[k]
                m = cumsum(s * a)[-1] - sn[j]  # unscaled margin (tau . s)
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
            nw2 = _sqnorm(V)
            since_refresh = 0
    if c != 1.0:
        V *= c
    preds[:] = out
    state.t = t
    state.n_updates += updates


# ----------------------------------------------------------------------------- compiled path
# The kernels below are the loops above written with scalars (one pass over the K classes
# per argmax, one over the d features per row update), the same operations in the same
# order. They are plain Python functions; :func:`_jit_kernels` compiles them with numba
# on first use (nopython mode; ``cache=False``: no on-disk cache, compiled once per process).

_KERNELS = None
_ROW_KERNELS = None
_JIT_OK = None


def jit_available() -> bool:
    """True if numba can be imported (the compiled path can be used)."""
    global _JIT_OK
    if _JIT_OK is None:
        try:
            import numba  # noqa: F401
        except ImportError:  # pragma: no cover - numba is a dependency
            _JIT_OK = False
        else:
            _JIT_OK = True
    return _JIT_OK


def _jit_kernels():
    """The compiled ``(perceptron, pegasos)`` kernels (numba dispatchers, built once)."""
    global _KERNELS
    if _KERNELS is None:
        import numba

        global _row_scores
        jit = numba.njit(cache=False, nogil=True)
        # the kernels call _row_scores: numba resolves that global when it compiles them
        # (on their first call), so it must be a compiled function by then
        _row_scores = jit(_row_scores)
        _KERNELS = (jit(_perceptron_kernel), jit(_pegasos_kernel))
    return _KERNELS


def _row_kernels():
    """The compiled one-row kernels ``(copy_row, perceptron_row, pegasos_row)``, built once.

    ``perceptron_row`` / ``pegasos_row`` check one row (finite features, a non-empty candidate
    set), copy it into the caller's buffer (with the constant 1 appended when there is an
    intercept) and then call the stream kernels of :func:`_jit_kernels` on that single row --
    the very call :func:`run_stream` makes for a one-row chunk, so the results are identical.
    They return the number of updates (0 or 1), or -1 without touching the weights when the
    row is rejected.
    """
    global _ROW_KERNELS
    if _ROW_KERNELS is None:
        import numba

        perceptron, pegasos = _jit_kernels()
        jit = numba.njit(cache=False, nogil=True)
        copy_row, any_row = jit(_copy_row), jit(_any_row)

        def perceptron_row(Wt, X, S, buf, intercept, avg, eta, preds):
            if not (copy_row(X, buf, intercept) and any_row(S)):
                return -1
            return perceptron(Wt, buf, S, avg, eta, preds)

        def pegasos_row(V, X, S, buf, intercept, avg, lam, shrink_on_zero_loss, t0, norm_refresh, preds):
            if not (copy_row(X, buf, intercept) and any_row(S)):
                return -1
            return pegasos(V, buf, S, avg, lam, shrink_on_zero_loss, t0, norm_refresh, preds)

        _ROW_KERNELS = (copy_row, jit(perceptron_row), jit(pegasos_row))
    return _ROW_KERNELS


def _copy_row(X, buf, intercept):
    """``buf[0, :d] = X[0]`` (and ``buf[0, d] = 1`` if ``intercept``); False if X has NaN/inf."""
    d = X.shape[1]
    for f in range(d):
        v = X[0, f]
        if not math.isfinite(v):
            return False
        buf[0, f] = v
    if intercept:
        buf[0, d] = 1.0
    return True


def _any_row(S):
    """True if the first row of the candidate matrix ``S`` holds a candidate."""
    for q in range(S.shape[1]):
        if S[0, q]:
            return True
    return False


def augment_row(X, fit_intercept: bool):
    """One row ``X`` (shape ``(1, d)``, float64) as a fresh ``(1, d [+ 1])`` array with the
    constant feature appended when ``fit_intercept``; None if it holds NaN or inf.

    The single-row ``predict`` path of the learners: the same values as
    ``np.hstack([X, ones])`` without validating ``X`` through scikit-learn.
    """
    d = X.shape[1]
    buf = np.empty((1, d + 1 if fit_intercept else d))
    if USE_JIT and jit_available():
        return buf if _row_kernels()[0](X, buf, bool(fit_intercept)) else None
    if not np.isfinite(X).all():
        return None
    buf[:, :d] = X
    if fit_intercept:
        buf[0, d] = 1.0
    return buf


def run_one_row(state: StreamState, X, S, *, fit_intercept: bool, loss: str, algorithm: str,
                eta: float = 1.0, lam: float = 0.1, shrink_on_zero_loss: bool = False) -> bool:
    """Learn from one row with the compiled kernels; False (state untouched) if it is rejected.

    The single-row ``partial_fit`` path of the learners. ``X`` is one row of features *without*
    the intercept column (float64, shape ``(1, d)``, C-contiguous) and ``S`` one row of the
    boolean candidate matrix (shape ``(1, K)``). The row is rejected -- nothing is updated and
    False is returned -- when a feature is NaN or inf or the candidate set is empty; the
    caller then runs its full validation, which raises the error. Otherwise the result is
    exactly that of ``run_stream(state, hstack([X, 1]), S, ...)`` (the same compiled call on
    the same values). Requires numba (``USE_JIT`` and :func:`jit_available`).
    """
    _, perceptron_row, pegasos_row = _row_kernels()
    d = X.shape[1]
    buf = np.empty((1, d + 1 if fit_intercept else d))
    preds = np.empty(1, dtype=np.int64)
    if algorithm == "perceptron":
        updates = perceptron_row(state.Wt, X, S, buf, bool(fit_intercept), loss == "avg",
                                 float(eta), preds)
    else:
        updates = pegasos_row(state.Wt, X, S, buf, bool(fit_intercept), loss == "avg", float(lam),
                              bool(shrink_on_zero_loss), int(state.t), int(_NORM_REFRESH), preds)
    if updates < 0:
        return False
    state.t += 1
    state.n_updates += int(updates)
    return True


def compile_kernels() -> float:
    """Compile both kernels now (instead of on the first stream); return the seconds taken.

    The one-row kernels of the single-row ``partial_fit`` / ``predict`` path are compiled
    too (with the signatures of that path: writable C-contiguous arrays).
    """
    import time

    start = time.perf_counter()
    state_p, state_g = StreamState(2, 1), StreamState(2, 1)
    X = np.ones((1, 1))
    S = np.array([[True, False]])
    perceptron, pegasos = _jit_kernels()
    preds = np.empty(1, dtype=np.int64)
    perceptron(state_p.Wt, X, S, True, 1.0, preds)
    pegasos(state_g.Wt, X, S, True, 1.0, False, 0, _NORM_REFRESH, preds)
    state_p, state_g = StreamState(2, 2), StreamState(2, 2)
    for algorithm, state in (("perceptron", state_p), ("pegasos", state_g)):
        run_one_row(state, X, S, fit_intercept=True, loss="avg", algorithm=algorithm)
    augment_row(X, True)
    return time.perf_counter() - start


def _row_scores(Wt, x, s):
    """``s[q] = Wt[q] . x`` for every class, summed in feature order; return the argmax.

    Ties go to the lowest class index. Four classes at a time (then two, then one): the
    independent sums hide the latency of the additions, while each score is still
    ``((0 + Wt[q, 0] x[0]) + Wt[q, 1] x[1]) + ...`` in index order, as in the numpy path.
    """
    K, d = Wt.shape
    q = 0
    while q + 4 <= K:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for f in range(d):
            xf = x[f]
            a0 += Wt[q, f] * xf
            a1 += Wt[q + 1, f] * xf
            a2 += Wt[q + 2, f] * xf
            a3 += Wt[q + 3, f] * xf
        s[q] = a0
        s[q + 1] = a1
        s[q + 2] = a2
        s[q + 3] = a3
        q += 4
    while q + 2 <= K:
        a0 = 0.0
        a1 = 0.0
        for f in range(d):
            xf = x[f]
            a0 += Wt[q, f] * xf
            a1 += Wt[q + 1, f] * xf
        s[q] = a0
        s[q + 1] = a1
        q += 2
    while q < K:
        a0 = 0.0
        for f in range(d):
            a0 += Wt[q, f] * x[f]
        s[q] = a0
        q += 1
    best = 0
    for q in range(1, K):
        if s[q] > s[best]:
            best = q
    return best


def _perceptron_kernel(Wt, X, S, avg, eta, preds):
    """Algorithms 1 (``avg``: APH) and 2 (MPH) over the rows of ``X``; return #updates."""
    n, d = X.shape
    K = Wt.shape[0]
    s = np.empty(K)
    updates = 0
    for k in range(n):
        x = X[k]
        preds[k] = _row_scores(Wt, x, s)          # scores s = Wt x and their argmax
        j = -1                                    # top non-candidate
        for q in range(K):
            if not S[k, q] and (j < 0 or s[q] > s[j]):
                j = q
        if j < 0:                                 # full candidate set: loss 0
            continue
        if avg:
            size = 0
            for q in range(K):
                if S[k, q]:
                    size += 1
            a = 1.0 / size                        # tau on the candidates
            m = 0.0
            for q in range(K):
                if S[k, q]:
                    m += s[q] * a
            if m - s[j] < 1.0:                    # L_APH > 0
                for q in range(K):
                    if S[k, q]:
                        for f in range(d):
                            Wt[q, f] += a * (eta * x[f])
                for f in range(d):
                    Wt[j, f] -= eta * x[f]
                updates += 1
        else:
            i = -1                                # top candidate
            for q in range(K):
                if S[k, q] and (i < 0 or s[q] > s[i]):
                    i = q
            if s[i] - s[j] < 1.0:                 # L_MPH > 0
                for f in range(d):
                    Wt[i, f] += eta * x[f]
                for f in range(d):
                    Wt[j, f] -= eta * x[f]
                updates += 1
    return updates


def _pegasos_kernel(V, X, S, avg, lam, shrink_on_zero_loss, t0, norm_refresh, preds):
    """Algorithms 3 (``avg``: APH) and 4 (MPH), with ``W = c V``; return #updates."""
    n, d = X.shape
    K = V.shape[0]
    s = np.empty(K)
    c = 1.0
    nw2 = 0.0                                     # ||W||^2 with W = c V
    for r in range(K):
        for f in range(d):
            nw2 += V[r, f] * V[r, f]
    r2 = 1.0 / lam                                # squared radius of the ball B
    t = t0
    updates = 0
    since_refresh = 0
    for k in range(n):
        t += 1
        x = X[k]
        preds[k] = _row_scores(V, x, s)           # unscaled scores s = V x (true: c s)
        j = -1                                    # top non-candidate
        for q in range(K):
            if not S[k, q] and (j < 0 or s[q] > s[j]):
                j = q
        decay = 1.0 - 1.0 / t                     # 1 - eta_t lam
        positive = False
        i = -1
        a = 0.0
        m = 0.0
        t2 = 2.0
        if j >= 0:
            if avg:
                size = 0
                for q in range(K):
                    if S[k, q]:
                        size += 1
                a = 1.0 / size
                for q in range(K):
                    if S[k, q]:
                        m += s[q] * a
                m = m - s[j]                      # unscaled margin (tau . s)
                t2 = 1.0 / size + 1.0             # ||tau||^2
            else:
                i = -1                            # top candidate
                for q in range(K):
                    if S[k, q] and (i < 0 or s[q] > s[i]):
                        i = q
                m = s[i] - s[j]
            positive = c * m < 1.0                # loss > 0
        if positive:
            g = 1.0 / (lam * t)                   # eta_t
            x2 = 0.0
            for f in range(d):
                x2 += x[f] * x[f]
            nw2 = decay * decay * nw2 + 2.0 * decay * c * g * m + g * g * t2 * x2
            if decay == 0.0:                      # t = 1: (1 - eta_1 lam) W = 0
                V[:, :] = 0.0
                c = 1.0
            else:
                c *= decay
            gc = g / c                            # W + g tau x^T = c (V + (g/c) tau x^T)
            if avg:
                for q in range(K):
                    if S[k, q]:
                        for f in range(d):
                            V[q, f] += a * (gc * x[f])
            else:
                for f in range(d):
                    V[i, f] += gc * x[f]
            for f in range(d):
                V[j, f] -= gc * x[f]
            if nw2 > r2:                          # projection onto ||W|| <= 1/sqrt(lam)
                c *= math.sqrt(r2 / nw2)
                nw2 = r2
            updates += 1
            since_refresh += 1
        elif shrink_on_zero_loss:
            if decay == 0.0:
                V[:, :] = 0.0
                c = 1.0
                nw2 = 0.0
            else:
                c *= decay
                nw2 *= decay * decay
        if c < 1e-30 or c > 1e30 or since_refresh >= norm_refresh:
            nw2 = 0.0
            for q in range(K):
                for f in range(d):
                    V[q, f] *= c
                    nw2 += V[q, f] * V[q, f]
            c = 1.0
            since_refresh = 0
    if c != 1.0:
        for q in range(K):
            for f in range(d):
                V[q, f] *= c
    return updates
