"""Clean labels out (issue 64): for every training row, which candidate is its label, how sure
that is, and whether its candidate set probably misses the truth.

1. **Out of fold.** The rows are split into ``k`` folds; a pipeline (preprocessing, the learner)
   is fitted on the other folds' rows and their candidate sets and gives each held-out row its
   class probabilities ``p(j | x)``. No row's probabilities come from a model that saw its own
   candidate set.
2. **A noise model fitted without true labels.** The candidate sets are read as PiCO+'s noisy
   partial labels (Wang et al., 2022): each false label joins a set with probability ``q``, the
   true label is left out with probability ``eta``. With the probabilities sharpened or softened
   by a temperature ``T``, ``p_T(j | x) = softmax(log p(j | x) / T)``, the probability of the
   observed set ``S`` (of ``s`` labels out of ``Q``) is (eq. 1)

       P(S | x) = (1 - eta) q^(s-1) (1 - q)^(Q-s) m_in(x, S) + eta q^s (1 - q)^(Q-s-1) m_out(x, S),

   with ``m_in = sum_{j in S} p_T(j | x)`` and ``m_out = 1 - m_in``. ``T``, ``q`` and ``eta`` maximise
   the sum of ``log P(S_i | x_i)`` over the rows (:func:`fit_noise_model`): candidate sets are all
   it reads.
3. **The posterior of each row's true label** given its features and its set (eq. 2):

       P(y = j | x, S) = p_T(j | x) w_j / sum_l p_T(l | x) w_l,   w_j = 1 (j in S), rho (j not in S),

   ``rho = eta q / ((1 - eta) (1 - q))``. Then ``label`` is the candidate of highest posterior,
   ``confidence`` its posterior (the probability that ``label`` is right), ``model_label`` the
   argmax of ``p_T(j | x)`` (the set hidden) and ``suspect`` the posterior mass outside the set,
   ``P(y not in S | x, S)``. A row is flagged where ``suspect >= 0.5``: the truth is more likely
   outside its set than inside, a threshold no true label chose.

The model is an assumption (false labels that join independently of each other); where the data's
own candidate sets come from elsewhere (crowds, native PLL data), ``eta`` and ``rho`` are the
values that explain the sets best under it. ``docs/results/clean.md`` measures it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, logsumexp
from sklearn.base import clone
from sklearn.model_selection import KFold

from plcore.exceptions import ConfigError, DataValidationError
from plcore.utils import dense_candidates

__all__ = ["Cleaned", "out_of_fold_proba", "fit_noise_model", "posterior", "clean_labels", "FLAG_AT"]

#: a row is flagged where the posterior probability that its truth is outside its set is at least this
FLAG_AT = 0.5
_TINY = 1e-12


@dataclass
class Cleaned:
    """What :func:`clean_labels` found, per row (class indices into the data's classes):
    ``label``, ``confidence``, ``model_label``, ``suspect``, ``flag``; the fitted noise model
    ``noise`` (``temperature``, ``q``, ``eta``, ``rho``); the out-of-fold probabilities ``oof``
    and the posterior ``posterior`` (both ``(n, q)``)."""

    label: np.ndarray
    confidence: np.ndarray
    model_label: np.ndarray
    suspect: np.ndarray
    flag: np.ndarray
    noise: dict = field(default_factory=dict)
    oof: np.ndarray | None = None
    posterior: np.ndarray | None = None
    threshold: float = FLAG_AT


def out_of_fold_proba(pipeline, X, S, *, n_splits: int = 5, random_state=0, on_fold=None) -> np.ndarray:
    """``(n, q)`` class probabilities of every row from a clone of ``pipeline`` fitted on the
    other folds (shuffled ``KFold``); ``on_fold(k, test_rows, proba)`` after each fold. A
    pipeline without ``predict_proba`` is one line."""
    S = dense_candidates(S)
    n, q = S.shape
    if not hasattr(pipeline, "predict_proba"):
        raise ConfigError(f"clean needs class probabilities: {type(pipeline).__name__} has no predict_proba")
    if not 2 <= n_splits <= n:
        raise ConfigError(f"n_splits must be between 2 and the {n} rows, got {n_splits}")
    P = np.zeros((n, q))
    for k, (train, test) in enumerate(KFold(n_splits, shuffle=True, random_state=random_state).split(X)):
        fitted = clone(pipeline).fit(X[train], S[train])
        proba = np.asarray(fitted.predict_proba(X[test]), dtype=float)
        if proba.shape != (test.size, q):  # a class no training row of this fold had as a candidate
            raise DataValidationError(f"fold {k}: the learner gave {proba.shape[1]} class probabilities for {q} "
                                      "classes; every class must be a candidate of some training row")
        P[test] = proba
        if on_fold is not None:
            on_fold(k, test, proba)
    return P


def _parts(P, S, T):
    """``log p_T`` (rows of log-probabilities) and the log masses in and out of the sets (in log
    space: a sharp temperature leaves masses far below any float's resolution of 1)."""
    logp = log_softmax(np.log(np.clip(P, _TINY, None)) / T, axis=1)
    with np.errstate(divide="ignore"):
        log_in = logsumexp(np.where(S, logp, -np.inf), axis=1)
        log_out = logsumexp(np.where(S, -np.inf, logp), axis=1)  # -inf for a set of every class
    return logp, log_in, log_out


def fit_noise_model(P, S) -> dict:
    """``{"temperature", "q", "eta", "rho", "log_likelihood"}`` maximising eq. 1 of the module
    over the rows (Nelder-Mead on ``log T``, ``logit q``, ``logit eta`` from four starts, the best
    kept)."""
    S = np.asarray(S, dtype=bool)
    size = S.sum(axis=1)
    n_classes = S.shape[1]

    def nll(theta):
        T, q, eta = np.exp(theta[0]), expit(theta[1]), expit(theta[2])
        _, log_in, log_out = _parts(P, S, T)
        with np.errstate(divide="ignore", invalid="ignore"):  # q or eta at 0 or 1: a likelihood of 0
            return _nll(log_in, log_out, q, eta)

    def _nll(log_in, log_out, q, eta):
        inside = np.log1p(-eta) + (size - 1) * np.log(q) + (n_classes - size) * np.log1p(-q) + log_in
        outside = np.log(eta) + size * np.log(q) + (n_classes - size - 1) * np.log1p(-q) + log_out
        value = -float(np.logaddexp(inside, outside).sum())
        return value if np.isfinite(value) else np.inf

    q0 = np.log((size.mean() - 1 + 0.5) / max(n_classes - size.mean(), 0.5))  # the sets' mean size, as logit q
    fits = [minimize(nll, np.array([np.log(T0), q0, np.log(eta0 / (1 - eta0))]), method="Nelder-Mead",
                     options={"maxiter": 4000, "xatol": 1e-5, "fatol": 1e-7})
            for T0 in (1.0, 0.3) for eta0 in (0.05, 0.2)]  # a few starts: the likelihood need not be concave
    res = min(fits, key=lambda r: r.fun)
    T, q, eta = float(np.exp(res.x[0])), float(expit(res.x[1])), float(expit(res.x[2]))
    rho = eta * q / max((1.0 - eta) * (1.0 - q), _TINY)
    return {"temperature": T, "q": q, "eta": eta, "rho": rho, "log_likelihood": -float(res.fun)}


def posterior(P, S, noise: dict) -> np.ndarray:
    """``(n, q)``: eq. 2 of the module, each row's posterior over the classes."""
    S = np.asarray(S, dtype=bool)
    logp, _, _ = _parts(P, S, noise["temperature"])
    logw = np.where(S, 0.0, np.log(max(noise["rho"], _TINY)))
    return np.exp(log_softmax(logp + logw, axis=1))


def clean_labels(pipeline, X, S, *, n_splits: int = 5, random_state=0, on_fold=None) -> Cleaned:
    """Every row's label, confidence, out-of-fold model label, suspect score and flag (the
    module's steps 1-3) from ``pipeline`` (any estimator with ``predict_proba``, fitted on
    candidate sets)."""
    S = dense_candidates(S)
    if not S.any(axis=1).all():
        raise DataValidationError(f"{int((~S.any(axis=1)).sum())} row(s) have an empty candidate set")
    P = out_of_fold_proba(pipeline, X, S, n_splits=n_splits, random_state=random_state, on_fold=on_fold)
    noise = fit_noise_model(P, S)
    B = posterior(P, S, noise)
    label = np.where(S, B, -1.0).argmax(axis=1)
    rows = np.arange(S.shape[0])
    suspect = np.clip((B * ~S).sum(axis=1), 0.0, 1.0)
    model_label = P.argmax(axis=1)  # the temperature keeps the order
    return Cleaned(label=label, confidence=B[rows, label], model_label=model_label, suspect=suspect,
                   flag=suspect >= FLAG_AT, noise=noise, oof=P, posterior=B)
