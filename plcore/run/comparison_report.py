"""The comparison report of a sweep: MLflow runs -> per-split scores -> tables, tests and the
critical-difference diagram (:mod:`plcore.stats`), written as markdown, LaTeX, PNG
and SVG and logged as artifacts of a parent run of the sweep.

``python -m plcore -m +learner=plknn,ipal dataset=lost,msrc-v2 report=comparison`` (the
:class:`plcore.run.callbacks.ComparisonCallback`) or, from a database at any time,
``python -m plcore report --kind comparison --sweep-dir DIR`` / ``--experiment NAME``.

A run's *method* is its components (``cenda+plknn``; ``(ORACLE)`` where it was tuned on test
labels) plus the logged settings in which runs of that method differ (``plknn[learner.k=5]``),
printed with the components' display names (``CENDA + PL-KNN``, ``PL-KNN[learner.k=5]``);
its *data set* is the data set's name plus the ``dataset.*`` / ``bags.*`` settings in which runs
on it differ (``ecoli[bags.r=1]``). Runs of one data set are paired on their splits, so they
must share the seed, the data fingerprint, the bag generator's settings and the protocol's split
settings; the report refuses in one line otherwise, and where two runs of one method on one data
set were made on other splits (a seed sweep). A re-run on the same splits replaces the earlier.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from plcore.exceptions import ConfigError, one_line
from plcore.registry import METHOD_KINDS, get_registry
from plcore.stats import (Comparison, best_ranked, cd_diagram, check_same_splits, compare, latex_table,
                                   markdown_table, ranked_methods)
from plcore.run.runs import PARENT_TAG, RunRecord, provenance_line

__all__ = ["METRICS", "ComparisonReport", "compared_runs", "comparison_report", "log_parent_run",
           "method_and_dataset", "method_names", "split_key", "split_settings", "sweep_scores"]

#: per protocol: the per-split metrics compared, and whether greater is better; runs on data without
#: true labels are compared by their label-free estimates (the test rows' covering rate and
#: approximated accuracy), in sections of their own
_LABEL_FREE = (("covering_rate", True), ("approximated_accuracy", True))
METRICS = {"kfold": (("accuracy", True), *_LABEL_FREE), "holdout": (("accuracy", True), *_LABEL_FREE),
           "online": (("mistake_rate_final", False),),  # the mistake rate at the last trial of each run
           "clustering": (("acc", True), ("nmi", True)),
           # the test accuracy of the checkpoint each label-free criterion selects, per trial
           "plench": (("cr_accuracy", True), ("aa_accuracy", True))}

#: protocol settings that do not change the splits (a method may set them as it likes)
_NOT_SPLITS = ("protocol.preprocessing", "protocol.reduced_preprocessing", "protocol.fit_reducer_on",
               "protocol.refit", "protocol.exact_labels", "protocol.n_jobs", "protocol.preprocessing_by_part",
               "protocol.select.")
#: settings that change neither a method's results nor its splits (how a run is carried out: its
#: workers, a deep learner's threads and the count it used, as the run key leaves them out)
_NEUTRAL = ("n_jobs", "n_threads", "n_threads_used", "refit", "data_home")


def _names_method(key: str) -> bool:
    """A setting that makes another method: a component's (``learner.k``) or one the protocol
    leaves to the method (preprocessing, selection)."""
    return (key.split(".")[0] in METHOD_KINDS or key.startswith(_NOT_SPLITS)) and key.rsplit(".", 1)[-1] not in _NEUTRAL


def _names_dataset(key: str) -> bool:
    return key.split(".")[0] in ("dataset", "bags") and key.rsplit(".", 1)[-1] not in _NEUTRAL


def _base_names(run: RunRecord) -> tuple[str, str, str]:
    """The run's components as its name gives them (``cenda+plknn · lost · kfold``; the classes'
    names where ``tracking.run_name`` renamed it), its data set, and the components' display
    names (``CENDA + PL-KNN``; a component no installed plugin declares keeps its name)."""
    dataset = run.tags.get("dataset", run.params.get("dataset.name_or_path", "?"))
    parts = run.name.split(" · ")
    kinds = [k for k in METHOD_KINDS if run.params.get(f"{k}._target_")]
    targets = [run.params[f"{k}._target_"] for k in kinds]
    if len(parts) >= 3 and parts[1] == dataset:
        method = parts[0]
        options = method.split("+")
    else:
        options = [t.rsplit(".", 1)[-1] for t in targets]
        method = "+".join(options)
    if len(options) != len(targets):  # the run's name does not say which option is which kind
        kinds, targets = [None] * len(options), [None] * len(options)
    registry = get_registry()
    display = " + ".join(registry.display_name(name=option, target=target, kinds=(kind,) if kind else METHOD_KINDS)
                         or option for option, kind, target in zip(options, kinds, targets))
    if run.tags.get("selection") == "oracle":
        method += " (ORACLE)"
        display += " (ORACLE)"
    return method, dataset, display


def _setting(key: str, value: str) -> str:
    return f"{key}={value.rsplit('.', 1)[-1] if key.endswith('_target_') else value}"


def method_and_dataset(runs: Sequence[RunRecord]) -> dict:
    """``{run_id: (method, dataset)}``: the components and the data set's name, each with the
    logged settings (defaults filled in) in which runs of that same method (data set) differ:
    ``plknn[learner.k=5]``, ``ecoli[bags.r=1]``. Settings all its runs share name nothing."""
    base = {r.run_id: _base_names(r)[:2] for r in runs}

    def varying(position: int, names) -> dict:
        groups: dict = {}
        for r in runs:
            groups.setdefault(base[r.run_id][position], []).append(r.params)
        out = {}
        for name, group in groups.items():
            keys = {k for params in group for k in params if names(k)}
            out[name] = sorted(k for k in keys if len({params.get(k) for params in group}) > 1)
        return out

    by_method, by_dataset = varying(0, _names_method), varying(1, _names_dataset)
    out = {}
    for r in runs:
        method, dataset = base[r.run_id]
        extra_m = [_setting(k, r.params[k]) for k in by_method[method] if k in r.params]
        extra_d = [_setting(k, r.params[k]) for k in by_dataset[dataset] if k in r.params]
        out[r.run_id] = (method + (f"[{','.join(extra_m)}]" if extra_m else ""),
                         dataset + (f"[{','.join(extra_d)}]" if extra_d else ""))
    return out


def method_names(runs: Sequence[RunRecord]) -> dict:
    """``{method: name}``: how tables print each method of :func:`method_and_dataset`, the
    components' display names with the method's settings (``PL-KNN[learner.k=5]``). Two
    methods that would print alike keep their own names beside it (``PL-KNN (plknn)``)."""
    labels = method_and_dataset(runs)
    names = {}
    for r in runs:
        base, _, display = _base_names(r)
        method = labels[r.run_id][0]
        names[method] = display + method[len(base):]
    clash = {n for n in names.values() if list(names.values()).count(n) > 1}
    return {m: f"{n} ({m})" if n in clash else n for m, n in names.items()}


def _match_reference(reference: str, names: dict) -> str | None:
    """The method ``reference`` names among ``names`` (``{method: printed name}``): the method
    itself (``plknn``) or its printed name (``PL-KNN``), in any case; None where neither."""
    if reference in names:
        return reference
    for candidates in (names.items(), ((m, m) for m in names)):
        found = [m for m, n in candidates if n.casefold() == reference.casefold()]
        if found:
            return found[0]
    return None


def split_settings(run: RunRecord, n_steps: int) -> dict:
    """What identifies a run's splits: seed, data fingerprint, the bag generator's settings (the
    protocol draws candidate sets per split from them), the protocol and its split settings."""
    out = {"seed": run.tags.get("seed", run.params.get("seed", "?")), "data": run.tags.get("dataset.fingerprint", "?")}
    out.update((k, v) for k, v in sorted(run.params.items())
               if (k.startswith("protocol.") and not k.startswith(_NOT_SPLITS)) or _names_dataset(k))
    out["steps"] = n_steps
    return out


def split_key(run: RunRecord, n_steps: int) -> str:
    """:func:`split_settings` as one line (``seed=0, data=..., protocol.n_splits=10, ...``)."""
    return ", ".join(f"{k}={v}" for k, v in split_settings(run, n_steps).items())


def sweep_scores(runs: Sequence[RunRecord], protocol: str, metric: str) -> tuple[dict, dict]:
    """``scores[(method, dataset)]`` (per-split values of ``metric``) of the runs of ``protocol``,
    and ``{cell: run}``, the run each came from. A re-run on the same splits replaces the earlier
    one; runs of one cell on other splits, or the methods of a data set on other splits, are
    refused in one line."""
    runs = [r for r in runs if r.tags.get("protocol") == protocol]
    labels = method_and_dataset(runs)
    cells, settings = {}, {}
    for r in sorted(runs, key=lambda r: r.start_time):
        values = r.steps(metric)
        if values.size == 0 or not np.all(np.isfinite(values)):
            continue
        cell, mine = labels[r.run_id], split_settings(r, values.size)
        if cell in settings and settings[cell] != mine:
            differ = ", ".join(f"{k}={settings[cell].get(k)} vs {v}" for k, v in mine.items()
                               if settings[cell].get(k) != v)
            raise ConfigError(f"runs of {cell[0]!r} on {cell[1]!r} were made on other splits ({differ}): compare "
                              "one sweep at a time (--sweep-dir), or give them different settings")
        cells[cell], settings[cell] = r, mine
    scores = {cell: r.steps(metric) for cell, r in cells.items()}
    check_same_splits({cell: split_key(r, scores[cell].size) for cell, r in cells.items()})
    return scores, cells


def compared_runs(runs: Sequence[RunRecord]) -> list:
    """The runs a comparison of ``runs`` uses: the latest of each cell, every protocol (oldest first)."""
    used = {}
    for protocol in METRICS:
        for metric, _ in METRICS[protocol]:
            used.update((r.run_id, r) for r in sweep_scores(runs, protocol, metric)[1].values())
    return sorted(used.values(), key=lambda r: r.start_time)


@dataclass
class ComparisonReport:
    """What :func:`comparison_report` wrote: the markdown text, its files (markdown, LaTeX, then
    the diagrams), one :class:`~plcore.stats.Comparison` per compared metric, the
    diagrams' paths and the runs compared (the latest of each cell)."""

    markdown: str
    files: list = field(default_factory=list)
    comparisons: dict = field(default_factory=dict)
    diagrams: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    sections: str = ""

    def console_text(self) -> str:
        """What a command prints once the report is written: the sections, then where the files are."""
        markdown, latex = self.files[:2]
        body = [line for line in self.sections.strip().splitlines() if not line.startswith("<!-- --8<--")]
        lines = [*body, "", f"comparison written to {markdown} (LaTeX: {latex})"]
        lines += [f"critical-difference diagram: {path}" for path in self.diagrams]
        return "\n".join(lines)


