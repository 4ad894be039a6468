"""Bag generators: candidate sets from exact labels (DESIGN.md section 6).

All are seeded scikit-learn estimators (``random_state``) with
``generate(y, X=None, random_state=None, n_classes=None, S=None) -> bool (n, q)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans

from plcore.base import BaseBagGenerator
from plcore.exceptions import DataValidationError
from plcore.utils import dense_candidates
from plcore.validation import HasMethods, Integral, Interval, Real


def _at_most(generator, name, high, what):
    """Data-dependent upper bound of an integer parameter (the lower bound is a constraint)."""
    value = getattr(generator, name)
    if value > high:
        raise DataValidationError(f"{type(generator).__name__}: {name} must be <= {high} ({what}), got {value}")

__all__ = ["UniformBags", "FixedSizeBags", "ClusterNoisyBags", "DropTrueBags", "FlipBags", "HierarchicalBags",
           "NoisyBags", "UniformSetBags", "InstanceDependentBags", "random_distinct_others"]


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

    Every bag has size ``r + 1``; requires ``r <= q - 2`` (``r = q - 1`` would put all q labels in
    every bag: no information).
    """

    _parameter_constraints = {"r": [Interval(Integral, 0, None, closed="left")], "random_state": ["random_state"]}

    def __init__(self, r=1, random_state=None):
        self.r = r
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        _at_most(self, "r", n_classes - 2, f"r >= q - 1 = {n_classes - 1} puts all {n_classes} labels in every "
                 "bag: no information")
        out = _singletons(y, n_classes)
        others = random_distinct_others(y, self.r, n_classes, rng)
        out[np.arange(y.shape[0])[:, None], others] = True
        return out


class FixedSizeBags(BaseBagGenerator):
    """Bags of exactly ``s`` labels: the true one plus ``s - 1`` random others (online paper).

    Requires ``s <= q - 1`` (``s = q`` would put all q labels in every bag: no information).
    """

    _parameter_constraints = {"s": [Interval(Integral, 1, None, closed="left")], "random_state": ["random_state"]}

    def __init__(self, s=2, random_state=None):
        self.s = s
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        _at_most(self, "s", n_classes - 1, f"s >= q = {n_classes} puts all {n_classes} labels in every bag: "
                 "no information")
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
    ``observed_labels_`` (n,), the label each bag was built around. The true label may be left
    out (tag ``noisy_candidates``).
    """

    _parameter_constraints = {"n_clusters": [Interval(Integral, 1, None, closed="left")],
                              "eta": [Interval(Real, 0.0, 1.0, closed="both")], "random_state": ["random_state"]}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.needs_features = True
        tags.pll_tags.noisy_candidates = True
        return tags

    def __init__(self, n_clusters=5, eta=0.0, random_state=None):
        self.n_clusters = n_clusters
        self.eta = eta
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        _at_most(self, "n_clusters", X.shape[0], "one example per cluster at least")
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
    candidate sets (tag ``corrupts_existing_labels``). Tag ``noisy_candidates``.
    """

    _parameter_constraints = {"eta": [Interval(Real, 0.0, 1.0, closed="both")], "random_state": ["random_state"]}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.corrupts_existing_labels = True
        tags.pll_tags.noisy_candidates = True
        return tags

    def __init__(self, eta=0.1, random_state=None):
        self.eta = eta
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        n = y.shape[0]
        out = _singletons(y, n_classes) if S is None else dense_candidates(S).copy()
        rows = np.arange(n)
        drop = (rng.random_sample(n) < self.eta) & out[rows, y]
        out[rows[drop], y[drop]] = False
        empty = drop & ~out.any(axis=1)
        if empty.any():
            repl = random_distinct_others(y[empty], 1, n_classes, rng)[:, 0]
            out[rows[empty], repl] = True
        self.dropped_ = drop
        return out


class FlipBags(BaseBagGenerator):
    """Each false label joins the bag independently with probability ``p`` (the "flipping
    probability" of the deep-PLL benchmarks: PRODEN, POP, PLENCH). The mean bag has
    ``1 + p (q - 1)`` labels; bags vary in size. ``p`` is below 1 (``p = 1`` would put every label
    in every bag: no information).
    """

    _parameter_constraints = {"p": [Interval(Real, 0.0, 1.0, closed="left")], "random_state": ["random_state"]}

    def __init__(self, p=0.3, random_state=None):
        self.p = p
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        out = rng.random_sample((y.shape[0], n_classes)) < self.p
        out[np.arange(y.shape[0]), y] = True
        return out


