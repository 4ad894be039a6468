"""Contrastive / prototype learners: PiCO, ABLE, DIRK (methods: :mod:`plcore_deep._contrastive`)."""

from __future__ import annotations

import numpy as np

from plcore.exceptions import InvalidParameterError
from plcore.validation import Integral, Interval, Real
from plcore_deep._estimator import VIEW_CONSTRAINTS, DeepLearner

__all__ = ["PicoLearner", "AbleLearner", "DirkLearner"]


class PicoLearner(DeepLearner):
    """PiCO (Wang et al., ICLR 2022): contrastive label disambiguation with class prototypes.

    The classifier's loss is PRODEN's weighted cross-entropy, but the confidences move (from
    epoch ``prot_start`` on) towards the candidate whose prototype is nearest in a contrastive
    embedding (Eq. 9), with the moving-average weight going from ``conf_ema[0]`` to
    ``conf_ema[1]``; the embedding (a projection head of ``feat_dim`` on the last hidden layer)
    is trained by the supervised contrastive loss (Eq. 5, weight ``loss_weight``, temperature
    ``temperature``) against a momentum encoder (``moco_m``) and a queue of ``queue_size`` keys;
    the prototypes move with ``proto_m`` (Eq. 8). The momentum encoder sees a second view of
    every row (``augmentation``, :mod:`plcore_deep._views`): ``"auto"`` (default) is
    ``x + noise_scale N(0, I)`` on tabular rows (the field's tabular view) and a random shift
    and flip for ``network="lenet"`` (the paper augments images); ``"identity"`` is PLENCH's
    tabular choice (the row itself). Defaults: the authors' code, ``prot_start=1`` as in Fuchs &
    Kalinke's tabular runs.
    """

    _method = "contrastive:Pico"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "feat_dim": [Interval(Integral, 1, None, closed="left")],
                              "queue_size": [Interval(Integral, 1, None, closed="left")],
                              "moco_m": [Interval(Real, 0, 1, closed="both")],
                              "proto_m": [Interval(Real, 0, 1, closed="both")],
                              "temperature": [Interval(Real, 0, None, closed="neither")],
                              "loss_weight": [Interval(Real, 0, None, closed="left")],
                              "prot_start": [Interval(Integral, 0, None, closed="left")],
                              "conf_ema": ["array-like"],
                              **VIEW_CONSTRAINTS}

    def _method_params(self):
        try:
            conf_ema = tuple(float(v) for v in np.asarray(self.conf_ema, dtype=float).reshape(-1))
        except (TypeError, ValueError):
            conf_ema = ()
        if len(conf_ema) != 2 or not all(0 <= v <= 1 for v in conf_ema):
            raise InvalidParameterError(f"conf_ema must be two weights in [0, 1] (start, end), got {self.conf_ema!r}")
        return {"feat_dim": self.feat_dim, "queue_size": self.queue_size, "moco_m": self.moco_m,
                "proto_m": self.proto_m, "temperature": self.temperature, "loss_weight": self.loss_weight,
                "prot_start": self.prot_start, "conf_ema": conf_ema, "noise_scale": self.noise_scale,
                "augmentation": self.augmentation}


class AbleLearner(DeepLearner):
    """ABLE (Xia et al., IJCAI 2022): ambiguity-induced contrastive learning for
    instance-dependent partial-label learning.

    A classifier and a contrastive representation (a projection head of ``feat_dim`` on the last
    hidden layer) are trained together: ``-sum_j s_ij log p_j(x_i) + loss_weight L_con``. For each
    candidate ``j`` of an anchor, the rows of the mini-batch currently predicted as ``j`` (the
    argmax of ``p`` on their candidates) are its ambiguity-induced positives; ``L_con`` is the
    supervised contrastive loss (``temperature``) over both views of the batch with each group
    averaged and weighted by the anchor's confidence ``s_ij``. The confidences ``s`` start uniform
    on the candidates and become ``p`` renormalised on them after every step (PRODEN's update).
    The second view is ``augmentation`` (:mod:`plcore_deep._views`; ``"identity"``, the row
    itself, is PLENCH's tabular choice). Defaults: PLENCH's (``feat_dim=128``,
    ``loss_weight=1.0``, ``temperature=0.07``).
    """

    _method = "contrastive:Able"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "feat_dim": [Interval(Integral, 1, None, closed="left")],
                              "temperature": [Interval(Real, 0, None, closed="neither")],
                              "loss_weight": [Interval(Real, 0, None, closed="left")],
                              **VIEW_CONSTRAINTS}

class DirkLearner(DeepLearner):
    """DIRK (Wu et al., AAAI 2024): distilling reliable knowledge for instance-dependent
    partial-label learning.

    A teacher (the network's architecture, its own initial draw) follows the trained student as
    a moving average (``moco_m``). Its posterior on a row is rectified so that every candidate's
    confidence exceeds every non-candidate's while the candidates keep their ratios, and the
    student is trained on it by cross-entropy (the distillation). With ``loss_weight > 0`` a
    contrastive refinement is added (the paper's DIRK-REF; ``loss_weight=0`` is plain DIRK):
    the student's embedding (a projection head of ``feat_dim``) against the teacher's keys of a
    second view and a queue of ``queue_size`` earlier keys; from epoch ``prot_start`` positives
    are the rows whose candidate sets meet the anchor's and whose rectified confidences have the
    same argmax, weighted by a softmax of the confidences' cosine similarity over
    ``dist_temperature``, with ``temperature`` on the embeddings; before, MoCo's loss. Defaults:
    PLENCH's (``moco_m=0.99``, ``queue_size=8192``, ``feat_dim=128``, ``loss_weight=1.0``,
    ``dist_temperature=0.4``, ``temperature=0.07``); ``prot_start=1`` epoch is the authors' code's
    (PLENCH counts 178 optimiser steps). ``confidences_``: each row's last rectified confidences,
    on its candidates.
    """

    _method = "contrastive:Dirk"
    _parameter_constraints = {**DeepLearner._parameter_constraints,
                              "feat_dim": [Interval(Integral, 1, None, closed="left")],
                              "queue_size": [Interval(Integral, 1, None, closed="left")],
                              "moco_m": [Interval(Real, 0, 1, closed="both")],
                              "temperature": [Interval(Real, 0, None, closed="neither")],
                              "dist_temperature": [Interval(Real, 0, None, closed="neither")],
                              "loss_weight": [Interval(Real, 0, None, closed="left")],
                              "prot_start": [Interval(Integral, 0, None, closed="left")],
                              **VIEW_CONSTRAINTS}
