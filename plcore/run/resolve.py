"""The effective run, decided once before any tracking starts: the components instantiated from the
composed config (:func:`build_setup`), every parameter and data limit checked, the data set loaded and
the protocol's parameters completed (:func:`resolve_run`)."""

from __future__ import annotations

import copy
import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Any

from plcore.exceptions import ConfigError, PlcoreError
from plcore.registry import ProtocolSpec, Registry, get_registry

__all__ = ["OPTIONAL_KINDS", "ResolvedRun", "build_setup", "describe_setup", "resolve_run", "run_name"]

#: settings that do not change what a run computes: left out of its key (:meth:`ResolvedRun.key`)
_NOT_IN_KEY = frozenset({"tracking", "progress", "resume", "report", "hydra", "n_jobs", "n_threads"})

#: the kinds a run may leave out (``+learner=``, ...; each has a ``none`` option)
OPTIONAL_KINDS = ("learner", "reducer", "clusterer", "bags")


def _instantiate_estimator(node, seed):
    from omegaconf import OmegaConf

    if node is None:
        return None
    cfg = OmegaConf.to_container(node, resolve=True) if not isinstance(node, dict) else dict(node)
    if not cfg:  # the "none" option
        return None
    est = _instantiate_plain(cfg, what=f"component {cfg.get('_target_', '?')}", _convert_="all")
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=seed)
    return est


def _instantiate_plain(node, *, what: str, **kwargs):
    """``hydra.utils.instantiate`` whose plcore errors surface as themselves (one line, exit 2)
    instead of Hydra's multi-line ``InstantiationException`` block."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node, **kwargs)
    except InstantiationException as err:
        cause = err.__cause__
        if isinstance(cause, PlcoreError):
            raise cause from None
        if isinstance(cause, (ValueError, TypeError, OSError)):
            raise ConfigError(f"could not create the {what}: {type(cause).__name__}: {cause}") from None
        raise


def _named_estimator(node, registry: Registry, seed, *, seed_inner: bool = True):
    """A meta-learner's (or a bag generator's) node whose ``estimator`` names a registered learner
    (``+learner=conformal_sets learner.estimator=plknn``, ``bags=instance_dependent bags.estimator=cc``):
    that learner's config node in its place,
    seeded like the run's components (``seed_inner=False``: left unseeded, for a bag generator that
    seeds its helper from each repetition's seed); any other node as it is."""
    from omegaconf import OmegaConf

    if node is None or not isinstance(node.get("estimator"), str):
        return node
    cfg = OmegaConf.to_container(node, resolve=True) if not isinstance(node, dict) else dict(node)
    inner = registry.get("learner", cfg["estimator"]).config()
    if seed_inner and "random_state" in inner and inner["random_state"] is None:
        inner["random_state"] = seed
    return {**cfg, "estimator": inner}


def build_setup(cfg, registry: Registry | None = None):
    """Instantiate the run's components from the composed config."""
    from plcore.run.protocols import Setup

    registry = registry or get_registry()
    seed = cfg.get("seed", 0)
    setup = Setup(
        learner=_instantiate_estimator(_named_estimator(cfg.get("learner"), registry, seed), seed),
        reducer=_instantiate_estimator(cfg.get("reducer"), seed),
        clusterer=_instantiate_estimator(cfg.get("clusterer"), seed),
        bags=_instantiate_estimator(_named_estimator(cfg.get("bags"), registry, seed, seed_inner=False), seed),
    )
    if setup.bags is not None and setup.bags.get_params(deep=False).get("random_state") not in (None, seed):
        raise ConfigError("bags.random_state is not used: every protocol draws candidate sets with seeds derived "
                          f"from seed (now {seed}); set seed=... instead")
    if setup.learner is None and setup.clusterer is None:
        setup.learner = _instantiate_estimator(registry.get("learner", "plknn").config(), seed)
    return setup


def describe_setup(setup) -> str:
    parts = [f"{k}={v!r}" for k, v in vars(setup).items() if v is not None and k != "bags"]
    return " ".join(parts)


