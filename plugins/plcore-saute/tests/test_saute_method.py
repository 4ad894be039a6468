"""Method tests of plcore-saute against a literal reference and on data with a known answer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from plcore.exceptions import InvalidParameterError
from plcore.testing import make_pl_data
from plcore_saute import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)
from plcore_saute._greedy import greedy_select, initial_confidences, knn_update
from plcore_saute._info import (
    bin_counts,
    conditional_entropy,
    discretize,
    mutual_info_with,
    standardize_columns,
)
from plcore_saute.reducers import resolve_n_features

from saute_reference import (  # tests/saute_reference.py (tests/conftest.py puts tests/ on sys.path)
    conditional_entropies,
    discretize_literal,
    greedy_naive,
    knn_update_literal,
    saute_naive,
)


def _random_pl(m=60, d=12, q=4, r=1, seed=0, informative=3):
    """Gaussian classes on the first ``informative`` columns, noise elsewhere, r false positives."""
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=m)
    X = rng.normal(size=(m, d))
    X[:, :informative] += rng.normal(scale=2.0, size=(q, informative))[y]
    S = np.zeros((m, q), dtype=bool)
    S[np.arange(m), y] = True
    for i in range(m):
        S[i, rng.choice(np.setdiff1d(np.arange(q), [y[i]]), size=r, replace=False)] = True
    return X, S, y


def _propagated_Y(X, S, seed=0):
    """A non-uniform confidence matrix on the candidates (random, rows sum to 1)."""
    rng = np.random.RandomState(seed)
    Y = rng.uniform(0.05, 1.0, size=S.shape) * S
    return Y / Y.sum(axis=1, keepdims=True)


# ----------------------------------------------------------------------------- estimates
def test_discretize_matches_eq11_literal():
    rng = np.random.RandomState(1)
    X = np.column_stack([rng.normal(size=200), rng.exponential(size=200), np.full(200, 3.0),
                         rng.randint(0, 3, size=200).astype(float)])
    np.testing.assert_array_equal(discretize(X).astype(int) - 2, discretize_literal(X))


def test_mutual_info_matches_sklearn_for_every_pair():
    rng = np.random.RandomState(2)
    base = rng.normal(size=(150, 3))
    X = np.column_stack([base, base[:, 0] + 0.1 * rng.normal(size=150), np.zeros(150),
                         (rng.uniform(size=150) < 0.03).astype(float), rng.standard_t(2, size=150)])
    B = discretize(X)
    marg = bin_counts(B)
    for j in range(X.shape[1]):
        got = mutual_info_with(B, j, marg)
        want = [mutual_info_score(B[:, f], B[:, j]) for f in range(X.shape[1])]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_conditional_entropy_matches_literal_formula(seed):
    X, S, _ = _random_pl(m=70, d=8, q=5, r=2, seed=seed)
    X[:, 5] = 7.0                                         # constant feature
    X[:, 6] = 0.0
    X[:3, 6] = [1.0, 2.0, 5.0]                            # near-constant (mostly zeros)
    Y = _propagated_Y(X, S, seed)
    # a class that nobody has as a candidate and one with a single member in D_l
    S = np.column_stack([S, np.zeros(len(S), bool), np.zeros(len(S), bool)])
    S[0, -1] = True
    Y = np.column_stack([Y, np.zeros(len(S)), np.zeros(len(S))])
    Y[0] = S[0] / S[0].sum()
    Z, constant = standardize_columns(X)
    for vs in (1e-2, 1e-6):
        got = conditional_entropy(Z, constant, Y, S, vs)
        want = conditional_entropies(X, Y, S, vs)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    prior = Y.mean(0)
    p = prior[prior > 0]
    assert got[5] == pytest.approx(-(p * np.log(p)).sum())


def test_conditional_entropy_chunking_is_exact(monkeypatch):
    import plcore_saute._info as info

    X, S, _ = _random_pl(m=50, d=6, q=3)
    Y = _propagated_Y(X, S)
    Z, constant = standardize_columns(X)
    whole = conditional_entropy(Z, constant, Y, S)
    monkeypatch.setattr(info, "_CHUNK_ELEMENTS", 7)
    np.testing.assert_allclose(info.conditional_entropy(Z, constant, Y, S), whole, rtol=1e-12)
    B = discretize(X)
    np.testing.assert_allclose(info.mutual_info_with(B, 2),
                               [mutual_info_score(B[:, f], B[:, 2]) for f in range(6)], rtol=1e-10)


def test_entropy_estimate_separates_informative_from_noise():
    X, S, _ = _random_pl(m=300, d=10, q=4, r=1, informative=3, seed=3)
    Z, constant = standardize_columns(X)
    H = conditional_entropy(Z, constant, initial_confidences(S), S)
    assert H[:3].max() < H[3:].min()
    assert np.all(H <= math.log(4) + 1e-9) and np.all(H >= 0)


# ----------------------------------------------------------------------------- greedy
@pytest.mark.parametrize("seed", range(4))
def test_incremental_greedy_equals_naive_recomputation(seed):
    X, S, _ = _random_pl(m=60, d=14, q=4, r=1, seed=seed, informative=4)
    X[:, 7] = X[:, 1] + 0.05 * np.random.RandomState(seed).normal(size=60)  # a redundant copy
    Y = _propagated_Y(X, S, seed)
    Z, constant = standardize_columns(X)
    H = conditional_entropy(Z, constant, Y, S, 1e-2)
    B = discretize(X)
    for redundancy in (True, False):
        fast = greedy_select(H, B, 9, redundancy=redundancy)
        slow = greedy_naive(X, Y, S, 9, 1e-2, redundancy=redundancy)
        assert fast == slow, (redundancy, fast, slow)


def test_redundancy_cache_gives_the_same_picks_and_computes_each_column_once(monkeypatch):
    """The per-fit cache of I(., f_j): across calls with different H on one B (a fit's outer
    iterations), the same picks in the same order as without it, one column per distinct pick."""
    import plcore_saute._greedy as greedy

    X, S, _ = _random_pl(m=80, d=16, q=4, r=1, seed=7, informative=4)
    B = discretize(X)
    Z, constant = standardize_columns(X)
    calls = []
    real = greedy.mutual_info_with
    monkeypatch.setattr(greedy, "mutual_info_with", lambda B_, j, m_=None: calls.append(j) or real(B_, j, m_))
    cache, picked = {}, set()
    for seed in range(4):   # four different confidences, as four outer iterations
        H = conditional_entropy(Z, constant, _propagated_Y(X, S, seed), S, 1e-2)
        plain = greedy_select(H, B, 9)
        cached = greedy_select(H, B, 9, cache=cache)
        assert cached == plain
        picked.update(cached[:-1])          # the last pick's column is never needed
    assert set(cache) == picked
    # the plain calls compute 8 columns each; the cached ones each distinct pick once
    assert len(calls) == 4 * 8 + len(picked) and len(picked) < 4 * 8
    for j, column in cache.items():
        np.testing.assert_array_equal(column, real(B, j))


def test_knn_update_matches_literal_eq12_to_14():
    X, S, _ = _random_pl(m=40, d=5, q=4, r=2, seed=4)
    Y = _propagated_Y(X, S, 4)
    for k, alpha in ((8, 0.6), (3, 0.2)):
        got = knn_update(X[:, [0, 2]], Y, S, k, alpha)
        np.testing.assert_allclose(got, knn_update_literal(X[:, [0, 2]], Y, S, k, alpha), rtol=1e-12)
        assert np.all(got[~S] == 0) and np.allclose(got.sum(1), 1)


@pytest.mark.parametrize("redundancy,cls", [(True, SauteReducer), (False, MaxRelevanceReducer)])
def test_whole_fit_equals_naive_table1(redundancy, cls):
    X, S, _ = _random_pl(m=45, d=10, q=4, r=1, seed=5, informative=3)
    est = cls(n_features=4, max_iter=5).fit(X, S)
    A, Y, n_iter = saute_naive(X, S, 4, max_iter=5, redundancy=redundancy)
    assert list(est.selected_features_) == A
    assert est.n_iter_ == n_iter
    np.testing.assert_allclose(est.confidences_, Y, rtol=1e-10, atol=1e-14)


def test_stops_when_selected_set_repeats():
    X, S, _ = _random_pl(m=120, d=12, q=4, r=1, seed=6)
    est = SauteReducer(n_features=3).fit(X, S)
    hist = [frozenset(h) for h in est.selection_history_]
    assert est.n_iter_ == len(hist) <= 20
    if est.n_iter_ < 20:
        assert hist[-1] == hist[-2]
        assert all(a != b for a, b in zip(hist[:-2], hist[1:-1]))


# ----------------------------------------------------------------------------- known answer
def _redundant_data(seed=0, m=600, q=32):
    """5 informative features, 5 noisy copies of them (columns 5-9), 50 noise features.

    Informative feature ``i`` is bit ``i`` of the class (q = 32 = 2^5) times a separation
    that decreases with ``i``, plus unit noise: the five are mutually independent and their
    relevance is ordered f0 > f1 > ... > f4; copy ``5 + i`` is f_i plus 0.05 noise, as
    relevant as f_i and almost a duplicate. Uniform bags with one false positive.
    """
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=m)
    bits = (y[:, None] >> np.arange(5)) & 1
    inf = bits * np.array([3.0, 2.8, 2.6, 2.4, 2.2]) + rng.normal(size=(m, 5))
    copies = inf + 0.05 * rng.normal(size=(m, 5))
    X = np.column_stack([inf, copies, rng.normal(size=(m, 50))])
    S = np.zeros((m, q), dtype=bool)
    S[np.arange(m), y] = True
    S[np.arange(m), (y + 1 + rng.randint(q - 1, size=m)) % q] = True
    return X, S, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_saute_prefers_informative_over_redundant_copies_and_mr_does_not(seed):
    X, S, _ = _redundant_data(seed)
    saute = SauteReducer(n_features=10).fit(X, S).selected_features_
    mr = MaxRelevanceReducer(n_features=10).fit(X, S).selected_features_
    pair = lambda f: f % 5 if f < 10 else None  # noqa: E731
    # SAUTE: the first five picks are one member of each of the five informative pairs
    assert sorted(pair(f) for f in saute[:5]) == [0, 1, 2, 3, 4], saute
    # ... and never a noise feature before all ten informative/copy columns
    assert set(saute) == set(range(10))
    # MR ranks a feature and its copy side by side: some pair is complete in its first five
    assert len({pair(f) for f in mr[:5]}) < 5, mr


def test_near_constant_and_tiny_classes_do_not_break_the_fit():
    X, S, y = _random_pl(m=80, d=8, q=5, r=1, seed=7)
    X[:, 4] = 0.0
    X[:2, 4] = [3.0, 4.0]                       # 97.5 % zeros
    X[:, 5] = 1.5                               # constant
    S = np.column_stack([S, np.zeros(80, bool)])
    S[0, -1] = True                             # class 5 is a candidate of one row only
    est = SauteReducer(n_features=3).fit(X, S)
    H = est.conditional_entropy_
    assert np.all(np.isfinite(H)) and np.all(np.isfinite(est.confidences_))
    assert est.confidences_[0, -1] > 0
    assert 5 not in est.selected_features_                    # constant: H(c|f) = H(c)
    prior = est.confidences_.mean(0)
    assert H[4] > H[:2].max()                                 # near-constant: not ranked first
    # without the variance floor the two non-zero values make it look far more relevant
    Z, constant = standardize_columns(X)
    Y = initial_confidences(S)
    assert conditional_entropy(Z, constant, Y, S, 1e-9)[4] < conditional_entropy(Z, constant, Y, S, 0.1)[4]
    del prior


# ----------------------------------------------------------------------------- baselines, params
def test_n_features_resolution():
    assert resolve_n_features(None, 108) == 17      # ceil(0.15 * 108)
    assert resolve_n_features(None, 48) == 8
    assert resolve_n_features(None, 100) == 15      # not 16 by rounding of 0.15 * 100
    assert resolve_n_features(0.5, 9) == 5
    assert resolve_n_features(1.0, 9) == 9
    assert resolve_n_features(4, 9) == 4
    for bad in (0, 10, -0.5, 1.5, "3", True):
        with pytest.raises(ValueError):
            resolve_n_features(bad, 9)
    X, S, _ = make_pl_data(n_features=4)
    for est in (SauteReducer(n_features=0.5), RandomSelectionReducer(n_features=0.5),
                MaxJointEntropyReducer(n_features=0.5), MaxRelevanceReducer(n_features=0.5)):
        assert est.fit(X, S).n_components_ == 2
        assert est.transform(X).shape == (90, 2)
        np.testing.assert_array_equal(est.transform(X), X[:, est.selected_features_])
        assert est.support_.sum() == 2


@pytest.mark.parametrize("params", [{"alpha": 0.0}, {"alpha": 1.0}, {"k": 0}, {"max_iter": 0},
                                    {"var_smoothing": 0.0}, {"n_features": 5}])
def test_bad_parameters_raise(params):
    X, S, _ = make_pl_data(n_features=4)
    with pytest.raises(ValueError):
        SauteReducer(**params).fit(X, S)


@pytest.mark.parametrize("est, param", [(SauteReducer(k=0), "k"), (MaxRelevanceReducer(alpha=1.0), "alpha"),
                                        (RandomSelectionReducer(n_features=0), "n_features"),
                                        (RandomSelectionReducer(random_state="x"), "random_state"),
                                        (MaxJointEntropyReducer(n_features=1.5), "n_features")])
def test_selectors_check_their_parameter_constraints(est, param):
    X, S, _ = make_pl_data(n_features=4)
    with pytest.raises(InvalidParameterError, match=f"The '{param}' parameter of {type(est).__name__} must be"):
        est.fit(X, S)


def test_random_selection_seeded_and_uniform_confidences():
    X, S, _ = make_pl_data(n_features=40)
    a = RandomSelectionReducer(n_features=10, random_state=3).fit(X, S)
    b = RandomSelectionReducer(n_features=10, random_state=3).fit(X, S)
    c = RandomSelectionReducer(n_features=10, random_state=4).fit(X, S)
    assert list(a.selected_features_) == list(b.selected_features_) != list(c.selected_features_)
    assert len(set(a.selected_features_)) == 10
    np.testing.assert_allclose(a.confidences_, S / S.sum(1, keepdims=True))


def _joint_entropy_literal(B, cols):
    _, counts = np.unique(B[:, cols], axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def test_max_joint_entropy_is_greedy_on_joint_entropy():
    rng = np.random.RandomState(8)
    X = np.column_stack([rng.normal(size=(200, 4)), rng.uniform(size=(200, 2)),
                         np.repeat([0.0, 1.0], 100), np.zeros(200)])
    est = MaxJointEntropyReducer(n_features=4).fit(X, np.ones((200, 2), bool))
    B = discretize(X)
    chosen = []
    for p, f in enumerate(est.selected_features_):
        vals = {g: _joint_entropy_literal(B, chosen + [g]) for g in range(X.shape[1]) if g not in chosen}
        best = max(vals.values())
        assert vals[f] == pytest.approx(best, abs=1e-10)
        assert est.joint_entropy_[p] == pytest.approx(best, abs=1e-10)
        chosen.append(int(f))
    assert 7 not in chosen     # the constant column adds no entropy


def test_msrc_v2_no_nan_and_no_almost_constant_picks(data_home):
    from plcore.datasets.loaders import load_dataset
    from sklearn.preprocessing import StandardScaler

    ds = load_dataset("msrc-v2", data_home=data_home)
    X = StandardScaler().fit_transform(ds.X)
    est = SauteReducer().fit(X, ds.S)
    assert est.n_components_ == 8
    assert np.all(np.isfinite(est.conditional_entropy_)) and np.all(np.isfinite(est.confidences_))
    # the (almost) constant columns -- at most 8 non-zero values in 1758 -- are never picked
    zero_share = (ds.X == 0).mean(axis=0)
    assert zero_share[est.selected_features_].max() < 0.995
