"""``python -m plcore clean`` on data with known truth: each engine of its pool, the engine it
chooses from the candidate sets alone, a cleanlab user's own pipeline, and what the cleaned labels
buy a plain classifier (issue 73).

Tasks: lost and msrc-v2 with their own candidate sets (every truth inside); digits, ecoli and
satimage with PiCO+'s noisy candidate sets (``bags=noisy``: each false label a candidate with
probability ``q``, the true label left out with probability ``eta``) at four settings
(:data:`SETTINGS`). Per task:

- **each engine** of ``clean``'s pool (``plcore.run.protocols._clean.POOL``), first round: the
  log-likelihood of the candidate sets under its fitted noise model (the label-free criterion),
  the fitted eta, the accuracy of ``label`` on the rows whose truth is in their set, the AUROC of
  ``suspect`` for the rows whose truth was removed, the flagged share and the ECE of ``confidence``;
- **auto**: what ``python -m plcore clean`` does without ``+learner=``: the engine of the largest
  log-likelihood, then its second round (kept only where the log-likelihood improves);
- **cleanlab pipeline**: PL-KNN's transductive pseudo-labels, a logistic regression's out-of-fold
  probabilities on them (the same folds), ``cleanlab.filter.find_label_issues``; a flagged row's
  label is the regression's best candidate, its suspect score ``1 - get_label_quality_scores``;
- **downstream** (3 outer folds): a logistic regression trained on ``clean``'s labels of the
  training folds (auto's engine, flagged rows dropped) against the best of the pool's learners
  trained on the raw candidate sets, accuracy on the held-out fold's true labels.

    python benchmarks/clean.py --out docs/results/clean.md     # the page (about an hour, one core)
    python benchmarks/clean.py --quick                         # digits at one setting (a smoke check)

Needs the shared data sets (``PLCORE_DATA_HOME``) for lost, msrc-v2, ecoli and satimage, and
cleanlab (pinned in requirements.lock; not a runtime dependency of plcore).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

#: (q, eta) of the noisy candidate sets
SETTINGS = ((0.25, 0.1), (0.25, 0.3), (0.3, 0.3), (0.5, 0.2))
TASKS = [("lost", None, None), ("msrc-v2", None, None)] + [
    (d, q, eta) for d in ("digits", "ecoli", "satimage") for q, eta in SETTINGS]
OUTER_FOLDS = 3


def _data(name, q, eta, seed):
    from plcore.datasets import load_dataset
    from plcore.registry import get_registry
    from plcore.run.protocols import apply_bags
    from plcore.utils import dense_candidates

    ds = load_dataset(name, noisy=True)
    if eta is not None:
        ds = apply_bags(ds, get_registry().create("bags", "noisy", q=q, eta=eta, random_state=seed), seed)
    return ds, dense_candidates(ds.S)


def _pool(seed, engines=None) -> dict:
    """``{name: pipeline}`` of ``clean``'s pool (those installed), or of its ``engines`` only."""
    from plcore.run.pipeline import build_pipeline
    from plcore.run.protocols._clean import engine_pool

    return {name: build_pipeline([learner], "standardize") for name, learner in engine_pool(seed).items()
            if engines is None or name in engines}


def _auroc(removed, score):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(removed, score)) if 0 < removed.sum() < removed.size else float("nan")


def _scores(label, suspect, flag, confidence, y, S, seconds, **extra) -> dict:
    from plcore.metrics import expected_calibration_error

    inside = S[np.arange(y.size), y]
    right = label == y
    return {"label_acc": float(right[inside].mean()), "auroc": _auroc(~inside, suspect),
            "flagged": float(flag.mean()), "ece": float(expected_calibration_error(confidence, right))
            if confidence is not None else float("nan"), "seconds": seconds, **extra}


def _of(found, y, S, seconds, engine) -> dict:
    return _scores(found.label, found.suspect, found.flag, found.confidence, y, S, seconds, engine=engine,
                   ll=found.noise["log_likelihood"], missing_fit=found.noise["missing"])


