"""The Hydra application behind ``python -m plcore``.

Composition rules:

* ``dataset``, ``bags``, ``protocol`` and ``tracking`` are in the primary defaults and are
  switched with ``dataset=lost``; ``learner``, ``reducer`` and ``clusterer`` are *added*
  with ``+learner=plknn`` (they are absent from the defaults so that ``+`` composes);
* with neither a learner nor a clusterer the run falls back to the built-in PL-KNN;
* every registered component (built-in or plugin) is an option of its kind's group, from
  the registry via Hydra's ConfigStore.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plcore.exceptions import ConfigError, PlcoreError, RunInterrupted
from plcore.registry import ProtocolSpec, Registry, get_registry

log = logging.getLogger("plcore")

__all__ = ["find_conf_dir", "store_configs", "build_setup", "ResolvedRun", "resolve_run", "run_job", "main"]

_OPTIONAL_KINDS = ("learner", "reducer", "clusterer", "bags")


def find_conf_dir() -> Path:
    """Primary config: ``plcore/conf`` in an installed wheel, else ``conf/`` of the checkout."""
    here = Path(__file__).resolve().parents[1]  # the plcore package
    for cand in (here / "conf", here.parent / "conf"):
        if (cand / "config.yaml").is_file():
            return cand
    raise PlcoreError(f"plcore's primary config not found (looked in {here / 'conf'} and {here.parent / 'conf'})")


def _share_config_store() -> None:
    """Make Hydra's copies of its config repository share the (process-wide) ConfigStore.

    Hydra deep-copies its repository -- and with it the whole ConfigStore, every component
    node and preset -- once per composition and once per config group listed by ``--help``
    (about 100 copies). Measured on 2 cores: ``--help`` 3.2 s -> 0.5 s, the default run
    0.1-0.2 s (tests/test_startup.py fails if Hydra changes what this relies on). The store is a singleton that no copy mutates
    (``CachingConfigRepository`` copies to re-initialise its *sources*), so the copies can
    share it: the output is unchanged (tests/test_app.py checks ``--help`` against a copying
    run). Idempotent; does nothing if Hydra's internals differ.
    """
    from hydra.core.config_store import ConfigStore
    from hydra.plugins.config_source import ConfigSource

    if getattr(ConfigSource, "_plcore_shares_store", False):
        return

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = value if isinstance(value, ConfigStore) else copy.deepcopy(value, memo)
        return new

    if "__deepcopy__" not in vars(ConfigSource):
        ConfigSource.__deepcopy__ = __deepcopy__
        ConfigSource._plcore_shares_store = True


def store_configs(registry: Registry) -> None:
    """Put every registered component into Hydra's ConfigStore under its kind."""
    from hydra.core.config_store import ConfigStore

    _share_config_store()
    cs = ConfigStore.instance()
    for kind in _OPTIONAL_KINDS:
        cs.store(group=kind, name="none", node={}, provider="plcore")
    for comp in registry.components.values():
        cs.store(group=comp.kind, name=comp.name, node=comp.config(), provider=comp.distribution)
    for name, node in registry.experiments.items():
        cs.store(group="experiment", name=name, node=node, package="_global_", provider="plugin")


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


def build_setup(cfg, registry: Registry | None = None):
    """Instantiate the run's components from the composed config."""
    from plcore.run.protocols import Setup

    registry = registry or get_registry()
    seed = cfg.get("seed", 0)
    setup = Setup(
        learner=_instantiate_estimator(cfg.get("learner"), seed),
        reducer=_instantiate_estimator(cfg.get("reducer"), seed),
        clusterer=_instantiate_estimator(cfg.get("clusterer"), seed),
        bags=_instantiate_estimator(cfg.get("bags"), seed),
    )
    if setup.bags is not None and setup.bags.get_params(deep=False).get("random_state") not in (None, seed):
        raise ConfigError("bags.random_state is not used: every protocol draws candidate sets with seeds derived "
                          f"from seed (now {seed}); set seed=... instead")
    if setup.learner is None and setup.clusterer is None:
        setup.learner = _instantiate_estimator(registry.get("learner", "plknn").config(), seed)
    return setup


