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
import sys
import time
from pathlib import Path

from plcore.exceptions import ConfigError, PlcoreError
from plcore.registry import Registry, get_registry
from plcore.run.job import JobState, run_task
from plcore.run.overrides import check_overrides, compose_default_learner
from plcore.run.resolve import OPTIONAL_KINDS, describe_setup, resolve_run, run_name
from plcore.run.runs import RUN_KEY_TAG, find_finished_run

log = logging.getLogger("plcore")

__all__ = ["find_conf_dir", "store_configs", "run_job", "main"]


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


def register_resolvers() -> None:
    """``${plcore_sweep_id:}`` in ``hydra.sweep.dir``: the launching process's id, so that two sweeps
    started in the same second get their own folders (and ``hydra.sweep.dir`` tags). Cached like
    Hydra's ``${now:}``, whose cache every job's config copies, so all jobs of a sweep agree."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("plcore_sweep_id"):
        OmegaConf.register_new_resolver("plcore_sweep_id", lambda: str(os.getpid()), use_cache=True)


register_resolvers()


def store_configs(registry: Registry) -> None:
    """Put every registered component into Hydra's ConfigStore under its kind."""
    from hydra.core.config_store import ConfigStore

    _share_config_store()
    cs = ConfigStore.instance()
    for kind in OPTIONAL_KINDS:
        cs.store(group=kind, name="none", node={}, provider="plcore")
    for comp in registry.components.values():
        cs.store(group=comp.kind, name=comp.name, node=comp.config(), provider=comp.distribution)
    for name, node in registry.experiments.items():
        cs.store(group="experiment", name=name, node=node, package="_global_", provider="plugin")



class _StepReporter:
    """Per-step callback: logs to the run and, off a terminal, prints one line per step."""

    def __init__(self, run, spec, params, label, job: JobState):
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
        head = self.spec.headline_key({f"{k}_mean": v for k, v in step.items()}).rsplit("_", 1)[0]
        value = step.get(head)
        shown = f" {head}={value:.4f}" if isinstance(value, (int, float)) else ""
        total = f" of {self.total}" if self.total and self.done <= self.total else ""  # stored splits may differ
        index = step.get("step", self.done - 1)  # the step as MLflow and the plots number it (from 0)
        print(f"[{self.label}] {self.spec.step_name} {index} ({self.done}{total} done){shown} "
              f"({time.perf_counter() - self.t0:.1f} s elapsed)", file=sys.stderr, flush=True)



def run_job(cfg) -> float | None:
    """One Hydra job: :func:`_run_job` under :func:`plcore.run.job.run_task` (signals, warnings,
    one-line errors and exit codes)."""
    return run_task(_run_job, cfg)