def run_name(setup, dataset, pname: str, registry: Registry | None = None) -> str:
    """``<reducer>+<learner or clusterer> · <data set> · <protocol>``, components by option name."""
    registry = registry or get_registry()
    parts = []
    for kind in ("reducer", "learner", "clusterer"):
        est = getattr(setup, kind)
        if est is not None:
            comp = registry.component_of(est, kind)
            parts.append(comp.name if comp is not None else type(est).__name__)
    return f"{'+'.join(parts)} · {dataset.name} · {pname}"



@dataclass
class ResolvedRun:
    """The effective run, decided once by :func:`resolve_run`.

    ``cfg`` the composed config as it runs, ``spec`` the protocol's
    :class:`~plcore.registry.ProtocolSpec`, ``setup`` the components
    (:class:`~plcore.run.protocols.Setup`), ``dataset`` the loaded data set and ``params``
    the protocol's keyword arguments.
    """

    cfg: Any
    spec: ProtocolSpec
    setup: Any
    dataset: Any
    params: dict
    audit: Any = None  # the candidate sets' CandidateAudit (plcore.data), logged with the data set

    def key(self) -> str:
        """A digest of the resolved settings and the data's fingerprint (candidate sets included):
        two runs with the same key compute the same thing. Settings that change only how a run
        is carried out (tracking, progress, ``n_jobs``, a deep learner's ``n_threads``, reports)
        are left out."""
        from omegaconf import OmegaConf

        def keep(node):
            if isinstance(node, dict):
                return {k: keep(v) for k, v in node.items() if k not in _NOT_IN_KEY}
            if isinstance(node, list):
                return [keep(v) for v in node]
            return node

        settings = keep(OmegaConf.to_container(self.cfg, resolve=True))
        blob = json.dumps({"settings": settings, "data": self.dataset.fingerprint()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _refuse_sets_read_as_labels(dataset, separator) -> None:
    """``clean`` on a label column whose values hold the set separator (``a;b``): those are
    candidate sets read as classes of their own, so the command is refused, naming the option."""
    from plcore.datasets.loaders.table import sets_read_as_labels

    joined = sets_read_as_labels(dataset, separator)
    if joined:
        raise ConfigError(f"data set {dataset.name!r}: {len(joined)} of the {dataset.n_classes} labels of its label "
                          f"column hold {separator!r} (e.g. {joined[0]!r}): they look like candidate sets; name that "
                          "column with dataset.candidate_column=NAME")


def resolve_run(cfg, registry: Registry | None = None) -> ResolvedRun:
    """The effective run, decided once (:class:`ResolvedRun`).

    ``cfg`` is a copy of the composed config that holds exactly what runs: the built-in
    PL-KNN where neither a learner nor a clusterer was given, no ``bags`` node where the
    generator does not apply to the data (:func:`plcore.run.protocols.bags_apply`), and the
    protocol's parameters completed with its defaults. ``params`` are the protocol's keyword
    arguments. Every component's parameters are checked here (before any tracking starts), and the
    protocol's output files before the data are loaded (``check_outputs``).
    """
    from omegaconf import OmegaConf, open_dict

    from plcore.run.protocols import apply_bags, bags_apply
    from plcore.validation import check_data_limits, validate_params

    registry = registry or get_registry()
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        if not cfg.get("learner") and not cfg.get("clusterer"):  # documented fallback: the built-in PL-KNN
            cfg.learner = registry.get("learner", "plknn").config()
    pcfg = OmegaConf.to_container(cfg.protocol, resolve=True)
    pname = pcfg.pop("name")
    spec = registry.get("protocol", pname).spec.cls
    unknown = sorted(set(pcfg) - set(spec.defaults))
    if unknown:
        raise ConfigError(f"protocol {pname!r} has no parameter(s) {', '.join(unknown)}; "
                          f"its parameters: {', '.join(spec.defaults)}")
    params = {**spec.defaults, **pcfg}
    spec.validate(params)
    if spec.check_outputs is not None:  # before anything is loaded or fitted
        spec.check_outputs(params, [cfg.dataset.get("name_or_path")] if cfg.get("dataset") else [])
    setup = build_setup(cfg, registry)
    for kind in OPTIONAL_KINDS:
        if getattr(setup, kind) is not None:
            validate_params(getattr(setup, kind))
    if getattr(setup, spec.needs) is None:
        raise ConfigError(f"protocol {pname!r} needs a {spec.needs} (e.g. +{spec.needs}="
                          f"{'plc' if spec.needs == 'clusterer' else 'plknn'})")
    if spec.check_setup is not None:
        spec.check_setup(params, setup)
    with warnings.catch_warnings(record=True) as said:  # replayed below, unless a refusal says it better
        warnings.simplefilter("always")
        try:
            dataset, failure = _instantiate_plain(cfg.dataset, what="data set"), None
        except Exception as err:  # noqa: BLE001 - raised again below, after the warnings that led to it
            dataset, failure = None, err
    if failure is None and pname == "clean" and not dataset.is_partial:
        _refuse_sets_read_as_labels(dataset, cfg.dataset.get("separator", ";"))
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if failure is not None:
        raise failure
    if dataset.meta.get("classes_left_out"):
        print(f"note: dataset.class_coverage={cfg.dataset.class_coverage} keeps {dataset.n_classes} classes "
              f"and {dataset.n_samples} rows; label columns left out: {', '.join(dataset.meta['classes_left_out'])}")
    if not dataset.is_partial and setup.bags is None:
        raise ConfigError(f"data set {dataset.name!r} has exact labels only: name its candidate sets "
                          "(dataset.candidate_column=NAME for a table) or choose a bag generator (e.g. bags=uniform) "
                          "to draw them")
    if dataset.y_true is None and not spec.label_free_keys:
        raise ConfigError(f"data set {dataset.name!r} has no true labels, and protocol {pname!r} evaluates against "
                          "them (protocol=kfold or holdout estimate a model label-free; a CSV or Parquet file names "
                          "the true labels' column with dataset.label_column)")
    if dataset.y_true is None and pname == "clean":
        print(f"note: data set {dataset.name!r} has no true labels: the cleaned labels are written, not scored",
              flush=True)
    elif dataset.y_true is None:
        print(f"note: data set {dataset.name!r} has no true labels: no accuracy is measured; the {pname} folds "
              "estimate the model label-free (covering rate and approximated accuracy of the held-out candidate "
              "sets)", flush=True)
    features = dataset.meta.get("features")
    if features is not None and features.nominal_:
        print("note: nominal feature columns one-hot encoded: " + ", ".join(
            f"{n} ({len(c)} categories)" for n, c in zip(features.nominal_, features.categories_)), flush=True)
    spec.validate(params, dataset)
    for kind in ("learner", "reducer", "clusterer"):  # k, n_clusters, n_features, ... against the data's shape
        if getattr(setup, kind) is not None:
            check_data_limits(getattr(setup, kind), n_samples=dataset.n_samples, n_features=dataset.n_features,
                              n_classes=dataset.n_classes)
    if "select" in params:  # nested selection: settings and search space checked (and logged) as used
        from plcore.run.selection import check_select

        params["select"] = check_select(params["select"], setup, registry)
    with open_dict(cfg):
        cfg.protocol = {"name": pname, **params}
        if setup.bags is not None and not (spec.uses_bags and bags_apply(dataset, setup.bags)):
            why = (f"{dataset.name} has its own candidate sets" if spec.uses_bags
                   else f"protocol {pname!r} uses no bag generator")
            print(f"note: {why}; bags={type(setup.bags).__name__} not applied")
            setup.bags = None
            cfg.pop("bags")  # log exactly what ran: no bag parameters
        for kind in ("learner", "reducer", "clusterer"):  # random_state as used: the seed where it was None
            node, est = cfg.get(kind), getattr(setup, kind)
            if node and est is not None and "random_state" in node and node.random_state is None:
                node.random_state = est.get_params(deep=False)["random_state"]
        if cfg.get("bags") and "random_state" in cfg.bags:  # the protocol seeds every draw of candidate sets
            cfg.bags.pop("random_state")
    # one draw now, so that bad bag settings (r >= q - 1) fail before tracking; audited and logged
    drawn = apply_bags(dataset, setup.bags, cfg.seed) if setup.bags is not None else dataset
    audit = drawn.candidate_audit()
    audit.require_informative(repr(setup.bags) if setup.bags is not None else f"data set {dataset.name!r}")
    return ResolvedRun(cfg, spec, setup, dataset, params, audit)

