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
import socket
import re
import sys
from pathlib import Path

from plcore.exceptions import ConfigError, PlcoreError
from plcore.registry import Registry, get_registry

log = logging.getLogger("plcore")

__all__ = ["find_conf_dir", "store_configs", "build_setup", "resolve_run", "run_job", "main"]

_OPTIONAL_KINDS = ("learner", "reducer", "clusterer", "bags")


def find_conf_dir() -> Path:
    """Primary config: ``plcore/conf`` in an installed wheel, else ``conf/`` of the checkout."""
    here = Path(__file__).resolve().parent
    for cand in (here / "conf", here.parent / "conf"):
        if (cand / "config.yaml").is_file():
            return cand
    raise PlcoreError(f"plcore's primary config not found (looked in {here / 'conf'} and {here.parent / 'conf'})")


def store_configs(registry: Registry) -> None:
    """Put every registered component into Hydra's ConfigStore under its kind."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for kind in _OPTIONAL_KINDS:
        cs.store(group=kind, name="none", node={}, provider="plcore")
    for comp in registry.components.values():
        cs.store(group=comp.kind, name=comp.name, node=comp.config(), provider=comp.distribution)
    for name, node in registry.experiments.items():
        cs.store(group="experiment", name=name, node=node, package="_global_", provider="plugin")


def _instantiate_estimator(node, seed):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    if node is None:
        return None
    cfg = OmegaConf.to_container(node, resolve=True) if not isinstance(node, dict) else dict(node)
    if not cfg:  # the "none" option
        return None
    est = instantiate(cfg, _convert_="all")
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=seed)
    return est


def build_setup(cfg, registry: Registry | None = None):
    """Instantiate the run's components from the composed config."""
    from plcore.protocols import Setup

    registry = registry or get_registry()
    seed = cfg.get("seed", 0)
    setup = Setup(
        learner=_instantiate_estimator(cfg.get("learner"), seed),
        reducer=_instantiate_estimator(cfg.get("reducer"), seed),
        clusterer=_instantiate_estimator(cfg.get("clusterer"), seed),
        bags=_instantiate_estimator(cfg.get("bags"), seed),
    )
    if setup.learner is None and setup.clusterer is None:
        setup.learner = _instantiate_estimator(registry.get("learner", "plknn").config(), seed)
    return setup


def _describe(setup) -> str:
    parts = [f"{k}={v!r}" for k, v in vars(setup).items() if v is not None and k != "bags"]
    return " ".join(parts)


def run_job(cfg) -> float | None:
    """One Hydra job; a :class:`PlcoreError` prints one line and exits 2 (``PLCORE_FULL_ERROR=1``: traceback)."""
    try:
        return _run_job(cfg)
    except PlcoreError as err:
        if os.environ.get("PLCORE_FULL_ERROR"):
            raise
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


def resolve_run(cfg, registry: Registry | None = None):
    """The effective run, decided once: ``(cfg, protocol_spec, setup, dataset, params)``.

    ``cfg`` is a copy of the composed config that holds exactly what runs: the built-in
    PL-KNN where neither a learner nor a clusterer was given, no ``bags`` node where the
    generator does not apply to the data (:func:`plcore.protocols.bags_apply`), and the
    protocol's parameters completed with its defaults. ``params`` are the protocol's keyword
    arguments.
    """
    from hydra.utils import instantiate
    from omegaconf import OmegaConf, open_dict

    from plcore.protocols import bags_apply

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
    setup = build_setup(cfg, registry)
    if getattr(setup, spec.needs) is None:
        raise ConfigError(f"protocol {pname!r} needs a {spec.needs} (e.g. +{spec.needs}="
                          f"{'plc' if spec.needs == 'clusterer' else 'plknn'})")
    dataset = instantiate(cfg.dataset)
    if not dataset.is_partial and setup.bags is None:
        raise ConfigError(f"data set {dataset.name!r} has exact labels only: choose a bag generator "
                          "(e.g. bags=uniform) to create candidate sets")
    with open_dict(cfg):
        cfg.protocol = {"name": pname, **params}
        if setup.bags is not None and not (spec.uses_bags and bags_apply(dataset, setup.bags)):
            print(f"note: {dataset.name} has its own candidate sets; bags={type(setup.bags).__name__} not applied")
            setup.bags = None
            cfg.pop("bags")  # log exactly what ran: no bag parameters
        for kind in _OPTIONAL_KINDS:  # random_state as used: the run's seed where the config left it None
            node, est = cfg.get(kind), getattr(setup, kind)
            if node and est is not None and "random_state" in node and node.random_state is None:
                node.random_state = est.get_params(deep=False)["random_state"]
    return cfg, spec, setup, dataset, params


def _run_job(cfg) -> float | None:
    """Load data, build components, run the protocol, track, print the summary."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from plcore import tracking

    registry = get_registry()
    cfg, spec, setup, dataset, params = resolve_run(cfg, registry)
    pname = spec.name
    tcfg = OmegaConf.to_container(cfg.tracking, resolve=True)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    tags = tracking.version_tags(registry)
    tags.update({"seed": str(cfg.seed), "dataset": dataset.name, "protocol": pname,
                 "host": socket.gethostname(), "pid": str(os.getpid())})  # which worker ran it (sweeps)
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
    run_name = f"{pname}-{dataset.name}-" + "-".join(
        type(e).__name__ for e in (setup.reducer, setup.learner, setup.clusterer) if e is not None)
    source = ("its own candidate sets" if dataset.is_partial and setup.bags is None
              else f"candidate sets from {setup.bags!r}")
    print(f"{dataset.name}: n={dataset.n_samples} d={dataset.n_features} q={dataset.n_classes}, {source}; "
          f"protocol={pname}; {_describe(setup)}", flush=True)
    with tracking.start_run(tcfg, params=tracking.flatten(resolved), tags=tags,
                            config_yaml=OmegaConf.to_yaml(cfg, resolve=True), run_name=run_name) as run:
        tags["dataset.fingerprint"] = dataset.fingerprint()
        if run.run_id is not None:
            run.client.set_tag(run.run_id, "dataset.fingerprint", tags["dataset.fingerprint"])
        result = spec.function(setup, dataset, random_state=cfg.seed, progress=cfg.get("progress", True),
                               callback=run.log_step, **params)
        run.log_result(result)
    line = spec.summary_line(result.summary)
    if run.run_id is not None:
        print(f"mlflow run {run.run_id} ({tcfg['tracking_uri']})")
    print(line, flush=True)
    return result.summary.get(spec.summary_keys[0])


_OVERRIDE = re.compile(r"^[+~]{0,2}(learner|reducer|clusterer|bags|dataset|protocol|tracking)=(.+)$")


def check_overrides(argv, registry: Registry) -> None:
    """Fail fast, in one line, on a misspelled component name (``+learner=plknnn``)."""
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
                raise ConfigError(f"unknown {kind} {v!r}; available {kind} options: {', '.join(names)}")


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


def main(argv=None) -> int:
    """Entry point of ``python -m plcore``.

    ``python -m plcore list`` lists components; ``python -m plcore report`` rebuilds a report
    (:mod:`plcore.report`) from a tracking database.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    full_error = bool(os.environ.get("PLCORE_FULL_ERROR"))
    try:
        registry = get_registry()
        if argv[:1] == ["list"]:
            print_listing(registry)
            return 0
        if argv[:1] == ["report"]:
            from plcore.report import main as report_main

            return report_main(argv[1:])
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
