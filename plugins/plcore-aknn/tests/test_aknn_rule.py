"""The decision rules on hand-made neighbour lists and against literal per-query loops."""

import math

import numpy as np
import pytest

from plcore.learners.plknn import weighted_votes
from plcore_aknn import _rules
from plcore_aknn._rules import (aknn_rule, fixed_k_votes, multiclass_rule, neighbour_counts,
                                threshold)

N_TRAIN, DELTA = 100, 0.1
L = math.log(N_TRAIN) + math.log(1 / DELTA)


def c_for(delta_1):
    """The constant c giving Delta(n, 1, delta) = delta_1 (so Delta_k = delta_1 / sqrt(k))."""
    return delta_1 / math.sqrt(L)


def counts_of(bags, q):
    """Cumulative counts (1, K, q) of a list of bags (sets of labels), nearest first."""
    S_nb = np.zeros((1, len(bags), q), dtype=bool)
    for j, bag in enumerate(bags):
        S_nb[0, j, list(bag)] = True
    return np.cumsum(S_nb, axis=1, dtype=np.int32)


# ----------------------------------------------------------------- literal references
def aknn_loop(bags, q, n, c, delta):
    """Algorithm 1 + Appendix D.3 for one query, written literally with sets."""
    potential = set(range(q))
    counts = [0] * q
    best = {l: -math.inf for l in range(q)}
    for k, bag in enumerate(bags, start=1):
        for l in bag:
            counts[l] += 1
        f = [counts[l] / k for l in range(q)]
        ranked = sorted((f[l] for l in potential), reverse=True)
        m1, m2 = ranked[0], ranked[1]
        for l in potential:
            best[l] = max(best[l], math.sqrt(k) * (f[l] - m2))
        bound = c * math.sqrt((math.log(n) + math.log(1 / delta)) / k)
        potential = {l for l in potential if not m1 - f[l] > bound}
        if len(potential) == 1:
            return potential.pop(), k
    top = max(best[l] for l in potential)
    return min(l for l in potential if best[l] == top), len(bags)


def multiclass_loop(bags, q, n, c, delta):
    counts = [0] * q
    for k, bag in enumerate(bags, start=1):
        for l in bag:
            counts[l] += 1
        order = sorted(range(q), key=lambda l: (-counts[l], l))
        lead = (counts[order[0]] - counts[order[1]]) / k
        if lead > c * math.sqrt((math.log(n) + math.log(1 / delta)) / k):
            return order[0], k
    return max(range(q), key=lambda l: (counts[l], -l)), len(bags)


def random_bags(rng, m, K, q, p):
    """m queries x K neighbour bags; label 0 is favoured so that eliminations happen."""
    probs = np.full(q, p)
    probs[0] = min(1.0, p + 0.35)
    S_nb = rng.random_sample((m, K, q)) < probs
    S_nb[np.arange(m)[:, None], np.arange(K)[None, :], rng.randint(q, size=(m, K))] = True
    return S_nb


# ----------------------------------------------------------------- threshold
def test_threshold_formula():
    assert threshold(100, 4, 0.5, 0.1) == pytest.approx(0.5 * math.sqrt((math.log(100) + math.log(10)) / 4))
    d = threshold(50, np.arange(1, 6), 1.0, 0.05)
    np.testing.assert_allclose(d * np.sqrt(np.arange(1, 6)), d[0])


# ----------------------------------------------------------------- elimination, hand-made
def test_elimination_steps_and_stop():
    # Delta_k = 0.9 / sqrt(k): 0.90, 0.64, 0.52, 0.45
    bags = [{0, 1}, {0, 1}, {0}, {0}, {0, 2}, {2}]
    # k=1: f=(1,1,0) -> 2 trails by 1 > 0.9: dropped.  k=2: (1,1,0): keep {0,1}.
    # k=3: (1,2/3,0): 1 trails by 1/3 < 0.52.  k=4: (1,1/2,0): 1 trails by 0.5 > 0.45 -> stop.
    pred, k_used = aknn_rule(counts_of(bags, 3), N_TRAIN, c_for(0.9), DELTA)
    assert (pred[0], k_used[0]) == (0, 4)
    # one step fewer: both 0 and 1 remain after k_max = 3; 0 has the larger scaled lead
    pred, k_used = aknn_rule(counts_of(bags[:3], 3), N_TRAIN, c_for(0.9), DELTA)
    assert (pred[0], k_used[0]) == (0, 3)


