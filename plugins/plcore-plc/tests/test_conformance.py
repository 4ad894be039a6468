"""plcore's public conformance suite on this plugin's clusterers.

The registered components with their ``test_params`` (as the core's common test checks
them), and the variants those do not cover: PLC with the row-wise initial F and the
constraints refreshed every outer iteration, spectral clustering with the RBF affinity.
"""

from plcore.testing import parametrize_with_checks

from plcore_plc import PlcClusterer, SpectralClusterer
from plcore_plc.plugin import plcore_components

_SPECS = plcore_components()
_REGISTERED = [spec.cls(**(spec.test_params or {})) for spec in _SPECS]
_VARIANTS = [
    PlcClusterer(k=5, outer_iter=2, inner_iter=3, n_init=2, f_step="batched", sd_solver="dense",
                 refresh_constraints=True),
    SpectralClusterer(affinity="rbf", n_init=2),
]


def _expected(estimator):
    for spec in _SPECS:
        if type(estimator) is spec.cls:
            return spec.expected_failed_checks or {}
    return {}


@parametrize_with_checks(_REGISTERED + _VARIANTS, expected_failed_checks=_expected)
def test_conformance(estimator, check):
    check(estimator)
