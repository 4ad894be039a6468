"""Is field/3's ranking valid? The four checks of issue 72, from the committed run files, as a page.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/leaderboard_validity.py \\
        [--results leaderboard] [--out docs/results/leaderboard_validity.md] [--skip-published]

1. **Converged with respect to the budget.** Every tuned row is chosen again from its files' kept
   checkpoints with half the steps (checkpoints at or below half the budget) and with half the
   configurations (the first two), and the rows ranked by their average rank over the tasks every
   row has finished; Kendall's tau between those rankings and the full budget's, per group and
   over every row. Nothing is re-run.
2. **At the field's level.** The field's published tabular recipe (``experiment=deep_published``:
   MLP 3 x 300 with batch norm, Adam one-cycle to 0.01, weight decay 1e-4, 200 epochs, batch 16,
   min-max features) trained on field/3's own lost and msrc-v2 training rows and scored on its test
   rows, for PRODEN, CC, CAVL, POP, VALEN and PiCO (``--skip-published``: left out), beside their
   tuned rows.
3. **Default against tuned.** Per component, the mean accuracy and the rank among every row of its
   default and of its tuned choice.
4. **Beside PLENCH's protocol.** Kendall's tau between the tuned deep rows' accuracy on lost and
   msrc-v2 and the CR column of ``docs/results/plench_tabular.md``.
5. **Decided.** The page's Bayesian verdicts: each group's best row against its median row, the
   share of rows decided against the best, and, where a goal is not met, the same over more tasks
   drawn from the finished ones: how many tasks of this kind it would take.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

PUBLISHED = ["proden", "cc", "cavl", "pop", "valen", "pico"]


def chosen_accuracy(tuning: dict, *, max_steps=None, n_configurations=None) -> float:
    """The tuned choice's test accuracy under a smaller budget: the largest validation covering rate
    over the first ``n_configurations`` configurations' checkpoints at or below ``max_steps``
    (ties: the earliest checkpoint, the first configuration), as field/3 chooses."""
    from plcore.run.checkpoints import select_checkpoints

    curves = []
    for conf in tuning["configurations"][:n_configurations]:
        keep = [i for i, s in enumerate(conf["steps"]) if max_steps is None or s <= max_steps or s == 0]
        keep = keep or [0]
        curves.append(np.column_stack([np.asarray(conf[c])[keep] for c in
                                       ("covering_rate", "approximated_accuracy", "val_accuracy", "test_accuracy")]))
    return select_checkpoints(curves)["cr"].test_accuracy


def collect(protocol, results) -> tuple[dict, int]:
    """``({row key: {"name", "label", "group", "folds": {task: {fold: tuning}}, "scores": {task: {fold: scores}}}},
    number of invalid files)`` of field/3's ok classification files (ranked rows) that pass the
    leaderboard's checks (:func:`plcore.leaderboard.checks.scan`, against the installed rows), their
    scores as recomputed from their predictions. An invalid file is left out and counted."""
    from plcore.leaderboard.checks import scan
    from plcore.registry import get_registry

    found = scan(protocol, results, registry=get_registry(), data_home=os.environ.get("PLCORE_DATA_HOME"))
    rows: dict = {}
    for path, rec in found.valid:
        c = rec.component
        if rec.track != "classification" or not rec.ok or c.get("section", "ranked") != "ranked":
            continue
        row = rows.setdefault(c.row_key, {"name": c.name, "label": c.get("display_name", c.name),
                                          "group": c.get("group", "classic"), "folds": defaultdict(dict),
                                          "scores": defaultdict(dict)})
        row["folds"][rec.dataset.name][rec.fold.index] = rec.tuning
        row["scores"][rec.dataset.name][rec.fold.index] = found.scores.get(path, rec.scores)
    return rows, len(found.invalid)


def complete_tasks(rows: dict, protocol) -> list:
    """The tasks on which every row has every fold."""
    return [d for d in protocol.track_datasets("classification")
            if all(len(r["folds"].get(d, {})) == len(protocol.datasets[d]["splits"]["classification"])
                   for r in rows.values())]


def average_ranks(table: dict, keys: list, tasks: list) -> np.ndarray:
    M = np.array([[table[k][d] for k in keys] for d in tasks])
    return stats.rankdata(-M, axis=1).mean(axis=0)


def budget_table(rows, tasks, **budget) -> dict:
    return {k: {d: float(np.mean([chosen_accuracy(t, **budget) for t in r["folds"][d].values()])) for d in tasks}
            for k, r in rows.items()}


def convergence(rows: dict, tasks: list, protocol) -> list:
    spec = protocol.track("classification").budget
    full = budget_table(rows, tasks)
    half_steps = budget_table(rows, tasks, max_steps=spec.steps // 2)
    half_confs = budget_table(rows, tasks, n_configurations=max(1, spec.configurations // 2))
    out = ["| rows | tasks | tau, half the steps | tau, half the configurations |", "|---|---|---|---|"]
    for group in ("classic", "deep", None):
        keys = sorted(k for k, r in rows.items() if group is None or r["group"] == group)
        if len(keys) < 3:
            continue
        ref = average_ranks(full, keys, tasks)
        taus = [stats.kendalltau(ref, average_ranks(t, keys, tasks))[0] for t in (half_steps, half_confs)]
        out.append(f"| {group or 'every row'} ({len(keys)}) | {len(tasks)} | {taus[0]:.3f} | {taus[1]:.3f} |")
    return out


def default_vs_tuned(rows: dict, tasks: list) -> list:
    table = {}
    for k, r in rows.items():
        for variant, metric in (("default", "default_accuracy"), ("tuned", "accuracy")):
            table[(k, variant)] = {d: float(np.mean([s[metric] for s in r["scores"][d].values()])) for d in tasks}
    keys = sorted(table)
    ranks = dict(zip(keys, average_ranks(table, keys, tasks)))
    out = ["| method | group | default accuracy | tuned accuracy | tuned - default (points) | default rank | tuned rank |",
           "|---|---|---|---|---|---|---|"]
    for k in sorted(rows, key=lambda k: ranks[(k, "tuned")]):
        d, t = np.mean(list(table[(k, "default")].values())), np.mean(list(table[(k, "tuned")].values()))
        out.append(f"| {rows[k]['label']} | {rows[k]['group']} | {d:.3f} | {t:.3f} | {100 * (t - d):+.1f} | "
                   f"{ranks[(k, 'default')]:.1f} | {ranks[(k, 'tuned')]:.1f} |")
    up = sum(ranks[(k, "tuned")] < ranks[(k, "default")] for k in rows)
    out += ["", f"Over the {len(tasks)} tasks every row has finished: the tuned choice ranks above the default for "
                f"{up} of {len(rows)} components."]
    return out


def decided(rows: dict, tasks: list, sizes=(25, 50, 100, 200), draws: int = 20, seed: int = 0) -> list:
    """How much the Bayesian signed-rank test decides (plcore.stats.bayesian, as the page): per
    group and over every row (default and tuned rows), the best row (by average rank) against the
    median row, and the share of rows decided against the best; then, where a goal is not met, the
    same over ``sizes`` tasks drawn with replacement from the finished ones (``draws`` draws each):
    how many tasks of this kind it would take."""
    from plcore.stats import signed_rank

    table = {}
    for k, r in rows.items():
        for variant, metric in (("default", "default_accuracy"), ("tuned", "accuracy")):
            table[(k, variant)] = np.array([np.mean([s[metric] for s in r["scores"][d].values()]) for d in tasks])

    def outcome(keys, columns):
        M = np.array([table[k][columns] for k in keys]).T
        ranks = stats.rankdata(-M, axis=1).mean(axis=0)
        order = [keys[i] for i in np.argsort(ranks, kind="stable")]
        best, median = order[0], order[len(order) // 2]
        verdicts = [signed_rank(table[k][columns], table[best][columns], nsamples=5000).decided for k in order[1:]]
        return (signed_rank(table[median][columns], table[best][columns], nsamples=5000).decided,
                float(np.mean([v != "undecided" for v in verdicts])))

    out = ["| rows | tasks | median against best | rows decided against the best | goal met |", "|---|---|---|---|---|"]
    rng = np.random.RandomState(seed)
    unmet = []
    for group in ("classic", "deep", None):
        keys = sorted(k for k in table if group is None or rows[k[0]]["group"] == group)
        median, share = outcome(keys, np.arange(len(tasks)))
        goal = median != "undecided" if group else share >= 2 / 3
        out.append(f"| {group or 'every row'} ({len(keys)}) | {len(tasks)} | {median} | {100 * share:.0f}% | "
                   f"{'yes' if goal else 'no'} |")
        if not goal:
            unmet.append((group, keys))
    if unmet:
        out += ["", "Where a goal is not met: the same over more tasks of this kind (tasks drawn with replacement "
                    f"from the {len(tasks)} finished ones, {draws} draws each; the share of draws whose median row "
                    "is decided, and the mean share of rows decided against the best):", "",
                "| rows | " + " | ".join(f"{n} tasks" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
        for group, keys in unmet:
            cells = []
            for n in sizes:
                got = [outcome(keys, rng.randint(len(tasks), size=n)) for _ in range(draws)]
                cells.append(f"{100 * np.mean([m != 'undecided' for m, _ in got]):.0f}% / "
                             f"{100 * np.mean([s for _, s in got]):.0f}%")
            out.append(f"| {group or 'every row'} | " + " | ".join(cells) + " |")
    return out


def plench_columns(path: Path) -> dict:
    """``{data set: {algorithm: CR accuracy}}`` from the committed PLENCH-protocol page's tables."""
    out, current = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"^### (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is not None and len(cells) == 5 and re.match(r"^[\d.]+ ±", cells[1]):
            current[cells[0]] = float(cells[1].split()[0]) / 100
    return out