def test_removed_exactly_when_trailing_by_more_than_delta():
    # label 1 trails label 0 by g_k = 0, 0, 1/3, 1/2, 3/5, 2/3 at k = 1..6; the scaled gap
    # sqrt(k) g_k increases, so with Delta_k = D1/sqrt(k) label 1 goes at the first k with
    # sqrt(k) g_k > D1. Put D1 just below / just above the scaled gap at k0.
    bags = [{0, 1}, {0, 1}, {0}, {0}, {0}, {0}]
    cnt = counts_of(bags, 2)
    for k0, g in ((3, 1 / 3), (4, 1 / 2), (5, 3 / 5)):
        d1 = g * math.sqrt(k0)
        below = aknn_rule(cnt, N_TRAIN, c_for(d1 * (1 - 1e-9)), DELTA)
        above = aknn_rule(cnt, N_TRAIN, c_for(d1 * (1 + 1e-9)), DELTA)
        assert (below[0][0], below[1][0]) == (0, k0)          # trails by more: dropped at k0
        assert (above[0][0], above[1][0]) == (0, k0 + 1)      # trails by less: kept at k0


def test_dropped_label_stays_dropped_and_set_never_empties():
    # k=1: f=(1,1,0): label 2 dropped (gap 1 > 0.9). Then label 2 becomes the most frequent:
    # a maximum over *all* labels would drop 0 and 1 at k=4 (gap 0.5 > 0.45) and leave nothing.
    bags = [{0, 1}, {2}, {2}, {2}]
    pred, k_used = aknn_rule(counts_of(bags, 3), N_TRAIN, c_for(0.9), DELTA)
    assert pred[0] in (0, 1) and k_used[0] == 4
    assert pred[0] == 0        # tie of the scaled leads (all 0) -> lowest index
    assert aknn_loop(bags, 3, N_TRAIN, c_for(0.9), DELTA) == (0, 4)


def test_disambiguation_uses_max_scaled_lead_not_final_frequency():
    # nothing is eliminated (huge c); label 0 leads 4-0 at k=4 (scaled lead 2*1 = 2),
    # label 1 wins the frequency at k=10 (6 vs 4) but its best scaled lead is sqrt(10)*0.2.
    bags = [{0}] * 4 + [{1}] * 6
    pred, k_used = aknn_rule(counts_of(bags, 2), N_TRAIN, 100.0, DELTA)
    assert (pred[0], k_used[0]) == (0, 10)
    # exact tie of the scaled leads: k=1 label 0 (1 * 1) vs k=4 label 1 (2 * 0.5) -> lowest index
    bags = [{0}, {1}, {1}, {1}]
    assert aknn_rule(counts_of(bags, 2), N_TRAIN, 100.0, DELTA)[0][0] == 0
    bags = [{0}, {1}, {1}, {1}, {1}]          # k=5: sqrt(5) * 0.6 > 1 -> label 1
    assert aknn_rule(counts_of(bags, 2), N_TRAIN, 100.0, DELTA)[0][0] == 1


