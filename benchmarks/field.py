"""The field table: every method of plcore on every data set we hold, compared as papers do.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py   # the full tier
    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py --quick

The full tier writes the headline page, docs/results/field.md; the quick tier, the smoke test,
writes docs/results/field_quick.md (``--out`` writes elsewhere).

It runs four presets, each one Hydra multirun through the joblib launcher, into one MLflow
experiment (``field`` or ``field_quick``, in ``./mlflow.db`` unless ``MLFLOW_TRACKING_URI`` or
``--tracking-uri`` says otherwise):

* ``experiment=field_classic``: PL-KNN, IPAL, PL-SVM, PL-ECOC, PL A-kNN, Avg/Max Perceptron and Pegasos;
* ``experiment=field_reducers``: PL-KNN after CENDA, SAUTE and DELIN;
* ``experiment=field_deep``: the 28 deep learners of plcore-deep;
* ``experiment=field_clustering``: PLC, k-means and spectral clustering (ACC and NMI);

on lost, msrc-v2 and the UCI sets with uniform bags (r = 3), plus Fashion-MNIST in the full tier
when it is installed (Debian's ``dataset-fashion-mnist``). Every method's hyperparameters are
chosen on each training fold (partition) from its declared grid, scored on candidate sets only
(``conf/experiment/field_base.yaml``; ``field_deep`` and ``field_clustering`` live with
plcore-deep and plcore-plc). Then ``python -m plcore report --kind comparison`` builds the
page from the experiment's runs: the tables, paired t-tests, average ranks, the Friedman test and
the critical-difference diagrams, also logged to a parent run.

Interrupted, the same command started again resumes: every sweep runs with ``resume=true``, so a
job whose FINISHED run is in the experiment (same settings and data) is reused, not run again
(``--no-resume`` recomputes everything). A part whose sweep had a failed job does not stop the
others; the command then exits 1.

``--quick`` (about 1.5 hours on 2 cores, 84 minutes of it the deep learners): 3 outer folds / partitions instead of 10, 2 inner folds
instead of 3, 2 random grid points instead of the whole grid, the deep learners 50 epochs instead
of 200, no Fashion-MNIST. Nothing in either tier was chosen by looking at its figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("field_deep", "field_classic", "field_reducers", "field_clustering")
QUICK_SELECT = ["protocol.select.method=random", "protocol.select.n_iter=2", "protocol.select.cv=2"]
#: the deep learners' declared grid, named so that method=random samples it, not their PLENCH
#: distributions (search_distributions): the quick tier draws grid points for every method
DEEP_GRID = "protocol.select.space={learner.learning_rate:[3e-4,3e-3],learner.weight_decay:[1e-5,1e-3]}"
QUICK = {"field_deep": ["protocol.n_splits=3", *QUICK_SELECT, DEEP_GRID, "learner.n_epochs=50"],
         "field_classic": ["protocol.n_splits=3", *QUICK_SELECT],
         "field_reducers": ["protocol.n_splits=3", *QUICK_SELECT],
         "field_clustering": ["protocol.n_partitions=3", "protocol.select.method=random", "protocol.select.n_iter=2"]}
DATASETS = ("lost", "msrc-v2", "ecoli", "satimage", "semeion", "digits")
#: each tier's page: the full tier is the headline, the quick tier the smoke test
PAGES = {"full": "docs/results/field.md", "quick": "docs/results/field_quick.md"}


def fashion_mnist_installed(data_home=None) -> bool:
    from plcore.datasets.loaders import find_idx_folder
    from plcore.exceptions import PlcoreError

    try:
        find_idx_folder("fashion-mnist", data_home)
    except PlcoreError:
        return False
    return True


def sweep(part: str, experiment: str, quick: bool, datasets, jobs: int, uri: str, resume: bool = True):
    """Run one preset: its wall time in seconds and the sweep's exit code."""
    cmd = [sys.executable, "-m", "plcore", "-m", f"experiment={part}", f"tracking.experiment_name={experiment}",
           f"tracking.tracking_uri={uri}", f"dataset={','.join(datasets)}", f"hydra.launcher.n_jobs={jobs}",
           "progress=false", f"resume={str(resume).lower()}", *(QUICK[part] if quick else [])]
    print("$ python " + " ".join(cmd[1:]), flush=True)
    start = time.perf_counter()
    code = subprocess.run(cmd).returncode
    return time.perf_counter() - start, code


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the quick tier (about 1.5 hours on 2 cores)")
    ap.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS, help="the presets to run (default: all)")
    ap.add_argument("--datasets", nargs="+", default=None,
                    help="default: lost msrc-v2 ecoli satimage semeion digits, and fashion-mnist in the full tier "
                         "when it is installed")
    ap.add_argument("--jobs", type=int, default=-1, help="joblib workers (-1: one per core)")
    ap.add_argument("--tracking-uri", default=os.environ.get("MLFLOW_TRACKING_URI")
                    or f"sqlite:///{Path.cwd() / 'mlflow.db'}")
    ap.add_argument("--out", default=None, help=f"the page (default: {PAGES['full']}, with --quick {PAGES['quick']})")
    ap.add_argument("--report-only", action="store_true", help="rebuild the page from the runs already logged")
    ap.add_argument("--no-resume", dest="resume", action="store_false",
                    help="run every job again (default: reuse the FINISHED runs of the same settings and data)")
    args = ap.parse_args(argv)
    experiment = "field_quick" if args.quick else "field"
    args.out = args.out or PAGES[tier_of(args)]
    datasets = list(args.datasets or DATASETS)
    if args.datasets is None and not args.quick and fashion_mnist_installed():
        datasets.append("fashion-mnist")
    times, failed = {}, []
    if not args.report_only:
        for part in args.parts:
            times[part], code = sweep(part, experiment, args.quick, datasets, args.jobs, args.tracking_uri,
                                      args.resume)
            if code != 0:
                failed.append(part)
                print(f"warning: a job of {part} failed (exit {code}); the other parts go on", flush=True)
    write_page(args, experiment, datasets, times)
    if failed:
        print(f"{len(failed)} part(s) had failed jobs: {', '.join(failed)}; run the command again to retry only "
              "the jobs that did not finish", flush=True)
    return 1 if failed else 0