def _run_job(cfg, job: JobState) -> float | None:
    """Load data, build components, run the protocol, track, print the summary."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from plcore import tracking

    registry = get_registry()
    tcfg = OmegaConf.to_container(cfg.tracking, resolve=True)
    if cfg.get("resume") and not tcfg.get("enabled", False):
        raise ConfigError("resume=true reuses the FINISHED runs of the tracking store: it needs tracking "
                          "(leave out tracking=none)")
    if tcfg.get("enabled", False):  # a dead server or an unwritable store fails in seconds, before any work
        tracking.check_store(tcfg["tracking_uri"])
    resolved_run = resolve_run(cfg, registry)
    run_key = resolved_run.key()
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
    tags[RUN_KEY_TAG] = run_key
    if cfg.get("resume") and _reuse(job, spec, tcfg, run_key):
        return job.reused_value
    name = run_name(setup, dataset, pname, registry)
    if (params.get("select") or {}).get("method") == "oracle":  # never mistaken for a result
        name += " · ORACLE"
    source = ("its own candidate sets" if dataset.is_partial and setup.bags is None
              else f"candidate sets from {setup.bags!r}")
    print(f"{dataset.name}: n={dataset.n_samples} d={dataset.n_features} q={dataset.n_classes}, {source}; "
          f"protocol={pname}; " + ("engine chosen from the candidate sets (engine=auto)" if params.get("engine") == "auto"
                                   else describe_setup(setup)), flush=True)
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
        model = f"; its model: models:/{run.model_id}" if getattr(run, "model_id", None) else ""
        print(f"mlflow run {run.run_id} ({tcfg['tracking_uri']}){model}")
    print(line, flush=True)
    return result.summary.get(spec.headline_key(result.summary))

def _reuse(job: JobState, spec, tcfg: dict, run_key: str) -> bool:
    """``resume=true``: a FINISHED run of the same settings and data (:meth:`ResolvedRun.key`) in the
    store is reused instead of run again (the job's value is its headline metric)."""
    found = find_finished_run(tcfg["tracking_uri"], tcfg.get("experiment_name") or "plcore", run_key)
    if found is None:
        return False
    job.reused = found.run_id
    job.reused_value = found.metrics.get(spec.headline_key(found.metrics))
    print(f"resume: reused run {found.run_id} ({found.name}), FINISHED with the same settings and data: "
          f"{spec.summary_line(found.metrics)}", flush=True)
    return True


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
_SUBCOMMANDS = {"report": "plcore.run.report", "predict": "plcore.run.predict", "import": "plcore.run.importer",
                "leaderboard": "plcore.leaderboard.cli"}


#: ``python -m plcore clean`` shorthands: ``out=F`` is ``protocol.out=F``, ``id_column=C`` ``dataset.id_column=C``
_CLEAN_KEYS = {"out": "protocol.out", "overwrite": "protocol.overwrite", "id_column": "dataset.id_column",
               "n_splits": "protocol.n_splits"}


#: where ``python -m plcore clean`` writes without ``out=`` (an existing file is refused, not replaced)
CLEAN_DEFAULT_OUT = "cleaned.csv"


def clean_arguments(argv: list) -> list:
    """``python -m plcore clean ARGS`` as the run's overrides: ``protocol=clean`` and the
    shorthands of :data:`_CLEAN_KEYS`; any other override passes as it is. Without ``bags=`` no
    candidate sets are drawn (``~bags``: exact-label data are refused), and without ``out=`` the
    labels go to :data:`CLEAN_DEFAULT_OUT`."""
    out = ["protocol=clean"]
    for arg in argv:
        key, sep, value = arg.partition("=")
        if arg.startswith("protocol="):
            raise ConfigError(f"{arg}: python -m plcore clean runs protocol=clean (its options: protocol.<key>=...)")
        out.append(f"{_CLEAN_KEYS[key]}={value}" if sep and key in _CLEAN_KEYS else arg)
    given = {arg.partition("=")[0].lstrip("+~") for arg in out}
    if "bags" not in given:  # clean reads the data's own sets: it draws sets only where bags= says so
        settings = sorted(key for key in given if key.startswith("bags."))
        if settings:
            raise ConfigError(f"{settings[0]}=... sets a bag generator's parameter, but clean draws no candidate "
                              "sets unless bags=NAME names the generator (e.g. bags=uniform)")
        out.append("~bags")
    if "protocol.out" not in given:
        out.append(f"protocol.out={CLEAN_DEFAULT_OUT}")
    if "protocol.engine" not in given and not any(key in ("learner", "experiment") or key.startswith("learner.")
                                                  for key in given):
        out.append("protocol.engine=auto")  # no learner named: the engine is chosen from the candidate sets
    return out


def main(argv=None) -> int:
    """Entry point of ``python -m plcore``.

    ``python -m plcore list`` lists components; ``python -m plcore report`` rebuilds a report
    (:mod:`plcore.run.report`) from a tracking database; ``python -m plcore predict`` predicts new
    data with a run's logged model (:mod:`plcore.run.predict`); ``python -m plcore clean`` writes
    every training row's cleaned label (:func:`clean_arguments`, protocol ``clean``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    full_error = bool(os.environ.get("PLCORE_FULL_ERROR"))
    _absolute_data_home()
    try:
        registry = get_registry()
        if argv[:1] == ["list"]:
            print_listing(registry)
            return 0
        if argv[:1] == ["clean"]:  # a run of protocol=clean (python -m plcore clean --help: the usual Hydra help)
            argv = clean_arguments(argv[1:])
        elif argv[:1] and argv[0] in _SUBCOMMANDS:
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
    callbacks = sys.modules.get("plcore.run.callbacks")  # loaded only where a sweep's callbacks ran
    return 1 if callbacks is not None and callbacks.failed_jobs_of_last_sweep() else 0


def console() -> None:
    """The ``plcore`` console script (same as ``python -m plcore``)."""
    sys.exit(main())