def _describe(setup) -> str:
    parts = [f"{k}={v!r}" for k, v in vars(setup).items() if v is not None and k != "bags"]
    return " ".join(parts)


@contextmanager
def _signals_end_runs(job: "_JobState"):
    """SIGTERM (``timeout``, Slurm, Kubernetes) and SIGINT (Ctrl-C) raise
    :class:`RunInterrupted`, so the run ends KILLED with what was done (main thread only).

    The signal is also remembered in ``job``: a raise that lands where it is swallowed (a
    finaliser, a library's ``except BaseException``) is raised again at the next step
    (:meth:`_JobState.check`), so a signal is never lost.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        job.signum = signum
        raise RunInterrupted(signum)

    previous = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_job(cfg) -> float | None:
    """One Hydra job.

    A :class:`PlcoreError` prints one line and exits 2 (``PLCORE_FULL_ERROR=1``: traceback);
    SIGINT / SIGTERM print one line and exit with the signal's code (130 / 143); any other
    error (a component failing inside ``fit``) prints one line naming the FAILED run, whose
    traceback is its artifact, and exits 1 (``HYDRA_FULL_ERROR=1`` or ``PLCORE_FULL_ERROR=1``:
    the traceback here too). In a sweep the error is raised on, so the sweep goes on.
    """
    job = _JobState()
    try:
        with _signals_end_runs(job), _warnings_once_in_one_line():
            return _run_job(cfg, job)
    except PlcoreError as err:
        if os.environ.get("PLCORE_FULL_ERROR"):
            raise
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as err:
        signum = getattr(err, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        run = job.run
        where = (f"; run {run.run_id} ended KILLED with {job.steps} step(s) logged"
                 if run is not None and run.run_id is not None else "")
        print(f"interrupted by {name}{where}", file=sys.stderr, flush=True)
        sys.exit(128 + int(signum))
    except Exception as err:
        if os.environ.get("PLCORE_FULL_ERROR") or os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        run = job.run
        where = (f"; run {run.run_id} ended FAILED with the traceback as its artifact error/traceback.txt"
                 if run is not None and run.run_id is not None else "")
        text = " ".join(f"{type(err).__name__}: {err}".split())
        print(f"error: {text}{where} (HYDRA_FULL_ERROR=1 prints the traceback)", file=sys.stderr, flush=True)
        if _in_multirun():
            raise  # the launcher records the failed job and the sweep goes on
        sys.exit(1)


def _in_multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig

        mode = HydraConfig.get().mode
    except Exception:  # noqa: BLE001 - not inside a Hydra job
        return False
    return mode is not None and mode.name == "MULTIRUN"


@contextmanager
def _warnings_once_in_one_line():
    """During a job, each warning (category and text) is shown once, on one line
    (``warning: Category: text``): a method warning on every fold, or a library resetting
    Python's registry of shown warnings, does not repeat it."""
    import warnings

    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key not in seen:
            seen.add(key)
            text = " ".join(str(message).split())
            print(f"warning: {category.__name__}: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


@dataclass
class _JobState:
    """What one job has done so far, for the line printed when a signal stops it."""

    run: Any = None
    steps: int = 0
    signum: int | None = None  # a signal received (see _signals_end_runs)

    def check(self) -> None:
        """Raise :class:`RunInterrupted` again if a signal came and its first raise was lost."""
        if self.signum is not None:
            raise RunInterrupted(self.signum)


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


class _StepReporter:
    """Per-step callback: logs to the run and, off a terminal, prints one line per step."""

    def __init__(self, run, spec, params, label, job: _JobState):
        self.run, self.spec, self.label, self.job = run, spec, label, job
        self.total = params.get(spec.count_param) if spec.count_param else None
        self.quiet = sys.stderr.isatty()  # the progress bar shows it on a terminal
        self.t0 = time.perf_counter()
        self.done = 0

    def __call__(self, step: dict):
        self.job.check()
        self.run.log_step(step)
        self.done += 1
        self.job.steps = self.done
        if self.quiet:
            return
        head = self.spec.summary_keys[0].rsplit("_", 1)[0]
        value = step.get(head)
        shown = f" {head}={value:.4f}" if isinstance(value, (int, float)) else ""
        total = f" of {self.total}" if self.total and self.done <= self.total else ""  # stored splits may differ
        index = step.get("step", self.done - 1)  # the step as MLflow and the plots number it (from 0)
        print(f"[{self.label}] {self.spec.step_name} {index} ({self.done}{total} done){shown} "
              f"({time.perf_counter() - self.t0:.1f} s elapsed)", file=sys.stderr, flush=True)


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


def resolve_run(cfg, registry: Registry | None = None) -> ResolvedRun:
    """The effective run, decided once (:class:`ResolvedRun`).

    ``cfg`` is a copy of the composed config that holds exactly what runs: the built-in
    PL-KNN where neither a learner nor a clusterer was given, no ``bags`` node where the
    generator does not apply to the data (:func:`plcore.run.protocols.bags_apply`), and the
    protocol's parameters completed with its defaults. ``params`` are the protocol's keyword
    arguments. Every component's parameters are checked here (before any tracking starts).
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
    setup = build_setup(cfg, registry)
    for kind in _OPTIONAL_KINDS:
        if getattr(setup, kind) is not None:
            validate_params(getattr(setup, kind))
    if getattr(setup, spec.needs) is None:
        raise ConfigError(f"protocol {pname!r} needs a {spec.needs} (e.g. +{spec.needs}="
                          f"{'plc' if spec.needs == 'clusterer' else 'plknn'})")
    dataset = _instantiate_plain(cfg.dataset, what="data set")
    if dataset.meta.get("classes_left_out"):
        print(f"note: dataset.class_coverage={cfg.dataset.class_coverage} keeps {dataset.n_classes} classes "
              f"and {dataset.n_samples} rows; label columns left out: {', '.join(dataset.meta['classes_left_out'])}")
    if not dataset.is_partial and setup.bags is None:
        raise ConfigError(f"data set {dataset.name!r} has exact labels only: choose a bag generator "
                          "(e.g. bags=uniform) to create candidate sets")
    if dataset.y_true is None:
        raise ConfigError(f"data set {dataset.name!r} has no true labels: every protocol evaluates against them "
                          "(a CSV or Parquet file names their column with dataset.label_column)")
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


def _run_job(cfg, job: _JobState) -> float | None:
    """Load data, build components, run the protocol, track, print the summary."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from plcore import tracking

    registry = get_registry()
    tcfg = OmegaConf.to_container(cfg.tracking, resolve=True)
    if tcfg.get("enabled", False):  # a dead server or an unwritable store fails in seconds, before any work
        tracking.check_store(tcfg["tracking_uri"])
    resolved_run = resolve_run(cfg, registry)
    cfg, spec, setup, dataset, params = (resolved_run.cfg, resolved_run.spec, resolved_run.setup,
                                         resolved_run.dataset, resolved_run.params)
    pname = spec.name
    resolved = OmegaConf.to_container(cfg, resolve=True)
    tags = tracking.version_tags(registry)
    tags.update({"seed": str(cfg.seed), "dataset": dataset.name, "protocol": pname,
                 "host": socket.gethostname(), "pid": str(os.getpid()),  # which worker ran it (sweeps)
                 "mlflow.source.name": "python -m plcore", "mlflow.source.type": "LOCAL"})
    tags.update(tracking.git_provenance())
    try:
        hc = HydraConfig.get()
        tags["overrides"] = " ".join(hc.overrides.task) or "(none)"
        num = OmegaConf.select(hc, "job.num", default=None, throw_on_missing=False)
        if num is not None:
            tags["hydra.job.num"] = str(num)
        if hc.mode is not None and hc.mode.name == "MULTIRUN":
            tags["hydra.sweep.dir"] = str(hc.sweep.dir)
        tags["hydra.output_dir"] = str(hc.runtime.output_dir)
    except ValueError:  # not inside a Hydra job (e.g. called from Python)
        pass
    name = run_name(setup, dataset, pname, registry)
    if (params.get("select") or {}).get("method") == "oracle":  # never mistaken for a result
        name += " · ORACLE"
    source = ("its own candidate sets" if dataset.is_partial and setup.bags is None
              else f"candidate sets from {setup.bags!r}")
    print(f"{dataset.name}: n={dataset.n_samples} d={dataset.n_features} q={dataset.n_classes}, {source}; "
          f"protocol={pname}; {_describe(setup)}", flush=True)
    print(resolved_run.audit, flush=True)
    with tracking.start_run(tcfg, params=tracking.flatten(resolved), tags=tags,
                            config_yaml=OmegaConf.to_yaml(cfg, resolve=True), run_name=name,
                            step_name=spec.step_name, fallback_dir=tags.get("hydra.output_dir")) as run:
        job.run = run
        run.set_tag("dataset.fingerprint", dataset.fingerprint())
        run.log_dataset(dataset, resolved_run.audit)
        reporter = _StepReporter(run, spec, params, f"{pname} {dataset.name}", job)
        result = spec.function(setup, dataset, random_state=cfg.seed, progress=cfg.get("progress", True),
                               callback=reporter, **params)
        job.check()
        run.log_result(result)
    line = spec.summary_line(result.summary)
    if run.run_id is not None:
        print(f"mlflow run {run.run_id} ({tcfg['tracking_uri']})")
    print(line, flush=True)
    return result.summary.get(spec.summary_keys[0])


_OVERRIDE = re.compile(r"^[+~]{0,2}(learner|reducer|clusterer|bags|dataset|protocol|tracking)=(.+)$")


_COMPONENT_KINDS = ("learner", "reducer", "clusterer")
#: the primary config's top-level keys and groups (conf/config.yaml)
_TOP_LEVEL = frozenset({"seed", "progress", "dataset", "bags", "protocol", "tracking", "report", "experiment",
                        "learner", "reducer", "clusterer", "hydra"})
_SELECT = re.compile(r"^(\+{0,2})(learner|reducer|clusterer)=(.*)$")
_PARAM = re.compile(r"^(\+{0,2})(learner|reducer|clusterer|bags)\.([A-Za-z_][\w]*)(\S*?)=(.*)$")
_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--info", "-i", "--config-path", "-cp", "--config-name",
                     "-cn", "--config-dir", "-cd", "--experimental-rerun", "--shell-completion", "-sc"}