_READING = (
    "How to read it: each cell is the mean over the protocol's splits {spread}; the best per data set, as "
    "printed, is in bold. {wtl}The average rank (1 = best) is over the data sets every method has; {tests}")
_TESTS = {
    "friedman": "the Friedman test asks whether all methods rank alike, and the critical-difference diagram joins "
                "with a bar the methods whose average ranks differ by less than the Nemenyi critical difference "
                "(CD, drawn above the axis): those the test cannot tell apart at level {alpha:g} (Demsar, JMLR "
                "2006). Read the diagram only where the Friedman test rejects equal ranks; few data sets give a "
                "wide CD.",
    "wilcoxon": "with two methods the Wilcoxon signed-rank test of their means over the data sets asks whether "
                "one is better (Demsar, JMLR 2006, section 3.1.3); the Friedman test and the critical-difference "
                "diagram compare three or more. Its smallest p-value is 2 / 2^N over N data sets: below 6 it cannot reach "
                "0.05.",
    "none": "the tests over data sets need at least 2 common data sets (and for the Friedman test and the "
            "critical-difference diagram, 3 or more methods).",
}


def comparison_report(runs: Sequence[RunRecord], output, *, reference: str | None = None, error: str = "std",
                      alpha: float = 0.05, title: str | None = None, command: str | None = None,
                      sweep_dir: str | None = None, intro: str | None = None,
                      rebuild: str | None = None, experiment: str | None = None,
                      missing: Sequence[str] = ()) -> ComparisonReport | None:
    """Write the comparison of ``runs`` to ``output`` (markdown), ``output`` with ``.tex`` (LaTeX,
    booktabs) and ``<stem>_cd_<metric>.png/.svg`` beside it. One section per protocol metric, its
    rows best average rank first,
    after the page's ``intro`` (markdown); ``rebuild`` is the command the page names to rebuild it
    from the database (default: ``python -m plcore report --kind comparison`` with ``experiment``,
    ``sweep_dir`` and the options). ``reference`` (a method or its printed name) counts win/tie/loss
    in every section that has it (it must be in one); without it, each section counts that of its
    best-ranked method. ``missing`` (:func:`not_compared`) names the runs and jobs that failed:
    the page and the console text list them under "Not compared". Returns None when no run has a
    comparable metric."""
    if error not in ("std", "sem"):
        raise ConfigError(f"error must be 'std' or 'sem', got {error!r}")
    output = Path(output)
    protocols = [p for p in METRICS if p in {r.tags.get("protocol") for r in runs}]  # accuracy first
    report = ComparisonReport("")
    compared, used, names = [], {}, {}  # (name, what, comparison), all computed before anything is written
    for protocol in protocols:
        labels = method_names([r for r in runs if r.tags.get("protocol") == protocol])
        for metric, greater in METRICS[protocol]:
            scores, cells = sweep_scores(runs, protocol, metric)
            if not scores:
                continue
            used.update((r.run_id, r) for r in cells.values())
            present = {m: labels[m] for m, _ in scores}
            names.update(present)
            c = compare(scores, alpha=alpha, greater_is_better=greater)
            ref = _match_reference(reference, present) if reference is not None else best_ranked(c)
            if ref is not None:
                c = compare(scores, reference=ref, alpha=alpha, greater_is_better=greater)
            c.labels = present
            steps = {int(v.size) for v in scores.values()}
            what = (f"{metric} ({protocol}, {'/'.join(map(str, sorted(steps)))} {_step_word(protocol)}; "
                    f"{'higher' if greater else 'lower'} is better)")
            compared.append((metric if len(protocols) == 1 else f"{protocol}_{metric}", what, c))
    if not compared:
        return None
    if reference is not None and not any(c.reference for _, _, c in compared):
        listed = ", ".join(sorted(n if n == m else f"{n} ({m})" for m, n in names.items()))
        raise ConfigError(f"reference method {reference!r} is not among the compared: {listed}")
    report.runs = sorted(used.values(), key=lambda r: r.start_time)
    sections, tex = [], []
    for name, what, c in compared:
        report.comparisons[name] = c
        diagram = cd_diagram(c, output.with_name(f"{output.stem}_cd_{name}"), title=what)
        report.diagrams += diagram
        sections.append(_section(c, name, what, error, diagram, chosen=reference is None))
        tex.append(latex_table(c, error=error, caption=what, by_rank=True))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    head = [f"# {title or 'Comparison of methods'}", "",
            f"Generated {stamp}" + (f" by `{command}`" if command else "") + "; rebuild from the database with `"
            + (rebuild or _rebuild_command(sweep_dir, experiment, reference, error, alpha))
            + "`. LaTeX: `" + output.with_suffix(".tex").name + "`.", ""] + ([intro.strip(), ""] if intro else [])
    source = provenance_line(report.runs, sweep_dir, None if sweep_dir else experiment)
    if missing:
        sections.append("## Not compared\n\n" + f"{len(missing)} run(s) or job(s) failed or left no result, so "
                        "their cells are missing from the tables above:\n\n"
                        + "\n".join(f"- {line}" for line in missing) + "\n")
    report.sections = "\n".join(sections)
    report.markdown = "\n".join(head) + "\n" + report.sections + "\n" + source
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report.markdown)
    output.with_suffix(".tex").write_text("% plcore comparison; needs \\usepackage{booktabs}\n" + "\n".join(tex))
    report.files = [output, output.with_suffix(".tex"), *report.diagrams]
    return report