class HierarchicalBags(BaseBagGenerator):
    """Each false label *of the true label's superclass* joins the bag independently with
    probability ``p``; labels of other superclasses never do (PiCO's CIFAR-100-H, Wang et al.,
    ICLR 2022, section 5; RECORDS). ``groups``: ``"cifar100"`` (CIFAR-100's 20 superclasses of five,
    classes in the official order), one group index per class, or a count ``k``: the classes in
    ``k`` contiguous groups of (nearly) equal size. ``p`` is below 1 (``p = 1`` would
    put the whole superclass in every bag: nothing to tell its classes apart by)."""

    _parameter_constraints = {"p": [Interval(Real, 0.0, 1.0, closed="left")],
                              "groups": [str, "array-like", Interval(Integral, 1, None, closed="left")],
                              "random_state": ["random_state"]}

    def __init__(self, p=0.5, groups="cifar100", random_state=None):
        self.p = p
        self.groups = groups
        self.random_state = random_state

    def _group_of(self, n_classes: int) -> np.ndarray:
        if isinstance(self.groups, str):
            if self.groups != "cifar100":
                raise ValueError(f"groups must be 'cifar100' or one group index per class, got {self.groups!r}")
            from plcore.datasets.loaders.cifar import cifar100_class_groups

            groups = cifar100_class_groups()
        elif isinstance(self.groups, (int, np.integer)):
            groups = np.arange(n_classes) * int(self.groups) // n_classes
        else:
            groups = np.asarray(self.groups).reshape(-1)
        if groups.shape != (n_classes,):
            raise ValueError(f"groups gives {groups.size} classes a group, the labels have {n_classes} classes")
        return groups

    def _generate(self, y, n_classes, rng, X=None, S=None):
        groups = self._group_of(n_classes)
        same = groups[y][:, None] == groups[None, :]
        out = (rng.random_sample((y.shape[0], n_classes)) < self.p) & same
        out[np.arange(y.shape[0]), y] = True
        return out


class NoisyBags(BaseBagGenerator):
    """Noisy partial labels as PiCO+ draws them (Wang et al., arXiv:2201.08984; its code's
    ``generate_uniform_cv_candidate_labels``): each false label joins the set with probability
    ``q``, the true label with probability ``1 - eta``, all independently; a row whose draw is
    empty is drawn again, all its labels anew, until it is not.

    So no set is empty, none is topped up, and a dropped true label is not replaced: a row
    without its true label holds one or more false labels. Sets of one label and of all labels
    occur. The redraw makes the share of rows without their true label (the realized noise
    rate) smaller than ``eta``: with ``e = eta (1 - q)^(n_classes - 1)`` (an empty draw) it is
    ``(eta - e) / (1 - e)``; on the rows that keep their true label each false label is in the
    set with probability exactly ``q``. ``eta = 0`` is ``flip`` with ``p = q``.

    ``q`` (PiCO+'s partial rate, ``flip``'s ``p``; not the number of classes) is below 1, which
    would put every false label in every set; ``eta`` is below 1, which would leave every true
    label out; ``q = 0`` with ``eta > 0`` is refused (a set without its true label would be
    empty and is drawn again: ``eta`` would do nothing). Defaults: the ``--partial_rate 0.1``
    and ``--noisy_rate 0.2`` of PiCO+'s ``train_pico_plus.py``. ``dropped_`` (n,) marks the
    rows whose true label is left out. Tag ``noisy_candidates``.
    """

    _parameter_constraints = {"q": [Interval(Real, 0.0, 1.0, closed="left")],
                              "eta": [Interval(Real, 0.0, 1.0, closed="left")], "random_state": ["random_state"]}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.noisy_candidates = True
        return tags

    def __init__(self, q=0.1, eta=0.2, random_state=None):
        self.q = q
        self.eta = eta
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        if self.q == 0 and self.eta > 0:
            raise DataValidationError(f"NoisyBags: q=0 with eta={self.eta} leaves no true label out (a set "
                                      "without it would be empty and is drawn again): set q > 0 or eta=0")
        n = y.shape[0]
        rate = np.full((n, n_classes), float(self.q))  # each row's chance per label
        rate[np.arange(n), y] = 1.0 - self.eta
        out = np.zeros((n, n_classes), dtype=bool)
        todo = np.arange(n)
        while todo.size:  # rejection, as PiCO+: an empty row is drawn again, every label anew
            out[todo] = rng.random_sample((todo.size, n_classes)) < rate[todo]
            todo = todo[~out[todo].any(axis=1)]
        self.dropped_ = ~out[np.arange(n), y]
        return out