def beside_plench(rows: dict, path: Path) -> list:
    columns = plench_columns(path)
    out = ["| data set | deep rows on both | Kendall's tau, field/3 tuned against PLENCH's CR column |", "|---|---|---|"]
    for dataset in ("lost", "msrc-v2"):
        ours = {r["label"]: float(np.mean([s["accuracy"] for s in r["scores"][dataset].values()]))
                for r in rows.values() if r["group"] == "deep" and r["scores"].get(dataset)}
        both = sorted(set(ours) & set(columns.get(dataset, {})))
        if len(both) < 3:
            out.append(f"| {dataset} | {len(both)} | – |")
            continue
        tau = stats.kendalltau([ours[a] for a in both], [columns[dataset][a] for a in both])[0]
        out.append(f"| {dataset} | {len(both)} | {tau:.3f} |")
    return out


def published(rows: dict, protocol, data_home) -> list:
    """The published recipe on field/3's lost and msrc-v2 folds beside the tuned rows."""
    from sklearn.base import clone

    from plcore.leaderboard.jobs import create_component
    from plcore.leaderboard.protocol import checked_data
    from plcore.metrics import accuracy
    from plcore.run.pipeline import make_preprocessor
    from plcore.registry import get_registry

    recipe = dict(hidden_layer_sizes=(300, 300, 300), batch_norm=True, optimizer="adam", learning_rate=0.01,
                  lr_schedule="one_cycle", weight_decay=1e-4, n_epochs=200, batch_size="auto")
    registry = get_registry()
    by_name = {r["name"]: r for r in rows.values()}
    out = ["| method | data set | folds | published recipe | field/3 tuned | tuned - recipe (points) |",
           "|---|---|---|---|---|---|"]
    for dataset in ("lost", "msrc-v2"):
        (_, drawn), splits = checked_data(protocol, dataset, data_home)
        for name in PUBLISHED:
            accs = []
            for fold, (train, test) in enumerate(splits["classification"]):
                scaler = make_preprocessor("minmax_nonconstant").fit(drawn.X[train])
                learner = clone(create_component(registry, "learner", name, 0)).set_params(**recipe)
                learner.fit(scaler.transform(drawn.X[train]), drawn.S[train])
                accs.append(accuracy(drawn.y_true[test], learner.predict(scaler.transform(drawn.X[test]))))
            row = by_name.get(name)
            tuned = (float(np.mean([s["accuracy"] for s in row["scores"][dataset].values()]))
                     if row and row["scores"].get(dataset) else None)
            gap = "–" if tuned is None else f"{100 * (tuned - np.mean(accs)):+.1f}"
            label = row["label"] if row else name
            out.append(f"| {label} | {dataset} | {len(accs)} | {np.mean(accs):.3f} | "
                       f"{'–' if tuned is None else f'{tuned:.3f}'} | {gap} |")
            print(out[-1], flush=True)
    return out + ["", *why_below(protocol, data_home)]


