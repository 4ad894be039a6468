"""Bag generators: candidate sets from exact labels (DESIGN.md section 6).

All are seeded scikit-learn estimators (``random_state``) with
``generate(y, X=None, random_state=None, n_classes=None, S=None) -> bool (n, q)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans

from plcore.base import BaseBagGenerator
from plcore.validation import check_int, check_real

__all__ = ["UniformBags", "FixedSizeBags", "ClusterNoisyBags", "DropTrueBags", "random_distinct_others"]


def random_distinct_others(y, n_others, n_classes, rng):
    """For each row, ``n_others`` distinct labels drawn uniformly from those != y[i].

    Vectorised: rank uniform keys over the q-1 non-true labels and keep the smallest.
    Returns an (n, n_others) int array.
    """
    n = y.shape[0]
    if n_others == 0:
        return np.zeros((n, 0), dtype=np.int64)
    keys = rng.random_sample((n, n_classes - 1))
    picks = np.argpartition(keys, n_others - 1, axis=1)[:, :n_others]
    # map 0..q-2 onto the labels other than y[i]
    return picks + (picks >= y[:, None])


def _singletons(y, q):
    S = np.zeros((y.shape[0], q), dtype=bool)
    S[np.arange(y.shape[0]), y] = True
    return S


class UniformBags(BaseBagGenerator):
    """True label plus ``r`` distinct false positives drawn uniformly (Cour et al. protocol).

    Every bag has size ``r + 1``; requires ``r <= q - 1``.
    """

    def __init__(self, r=1, random_state=None):
        self.r = r
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        check_int(self.r, "r", 0, n_classes - 1)
        out = _singletons(y, n_classes)
        others = random_distinct_others(y, self.r, n_classes, rng)
        out[np.arange(y.shape[0])[:, None], others] = True
        return out


class FixedSizeBags(BaseBagGenerator):
    """Bags of exactly ``s`` labels: the true one plus ``s - 1`` random others (online paper)."""

    def __init__(self, s=2, random_state=None):
        self.s = s
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        check_int(self.s, "s", 1, n_classes)
        return UniformBags(r=self.s - 1)._generate(y, n_classes, rng)


class ClusterNoisyBags(BaseBagGenerator):
    """Instance-dependent noisy bags of the PL A-kNN paper (section 4.1).

    The features are clustered with k-means into ``n_clusters``. For cluster ``c`` and
    label ``l`` a probability ``p[c, l, l']`` ~ U(0, 1) of adding each incorrect label
    ``l'`` is drawn. With probability ``eta`` an example's label is first replaced by a
    label drawn uniformly from all ``q`` labels (Lv et al. 2023 confusion; it may equal
    the true one); the (possibly corrupted) label is always in the bag, every other
    label ``l'`` joins independently with probability ``p[c, label, l']``.

    After ``generate``: ``cluster_labels_`` (n,), ``probabilities_`` (c, q, q) and
    ``observed_labels_`` (n,), the label each bag was built around.
    """

    _requires_X = True

    def __init__(self, n_clusters=5, eta=0.0, random_state=None):
        self.n_clusters = n_clusters
        self.eta = eta
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        check_int(self.n_clusters, "n_clusters", 1, X.shape[0])
        check_real(self.eta, "eta", 0.0, 1.0)
        n = y.shape[0]
        km = KMeans(n_clusters=self.n_clusters, n_init=4,
                    random_state=rng.randint(np.iinfo(np.int32).max))
        clusters = km.fit_predict(X)
        p = rng.random_sample((self.n_clusters, n_classes, n_classes))
        flip = rng.random_sample(n) < self.eta
        observed = y.copy()
        observed[flip] = rng.randint(0, n_classes, size=int(flip.sum()))
        out = rng.random_sample((n, n_classes)) < p[clusters, observed]
        out[np.arange(n), observed] = True
        self.cluster_labels_ = clusters
        self.probabilities_ = p
        self.observed_labels_ = observed
        return out


class DropTrueBags(BaseBagGenerator):
    """Label noise for real PLL data: remove the true label from a bag with probability ``eta``.

    Starts from the given candidate matrix ``S`` (or singleton bags when ``S`` is None).
    A bag that removal would leave empty instead receives one incorrect label drawn
    uniformly (the annotator named a wrong label), so every bag stays non-empty.
    ``dropped_`` (n,) marks the rows whose true label was removed.

    Unlike the other generators it also applies to data sets that already carry
    candidate sets (``_corrupts_existing``).
    """

    _corrupts_existing = True

    def __init__(self, eta=0.1, random_state=None):
        self.eta = eta
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        check_real(self.eta, "eta", 0.0, 1.0)
        n = y.shape[0]
        if S is None:
            out = _singletons(y, n_classes)
        else:
            out = S.toarray().astype(bool) if sp.issparse(S) else np.array(S, dtype=bool)
        rows = np.arange(n)
        drop = (rng.random_sample(n) < self.eta) & out[rows, y]
        out[rows[drop], y[drop]] = False
        empty = drop & ~out.any(axis=1)
        if empty.any():
            repl = random_distinct_others(y[empty], 1, n_classes, rng)[:, 0]
            out[rows[empty], repl] = True
        self.dropped_ = drop
        return out
