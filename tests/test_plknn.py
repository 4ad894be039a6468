"""PL-KNN against a literal per-query implementation, and on data with a known answer."""

import numpy as np
import pytest
import scipy.sparse as sp

from plcore.datasets import UniformBags, load_sklearn
from plcore.learners import PlKnnLearner
from plcore.learners.plknn import neighbour_weights
from plcore.run.protocols import kfold


def textbook_plknn(X_train, S, X_query, k, exclude_self=False):
    """Literal Hüllermeier & Beringer (2006): loop over queries, weight 1 - d_j / sum d."""
    S = np.asarray(S, dtype=float)
    votes = np.zeros((len(X_query), S.shape[1]))
    for i, x in enumerate(X_query):
        d = np.sqrt(((X_train - x) ** 2).sum(axis=1))
        if exclude_self:
            d[i] = np.inf
        order = np.argsort(d, kind="stable")[:k]
        dk = d[order]
        w = np.ones(k) if (k == 1 or dk.sum() == 0) else 1.0 - dk / dk.sum()
        for wj, j in zip(w, order):
            votes[i] += wj * S[j]
    return votes


def random_pl(n=60, d=5, q=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = rng.randint(0, q, n)
    S = UniformBags(r=1, random_state=seed).generate(y, n_classes=q)
    return X, S, y


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("sparse", [False, True])
def test_matches_textbook(k, sparse):
    X, S, _ = random_pl()
    Xq = np.random.RandomState(1).normal(size=(25, 5))
    model = PlKnnLearner(k=k).fit(X, sp.csr_matrix(S) if sparse else S)
    ref = textbook_plknn(X, S, Xq, k)
    np.testing.assert_allclose(model.predict_proba(Xq), ref / ref.sum(1, keepdims=True), atol=1e-12)
    np.testing.assert_array_equal(model.predict(Xq), np.argmax(ref, axis=1))


@pytest.mark.parametrize("k", [1, 4])
def test_confidences_are_leave_one_out_votes_on_candidates(k):
    X, S, _ = random_pl(n=40)
    model = PlKnnLearner(k=k).fit(X, S)
    ref = textbook_plknn(X, S, X, k, exclude_self=True) * S
    empty = ref.sum(1) == 0
    ref[empty] = S[empty]
    np.testing.assert_allclose(model.confidences_, ref / ref.sum(1, keepdims=True), atol=1e-12)
    assert np.all(model.confidences_[~S] == 0)
    np.testing.assert_allclose(model.confidences_.sum(1), 1.0)


def test_weights():
    w = neighbour_weights(np.array([[1.0, 1.0, 2.0], [0.0, 0.0, 0.0], [0.0, 1.0, 3.0]]))
    np.testing.assert_allclose(w, [[0.75, 0.75, 0.5], [1, 1, 1], [1.0, 0.75, 0.25]])
    np.testing.assert_allclose(neighbour_weights(np.array([[5.0]])), [[1.0]])
    np.testing.assert_allclose(neighbour_weights(np.array([[1.0, 3.0]]), "uniform"), [[1.0, 1.0]])


def test_k_larger_than_training_set_is_capped():
    X, S, _ = random_pl(n=6)
    model = PlKnnLearner(k=50).fit(X, S)
    assert model.n_neighbors_ == 6
    assert model.predict(X).shape == (6,)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_k(bad):
    X, S, _ = random_pl()
    with pytest.raises(ValueError, match="The 'k' parameter of PlKnnLearner must be an int"):
        PlKnnLearner(k=bad).fit(X, S)


def test_bad_weights():
    X, S, _ = random_pl()
    with pytest.raises(ValueError, match="The 'weights' parameter of PlKnnLearner must be a str among"):
        PlKnnLearner(weights="inverse").fit(X, S)


def test_disambiguates_and_learns_on_digits():
    """digits with 3 random false positives: far above chance (0.1) and candidate guessing."""
    ds = load_sklearn("digits")
    ds = ds.with_candidates(UniformBags(r=3, random_state=0).generate(ds.y_true))
    res = kfold(PlKnnLearner(k=10), ds, n_splits=5, random_state=0, progress=False)
    s = res.summary
    assert s["accuracy_mean"] > 0.9
    # disambiguation of the training labels: far better than a random candidate (1/4)
    assert s["transductive_accuracy_mean"] > 0.9


def test_one_dimensional_labels_make_an_ordinary_classifier():
    X, _, y = random_pl(n=80)
    labels = np.array(["a", "b", "c", "d"])[y]
    model = PlKnnLearner(k=1).fit(X, labels)
    assert list(model.classes_) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(model.predict(X), labels)  # 1-NN recalls its training set
    assert model.score(X, labels) == 1.0