def engines_and_auto(X, S, y, seed, engines=None) -> tuple[list, dict]:
    """Each pool engine's first round, then auto: ``choose_engine``'s steps on the same out-of-fold
    probabilities (the engines' ensemble selection on the likelihood of the sets, then the
    mixture's second round); auto's seconds are the whole command's (every engine, the selection
    and the second round)."""
    from plcore.run.label_cleaning import Mixture, from_proba, out_of_fold_proba, second_round, select_mixture

    pool, rows, probas, scores = _pool(seed, engines), [], {}, {}
    for name, pipe in pool.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probas[name] = out_of_fold_proba(pipe, X, S, random_state=seed)
            found = from_proba(probas[name], S)
        scores[name] = found.noise["log_likelihood"]
        rows.append(_of(found, y, S, time.perf_counter() - t0, name))
    t0 = time.perf_counter()
    weights, _ = select_mixture(probas, S)
    mix = Mixture({name: pool[name] for name in weights}, weights)
    first = from_proba(sum(w * probas[name] for name, w in weights.items()), S)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again, kept = second_round(mix, X, S, first, random_state=seed)
    seconds = sum(r["seconds"] for r in rows) + time.perf_counter() - t0
    return rows, _of(again, y, S, seconds, mix.name) | {"second_round": kept, "weights": weights}


