"""What a plugin declares: a component (:class:`ComponentSpec`) and, for a protocol, everything
the app needs to run it (:class:`ProtocolSpec`). Imports nothing heavy."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from plcore.exceptions import PluginError

__all__ = ["ComponentSpec", "ProtocolSpec", "ESTIMATOR_KINDS", "COMPONENT_KINDS", "METHOD_KINDS"]

#: kinds whose components are estimator classes (checked against :data:`plcore.base.KINDS`)
ESTIMATOR_KINDS = ("learner", "reducer", "clusterer", "bags")
#: the kinds a method is made of, in pipeline order (a run's name and the comparison's rows)
METHOD_KINDS = ("reducer", "learner", "clusterer")
#: every kind a component may have
COMPONENT_KINDS = ESTIMATOR_KINDS + ("preprocessor", "dataset", "protocol")


def _import_path(path: str):
    """The object named by ``"package.module:attribute"`` (attributes may be dotted; a dict
    along the way is indexed by the next name)."""
    module, _, attrs = path.partition(":")
    obj = importlib.import_module(module)
    for part in attrs.split(".") if attrs else ():
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


class ComponentSpec:
    """What a plugin declares for one component.

    A component is declared **lazily** by naming its class as ``"module:QualName"``
    together with its ``config`` node and one-line ``description``: then listing
    (``python -m plcore list``), ``--help`` and composing a run import nothing of it;
    the class is imported the first time :attr:`cls` is read (to instantiate it). The
    common conformance test (:func:`plcore.testing.check_declared_config`) checks that the
    declared node equals the class's defaults, value by value. A value the Hydra config sets
    differently on purpose is declared once, in ``config_overrides``. Passing the class itself
    still works (it is then imported with the plugin).

    Parameters
    ----------
    kind : {"learner", "reducer", "clusterer", "bags", "preprocessor", "dataset", "protocol"}
    name : str
        Option name on the command line (``+learner=<name>``, ``protocol.preprocessing=<name>``):
        lower case.
    display_name : str, optional
        The method's name as a paper prints it (``PL-KNN``, ``Avg Pegasos``), used where results
        name methods: the comparison's tables and critical-difference diagram. Default: ``name``.
    cls : type, callable or str
        The estimator class (a subclass of the kind's base class); for ``preprocessor`` a
        scikit-learn transformer class (created with its defaults, fitted on training rows);
        for ``dataset`` the loader function; for ``protocol`` a
        :class:`plcore.run.protocols.ProtocolSpec`. Or its import path ``"module:QualName"``.
    config : dict, optional
        The constructor's parameters and their defaults, exactly as the class declares them
        (``_target_`` is added from ``cls``). Default for a class given as an object:
        ``cls().get_params(deep=False)``. Required for an estimator given by its import path.
    config_overrides : dict, optional
        ``{parameter: value}`` that the Hydra config sets differently from the constructor's
        default, on purpose (``bags=uniform`` composes ``r: 3``, the papers' protocol, while
        ``UniformBags()`` keeps ``r=1``): the composed node is ``{**config, **config_overrides}``.
        The one place such a difference is written; any other difference fails the check.
    description : str, optional
        One line for listings (default: first line of the docstring; required for a
        component given by its import path).
    prequential : callable or str, optional
        Online learners only: a compiled predict-then-update kernel
        ``prequential(learner, X, S, classes) -> predictions`` (or its import path) that the
        ``online`` protocol uses instead of its per-example ``predict`` + ``partial_fit``
        loop. It must give the loop's predictions (the conformance suite checks it).
    test_params : dict, optional
        Constructor parameters of the instance the common conformance test
        (:func:`plcore.testing.parametrize_with_registry`) checks: small and fast settings
        (default: the class defaults).
    expected_failed_checks : dict, optional
        ``{check_name: reason}`` of conformance checks known to fail for this component.
    search_space : dict, optional
        ``{parameter: [values]}``: the hyperparameter grid of the method's paper, searched by
        nested selection (``protocol.select``) when the user gives no space: by
        ``method=grid`` and ``oracle``, and by ``method=random`` where the component declares no
        ``search_distributions``.
    search_distributions : dict, optional
        ``{parameter: [values] or {distribution: [a, b]}}``: what ``protocol.select.method=random``
        draws from when the user gives no space, e.g. PLENCH's ``{"learning_rate":
        {"log10_uniform": [-4.5, -2.5]}}`` (10**U(-4.5, -2.5)); a list is drawn from uniformly.
        Plain data; the vocabulary is :data:`plcore.utils.distributions.DISTRIBUTIONS`, checked
        here (a bad spec fails the plugin's load in one line).
    leaderboard : bool or dict, optional
        How the component joins the leaderboard (:mod:`plcore.leaderboard`; every learner,
        reducer and clusterer joins by default): ``False`` opts out; ``{"na": {data set: reason}}``
        declares data sets it cannot run (shown, and ranked as failures: never an advantage);
        ``{"track": name}`` puts it in another track.
    leaderboard_revision : int, optional
        Bumped by the author when the component's results change while its spec does not (a
        fixed bug): the leaderboard keys results by it and by the spec's hash (default 1).
    """

    def __init__(self, kind: str, name: str, cls: Any, config: dict | None = None,
                 description: str | None = None, prequential: Any = None, test_params: dict | None = None,
                 expected_failed_checks: dict | None = None, search_space: dict | None = None,
                 config_overrides: dict | None = None, display_name: str | None = None,
                 search_distributions: dict | None = None, leaderboard: bool | dict | None = None,
                 leaderboard_revision: int = 1):
        self.kind, self.name = kind, name
        self.display_name = name if display_name is None else display_name
        self._cls, self._prequential = cls, prequential
        self.config, self.description = config, description
        self.config_overrides = dict(config_overrides or {})
        self.test_params, self.expected_failed_checks = test_params, expected_failed_checks
        self.search_space = search_space
        self.search_distributions = _checked_distributions(kind, name, search_distributions)
        self.leaderboard = _checked_leaderboard(kind, name, leaderboard)
        if (isinstance(leaderboard_revision, bool) or not isinstance(leaderboard_revision, int)
                or leaderboard_revision < 1):
            raise PluginError(f"{kind} {name!r}: leaderboard_revision must be a positive integer, got "
                              f"{leaderboard_revision!r}")
        self.leaderboard_revision = leaderboard_revision

    def __repr__(self):
        return f"ComponentSpec(kind={self.kind!r}, name={self.name!r}, cls={self.target!r})"

    @property
    def lazy(self) -> bool:
        """Whether the class is still only named by its import path."""
        return isinstance(self._cls, str)

    @property
    def target(self) -> str:
        """``module.QualName`` of the class, without importing it."""
        if isinstance(self._cls, str):
            return self._cls.replace(":", ".")
        return f"{getattr(self._cls, '__module__', '?')}.{getattr(self._cls, '__qualname__', repr(self._cls))}"

    @property
    def cls(self):
        """The class (imported on first access when declared by its import path)."""
        if isinstance(self._cls, str):
            try:
                obj = _import_path(self._cls)
            except Exception as err:  # noqa: BLE001 - one line naming the component
                raise PluginError(f"{self.kind} {self.name!r} names {self._cls!r}, which cannot be imported: "
                                  f"{type(err).__name__}: {err}") from err
            if self.kind in ESTIMATOR_KINDS:
                from plcore.base import KINDS

                if not (isinstance(obj, type) and issubclass(obj, KINDS[self.kind])):
                    raise PluginError(f"{self.kind} {self.name!r} names {self._cls!r}, which does not subclass "
                                      f"plcore.base.{KINDS[self.kind].__name__}")
            self._cls = obj
        return self._cls

    @cls.setter
    def cls(self, value):
        self._cls = value

    @property
    def prequential(self):
        """The prequential kernel (imported on first access when declared by its import path)."""
        if isinstance(self._prequential, str):
            self._prequential = _import_path(self._prequential)
        return self._prequential

    @prequential.setter
    def prequential(self, value):
        self._prequential = value

    def matches(self, cls) -> bool:
        """Whether this component is exactly ``cls``; imports the declared class only where
        its name matches (so asking about one estimator loads no other plugin's module)."""
        if isinstance(self._cls, str) and self._cls.partition(":")[2] != getattr(cls, "__qualname__", None):
            return False
        try:
            return self.cls is cls
        except PluginError:
            return False


def _checked_leaderboard(kind: str, name: str, value):
    """``value`` if it is None, a bool or ``{"na": {data set: reason}, "track": name}``; else one-line PluginError."""
    if value is None or isinstance(value, bool):
        return value
    ok = isinstance(value, dict) and set(value) <= {"na", "track"}
    ok = ok and isinstance(value.get("na", {}), dict) and all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.get("na", {}).items())
    ok = ok and isinstance(value.get("track", ""), str)
    if not ok:
        raise PluginError(f"{kind} {name!r}: leaderboard must be False, or a dict with 'na' ({{data set: reason}}) "
                          f"and/or 'track' (a name), got {value!r}")
    return value


