"""plcore's conformance suite on settings the common test does not cover.

The six registered learners with their ``test_params`` are checked by the core's common
conformance test; this adds the linear model, SGD and early stopping (other code paths).
"""

from plcore.testing import parametrize_with_checks

from plcore_deep import CcLearner, LwsLearner, ProdenLearner

_FAST = {"n_epochs": 40, "batch_size": 32, "device": "cpu"}


@parametrize_with_checks([
    ProdenLearner(hidden_layer_sizes=(), learning_rate=5e-2, **_FAST),
    CcLearner(hidden_layer_sizes=(16,), optimizer="sgd", learning_rate=5e-2, **_FAST),
    LwsLearner(hidden_layer_sizes=(16,), learning_rate=1e-2, early_stopping=True, n_iter_no_change=5,
               beta=2.0, **_FAST),
])
def test_conformance(estimator, check):
    check(estimator)