def cleanlab_pipeline(X, S, y, seed, n_splits=5) -> dict:
    """A cleanlab user's pipeline: PL-KNN's pseudo-labels, a logistic regression's out-of-fold
    probabilities on them (``clean``'s folds), then cleanlab's issues and label quality."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from plcore.registry import get_registry

    t0 = time.perf_counter()
    knn = get_registry().create("learner", "plknn").fit(StandardScaler().fit_transform(X), S)
    pseudo = np.asarray(knn.confidences_).argmax(axis=1)
    P = np.zeros(S.shape)
    for train, test in KFold(n_splits, shuffle=True, random_state=seed).split(X):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X[train], pseudo[train])
        P[np.ix_(test, model.classes_)] = model.predict_proba(X[test])
    P = np.clip(P, 1e-12, None)
    P /= P.sum(axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        issues = find_label_issues(labels=pseudo, pred_probs=P)
        quality = get_label_quality_scores(labels=pseudo, pred_probs=P)
    label = np.where(issues, np.where(S, P, -1.0).argmax(axis=1), pseudo)
    return _scores(label, 1 - quality, issues, None, y, S, time.perf_counter() - t0, engine="cleanlab pipeline")


def downstream(X, S, y, weights, seed, engines=None) -> dict:
    """Held-out accuracy (:data:`OUTER_FOLDS` folds) of a logistic regression on ``clean``'s labels of
    the training folds (the mixture ``weights`` of auto's engines, its second round where kept,
    flagged rows dropped) and of each
    pool learner fitted on the raw candidate sets; ``best_raw`` is the best of those on average."""
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from plcore.run.label_cleaning import Mixture, clean_labels, second_round

    pool = _pool(seed, engines)
    mix = Mixture({name: pool[name] for name in weights}, weights)
    cleaned, raw = [], {name: [] for name in pool}
    for train, test in KFold(OUTER_FOLDS, shuffle=True, random_state=seed).split(X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = clean_labels(mix, X[train], S[train], random_state=seed)
            found, _ = second_round(mix, X[train], S[train], first, random_state=seed)
            keep = ~found.flag
            clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
            clf.fit(X[train][keep], found.label[keep])
            cleaned.append(float(np.mean(clf.predict(X[test]) == y[test])))
            for name, pipe in pool.items():
                raw[name].append(float(np.mean(clone(pipe).fit(X[train], S[train]).predict(X[test]) == y[test])))
    means = {name: float(np.mean(v)) for name, v in raw.items()}
    best = max(means, key=means.get)
    return {"cleaned_lr": float(np.mean(cleaned)), "best_raw": means[best], "best_raw_name": best, "raw": means}


def run_task(name, q, eta, seed=0, with_downstream=True, engines=None) -> dict:
    """Every figure of one task (``engines``: a part of the pool, for a quick look)."""
    ds, S = _data(name, q, eta, seed)
    y = ds.y_true
    rows, auto = engines_and_auto(ds.X, S, y, seed, engines)
    out = {"task": name if eta is None else f"{name} q={q} eta={eta}", "rows": int(y.size), "classes": S.shape[1],
           "removed": float(1 - S[np.arange(y.size), y].mean()), "engines": rows, "auto": auto,
           "cleanlab": cleanlab_pipeline(ds.X, S, y, seed)}
    if with_downstream:
        out["downstream"] = downstream(ds.X, S, y, auto["weights"], seed, engines)
    return out


def _f(v, digits=3):
    return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{digits}f}"


def table(results) -> str:
    """One line per task and engine, then auto's and the cleanlab pipeline's."""
    head = ["task", "engine", "log-lik. of the sets", "missing fitted", "label acc (truth in set)", "suspect AUROC",
            "flagged", "ECE", "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in results:
        task = f"{t['task']} ({_f(t['removed'])} removed)"
        for r in t["engines"]:
            lines.append(f"| {task} | {r['engine']} | {r['ll']:.1f} | {_f(r['missing_fit'])} | {_f(r['label_acc'])} | "
                         f"{_f(r['auroc'])} | {_f(r['flagged'])} | {_f(r['ece'])} | {r['seconds']:.1f} |")
        a, c = t["auto"], t["cleanlab"]
        lines.append(f"| {task} | **auto: {a['engine']}**{' + 2nd round' if a['second_round'] else ''} | "
                     f"{a['ll']:.1f} | {_f(a['missing_fit'])} | **{_f(a['label_acc'])}** | **{_f(a['auroc'])}** | "
                     f"{_f(a['flagged'])} | {_f(a['ece'])} | {a['seconds']:.1f} |")
        lines.append(f"| {task} | cleanlab pipeline | – | – | {_f(c['label_acc'])} | {_f(c['auroc'])} | "
                     f"{_f(c['flagged'])} | – | {c['seconds']:.1f} |")
    return "\n".join(lines)


def verdicts(results) -> str:
    """Per task: auto against the best engine and the cleanlab pipeline (the issue's done-when)."""
    head = ["task", "auto", "best engine (label acc)", "auto - best", "auto - cleanlab (label acc)",
            "auto - cleanlab (AUROC)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in results:
        a, c = t["auto"], t["cleanlab"]
        best = max(t["engines"], key=lambda r: r["label_acc"])
        lines.append(f"| {t['task']} | {a['engine']} | {best['engine']} ({_f(best['label_acc'])}) | "
                     f"{100 * (a['label_acc'] - best['label_acc']):+.1f} | "
                     f"{100 * (a['label_acc'] - c['label_acc']):+.1f} | "
                     + (f"{a['auroc'] - c['auroc']:+.3f} |" if not np.isnan(a["auroc"]) else "– |"))
    return "\n".join(lines)


def summary(results) -> str:
    """The issue's test on the noisy tasks (some truth removed), counted from the rows."""
    noisy = [t for t in results if t["removed"] > 0]
    near, over_acc, over_auroc = [], [], []
    for t in noisy:
        a, c = t["auto"], t["cleanlab"]
        best = max(r["label_acc"] for r in t["engines"])
        near.append((t["task"], a["label_acc"] >= best - 0.01, 100 * (a["label_acc"] - best)))
        over_acc.append((t["task"], a["label_acc"] > c["label_acc"], 100 * (a["label_acc"] - c["label_acc"])))
        over_auroc.append((t["task"], a["auroc"] > c["auroc"], a["auroc"] - c["auroc"]))

    def line(what, found, unit):
        misses = [f"{task} ({v:+.{3 if unit == '' else 1}f}{unit})" for task, ok, v in found if not ok]
        return (f"- {what}: {sum(ok for _, ok, _ in found)} of {len(found)} noisy tasks"
                + (f"; not on {', '.join(misses)}" if misses else ""))

    return "\n".join([line("auto within 1 point of the pool's best engine in label accuracy", near, " points"),
                      line("auto above the cleanlab pipeline in label accuracy", over_acc, " points"),
                      line("auto above the cleanlab pipeline in suspect AUROC", over_auroc, "")])


def downstream_table(results) -> str:
    head = ["task", "logistic regression on clean's labels (flagged dropped)", "best pool learner on raw sets",
            "difference (points)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in results:
        d = t.get("downstream")
        if d:
            lines.append(f"| {t['task']} | {_f(d['cleaned_lr'])} | {_f(d['best_raw'])} ({d['best_raw_name']}) | "
                         f"{100 * (d['cleaned_lr'] - d['best_raw']):+.1f} |")
    return "\n".join(lines)


PAGE = """# Clean labels out: each engine, the one chosen, and a cleanlab pipeline

Regenerated by `{command}` (one core; timings are this machine's).
`python -m plcore clean` ([Use your own data](../own_data.md#clean-your-labels)) on data with known
truth: lost and msrc-v2 with their own candidate sets (every truth inside its set), and digits,
ecoli and satimage with PiCO+'s noisy candidate sets (each false label a candidate with probability
q, the true label left out of its set with probability eta). The method is in
`plcore/run/label_cleaning.py`, the pool and the choice in `plcore/run/protocols/_clean.py`.

- **engine**: the learner behind `clean`, first round; **log-lik. of the sets**: the log-likelihood
  of the candidate sets under the noise model fitted to that engine's out-of-fold probabilities
  (eq. 1' of `label_cleaning.py`: a set is never empty), the label-free criterion `clean` chooses by;
  **missing fitted**: the share of sets missing their truth under the fitted model.
- **auto**: what `python -m plcore clean` does without `+learner=`: ensemble selection (Caruana et
  al., 2004) on that log-likelihood, from the mean of every engine (their sorted initialisation
  with the whole pool), the engine that raises the log-likelihood most averaged in again while it
  raises it, at most ten times (the engines named, heaviest first); then the second round (the
  first round's flagged rows left out of every engine's fits), kept only where the log-likelihood
  improves; its seconds are the whole command's.
- **label acc (truth in set)**: `label` against the truth on the rows whose truth is in their set;
  **suspect AUROC**: `suspect` ranking the rows whose truth was removed (none in lost and
  msrc-v2: "–"); **flagged**: the share with `suspect >= 0.5` (on lost and msrc-v2 every flag is a
  false alarm); **ECE**: of `confidence` against "label is right", every row (15 bins).
- **cleanlab pipeline**: what a cleanlab user would build: PL-KNN's transductive pseudo-labels, a
  logistic regression's out-of-fold probabilities on them (the same five folds), cleanlab 2.9's
  `find_label_issues`; a flagged row takes the regression's best candidate, the suspect score is
  `1 - get_label_quality_scores`.

{verdicts}

{summary}

{table}

## What cleaning buys

{outer} outer folds: `clean` on the training folds (auto's engines and weights, chosen from every
row's candidate sets, and its second round), a logistic
regression on its labels with the flagged rows dropped; beside it the best of the pool's learners
trained on the raw candidate sets (the best on average over the folds, chosen after the fact:
a bound in the raw sets' favour). Accuracy on the held-out fold's true labels.

{downstream}

## Where the choice fails, and why

- On small data the criterion cannot tell the engines apart: on ecoli (336 rows) the five engines'
  log-likelihoods lie within about 0.05 per row of each other while their label accuracies span up
  to 26 points. At q = 0.25, eta = 0.3 the mixture leans on PL-KNN (weight 0.47, the linear engine
  0.33) and is 2.0 points below the linear engine alone, 0.4 below the cleanlab pipeline; at
  q = 0.3, eta = 0.3 it is 0.4 below both. Averaging is what saves the rest: at q = 0.5 no engine
  is likelier than the others by more than chance, and the mean of all five is 5.4 points above
  the best of them (the previous selection kept PL-KNN alone there, 15.8 below).
- On msrc-v2 (no truth removed) PRODEN's network explains the sets best by far but disambiguates
  below IPAL, and its confidence is over-confident (ECE 0.21 alone): auto, which weights it most,
  is 5.4 points below IPAL.
- Where the fit is sound the mixture and the second round add most: digits at q = 0.5 goes from
  0.850 (the best single engine) to 0.944, satimage at q = 0.5 from 0.853 to 0.911, lost from
  0.891 to 0.906.

## How the choice was made, and what was seen

- The criterion reads no true label. Two earlier versions of this page (`git log -p
  docs/results/clean.md`) were seen before this one. The first chose the single engine of the
  largest eq. 1 likelihood, without the non-empty condition; it missed the best engine by more
  than a point on 2 of 12 noisy tasks and was not above the cleanlab pipeline on 5. Looking at
  why, after that table was seen: soft engines fitted eta = 0 on satimage at eta = 0.3, because
  eq. 1 paid for empty sets, which are never observed; eq. 1' is the likelihood of what is
  observed. The second started ensemble selection from the best engine with a stopping price of
  log(n)/2 (chosen on segment, semeion, glass and wine at full size; the satimage tasks' cached
  probabilities were also printed then, by a file pattern that matched them); it missed the best
  engine on 2 of 12 (ecoli, by 1.6 and 15.8 points) and the cleanlab pipeline on 2.
- This version's start and stopping rule were chosen after that table was seen, because its misses
  were on a small set, on development tasks only, none of them in this table: glass, wine, iris
  and 336-row draws of segment, semeion and first-order-theorem (two seeds each), and full segment
  and semeion (one seed), each at the four (q, eta) settings, 56 tasks, the engines' out-of-fold
  probabilities cached once, the first round only. Label accuracy against the best engine of each
  task (mean difference; share within a point; worst): from the best engine with price log(n)/2
  -1.1 points, 62 %, -8.0; from the best engine, price 0: -0.6, 70 %, -7.7; the plain mean of
  the five: -1.9, 52 %, -14.1; from the mean of every engine, price 0 (this page): -0.0, 73 %,
  -5.1; the same with price log(n)/2: -1.1, 59 %, -12.6; from whichever of the best engine and
  the mean is likelier, price 0: -0.5, 70 %, -7.7. It was then run on this table once, unchanged.
- The cleanlab pipeline's logistic regression is inductive and is trained on pseudo-labels, so its
  labels and scores differ from the issue's earlier figures for "cleanlab given plcore's
  probabilities" (the previous page's comparison).
- A gradient-boosted engine (HistGradientBoosting on iterated pseudo-labels) was measured and left
  out of the pool: on lost its labels reached 0.614 in 451 s against IPAL's 0.836 in 8 s.
"""


def _task(name, q, eta, args) -> dict:
    """``run_task``, or its JSON file in ``args.results`` where an earlier run left one (written whole
    or not at all)."""
    import json
    from pathlib import Path

    from plcore.utils.files import atomic_write

    path = None if args.results is None else Path(args.results) / f"{name}-{q}-{eta}-seed{args.seed}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    found = run_task(name, q, eta, seed=args.seed, with_downstream=not args.no_downstream)
    print(f"{found['task']}: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp:
            tmp.write_text(json.dumps(found, indent=1))
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="digits at q=0.25, eta=0.3 only")
    ap.add_argument("--tasks", nargs="+", default=None, help="only these data sets")
    ap.add_argument("--no-downstream", action="store_true", help="leave out the held-out classifier test")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the results page here (docs/results/clean.md)")
    ap.add_argument("--results", default=None,
                    help="a folder of one JSON file per task: a task found there is read, not run again (resume)")
    args = ap.parse_args(argv)
    tasks = [("digits", 0.25, 0.3)] if args.quick else [t for t in TASKS if args.tasks is None or t[0] in args.tasks]
    results = []
    for name, q, eta in tasks:
        results.append(_task(name, q, eta, args))
    print(verdicts(results), summary(results), table(results), downstream_table(results), sep="\n\n")
    if args.out:
        from pathlib import Path

        command = " ".join(["python benchmarks/clean.py", *(["--seed", str(args.seed)] if args.seed else []),
                            "--out", args.out])
        Path(args.out).write_text(PAGE.format(command=command, verdicts=verdicts(results), table=table(results),
                                              summary=summary(results),
                                              downstream=downstream_table(results), outer=OUTER_FOLDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
