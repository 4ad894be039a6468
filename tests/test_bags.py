"""Statistical tests of the bag generators (DESIGN.md section 6).

Every test is seeded, so it is deterministic; statistical checks use tolerances of
``K_SIGMA`` binomial standard errors, so a correct implementation passes them with
overwhelming probability for *any* seed, while a systematic bias of a few percent at
these sample sizes fails them.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from plcore.datasets.bags import (
    ClusterNoisyBags,
    DropTrueBags,
    FixedSizeBags,
    FlipBags,
    HierarchicalBags,
    InstanceDependentBags,
    NoisyBags,
    UniformBags,
    UniformSetBags,
    random_distinct_others,
)
from plcore.exceptions import DataValidationError

K_SIGMA = 5.0


@pytest.fixture(scope="module", autouse=True)
def _single_openmp_thread():
    """k-means on small data is far faster single-threaded (OpenMP spin-waits on busy hosts)."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


def binom_tol(p, n, k=K_SIGMA):
    """``k`` binomial standard errors of a frequency estimated from ``n`` Bernoulli(p) draws."""
    p = np.asarray(p, dtype=float)
    return k * np.sqrt(p * (1.0 - p) / n)


def assert_rate(count, n, p, what=""):
    assert n > 0
    freq = count / n
    tol = binom_tol(p, n)
    assert abs(freq - p) <= tol, f"{what}: frequency {freq:.4f} vs expected {p:.4f} (tol {tol:.4f}, n={n})"


def make_labels(n, q, seed=0):
    return np.random.RandomState(seed).randint(0, q, size=n)


def make_blobs(n, q, n_blobs, seed=0, spread=0.05):
    """Well separated 2-D blobs (so k-means recovers them exactly) and labels independent of them."""
    rng = np.random.RandomState(seed)
    blob = rng.randint(0, n_blobs, size=n)
    angles = 2 * np.pi * np.arange(n_blobs) / n_blobs
    centers = 10.0 * np.c_[np.cos(angles), np.sin(angles)]
    X = centers[blob] + spread * rng.randn(n, 2)
    y = rng.randint(0, q, size=n)
    return X, y, blob


def check_false_positives_uniform(S, y, q, n_fp):
    """Per true class c: each other label is a false positive with probability n_fp/(q-1)."""
    p = n_fp / (q - 1)
    for c in range(q):
        rows = S[y == c]
        n_c = rows.shape[0]
        assert n_c > 500
        counts = rows.sum(axis=0)
        assert counts[c] == n_c  # true label always there
        for other in range(q):
            if other != c:
                assert_rate(counts[other], n_c, p, f"true class {c}, false positive {other}")


# --------------------------------------------------------------------------- uniform / fixed


Q = 5
N_BIG = 20000


@pytest.mark.parametrize("r", [0, 1, 2, Q - 2, np.int64(3)])
def test_uniform_sizes_and_true_label(r):
    y = make_labels(3000, Q, seed=1)
    S = UniformBags(r=r, random_state=0).generate(y)
    assert S.dtype == bool and S.shape == (3000, Q)
    np.testing.assert_array_equal(S.sum(axis=1), r + 1)
    assert S[np.arange(len(y)), y].all()


@pytest.mark.parametrize("s", [1, 2, 3, Q - 1])
def test_fixed_size_sizes_and_true_label(s):
    y = make_labels(3000, Q, seed=2)
    S = FixedSizeBags(s=s, random_state=0).generate(y)
    assert S.dtype == bool and S.shape == (3000, Q)
    np.testing.assert_array_equal(S.sum(axis=1), s)
    assert S[np.arange(len(y)), y].all()


def test_uniform_false_positives_are_uniform():
    y = make_labels(N_BIG, Q, seed=3)
    r = 2
    S = UniformBags(r=r, random_state=4).generate(y)
    check_false_positives_uniform(S, y, Q, r)


def test_fixed_size_false_positives_are_uniform():
    y = make_labels(N_BIG, Q, seed=5)
    s = 2
    S = FixedSizeBags(s=s, random_state=6).generate(y)
    check_false_positives_uniform(S, y, Q, s - 1)


def test_uniform_pairs_of_false_positives_are_uniform():
    """With r=2 of q-1=4 others, every unordered pair of false positives has probability 1/6."""
    q, r = 5, 2
    y = np.zeros(N_BIG, dtype=int)
    S = UniformBags(r=r, random_state=7).generate(y, n_classes=q)
    fp = S[:, 1:]
    pairs = {}
    for row in fp:
        key = tuple(np.flatnonzero(row))
        pairs[key] = pairs.get(key, 0) + 1
    assert len(pairs) == 6 and all(len(k) == 2 for k in pairs)
    for key, count in pairs.items():
        assert_rate(count, N_BIG, 1 / 6, f"pair {key}")


def test_random_distinct_others_no_duplicates_and_not_true():
    rng = np.random.RandomState(0)
    q = 7
    y = rng.randint(0, q, size=2000)
    for k in range(q):
        picks = random_distinct_others(y, k, q, rng)
        assert picks.shape == (2000, k)
        assert ((picks >= 0) & (picks < q)).all()
        assert not (picks == y[:, None]).any()
        srt = np.sort(picks, axis=1)
        assert not (np.diff(srt, axis=1) == 0).any()