def _checked_distributions(kind: str, name: str, space: dict | None) -> dict | None:
    """``space`` if every value is a non-empty list or a spec of the vocabulary; else one-line PluginError."""
    from plcore.utils.distributions import check_distribution, is_distribution

    for param, value in (space or {}).items():
        try:
            if is_distribution(value):
                check_distribution(value)
            elif not isinstance(value, (list, tuple)) or not value:
                raise ValueError(f"must be a non-empty list or a distribution, got {value!r}")
        except ValueError as err:
            raise PluginError(f"{kind} {name!r}: search_distributions[{param!r}]: {err}") from None
    return space


@dataclass(frozen=True)
class ProtocolSpec:
    """Everything the app needs to know about a protocol, in one place.

    Parameters
    ----------
    name : str
        ``protocol=<name>`` on the command line.
    function : callable
        ``function(setup, dataset, *, random_state, progress, callback, **params) -> ProtocolResult``.
    defaults : dict
        The protocol's parameters and their defaults (its Hydra config node, less ``name``).
    summary_keys : tuple of str
        The public summary metrics, the first one being the run's headline figure.
    label_free_keys : tuple of str
        The summary metrics of a run on data without true labels (label-free estimates, the
        first one its headline); empty where the protocol needs true labels.
    needs : {"learner", "clusterer"}
        The component the protocol evaluates.
    uses_bags : bool
        Whether candidate sets may come from a bag generator (see :func:`bags_apply`).
    step_name : str
        What one step is (``fold``, ``repeat``, ``run``, ``partition``): per-step metrics are
        logged as ``<step_name>/<metric>``.
    count_param : str, optional
        The parameter holding the number of steps (for progress lines).
    constraints : dict
        scikit-learn style constraints of the parameters (:mod:`plcore.validation`), checked
        by :meth:`validate` before a run starts.
    check_data : callable, optional
        ``check_data(params, dataset)``: checks that depend on the data (``n_splits <= n``).
    check_setup : callable, optional
        ``check_setup(params, setup)``: checks that depend on the run's components (a learner
        that declares no search space for ``n_draws > 1``), made before the run starts.
    check_outputs : callable, optional
        ``check_outputs(params, inputs)``: the files the run writes (``out=``), resolved and
        checked before the data are loaded or a model fitted; ``inputs`` are the files the run
        reads (its data file), which no output may be.
    """

    name: str
    function: Callable
    defaults: dict
    summary_keys: tuple
    label_free_keys: tuple = ()
    needs: str = "learner"
    uses_bags: bool = True
    step_name: str = "step"
    count_param: str | None = None
    constraints: dict = field(default_factory=dict)
    check_data: Callable | None = None
    check_setup: Callable | None = None
    check_outputs: Callable | None = None

    def config(self) -> dict:
        """The Hydra config node: ``{"name": name, **defaults}``."""
        return {"name": self.name, **self.defaults}

    def validate(self, params: dict, dataset=None) -> None:
        """Check ``params`` (and, given a data set, the data-dependent rules); raise one line."""
        from sklearn.utils._param_validation import validate_parameter_constraints

        from plcore.exceptions import InvalidParameterError

        try:
            validate_parameter_constraints(self.constraints, params, caller_name=f"protocol {self.name}")
        except ValueError as err:  # scikit-learn's InvalidParameterError
            raise InvalidParameterError(str(err)) from None
        if dataset is not None and self.check_data is not None:
            self.check_data(params, dataset)

    def headline_key(self, summary) -> str:
        """The run's headline metric: the first summary key (or, for a run without true labels,
        label-free key) that ``summary`` holds; the first summary key where it holds none."""
        return next((k for k in (*self.summary_keys, *self.label_free_keys) if k in summary), self.summary_keys[0])

    def summary_line(self, summary: dict) -> str:
        """``key=value`` for each summary key present (the label-free ones where no summary key
        is), 4 decimals."""
        keys = [k for k in self.summary_keys if k in summary] or [k for k in self.label_free_keys if k in summary]
        return " ".join(f"{k}={summary[k]:.4f}" for k in keys)