def not_compared(failed_runs: Sequence[RunRecord], jobs: Sequence = (), finished: Sequence[RunRecord] = ()) -> list:
    """One line for each FAILED or KILLED run that no FINISHED run of the same settings and data
    (tag ``plcore.run_key``) in ``finished`` replaced, and for each job of a sweep
    (:class:`~plcore.run.runs.JobRecord`) that failed before its run existed or left no record."""
    from plcore.run.runs import RUN_KEY_TAG

    done = {r.tags.get(RUN_KEY_TAG) for r in finished} - {None}
    lines = []
    for r in failed_runs:
        if r.status in ("FAILED", "KILLED") and r.tags.get(RUN_KEY_TAG) not in done:
            why = one_line(r.tags.get("error", "")) or r.tags.get("plcore.ended_by", "")
            lines.append(f"`{r.name}` {r.status} (run {r.run_id})" + (f": {why}" if why else ""))
    for j in jobs:
        if j.failed and j.run_id is None:
            lines.append(f"job {j.num} (`{' '.join(j.overrides)}`) {j.status}, before its run existed: {j.error}")
    return lines


def _rebuild_command(sweep_dir, experiment, reference, error, alpha) -> str:
    parts = ["python -m plcore report --kind comparison"]
    parts += [f"--experiment {experiment}"] if experiment and experiment != "plcore" else []
    parts += [f"--sweep-dir {sweep_dir}"] if sweep_dir else []
    parts += [f"--reference {shlex.quote(reference)}"] if reference else []
    parts += [f"--error {error}"] if error != "std" else []
    parts += [f"--alpha {alpha:g}"] if alpha != 0.05 else []
    return " ".join(parts)


