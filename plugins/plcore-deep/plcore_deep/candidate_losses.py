"""Learners with a loss of the whole candidate set (methods:
:mod:`plcore_deep._candidate_losses`)."""

from __future__ import annotations

from plcore.validation import Interval, Real
from plcore_deep._estimator import DeepLearner, shared_parameters

__all__ = ["CcLearner", "LwsLearner"]


class CcLearner(DeepLearner):
    """CC, the classifier-consistent estimator of Feng et al. (NeurIPS 2020).

    With candidate sets drawn uniformly (the paper's assumption) Eq. (4) is
    ``-log sum_{j in S_i} p_j(x_i)``: the probability of the candidate set. No confidences.
    """

    _method = "candidate_losses:Cc"


class LwsLearner(DeepLearner):
    """LWS, the leveraged weighted loss (Wen et al., ICML 2021).

    Eq. (6) with the sigmoid loss ``psi(z) = 1/(1+e^z)``: candidates are pushed up with weights
    ``w_j`` (``p`` renormalised on the candidates), non-candidates down with ``beta`` times
    their weights (``p`` renormalised on the non-candidates); weights updated per batch.
    """

    _method = "candidate_losses:Lws"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "beta": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, *, beta=2.0, network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200,
                 batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", random_state=None):
        super().__init__(**shared_parameters(locals()))
        self.beta = beta
