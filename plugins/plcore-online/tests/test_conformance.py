"""plcore's conformance suite (scikit-learn's checks + the partial-label checks) on non-default variants.

The six registered learners with their ``test_params`` are checked by the core's common
conformance test (every registered component); this adds the settings that take other
code paths: no intercept column, Pegasos' shrink on zero-loss trials, unshuffled passes.
"""

from plcore.testing import parametrize_with_checks

from plcore_online import AvgPegasosLearner, MaxPerceptronLearner, PegasosLearner


@parametrize_with_checks([
    MaxPerceptronLearner(eta=0.5, fit_intercept=False),
    AvgPegasosLearner(lam=0.01, shrink_on_zero_loss=True, shuffle=False),
    PegasosLearner(fit_intercept=False, n_epochs=2),
])
def test_conformance(estimator, check):
    check(estimator)