def _step_word(protocol: str) -> str:
    return {"kfold": "folds", "holdout": "repeats", "online": "runs", "clustering": "partitions",
            "plench": "trials"}.get(protocol, "splits")


def _section(c: Comparison, name: str, what: str, error: str, diagram: list, *, chosen: bool = False) -> str:
    """One metric's section: the table (between snippet markers), the option names of its rows,
    the diagram and how to read them. ``chosen``: the reference is the best-ranked by default."""
    spread = "± the standard deviation over the splits" if error == "std" else "± its standard error"
    why = " (the best average rank; `reference=` picks another)" if chosen else ""
    wtl = (f"The last column counts the data sets where {c.label(c.reference)}{why} wins, ties or loses against "
           f"the row's method by a paired two-sided t-test at {c.alpha:g} on the shared splits; their training "
           "parts overlap, so the test finds differences more readily than its level says (the papers' "
           "convention). ") if c.wtl else ""
    tests = _TESTS["friedman" if c.friedman else "wilcoxon" if c.wilcoxon else "none"].format(alpha=c.alpha)
    # the snippet markers let a docs page include the table (pymdownx.snippets, "file.md:table_<name>")
    lines = [f"## {what}", "", f"<!-- --8<-- [start:table_{name}] -->", markdown_table(c, error=error, by_rank=True),
             f"<!-- --8<-- [end:table_{name}] -->", ""]
    options = [f"{c.label(m)} `{m}`" for m in ranked_methods(c) if c.label(m) != m]
    if options:
        lines += [f"The rows' option names (for the command line and the reference option): {', '.join(options)}.", ""]
    if diagram:
        svg = next(p for p in diagram if p.suffix == ".svg")
        lines += [f"![critical-difference diagram: {what}]({svg.name})", ""]
    else:
        lines += ["(No critical-difference diagram: it needs at least 3 methods on at least 2 common data sets.)", ""]
    lines += [_READING.format(spread=spread, wtl=wtl, tests=tests), ""]
    return "\n".join(lines)