def test_second_frequency_is_among_potential_labels():
    # k=1: (1,1,0) -> 2 dropped.  k=2 adds {2}: f=(1/2,1/2,1/2)... then {0,2}, {0,2}:
    # at k=4 f = (3/4, 1/2, 3/4); among potential {0,1} the runner-up of 0 is 1 (1/2), so
    # label 0's scaled lead is 2 * 0.25 = 0.5; among all labels it would be 0.
    bags = [{0, 1}, {2}, {0, 2}, {0, 2}]
    got = aknn_rule(counts_of(bags, 3), N_TRAIN, c_for(0.9), DELTA)
    assert (got[0][0], got[1][0]) == aknn_loop(bags, 3, N_TRAIN, c_for(0.9), DELTA)


# ----------------------------------------------------------------- vectorised == loop
@pytest.mark.parametrize("seed,q,K,c", [(0, 2, 15, 0.3), (1, 5, 20, 0.5), (2, 8, 30, 0.25),
                                        (3, 4, 12, 1.5), (4, 16, 25, 0.1)])
def test_vectorised_equals_per_query_loop(seed, q, K, c):
    rng = np.random.RandomState(seed)
    S_nb = random_bags(rng, 300, K, q, p=0.3)
    counts = np.cumsum(S_nb, axis=1, dtype=np.int32)
    pred, k_used = aknn_rule(counts, 500, c, 0.1)
    ref = [aknn_loop([set(np.flatnonzero(r)) for r in S_nb[i]], q, 500, c, 0.1) for i in range(300)]
    assert np.array_equal(pred, [r[0] for r in ref])
    assert np.array_equal(k_used, [r[1] for r in ref])
    # both branches exercised
    assert 0 < np.mean(k_used < K) < 1 or c in (0.1, 1.5)


@pytest.mark.parametrize("seed,q,K,c", [(0, 3, 15, 0.3), (1, 6, 20, 0.5), (2, 10, 30, 1.0)])
def test_multiclass_vectorised_equals_loop(seed, q, K, c):
    rng = np.random.RandomState(seed)
    S_nb = random_bags(rng, 300, K, q, p=0.3)
    counts = np.cumsum(S_nb, axis=1, dtype=np.int32)
    pred, k_used = multiclass_rule(counts, 500, c, 0.1)
    ref = [multiclass_loop([set(np.flatnonzero(r)) for r in S_nb[i]], q, 500, c, 0.1) for i in range(300)]
    assert np.array_equal(pred, [r[0] for r in ref])
    assert np.array_equal(k_used, [r[1] for r in ref])


def test_multiclass_hand_made():
    # Delta_k = 0.9/sqrt(k). leads: k=1: 1 (>0.9!) -> stop at once
    assert multiclass_rule(counts_of([{1}, {0}], 2), N_TRAIN, c_for(0.9), DELTA) == ([1], [1])
    # k=1 {0,1}: lead 0; k=2 {0}: lead 1/2 < 0.64; k=3 {0}: 2/3 > 0.52 -> stop, label 0
    pred, k = multiclass_rule(counts_of([{0, 1}, {0}, {0}, {1}], 2), N_TRAIN, c_for(0.9), DELTA)
    assert (pred[0], k[0]) == (0, 3)
    # never a lead: argmax at k_max with ties to the lowest index
    pred, k = multiclass_rule(counts_of([{0, 1}, {1, 2}, {0, 2}], 3), N_TRAIN, c_for(0.9), DELTA)
    assert (pred[0], k[0]) == (0, 3)


def test_neighbour_counts_and_chunks():
    rng = np.random.RandomState(0)
    S = rng.random_sample((40, 5)) < 0.4
    ind = rng.randint(40, size=(7, 6))
    C = neighbour_counts(S, ind)
    for i in range(7):
        for k in range(1, 7):
            assert np.array_equal(C[i, k - 1], S[ind[i, :k]].sum(axis=0))
    slices = list(_rules.chunk_rows(10, 3, 2, budget=12))
    assert [(s.start, s.stop) for s in slices] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]


