"""PL-KNN on CENDA's projection, voting with CENDA's disambiguated training labels.

The CENDA paper ends (Section 5) noting that the confidence matrix ``Y`` it estimates is
"simply ignored in the follow-up partial label training procedure". This learner uses it:
it fits :class:`~plcore_cenda.CendaReducer`, projects the training set, and scores a query
``x`` by PL-KNN's weighted vote (DESIGN.md "PL-KNN") of its ``k`` nearest projected training
examples ``j``,

    score_l(x) = sum_j w_j * V[j, l],   w_j = 1 - d_j / sum_{j'} d_{j'},

where ``V = confidences_`` (``vote="confidences"``: each neighbour votes with its
disambiguated label distribution) or ``V = S`` (``vote="candidates"``: plain PL-KNN on the
CENDA features, i.e. ``make_pipeline(CendaReducer(), PlKnnLearner())``).
"""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.learners.plknn import weighted_votes
from plcore.neighbors import NeighborIndex
from plcore.validation import Integral, Interval, StrOptions

from plcore_cenda.reducers import _CENDA_CONSTRAINTS, CendaReducer

_VOTES = ("confidences", "candidates")
_WEIGHTS = ("linear", "uniform")


class CendaPlKnnLearner(BaseLearner):
    """CENDA + PL-KNN voting with CENDA's labelling confidences instead of the candidate sets.

    Parameters
    ----------
    k : int, default=10
        PL-KNN neighbours of a query (in the CENDA space).
    weights : {"linear", "uniform"}, default="linear"
        PL-KNN vote weights (as :class:`plcore.learners.PlKnnLearner`).
    vote : {"confidences", "candidates"}, default="confidences"
        What a training neighbour votes with: CENDA's ``confidences_`` row, or its
        candidate set (then equal to ``make_pipeline(CendaReducer(...), PlKnnLearner(...))``).
    cenda_thr, cenda_mu, cenda_k, cenda_alpha, cenda_max_iter, cenda_tol, cenda_n_components, cenda_algorithm
        The :class:`~plcore_cenda.CendaReducer` parameters ``thr`` (0.999), ``mu`` (0.5),
        ``k`` (8), ``alpha`` (1.0), ``max_iter`` (50), ``tol`` (1e-6), ``n_components``
        (None), ``algorithm`` ("auto").
    n_jobs : int or None, default=None
        Parallel jobs of the neighbour searches.

    Attributes
    ----------
    reducer_ : CendaReducer
        The fitted CENDA reducer.
    confidences_ : ndarray of shape (n_samples, n_classes)
        CENDA's training confidences (Eq. 14), the votes when ``vote="confidences"``.
    n_neighbors_ : int
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    """

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "weights": [StrOptions(set(_WEIGHTS))],
        "vote": [StrOptions(set(_VOTES))],
        # the forwarded CendaReducer parameters, under their prefixed names
        **{f"cenda_{name}": constraint for name, constraint in _CENDA_CONSTRAINTS.items()},
        "n_jobs": [Integral, None],
    }

    def __init__(self, k=10, weights="linear", vote="confidences", cenda_thr=0.999, cenda_mu=0.5,
                 cenda_k=8, cenda_alpha=1.0, cenda_max_iter=50, cenda_tol=1e-6,
                 cenda_n_components=None, cenda_algorithm="auto", n_jobs=None):
        self.k = k
        self.weights = weights
        self.vote = vote
        self.cenda_thr = cenda_thr
        self.cenda_mu = cenda_mu
        self.cenda_k = cenda_k
        self.cenda_alpha = cenda_alpha
        self.cenda_max_iter = cenda_max_iter
        self.cenda_tol = cenda_tol
        self.cenda_n_components = cenda_n_components
        self.cenda_algorithm = cenda_algorithm
        self.n_jobs = n_jobs

    def _fit(self, X, S):
        self.reducer_ = CendaReducer(
            thr=self.cenda_thr, mu=self.cenda_mu, k=self.cenda_k, alpha=self.cenda_alpha,
            max_iter=self.cenda_max_iter, tol=self.cenda_tol, n_components=self.cenda_n_components,
            algorithm=self.cenda_algorithm, n_jobs=self.n_jobs,
        ).fit(X, S)
        self.confidences_ = self.reducer_.confidences_
        if self.vote == "confidences":
            self._votes = self.confidences_
        else:
            self._votes = S  # dense bool (n, q), from the base class
        self.n_neighbors_ = min(int(self.k), X.shape[0])
        self._nn = NeighborIndex(self.reducer_._transform(X), n_jobs=self.n_jobs)

    def _scores(self, X):
        dist, ind = self._nn.kneighbors(self.reducer_._transform(X), self.n_neighbors_)
        return weighted_votes(dist, ind, self._votes, self.weights)

    def predict_proba(self, X):
        """Normalised weighted votes, shape (n, q), columns in ``classes_`` order."""
        check_is_fitted(self)
        votes = self._scores(self._validate_predict(X))
        return votes / votes.sum(axis=1, keepdims=True)
