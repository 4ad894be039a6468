"""Clean labels out (issue 64): for every training row, which candidate is its label, how sure
that is, and whether its candidate set probably misses the truth.

1. **Out of fold.** The rows are split into ``k`` folds; a pipeline (preprocessing, the learner)
   is fitted on the other folds' rows and their candidate sets and gives each held-out row its
   class probabilities ``p(j | x)``. No row's probabilities come from a model that saw its own
   candidate set.
2. **A noise model fitted without true labels.** The candidate sets are read as PiCO+'s noisy
   partial labels (Wang et al., 2022): each false label joins a set with probability ``q``, the
   true label is left out with probability ``eta``. With the probabilities sharpened or softened
   by a temperature ``T``, ``p_T(j | x) = softmax(log p(j | x) / T)``, the probability of the
   observed set ``S`` (of ``s`` labels out of ``Q``) is (eq. 1)

       P(S | x) = (1 - eta) q^(s-1) (1 - q)^(Q-s) m_in(x, S) + eta q^s (1 - q)^(Q-s-1) m_out(x, S),

   with ``m_in = sum_{j in S} p_T(j | x)`` and ``m_out = 1 - m_in``. A set is never empty, so
   the likelihood of an observed set is eq. 1 divided by the chance of a non-empty draw,
   ``1 - eta (1 - q)^(Q-1)`` (eq. 1'; without it the fit pays for empty sets nobody observes and
   pushes ``eta`` to 0 on soft probabilities). ``T``, ``q`` and ``eta`` maximise the sum of
   ``log P(S_i | x_i, S_i non-empty)`` over the rows (:func:`fit_noise_model`): candidate sets are
   all it reads. The share of sets that miss their truth is then
   ``eta (1 - (1 - q)^(Q-1)) / (1 - eta (1 - q)^(Q-1))`` (``missing``).
3. **The posterior of each row's true label** given its features and its set (eq. 2):

       P(y = j | x, S) = p_T(j | x) w_j / sum_l p_T(l | x) w_l,   w_j = 1 (j in S), rho (j not in S),

   ``rho = eta q / ((1 - eta) (1 - q))``. Then ``label`` is the candidate of highest posterior,
   ``confidence`` its posterior (the probability that ``label`` is right), ``model_label`` the
   argmax of ``p_T(j | x)`` (the set hidden) and ``suspect`` the posterior mass outside the set,
   ``P(y not in S | x, S)``. A row is flagged where ``suspect >= 0.5``: the truth is more likely
   outside its set than inside, a threshold no true label chose.

4. **The engine** (:func:`choose_engine`): each engine's out-of-fold probabilities scored by eq. 1',
   then Caruana et al.'s ensemble selection (2004) on that score: starting from the mean of every
   engine (their sorted initialisation, with the whole library: on a few hundred rows one engine's
   lead in the likelihood is as often chance as skill), the engine whose addition to the mean (with
   replacement) raises the log-likelihood most is added while it raises it, at most ten times.

The model is an assumption (false labels that join independently of each other); where the data's
own candidate sets come from elsewhere (crowds, native PLL data), ``eta`` and ``rho`` are the
values that explain the sets best under it. ``docs/results/clean.md`` measures it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, logsumexp
from sklearn.base import clone
from sklearn.model_selection import KFold

from plcore.exceptions import ConfigError, DataValidationError
from plcore.utils import dense_candidates

__all__ = ["Cleaned", "Mixture", "out_of_fold_proba", "fit_noise_model", "posterior", "from_proba", "clean_labels",
           "select_mixture", "choose_engine", "second_round", "FLAG_AT"]

#: a row is flagged where the posterior probability that its truth is outside its set is at least this
FLAG_AT = 0.5
#: ensemble selection: at most this many additions to the first engine
MAX_ADDITIONS = 10
_TINY = 1e-12


@dataclass
class Cleaned:
    """What :func:`clean_labels` found, per row (class indices into the data's classes):
    ``label``, ``confidence``, ``model_label``, ``suspect``, ``flag``; the fitted noise model
    ``noise`` (``temperature``, ``q``, ``eta``, ``rho``); the out-of-fold probabilities ``oof``
    and the posterior ``posterior`` (both ``(n, q)``)."""

    label: np.ndarray
    confidence: np.ndarray
    model_label: np.ndarray
    suspect: np.ndarray
    flag: np.ndarray
    noise: dict = field(default_factory=dict)
    oof: np.ndarray | None = None
    posterior: np.ndarray | None = None
    threshold: float = FLAG_AT


@dataclass
class Mixture:
    """Engines whose out-of-fold probabilities are averaged with ``weights`` (``{name: weight}``,
    summing to 1; ``pipelines``: ``{name: pipeline}``). :func:`out_of_fold_proba` and
    :func:`second_round` take one where they take a pipeline."""

    pipelines: dict
    weights: dict

    def _order(self) -> list:
        return sorted(self.weights, key=lambda n: (-self.weights[n], n))

    @property
    def name(self) -> str:
        """``plknn_cenda+ipal`` (the heaviest first); one engine: its name."""
        return "+".join(self._order())

    def describe(self) -> str:
        """``plknn_cenda 0.67, ipal 0.33``."""
        return ", ".join(f"{n} {self.weights[n]:.2f}" for n in self._order())


def _learner_name(pipeline) -> str:
    """The pipeline's learner as a user names it: ``learner 'ipal' (IpalLearner)``."""
    from plcore.registry import get_registry
    from plcore.run.pipeline import final_step

    final = final_step(pipeline)
    comp = get_registry().component_of(final)
    return f"learner {comp.name!r} ({type(final).__name__})" if comp else type(final).__name__


def out_of_fold_proba(pipeline, X, S, *, n_splits: int = 5, random_state=0, on_fold=None,
                      leave_out=None) -> np.ndarray:
    """``(n, q)`` class probabilities of every row, its own candidate set hidden from the model
    (shuffled ``KFold``); ``on_fold(k, test_rows, proba)`` after each fold. ``leave_out`` (a
    boolean mask): rows whose sets no model learns from (still scored in their own fold).

    A pipeline with ``predict_proba`` is fitted on the other folds' rows and predicts the fold's.
    One without (a transductive learner: IPAL, PL-SVM, the A-kNN rules) is fitted on every row with
    the fold's sets replaced by every class, and gives the fold's rows its per-row ``confidences_``
    (the same rule as its disambiguation, the sets hidden). A learner with neither is one line naming it.
    A :class:`Mixture`: its engines' probabilities (on the same folds), weighted; ``on_fold`` then
    sees the mixture's, after every engine has run."""
    from plcore.run.pipeline import final_step

    if isinstance(pipeline, Mixture):
        P = sum(w * out_of_fold_proba(pipeline.pipelines[name], X, S, n_splits=n_splits, random_state=random_state,
                                      leave_out=leave_out) for name, w in pipeline.weights.items())
        for k, (_, test) in enumerate(KFold(n_splits, shuffle=True, random_state=random_state).split(X)):
            if on_fold is not None:
                on_fold(k, test, P[test])
        return P
    S = dense_candidates(S)
    n, q = S.shape
    if not 2 <= n_splits <= n:
        raise ConfigError(f"n_splits must be between 2 and the {n} rows, got {n_splits}")
    inductive = hasattr(pipeline, "predict_proba")
    leave_out = np.zeros(n, dtype=bool) if leave_out is None else np.asarray(leave_out, dtype=bool)
    P = np.zeros((n, q))
    for k, (train, test) in enumerate(KFold(n_splits, shuffle=True, random_state=random_state).split(X)):
        if inductive:
            train = train[~leave_out[train]]
            fitted = clone(pipeline).fit(X[train], S[train])
            proba = np.asarray(fitted.predict_proba(X[test]), dtype=float)
        else:
            hidden = S.copy()
            hidden[test] = True
            hidden[leave_out] = True
            fitted = clone(pipeline).fit(X, hidden)
            confidences = getattr(final_step(fitted), "confidences_", None)
            if confidences is None:
                raise ConfigError(f"clean needs per-row class probabilities: {_learner_name(pipeline)} has neither "
                                  "predict_proba nor per-row confidences_ (the learners that qualify: "
                                  "docs/own_data.md, 'Clean your labels')")
            proba = np.asarray(confidences.toarray() if hasattr(confidences, "toarray") else confidences,
                               dtype=float)[test]
        if proba.shape != (test.size, q):  # a class no training row of this fold had as a candidate
            raise DataValidationError(f"fold {k}: the learner gave {proba.shape[1]} class probabilities for {q} "
                                      "classes; every class must be a candidate of some training row")
        P[test] = proba
        if on_fold is not None:
            on_fold(k, test, proba)
    return P


def _parts(P, S, T):
    """``log p_T`` (rows of log-probabilities) and the log masses in and out of the sets (in log
    space: a sharp temperature leaves masses far below any float's resolution of 1)."""
    logp = log_softmax(np.log(np.clip(P, _TINY, None)) / T, axis=1)
    with np.errstate(divide="ignore"):
        log_in = logsumexp(np.where(S, logp, -np.inf), axis=1)
        log_out = logsumexp(np.where(S, -np.inf, logp), axis=1)  # -inf for a set of every class
    return logp, log_in, log_out


def _masses(log_p, S, T):
    """:func:`_parts`' log masses from ``log_p = log P`` (taken once per fit) with one ``exp`` per
    entry: ``exp(log_p / T - row max)`` summed in and out of the set; the rows where a mass falls to
    where floats lose it (a sharp temperature, the set's best far below the row's) again in log
    space, exactly."""
    z = log_p / T
    e = np.exp(z - z.max(axis=1, keepdims=True))
    inside = np.einsum("ij,ij->i", e, S)
    outside = np.einsum("ij,ij->i", e, ~S)
    full = S.all(axis=1)
    with np.errstate(divide="ignore"):
        total = np.log(inside + outside)
        log_in, log_out = np.log(inside) - total, np.log(outside) - total
    redo = (inside < 1e-280) | ((outside < 1e-280) & ~full)
    if redo.any():
        _, log_in[redo], log_out[redo] = _parts(np.exp(log_p[redo]), S[redo], T)
    log_out[full] = -np.inf
    return log_in, log_out


def _set_terms(size, n_classes, q, eta):
    """The per-row log factors of eq. 1 besides the masses: inside (truth in the set) and outside."""
    inside = np.log1p(-eta) + (size - 1) * np.log(q) + (n_classes - size) * np.log1p(-q)
    outside = np.log(eta) + size * np.log(q) + (n_classes - size - 1) * np.log1p(-q)
    return inside, outside


def _q_eta_objective(theta, log_in, log_out, size, n_classes) -> tuple[float, np.ndarray]:
    """Eq. 1' negative log-likelihood at ``theta = (logit q, logit eta)`` (a fixed temperature's
    masses ``log_in``, ``log_out``) and its gradient: with ``w`` each row's posterior weight of
    "truth outside", eq. 1 gives d/d logit(eta) = sum(w - eta), d/d logit(q) = sum(s - 1 + w - (Q - 1) q);
    the non-empty draw's ``-n log Z``, ``Z = 1 - eta e``, ``e = (1 - q)^(Q-1)``, adds
    ``n eta (1 - eta) e / Z`` and ``-n (Q - 1) q eta e / Z`` to the log-likelihood's."""
    q, eta = expit(theta[0]), expit(theta[1])
    inside, outside = _set_terms(size, n_classes, q, eta)
    inside, outside = inside + log_in, outside + log_out
    total = np.logaddexp(inside, outside)
    with np.errstate(invalid="ignore"):
        w = np.where(np.isfinite(outside), np.exp(outside - total), 0.0)
    n, empty = size.size, np.exp((n_classes - 1) * np.log1p(-q))
    z = 1.0 - eta * empty
    grad = np.array([np.sum(size - 1 + w - (n_classes - 1) * q) - n * (n_classes - 1) * q * eta * empty / z,
                     np.sum(w - eta) + n * eta * (1 - eta) * empty / z])
    value = -float(total.sum()) + n * float(np.log(z))
    return (value, -grad) if np.isfinite(value) else (np.inf, np.zeros(2))


def _fit_q_eta(log_in, log_out, size, n_classes, start) -> tuple[float, np.ndarray]:
    """At a fixed temperature: ``(negative log-likelihood, (logit q, logit eta))`` minimising
    :func:`_q_eta_objective` (L-BFGS-B with its gradient; O(n) per step)."""
    res = minimize(_q_eta_objective, start, args=(log_in, log_out, size, n_classes), jac=True, method="L-BFGS-B",
                   bounds=[(-30.0, 30.0)] * 2, options={"ftol": 1e-13, "gtol": 1e-9, "maxiter": 500})
    return float(res.fun), res.x


def fit_noise_model(P, S, *, near: float | None = None) -> dict:
    """``{"temperature", "q", "eta", "rho", "missing", "log_likelihood"}`` maximising eq. 1' of the module
    over the rows: the likelihood profiled over the temperature (at each ``T``, ``q`` and ``eta`` by
    :func:`_fit_q_eta`, O(n)), ``log T`` searched on a grid of 31 points over [0.01, 100] and refined
    by a bounded Brent search around the grid's best (the profile need not be unimodal). Each ``T``
    costs one pass over the ``(n, q)`` probabilities, about 45 passes in all. ``near``: a temperature
    the optimum is expected close to (ensemble selection's current one): Brent within a factor e of it
    and every fifth grid point outside (about 20 passes), the grid where the optimum comes out on that
    bracket's edge or a grid point beats it (a second mode)."""
    from scipy.optimize import minimize_scalar

    S = np.asarray(S, dtype=bool)
    size = S.sum(axis=1).astype(float)
    n_classes = S.shape[1]
    q0 = np.log((size.mean() - 1 + 0.5) / max(n_classes - size.mean(), 0.5))  # the sets' mean size, as logit q
    log_p = np.log(np.clip(P, _TINY, None))
    best = {}

    def profile(log_t):
        log_in, log_out = _masses(log_p, S, float(np.exp(log_t)))
        found = min((_fit_q_eta(log_in, log_out, size, n_classes, np.array([q0, b0]))
                     for b0 in (np.log(0.05 / 0.95), np.log(0.2 / 0.8))), key=lambda r: r[0])
        if found[0] < best.get("value", np.inf):
            best.update(value=found[0], log_t=float(log_t), theta=found[1])
        return found[0]

    grid = np.linspace(np.log(0.01), np.log(100.0), 31)
    done = False
    if near is not None:
        centre = float(np.clip(np.log(near), grid[0], grid[-1]))
        low, high = max(centre - 1.0, grid[0]), min(centre + 1.0, grid[-1])
        minimize_scalar(profile, bounds=(low, high), method="bounded", options={"xatol": 1e-5})
        found = best["value"]
        # inside the bracket and no better than every fifth grid point outside it: no need of the grid
        done = low + 1e-3 < best["log_t"] < high - 1e-3 and all(
            profile(t) >= found for t in grid[::5] if not low <= t <= high)
    if not done:
        values = [profile(t) for t in grid]
        i = int(np.argmin(values))
        low, high = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        if high > low:
            minimize_scalar(profile, bounds=(low, high), method="bounded", options={"xatol": 1e-5})
    T, (a, b) = float(np.exp(best["log_t"])), best["theta"]
    q, eta = float(expit(a)), float(expit(b))
    rho = eta * q / max((1.0 - eta) * (1.0 - q), _TINY)
    empty = (1.0 - q) ** (n_classes - 1)
    missing = eta * (1.0 - empty) / (1.0 - eta * empty)
    return {"temperature": T, "q": q, "eta": eta, "rho": rho, "missing": float(missing),
            "log_likelihood": -float(best["value"])}


def posterior(P, S, noise: dict) -> np.ndarray:
    """``(n, q)``: eq. 2 of the module, each row's posterior over the classes."""
    S = np.asarray(S, dtype=bool)
    logp, _, _ = _parts(P, S, noise["temperature"])
    logw = np.where(S, 0.0, np.log(max(noise["rho"], _TINY)))
    return np.exp(log_softmax(logp + logw, axis=1))


def from_proba(P, S, *, echo=None) -> Cleaned:
    """Steps 2-3 of the module on out-of-fold probabilities ``P``: the noise model fitted to the
    sets, each row's posterior, label, confidence, suspect score and flag; ``echo``: a line when
    the noise model is fitted."""
    import time

    S = np.asarray(S, dtype=bool)
    t0 = time.perf_counter()
    noise = fit_noise_model(P, S)
    if echo is not None:
        echo(f"noise model fitted on {S.shape[0]} candidate sets: temperature {noise['temperature']:.3f}, "
             f"q {noise['q']:.3f}, eta {noise['eta']:.3f} ({time.perf_counter() - t0:.1f} s)")
    B = posterior(P, S, noise)
    label = np.where(S, B, -1.0).argmax(axis=1)
    rows = np.arange(S.shape[0])
    suspect = np.clip((B * ~S).sum(axis=1), 0.0, 1.0)
    model_label = P.argmax(axis=1)  # the temperature keeps the order
    return Cleaned(label=label, confidence=B[rows, label], model_label=model_label, suspect=suspect,
                   flag=suspect >= FLAG_AT, noise=noise, oof=P, posterior=B)


def clean_labels(pipeline, X, S, *, n_splits: int = 5, random_state=0, on_fold=None, echo=None,
                 leave_out=None) -> Cleaned:
    """Every row's label, confidence, out-of-fold model label, suspect score and flag (the
    module's steps 1-3) from ``pipeline`` (any estimator with ``predict_proba`` or per-row
    ``confidences_``, fitted on candidate sets, or a :class:`Mixture`); ``echo``: a line when the
    noise model is fitted; ``leave_out``: rows whose sets no model learns from (:func:`out_of_fold_proba`)."""
    S = dense_candidates(S)
    if not S.any(axis=1).all():
        raise DataValidationError(f"{int((~S.any(axis=1)).sum())} row(s) have an empty candidate set")
    P = out_of_fold_proba(pipeline, X, S, n_splits=n_splits, random_state=random_state, on_fold=on_fold,
                          leave_out=leave_out)
    return from_proba(P, S, echo=echo)


def select_mixture(probas: dict, S, *, max_additions: int = MAX_ADDITIONS) -> tuple[dict, float]:
    """``({name: weight}, log-likelihood)``: step 4 of the module on ``probas`` (``{name: (n, q)
    out-of-fold probabilities}``): ensemble selection with replacement (Caruana et al., 2004) from
    the mean of every engine, scored by eq. 1' (:func:`fit_noise_model`, each try started near the
    current mixture's temperature), an addition kept while it raises the log-likelihood."""
    S = np.asarray(S, dtype=bool)
    bag = list(probas)
    total = np.sum([probas[name] for name in bag], axis=0)
    fit = fit_noise_model(total / len(bag), S)
    for _ in range(max_additions if len(probas) > 1 else 0):
        tries = {name: fit_noise_model((total + P) / (len(bag) + 1), S, near=fit["temperature"])
                 for name, P in probas.items()}
        name = max(tries, key=lambda k: tries[k]["log_likelihood"])
        if tries[name]["log_likelihood"] <= fit["log_likelihood"]:
            break
        bag.append(name)
        total += probas[name]
        fit = tries[name]
    return {name: bag.count(name) / len(bag) for name in dict.fromkeys(bag)}, fit["log_likelihood"]


def second_round(pipeline, X, S, first: Cleaned, *, n_splits: int = 5, random_state=0, on_fold=None,
                 echo=None) -> tuple[Cleaned, bool]:
    """``(Cleaned, kept)``: :func:`clean_labels` again with the first round's flagged rows left out of
    every fit (their sets are the likeliest to mislead the model; they are still scored), kept only
    where its out-of-fold probabilities explain the candidate sets better (a larger eq. 1'
    log-likelihood: no true label is read). ``pipeline`` may be a :class:`Mixture` (each of its
    engines again, the same weights). Nothing flagged, or a fold left without some class: the
    first round, not kept."""
    if not first.flag.any():
        return first, False
    try:
        again = clean_labels(pipeline, X, S, n_splits=n_splits, random_state=random_state, leave_out=first.flag,
                             on_fold=on_fold)
    except DataValidationError as err:
        if echo is not None:
            echo(f"second round not run: {err}")
        return first, False
    kept = again.noise["log_likelihood"] > first.noise["log_likelihood"]
    if echo is not None:
        echo(f"second round ({int(first.flag.sum())} flagged row(s) left out of the fits): log-likelihood "
             f"{again.noise['log_likelihood']:.1f} against {first.noise['log_likelihood']:.1f}, "
             f"{'kept' if kept else 'not kept'}")
    return (again, True) if kept else (first, False)


def choose_engine(engines: dict, X, S, *, n_splits: int = 5, random_state=0, on_fold=None, echo=None, tick=None):
    """``(Mixture, Cleaned, {name: log-likelihood})``: each of ``engines`` (``{name: pipeline}``)
    out of fold, scored by the log-likelihood of the candidate sets under its fitted noise model
    (eq. 1': the sets are all it reads, no true label), then :func:`select_mixture` over them: the
    mean of the engines, weighted towards those that explain the sets best. An engine that fails is
    left out with a line naming the error. Each engine's warnings are held back and only the chosen
    ones' are given once the choice is made; ``on_fold(k, rows, proba)`` then replays the choice's
    folds; ``tick(name)`` after every engine's every fold (a progress bar)."""
    import warnings

    S = dense_candidates(S)
    if not S.any(axis=1).all():
        raise DataValidationError(f"{int((~S.any(axis=1)).sum())} row(s) have an empty candidate set")
    probas, scores, said, alone = {}, {}, {}, {}
    for name, pipe in engines.items():
        with warnings.catch_warnings(record=True) as said[name]:
            warnings.simplefilter("always")
            try:
                probas[name] = out_of_fold_proba(
                    pipe, X, S, n_splits=n_splits, random_state=random_state,
                    on_fold=lambda k, test, proba, name=name: tick is not None and tick(name))
            except (ConfigError, DataValidationError, ValueError, RuntimeError) as err:
                if echo is not None:
                    echo(f"engine {name} left out: {type(err).__name__}: {err}")
                continue
        alone[name] = from_proba(probas[name], S, echo=echo)
        scores[name] = alone[name].noise["log_likelihood"]
        if echo is not None:
            echo(f"engine {name}: log-likelihood of the candidate sets {scores[name]:.1f}")
    if not scores:
        raise ConfigError(f"clean: none of the engines {', '.join(engines)} could score the rows")
    weights, _ = select_mixture(probas, S)
    chosen = Mixture({name: engines[name] for name in weights}, weights)
    P = sum(w * probas[name] for name, w in weights.items())
    for name in weights:
        for w in said[name]:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for k, (_, test) in enumerate(KFold(n_splits, shuffle=True, random_state=random_state).split(X)):
        if on_fold is not None:
            on_fold(k, test, P[test])
    found = alone[next(iter(weights))] if len(weights) == 1 else from_proba(P, S)  # one engine: its own fit
    return chosen, found, scores
