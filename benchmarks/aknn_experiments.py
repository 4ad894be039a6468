"""PL A-kNN acceptance experiments (issue 8): 4 data sets x 4 noise levels x 4 learners.

Every configuration runs ``plcore.run.protocols.holdout`` (80/20 splits, ``--repeats`` seeds
drawn from ``random_state=0``, i.e. exactly what
``python -m plcore +learner=L protocol=holdout protocol.n_repeats=20 protocol.test_size=0.2
dataset=D bags=B bags.eta=E`` runs) and is logged as one MLflow run (experiment
``aknn``) at ``$MLFLOW_TRACKING_URI``. All learners see the same bags and splits (paired).

* lost, msrc-v2: real candidate sets, ``bags=drop_true`` (true label removed w.p. eta);
* digits, satimage: ``bags=cluster_noisy`` (the paper's instance-dependent noisy bags);
* learners: aknn, aknn_multiclass (plugin defaults), plknn (k=10), knn_oracle;
  ``ideal_knn`` is not a learner: PL-kNN with the single k in 1..50 that maximises the mean
  *test* accuracy over the repeats, chosen in hindsight with the true test labels (the
  paper's "ideal kNN that uses the optimal number of neighbours"; an upper reference, not
  a method);
* ``--preprocessing standardize`` (protocol default: z-scoring) or ``paper`` (Appendix D.2:
  :class:`AknnPreprocessor`, cube root for lost/msrc-v2, centering + alpha 0.25 for
  digits/satimage, no z-scoring) in front of every learner.

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets \
        MLFLOW_TRACKING_URI=sqlite:////tmp/plcore-aknn/mlflow.db \
        .venv/bin/python benchmarks/aknn_experiments.py --repeats 20

Prints a markdown table: accuracy mean +- std over the repeats, and the mean number of
neighbours used per query (A-kNN rules: per-query stopping k; oracle: the chosen k).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NearestNeighbors

from plcore import tracking
from plcore.datasets import load_dataset
from plcore.datasets.bags import ClusterNoisyBags, DropTrueBags
from plcore.learners import PlKnnLearner
from plcore.run.pipeline import build_pipeline
from plcore.run.protocols import ProtocolResult, Setup, apply_bags, holdout
from plcore.utils import dense_candidates
from plcore_aknn._rules import fixed_k_votes
from plcore_aknn import AknnLearner, AknnMulticlassLearner, AknnPreprocessor, KnnOracleLearner

DATASETS = {"lost": "drop_true", "msrc-v2": "drop_true", "digits": "cluster_noisy",
            "satimage": "cluster_noisy"}
ETAS = (0.0, 0.1, 0.2, 0.3)
_K_LOG: list = []   # mean k used per predict call, filled by the recording subclasses


def _recording(cls):
    """A subclass that logs the mean number of neighbours each predict used (clonable)."""

    def predict(self, X):
        if hasattr(cls, "predict_with_k"):
            labels, used = self.predict_with_k(X)
            _K_LOG.append(float(np.mean(used)))
            return labels
        _K_LOG.append(float(self.n_neighbors_))
        return super(sub, self).predict(X)

    sub = type(cls.__name__, (cls,), {"predict": predict, "__module__": __name__})
    return sub


LEARNERS = {
    "aknn": lambda: _recording(AknnLearner)(),
    "aknn_multiclass": lambda: _recording(AknnMulticlassLearner)(),
    "plknn": lambda: _recording(PlKnnLearner)(k=10),
    "knn_oracle": lambda: _recording(KnnOracleLearner)(),
    "ideal_knn": None,   # hindsight k on the test labels, see ideal_knn()
}
IDEAL_K_MAX = 50


def ideal_knn(setup, dataset, *, n_repeats, preprocessing, random_state=0, callback=None):
    """PL-kNN (linear weights) with the k in 1..50 best on the *test* labels, in hindsight.

    Same bags and splits as :func:`plcore.run.protocols.holdout`. Returns a ProtocolResult
    whose steps hold the accuracy of the chosen k per repeat.
    """
    rng = np.random.RandomState(random_state)
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_repeats)
    accs = []
    for seed in seeds:
        ds = apply_bags(dataset, setup.bags, int(seed))
        idx = np.arange(ds.n_samples)
        train, test = train_test_split(idx, test_size=0.2, random_state=int(seed))
        steps = [clone(e) for e in ([setup.reducer] if setup.reducer is not None else [])]
        pipe = build_pipeline(steps, preprocessing) if (steps or preprocessing != "none") else None
        Ztr = pipe.fit_transform(ds.X[train]) if pipe is not None else ds.X[train]
        Zte = pipe.transform(ds.X[test]) if pipe is not None else ds.X[test]
        S = dense_candidates(ds.S)[train]
        dist, ind = NearestNeighbors(n_neighbors=IDEAL_K_MAX).fit(Ztr).kneighbors(Zte)
        votes = fixed_k_votes(dist, S[ind], "linear")
        accs.append(np.mean(np.argmax(votes, axis=2) == ds.y_true[test][:, None], axis=0))
    accs = np.array(accs)                      # (repeats, K)
    best = int(np.argmax(accs.mean(axis=0)))
    res = ProtocolResult("holdout")
    for r, a in enumerate(accs[:, best]):
        step = {"step": r, "accuracy": float(a)}
        res.steps.append(step)
        if callback is not None:
            callback(step)
    res.summary = {"accuracy_mean": float(accs[:, best].mean()), "accuracy_std": float(accs[:, best].std()),
                   "k_used_mean": float(best + 1)}
    return res


def make_bags(kind, eta):
    return DropTrueBags(eta=eta) if kind == "drop_true" else ClusterNoisyBags(eta=eta)


def paper_preprocessor(kind):
    if kind == "drop_true":
        return AknnPreprocessor(first="cube_root", mix_alpha=0.1)
    return AknnPreprocessor(first="center", mix_alpha=0.25)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--preprocessing", choices=("standardize", "paper"), default="standardize")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--learners", default=",".join(LEARNERS))
    ap.add_argument("--table-only", default=None, help="print the table of --json files (comma-separated) and exit")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    if args.table_only:
        results = []
        for path in args.table_only.split(","):
            with open(path) as fh:
                results.extend(json.load(fh))
        args.learners = ",".join(dict.fromkeys(r["learner"] for r in results))
        args.datasets = ",".join(dict.fromkeys(r["dataset"] for r in results))
        args.preprocessing = results[0]["preprocessing"]
        print_table(results, args)
        if os.environ.get("MLFLOW_TRACKING_URI"):
            print_paired(results, args)
        return
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    tcfg = {"enabled": uri is not None, "tracking_uri": uri, "experiment_name": "aknn",
            "log_predictions": False, "log_plots": False}
    home = os.environ.get("PLCORE_DATA_HOME")
    results = []
    t_all = time.perf_counter()
    for ds_name in args.datasets.split(","):
        kind = DATASETS[ds_name]
        dataset = load_dataset(ds_name, data_home=home)
        for eta in ETAS:
            for lname in args.learners.split(","):
                learner = LEARNERS[lname]() if LEARNERS[lname] is not None else None
                reducer = paper_preprocessor(kind) if args.preprocessing == "paper" else None
                prep = "none" if args.preprocessing == "paper" else "standardize"
                setup = Setup(learner=learner, reducer=reducer, bags=make_bags(kind, eta))
                params = {"dataset": ds_name, "bags": kind, "bags.eta": eta, "learner": lname,
                          "learner.params": json.dumps(learner.get_params() if learner else
                                                       {"k": f"1..{IDEAL_K_MAX}, best on test"},
                                                       default=str),
                          "protocol": "holdout", "protocol.n_repeats": args.repeats,
                          "protocol.test_size": 0.2, "protocol.preprocessing": prep,
                          "paper_preprocessing": args.preprocessing == "paper", "seed": 0}
                tags = {"dataset": ds_name, "protocol": "holdout", "benchmark": "aknn_experiments",
                        **tracking.version_tags(_registry())}
                _K_LOG.clear()
                t0 = time.perf_counter()
                with tracking.start_run(tcfg, params=params, tags=tags, config_yaml=json.dumps(params),
                                        run_name=f"holdout-{ds_name}-eta{eta}-{lname}-{args.preprocessing}") as run:
                    if learner is None:
                        res = ideal_knn(setup, dataset, n_repeats=args.repeats, preprocessing=prep,
                                        callback=run.log_step)
                    else:
                        res = holdout(setup, dataset, test_size=0.2, n_repeats=args.repeats,
                                      preprocessing=prep, random_state=0, progress=False,
                                      callback=run.log_step)
                        res.summary["k_used_mean"] = float(np.mean(_K_LOG))
                    run.log_result(res)
                row = {"dataset": ds_name, "eta": eta, "learner": lname,
                       "preprocessing": args.preprocessing,
                       "acc_mean": res.summary["accuracy_mean"], "acc_std": res.summary["accuracy_std"],
                       "k_mean": res.summary["k_used_mean"], "run_id": run.run_id,
                       "seconds": time.perf_counter() - t0}
                results.append(row)
                print(f"{ds_name} eta={eta} {lname}: {row['acc_mean']:.4f} +- {row['acc_std']:.4f} "
                      f"k={row['k_mean']:.1f} ({row['seconds']:.1f}s)", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    print_table(results, args)
    print(f"\ntotal {time.perf_counter() - t_all:.0f}s")


def _registry():
    from plcore.registry import get_registry

    return get_registry()


def print_table(results, args):
    learners = args.learners.split(",")
    print(f"\n### Accuracy (mean +- std over {args.repeats} 80/20 splits), preprocessing "
          f"{args.preprocessing}; [mean k used per query]\n")
    print("| data set | bags | eta | " + " | ".join(learners) + " |")
    print("|---|---|---|" + "---|" * len(learners))
    for ds in args.datasets.split(","):
        for eta in ETAS:
            cells = []
            rows = {r["learner"]: r for r in results if r["dataset"] == ds and r["eta"] == eta}
            best = max(rows[l]["acc_mean"] for l in learners)
            for l in learners:
                r = rows[l]
                cell = f"{r['acc_mean']:.3f} +- {r['acc_std']:.3f} [{r['k_mean']:.1f}]"
                cells.append(f"**{cell}**" if r["acc_mean"] == best else cell)
            print(f"| {ds} | {DATASETS[ds]} | {eta} | " + " | ".join(cells) + " |")


def print_paired(results, args, ref="aknn"):
    """Paired comparison over the shared splits: mean(aknn - other) and aknn's wins/ties/losses.

    Reads the per-split accuracies of each run back from MLflow (``$MLFLOW_TRACKING_URI``).
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=os.environ["MLFLOW_TRACKING_URI"])

    def per_split(run_id):
        # per-split metrics: "<step>/accuracy" (this script logs "step/accuracy"); older runs: "accuracy"
        names = [m for m in client.get_run(run_id).data.metrics if m.endswith("/accuracy")] + ["accuracy"]
        hist = next((h for h in (client.get_metric_history(run_id, m) for m in names) if h), [])
        return np.array([m.value for m in sorted(hist, key=lambda m: m.step)])

    others = [l for l in args.learners.split(",") if l != ref]
    print(f"\n### Paired differences {ref} - other over the same splits: mean [wins/ties/losses of {ref}]\n")
    print("| data set | eta | " + " | ".join(others) + " |")
    print("|---|---|" + "---|" * len(others))
    for ds in args.datasets.split(","):
        for eta in ETAS:
            rows = {r["learner"]: r for r in results if r["dataset"] == ds and r["eta"] == eta}
            a = per_split(rows[ref]["run_id"])
            cells = []
            for o in others:
                d = a - per_split(rows[o]["run_id"])
                cells.append(f"{d.mean():+.3f} [{(d > 1e-12).sum()}/{(abs(d) <= 1e-12).sum()}/{(d < -1e-12).sum()}]")
            print(f"| {ds} | {eta} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
