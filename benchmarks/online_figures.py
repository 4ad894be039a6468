"""Reproduce the set-up of Figs. 1-5 of the online PLL paper (Bhattacharjee & Manwani, PAKDD 2020).

For every data set and candidate-set size ``s`` the six learners of plcore-online
(Perceptron, Avg Perceptron, Max Perceptron, Pegasos, Avg Pegasos, Max Pegasos) run
through ``plcore.run.protocols.online`` with ``bags = FixedSizeBags(s)``: ``R`` runs, each
with fresh candidate sets and a fresh random order (the same ``R`` streams for all six
learners: same ``random_state``), prediction before each update, mistake rate w.r.t. the
true label after every trial, averaged over the runs. The exact-label baselines are fed
the true labels (their tag ``exact_label_baseline``).

Data we have for the paper's figures: ecoli (Fig. 2; s in {2, 4, 6}), satimage =
statlog-landsat-satellite (Fig. 3; s in {2, 4}), and as stand-ins for USPS (Fig. 4) and
MNIST (Fig. 5) the digit sets semeion and scikit-learn's digits (s in {2, 4, 6, 8}).
Dermatology (Fig. 1) is not available.

Logging: one MLflow run per data set and size (experiment ``plcore``, tracking URI from
``$MLFLOW_TRACKING_URI``) with the six final mistake rates as metrics, the PNG of the six
averaged mistake-rate curves under ``plots/`` and the curves as CSV. The script prints a
markdown table of the final mistake rates (mean +- std over runs).

Run from the repository root (``OMP_NUM_THREADS=1`` recommended)::

    PLCORE_DATA_HOME=/path/to/datasets MLFLOW_TRACKING_URI=sqlite:///mlflow.db \\
        .venv/bin/python benchmarks/online_figures.py [--runs 100] [--preprocessing standardize]
        [--only ecoli,satimage] [--eta 1.0] [--lam 0.1] [--no-mlflow] [--out DIR]

The paper does not state its preprocessing nor its eta / lambda; ``--preprocessing``
(fitted on the whole stream: all of it is training data) and the learners' defaults
(eta = 1, lam = 0.1) are ours.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

from plcore.datasets.bags import FixedSizeBags
from plcore.datasets.loaders import load_dataset
from plcore.run.protocols import Setup, online
from plcore_online.learners import (AvgPegasosLearner, AvgPerceptronLearner, MaxPegasosLearner,
                                    MaxPerceptronLearner, PegasosLearner, PerceptronLearner)

#: option name -> class, in the order of the paper's figures
LEARNERS = {"perceptron": PerceptronLearner, "avg_perceptron": AvgPerceptronLearner,
            "max_perceptron": MaxPerceptronLearner, "pegasos": PegasosLearner,
            "avg_pegasos": AvgPegasosLearner, "max_pegasos": MaxPegasosLearner}

#: (data set, paper figure, candidate-set sizes)
SETUPS = [
    ("ecoli", "Fig. 2 (Ecoli)", (2, 4, 6)),
    ("satimage", "Fig. 3 (Satimage)", (2, 4)),
    ("semeion", "Fig. 4 stand-in (USPS)", (2, 4, 6, 8)),
    ("digits", "Fig. 5 stand-in (MNIST)", (2, 4, 6, 8)),
]
LABELS = {"perceptron": "Perceptron", "avg_perceptron": "Avg Perceptron",
          "max_perceptron": "Max Perceptron", "pegasos": "Pegasos", "avg_pegasos": "Avg Pegasos",
          "max_pegasos": "Max Pegasos"}
STYLES = {"perceptron": ("#1f77b4", ":"), "avg_perceptron": ("#1f77b4", "-"),
          "max_perceptron": ("#1f77b4", "--"), "pegasos": ("#d62728", ":"),
          "avg_pegasos": ("#d62728", "-"), "max_pegasos": ("#d62728", "--")}


def make_learner(name, eta, lam):
    cls = LEARNERS[name]
    return cls(eta=eta) if "perceptron" in name else cls(lam=lam)


def figure(curves, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, curve in curves.items():
        color, ls = STYLES[name]
        ax.plot(np.arange(1, len(curve) + 1), curve, color=color, ls=ls, lw=1.4, label=LABELS[name])
    ax.set_xlabel("number of rounds")
    ax.set_ylabel("average mistake rate")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100, help="R, runs per learner (paper: 100)")
    ap.add_argument("--preprocessing", default="standardize", choices=["standardize", "minmax", "none"])
    ap.add_argument("--only", default="", help="comma-separated data sets (default: all)")
    ap.add_argument("--eta", type=float, default=1.0, help="Perceptron step size")
    ap.add_argument("--lam", type=float, default=0.1, help="Pegasos lambda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    ap.add_argument("--no-mlflow", action="store_true")
    ap.add_argument("--out", default=None, help="also write the PNGs and the table to this folder")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)

    client = exp_id = None
    if not args.no_mlflow:
        from mlflow.tracking import MlflowClient

        from plcore.tracking import prepare_store

        uri = os.environ.get("MLFLOW_TRACKING_URI", "sqlite:///mlflow.db")
        exp_id = prepare_store(uri, "plcore")
        client = MlflowClient(tracking_uri=uri)

    rows = []
    t_start = time.perf_counter()
    for dname, fig_name, sizes in SETUPS:
        if only and dname not in only:
            continue
        ds = load_dataset(dname, args.data_home)
        for s in sizes:
            t0 = time.perf_counter()
            curves, finals = {}, {}
            for lname in LEARNERS:
                res = online(Setup(learner=make_learner(lname, args.eta, args.lam), bags=FixedSizeBags(s)),
                             ds, n_runs=args.runs, preprocessing=args.preprocessing,
                             random_state=args.seed, progress=False)
                curves[lname] = res.curves["mistake_rate"]
                finals[lname] = (res.summary["mistake_rate_final_mean"], res.summary["mistake_rate_final_std"])
            secs = time.perf_counter() - t0
            title = (f"{ds.name} (n={ds.n_samples}, q={ds.n_classes}), candidate sets of size {s}; "
                     f"mean of {args.runs} runs, {args.preprocessing}\n{fig_name}")
            fig = figure(curves, title)
            stem = f"online_{dname}_s{s}_{args.preprocessing}"
            if out:
                fig.savefig(out / f"{stem}.png", dpi=110)
            if client is not None:
                run = client.create_run(exp_id, run_name=f"online-figures-{dname}-s{s}",
                                        tags={"benchmark": "online_figures", "dataset": dname,
                                              "protocol": "online", "figure": fig_name})
                rid = run.info.run_id
                for k, v in {"dataset": dname, "bags": "fixed_size", "bags.s": s, "runs": args.runs,
                             "preprocessing": args.preprocessing, "eta": args.eta, "lam": args.lam,
                             "seed": args.seed}.items():
                    client.log_param(rid, k, v)
                for lname, (m, sd) in finals.items():
                    client.log_metric(rid, f"{lname}.mistake_rate_final_mean", m)
                    client.log_metric(rid, f"{lname}.mistake_rate_final_std", sd)
                client.log_figure(rid, fig, f"plots/{stem}.png")
                buf = io.StringIO()
                names = list(curves)
                buf.write("trial," + ",".join(names) + "\n")
                for t in range(len(curves[names[0]])):
                    buf.write(f"{t + 1}," + ",".join(f"{curves[nm][t]:.6g}" for nm in names) + "\n")
                client.log_text(rid, buf.getvalue(), f"curves/{stem}.csv")
                client.set_terminated(rid, "FINISHED")
            import matplotlib.pyplot as plt

            plt.close(fig)
            rows.append((dname, s, finals, secs))
            best = min(finals, key=lambda k: finals[k][0] if "_" in k else np.inf)
            print(f"{dname} s={s}: " + " ".join(f"{k}={v[0]:.3f}" for k, v in finals.items())
                  + f"  best PL: {best}  ({secs:.0f} s)", file=sys.stderr, flush=True)

    lines = [f"Final average mistake rate (mean +- std over {args.runs} runs; preprocessing "
             f"{args.preprocessing}; eta={args.eta}, lam={args.lam}; bold: best partial-label learner)", "",
             "| data set | s | " + " | ".join(LABELS[k] for k in LEARNERS) + " | best PL | Max < Avg? |",
             "|---|---|" + "---|" * len(LEARNERS) + "---|---|"]
    for dname, s, finals, _ in rows:
        pl = [k for k in LEARNERS if "_" in k]
        best = min(pl, key=lambda k: finals[k][0])
        cells = []
        for k in LEARNERS:
            cell = f"{finals[k][0]:.3f} ± {finals[k][1]:.3f}"
            cells.append(f"**{cell}**" if k == best else cell)
        maxwins = sum(finals[f"max_{a}"][0] < finals[f"avg_{a}"][0] for a in ("perceptron", "pegasos"))
        lines.append(f"| {dname} | {s} | " + " | ".join(cells) + f" | {LABELS[best]} | {maxwins}/2 |")
    lines.append("")
    lines.append(f"total time {time.perf_counter() - t_start:.0f} s")
    table = "\n".join(lines)
    print(table)
    if out:
        (out / f"online_figures_{args.preprocessing}.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