@pytest.mark.parametrize("r", [Q - 1, Q, Q + 3, -1, 1.5, 2.0, "2", None, True])
def test_uniform_bad_r_raises(r):
    y = make_labels(50, Q)
    with pytest.raises(ValueError, match=r"\br\b"):
        UniformBags(r=r, random_state=0).generate(y)


def test_uniform_r_limit_follows_n_classes():
    y = make_labels(50, 3)
    with pytest.raises(ValueError, match=r"\br\b"):
        UniformBags(r=2).generate(y)  # q = 3 -> r <= 1
    S = UniformBags(r=2, random_state=0).generate(y, n_classes=4)
    np.testing.assert_array_equal(S.sum(axis=1), 3)


@pytest.mark.parametrize("s", [0, Q, Q + 1, -2, 2.5])
def test_fixed_size_bad_s_raises(s):
    y = make_labels(50, Q)
    with pytest.raises(ValueError, match=r"\bs\b"):
        FixedSizeBags(s=s, random_state=0).generate(y)


# --------------------------------------------------------------------------- cluster_noisy


def test_cluster_noisy_needs_X():
    y = make_labels(100, 3)
    with pytest.raises(ValueError, match="X"):
        ClusterNoisyBags(n_clusters=2, random_state=0).generate(y)


def test_cluster_noisy_X_row_mismatch_raises():
    X, y, _ = make_blobs(100, 3, 2)
    with pytest.raises(ValueError):
        ClusterNoisyBags(n_clusters=2, random_state=0).generate(y, X=X[:-1])


@pytest.mark.parametrize("n_clusters", [0, -1, 2.5, 101])
def test_cluster_noisy_bad_n_clusters_raises(n_clusters):
    X, y, _ = make_blobs(100, 3, 2)
    with pytest.raises(ValueError, match="n_clusters"):
        ClusterNoisyBags(n_clusters=n_clusters, random_state=0).generate(y, X=X)


def test_cluster_noisy_eta_zero_keeps_true_label():
    X, y, _ = make_blobs(3000, 4, 3, seed=1)
    gen = ClusterNoisyBags(n_clusters=3, eta=0.0, random_state=0)
    S = gen.generate(y, X=X)
    assert S.dtype == bool and S.shape == (3000, 4)
    assert S[np.arange(len(y)), y].all()
    np.testing.assert_array_equal(gen.observed_labels_, y)


def test_cluster_noisy_fitted_attributes_and_clusters_follow_X():
    n, q, c = 4000, 3, 3
    X, y, blob = make_blobs(n, q, c, seed=2)
    gen = ClusterNoisyBags(n_clusters=c, eta=0.2, random_state=1)
    gen.generate(y, X=X)
    assert gen.cluster_labels_.shape == (n,)
    assert set(np.unique(gen.cluster_labels_)) == set(range(c))
    # k-means on X recovers the well-separated blobs
    assert adjusted_rand_score(blob, gen.cluster_labels_) == 1.0
    p = gen.probabilities_
    assert p.shape == (c, q, q)
    assert ((p >= 0) & (p <= 1)).all()
    assert gen.observed_labels_.shape == (n,)
    assert ((gen.observed_labels_ >= 0) & (gen.observed_labels_ < q)).all()


def test_cluster_noisy_uses_per_cluster_probabilities():
    """Inclusion frequency of l' among rows (cluster c, observed l) matches p[c, l, l']."""
    n, q, c = N_BIG, 3, 2
    X, y, _ = make_blobs(n, q, c, seed=3)
    # eta > 0 so that p must be indexed by the *observed* (not the true) label
    gen = ClusterNoisyBags(n_clusters=c, eta=0.5, random_state=2)
    S = gen.generate(y, X=X)
    clusters, p, obs = gen.cluster_labels_, gen.probabilities_, gen.observed_labels_
    checked = 0
    for ci in range(c):
        for l in range(q):
            rows = (clusters == ci) & (obs == l)
            n_cell = int(rows.sum())
            if n_cell < 500:
                continue
            counts = S[rows].sum(axis=0)
            assert counts[l] == n_cell  # observed label always in the bag
            for lp in range(q):
                if lp == l:
                    continue
                prob = p[ci, l, lp]
                tol = max(binom_tol(prob, n_cell), 1e-12)
                freq = counts[lp] / n_cell
                assert abs(freq - prob) <= tol, (
                    f"cluster {ci}, label {l} -> {lp}: freq {freq:.4f} vs p {prob:.4f} (tol {tol:.4f})"
                )
                checked += 1
    assert checked == c * q * (q - 1)  # every cell had enough rows


def test_cluster_noisy_probabilities_differ_across_clusters():
    """Sanity check of the test above: bags really depend on the cluster, not only on the label."""
    n, q, c = N_BIG, 3, 2
    X, y, _ = make_blobs(n, q, c, seed=4)
    gen = ClusterNoisyBags(n_clusters=c, eta=0.0, random_state=3)
    S = gen.generate(y, X=X)
    p = gen.probabilities_
    # pick the (label, other) pair whose probability differs most between clusters
    diffs = [(abs(p[0, l, lp] - p[1, l, lp]), l, lp) for l in range(q) for lp in range(q) if l != lp]
    _, l, lp = max(diffs)
    f = [S[(gen.cluster_labels_ == ci) & (y == l), lp].mean() for ci in range(c)]
    assert abs(f[0] - f[1]) > 0.1


