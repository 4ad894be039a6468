"""Deep partial-label learners: PRODEN, RC, CC, LWS, CAVL, POP, PiCO and VALEN on an MLP, a LeNet or a linear model.

Eight scikit-learn classifiers share one implementation, :class:`_DeepLearner`, and one
training loop (:mod:`plcore_deep._train`); they differ in the loss and the confidence update
(:mod:`plcore_deep._losses`, :mod:`plcore_deep._pico`, :mod:`plcore_deep._valen`):

==================  ==========================================  ===========================
class (``+learner=``)  paper                                    loss / update
==================  ==========================================  ===========================
``ProdenLearner``   Lv et al., ICML 2020                        Eq. (6) / Eq. (7), per batch,
                                                                from the step's own outputs
``RcLearner``       Feng et al., NeurIPS 2020 (RC)              Eq. (6) / Eq. (7), per batch,
                                                                after the step
``CcLearner``       Feng et al., NeurIPS 2020 (CC)              Eq. (4), no confidences
``LwsLearner``      Wen et al., ICML 2021                       Eq. (6), sigmoid loss, beta
``CavlLearner``     Zhang et al., ICLR 2022                     CE on the max-CAV candidate
``PopLearner``      Xu et al., ICML 2023                        RC + progressive purification
``PicoLearner``     Wang et al., ICLR 2022                      PRODEN's loss + contrastive
                                                                term, prototype confidences
``ValenLearner``    Xu et al., NeurIPS 2021                     variational label enhancement
                                                                (Dirichlet label distributions)
==================  ==========================================  ===========================

PyTorch is imported at the first ``fit`` or ``predict``, never when this module is imported:
listing components and composing configs stay fast. Training is deterministic on the CPU
under ``random_state``; ``device="auto"`` trains on CUDA where PyTorch sees a GPU. The fitted
network is kept in float64 on the CPU (``network_``), so predictions do not depend on the
batch they are computed in, and a fitted learner pickles anywhere. Pickled or written with
skops (a run's logged model), the network is its architecture and its weights as NumPy arrays:
no PyTorch object is stored, and reading a learner runs no code from the file.
"""

from __future__ import annotations

import inspect

import numpy as np
from scipy.special import softmax
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.exceptions import InvalidParameterError
from plcore.metrics import approximated_accuracy, covering_rate, partial_log_likelihood
from plcore.progress import iterations
from plcore.validation import Integral, Interval, Real, StrOptions

__all__ = ["ProdenLearner", "RcLearner", "CcLearner", "LwsLearner", "CavlLearner", "PopLearner", "PicoLearner",
           "ValenLearner"]


def _covering_rate(S, logits):
    return covering_rate(S, np.argmax(logits, axis=1))


def _partial_log_likelihood(S, logits):
    return partial_log_likelihood(S, softmax(logits, axis=1))


def _approximated_accuracy(S, logits):
    return approximated_accuracy(S, softmax(logits, axis=1))


#: early-stopping criteria: candidate sets only (the scorers of plcore.metrics)
_SCORES = {"covering_rate": _covering_rate, "partial_log_likelihood": _partial_log_likelihood,
           "approximated_accuracy": _approximated_accuracy}


