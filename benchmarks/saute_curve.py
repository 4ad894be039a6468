"""Accuracy curve of the SAUTE paper's Fig. 2: PL-KNN after SAUTE / RS / MR / MJE as d' grows.

For every data set and every fraction beta in 0.05, 0.10, ..., 0.60 (d' = ceil(beta d)),
each selector is evaluated with plcore's k-fold protocol,
``plcore.run.protocols.kfold(Setup(reducer=<selector>(n_features=beta), learner=PlKnnLearner()))``
(10 shuffled folds, seed 0, z-scored with training-fold statistics, PL-KNN k = 10), next to
PL-KNN on all features ("Ori" in the paper). beta = 0.15 is the default ``n_features``.

One summary MLflow run per data set (tracking URI ``$MLFLOW_TRACKING_URI``, else
``sqlite:///mlflow.db`` in the current directory; experiment ``plcore``): metrics
``<selector>/accuracy_mean`` and ``<selector>/accuracy_std`` with ``step = percent``,
``all_features/accuracy_mean``, a PNG plot ``plots/accuracy_vs_n_features.png`` and the
table as ``curve.md``. The markdown tables are printed.

Run from the repository root, one process, threads limited::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
    PLCORE_DATA_HOME=../shared/datasets MLFLOW_TRACKING_URI=sqlite:////tmp/plcore-saute/mlflow.db \\
    .venv/bin/python benchmarks/saute_curve.py [--datasets lost msrc-v2] [--fractions ...]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from plcore.datasets.loaders import load_dataset
from plcore.learners import PlKnnLearner
from plcore.run.protocols import Setup, kfold
from plcore_saute import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)

SELECTORS = {
    "saute": lambda frac, seed: SauteReducer(n_features=frac, random_state=seed),
    "random_selection": lambda frac, seed: RandomSelectionReducer(n_features=frac, random_state=seed),
    "max_relevance": lambda frac, seed: MaxRelevanceReducer(n_features=frac, random_state=seed),
    "max_joint_entropy": lambda frac, seed: MaxJointEntropyReducer(n_features=frac),
}
LABELS = {"saute": "SAUTE", "random_selection": "RS", "max_relevance": "MR",
          "max_joint_entropy": "MJE", "all_features": "Ori (all features)"}


def run_dataset(name, data_home, fractions, seed, n_splits, preprocessing, k):
    ds = load_dataset(name, data_home=data_home)
    d = ds.X.shape[1]
    out = {"d": d, "n": ds.X.shape[0], "q": ds.n_classes, "curves": {}, "times": {}}
    t0 = time.perf_counter()
    base = kfold(Setup(learner=PlKnnLearner(k=k)), ds, n_splits=n_splits, preprocessing=preprocessing,
                 random_state=seed, progress=False)
    out["all_features"] = (base.summary["accuracy_mean"], base.summary["accuracy_std"])
    print(f"[{name}] all features: {out['all_features'][0]:.4f} ({time.perf_counter() - t0:.1f}s)",
          file=sys.stderr, flush=True)
    for sel, make in SELECTORS.items():
        rows = []
        t_sel = time.perf_counter()
        for frac in fractions:
            setup = Setup(reducer=make(frac, seed), learner=PlKnnLearner(k=k))
            res = kfold(setup, ds, n_splits=n_splits, preprocessing=preprocessing, random_state=seed,
                        progress=False)
            rows.append((frac, math.ceil(frac * d - 1e-9), res.summary["accuracy_mean"],
                         res.summary["accuracy_std"], res.summary.get("fit_time_mean", np.nan)))
            print(f"[{name}] {sel} beta={frac:.2f} d'={rows[-1][1]} acc={rows[-1][2]:.4f} "
                  f"fit={rows[-1][4]:.2f}s", file=sys.stderr, flush=True)
        out["curves"][sel] = rows
        out["times"][sel] = time.perf_counter() - t_sel
    return out


def table(name, out, fractions):
    sels = list(SELECTORS)
    head = "| beta | d' | " + " | ".join(LABELS[s] for s in sels) + " |"
    lines = [f"### {name} (n={out['n']}, d={out['d']}, q={out['q']}); "
             f"PL-KNN on all features: {out['all_features'][0]:.3f} ± {out['all_features'][1]:.3f}",
             "", head, "|" + " --- |" * (len(sels) + 2)]
    for i, frac in enumerate(fractions):
        cells = []
        best = max(out["curves"][s][i][2] for s in sels)
        for s in sels:
            _, _, mean, std, _ = out["curves"][s][i]
            cell = f"{mean:.3f} ± {std:.3f}"
            cells.append(f"**{cell}**" if mean == best else cell)
        lines.append(f"| {frac:.2f} | {out['curves'][sels[0]][i][1]} | " + " | ".join(cells) + " |")
    mean_fit = {s: np.mean([r[4] for r in out["curves"][s]]) for s in sels}
    lines.append("")
    lines.append("mean fit time per fold (s, selector + PL-KNN): "
                 + ", ".join(f"{LABELS[s]} {mean_fit[s]:.2f}" for s in sels))
    return "\n".join(lines)


def plot(name, out, fractions):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    pct = [round(100 * f) for f in fractions]
    for sel, marker in zip(SELECTORS, "os^v"):
        ax.plot(pct, [r[2] for r in out["curves"][sel]], marker=marker, label=LABELS[sel])
    ax.axhline(out["all_features"][0], color="k", ls="--", lw=1, label=LABELS["all_features"])
    ax.set_xlabel("selected features d' (% of d)")
    ax.set_ylabel("PL-KNN test accuracy (10-fold mean)")
    ax.set_title(f"{name}: accuracy vs number of selected features")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def log_mlflow(name, out, fractions, args, md):
    import mlflow
    from mlflow.entities import Metric, Param

    from plcore.tracking import prepare_store

    uri = os.environ.get("MLFLOW_TRACKING_URI", "sqlite:///mlflow.db")
    exp_id = prepare_store(uri, "plcore")
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    run = client.create_run(exp_id, run_name=f"saute_curve-{name}",
                            tags={"benchmark": "saute_curve", "dataset": name})
    rid = run.info.run_id
    try:
        params = {"dataset": name, "seed": args.seed, "n_splits": args.n_splits,
                  "preprocessing": args.preprocessing, "learner": "plknn", "learner.k": args.k,
                  "fractions": ",".join(f"{f:.2f}" for f in fractions),
                  "selectors": ",".join(SELECTORS)}
        client.log_batch(rid, params=[Param(k, str(v)) for k, v in params.items()])
        ts = int(time.time() * 1000)
        metrics = []
        for sel, rows in out["curves"].items():
            for frac, dprime, mean, std, fit in rows:
                step = int(round(100 * frac))
                metrics += [Metric(f"{sel}/accuracy_mean", mean, ts, step),
                            Metric(f"{sel}/accuracy_std", std, ts, step),
                            Metric(f"{sel}/fit_time_mean", fit, ts, step)]
                if sel == "saute":
                    metrics.append(Metric("all_features/accuracy_mean", out["all_features"][0], ts, step))
        metrics.append(Metric("all_features/accuracy_std", out["all_features"][1], ts, 0))
        for i in range(0, len(metrics), 500):
            client.log_batch(rid, metrics=metrics[i:i + 500])
        fig = plot(name, out, fractions)
        client.log_figure(rid, fig, "plots/accuracy_vs_n_features.png")
        client.log_text(rid, md, "curve.md")
        client.set_terminated(rid, "FINISHED")
    except BaseException:
        client.set_terminated(rid, "FAILED")
        raise
    return rid


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["lost", "msrc-v2"])
    p.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    p.add_argument("--fractions", nargs="+", type=float,
                   default=[round(0.05 * i, 2) for i in range(1, 13)])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-splits", type=int, default=10)
    p.add_argument("--preprocessing", default="standardize")
    p.add_argument("--k", type=int, default=10, help="PL-KNN neighbours")
    p.add_argument("--no-mlflow", action="store_true")
    args = p.parse_args(argv)
    for name in args.datasets:
        out = run_dataset(name, args.data_home, args.fractions, args.seed, args.n_splits,
                          args.preprocessing, args.k)
        md = table(name, out, args.fractions)
        print(md, flush=True)
        if not args.no_mlflow:
            rid = log_mlflow(name, out, args.fractions, args, md)
            print(f"\nMLflow run {rid} ({os.environ.get('MLFLOW_TRACKING_URI', 'sqlite:///mlflow.db')})\n",
                  flush=True)


if __name__ == "__main__":
    main()
