"""PL-KNN on the real PALM data sets (regression guard for the reproduced figures).

Figures (10-fold, shuffled seed 0, k = 10, linear weights) are recorded in
docs/results/plknn.md; the ranges below are wide enough for fold-to-fold noise but fail
if weighting, preprocessing or candidate handling breaks.
"""

import pytest

from plcore.datasets import load_dataset
from plcore.learners import PlKnnLearner
from plcore.run.protocols import kfold

pytestmark = pytest.mark.data


@pytest.mark.parametrize(
    "name, preprocessing, low, high",
    [
        ("lost", "standardize", 0.36, 0.44),
        ("lost", "none", 0.44, 0.52),
        ("msrc-v2", "standardize", 0.40, 0.49),
    ],
)
def test_plknn_real_data_accuracy(data_home, name, preprocessing, low, high):
    ds = load_dataset(name, data_home)
    res = kfold(PlKnnLearner(k=10), ds, n_splits=10, random_state=0,
                preprocessing=preprocessing, progress=False)
    s = res.summary
    assert low <= s["accuracy_mean"] <= high
    # disambiguation of the training candidates beats picking a random candidate
    assert s["transductive_accuracy_mean"] > 0.55


@pytest.mark.parametrize("name, n, q, left_out", [("lost", 1122, 14, ["14", "15"]), ("msrc-v2", 1755, 22, ["4"])])
def test_the_99_percent_class_rule_on_lost_and_msrc_v2(data_home, name, n, q, left_out):
    """Fuchs & Kalinke's rule gives their counts: lost keeps its 14 classes with an instance (all
    rows), msrc-v2 22 of 23 classes and 1,755 of 1,758 rows."""
    ds = load_dataset(name, data_home=data_home, class_coverage=0.99)
    assert (ds.n_samples, ds.n_classes) == (n, q) and ds.meta["classes_left_out"] == left_out
