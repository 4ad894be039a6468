"""Partial-label capability tags on scikit-learn's tag system; the core reads nothing else."""

import subprocess
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import get_tags

from plcore import PlKnnLearner
from plcore.base import BaseLearner
from plcore.datasets import ClusterNoisyBags, DropTrueBags, NoisyBags, UniformBags
from plcore.tags import PLLTags, Tags, get_pll_tags
from plcore.testing import make_pl_data

REPO = Path(__file__).resolve().parents[1]


def test_pll_tags_extend_sklearn_tags():
    tags = get_tags(PlKnnLearner())
    assert isinstance(tags, Tags) and tags.estimator_type == "classifier" and tags.target_tags.required
    assert tags.pll_tags.accepts_sparse_candidates and not tags.pll_tags.online


def test_bag_generator_tags():
    assert get_pll_tags(ClusterNoisyBags()).needs_features
    assert get_pll_tags(DropTrueBags()).corrupts_existing_labels
    assert get_pll_tags(UniformBags()) == PLLTags()
    assert not get_pll_tags(NoisyBags()).corrupts_existing_labels  # exact labels only, as PiCO+
    # one mechanism: every generator that leaves true labels out on purpose declares it
    for gen in (NoisyBags(), DropTrueBags(), ClusterNoisyBags()):
        assert get_pll_tags(gen).noisy_candidates


def test_get_pll_tags_defaults_for_foreign_objects():
    assert get_pll_tags(object()) == PLLTags()
    assert get_pll_tags(BaseEstimator()) == PLLTags()
    assert get_pll_tags(PlKnnLearner).accepts_sparse_candidates  # a class works too


class Recorder(BaseLearner):
    """Records the type of the candidate matrix its private step receives."""

    def __init__(self, sparse_ok=False):
        self.sparse_ok = sparse_ok

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.accepts_sparse_candidates = self.sparse_ok
        return tags

    def _fit(self, X, S):
        self.seen_ = S
        self.q_ = S.shape[1]

    def _scores(self, X):
        return np.zeros((X.shape[0], self.q_))


def test_base_class_converts_candidates_to_the_representation_tags_ask_for():
    X, S, _ = make_pl_data()
    seen = Recorder().fit(X, sp.csr_matrix(S.astype(float))).seen_
    assert isinstance(seen, np.ndarray) and seen.dtype == bool and np.array_equal(seen, S)
    seen = Recorder(sparse_ok=True).fit(X, sp.csr_matrix(S.astype(float))).seen_
    assert sp.issparse(seen) and np.array_equal(seen.toarray().astype(bool), S)
    seen = Recorder(sparse_ok=True).fit(X, S.astype(int)).seen_
    assert isinstance(seen, np.ndarray) and seen.dtype == bool


def test_no_private_capability_flag_remains():
    pattern = "_plcore_exact_labels|_corrupts_existing|_requires_X|_plcore_kind|predict_partial_fit"
    proc = subprocess.run(["git", "grep", "-nE", pattern, "--", "plcore", "plugins"], cwd=REPO,
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # not a git checkout (e.g. an sdist): nothing to check
        return
    assert proc.stdout == "", proc.stdout


def test_a_broken_sklearn_tags_is_not_hidden():
    import pytest

    class Broken(PlKnnLearner):
        def __sklearn_tags__(self):
            raise RuntimeError("bug in tags")

    with pytest.raises(RuntimeError, match="bug in tags"):
        get_pll_tags(Broken())