def _swept(value: str) -> bool:
    """Whether an override's value names several options (a sweep) or an interpolation."""
    return any(ch in value for ch in ",()[]{}$*")


def preset_groups(registry: Registry, name: str, _seen=None) -> set:
    """The groups (``learner``, ``clusterer``, ...) that experiment preset ``name`` selects in its
    defaults list, through the presets it extends; an unknown name selects none."""
    seen = set() if _seen is None else _seen
    if name in seen or name not in registry.experiments:
        return set()
    seen.add(name)
    groups = set()
    for entry in registry.experiments[name].get("defaults") or []:
        if isinstance(entry, dict):
            for key in entry:
                groups.add(key.removeprefix("override ").strip().lstrip("/").split("/")[0].split("@")[0])
        elif isinstance(entry, str) and entry != "_self_":
            groups |= preset_groups(registry, entry.lstrip("/").removeprefix("experiment/"), seen)
    return groups


def compose_default_learner(argv: list[str], registry: Registry | None = None) -> list[str]:
    """The command line as Hydra composes it: ``learner=X`` (no ``+``) selects a component
    as ``+learner=X`` does (components are added, not in the primary defaults) -- unless the
    chosen preset selects that group itself, when it replaces the preset's choice
    (``experiment=deep_published learner=cc``) -- and a run that selects no learner, clusterer
    or preset gets the built-in PL-KNN as the composed group ``+learner=plknn`` -- so
    ``learner.k=5`` works on the default run and in sweeps."""
    in_preset = set()
    if registry is not None:
        for arg in argv:
            key, _, value = arg.partition("=")
            if key.lstrip("+") == "experiment":  # a sweep (experiment=a,b): every preset's groups
                for name in value.split(","):
                    in_preset |= preset_groups(registry, name.strip())
    out, chosen = [], set()
    for arg in argv:
        m = _SELECT.match(arg)
        if m:
            chosen.add(m.group(2))
            if not m.group(1) and m.group(2) not in in_preset:
                arg = "+" + arg
        out.append(arg)
    presets = any(a.split("=", 1)[0].lstrip("+~") == "experiment" for a in argv)
    if not ({"learner", "clusterer"} & chosen) and not presets:
        # beside the other overrides: Hydra's parser takes them as one run of positional arguments
        last = max((i for i, a in enumerate(out) if "=" in a and not a.startswith("-")), default=len(out) - 1)
        out.insert(last + 1, "+learner=plknn")
    return out