@pytest.mark.parametrize("eta", [0.3, 0.8, 1.0])
def test_cluster_noisy_label_flip_rate(eta):
    n, q = N_BIG, 4
    X, y, _ = make_blobs(n, q, 2, seed=5)
    gen = ClusterNoisyBags(n_clusters=2, eta=eta, random_state=4)
    S = gen.generate(y, X=X)
    obs = gen.observed_labels_
    changed = obs != y
    assert_rate(int(changed.sum()), n, eta * (q - 1) / q, "observed != true")
    # the replacement is uniform over the other labels
    for c in range(q):
        sel = changed & (y == c)
        for other in range(q):
            if other != c:
                assert_rate(int((obs[sel] == other).sum()), int(sel.sum()), 1 / (q - 1),
                            f"true {c} replaced by {other}")
    # observed label always in the bag
    assert S[np.arange(n), obs].all()


def test_cluster_noisy_observed_label_always_in_bag():
    X, y, _ = make_blobs(5000, 6, 4, seed=6)
    for seed in range(3):
        gen = ClusterNoisyBags(n_clusters=4, eta=0.5, random_state=seed)
        S = gen.generate(y, X=X)
        assert S[np.arange(len(y)), gen.observed_labels_].all()
        assert S.any(axis=1).all()


# --------------------------------------------------------------------------- drop_true


def _check_drop(S_in, out, y, dropped):
    """Exact structural properties of a drop_true output relative to its input."""
    S_in = S_in.toarray().astype(bool) if sp.issparse(S_in) else np.asarray(S_in, dtype=bool)
    n = len(y)
    rows = np.arange(n)
    assert out.dtype == bool and out.shape == S_in.shape
    assert dropped.dtype == bool and dropped.shape == (n,)
    # no empty rows
    assert out.any(axis=1).all()
    # dropped_ marks exactly the rows that lost the true label
    np.testing.assert_array_equal(dropped, S_in[rows, y] & ~out[rows, y])
    # rows not selected are unchanged
    np.testing.assert_array_equal(out[~dropped], S_in[~dropped])
    # in dropped rows, the other candidates are untouched ...
    d = np.flatnonzero(dropped)
    S_other, out_other = S_in[d].copy(), out[d].copy()
    S_other[np.arange(len(d)), y[d]] = False
    out_other[np.arange(len(d)), y[d]] = False
    single = S_in[d].sum(axis=1) == 1
    np.testing.assert_array_equal(out_other[~single], S_other[~single])
    # ... and a removed singleton got exactly one wrong label
    np.testing.assert_array_equal(out_other[single].sum(axis=1), 1)
    return d[single]


@pytest.mark.parametrize("sparse", [False, True])
def test_drop_true_from_candidate_matrix(sparse):
    q, eta = 5, 0.3
    y = make_labels(N_BIG, q, seed=7)
    S = UniformBags(r=2, random_state=8).generate(y)
    S_in = sp.csr_matrix(S.astype(float)) if sparse else S.copy()
    gen = DropTrueBags(eta=eta, random_state=9)
    out = gen.generate(y, S=S_in)
    assert isinstance(out, np.ndarray)
    repl = _check_drop(S_in, out, y, gen.dropped_)
    assert repl.size == 0  # bags of size 3 never become empty
    assert_rate(int(gen.dropped_.sum()), N_BIG, eta, "true label dropped")
    # input not modified
    if sparse:
        np.testing.assert_array_equal(S_in.toarray().astype(bool), S)
    else:
        np.testing.assert_array_equal(S_in, S)


def test_drop_true_dense_and_sparse_agree():
    y = make_labels(2000, 4, seed=10)
    S = UniformBags(r=1, random_state=11).generate(y)
    a = DropTrueBags(eta=0.4, random_state=12).generate(y, S=S)
    b = DropTrueBags(eta=0.4, random_state=12).generate(y, S=sp.csr_matrix(S.astype(np.int64)))
    c = DropTrueBags(eta=0.4, random_state=12).generate(y, S=S.astype(np.int8))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_drop_true_from_singletons():
    q, eta = 5, 0.4
    y = make_labels(N_BIG, q, seed=13)
    gen = DropTrueBags(eta=eta, random_state=14)
    out = gen.generate(y)
    singles = np.zeros((N_BIG, q), dtype=bool)
    singles[np.arange(N_BIG), y] = True
    repl = _check_drop(singles, out, y, gen.dropped_)
    np.testing.assert_array_equal(repl, np.flatnonzero(gen.dropped_))
    assert_rate(int(gen.dropped_.sum()), N_BIG, eta, "singleton dropped")
    np.testing.assert_array_equal(out.sum(axis=1), 1)
    # the replacement wrong label is uniform over the q-1 others, per true class
    d = gen.dropped_
    for c in range(q):
        sel = d & (y == c)
        counts = out[sel].sum(axis=0)
        assert counts[c] == 0
        for other in range(q):
            if other != c:
                assert_rate(int(counts[other]), int(sel.sum()), 1 / (q - 1), f"true {c} -> {other}")