class _DeepLearner(BaseLearner):
    """Shared implementation; a subclass sets ``_method`` and adds its own parameters.

    Parameters
    ----------
    network : {"mlp", "lenet"}, default="mlp"
        ``"lenet"``: LeNet-5 for rows of square one-channel images (784 pixels: 28 x 28, e.g.
        ``dataset=fashion-mnist``); ``hidden_layer_sizes`` and ``batch_norm`` are then unused.
    hidden_layer_sizes : tuple of int, default=(500,)
        Widths of the MLP's hidden ReLU layers; ``()`` is the linear model.
    batch_norm : bool, default=False
        Batch normalisation after every hidden layer's ReLU.
    n_epochs : int, default=200
        Passes over the training rows (fewer with early stopping).
    batch_size : int or "auto", default=128
        ``"auto"``: 16 rows below 5,000 training rows, else 256 (the field's tabular recipe).
    learning_rate : float, default=1e-3
        The step size; with ``lr_schedule="one_cycle"`` the schedule's peak.
    weight_decay : float, default=1e-5
        L2 penalty of the optimiser.
    optimizer : {"adam", "sgd"}, default="adam"
    momentum : float, default=0.9
        SGD only.
    lr_schedule : {"constant", "one_cycle"}, default="constant"
        ``"one_cycle"``: PyTorch's ``OneCycleLR`` up to ``learning_rate``, stepped per batch.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows, keep the epoch with the best ``scoring``
        on their candidate sets, stop after ``n_iter_no_change`` epochs without improvement.
    validation_fraction : float, default=0.1
    n_iter_no_change : int, default=20
    tol : float, default=1e-4
    scoring : str, default="partial_log_likelihood"
        ``"covering_rate"``, ``"partial_log_likelihood"`` or ``"approximated_accuracy"``:
        early stopping's criterion (which epoch's weights are kept), computed from the held-out
        rows' candidate sets only; ``"covering_rate"`` and ``"approximated_accuracy"`` are
        PLENCH's CR and AA.
    device : str, default="auto"
        ``"cpu"``, ``"cuda"``, ``"cuda:<i>"`` or ``"auto"`` (CUDA if available).
    random_state : int, RandomState or None, default=None
    """

    _method = ""

    _parameter_constraints = {
        "network": [StrOptions({"mlp", "lenet"})],
        "hidden_layer_sizes": ["array-like"],
        "batch_norm": ["boolean"],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "optimizer": [StrOptions({"adam", "sgd"})],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "lr_schedule": [StrOptions({"constant", "one_cycle"})],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "scoring": [StrOptions(set(_SCORES))],
        "device": [str],
        "random_state": ["random_state"],
    }

    def __init__(self, *, network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200,
                 batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", random_state=None):
        self.network = network
        self.hidden_layer_sizes = hidden_layer_sizes
        self.batch_norm = batch_norm
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.momentum = momentum
        self.lr_schedule = lr_schedule
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.scoring = scoring
        self.device = device
        self.random_state = random_state

    def _method_params(self) -> dict:
        return {}

    def _hidden(self) -> tuple:
        try:
            sizes = np.asarray(self.hidden_layer_sizes, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            sizes = np.array([np.nan])
        if not np.all(np.isfinite(sizes)) or np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
            raise InvalidParameterError("hidden_layer_sizes must be a list of positive integer widths "
                                        f"(() for the linear model), got {self.hidden_layer_sizes!r}")
        return tuple(int(h) for h in sizes)

    def _fit(self, X, S):
        from plcore_deep import _train

        if self.network == "lenet":
            try:
                _train.lenet_side(X.shape[1])
            except ValueError as err:
                raise InvalidParameterError(str(err)) from None
        device = _train.resolve_device(self.device)
        seed = check_random_state(self.random_state).randint(2**31 - 1)
        result = _train.train(
            X, S, method=_train.make_method(self._method, self._method_params()),
            hidden_layer_sizes=self._hidden(), batch_norm=bool(self.batch_norm), lr_schedule=self.lr_schedule,
            network=self.network,
            n_epochs=int(self.n_epochs), batch_size=self.batch_size,
            learning_rate=float(self.learning_rate), weight_decay=float(self.weight_decay),
            optimizer=self.optimizer, momentum=float(self.momentum), early_stopping=bool(self.early_stopping),
            validation_fraction=float(self.validation_fraction), n_iter_no_change=int(self.n_iter_no_change),
            tol=float(self.tol), score=_SCORES[self.scoring], device=device, seed=seed,
            iterations=iterations, desc=type(self).__name__.removesuffix("Learner"))
        self.network_ = result.model
        self._architecture = {"network": self.network, "n_features": int(X.shape[1]), "n_classes": int(S.shape[1]),
                              "hidden_layer_sizes": list(self._hidden()), "batch_norm": bool(self.batch_norm)}
        self.confidences_ = result.confidences
        self.loss_curve_ = result.loss_curve
        self.validation_scores_ = result.validation_scores
        self.best_epoch_ = result.best_epoch
        self.n_epochs_ = result.n_epochs
        return result

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the fitted network stays a module
        if state.get("_architecture") and "network_" in state and not isinstance(state["network_"], dict):
            from plcore_deep import _train

            state["network_"] = _train.network_state(state["network_"], state["_architecture"])
        return state

    def __setstate__(self, state):
        if isinstance(state.get("network_"), dict):
            from plcore_deep import _train

            state = {**state, "network_": _train.network_from_state(state["network_"])}
        super().__setstate__(state)

    def _scores(self, X):
        """The network's outputs (logits), shape (n, q)."""
        from plcore_deep import _train

        return _train.predict_logits(self.network_, X, _train.resolve_device(self.device))

    def decision_function(self, X):
        """The network's outputs (logits), one column per class; for two classes, as scikit-learn's
        classifiers, the 1-D margin of the second class over the first."""
        check_is_fitted(self)
        logits = self._scores(self._validate_predict(X))
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X):
        """Softmax of the outputs: the model's class posteriors, columns in ``classes_`` order."""
        check_is_fitted(self)
        return softmax(self._scores(self._validate_predict(X)), axis=1)


#: the parameters of the shared training loop, passed on by every subclass's ``__init__``
_SHARED = tuple(inspect.signature(_DeepLearner.__init__).parameters)[1:]


def _shared(arguments: dict) -> dict:
    """The shared parameters among a subclass's ``__init__`` arguments (``locals()``)."""
    return {name: arguments[name] for name in _SHARED}


class ProdenLearner(_DeepLearner):
    """PRODEN (Lv et al., ICML 2020): confidence-weighted cross-entropy, confidences re-estimated per batch.

    Loss Eq. (6) ``-sum_j w_ij log p_j(x_i)``; after each step the batch's weights become the
    outputs the step was computed on, renormalised over the candidates (Eq. 7). Weights start
    uniform on the candidates.
    """

    _method = "proden"


class RcLearner(_DeepLearner):
    """RC, the risk-consistent estimator of Feng et al. (NeurIPS 2020).

    The importance-reweighted risk Eq. (6) is PRODEN's weighted cross-entropy; the weights
    (Eq. 7, ``p(y|x)`` renormalised on the candidates) are recomputed for each batch from a
    forward pass after the optimiser step, as in the authors' code.
    """

    _method = "rc"


class CcLearner(_DeepLearner):
    """CC, the classifier-consistent estimator of Feng et al. (NeurIPS 2020).

    With candidate sets drawn uniformly (the paper's assumption) Eq. (4) is
    ``-log sum_{j in S_i} p_j(x_i)``: the probability of the candidate set. No confidences.
    """

    _method = "cc"


class LwsLearner(_DeepLearner):
    """LWS, the leveraged weighted loss (Wen et al., ICML 2021).

    Eq. (6) with the sigmoid loss ``psi(z) = 1/(1+e^z)``: candidates are pushed up with weights
    ``w_j`` (``p`` renormalised on the candidates), non-candidates down with ``beta`` times
    their weights (``p`` renormalised on the non-candidates); weights updated per batch.
    """

    _method = "lws"
    _parameter_constraints = {**_DeepLearner._parameter_constraints,
                              "beta": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, *, beta=2.0, network="mlp", hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200,
                 batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", random_state=None):
        super().__init__(**_shared(locals()))
        self.beta = beta

    def _method_params(self):
        return {"beta": self.beta}


class CavlLearner(_DeepLearner):
    """CAVL (Zhang et al., ICLR 2022): cross-entropy on the candidate with the largest class activation value.

    The target of each row is one-hot on ``argmax_{j in S} f_j |1 - f_j|`` of the raw outputs
    (Eq. 3), re-chosen per batch after the step; it starts uniform on the candidates.
    """

    _method = "cavl"


class PopLearner(_DeepLearner):
    """POP, progressive purification (Xu et al., ICML 2023).

    PRODEN's loss and updates; from epoch ``warm_up`` on, every ``window`` epochs, each candidate
    whose mean confidence over the last ``window`` epochs is below ``theta`` times its row's
    largest is removed for good (Algorithm 1). ``theta`` grows by the factor ``1 + inc`` after a
    round that changed almost nothing, up to ``theta_max``. Defaults: the authors' code.
    """

    _method = "pop"
    _parameter_constraints = {**_DeepLearner._parameter_constraints,
                              "warm_up": [Interval(Integral, 0, None, closed="left")],
                              "window": [Interval(Integral, 1, None, closed="left")],
                              "theta": [Interval(Real, 0, 1, closed="right")],
                              "inc": [Interval(Real, 0, None, closed="left")],
                              "theta_max": [Interval(Real, 0, 1, closed="right")]}

    def __init__(self, *, warm_up=20, window=5, theta=1e-3, inc=1e-3, theta_max=0.4, network="mlp",
                 hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128, learning_rate=1e-3,
                 weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant", early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=20, tol=1e-4, scoring="partial_log_likelihood",
                 device="auto", random_state=None):
        super().__init__(**_shared(locals()))
        self.warm_up = warm_up
        self.window = window
        self.theta = theta
        self.inc = inc
        self.theta_max = theta_max

    def _method_params(self):
        return {"warm_up": self.warm_up, "window": self.window, "theta": self.theta, "inc": self.inc,
                "theta_max": self.theta_max}

    def _fit(self, X, S):
        result = super()._fit(X, S)
        self.candidates_ = result.candidates
        self.n_purified_ = result.n_purified
        return result


class PicoLearner(_DeepLearner):
    """PiCO (Wang et al., ICLR 2022): contrastive label disambiguation with class prototypes.

    The classifier's loss is PRODEN's weighted cross-entropy, but the confidences move (from
    epoch ``prot_start`` on) towards the candidate whose prototype is nearest in a contrastive
    embedding (Eq. 9), with the moving-average weight going from ``conf_ema[0]`` to
    ``conf_ema[1]``; the embedding (a projection head of ``feat_dim`` on the last hidden layer)
    is trained by the supervised contrastive loss (Eq. 5, weight ``loss_weight``, temperature
    ``temperature``) against a momentum encoder (``moco_m``) and a queue of ``queue_size`` keys;
    the prototypes move with ``proto_m`` (Eq. 8). The momentum encoder sees a second view
    ``x + noise_scale N(0, I)`` of every row (the field's tabular view; the paper augments
    images). Defaults: the authors' code, ``prot_start=1`` as in Fuchs & Kalinke's tabular runs.
    """

    _method = "pico"
    _parameter_constraints = {**_DeepLearner._parameter_constraints,
                              "feat_dim": [Interval(Integral, 1, None, closed="left")],
                              "queue_size": [Interval(Integral, 1, None, closed="left")],
                              "moco_m": [Interval(Real, 0, 1, closed="both")],
                              "proto_m": [Interval(Real, 0, 1, closed="both")],
                              "temperature": [Interval(Real, 0, None, closed="neither")],
                              "loss_weight": [Interval(Real, 0, None, closed="left")],
                              "prot_start": [Interval(Integral, 0, None, closed="left")],
                              "conf_ema": ["array-like"],
                              "noise_scale": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, *, feat_dim=128, queue_size=8192, moco_m=0.999, proto_m=0.99, temperature=0.07,
                 loss_weight=0.5, prot_start=1, conf_ema=(0.95, 0.8), noise_scale=0.1, network="mlp",
                 hidden_layer_sizes=(500,), batch_norm=False, n_epochs=200, batch_size=128, learning_rate=1e-3,
                 weight_decay=1e-5, optimizer="adam", momentum=0.9, lr_schedule="constant", early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=20, tol=1e-4, scoring="partial_log_likelihood",
                 device="auto", random_state=None):
        super().__init__(**_shared(locals()))
        self.feat_dim = feat_dim
        self.queue_size = queue_size
        self.moco_m = moco_m
        self.proto_m = proto_m
        self.temperature = temperature
        self.loss_weight = loss_weight
        self.prot_start = prot_start
        self.conf_ema = conf_ema
        self.noise_scale = noise_scale

    def _method_params(self):
        try:
            conf_ema = tuple(float(v) for v in np.asarray(self.conf_ema, dtype=float).reshape(-1))
        except (TypeError, ValueError):
            conf_ema = ()
        if len(conf_ema) != 2 or not all(0 <= v <= 1 for v in conf_ema):
            raise InvalidParameterError(f"conf_ema must be two weights in [0, 1] (start, end), got {self.conf_ema!r}")
        return {"feat_dim": self.feat_dim, "queue_size": self.queue_size, "moco_m": self.moco_m,
                "proto_m": self.proto_m, "temperature": self.temperature, "loss_weight": self.loss_weight,
                "prot_start": self.prot_start, "conf_ema": conf_ema, "noise_scale": self.noise_scale}


class ValenLearner(_DeepLearner):
    """VALEN (Xu et al., NeurIPS 2021): instance-dependent PLL by variational label enhancement.

    ``warm_up`` epochs of PRODEN; then a kNN graph (``n_neighbors``) of the warmed-up network's
    last hidden layer, and an encoder (a copy of the classifier) whose outputs parameterise a
    Dirichlet over each row's label distribution; the draws must reconstruct the features, the
    candidate sets and the graph, and they are the classifier's targets (the ELBO of Eq. 9-12
    with the authors' weights; :mod:`plcore_deep._valen`).
    """

    _method = "valen"
    _parameter_constraints = {**_DeepLearner._parameter_constraints,
                              "warm_up": [Interval(Integral, 0, None, closed="left")],
                              "n_neighbors": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, *, warm_up=10, n_neighbors=3, network="mlp", hidden_layer_sizes=(500,), batch_norm=False,
                 n_epochs=200, batch_size=128, learning_rate=1e-3, weight_decay=1e-5, optimizer="adam", momentum=0.9,
                 lr_schedule="constant", early_stopping=False, validation_fraction=0.1, n_iter_no_change=20, tol=1e-4,
                 scoring="partial_log_likelihood", device="auto", random_state=None):
        super().__init__(**_shared(locals()))
        self.warm_up = warm_up
        self.n_neighbors = n_neighbors

    def _method_params(self):
        return {"warm_up": self.warm_up, "n_neighbors": self.n_neighbors}
