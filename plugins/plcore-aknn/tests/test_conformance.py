"""Conformance of this plugin's components.

The registered learners with their ``test_params`` (as the core's common test checks
them) and the variant those do not cover (the oracle with uniform weights) through
plcore's suite (scikit-learn's checks + the partial-label checks); the preprocessor
``aknn`` through scikit-learn's checks, with the expected failures its spec declares.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks as sklearn_parametrize_with_checks

from plcore.testing import parametrize_with_checks

from plcore_aknn import KnnOracleLearner
from plcore_aknn.plugin import plcore_components

_SPECS = plcore_components()


def _instances(kind):
    return [spec.cls(**(spec.test_params or {})) for spec in _SPECS if spec.kind == kind]


def _expected(estimator):
    for spec in _SPECS:
        if type(estimator) is spec.cls:
            return spec.expected_failed_checks or {}
    return {}


@parametrize_with_checks(_instances("learner") + [KnnOracleLearner(k_max=8, weights="uniform")],
                         expected_failed_checks=_expected)
def test_conformance(estimator, check):
    check(estimator)


@sklearn_parametrize_with_checks(_instances("preprocessor"), expected_failed_checks=_expected)
def test_preprocessor_conformance(estimator, check):
    check(estimator)