def _check_group_keys(argv, registry: Registry, group: str, default: str, what: str, noun: str) -> None:
    """``group.key=value`` overrides checked against the node of the chosen ``group`` option."""
    chosen = next((a.split("=", 1)[1] for a in argv if a.startswith(f"{group}=")), default)
    if chosen not in registry.names(group):  # a sweep, or a name check_overrides reports
        return
    known = [k for k in registry.get(group, chosen).config() if k not in ("_target_", "name")]
    for arg in argv:
        m = re.match(rf"^{group}\.(\w+)\S*?=", arg)
        if m and m.group(1) not in known:
            raise ConfigError(f"{what} {chosen!r} has no {noun} {m.group(1)!r}; its {noun}s: {', '.join(known)}")


def check_component_overrides(argv: list[str], registry: Registry) -> None:
    """One line for a parameter override that Hydra would reject in several: ``learner.kk=5``
    (no such parameter), ``+learner.k=5`` (``+`` adds a new key: the parameter exists) or
    ``reducer.thr=0.9`` without ``+reducer=NAME``. Runs with a preset are left to Hydra (the
    preset chooses the components), and so are the keys of a group swept over several options."""
    if any(a.split("=", 1)[0].lstrip("+~") == "experiment" for a in argv):
        return
    selected = {}
    for arg in argv:
        m = _SELECT.match(arg) or re.match(r"^(\+{0,2})(bags)=(.+)$", arg)
        if m and m.group(3):
            selected[m.group(2)] = "*" if _swept(m.group(3)) else m.group(3)
    selected.setdefault("bags", "uniform")
    for arg in argv:  # a class of the user's own (learner._target_=...): its parameters are its own
        m = _PARAM.match(arg)
        if m and m.group(3) == "_target_":
            selected[m.group(2)] = "none"
    for arg in argv:  # a top-level key Hydra does not know (seed, progress and the groups)
        key = arg.split("=", 1)[0]
        root = re.split(r"[./]", key, maxsplit=1)[0]
        if "=" in arg and not arg.startswith(("+", "~", "-")) and root not in _TOP_LEVEL:
            raise ConfigError(f"unknown setting {key!r}; the settings are {', '.join(sorted(_TOP_LEVEL - {'hydra'}))} "
                              f"and hydra.*; a new key needs a '+' (+{arg})")
    _check_group_keys(argv, registry, "dataset", "digits", "data set", "setting")
    _check_group_keys(argv, registry, "protocol", "kfold", "protocol", "parameter")
    for arg in argv:
        m = _PARAM.match(arg)
        if not m:
            continue
        plus, kind, key = m.group(1), m.group(2), m.group(3)
        name = selected.get(kind)
        if name is None:
            raise ConfigError(f"{arg} sets a parameter of a {kind}, but no {kind} is selected: add +{kind}=NAME "
                              f"({', '.join(registry.names(kind))})")
        if name in ("none", "*"):
            continue
        params = [k for k in registry.get(kind, name).config() if k != "_target_"]
        if key not in params:
            raise ConfigError(f"{kind} {name!r} has no parameter {key!r}; its parameters: {', '.join(params)}")
        if plus == "+":
            raise ConfigError(f"{arg}: {kind}.{key} exists already ('+' adds a new key): write "
                              f"{arg[1:]}")