class UniformSetBags(BaseBagGenerator):
    """The candidate-set model of RC/CC (Feng et al., NeurIPS 2020, Section 3): a bag drawn
    uniformly from the ``2^(q-1) - 1`` sets that contain the true label, all labels excepted.

    Drawn as every false label with probability 1/2, a bag of all q labels drawn again. The
    mean number of false labels is ``(q-1) (2^(q-2) - 1) / (2^(q-1) - 1)``, about ``(q-1)/2``.
    """

    _parameter_constraints = {"random_state": ["random_state"]}

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _generate(self, y, n_classes, rng, X=None, S=None):
        if n_classes < 2:
            raise DataValidationError("uniform_sets needs at least 2 classes (a bag must leave one label out)")
        n = y.shape[0]
        out = np.zeros((n, n_classes), dtype=bool)
        todo = np.arange(n)
        while todo.size:  # rejection: a full bag (probability 2^-(q-1)) is drawn again
            out[todo] = rng.random_sample((todo.size, n_classes)) < 0.5
            out[todo, y[todo]] = True
            todo = todo[out[todo].all(axis=1)]
        return out


class InstanceDependentBags(BaseBagGenerator):
    """Instance-dependent candidate sets, the recipe of VALEN (Xu et al., NeurIPS 2021,
    ``feature_partialize``) and POP (Xu et al., ICML 2023, ``utils/data_factory.py``).

    A helper network (scikit-learn's ``MLPClassifier`` on z-scored features, seeded; or ``estimator``)
    is trained on the true labels of ``fit_rows`` (the protocols pass the training part; a class absent
    there never becomes a candidate); for every row ``p = softmax(f(x))``,
    ``p[true] = 0``, ``p <- p / max(p)``, ``p <- rate * p / mean(p)`` (the mean over all q
    entries), clipped to 1; each false label joins the bag with probability ``p_j``. Labels the
    helper confuses with the true one become candidates more often: the bags depend on ``x``.
    ``probabilities_`` (n, q) holds the ``p`` of the last call. At most ``rate * q`` false labels
    on average (exactly that where nothing is clipped).

    ``estimator``: the helper in the MLP's place, cloned and seeded from the generator's seed where its
    ``random_state`` is None: a scikit-learn classifier (fitted on the labels) or a plcore learner
    (fitted on singleton sets of the labels: a PLL loss on exact labels is supervised training), for
    images a network of plcore-deep as VALEN and PLENCH make their CIFAR sets
    (``'bags.estimator={_target_:plcore_deep.CcLearner,network:resnet18}'``, docs/images.md).
    """

    _parameter_constraints = {"rate": [Interval(Real, 0.0, None, closed="left")],
                              "hidden_layer_sizes": ["array-like"],
                              "max_iter": [Interval(Integral, 1, None, closed="left")],
                              "estimator": [HasMethods(["fit", "predict_proba"]), None],
                              "random_state": ["random_state"]}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.needs_features = True
        tags.pll_tags.learns_from_labels = True
        return tags

    def __init__(self, rate=0.4, hidden_layer_sizes=(64,), max_iter=100, estimator=None, random_state=None):
        self.rate = rate
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_iter = max_iter
        self.estimator = estimator
        self.random_state = random_state

    def _helper_proba(self, X, y, rows, n_classes, seed) -> np.ndarray:
        """``(n, q)``: the helper, fitted on ``rows``' labels, on every row (a class it never saw: 0)."""
        import warnings

        from sklearn.base import clone
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from plcore.base import BaseLearner

        if self.estimator is None:
            helper = make_pipeline(StandardScaler(), MLPClassifier(
                hidden_layer_sizes=tuple(self.hidden_layer_sizes), max_iter=int(self.max_iter), random_state=seed))
        else:
            helper = clone(self.estimator)  # every random_state left None, nested ones too, seeded
            helper.set_params(**{k: seed for k, v in helper.get_params(deep=True).items()
                                 if (k == "random_state" or k.endswith("__random_state")) and v is None})
        p = np.zeros((y.shape[0], n_classes))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a helper, not a model: a fixed budget
            if isinstance(helper, BaseLearner):
                seen = np.unique(y[rows])
                helper.fit(X[rows], _singletons(y[rows], n_classes)[:, seen])
                p[:, seen] = helper.predict_proba(X)
            else:
                helper.fit(X[rows], y[rows])
                p[:, helper.classes_] = helper.predict_proba(X)
        return p

    def _generate(self, y, n_classes, rng, X=None, S=None, fit_rows=None):
        n = y.shape[0]
        rows = np.arange(n) if fit_rows is None else fit_rows
        p = self._helper_proba(X, y, rows, n_classes, int(rng.randint(np.iinfo(np.int32).max)))
        p[np.arange(n), y] = 0.0
        top = p.max(axis=1, keepdims=True)
        p = np.divide(p, top, out=np.zeros_like(p), where=top > 0)
        mean = p.mean(axis=1, keepdims=True)
        p = np.minimum(1.0, self.rate * np.divide(p, mean, out=np.zeros_like(p), where=mean > 0))
        out = rng.random_sample((n, n_classes)) < p
        out[np.arange(n), y] = True
        self.probabilities_ = p
        return out
