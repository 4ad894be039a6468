"""plcore's public conformance suite on the three clusterers of this plugin."""

from plcore.testing import parametrize_with_checks

from plcore_plc import KMeansClusterer, PlcClusterer, SpectralClusterer


@parametrize_with_checks([PlcClusterer(k=5, outer_iter=1, inner_iter=3, n_init=2), KMeansClusterer(n_init=2),
                          SpectralClusterer(n_init=2)])
def test_conformance(estimator, check):
    check(estimator)