def check_overrides(argv, registry: Registry) -> None:
    """Fail fast, in one line, on a misspelled component name (``+learner=plknnn``) and on a
    component parameter Hydra would reject (:func:`check_component_overrides`)."""
    for arg in argv:
        m = re.match(r"^\+(dataset|bags|protocol|tracking|report|experiment)=(.*)$", arg)
        if m:
            raise ConfigError(f"{arg}: {m.group(1)} is in the defaults, so it is chosen without '+': "
                              f"{m.group(1)}={m.group(2)}")
    check_component_overrides(argv, registry)
    for arg in argv:
        m = _OVERRIDE.match(arg)
        if not m:
            continue
        kind, value = m.groups()
        if kind == "tracking":
            names = ["mlflow", "none"]
        else:
            names = registry.names(kind) + (["none"] if kind in _OPTIONAL_KINDS else [])
        if any(ch in value for ch in "()[]{}$*"):
            continue  # sweep functions / interpolations: let Hydra handle them
        for v in value.split(","):
            if v and v not in names:
                hint = ""
                if kind == "dataset" and ("/" in v or "\\" in v
                                          or Path(v).suffix in (".mat", ".arff", ".csv", ".parquet", ".npz")):
                    hint = f"; a file is loaded with dataset=file dataset.name_or_path={v}"
                raise ConfigError(f"unknown {kind} {v!r}; available {kind} options: {', '.join(names)}{hint}")


