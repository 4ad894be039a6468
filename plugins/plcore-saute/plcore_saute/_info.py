"""Information estimates of SAUTE (Bao, Hang & Zhang, KDD 2022), vectorised over features.

* :func:`conditional_entropy` -- ``H(c|f)`` for every feature at once from class-conditional
  Gaussians fitted on the sets ``D_l`` (Eq. 8-10);
* :func:`discretize` -- the 5-bin discretisation at ``mu +- sigma, mu +- 2 sigma`` (Eq. 11);
* :func:`mutual_info_with` -- ``I(f; f_j)`` between one feature ``f_j`` and every feature,
  from joint bin counts (one ``bincount`` over ``m x d`` joint codes);
* :func:`joint_entropy_gain` -- ``H(A + {f})`` for every candidate ``f`` given the joint bin
  cell of the selected set ``A`` (used by the MJE baseline).

All entropies use the natural logarithm (as :func:`sklearn.metrics.mutual_info_score`).
The two terms of the SAUTE criterion, Eq. (7), must share one base: the redundancy weight
depends on it.

Smoothing of the Gaussian estimates (the paper leaves it open; DESIGN.md section 8):

1. features are standardised by their overall mean and standard deviation first. ``H(c|f)``
   is invariant to an affine map of ``f`` (each class Gaussian moves with it), so this
   changes nothing but makes the next rule relative;
2. **variance floor**: each class variance is at least ``var_smoothing`` times the
   feature's overall variance (default ``var_smoothing=0.3``: class standard deviation at
   least 0.55 overall standard deviations, chosen on development data, see the plugin README). Without it a class whose members in ``D_l``
   all share one value of a near-constant feature (msrc-v2 has columns that are 90-99.9 %
   zeros) gets a (nearly) zero-width Gaussian, a huge density and a spuriously small
   ``H(c|f)``; with a floor of 1e-2 SAUTE still ranks such zero-inflated columns first on
   msrc-v2 (see the plugin README for the measured effect of the floor);
3. **classes with fewer than two members in D_l** (Laplace-style prior): one pseudo-example
   at the feature's overall mean is added to the mean, ``mu_l = sum_{D_l} x / (|D_l| + 1)``,
   and the variance is the feature's overall variance (a one-point sample has none).
   A class that is nobody's candidate has ``p(l) = 0`` and drops out of Eq. (8);
4. a **constant feature** (all values equal) carries no information: ``H(c|f) = H(c)`` with
   ``c ~ p(l)``, exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["standardize_columns", "membership", "class_gaussians", "conditional_entropy",
           "prior_entropy", "discretize", "N_BINS", "bin_counts", "mutual_info_with",
           "entropy_from_counts", "joint_entropy_gain"]

N_BINS = 5
#: elements of the largest temporary array (rows x classes x features) built at once
_CHUNK_ELEMENTS = 1 << 22


def standardize_columns(X):
    """``(Z, constant)``: columns scaled to mean 0 / std 1; constant columns are all 0."""
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    constant = np.ptp(X, axis=0) == 0 if X.shape[0] else np.ones(X.shape[1], bool)
    sd_safe = np.where(constant | (sd == 0), 1.0, sd)
    Z = (X - mu) / sd_safe
    Z[:, constant] = 0.0
    return Z, constant


def membership(Y, S):
    """``D_l`` as a bool (m, q) matrix: ``x_i`` is in ``D_l`` iff ``Y(i, l) >= 1/|S_i|``.

    A relative tolerance of 1e-12 absorbs rounding (``Y`` starts at exactly ``1/|S_i|``).
    """
    size = S.sum(axis=1, keepdims=True)
    return S & (Y >= (1.0 - 1e-12) / size)


def class_gaussians(Z, M, var_smoothing):
    """Smoothed per-class, per-feature Gaussian ``(mean, var)``, each of shape (q, d).

    ``Z`` are standardised features (overall mean 0, variance 1 per non-constant column),
    ``M`` the (m, q) membership of the sets ``D_l``. See the module docstring for the rules.
    """
    Mf = M.astype(np.float64)
    n = Mf.sum(axis=0)[:, None]                                 # (q, 1)
    sums = Mf.T @ Z                                              # (q, d)
    sq = Mf.T @ (Z * Z)
    few = n[:, 0] < 2
    mean = np.where(few[:, None], sums / (n + 1.0), sums / np.maximum(n, 1.0))
    var = np.where(few[:, None], 1.0, sq / np.maximum(n, 1.0) - mean * mean)
    return mean, np.maximum(var, var_smoothing)


def prior_entropy(prior):
    """Entropy of the label prior ``p(l)`` (natural log)."""
    p = prior[prior > 0]
    return float(-(p * np.log(p)).sum())


def conditional_entropy(Z, constant, Y, S, var_smoothing=0.3):
    """Estimated ``H(c|f)`` of every feature, Eq. (10), shape (d,).

    ``p(l|x_if)`` is Bayes' rule, Eq. (8), on the class-conditional Gaussians of
    :func:`class_gaussians` and the prior ``p(l) = mean_i Y(i, l)``; the integral of
    Eq. (9) is the average over the m training values. Cost O(m d q), computed in row
    chunks of a (rows, q, d) log-density array, in log space (log-sum-exp).

    Parameters
    ----------
    Z : ndarray (m, d)
        Standardised features (:func:`standardize_columns`).
    constant : ndarray (d,) of bool
        Constant columns; their entropy is ``H(c)``.
    Y : ndarray (m, q)
        Labelling confidences (rows on the candidates, sum 1).
    S : ndarray (m, q) of bool
        Candidate sets.
    var_smoothing : float
        Variance floor relative to the feature's overall variance.
    """
    m, d = Z.shape
    prior = Y.mean(axis=0)
    present = prior > 0
    mean, var = class_gaussians(Z, membership(Y, S), var_smoothing)
    mean, var = mean[present], var[present]                       # (q', d)
    log_prior = np.log(prior[present])[:, None]
    half_inv = 0.5 / var
    const_term = -0.5 * np.log(2.0 * np.pi * var) + log_prior    # (q', d)
    qp = mean.shape[0]
    total = np.zeros(d)
    step = max(1, _CHUNK_ELEMENTS // max(1, qp * d))
    # two (rows, q', d) buffers reused by every chunk, the arithmetic done in place
    ll_buf = np.empty((min(step, m), qp, d))
    post_buf = np.empty_like(ll_buf)
    for start in range(0, m, step):
        z = Z[start:start + step, None, :]                      # (b, 1, d)
        ll, post = ll_buf[:z.shape[0]], post_buf[:z.shape[0]]
        np.subtract(z, mean, out=ll)                             # log p(l) N(z; mu, var), (b, q', d)
        np.square(ll, out=ll)
        ll *= half_inv
        np.subtract(const_term, ll, out=ll)
        ll -= ll.max(axis=1, keepdims=True)
        np.exp(ll, out=post)
        norm = post.sum(axis=1, keepdims=True)
        post /= norm
        ll -= np.log(norm)                                       # log p(l | z)
        total -= np.einsum("bqd,bqd->d", post, ll)
    H = total / m
    H[constant] = prior_entropy(prior)
    return H


# ----------------------------------------------------------------------------- discrete
def discretize(X):
    """Eq. (11): bins 0..4 (the paper's -2..2) at ``mu +- sigma`` and ``mu +- 2 sigma``.

    ``mu`` and ``sigma`` are each column's mean and (population) standard deviation. A
    constant column falls entirely into bin 0 (``x <= mu - 2 sigma`` with sigma 0).
    Returns an ``int8`` array of the shape of ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    B = (X > mu - 2 * sd).astype(np.int8)
    B += X > mu - sd
    B += X > mu + sd
    B += X > mu + 2 * sd
    return B


def bin_counts(B):
    """Marginal bin counts, shape (d, 5)."""
    m, d = B.shape
    codes = B.astype(np.intp) + N_BINS * np.arange(d)
    return np.bincount(codes.ravel(), minlength=N_BINS * d).reshape(d, N_BINS)


def entropy_from_counts(counts, axis=-1):
    """Entropy (natural log) of count vectors along ``axis``."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=axis, keepdims=True)
    p = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=axis)


def mutual_info_with(B, j, marginals=None):
    """``I(f; f_j)`` (natural log) between column ``j`` and every column of ``B``, shape (d,).

    One ``bincount`` over the joint codes ``25 f + 5 b_f + b_j`` of all m x d entries
    (O(m d)); equals :func:`sklearn.metrics.mutual_info_score` on each pair.
    """
    m, d = B.shape
    if marginals is None:
        marginals = bin_counts(B)
    out = np.empty(d)
    bj = B[:, j].astype(np.intp)
    step = max(1, _CHUNK_ELEMENTS // max(1, m))
    for start in range(0, d, step):
        stop = min(d, start + step)
        width = stop - start
        codes = B[:, start:stop].astype(np.intp) * N_BINS + bj[:, None]
        codes += N_BINS * N_BINS * np.arange(width)
        joint = np.bincount(codes.ravel(), minlength=N_BINS * N_BINS * width)
        joint = joint.reshape(width, N_BINS, N_BINS).astype(np.float64)
        outer = marginals[start:stop, :, None].astype(np.float64) * marginals[j][None, None, :]
        nz = joint > 0
        terms = np.zeros_like(joint)
        # p log(p / (p_f p_j)) with p = c/m:  (c/m) * log(c m / (c_f c_j))
        terms[nz] = joint[nz] / m * np.log(joint[nz] * m / outer[nz])
        out[start:stop] = terms.sum(axis=(1, 2))
    return np.maximum(out, 0.0)


def joint_entropy_gain(cell, n_cells, B):
    """``H(A + {f})`` for every column ``f``, shape (d,).

    ``cell`` (m,) are the compact ids 0..n_cells-1 of each example's joint bin cell over the
    selected set ``A`` (all zeros for ``A`` empty). Counts of (cell, bin of f) pairs per
    column, with one ``bincount`` per chunk of columns.
    """
    m, d = B.shape
    out = np.empty(d)
    width_cells = n_cells * N_BINS
    step = max(1, _CHUNK_ELEMENTS // max(1, max(m, width_cells)))
    base = cell.astype(np.intp) * N_BINS
    for start in range(0, d, step):
        stop = min(d, start + step)
        width = stop - start
        codes = base[:, None] + B[:, start:stop] + width_cells * np.arange(width)
        counts = np.bincount(codes.ravel(), minlength=width_cells * width).reshape(width, width_cells)
        out[start:stop] = entropy_from_counts(counts, axis=1)
    return out