def log_parent_run(tracking_uri: str, experiment_name: str, report: ComparisonReport, of: str) -> str | None:
    """Log ``report``'s files as artifacts of the parent run of the compared runs (``of``: the
    sweep or experiment compared; an existing parent of the same ``of`` is reused, its files
    replaced) and nest the compared runs that have no parent yet under it (MLflow's
    ``mlflow.parentRunId`` tag; the run list folds them under the parent's row). The parent's
    description says so. Returns the parent's run id, None without the experiment."""
    from mlflow.tracking import MlflowClient

    from plcore.tracking import git_provenance

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment_name)
    if exp is None:
        return None
    found = client.search_runs([exp.experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{of}'", max_results=1)
    if found:
        run_id = found[0].info.run_id
    else:
        tags = {PARENT_TAG: of, "mlflow.source.name": "python -m plcore report --kind comparison",
                **git_provenance()}
        run_id = client.create_run(exp.experiment_id, run_name=f"comparison · {of}", tags=tags).info.run_id
    for path in report.files:
        client.log_artifact(run_id, str(path))
    for name, c in report.comparisons.items():
        if c.friedman is not None:
            client.log_metric(run_id, f"{name}/friedman_p", c.friedman[1])
            client.log_metric(run_id, f"{name}/critical_difference", c.critical_difference)
        elif c.wilcoxon is not None:
            client.log_metric(run_id, f"{name}/wilcoxon_p", c.wilcoxon[1])
    for r in report.runs:  # the runs compared, unless another comparison already holds them
        if not r.tags.get("mlflow.parentRunId"):
            client.set_tag(r.run_id, "mlflow.parentRunId", run_id)
            r.tags["mlflow.parentRunId"] = run_id
    nested = sum(r.tags.get("mlflow.parentRunId") == run_id for r in report.runs)
    client.set_tag(run_id, "mlflow.note.content",  # the run's description on its Overview tab
                   f"The comparison of {len(report.runs)} runs ({of}); {nested} of them are nested under this run: "
                   "in the experiment's run list, the button left of this run's name unfolds them. The tables and "
                   "the critical-difference diagram are under Artifacts.")
    client.set_terminated(run_id, "FINISHED")
    return run_id


def command_line() -> str:
    """The command that is running, as a user would type it (``python -m plcore ...``)."""
    return "python -m plcore " + " ".join(shlex.quote(a) for a in sys.argv[1:])