def print_listing(registry: Registry, file=None) -> None:
    """``python -m plcore list``: every component and any plugin load errors."""
    file = file or sys.stdout
    rows = registry.table()
    header = ("KIND", "NAME", "DISTRIBUTION", "VERSION", "DESCRIPTION")
    widths = [max(len(h), *(len(str(r[k])) for r in rows)) if rows else len(h)
              for h, k in zip(header[:4], ("kind", "name", "distribution", "version"))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    print(fmt.format(*header), file=file)
    for r in rows:
        print(fmt.format(r["kind"], r["name"], r["distribution"], r["version"], r["description"]), file=file)
    if registry.errors:
        print(f"\n{len(registry.errors)} plugin(s) failed to load:", file=file)
        for e in registry.errors:
            print(f"  {e.entry_point} ({e.distribution} {e.version}): {e.error}", file=file)


def _absolute_data_home() -> None:
    """A relative ``$PLCORE_DATA_HOME`` names a folder from where the command was given; jobs
    (launchers, the tests' scratch folders) may run elsewhere, so it is made absolute here."""
    home = os.environ.get("PLCORE_DATA_HOME")
    if home and not Path(home).expanduser().is_absolute():
        os.environ["PLCORE_DATA_HOME"] = str(Path(home).expanduser().resolve())


#: ``python -m plcore <command> ...``: the module whose ``main(argv)`` runs it
_SUBCOMMANDS = {"report": "plcore.run.report", "predict": "plcore.run.predict", "import": "plcore.run.importer"}


def main(argv=None) -> int:
    """Entry point of ``python -m plcore``.

    ``python -m plcore list`` lists components; ``python -m plcore report`` rebuilds a report
    (:mod:`plcore.run.report`) from a tracking database; ``python -m plcore predict`` predicts new
    data with a run's logged model (:mod:`plcore.run.predict`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    full_error = bool(os.environ.get("PLCORE_FULL_ERROR"))
    _absolute_data_home()
    try:
        registry = get_registry()
        if argv[:1] == ["list"]:
            print_listing(registry)
            return 0
        if argv[:1] and argv[0] in _SUBCOMMANDS:
            import importlib

            return importlib.import_module(_SUBCOMMANDS[argv[0]]).main(argv[1:])
        argv = compose_default_learner(argv, registry)
        check_overrides(argv, registry)
        store_configs(registry)
        conf_dir = find_conf_dir()
    except PlcoreError as err:
        if full_error:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    for e in registry.errors:
        print(f"warning: plugin {e.entry_point} ({e.distribution} {e.version}) failed to load: {e.error}",
              file=sys.stderr)
    import hydra

    sys.argv = [sys.argv[0] if sys.argv else "plcore"] + argv
    task = hydra.main(version_base="1.3", config_path=str(conf_dir), config_name="config")(run_job)
    try:
        task()
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0


def console() -> None:
    """The ``plcore`` console script (same as ``python -m plcore``)."""
    sys.exit(main())