def test_drop_true_mixed_bags_and_missing_true_label():
    """Mixed bag sizes; rows whose bag does not contain the true label are never 'dropped'."""
    q, eta, n = 4, 0.5, N_BIG
    rng = np.random.RandomState(15)
    y = rng.randint(0, q, size=n)
    S = rng.random_sample((n, q)) < 0.3
    S[np.arange(n), rng.randint(0, q, size=n)] = True  # non-empty rows
    has_true = S[np.arange(n), y]
    assert 0 < has_true.sum() < n
    assert ((S.sum(axis=1) == 1) & has_true).any()
    gen = DropTrueBags(eta=eta, random_state=16)
    out = gen.generate(y, S=S)
    _check_drop(S, out, y, gen.dropped_)
    assert not gen.dropped_[~has_true].any()
    np.testing.assert_array_equal(out[~has_true], S[~has_true])
    assert_rate(int(gen.dropped_[has_true].sum()), int(has_true.sum()), eta,
                "dropped among rows holding the true label")


def test_drop_true_eta_extremes():
    y = make_labels(1000, 4, seed=17)
    S = UniformBags(r=1, random_state=18).generate(y)
    g0 = DropTrueBags(eta=0.0, random_state=0)
    np.testing.assert_array_equal(g0.generate(y, S=S), S)
    assert not g0.dropped_.any()
    g1 = DropTrueBags(eta=1.0, random_state=0)
    out = g1.generate(y, S=S)
    assert g1.dropped_.all()
    assert not out[np.arange(len(y)), y].any()
    _check_drop(S, out, y, g1.dropped_)


def test_drop_true_S_shape_mismatch_raises():
    y = make_labels(100, 4)
    S = UniformBags(r=1, random_state=0).generate(y)
    with pytest.raises(ValueError):
        DropTrueBags(eta=0.2).generate(y, S=S[:-1])
    with pytest.raises(ValueError):
        DropTrueBags(eta=0.2).generate(y, S=S[:, :-1])
    with pytest.raises(ValueError):
        DropTrueBags(eta=0.2).generate(y, S=S, n_classes=5)


# --------------------------------------------------------------------------- noisy (PiCO+)


def _noisy_textbook(y, n_classes, q, eta, seed):
    """PiCO+'s rule written out one label at a time: for every row, every label in turn gets
    u ~ U[0, 1); the true label is in when u < 1 - eta, a false one when u < q. The rows left
    empty are drawn again, all their labels, in row order, until none is empty."""
    rng = np.random.RandomState(seed)
    out = [[False] * n_classes for _ in y]
    todo = list(range(len(y)))
    while todo:
        for i in todo:
            for k in range(n_classes):
                out[i][k] = bool(rng.random_sample() < ((1.0 - eta) if k == y[i] else q))
        todo = [i for i in todo if not any(out[i])]
    return np.array(out, dtype=bool)


def _noise_rate(q, eta, n_classes):
    """Share of rows without their true label after the redraw of empty rows."""
    empty = eta * (1.0 - q) ** (n_classes - 1)
    return (eta - empty) / (1.0 - empty)


@pytest.mark.parametrize("q, eta, n_classes", [(0.1, 0.2, 3), (0.3, 0.5, 4), (0.05, 0.9, 6), (0.5, 0.0, 2)])
def test_noisy_equals_the_textbook_rule_draw_for_draw(q, eta, n_classes):
    y = make_labels(300, n_classes, seed=1)
    gen = NoisyBags(q=q, eta=eta, random_state=7)
    out = gen.generate(y, n_classes=n_classes)
    np.testing.assert_array_equal(out, _noisy_textbook(y, n_classes, q, eta, 7))
    assert out.dtype == bool and out.shape == (300, n_classes) and out.any(axis=1).all()
    np.testing.assert_array_equal(gen.dropped_, ~out[np.arange(300), y])


@pytest.mark.parametrize("q, eta", [(0.3, 0.3), (0.1, 0.2), (0.5, 0.1)])
def test_noisy_rates_follow_q_and_eta(q, eta):
    """Rows that keep their true label hold each false label with probability q; the share of
    rows without it is eta less the redrawn empty rows, (eta - e) / (1 - e), e = eta (1-q)^(Q-1)."""
    y = make_labels(N_BIG, Q, seed=4)
    gen = NoisyBags(q=q, eta=eta, random_state=0)
    S = gen.generate(y, n_classes=Q)
    rows = np.arange(N_BIG)
    assert_rate(int(gen.dropped_.sum()), N_BIG, _noise_rate(q, eta, Q), "true label left out")
    kept = S[~gen.dropped_].copy()
    kept[np.arange(kept.shape[0]), y[~gen.dropped_]] = False
    assert_rate(int(kept.sum()), kept.size - kept.shape[0], q, "false labels where the true one is in")
    lost = S[gen.dropped_]  # at least one false label, each with q / (1 - (1-q)^(Q-1))
    assert not lost[np.arange(lost.shape[0]), y[gen.dropped_]].any()
    assert_rate(int(lost.sum()), lost.size - lost.shape[0], q / (1 - (1 - q) ** (Q - 1)),
                "false labels where the true one is out")
    assert S.any(axis=1).all() and S[rows, y].sum() == N_BIG - gen.dropped_.sum()