@pytest.mark.parametrize("weights", ["linear", "uniform"])
def test_fixed_k_votes_equal_plknn_votes(weights):
    rng = np.random.RandomState(3)
    S = rng.random_sample((30, 4)) < 0.5
    S[np.arange(30), rng.randint(4, size=30)] = True
    ind = np.array([rng.permutation(30)[:8] for _ in range(9)])
    dist = np.sort(rng.random_sample((9, 8)), axis=1)
    V = fixed_k_votes(dist, S[ind], weights)
    for k in range(1, 9):
        np.testing.assert_allclose(V[:, k - 1], weighted_votes(dist[:, :k], ind[:, :k], S, weights),
                                   atol=1e-12)


@pytest.mark.parametrize("seed,q,K,c", [(0, 2, 15, 0.3), (1, 7, 25, 0.5), (2, 12, 40, 1.0)])
def test_incremental_rules_equal_tensor_rules(seed, q, K, c):
    rng = np.random.RandomState(seed)
    S = rng.random_sample((200, q)) < 0.3
    S[np.arange(200), rng.randint(q, size=200)] = True
    S[:80, 0] = True                                     # a favoured label: early decisions
    ind = np.array([rng.permutation(200)[:K] for _ in range(150)])
    counts = neighbour_counts(S, ind)
    for tensor_rule, nb_rule, compiled_rule in (
            (aknn_rule, _rules.aknn_rule_neighbours, _rules.aknn_rule_compiled),
            (multiclass_rule, _rules.multiclass_rule_neighbours, _rules.multiclass_rule_compiled)):
        a, b = tensor_rule(counts, 200, c, 0.1), nb_rule(S, ind, 200, c, 0.1)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        got = compiled_rule(S, ind, 200, c, 0.1)       # what the learners run
        assert np.array_equal(a[0], got[0]) and np.array_equal(a[1], got[1])


@pytest.mark.parametrize("seed", range(4))
def test_compiled_rules_equal_literal_loops(seed):
    """The compiled per-query rules against the literal set-based loops, ties included
    (few neighbours and labels, so equal frequencies are common)."""
    rng = np.random.RandomState(seed)
    q, K, n = 3 + seed, 6 + 3 * seed, 30
    S = rng.random_sample((n, q)) < 0.5
    S[np.arange(n), rng.randint(q, size=n)] = True
    ind = np.array([rng.permutation(n)[:K] for _ in range(100)])
    stopped_early = []
    for c in (0.05, 0.3, 1.0):
        for compiled_rule, loop in ((_rules.aknn_rule_compiled, aknn_loop),
                                    (_rules.multiclass_rule_compiled, multiclass_loop)):
            pred, k_used = compiled_rule(S, ind, n, c, DELTA)
            ref = [loop([set(np.flatnonzero(S[j])) for j in ind[i]], q, n, c, DELTA) for i in range(100)]
            assert pred.tolist() == [r[0] for r in ref] and k_used.tolist() == [r[1] for r in ref]
            stopped_early.append(k_used < K)
    assert 0 < np.mean(stopped_early) < 1              # both the early stop and the disambiguation ran


def test_rules_with_one_label_or_no_query():
    """One label: decided at k = 1 by every version; no query: empty outputs."""
    S = np.ones((10, 1), dtype=bool)
    ind = np.tile(np.arange(5), (4, 1))
    for rule, nb_rule, compiled_rule in ((aknn_rule, _rules.aknn_rule_neighbours, _rules.aknn_rule_compiled),
                                         (multiclass_rule, _rules.multiclass_rule_neighbours,
                                          _rules.multiclass_rule_compiled)):
        for pred, k_used in (rule(neighbour_counts(S, ind), 10, 0.5, 0.1), nb_rule(S, ind, 10, 0.5, 0.1),
                             compiled_rule(S, ind, 10, 0.5, 0.1)):
            assert pred.tolist() == [0] * 4 and k_used.tolist() == [1] * 4
        pred, k_used = compiled_rule(S, np.empty((0, 5), dtype=np.intp), 10, 0.5, 0.1)
        assert pred.shape == k_used.shape == (0,)
