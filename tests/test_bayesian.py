"""The Bayesian signed-rank test (plcore.stats.bayesian, baycomp) against hand computations on small
cases, its verdicts, and tiers built from them."""

import numpy as np
import pytest
from scipy import stats

from plcore.stats import signed_rank, tiers


def test_a_method_ahead_everywhere_is_better_as_the_posterior_of_its_prior_weight_says():
    """Every difference far above the region: of the pairwise sums (z_i + z_j) the test weighs by
    w_i w_j, only the prior pseudo-observation's own pair (0 + 0) falls inside the region, so a
    posterior draw puts 1 - w0^2 above it and w0^2 inside, w0 ~ Beta(0.5, n) the pseudo-observation's
    Dirichlet weight; "better" is the most probable region when w0 < sqrt(1/2)."""
    n = 6
    a = np.linspace(0.70, 0.80, n)
    v = signed_rank(a, a - 0.10, rope=0.01, nsamples=40000)
    hand = stats.beta.cdf(np.sqrt(0.5), 0.5, n)
    assert v.better == pytest.approx(hand, abs=0.005) and v.worse == 0.0
    assert v.equivalent == pytest.approx(1 - hand, abs=0.005)
    assert v.decided == "better"
    back = signed_rank(a - 0.10, a, rope=0.01, nsamples=40000)
    assert back.worse == pytest.approx(v.better, abs=1e-12) and back.decided == "worse"


def test_differences_inside_the_region_are_equivalent_and_a_p_value_could_not_say_so():
    a = np.linspace(0.6, 0.9, 20)
    b = a + np.where(np.arange(20) % 2 == 0, 0.002, -0.002)
    v = signed_rank(a, b, rope=0.01)
    assert v.equivalent >= 0.95 and v.decided == "equivalent"
    assert signed_rank(a, a).decided == "equivalent"   # no difference at all


def test_few_data_sets_leave_a_verdict_undecided():
    a = np.array([0.80, 0.70, 0.90])
    v = signed_rank(a, a - np.array([0.03, -0.02, 0.04]), rope=0.01)
    assert v.decided == "undecided" and v.better + v.equivalent + v.worse == pytest.approx(1.0)


def test_the_test_is_seeded_and_refuses_unpaired_input():
    rng = np.random.RandomState(0)
    a, b = rng.rand(10), rng.rand(10)
    assert signed_rank(a, b, seed=3) == signed_rank(a, b, seed=3)
    with pytest.raises(ValueError, match="equally long"):
        signed_rank(a, b[:5])


def test_tiers_cut_where_the_leader_is_decided_better():
    base = np.linspace(0.6, 0.9, 12)
    means = {"top": base + 0.10, "twin": base + 0.10 + np.where(np.arange(12) % 2, 0.001, -0.001),
             "mid": base + 0.05, "low": base}
    got = tiers(means, ["top", "twin", "mid", "low"])
    assert got == {"top": 1, "twin": 1, "mid": 2, "low": 3}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_vectorised_test_is_baycomps_on_the_same_draws(seed):
    """plcore's product form gives baycomp's own probabilities (SignedRankTest.probs, same seed)."""
    from baycomp import SignedRankTest

    from plcore.stats.bayesian import probabilities

    rng = np.random.RandomState(seed)
    a = rng.uniform(0.5, 0.9, 15)
    b = a + rng.normal(0.005, 0.02, 15)
    b[3] = a[3] + 0.02          # a difference on the region's edge (2 rope = z_i + z_j for i = 0, j = 3)
    for rope in (0.01, 0.005):
        ours = probabilities(a, b, rope, 3000, seed)
        theirs = SignedRankTest.probs(a, b, rope=rope, nsamples=3000, random_state=seed)
        assert ours == pytest.approx(tuple(float(p) for p in theirs), abs=1e-12)
