"""plcore's public conformance suite (scikit-learn's checks + the partial-label checks)."""

from plcore.testing import parametrize_with_checks

from plcore_aknn import AknnLearner, AknnMulticlassLearner, KnnOracleLearner

_PREDICT_SETS_ATTR = {
    "check_dict_unchanged": "predict stores n_neighbors_used_ (per-query k) on the estimator by "
                            "design (issue 8); predict_with_k returns it without storing",
}


def _expected(estimator):
    return _PREDICT_SETS_ATTR


@parametrize_with_checks([AknnLearner(c=0.25, k_max=8), AknnMulticlassLearner(),
                          KnnOracleLearner(k_max=8, weights="uniform")],
                         expected_failed_checks=_expected)
def test_aknn_conformance(estimator, check):
    check(estimator)