#: the full tier's work per run over the quick tier's: outer folds x (fits per inner fold x inner
#: folds + the refit of the best), and the deep learners' epochs. A classic learner that fits the
#: values of its ``path_params`` together (PL-KNN's k: plcore.run.shared_search) makes one fit of the
#: full grid's points that differ only there; a deep learner's stacked fit is counted as one per point
#: (high). Training sets grow too (not counted: the estimate is low for methods superlinear in n)
def full_over_quick(run, registry) -> float:
    import math

    method = run.name.split(" · ")[0]
    kinds = ("reducer", "learner") if "+" in method else ("clusterer" if run.tags.get("protocol") == "clustering"
                                                          else "learner",)
    deep = run.params.get("learner.n_epochs") is not None
    grid, together = 1, 1
    for kind, name in zip(kinds, method.split("+")):
        comp = registry.components.get((kind, name))
        if comp is not None and comp.spec.search_space:
            grid *= math.prod(len(v) for v in comp.spec.search_space.values())
            if kind == "learner" and not deep:
                path = _path_params(name)
                together *= math.prod(len(v) for k, v in comp.spec.search_space.items() if k in path)
    if run.tags.get("protocol") == "clustering":  # every grid point fitted once per partition
        return (10 * grid) / (3 * min(grid, 2))
    epochs = 4.0 if run.params.get("learner.n_epochs") == "50" else 1.0
    quick = 3 * (min(grid, 2) * 2 + 1) if grid > 1 else 3
    full = 10 * (grid // together * 3 + 1) if grid > 1 else 10
    return epochs * full / quick


def full_tier_estimate(runs) -> tuple[float, float]:
    """(sum of the quick runs' durations, the same scaled to the full tier), in seconds."""
    by = full_tier_by(runs, lambda r: None)
    return by.get(None, (0.0, 0.0))


def full_tier_by(runs, key) -> dict:
    """``key(run)`` -> (sum of those quick runs' durations, the same scaled to the full tier), seconds."""
    from plcore.registry import get_registry

    registry = get_registry()
    out: dict = {}
    for r in runs:
        if not r.end_time:
            continue
        seconds = max(0.0, (r.end_time - r.start_time) / 1000.0)
        quick, full = out.get(key(r), (0.0, 0.0))
        out[key(r)] = (quick + seconds, full + seconds * full_over_quick(r, registry))
    return out


def _part(run):
    """The preset (``experiment=...``) a run's sweep ran, or None."""
    return next((t.split("=", 1)[1] for t in run.tags.get("overrides", "").split() if t.startswith("experiment=")),
                None)


def where_the_time_goes(runs, times: dict) -> str:
    """The full tier's estimated wall time per preset (each preset's quick wall time scaled by its
    own runs' ratio) and how the deep learners share theirs."""
    by_part = full_tier_by([r for r in runs if _part(r) in times], _part)
    wall = {p: times[p] * full / quick for p, (quick, full) in by_part.items() if quick > 0}
    parts = ", ".join(f"{p} {h / 3600:.1f} h" for p, h in sorted(wall.items(), key=lambda kv: -kv[1]))
    text = f"Where it goes (each preset's quick wall time scaled by its own runs): {parts}."
    deep = [r for r in runs if _part(r) == "field_deep"]
    learners = full_tier_by(deep, lambda r: r.name.split(" · ")[0])
    slowest = sorted(learners.items(), key=lambda kv: -kv[1][1])
    total = sum(full for _, (_, full) in slowest)
    if len(slowest) > 5 and total > 0 and "field_deep" in wall:
        five = sum(full for _, (_, full) in slowest[:5]) / total
        stacking = sum(_shares_a_fit(name) for name, _ in slowest[5:])
        text += (f" The five slowest of the {len(learners)} deep learners "
                 f"({', '.join(name for name, _ in slowest[:5])}) take {five:.0%} of field_deep's time "
                 f"(about {wall['field_deep'] * five / 3600:.0f} h); the other {len(learners) - 5}, "
                 f"{wall['field_deep'] * (1 - five) / 3600:.0f} h"
                 + (f", an estimate on the high side for the {stacking} that stack their configurations: the "
                    "full tier stacks the 4 points of the grid where the quick tier stacks 2." if stacking else "."))
    return text


def _shares_a_fit(name) -> bool:
    """Whether learner ``name`` fits the values of a grid together (the tag ``path_params``)."""
    return bool(_path_params(name))


def _path_params(name) -> tuple:
    """The parameters learner ``name`` fits together (its tag ``path_params``)."""
    from plcore.registry import get_registry
    from plcore.tags import get_pll_tags

    try:
        return tuple(get_pll_tags(get_registry().create("learner", name)).path_params)
    except Exception:  # noqa: BLE001 -- a plugin no longer installed: counted as not sharing
        return ()


def part_times(runs) -> tuple[dict, bool]:
    """Each preset's time from its logged runs (seconds): the first start to the last end, or, where
    its runs come from several sweeps (an interrupted command, resumed), the sum of the runs' own
    durations divided by the sweep's number of parallel jobs observed; and whether any was resumed."""
    spans: dict = {}
    for r in runs:
        part = _part(r)
        if part in PARTS and r.end_time:
            spans.setdefault(part, []).append(r)
    times, resumed = {}, False
    for part, rs in spans.items():
        if len({r.tags.get("hydra.sweep.dir") for r in rs}) > 1:
            resumed = True
            workers = max(1, len({r.tags.get("pid") for r in rs if r.tags.get("hydra.sweep.dir")
                                  == rs[-1].tags.get("hydra.sweep.dir")}))
            times[part] = sum(r.end_time - r.start_time for r in rs) / 1000.0 / workers
        else:
            times[part] = (max(r.end_time for r in rs) - min(r.start_time for r in rs)) / 1000.0
    return times, resumed


def _shown(path: str) -> str:
    """``path`` as a page may show it: relative to the working directory, or only its name where it
    lies elsewhere (no page holds a path of the machine it was made on)."""
    rel = os.path.relpath(os.path.abspath(path))
    return Path(path).name if rel.startswith("..") else rel


def tier_of(args) -> str:
    """``"quick"`` or ``"full"``: the tier the command runs."""
    return "quick" if args.quick else "full"


def page_command(args) -> str:
    """The command that makes the page, as the page shows it (``--out`` only where it is not the tier's
    own page)."""
    return "OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field.py" + (
        " --quick" if args.quick else "") + (f" --parts {' '.join(args.parts)}" if set(args.parts) != set(PARTS) else "") + (
        f" --datasets {' '.join(args.datasets)}" if args.datasets else "") + (
        f" --out {_shown(args.out)}" if os.path.abspath(args.out) != os.path.abspath(PAGES[tier_of(args)]) else "")


def page_link(tier: str, out: str) -> str:
    """The ``tier``'s page as the page ``out`` names it: a link where the two lie side by side, else
    its path in the repository (never a path of this machine)."""
    page = os.path.abspath(PAGES[tier])
    if os.path.dirname(os.path.abspath(out)) == os.path.dirname(page):
        return f"[the {tier} tier's page]({os.path.basename(page)})"
    return f"the {tier} tier's page ({PAGES[tier]})"


def write_page(args, experiment: str, datasets, times: dict) -> None:
    from plcore.run.comparison_report import compared_runs, comparison_report, log_parent_run
    from plcore.run.runs import load_runs

    tier = tier_of(args)
    command = page_command(args)
    runs = load_runs(args.tracking_uri, experiment_name=experiment)
    used = compared_runs(runs)  # the latest run of each cell: re-runs and superseded runs do not count
    logged, resumed = part_times(used)
    measured = bool(times) and not resumed
    times = times if measured else {p: t for p, t in sorted(logged.items(), key=lambda kv: PARTS.index(kv[0]))}
    total = sum(times.values())
    which = f"this {tier} tier" if set(times) == set(PARTS) else f"the presets run ({', '.join(times)})"
    timing = (f"Wall time of {which}: **{total / 60:.0f} min** on {os.cpu_count()} cores "
              f"({', '.join(f'{p} {t / 60:.1f} min' for p, t in times.items())}"
              + ("" if measured else "; from the runs' own durations over the parallel jobs, the command having "
                 "been resumed" if resumed else "; from the first run's start to the last run's end of each preset")
              + ").")
    settings = ("3 outer folds (partitions), 2 random grid points chosen by 2-fold inner CV, deep learners 50 "
                "epochs, no Fashion-MNIST" if args.quick else
                "10 outer folds (partitions), each method's whole declared grid chosen by 3-fold inner CV, deep "
                "learners 200 epochs" + (", Fashion-MNIST included" if "fashion-mnist" in datasets else ""))
    intro = f"""The {tier} tier of the field table ({settings}). {timing}

Every method runs with its hyperparameters chosen on each training fold from the grid it declares
(`ComponentSpec.search_space`), scored by the covering rate of held-out candidate sets: no true label
is used to choose anything, and the test folds are never seen by the choice (`conf/experiment/field_base.yaml`).
Data with exact labels (ecoli, satimage, semeion, digits) get uniform candidate sets with three false
positives per row; lost and msrc-v2 keep their own. The clustering section is the partial-label
clustering task (a tenth of the rows keep their candidate sets; ACC and NMI on the others). Nothing on
this page was tuned after seeing it; the quick tier's settings are a cost cut, not a choice."""
    if args.quick:
        intro += f"""

This tier is the field table's smoke test; {page_link('full', args.out)} is its headline."""
    missing = [p for p in PARTS if p not in logged]  # no run in the store (this command may have run fewer)
    if not args.quick and missing:
        intro += f"""

**Part of the full tier**: {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} not run in this tier, so
{'its methods are' if len(missing) == 1 else 'their methods are'} not on this page; {page_link('quick', args.out)}
(`benchmarks/field.py --quick`) has all four presets and estimates the full tier's time of each."""
    if args.quick and times:
        quick_s, full_s = full_tier_estimate(used)
        wall = sum(times.values())
        intro += f"""

**The full tier's time, estimated** (not run end to end): every quick run's measured time, scaled by
the full tier's work per run (10 instead of 3 outer folds; the whole grid's fits, one for the values a
classic learner fits together, times 3 inner folds plus the refit instead of 2 points times 2 plus 1; 200 instead of 50 epochs; 10 partitions of every grid point
for clustering), gives {full_s / quick_s:.0f} times this tier's work: about **{wall * full_s / quick_s / 3600:.0f} h**
on this machine, without Fashion-MNIST. It is a lower bound: the full tier's training folds are larger
(0.9 n instead of 0.67 n), which costs more than linearly for IPAL's graph, PL-SVM and the kNN methods.
Fashion-MNIST (70,000 rows) adds, for each deep learner, 130 fits of 200 epochs:
`benchmarks/fashion_mnist_column.py` measures PRODEN's column at about 10 h on one CPU thread and
1.9 h on one H100 with its configurations stacked ([Performance](../performance.md)); the other
learners' columns and the classic methods on it were not timed.

{where_the_time_goes(used, times)}"""
    report = comparison_report(runs, args.out, title=f"The field table ({tier} tier)", command=command,
                               intro=intro, rebuild=command + " --report-only", experiment=experiment)
    if report is None:
        raise SystemExit(f"no runs to compare in experiment {experiment!r} of {args.tracking_uri}")
    parent = log_parent_run(args.tracking_uri, experiment, report, f"experiment {experiment}")
    print(report.markdown)
    print(f"written to {args.out}; diagrams: {', '.join(map(str, report.diagrams))}; MLflow parent run {parent}")


if __name__ == "__main__":
    sys.exit(main())