def why_below(protocol, data_home) -> list:
    """What separates the recipe from a field/3 tuned row, in optimizer steps (nothing trained)."""
    from math import ceil

    from plcore.leaderboard.protocol import checked_data

    budget = protocol.track("classification").budget
    said, ratios = [], []
    for dataset in ("lost", "msrc-v2"):
        _, splits = checked_data(protocol, dataset, data_home)
        n_train = len(splits["classification"][0][0])
        said.append(f"{dataset} {200 * ceil(n_train / 16):,} ({n_train} training rows)")
        ratios.append(200 * ceil(n_train / 16) / budget.steps)
    return [f"Why the tuned rows sit below the recipe: the recipe makes many more optimizer steps, 200 epochs at "
            f"batch 16 ({'; '.join(said)}), against field/3's {budget.steps:,} for every configuration (at "
            f"the defaults' batch of 128 row passes of the same order, but {min(ratios):.0f}-{max(ratios):.0f} "
            f"times fewer updates), and it trains "
            f"a batch-normalised 3 x 300 network on min-max features with a one-cycle schedule to 0.01 where "
            f"field/3's rows keep each method's own network on standardised features and draw "
            f"{budget.configurations - 1} other configurations from its space. How much of the gap each of these accounts for was not "
            f"measured here; the budget was fixed by the cost model (docs/leaderboard.md, \"field/3: the cost "
            f"model\"), and the recipe over every row and task would cost about ten times field/3's deep track."]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="leaderboard")
    parser.add_argument("--out", default="docs/results/leaderboard_validity.md")
    parser.add_argument("--skip-published", action="store_true")
    args = parser.parse_args(argv)

    from plcore.leaderboard.protocol import load_protocol

    protocol = load_protocol("field/3")
    rows, n_invalid = collect(protocol, args.results)
    tasks = complete_tasks(rows, protocol)
    n_tasks = len(protocol.track_datasets("classification"))
    lines = ["# Is field/3's ranking valid?", "",
             "Regenerated by `OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets python "
             "benchmarks/leaderboard_validity.py" + (" --skip-published" if args.skip_published else "")
             + "` from the committed field/3 run files "
             f"({len(rows)} ranked rows with a file; {len(tasks)} of the {n_tasks} tasks finished by every row, the tasks these "
             "checks are computed on). Goals from issue 72; met or not, as measured.", "",
             "Each file passes the leaderboard's checks (the page's scan: its scores recomputed from its predictions, its "
             "tuned choice the best of its stored checkpoints)"
             + (f"; {n_invalid} invalid file(s) are left out" if n_invalid else "")
             + ". A smaller budget's choice (check 1) is scored by the test accuracy its file stores for that checkpoint: "
             "only the chosen configuration's predictions are kept, so those accuracies are as the files report them.",
             ""]
    if len(tasks) < n_tasks:
        lines += [f"**The run is not complete**: these figures are over {len(tasks)} task(s), of the rows that have a "
                  "file, and are not field/3's result; they change as its files land.", ""]
    enough = len(tasks) >= 2
    lines += ["## 1. Converged with respect to the budget (goal: tau >= 0.9)", ""]
    lines += convergence(rows, tasks, protocol) if enough else ["Fewer than two tasks finished by every row yet."]
    lines += ["", "## 2. At the field's level (goal: every tuned row within 2 points of the recipe, or above)", ""]
    lines += (["Not computed here (`--skip-published`): the published recipe trains six learners on field/3's lost "
               "and msrc-v2 folds, about six minutes on one core."] if args.skip_published else
              published(rows, protocol, os.environ.get("PLCORE_DATA_HOME")))
    lines += ["", "## 3. Default against tuned", ""]
    lines += default_vs_tuned(rows, tasks) if enough else ["Fewer than two tasks finished by every row yet."]
    lines += ["", "## 4. Beside PLENCH's protocol (docs/results/plench_tabular.md, CR column)", "",
              *beside_plench(rows, Path("docs/results/plench_tabular.md"))]
    lines += ["", "## 5. Decided (goals: in each group the best row decided against the median row; two thirds of "
                  "every row decided against the best)", "",
              "The Bayesian signed-rank test of the page (region of practical equivalence 1 point, 5,000 draws here) "
              "over the tasks every row has finished, default and tuned rows together.", ""]
    lines += decided(rows, tasks) if enough else ["Fewer than two tasks finished by every row yet."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
