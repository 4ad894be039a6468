"""What every deep learner shares: :class:`DeepLearner`, a scikit-learn classifier around the
shared training loop (:mod:`plcore_deep._loop`) and one method (:mod:`plcore_deep._methods`).

PyTorch is imported at the first ``fit`` or ``predict``, never when this module is imported:
listing components and composing configs stay fast. Training is deterministic on the CPU
under ``random_state``; ``device="auto"`` trains on CUDA where PyTorch sees a GPU. The fitted
network is kept in float64 on the CPU (``network_``), so predictions do not depend on the
batch they are computed in, and a fitted learner pickles anywhere. Pickled or written with
skops (a run's logged model), the network is its architecture and its weights as NumPy arrays:
no PyTorch object is stored, and reading a learner runs no code from the file.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect

import numpy as np
from scipy.special import softmax
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.exceptions import InvalidParameterError
from plcore.metrics import approximated_accuracy, covering_rate, partial_log_likelihood
from plcore.progress import iterations
from plcore.validation import Integral, Interval, Real, StrOptions, validate_params
from plcore_deep import plugin as _plugin

__all__ = ["DeepLearner"]


def _constructor(defaults: dict, owner: str):
    """A scikit-learn ``__init__`` with the keyword-only parameters ``defaults`` (name ->
    default, in order): each argument is stored as the attribute of its name, unchanged. Its
    explicit signature is what :meth:`~sklearn.base.BaseEstimator.get_params`, ``clone`` and
    the API docs read."""
    names = tuple(defaults)

    def __init__(self, **params):
        unknown = [name for name in params if name not in defaults]
        if unknown:
            raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {unknown[0]!r}")
        for name in names:
            setattr(self, name, params[name] if name in params else defaults[name])

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value) for name, value in defaults.items())])
    __init__.__qualname__ = f"{owner}.__init__"
    return __init__


def _covering_rate(S, logits):
    return covering_rate(S, np.argmax(logits, axis=1))


def _partial_log_likelihood(S, logits):
    return partial_log_likelihood(S, softmax(logits, axis=1))


def _approximated_accuracy(S, logits):
    return approximated_accuracy(S, softmax(logits, axis=1))


#: early-stopping criteria: candidate sets only (the scorers of plcore.metrics)
_SCORES = {"covering_rate": _covering_rate, "partial_log_likelihood": _partial_log_likelihood,
           "approximated_accuracy": _approximated_accuracy}


#: the constraints of the one view interface (:mod:`plcore_deep._views`, ``"auto"`` and its
#: ``VIEWS``) that every learner with views declares: PiCO, ALIM, ABLE, DIRK, CRDPLL
VIEW_CONSTRAINTS = {"noise_scale": [Interval(Real, 0, None, closed="left")],
                    "augmentation": [StrOptions({"auto", "identity", "gaussian", "image", "strong"})]}


class DeepLearner(BaseLearner):
    """What every deep learner shares; a subclass sets ``_method`` (``"<family>:<Class>"``, a
    :class:`~plcore_deep._methods.Method` in ``plcore_deep._<family>``); its own parameters,
    which are its method's, and their defaults are its record's in
    :data:`plcore_deep.plugin.METHODS`, which makes its constructor (the parameters below,
    :data:`plcore_deep.plugin.SHARED`, follow them).

    Parameters
    ----------
    network : {"mlp", "lenet", "resnet18", "wrn28_2", "resnet32"}, default="mlp"
        ``"lenet"``: LeNet-5 for rows of square one-channel images (784 pixels: 28 x 28, e.g.
        ``dataset=fashion-mnist``); ``"resnet18"``, ``"wrn28_2"``, ``"resnet32"``: the CIFAR
        backbones (:mod:`plcore_deep._image_networks`) for rows of colour images in ``[0, 1]``
        (``dataset=cifar10``, with ``preprocessing=none``); ``hidden_layer_sizes`` and
        ``batch_norm`` shape the MLP only.
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
    lr_schedule : {"constant", "one_cycle", "cosine"}, default="constant"
        ``"one_cycle"``: PyTorch's ``OneCycleLR`` up to ``learning_rate``, stepped per batch;
        ``"cosine"``: PiCO's cosine decay per epoch down to ``learning_rate / 1000``.
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
    n_threads : int or "auto", default="auto"
        PyTorch's CPU threads during the fit. ``"auto"``: one thread when a training step is
        small (below ``plcore_deep._threads.SMALL_STEP_FLOPS``, as the tabular networks' steps
        are: more threads do not shorten them, and two fits side by side would fight over the
        cores), else the cores this process may use (its affinity, capped by
        ``OMP_NUM_THREADS``). The count used is ``n_threads_``.
    random_state : int, RandomState or None, default=None
    """

    _method = ""
    #: whether the method trains many configurations together (``Method.stacks``; the tag
    #: ``path_params`` and :meth:`fit_path`); checked against the method by the plugin's tests
    _stacks = False

    _parameter_constraints = {
        "network": [StrOptions({"mlp", "lenet", "resnet18", "wrn28_2", "resnet32"})],
        "hidden_layer_sizes": ["array-like"],
        "batch_norm": ["boolean"],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "optimizer": [StrOptions({"adam", "sgd"})],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "lr_schedule": [StrOptions({"constant", "one_cycle", "cosine"})],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "scoring": [StrOptions(set(_SCORES))],
        "device": [str],
        "n_threads": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    __init__ = _constructor(_plugin.SHARED, "DeepLearner")

    def __init_subclass__(cls, **kwargs):
        """A learner that a record of :data:`plcore_deep.plugin.METHODS` names gets its
        constructor from it: the record's own parameters, then the shared ones. A class with an
        ``__init__`` of its own, or one that no record names, keeps what it has."""
        super().__init_subclass__(**kwargs)
        path = f"{cls.__module__}:{cls.__qualname__}"
        own = next((m.params for m in _plugin.METHODS if _plugin.LEARNER_OPTIONS[m.name] == path), None)
        if own is not None and "__init__" not in cls.__dict__:
            cls.__init__ = _constructor({**own, **_plugin.SHARED}, cls.__qualname__)

    def _method_params(self) -> dict:
        """The method's constructor arguments: the learner's own parameters (those beyond the loop's)."""
        return {name: getattr(self, name) for name in self._get_param_names() if name not in _plugin.SHARED}

    def _make_method(self):
        """The method ``_method`` names (``"<family>:<Class>"``, the class in
        ``plcore_deep._<family>``), built from :meth:`_method_params`."""
        family, name = self._method.split(":")
        return getattr(importlib.import_module(f"plcore_deep._{family}"), name)(**self._method_params())

    def _loop_config(self, X, *, early_stopping=None):
        """The loop's settings (:class:`plcore_deep._loop.LoopConfig`) for a fit on ``X``."""
        from plcore_deep import _loop, _networks

        from plcore_deep._image_networks import IMAGE_NETWORKS, image_shape

        try:
            if self.network == "lenet":
                _networks.lenet_side(X.shape[1])
            elif self.network in IMAGE_NETWORKS:
                image_shape(X.shape[1])
        except ValueError as err:
            raise InvalidParameterError(str(err) if self.network == "lenet" else f"network={self.network!r}: {err}") \
                from None
        return _loop.LoopConfig(
            hidden_layer_sizes=self._hidden(), n_epochs=int(self.n_epochs), batch_size=self.batch_size,
            learning_rate=float(self.learning_rate), weight_decay=float(self.weight_decay), optimizer=self.optimizer,
            momentum=float(self.momentum),
            early_stopping=bool(self.early_stopping if early_stopping is None else early_stopping),
            validation_fraction=float(self.validation_fraction), n_iter_no_change=int(self.n_iter_no_change),
            tol=float(self.tol), score=_SCORES[self.scoring], device=_networks.resolve_device(self.device),
            seed=int(check_random_state(self.random_state).randint(2**31 - 1)), batch_norm=bool(self.batch_norm),
            lr_schedule=self.lr_schedule, network=self.network)

    def _hidden(self) -> tuple:
        try:
            sizes = np.asarray(self.hidden_layer_sizes, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            sizes = np.array([np.nan])
        if not np.all(np.isfinite(sizes)) or np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
            raise InvalidParameterError("hidden_layer_sizes must be a list of positive integer widths "
                                        f"(() for the linear model), got {self.hidden_layer_sizes!r}")
        return tuple(int(h) for h in sizes)

    def _threads(self, config, X, S, n_models: int = 1):
        """The context that sets PyTorch's CPU threads for a fit of ``n_models`` networks
        together (``n_threads_``; on CUDA the CPU threads are left as they are)."""
        from plcore_deep import _loop, _threads

        self.n_threads_ = None
        if config.device.type != "cpu":
            return contextlib.nullcontext()
        flops = _loop.plan(config, X.shape[0], X.shape[1], S.shape[1]).step_flops * n_models
        self.n_threads_ = _threads.choose_threads(self.n_threads, flops)
        return _threads.torch_threads(self.n_threads_)

    def _train(self, X, S, *, early_stopping=None, on_epoch=None):
        """One run of the shared loop with this learner's method and settings (``on_epoch``:
        :func:`plcore_deep._loop.train`'s per-epoch hook ``on_epoch(epoch, network)``)."""
        from plcore_deep import _loop

        config = self._loop_config(X, early_stopping=early_stopping)
        with self._threads(config, X, S):
            return _loop.train(X, S, self._make_method(), config, iterations=iterations,
                               desc=type(self).__name__.removesuffix("Learner"), on_epoch=on_epoch)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.epoch_checkpoints = True
        if self._stacks:
            tags.pll_tags.path_params = ("learning_rate", "weight_decay")
        return tags

    def fit_path(self, X, y, points):
        """One fitted learner per ``{learning_rate, weight_decay}`` dict of ``points`` (tag
        ``path_params``), trained together as one batched network
        (:func:`plcore_deep._stacked.train_stacked`): each predicts as
        ``clone(self).set_params(**point).fit(X, y)`` does, to float tolerance, when
        ``random_state`` fixes the seed (every point starts from the same weights and sees the
        same batches). Where stacking would be slower (a CPU and a step of arithmetic,
        :func:`plcore_deep._stacked.stacking_pays`), each point is that fit, one at a time."""
        from plcore_deep import _stacked

        unknown = sorted({p for point in points for p in point} - set(_stacked.STACKED_PARAMS))
        if unknown:
            raise ValueError(f"{type(self).__name__}.fit_path searches {' and '.join(_stacked.STACKED_PARAMS)} "
                             f"only, got {', '.join(unknown)}")
        fitted = [clone(self).set_params(**point) for point in points]
        for learner in fitted:
            validate_params(learner)
        base = clone(self)
        X_valid, S = base._validate_fit(X, y)
        config = base._loop_config(X_valid)
        if not _stacked.stacking_pays(config, S.shape[0], X_valid.shape[1], S.shape[1]):
            return [learner.fit(X, y) for learner in fitted]
        with base._threads(config, X_valid, S, n_models=len(points)):
            results = _stacked.train_stacked(X_valid, S, base._make_method(), config, points, iterations=iterations,
                                             desc=f"{type(self).__name__.removesuffix('Learner')} x {len(points)}")
        for learner, result in zip(fitted, results):
            learner._validate_fit(X, y)
            learner._set_result(result, X_valid, S)
            learner.n_threads_ = base.n_threads_
        return fitted

    def fit(self, X, y, *, on_epoch=None):
        """Fit on features ``X`` and labels / candidate matrix ``y``; return self.

        ``on_epoch(epoch, self)``, when given, is called after every epoch (``epoch`` from 0)
        with ``predict`` and ``predict_proba`` answering with that epoch's network (the tag
        ``epoch_checkpoints``, :mod:`plcore.tags`); every epoch then runs (``early_stopping`` is
        not used) and the fitted network is the last epoch's."""
        X, S = self._validate_fit(X, y)
        self._fit(X, S, on_epoch=on_epoch)
        return self

    def _fit(self, X, S, on_epoch=None):
        hook = None
        if on_epoch is not None:
            def hook(epoch, network):
                self.network_ = network       # the network in training, in eval mode (see _loop.train)
                on_epoch(epoch, self)
        result = self._train(X, S, early_stopping=False if on_epoch is not None else None, on_epoch=hook)
        self._set_result(result, X, S)
        return result

    def _set_result(self, result, X, S) -> None:
        """The fitted attributes from a :class:`plcore_deep._loop.Result`."""
        self.network_ = result.model
        self._architecture = {"network": self.network, "n_features": int(X.shape[1]), "n_classes": int(S.shape[1]),
                              "hidden_layer_sizes": list(self._hidden()), "batch_norm": bool(self.batch_norm)}
        self.confidences_ = result.confidences
        self.loss_curve_ = result.loss_curve
        self.validation_scores_ = result.validation_scores
        self.best_epoch_ = result.best_epoch
        self.n_epochs_ = result.n_epochs

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the fitted network stays a module
        if state.get("_architecture") and "network_" in state and not isinstance(state["network_"], dict):
            from plcore_deep import _networks

            state["network_"] = _networks.network_state(state["network_"], state["_architecture"])
        return state

    def __setstate__(self, state):
        if isinstance(state.get("network_"), dict):
            from plcore_deep import _networks

            state = {**state, "network_": _networks.network_from_state(state["network_"])}
        super().__setstate__(state)

    def _scores(self, X):
        """The network's outputs (logits), shape (n, q)."""
        from plcore_deep import _networks

        return _networks.predict_logits(self.network_, X, _networks.resolve_device(self.device))

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