def test_noisy_noise_rate_is_below_eta_where_empty_draws_are_common():
    """PiCO+'s redraw: with q = 0.1 on 3 classes, eta = 0.2 leaves only 4.5% of true labels out."""
    y = make_labels(N_BIG, 3, seed=5)
    gen = NoisyBags(q=0.1, eta=0.2, random_state=1)
    gen.generate(y, n_classes=3)
    assert _noise_rate(0.1, 0.2, 3) == pytest.approx(0.0453, abs=1e-4)
    assert_rate(int(gen.dropped_.sum()), N_BIG, _noise_rate(0.1, 0.2, 3), "true label left out")


def test_noisy_sets_of_one_label_and_of_all_labels_occur_as_in_picos_rule():
    """No set is topped up or trimmed: singletons (the true label alone, or one false label) and
    sets of all labels are drawn (ALIM's issue about |S| = 1 and |S| = q: PiCO+ has both)."""
    y = make_labels(5000, 3, seed=6)
    gen = NoisyBags(q=0.5, eta=0.3, random_state=2)
    S = gen.generate(y, n_classes=3)
    sizes = S.sum(axis=1)
    assert set(np.unique(sizes)) == {1, 2, 3}
    assert ((sizes == 1) & gen.dropped_).any() and ((sizes == 1) & ~gen.dropped_).any()


def test_noisy_eta_zero_keeps_every_true_label():
    y = make_labels(N_BIG, Q, seed=8)
    gen = NoisyBags(q=0.2, eta=0.0, random_state=3)
    S = gen.generate(y, n_classes=Q)
    assert S[np.arange(N_BIG), y].all() and not gen.dropped_.any()
    check_false_positives_uniform(S, y, Q, 0.2 * (Q - 1))


