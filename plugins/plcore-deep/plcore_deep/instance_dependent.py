"""Learners for instance-dependent candidate sets (methods:
:mod:`plcore_deep._instance_dependent`)."""

from __future__ import annotations

from plcore.validation import Integral, Interval
from plcore_deep._estimator import DeepLearner

__all__ = ["ValenLearner", "IdgpLearner"]


class ValenLearner(DeepLearner):
    """VALEN (Xu et al., NeurIPS 2021): instance-dependent PLL by variational label enhancement.

    ``warm_up`` epochs of PRODEN; then a kNN graph (``n_neighbors``) of the warmed-up network's
    last hidden layer, and an encoder (a copy of the classifier) whose outputs parameterise a
    Dirichlet over each row's label distribution; the draws must reconstruct the features, the
    candidate sets and the graph, and they are the classifier's targets (the ELBO of Eq. 9-12
    with the authors' weights; :mod:`plcore_deep._instance_dependent`).
    """

    _method = "instance_dependent:Valen"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "warm_up": [Interval(Integral, 0, None, closed="left")],
                              "n_neighbors": [Interval(Integral, 1, None, closed="left")]}

class IdgpLearner(DeepLearner):
    """IDGP (Qiao et al., ICLR 2023): instance-dependent PLL by a decompositional generation process.

    The candidate set is modelled as the correct label, drawn from the classifier ``f``, plus
    every other label flipped in independently with a probability ``g_j(x)`` of a second network
    of the same architecture. ``warm_up`` epochs train ``f`` with PRODEN's loss and ``g`` as a
    Bernoulli model of its own outputs on the candidates (started at the candidate set); then
    each network also learns from the other's posterior (maximum a posteriori of the generation
    process) with a consistency term whose weight grows over the first 20% of the steps
    (:mod:`plcore_deep._instance_dependent`; the authors' code). ``confidences_``: ``f``'s
    posterior on the candidates, updated per batch. Default ``warm_up``: PLENCH's 10 epochs.
    """

    _method = "instance_dependent:Idgp"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "warm_up": [Interval(Integral, 0, None, closed="left")]}
