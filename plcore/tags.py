"""Partial-label capability tags on scikit-learn's tag system (``__sklearn_tags__``).

Like imbalanced-learn's ``sampler_tags``, plcore adds one field, ``pll_tags``, to the
:class:`sklearn.utils.Tags` every estimator returns. The core decides how to treat a
component from these tags only; a component declares them by extending
``__sklearn_tags__``::

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.online = True
        return tags

Read them with :func:`get_pll_tags`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from sklearn.utils import Tags as _SklearnTags
from sklearn.utils import get_tags

__all__ = ["PLLTags", "Tags", "get_pll_tags"]


@dataclass
class PLLTags:
    """What a partial-label component can do or needs.

    Attributes
    ----------
    accepts_sparse_candidates : bool, default=False
        The private ``_fit`` takes a CSR candidate matrix as it is. When False the base
        class hands it a dense boolean ``(n, q)`` array (converted once, in ``fit``).
    exact_label_baseline : bool, default=False
        A classifier meant to be trained on exact labels (a reference point, e.g. the
        plain Perceptron): every protocol feeds it singleton sets of the true label and
        records that it did (run tag ``training_labels=exact``).
    online : bool, default=False
        A streaming learner: ``partial_fit`` updates it one example (or chunk) at a time;
        the ``online`` protocol accepts it and the conformance suite checks the stream.
    needs_features : bool, default=False
        Bag generators: ``generate`` needs ``X`` (instance-dependent candidate sets).
    corrupts_existing_labels : bool, default=False
        Bag generators: applied to data that already carry candidate sets (real PLL data),
        e.g. dropping the true label; other generators are skipped on such data.
    learns_from_labels : bool, default=False
        Bag generators: ``generate`` fits a model to features and true labels (instance-dependent
        candidates); the kfold and holdout protocols generate each split's candidate sets with
        ``fit_rows`` = its training rows, so no test label shapes them.
    noisy_candidates : bool, default=False
        Bag generators: may leave a row's true label out of its candidate set on purpose (noisy
        partial labels: ``drop_true``, ``cluster_noisy``, ``noisy``). A generated set that
        misses its true label is refused unless the generator declares this.
    epoch_checkpoints : bool, default=False
        Learners: ``fit(X, y, on_epoch=callback)`` calls ``callback(epoch, learner)`` after every
        epoch (``epoch`` from 0), with ``learner.predict`` and ``predict_proba`` answering with
        that epoch's model; with a callback every epoch runs (no early stopping) and the fitted
        model is the last epoch's. ``protocol=plench`` then selects among the epochs (a
        checkpoint each); a learner without the tag is one checkpoint, its fitted model.
    path_params : tuple of str, default=()
        Learners: parameters whose values one fit serves together (scikit-learn's ``RidgeCV``
        idea): ``fit_path(X, S, points)`` takes a list of ``{param: value}`` dicts over these
        parameters and returns one fitted learner per dict, each predicting as
        ``clone(self).set_params(**point).fit(X, S)`` does (PL-KNN: one neighbour search at the
        largest ``k`` serves every ``k``). Nested selection (``protocol.select``) then fits the
        learner once per other grid point and inner fold (:mod:`plcore.run.shared_search`).
    reject_option : bool, default=False
        Learners: ``reject_score(X)`` gives one score per row, and a prediction is accepted
        (not abstained from) iff its score is > 0 (DST-PLL, Fuchs et al., TMLR 2025). The kfold
        and holdout protocols then log the accepted fraction, the accuracy of the accepted rows,
        the rejection risk and the reject curve (:mod:`plcore.metrics`), and ``python -m plcore
        predict ... abstain=true`` writes ``abstain`` for the rejected rows.
    """

    accepts_sparse_candidates: bool = False
    exact_label_baseline: bool = False
    online: bool = False
    needs_features: bool = False
    corrupts_existing_labels: bool = False
    learns_from_labels: bool = False
    noisy_candidates: bool = False
    epoch_checkpoints: bool = False
    path_params: tuple = ()
    reject_option: bool = False


@dataclass
class Tags(_SklearnTags):
    """scikit-learn's :class:`~sklearn.utils.Tags` plus :class:`PLLTags` (field ``pll_tags``)."""

    pll_tags: PLLTags = field(default_factory=PLLTags)

    @classmethod
    def from_sklearn(cls, tags: _SklearnTags) -> "Tags":
        """The same scikit-learn tags with default partial-label tags added."""
        if isinstance(tags, cls):
            return tags
        return cls(**{f.name: getattr(tags, f.name) for f in fields(_SklearnTags)})


def get_pll_tags(estimator) -> PLLTags:
    """The :class:`PLLTags` of an estimator (class or instance); defaults for objects that are
    not scikit-learn estimators. A broken ``__sklearn_tags__`` raises (it is not hidden)."""
    if not hasattr(estimator, "__sklearn_tags__"):
        return PLLTags()
    tags = get_tags(estimator() if isinstance(estimator, type) else estimator)
    return getattr(tags, "pll_tags", None) or PLLTags()