@pytest.mark.parametrize("kwargs, needle", [
    ({"q": -0.1}, r"'q' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
    ({"q": 1.0}, r"'q' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
    ({"q": 1.5}, r"'q' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
    ({"eta": 1.0}, r"'eta' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
    ({"eta": -0.2}, r"'eta' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
    ({"q": 0.0, "eta": 0.2}, r"NoisyBags: q=0 with eta=0.2 leaves no true label out"),
])
def test_noisy_bad_parameters_are_refused_in_one_line(kwargs, needle):
    y = make_labels(50, Q)
    with pytest.raises(ValueError, match=needle) as info:
        NoisyBags(**kwargs).generate(y, n_classes=Q)
    assert "\n" not in str(info.value)


def test_noisy_q_zero_eta_zero_gives_singletons():
    y = make_labels(200, Q)
    np.testing.assert_array_equal(NoisyBags(q=0.0, eta=0.0, random_state=0).generate(y, n_classes=Q),
                                  np.eye(Q, dtype=bool)[y])


# --------------------------------------------------------------------------- all generators


FACTORIES = {
    "uniform": lambda rs=None: UniformBags(r=2, random_state=rs),
    "fixed_size": lambda rs=None: FixedSizeBags(s=3, random_state=rs),
    "cluster_noisy": lambda rs=None: ClusterNoisyBags(n_clusters=3, eta=0.3, random_state=rs),
    "drop_true": lambda rs=None: DropTrueBags(eta=0.3, random_state=rs),
    "noisy": lambda rs=None: NoisyBags(q=0.3, eta=0.3, random_state=rs),
}
ALL = pytest.mark.parametrize("name", list(FACTORIES))


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_blobs(600, 5, 3, seed=20)
    return X, y


@ALL
def test_same_seed_same_output(name, data):
    X, y = data
    a = FACTORIES[name](0).generate(y, X=X)
    b = FACTORIES[name](0).generate(y, X=X)
    gen = FACTORIES[name](0)
    c1, c2 = gen.generate(y, X=X), gen.generate(y, X=X)  # int seed: repeatable calls
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c1)
    np.testing.assert_array_equal(a, c2)


@ALL
def test_different_seeds_differ(name, data):
    X, y = data
    a = FACTORIES[name](0).generate(y, X=X)
    b = FACTORIES[name](1).generate(y, X=X)
    assert not np.array_equal(a, b)


@ALL
def test_generate_random_state_overrides_constructor(name, data):
    X, y = data
    over = FACTORIES[name](1).generate(y, X=X, random_state=2)
    np.testing.assert_array_equal(over, FACTORIES[name](2).generate(y, X=X))
    np.testing.assert_array_equal(over, FACTORIES[name](None).generate(y, X=X, random_state=2))
    assert not np.array_equal(over, FACTORIES[name](1).generate(y, X=X))
    rs = np.random.RandomState(2)
    np.testing.assert_array_equal(over, FACTORIES[name](1).generate(y, X=X, random_state=rs))


@ALL
def test_output_type_and_shape(name, data):
    X, y = data
    out = FACTORIES[name](0).generate(y, X=X)
    assert isinstance(out, np.ndarray) and out.dtype == bool
    assert out.shape == (len(y), int(y.max()) + 1)
    out = FACTORIES[name](0).generate(y, X=X, n_classes=8)
    assert isinstance(out, np.ndarray) and out.dtype == bool
    assert out.shape == (len(y), 8)
    assert out.any(axis=1).all()


@ALL
def test_integer_valued_float_and_list_y_accepted(name, data):
    X, y = data
    a = FACTORIES[name](0).generate(y, X=X)
    np.testing.assert_array_equal(a, FACTORIES[name](0).generate(y.astype(float), X=X))
    np.testing.assert_array_equal(a, FACTORIES[name](0).generate(list(y), X=X))
    np.testing.assert_array_equal(a, FACTORIES[name](0).generate(y.astype(np.int32), X=X))


@ALL
@pytest.mark.parametrize("bad", ["negative", "float", "2d", "empty", "nan", "too_few_classes", "n_classes_small"])
def test_bad_y_raises(name, bad, data):
    X, y = data
    kwargs = {}
    if bad == "negative":
        y = y.copy(); y[3] = -1
    elif bad == "float":
        y = y.astype(float); y[3] = 1.5
    elif bad == "2d":
        y = y.reshape(-1, 1)
    elif bad == "empty":
        y, X = y[:0], X[:0]
    elif bad == "nan":
        y = y.astype(float); y[3] = np.nan
    elif bad == "too_few_classes":
        y = np.zeros_like(y)
    elif bad == "n_classes_small":
        kwargs["n_classes"] = int(y.max())
    with pytest.raises(ValueError):
        FACTORIES[name](0).generate(y, X=X if X.shape[0] else None, **kwargs)


@pytest.mark.parametrize("cls", [ClusterNoisyBags, DropTrueBags, NoisyBags])
@pytest.mark.parametrize("eta", [-0.1, 1.1, 2, np.nan, "0.5", None])
def test_bad_eta_raises(cls, eta, data):
    X, y = data
    gen = cls(eta=eta, random_state=0)
    with pytest.raises(ValueError, match="eta"):
        gen.generate(y, X=X)


@ALL
def test_errors_are_data_validation_errors(name, data):
    X, y = data
    with pytest.raises(DataValidationError):
        FACTORIES[name](0).generate(-np.ones_like(y), X=X)


@ALL
def test_clone_and_pickle_same_output(name, data):
    X, y = data
    gen = FACTORIES[name](5)
    ref = gen.generate(y, X=X)
    cl = clone(gen)
    assert cl.get_params() == gen.get_params()
    np.testing.assert_array_equal(cl.generate(y, X=X), ref)
    pk = pickle.loads(pickle.dumps(gen))
    np.testing.assert_array_equal(pk.generate(y, X=X), ref)
    # an unseeded generator pickled keeps honouring an explicit seed
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(FACTORIES[name](None))).generate(y, X=X, random_state=5), ref
    )


@ALL
def test_generate_does_not_modify_inputs(name, data):
    X, y = data
    X0, y0 = X.copy(), y.copy()
    FACTORIES[name](0).generate(y, X=X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# --------------------------------------------------------------------------- flip / uniform sets


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
def test_flip_adds_each_false_label_with_probability_p(p):
    y = make_labels(N_BIG, Q, seed=3)
    S = FlipBags(p=p, random_state=0).generate(y, n_classes=Q)
    check_false_positives_uniform(S, y, Q, p * (Q - 1))  # every false label at rate p, true always in
    sizes = S.sum(axis=1)
    mean_sd = np.sqrt(p * (1 - p) * (Q - 1) / N_BIG)
    assert abs(sizes.mean() - (1 + p * (Q - 1))) <= K_SIGMA * mean_sd  # the mean bag the rate implies
    assert len(np.unique(sizes)) > 1  # sizes vary, unlike uniform / fixed_size


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_hierarchical_adds_each_false_label_of_the_superclass_with_probability_p(p):
    """Groups {0, 1, 2} and {3, 4}: a label of another group never joins, each of the true label's
    group joins at rate p (a binomial count within K_SIGMA), the true label always."""
    groups = np.array([0, 0, 0, 1, 1])
    y = make_labels(N_BIG, Q, seed=5)
    S = HierarchicalBags(p=p, groups=groups, random_state=0).generate(y, n_classes=Q)
    assert S[np.arange(N_BIG), y].all()
    same = groups[y][:, None] == groups[None, :]
    assert not (S & ~same).any()
    false = same.copy()
    false[np.arange(N_BIG), y] = False
    n_false = false.sum()
    assert abs(S[false].sum() - p * n_false) <= K_SIGMA * np.sqrt(p * (1 - p) * n_false)
    again = HierarchicalBags(p=p, groups=groups, random_state=0).generate(y, n_classes=Q)
    assert np.array_equal(S, again)


def test_hierarchical_on_cifar100_keeps_each_set_inside_its_superclass():
    from plcore.datasets.loaders.cifar import cifar100_class_groups

    y = make_labels(4000, 100, seed=6)
    S = HierarchicalBags(p=0.5, random_state=1).generate(y, n_classes=100)
    groups = cifar100_class_groups()
    rows, cols = np.nonzero(S)
    assert (groups[cols] == groups[y[rows]]).all()
    sizes = S.sum(axis=1)
    assert sizes.max() <= 5 and abs(sizes.mean() - (1 + 0.5 * 4)) < 0.1
    halves = HierarchicalBags(p=0.5, groups=2, random_state=1).generate(make_labels(400, 10), n_classes=10)
    assert not halves[:, :5][make_labels(400, 10) >= 5].any() and not halves[:, 5:][make_labels(400, 10) < 5].any()
    with pytest.raises(ValueError, match="groups gives 100 classes a group, the labels have 10 classes"):
        HierarchicalBags(random_state=0).generate(make_labels(50, 10), n_classes=10)


def test_flip_extremes():
    y = make_labels(200, Q)
    np.testing.assert_array_equal(FlipBags(p=0.0, random_state=0).generate(y, n_classes=Q), np.eye(Q, dtype=bool)[y])
    assert FlipBags(p=0.999, random_state=0).generate(y, n_classes=Q).mean() > 0.99


@pytest.mark.parametrize("make, needle", [
    (lambda: UniformBags(r=Q - 1), r"UniformBags: r must be <= 3 \(r >= q - 1 = 4 puts all 5 labels in every bag"),
    (lambda: FixedSizeBags(s=Q), r"FixedSizeBags: s must be <= 4 \(s >= q = 5 puts all 5 labels in every bag"),
    (lambda: FlipBags(p=1.0), r"'p' parameter of FlipBags must be a float in the range \[0.0, 1.0\)"),
    (lambda: NoisyBags(q=1.0, eta=0.0), r"'q' parameter of NoisyBags must be a float in the range \[0.0, 1.0\)"),
])
def test_settings_that_put_every_label_in_every_bag_are_refused_naming_the_bound(make, needle):
    """Issue 42: r = q - 1 (the app's default r = 3 on 4 classes), s = q and p = 1 gave every row
    all q labels -- runs at chance without a word; each is refused in one line naming the bound."""
    y = make_labels(50, Q)
    with pytest.raises(ValueError, match=needle) as info:
        make().generate(y, n_classes=Q)
    assert "\n" not in str(info.value)


def test_uniform_sets_draw_every_set_with_the_true_label_but_all_equally_often():
    """q = 4: 2^3 - 1 = 7 admissible sets per true label (the full one excluded), each 1/7."""
    q, n = 4, 28000
    y = make_labels(n, q, seed=5)
    S = UniformSetBags(random_state=0).generate(y, n_classes=q)
    assert S[np.arange(n), y].all() and not S.all(axis=1).any()
    for c in range(q):
        rows = S[y == c]
        codes = rows.astype(int) @ (1 << np.arange(q))
        values, counts = np.unique(codes, return_counts=True)
        assert len(values) == 7
        for count in counts:
            assert_rate(count, rows.shape[0], 1 / 7, f"true class {c}")


def test_uniform_sets_mean_number_of_false_labels():
    q = 10
    y = make_labels(N_BIG, q, seed=1)
    false = UniformSetBags(random_state=0).generate(y, n_classes=q).sum(axis=1) - 1
    expected = (q - 1) * (2 ** (q - 2) - 1) / (2 ** (q - 1) - 1)
    assert abs(false.mean() - expected) <= K_SIGMA * false.std() / np.sqrt(N_BIG)


def test_uniform_sets_needs_two_classes():
    with pytest.raises(DataValidationError, match="at least 2 classes"):
        UniformSetBags(random_state=0).generate(np.zeros(5, dtype=int), n_classes=1)


# --------------------------------------------------------------------------- instance-dependent


def _three_blobs(n=900, seed=0):
    """Classes 0 and 1 overlap, class 2 lies far away."""
    rng = np.random.RandomState(seed)
    y = np.repeat([0, 1, 2], n // 3)
    centers = np.array([[0.0, 0.0], [1.0, 0.0], [12.0, 12.0]])
    return centers[y] + rng.randn(n, 2), y


def test_instance_dependent_bags_follow_the_helpers_confusions():
    X, y = _three_blobs()
    gen = InstanceDependentBags(rate=0.4, random_state=0)
    S = gen.generate(y, X, n_classes=3)
    assert S[np.arange(len(y)), y].all()
    p = gen.probabilities_
    assert (p[np.arange(len(y)), y] == 0).all() and p.max() <= 1.0
    # the helper confuses 0 and 1, never 2: rows of class 0 get label 1 far more often than label 2
    zero = y == 0
    assert S[zero, 1].mean() > 0.5 and S[zero, 2].mean() < 0.1
    # the recipe: p = rate * p / mean(p) after p / max(p), so before clipping a row sums to rate * q
    assert np.all(p.sum(axis=1) <= 0.4 * 3 + 1e-9)
    # the mean number of false labels is the mean of the probabilities it drew from
    false = S.sum(axis=1) - 1
    assert abs(false.mean() - p.sum(axis=1).mean()) <= K_SIGMA * np.sqrt((p * (1 - p)).sum(axis=1).mean() / len(y))


def test_instance_dependent_helper_learns_from_fit_rows_only():
    """Relabelling the rows outside ``fit_rows`` changes nothing the helper learned: the other rows'
    probabilities are identical."""
    X, y = _three_blobs()
    fit = np.arange(0, 900, 2)
    y2 = y.copy()
    y2[1::2] = (y2[1::2] + 1) % 3
    a = InstanceDependentBags(random_state=0)
    b = InstanceDependentBags(random_state=0)
    a.generate(y, X, n_classes=3, fit_rows=fit)
    b.generate(y2, X, n_classes=3, fit_rows=fit)
    np.testing.assert_array_equal(a.probabilities_[fit], b.probabilities_[fit])
    with pytest.raises(DataValidationError, match="needs the features X"):
        InstanceDependentBags().generate(y, n_classes=3)


class _FixedProba(ClassifierMixin, BaseEstimator):
    """A helper whose probabilities are given: row i's are ``table[i]`` (features: the row index)."""

    def __init__(self, table=None):
        self.table = table

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(self.table)[np.asarray(X[:, 0], dtype=int)][:, self.classes_]


def test_instance_dependent_recipe_on_a_given_helper():
    """The recipe of VALEN/POP on known helper probabilities, by hand: p[true] = 0, p / max(p),
    rate * p / mean(p) over all q entries, clipped to 1; the bags drawn from exactly those."""
    table = np.array([[0.5, 0.3, 0.15, 0.05], [0.1, 0.1, 0.1, 0.7], [0.25, 0.25, 0.25, 0.25], [0.4, 0.4, 0.1, 0.1]])
    y = np.array([0, 3, 2, 1])
    X = np.arange(4.0)[:, None]
    gen = InstanceDependentBags(rate=0.5, estimator=_FixedProba(table), random_state=0)
    S = gen.generate(y, X, n_classes=4)
    expected = np.empty((4, 4))
    for i in range(4):
        p = table[i].copy()
        p[y[i]] = 0.0
        p = p / p.max()
        expected[i] = np.minimum(1.0, 0.5 * p / p.mean())
    np.testing.assert_allclose(gen.probabilities_, expected)
    assert S[np.arange(4), y].all()
    # row 0: p / max = (0, 1, 1/2, 1/6), mean 5/12: 0.5 * p * 12/5 = (0, 1.2 -> 1, 0.6, 0.2)
    np.testing.assert_allclose(expected[0], [0.0, 1.0, 0.6, 0.2])
    assert S[0, 1]  # drawn with probability 1


def test_instance_dependent_helper_may_be_a_pll_learner_fitted_on_singletons():
    """A plcore learner as the helper is fitted on singleton sets of the true labels (the MLP's
    labels): its probabilities are the generator's before the recipe, and the draws are seeded."""
    from plcore import PlKnnLearner

    X, y = _three_blobs(n=300)
    gen = InstanceDependentBags(rate=0.4, estimator=PlKnnLearner(k=5), random_state=0)
    S = gen.generate(y, X, n_classes=3)
    helper = clone(PlKnnLearner(k=5)).fit(X, np.eye(3, dtype=bool)[y])
    p = helper.predict_proba(X)
    p[np.arange(300), y] = 0.0
    p = p / np.where(p.max(axis=1, keepdims=True) > 0, p.max(axis=1, keepdims=True), 1)
    mean = p.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(gen.probabilities_, np.minimum(1, 0.4 * np.divide(p, mean, out=np.zeros_like(p),
                                                                                   where=mean > 0)))
    np.testing.assert_array_equal(S, InstanceDependentBags(rate=0.4, estimator=PlKnnLearner(k=5),
                                                           random_state=0).generate(y, X, n_classes=3))
    assert S[y == 0, 1].mean() > S[y == 0, 2].mean()


def test_instance_dependent_seeds_a_helpers_nested_random_state():
    """A helper whose ``random_state`` sits inside it (a pipeline) is seeded from the generator's
    seed: the same seed the same sets, another seed other sets."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _three_blobs(n=300)
    helper = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(8,), max_iter=30))

    def draw(seed):
        gen = InstanceDependentBags(estimator=helper, random_state=seed)
        return gen.generate(y, X, n_classes=3), gen.probabilities_

    (a, pa), (b, pb), (_, pc) = draw(0), draw(0), draw(1)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(pa, pb)
    assert not np.allclose(pa, pc) and helper.get_params()["mlpclassifier__random_state"] is None


def test_instance_dependent_helper_named_on_the_command_line_is_the_registered_learner():
    from omegaconf import OmegaConf

    from plcore import PlKnnLearner
    from plcore.run.resolve import build_setup

    cfg = OmegaConf.create({"seed": 3, "bags": {"_target_": "plcore.datasets.bags.InstanceDependentBags",
                                                "rate": 0.4, "estimator": "plknn", "random_state": None}})
    setup = build_setup(cfg)
    assert isinstance(setup.bags.estimator, PlKnnLearner) and setup.bags.random_state == 3
    with pytest.raises(Exception, match="fit"):
        InstanceDependentBags(estimator="plknn").generate(np.array([0, 1]), np.zeros((2, 1)), n_classes=2)
