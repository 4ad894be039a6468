"""``leaderboard page``: the leaderboard rendered from run files alone (issue 56, items 5 and 7;
design note 2.7 and 2.8).

Every file is checked and every score recomputed from the files' packed predictions on the
protocol's data (:func:`plcore.leaderboard.checks.scan`); a file that fails a check is an invalid
fold of its cell: counted like a failed one, listed with its reason, never a result. Rows are the components found in the files (the newest revision of each; older ones
listed as superseded), so the page needs no plugin installed.

Ranking with holes, honestly:

- a row with a final state (done, failed, timeout, na, invalid) on every data set of the
  protocol is ranked; a failed, timeout, na or invalid cell is imputed with the worst done cell of the ranked rows on
  that data set (its folds' scores; 0 where none is done), marked ``†`` and counted;
- a row with a cell not run, or run in part, is shown with what it has, unranked, saying what is
  missing;
- ranks, the Friedman test and the Nemenyi critical difference are always over the protocol's
  data sets, one comparison per group of a track (``classic`` and ``deep`` in the classification
  track, ``clustering``), with Nemenyi tie groups (the bars of the CD diagram) as letters;
- learners trained on true labels are a reference section, never ranked;
- a row that no component installed here backs (not installed, or installed at another revision
  or spec: nothing here can re-run its folds) is ranked with the others and marked unverified
  (``‡`` beside its name, a note under its table; ``(unverified)`` in the LaTeX and the diagrams).

Under a budget protocol (``field/3``: a track with ``budget``) every classification component is two
rows, its ``default`` (the shipped defaults at the full budget) and its ``tuned`` choice, read from the
same run files; a third table ranks every classification row together; each ranked row is decided
against its table's best row and against the reference row by the Bayesian signed-rank test with a
region of practical equivalence (:mod:`plcore.stats.bayesian`), and the rows are cut into tiers by
those verdicts.

Every text that comes from a run file (names, versions, errors, reasons) is escaped where it
reaches the page (:mod:`plcore.stats.escape`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plcore.leaderboard.protocol import Protocol
from plcore.leaderboard.runfile import state_of, to_run
from plcore.stats.escape import clean, md, md_code

__all__ = ["Row", "Board", "Table", "GROUPS", "collect", "tables", "render_markdown", "render_latex", "page_command",
           "diagram_files", "not_run_lines", "write_page"]

#: the groups of each track, in page order, with their titles
GROUPS = {"classification": {"classic": "classic learners and reducers (with the reference learner)",
                             "deep": "deep learners", "all": "every row together, classic and deep"},
          "clustering": {"clustering": "clusterers"}}
#: the groups a budget protocol's page adds (rows of every group of the track, ranked together)
JOINT = {"all"}
#: a budget protocol's two rows of a component: its defaults, and its tuned choice
VARIANTS = ("tuned", "default")


@dataclass(frozen=True)
class InvalidFold:
    """The fold of a row whose file failed its checks (:mod:`plcore.leaderboard.checks`): its
    status is ``invalid``, its error the reason; no run file stands for it."""

    error: str
    status: str = "invalid"
    machine = software = finished_at = started_at = None
    ok = False

    def seconds(self, name: str):
        return None


@dataclass
class Row:
    """A component's row: its identity and its folds' run files (:class:`~plcore.leaderboard.runfile.RunFile`,
    or :class:`InvalidFold`), ``folds[data set][fold]``."""

    track: str
    kind: str
    name: str
    key: str
    display_name: str
    section: str
    group: str
    distribution: str
    version: str
    pipeline: list
    revision: int
    folds: dict = field(default_factory=lambda: defaultdict(dict))
    #: set where another component's row has the same display name: the page adds it to the label
    alias: str = ""
    #: under a budget protocol, which of the component's two rows (:data:`VARIANTS`); else ""
    variant: str = ""

    @property
    def label(self) -> str:
        """How the page names the row (a reducer with its learner; a budget protocol's variant),
        on one line of visible characters (:func:`~plcore.stats.escape.clean`; escaped where it
        is written)."""
        text = self.display_name if self.kind != "reducer" else f"{self.display_name} + {self.pipeline[-1]}"
        return clean(text + (f" ({self.alias})" if self.alias else "") + (f", {self.variant}" if self.variant else ""))

    @property
    def base_key(self) -> str:
        """The component's row key (a variant's key without its ``~default``)."""
        return self.key.split("~")[0]

    @property
    def ident(self) -> tuple:
        """``(track, kind, row key)``: the component's row among all tracks (both variants' alike)."""
        return self.track, self.kind, self.base_key


@dataclass
class Board:
    """What :func:`collect` read: the protocol, the current rows, the superseded ones, the scores
    recomputed per fold (``scores[(row key, data set)][fold] = {metric: value}``) and the results'
    digest (of every file's place, status and predictions' digest or error: equal results, equal
    digest, wherever and whenever they ran)."""

    protocol: Protocol
    rows: list
    superseded: list
    scores: dict
    snapshot: str
    n_files: int
    timings: dict = field(default_factory=dict)
    n_bytes: int = 0
    #: the earliest ``started_at`` and latest ``finished_at`` of the files (ISO strings), or None
    span: tuple | None = None
    #: the invalid files, ``(path under the results, reason)``
    invalid: list = field(default_factory=list)
    #: the rows (:attr:`Row.ident`) that no installed component backs (not installed, or at another
    #: revision or spec); empty where :func:`collect` had no registry to check against
    unverified: set = field(default_factory=set)
    #: ``KIND:NAME``: the row every ranked row is decided against (``page --reference``), in place of
    #: the protocol's reference learner; with it, any protocol's page carries the Bayesian verdicts
    reference: str | None = None

    def mark(self, row: Row) -> str:
        """`` ‡`` after the name of an unverified row, else nothing."""
        return " ‡" if row.ident in self.unverified else ""

    def n_splits(self, track: str, dataset: str) -> int:
        return len(self.protocol.datasets[dataset]["splits"][track])

    @property
    def machines(self) -> list:
        """What the files were measured on, one line a kind of machine (cores, architecture, GPU)."""
        return sorted({f"{rec.machine['cpus']} CPU(s) {rec.machine['arch']}"
                       + (f", {rec.machine['gpu']}" if rec.machine.get("gpu") else "")
                       for r in self.rows for f in r.folds.values() for rec in f.values() if rec.machine})

    @property
    def wall_hours(self) -> float | None:
        """The hours between the first fold's start and the last one's end (None without timestamps)."""
        return None if self.span is None else _hours(*self.span)

    def state(self, row: Row, dataset: str) -> str:
        """``invalid``, ``done``, ``failed``, ``timeout``, ``na``, ``partial k/n`` or ``not run``."""
        return state_of([rec.status for rec in row.folds.get(dataset, {}).values()],
                        self.n_splits(row.track, dataset))


def _current(rows: dict) -> tuple[list, list]:
    """The newest row of each component (highest revision, then the latest finished fold) and the
    others, superseded."""
    by_component = defaultdict(list)
    for row in rows.values():
        by_component[(row.track, row.kind, row.name)].append(row)
    current, superseded = [], []
    for versions in by_component.values():
        def newest(r):
            return r.revision, max((rec.finished_at or "" for f in r.folds.values() for rec in f.values()),
                                   default="")
        versions.sort(key=newest)
        current.append(versions[-1])
        superseded += versions[:-1]
    order = (lambda r: (r.track, r.section != "ranked", r.kind, r.name, r.key))
    return sorted(current, key=order), sorted(superseded, key=order)


def collect(protocol: Protocol, results, *, data_home=None, registry=None, use_cache: bool = True) -> Board:
    """Read every run file of ``protocol`` under ``results``, each checked and its scores
    recomputed from its predictions (:func:`plcore.leaderboard.checks.scan`; ``registry``: also
    against the installed rows). A file that fails a check is an ``invalid`` fold of its cell,
    counted like a failed one and listed with its reason, never a result."""
    from plcore.leaderboard.checks import scan

    results = Path(results)
    found = scan(protocol, results, registry=registry, data_home=data_home, use_cache=use_cache)
    rows: dict = {}
    listing = []
    timings: dict = defaultdict(float)
    n_bytes = 0
    stamps: list = []
    for path, rec in found.valid:
        c = rec.component
        key = c.row_key
        row = rows.setdefault((rec.track, c.kind, key), Row(
            rec.track, c.kind, c.name, key, c.get("display_name", c.name), c.get("section", "ranked"),
            c.get("group", "clustering" if c.kind == "clusterer" else "classic"), c.get("distribution", "?"),
            str(c.get("version", "?")), list(c.get("pipeline", [c.name])), c.revision))
        row.folds[rec.dataset.name][rec.fold.index] = rec
        listing.append((path.relative_to(results).as_posix(), rec.status,
                        (rec.predictions or {}).get("sha256") or rec.error))
        wall = rec.seconds("wall_s")
        timings[(rec.track, row.group)] += float(0.0 if wall is None else wall)
        n_bytes += path.stat().st_size
        if rec.started_at and rec.finished_at:
            stamps += [rec.started_at, rec.finished_at]
    invalid = []
    for bad in found.invalid:
        invalid.append((bad.path.relative_to(results).as_posix(), bad.reason))
        listing.append((bad.path.relative_to(results).as_posix(), "invalid", bad.reason))
        if bad.cell is None:
            continue  # a stray file: listed, but it stands for no cell
        track, kind, key, dataset, fold = bad.cell
        row = rows.get((track, kind, key)) or _row_at(track, kind, key, found.installed.get((track, kind, key)))
        if row is None or fold in row.folds[dataset]:
            continue  # a row no valid file and no installed component names; a fold a valid file holds
        rows.setdefault((track, kind, key), row).folds[dataset][fold] = InvalidFold(bad.reason)
    current, superseded = _current(rows)
    _disambiguate(current)
    scores: dict = defaultdict(dict)
    by_path = dict(found.valid)
    budget = _budget_tracks(protocol)
    for path, got in found.scores.items():
        rec = by_path[path]
        if rec.track in budget:  # the tuned row's scores, and the default's under its own key
            metric = protocol.track(rec.track).metric
            scores[(rec.component.row_key, rec.dataset.name)][rec.fold.index] = {
                metric: got[metric], "disambiguation": got["disambiguation"]}
            scores[(f"{rec.component.row_key}~default", rec.dataset.name)][rec.fold.index] = {
                metric: got[f"default_{metric}"], "disambiguation": got["default_disambiguation"]}
        else:
            scores[(rec.component.row_key, rec.dataset.name)][rec.fold.index] = got
    current = [v for r in current for v in _variants(r, budget)]
    snapshot = "sha256:" + hashlib.sha256(json.dumps(sorted(listing)).encode()).hexdigest()
    unverified = set() if registry is None else {r.ident for r in current if r.ident not in found.installed}
    return Board(protocol, current, superseded, dict(scores), snapshot, len(listing), dict(timings), n_bytes,
                 (min(stamps), max(stamps)) if stamps else None, invalid, unverified)


def _budget_tracks(protocol: Protocol) -> set:
    """The tracks of ``protocol`` that run under a budget (each component two rows)."""
    return {name for name, t in protocol.tracks.items() if t.budget is not None}


def _variants(row: Row, budget: set) -> list:
    """A component's rows: itself, or under a budget its tuned row and its default's (the same
    files; the default's scores under ``<key>~default``)."""
    if row.track not in budget:
        return [row]
    from dataclasses import replace

    tuned = replace(row, variant="tuned")
    recs = [rec for f in row.folds.values() for rec in f.values() if getattr(rec, "tuning", None)]
    if recs and all(len(rec.tuning["configurations"]) == 1 and len(rec.tuning["configurations"][0]["steps"]) == 1
                    for rec in recs):
        return [tuned]  # one configuration, one checkpoint (no declared space): its default is its tuned row
    return [tuned, replace(row, key=f"{row.key}~default", variant="default")]


def _row_at(track: str, kind: str, key: str, entry) -> Row | None:
    """The row of a cell that has only invalid files: the installed row of that key; None where
    no component installed here has it (junk in a folder of its own never makes a row, nor pushes
    a valid one off the page as "newer")."""
    if entry is None:
        return None
    return Row(track, kind, entry.name, key, entry.display_name, entry.section, entry.group, entry.distribution,
               str(entry.version), list(entry.pipeline), entry.revision)


def _disambiguate(rows: list) -> None:
    """Rows of two components that carry one display name in a track are told apart by their
    component (``PL-KNN (learner:aknn)``): a page never shows two rows under one name."""
    seen = defaultdict(set)
    for r in rows:
        seen[(r.track, r.label)].add((r.kind, r.name))
    for r in rows:
        if len(seen[(r.track, r.label)]) > 1:
            r.alias = f"{r.kind}:{r.name}"


@dataclass
class Table:
    """One group's comparison: its ranked rows' comparison (``None`` under 2 ranked rows), the
    imputed cells, the tie groups, win/tie/loss against the reference, and the unranked rows."""

    track: str
    group: str
    metric: str
    ranked: list
    comparison: object
    imputed: set
    tie_groups: dict
    wtl: dict
    unranked: list
    reference: str = ""
    #: the best row against each other one (:func:`plcore.stats.against_best`), ``{}`` without ranks
    versus_best: dict = field(default_factory=dict)
    #: each ranked row's bootstrap interval of its average rank (:func:`plcore.stats.rank_intervals`)
    intervals: dict = field(default_factory=dict)
    #: under a budget: each ranked row against the best (``{key: Verdict}``, the row's side first),
    #: against the reference row, and its tier (:mod:`plcore.stats.bayesian`)
    verdicts: dict = field(default_factory=dict)
    against_reference: dict = field(default_factory=dict)
    tiers: dict = field(default_factory=dict)
    reference_key: str = ""

    @property
    def median_row(self):
        """The row at the middle place of the ranking (the lower of the two middle places for an
        even count): what "better than the median row" compares the best with."""
        if self.comparison is None or self.comparison.ranks is None:
            return None
        from plcore.stats import ranked_methods

        order = ranked_methods(self.comparison)
        return order[len(order) // 2]


def _metrics(protocol: Protocol, track: str) -> list:
    return list(protocol.track(track).metrics)


def _fold_values(board: Board, key, dataset, metric) -> list:
    folds = board.scores.get((key, dataset), {})
    return [folds[k][metric] for k in sorted(folds)]


def tables(board: Board) -> list:
    """Every (track, group, metric) comparison of the page, as :class:`Table` s."""
    from plcore.stats import against_best, compare, rank_intervals, win_tie_loss

    out = []
    for track, groups in GROUPS.items():
        if track not in board.protocol.data["tracks"]:
            continue
        datasets = board.protocol.track_datasets(track)
        reference_learner = board.protocol.track(track).reference_learner
        budget = track in _budget_tracks(board.protocol)
        chosen_ref = _reference_row(board, track)
        for group in groups:
            if group in JOINT and not budget:
                continue
            mine = [r for r in board.rows if r.track == track and r.section == "ranked"
                    and (r.group == group or group in JOINT)]
            if not mine:
                continue
            ranked = [r for r in mine if all(not board.state(r, d).startswith(("partial", "not run"))
                                             for d in datasets)]
            unranked = [r for r in mine if r not in ranked]
            for metric in _metrics(board.protocol, track):
                scores, imputed = {}, set()
                for d in datasets:
                    done = {r.key: _fold_values(board, r.key, d, metric) for r in ranked if board.state(r, d) == "done"}
                    worst = min(done.values(), key=np.mean) if done else [0.0] * board.n_splits(track, d)
                    for r in ranked:
                        if r.key in done:
                            scores[(r.key, d)] = done[r.key]
                        else:
                            scores[(r.key, d)] = list(worst)
                            imputed.add((r.key, d))
                c = compare(scores) if len(ranked) >= 2 else None
                if c is not None:  # the LaTeX and the diagrams name an unverified row so
                    c.labels = {r.key: r.label + (" (unverified)" if r.ident in board.unverified else "")
                                for r in ranked}
                ref = chosen_ref or next((r for r in board.rows if r.track == track and r.kind == "learner"
                                          and r.name == reference_learner and r.variant in ("", "tuned")
                                          and all(board.state(r, d) == "done" for d in datasets)), None)
                wtl = {}
                if ref is not None:  # each row's wins, ties and losses against the reference learner
                    both = {k: v for k, v in scores.items() if k not in imputed}  # a hole wins nothing
                    both.update({(ref.key, d): _fold_values(board, ref.key, d, metric) for d in datasets})
                    wtl = {m: (lose, tie, win) for m, (win, tie, lose) in win_tie_loss(both, ref.key).items()}
                versus, intervals = {}, {}
                if c is not None and c.ranks is not None and len(ranked) >= 2 and len(datasets) >= 2:
                    versus = against_best(c.mean, c.methods, datasets)
                    intervals = rank_intervals(c.mean, c.methods, datasets)
                table = Table(track, group, metric, ranked, c, imputed, _tie_groups(c), wtl, unranked,
                              ref.label if ref is not None else "", versus, intervals)
                if (budget or chosen_ref) and c is not None and c.ranks is not None and len(datasets) >= 2:
                    _decide(table, scores, datasets, board, ref, metric)
                out.append(table)
    return out


def _reference_row(board: Board, track: str):
    """The row ``board.reference`` names in ``track`` (its tuned row under a budget), None where no
    reference is asked for or the track has no such row; one finished on every data set."""
    from plcore.exceptions import ConfigError

    if board.reference is None:
        return None
    kind, _, name = board.reference.partition(":")
    found = [r for r in board.rows if r.track == track and r.kind == kind and r.name == name
             and r.variant in ("", "tuned")]
    if not found:
        if any(r.kind == kind and r.name == name for r in board.rows):
            return None  # the row is on another track
        raise ConfigError(f"--reference {board.reference}: no such row on {board.protocol.key}; its rows: "
                          + ", ".join(sorted({f"{r.kind}:{r.name}" for r in board.rows})))
    row = found[0]
    unfinished = [d for d in board.protocol.track_datasets(track) if board.state(row, d) != "done"]
    if unfinished:
        raise ConfigError(f"--reference {board.reference}: not finished on {', '.join(unfinished)}: a reference "
                          "needs a result on every data set")
    return row


def _decide(t: Table, scores: dict, datasets: list, board: Board, ref, metric: str) -> None:
    """The Bayesian verdicts of a budget protocol's table (:mod:`plcore.stats.bayesian`): every
    ranked row against the best (by average rank) and against the reference row (its per-data-set
    means, imputed cells as ranked), and the tiers they make."""
    from plcore.stats import ranked_methods, signed_rank, tiers

    means = {r.key: np.array([np.mean(scores[(r.key, d)]) for d in datasets]) for r in t.ranked}
    order = ranked_methods(t.comparison)
    best = order[0]
    t.verdicts = {k: signed_rank(means[k], means[best]) for k in order if k != best}
    if ref is not None:
        t.reference_key = ref.key
        ref_means = np.array([np.mean(_fold_values(board, ref.key, d, metric)) for d in datasets])
        t.against_reference = {k: signed_rank(means[k], ref_means) for k in order if k != ref.key}
    t.tiers = tiers(means, order)


def _tie_groups(c) -> dict:
    """``{method: "ab"}``: the Nemenyi groups (maximal runs of methods, by average rank, whose
    ranks differ by less than the critical difference: the bars of the CD diagram) each method
    is in, lettered from the best; ``{}`` without a critical difference."""
    if c is None or c.critical_difference is None:
        return {}
    order = sorted(range(len(c.methods)), key=lambda i: (c.ranks[i], c.methods[i]))
    spans, last_end = [], -1
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and c.ranks[order[end + 1]] - c.ranks[order[start]] < c.critical_difference:
            end += 1
        if end > last_end:  # not inside the previous span
            spans.append((start, end))
            last_end = end
    letters = "abcdefghijklmnopqrstuvwxyz"
    groups = defaultdict(str)
    for g, (start, end) in enumerate(spans):
        for pos in range(start, end + 1):
            groups[c.methods[order[pos]]] += letters[g % 26]
    return dict(groups)


def _cell(board: Board, table: Table, row: Row, dataset: str, digits: int = 3) -> str:
    """``mean ± std`` of a cell; ``† failed`` etc. for an imputed one; the state otherwise."""
    state = board.state(row, dataset)
    if state != "done":
        return f"† {state}" if (row.key, dataset) in table.imputed else state
    values = _fold_values(board, row.key, dataset, table.metric)
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def _hours(start: str, end: str) -> float:
    from datetime import datetime

    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(end, fmt) - datetime.strptime(start, fmt)).total_seconds() / 3600


def _interval(t: Table, key) -> str:
    low_high = t.intervals.get(key)
    return "–" if low_high is None else f"{low_high[0]:.1f}–{low_high[1]:.1f}"


def _versus_cell(t: Table, key) -> str:
    """The Holm-adjusted p of the best row against this one, ``*`` where significant (0.05)."""
    if not t.versus_best:
        return "–"
    if key == t.versus_best["best"]:
        return "best"
    p, p_holm, significant, _, _ = t.versus_best["tests"][key]
    return f"{p_holm:.3g}" + (" *" if significant else "")


def _versus_lines(t: Table, by_key: dict) -> list:
    """What the test beyond Nemenyi says: which rows the best one beats significantly, and the
    best row against the median row."""
    if not t.versus_best or not t.versus_best["tests"]:
        return []
    best = t.versus_best["best"]
    from plcore.stats import ranked_methods

    beaten = [k for k in ranked_methods(t.comparison) if k in t.versus_best["tests"] and t.versus_best["tests"][k][2]]
    median = t.median_row
    lines = [f"Beyond Nemenyi: the best row, {md(by_key[best].label)}, against each other row by the Wilcoxon "
             f"signed-rank test over the {len(t.comparison.datasets)} data sets' means, Holm-adjusted (column "
             f"\"vs best\", `*` = significant at 0.05): it is significantly better than {len(beaten)} of the "
             f"{len(t.versus_best['tests'])} other rows"
             + (f" ({', '.join(md(by_key[k].label) for k in beaten)})" if beaten else "")
             + ". The average ranks' 95% intervals are percentile bootstrap intervals over the data sets (2000 "
             "resamples, seed 0)."]
    if median is not None and median != best:
        p, p_holm, significant, wins, losses = t.versus_best["tests"][median]
        lines.append(f"Best against the median row ({md(by_key[median].label)}): better on {wins}, worse on {losses} "
                     f"of the data sets, Holm p = {p_holm:.3g}: "
                     + ("significantly better." if significant else "not significantly better at 0.05."))
    return lines


def _glance(shown: list, by_key: dict, protocol) -> list:
    """A budget protocol's summary, first on its page: the tiers of every row together, the best
    row of each group, what tuning changes, how much is decided, and the budget every row had."""
    decided = [t for t in shown if t.tiers]
    if not decided:
        return []
    from plcore.stats import ranked_methods

    lines = ["", "## At a glance", ""]
    for t in decided:
        order = ranked_methods(t.comparison)
        first = [md(by_key[k].label) for k in order if t.tiers[k] == 1]
        median = t.median_row
        said = (f"the median row ({md(by_key[median].label)}) is {t.verdicts[median].decided} against it"
                if median is not None and median in t.verdicts else "")
        n = len(t.verdicts)
        done = sum(v.decided != "undecided" for v in t.verdicts.values())
        parts = [f"best {md(by_key[order[0]].label)}", f"tier 1 of {max(t.tiers.values())}: {', '.join(first)}", said,
                 f"{done} of {n} rows decided against the best"]
        lines.append(f"- **{GROUPS[t.track][t.group]}**: " + "; ".join(p for p in parts if p) + ".")
    for t in decided:
        if t.group in JOINT:
            continue
        pairs = [(k, f"{k}~default") for k in t.comparison.methods if not k.endswith("~default")
                 and f"{k}~default" in t.comparison.methods]
        if not pairs:
            continue
        gains = [np.mean([t.comparison.mean[(k, d)] - t.comparison.mean[(base, d)] for d in t.comparison.datasets])
                 for k, base in pairs]
        rank = {k: i for i, k in enumerate(ranked_methods(t.comparison))}
        up = sum(rank[k] < rank[base] for k, base in pairs)
        lines.append(f"- tuning, {GROUPS[t.track][t.group]}: the tuned row ranks above its default for {up} of "
                     f"{len(pairs)} components; mean accuracy {100 * np.mean(gains):+.1f} points (from "
                     f"{100 * min(gains):+.1f} to {100 * max(gains):+.1f} over the components).")
    for track in dict.fromkeys(t.track for t in decided):
        budget = protocol.track(track).budget
        if budget is not None:
            lines.append(f"- the budget, {track}: {budget.configurations} configurations a row, a deep configuration "
                         f"trained {budget.steps:,} optimizer steps (a checkpoint every {budget.every}). The papers "
                         "train their deep learners many times longer, so a deep row's figures can sit well below "
                         "theirs; for the headline, [is its ranking valid?](leaderboard_validity.md) measures by how "
                         "much, beside the field's published recipe, and whether the ranking holds at a smaller "
                         "budget.")
    return lines


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _configuration_lines(board: Board) -> list:
    """A budget protocol's configurations: each component's drawn configurations (the same on
    every fold and task) and how often its tuned choice took each one."""
    rows = [r for r in board.rows if r.variant == "tuned"]
    if not rows:
        return []
    lines = ["", "## Configurations and the tuned choice", "",
             "Each component's configurations are the same on every fold and task: configuration 0 its defaults, "
             "the others drawn from its declared space. `chosen` counts the folds whose tuned choice (the largest "
             "validation covering rate over configurations and checkpoints) took each configuration.", "",
             "| method | chosen (folds of configuration 0, 1, ...) | configurations 1, 2, ... |", "|---|---|---|"]
    for r in rows:
        recs = [rec for f in r.folds.values() for rec in f.values() if getattr(rec, "tuning", None)]
        if not recs:
            continue
        confs = recs[0].tuning["configurations"]
        counts = [0] * len(confs)
        for rec in recs:
            j = rec.tuning["chosen"]["configuration"]
            if j < len(counts):
                counts[j] += 1
        params = "; ".join(
            f"{j}: " + ", ".join(f"{k.split('.', 1)[-1]}={_short(v)}" for k, v in sorted(c["params"].items()))
            for j, c in enumerate(confs) if j) or "none (no declared space)"
        lines.append(f"| {md(r.label)} | {' / '.join(map(str, counts))} | {md(params)} |")
    return lines


def _twin_lines(board: Board) -> list:
    """Rows that predict alike on every fold (the same predictions' digests): one note naming each
    set of them (PiCO and Conf+PiCO train the same network)."""
    groups = defaultdict(list)
    for r in board.rows:
        if r.variant != "tuned" or not r.folds:  # a budget protocol's page (the records' pages stay as rendered)
            continue
        digest = tuple(sorted((d, k, (rec.predictions or {}).get("sha256") if getattr(rec, "ok", False) else None)
                              for d, f in r.folds.items() for k, rec in f.items()))
        if all(value is None for *_, value in digest):  # rows that only failed predict nothing: nothing to match
            continue
        groups[(r.track, digest)].append(r)
    twins = [g for g in groups.values() if len(g) > 1]
    if not twins:
        return []
    return ["", "Rows that made the same predictions on every fold (they train alike): "
            + "; ".join(", ".join(md(r.label) for r in g) for g in twins) + "."]


def _verdict_cell(verdicts: dict, key, what: str) -> str:
    """``0.97 / 0.03 / 0.00 better`` (the row against ``what``), ``best`` or ``reference`` for that row itself."""
    v = verdicts.get(key)
    if v is None:
        return what if verdicts else "–"
    return f"{v.text} {v.decided}"


def _disambiguation(board: Board, row: Row, datasets: list) -> str:
    """The row's disambiguation accuracy (its fit rows' labels recovered), its data sets' mean."""
    values = [np.mean([f["disambiguation"] for f in board.scores[(row.key, d)].values()]) for d in datasets
              if board.scores.get((row.key, d)) and all("disambiguation" in f for f in board.scores[(row.key, d)].values())]
    return f"{np.mean(values):.3f}" if values else "–"


def _verdict_lines(t: Table, by_key: dict) -> list:
    """What the Bayesian verdicts of a table decide: the rows decided against the best, the best
    against the median row, and the tiers."""
    from plcore.stats import ranked_methods
    from plcore.stats.bayesian import ROPE, THRESHOLD

    order = ranked_methods(t.comparison)
    best, median = order[0], t.median_row
    decided = sum(v.decided != "undecided" for v in t.verdicts.values())
    counts = {name: sum(v.decided == name for v in t.verdicts.values()) for name in ("worse", "equivalent")}
    lines = [f"Decided: each row against the best row, {md(by_key[best].label)}, and against the reference row by "
             f"the Bayesian signed-rank test over the {len(t.comparison.datasets)} data sets' means (Benavoli et al., "
             f"JMLR 2017; baycomp), region of practical equivalence {100 * ROPE:g} accuracy point: the columns give "
             "P(the row is practically better / equivalent / worse), a verdict where one reaches "
             f"{THRESHOLD}. {decided} of the {len(t.verdicts)} other rows are decided against the best "
             f"({counts['worse']} worse, {counts['equivalent']} practically equivalent)."]
    if median is not None and median != best:
        v = t.verdicts[median]
        lines.append(f"Best against the median row ({md(by_key[median].label)}): the median row is {v.decided} "
                     f"(P better / equivalent / worse {v.text}).")
    n_tiers = max(t.tiers.values())
    top = [md(by_key[k].label) for k in order if t.tiers[k] == 1]
    lines.append(f"Tiers: {n_tiers}; a tier is the best row left and every row it is not decided better than. "
                 f"Tier 1: {', '.join(top)}.")
    return lines


def _unverified_lines(board: Board, order: list) -> list:
    """The note under a table with an unverified row (``order``: its rows, best first): what the
    mark means, and whether such a row is ranked above a verified one."""
    marked = [r for r in order if r.ident in board.unverified]
    if not marked:
        return []
    last_verified = max((i for i, r in enumerate(order) if r.ident not in board.unverified), default=-1)
    above = sum(1 for r in marked if order.index(r) < last_verified)
    return [f"`‡`: unverified: {len(marked)} row(s) that no component installed where this page was rendered backs "
            "(not installed, or installed at another revision or spec): their scores are recomputed from their "
            "files' predictions, but no fold of theirs can be re-run here (`leaderboard verify`). They are ranked "
            f"with the others; {above} of them ranked above a verified row."]


def _median_fit(row: Row) -> float | None:
    fits = [rec.seconds("fit_s") for f in row.folds.values() for rec in f.values()
            if rec.ok and rec.seconds("fit_s") is not None]
    return float(np.median(fits)) if fits else None


def _missing(board: Board, row: Row) -> str:
    parts = [f"{d} {board.state(row, d).replace('partial ', '')}" for d in board.protocol.track_datasets(row.track)
             if board.state(row, d).startswith(("partial", "not run"))]
    return "not ranked: " + ", ".join(parts)


def _header(board: Board, command: str, timings: bool) -> list:
    p = board.protocol
    plcore_versions = sorted({md(rec.software.get("plcore")) for r in board.rows for f in r.folds.values()
                              for rec in f.values() if rec.software})
    lines = [f"Protocol **{p.key}** (`{p.hash}`): {p.data.get('description', '')}.", "",
             f"Rendered by `{command}` from {board.n_files} run file(s)"
             + (f" ({board.n_bytes / 1e6:.2f} MB)" if timings else "")
             + f", results snapshot `{board.snapshot}` (plcore {', '.join(plcore_versions) or '?'}). Every score is "
             "recomputed from the files' predictions; how rows are ranked, imputed and grouped: "
             "[the leaderboard](../leaderboard.md#ranking-with-holes).",
             "", "| data set | rows | classes | candidate sets | fingerprint |", "|---|---|---|---|---|"]
    for name, d in p.datasets.items():
        cands = d["candidates"] if d["candidates"] == "native" else ", ".join(
            f"{k}={v}" for k, v in d["candidates"].items())
        lines.append(f"| {name} | {d['n_samples']} | {d['n_classes']} | {cands} | `{d['fingerprint']}` |")
    return lines


def render_markdown(board: Board, *, command: str, timings: bool = True, diagrams: dict | None = None,
                    not_run: list | None = None) -> str:
    """The page as Markdown: header, then per track and group the ranked table (average rank,
    Nemenyi groups, win/tie/loss against the reference learner, imputed cells), the Friedman test
    and CD, the CD diagram (``diagrams[(track, group, metric)]``: a file name), the unranked rows;
    then the reference section, the failures, the superseded rows and ``not_run``: lines on the
    installed rows that have no file yet (:func:`not_run_lines`)."""
    from plcore.stats import ranked_methods

    p = board.protocol
    lines = [f"# Leaderboard: {p.key}", "", *_header(board, command, timings)]
    if not board.rows:
        lines += ["", f"No run file of this protocol yet: `python -m plcore leaderboard list --protocol {p.key}` "
                      "lists its rows and estimates their cost."]
    by_key = {r.key: r for r in board.rows}
    shown = tables(board)
    lines += _glance(shown, by_key, p)
    for t in shown:
        k, datasets = len(t.ranked), p.track_datasets(t.track)
        lines += ["", f"## {t.track}: {GROUPS[t.track][t.group]} ({t.metric})", ""]
        decided = bool(t.tiers)  # a budget protocol's table: Bayesian verdicts and tiers
        head = (["rank", "tier", "method", *datasets, "average rank", "95% interval",
                 "vs best: P(better / equivalent / worse)", f"vs {t.reference or 'reference'}: P(...)",
                 "disambiguation", "imputed"] if decided else
                ["rank", "method", *datasets, "average rank", "95% interval", "Nemenyi group", "vs best: Holm p",
                 "imputed"])
        head += [f"vs {t.reference}: win/tie/loss"] if t.wtl else []
        head += ["median fit (s)"] if timings else []
        head += ["distribution"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if t.ranked else []
        order = ranked_methods(t.comparison) if t.comparison is not None else [r.key for r in t.ranked]
        for pos, key in enumerate(order, 1):
            row = by_key[key]
            i = t.comparison.methods.index(key) if t.comparison is not None else None
            n_imp = sum((key, d) in t.imputed for d in datasets)
            rank = "–" if i is None or t.comparison.ranks is None else f"{t.comparison.ranks[i]:.2f}"
            imputed = f"{100 * n_imp / max(len(datasets), 1):.0f}%"
            if decided:
                cells = [str(pos), str(t.tiers.get(key, "–")), md(row.label) + board.mark(row),
                         *(_cell(board, t, row, d) for d in datasets), rank, _interval(t, key),
                         _verdict_cell(t.verdicts, key, "best"), _verdict_cell(t.against_reference, key, "reference"),
                         _disambiguation(board, row, datasets), imputed]
            else:
                cells = [str(pos), md(row.label) + board.mark(row), *(_cell(board, t, row, d) for d in datasets),
                         rank, _interval(t, key), t.tie_groups.get(key, "–"), _versus_cell(t, key), imputed]
            if t.wtl:
                cells.append("–" if key not in t.wtl else "/".join(map(str, t.wtl[key])))
            if timings:
                fit = _median_fit(row)
                cells.append("–" if fit is None else f"{fit:.2f}")
            cells.append(md(f"{row.distribution} {row.version}"))
            lines.append("| " + " | ".join(cells) + " |")
        c = t.comparison
        lines.append("")
        if c is not None and c.friedman is not None:
            lines.append(f"{k} ranked rows over the protocol's {len(datasets)} data sets: Friedman chi2 = "
                         f"{c.friedman[0]:.3f}, p = {c.friedman[1]:.3g}; Nemenyi critical difference (0.05) = "
                         f"{c.critical_difference:.2f} average ranks (methods whose ranks differ by less share a "
                         "group letter).")
        else:
            lines.append(f"{k} ranked row(s): no Friedman test (it needs 3 rows and rows that do not all tie).")
        lines += _verdict_lines(t, by_key) if decided else _versus_lines(t, by_key)
        lines += _unverified_lines(board, [by_key[key] for key in order])
        if t.imputed:
            lines.append(f"`†`: {len(t.imputed)} cell(s) failed, timed out, not applicable or invalid, imputed with "
                         "the worst done cell of the ranked rows on that data set.")
        if diagrams and (t.track, t.group, t.metric) in diagrams:
            lines += ["", f"![critical-difference diagram: {t.track}, {t.group}, {t.metric}]"
                          f"({diagrams[(t.track, t.group, t.metric)]})"]
        if t.unranked:  # what they have, done cells as mean ± std (of the folds that ran)
            lines += ["", "Not ranked yet (cells not run), with what they have:", "",
                      "| method | " + " | ".join(datasets) + " | missing |", "|" + "---|" * (len(datasets) + 2)]
            for r in t.unranked:
                cells = []
                for d in datasets:
                    values = _fold_values(board, r.key, d, t.metric)
                    state = board.state(r, d)
                    shown = f"{np.mean(values):.3f} ± {np.std(values):.3f}" if values else ""
                    cells.append(shown if state == "done" else f"{shown} ({state})".strip() if values else state)
                lines.append(f"| {md(r.label)}{board.mark(r)} ({md_code(f'{r.kind}:{r.base_key}')}) | " + " | ".join(cells)
                             + f" | {_missing(board, r).removeprefix('not ranked: ')} |")
    lines += _configuration_lines(board) + _twin_lines(board)
    refs = [r for r in board.rows if r.section == "reference"]
    datasets = p.track_datasets("classification") if refs else []
    if refs:
        lines += ["", "## Reference: trained on true labels (not ranked)", "",
                  "| method | " + " | ".join(datasets) + " |", "|" + "---|" * (len(datasets) + 1)]
        for r in refs:
            cells = []
            for d in datasets:
                values = _fold_values(board, r.key, d, _metrics(p, r.track)[0])
                cells.append(f"{np.mean(values):.3f}" if board.state(r, d) == "done" else board.state(r, d))
            lines.append(f"| {md(r.label)}{board.mark(r)} | " + " | ".join(cells) + " |")
    failures = [(r, d, rec) for r in board.rows if r.variant != "default" for d in p.track_datasets(r.track)
                for _, rec in sorted(r.folds.get(d, {}).items()) if rec.status not in ("ok", "invalid")]
    if failures:
        lines += ["", "## Failures, timeouts and declared not-applicable cells", ""]
        seen = set()
        for r, d, rec in failures:
            if (r.key, d, rec.error) not in seen:
                seen.add((r.key, d, rec.error))
                lines.append(f"- {md_code(f'{r.kind}:{r.base_key}')} on {d} ({rec.status}): {md(rec.error)}")
    if board.invalid:
        lines += ["", "## Invalid run files (counted as failed cells, never as results)", "",
                  *(f"- {md_code(path)}: {md(reason)}" for path, reason in board.invalid)]
    if board.superseded:
        lines += ["", "## Superseded (an older revision or spec; never ranked)", ""]
        lines += [f"- {md_code(f'{r.kind}:{r.key}')}" for r in board.superseded]
    if not_run:
        lines += ["", "## Not run yet on this protocol (installed here), and what it would cost", "", *not_run]
    if timings and board.timings:
        spent = ", ".join(f"{track} {group} {seconds / 60:.1f} min" for (track, group), seconds
                          in sorted(board.timings.items()))
        machines = [md(m) for m in board.machines]
        total = sum(board.timings.values()) / 3600
        lines += ["", f"Compute in these files (sum of the folds' wall times): {spent}; {total:.2f} core-hours in "
                      f"all; measured on {'; '.join(machines) or 'unrecorded machines'}."
                  + (f" The files' timestamps span {board.wall_hours:.2f} h of wall time (the first fold's "
                     "start to the last one's end; runs resumed later or on other machines widen it)."
                     if board.span else "")]
    return "\n".join(lines) + "\n"


def render_latex(board: Board) -> str:
    """Each ranked table as a LaTeX ``table`` (booktabs), as :func:`plcore.stats.latex_table`
    writes it, imputed cells included as their imputed scores."""
    from plcore.stats import latex_table

    parts = []
    for t in tables(board):
        if t.comparison is not None:
            parts.append(latex_table(t.comparison, by_rank=True,
                                     caption=f"{board.protocol.key}, {t.track} ({t.group}): {t.metric}; imputed "
                                             f"cells: {len(t.imputed)}"))
    return "\n".join(parts)


def not_run_lines(board: Board, installed: list, results, registry) -> list:
    """One line per group of the installed rows (:func:`plcore.leaderboard.jobs.entries`) with no
    run file of the board's protocol: their names and the estimated cost of running them
    (:func:`plcore.leaderboard.jobs.estimate_missing`, from the other tiers' files under ``results``)."""
    from plcore.leaderboard.jobs import cost_text, estimate_missing

    have = {r.key for r in board.rows} | {r.key for r in board.superseded}
    missing = [e for e in installed if e.key not in have]
    out = []
    for track, groups in GROUPS.items():
        for group in groups:
            mine = [e for e in missing if e.track == track and e.group == group]
            if not mine:
                continue
            estimate = estimate_missing(board.protocol, mine, {}, results, registry)
            cells = sum(1 for e in mine for d in board.protocol.track_datasets(track) if d not in e.na)
            cost = cost_text(estimate, cells)
            out.append(f"- {track}, {GROUPS[track][group]}: {len(mine)} row(s) ({', '.join(e.name for e in mine)}); "
                       f"{cost}")
    by_key = {r.key: r for r in board.rows}
    states = {(e.key, d): "na" if d in e.na else board.state(by_key[e.key], d) for e in installed if e.key in by_key
              for d in board.protocol.track_datasets(e.track)}
    left = [k for k, state in states.items() if to_run(state)]
    if left:  # rows that have run in part: what the rest costs
        started = [e for e in installed if any(k == e.key for k, _ in left)]
        estimate = estimate_missing(board.protocol, started, states, results, registry)
        out.append(f"- cells still to run in the rows above that have run in part: {len(left)} "
                   f"({', '.join(e.name for e in started)}); {cost_text(estimate, len(left))}")
    return out


def page_command(protocol: Protocol, results, out=None, *, timings: bool = True, reference: str | None = None) -> str:
    """The command that renders a page (printed on it, so that anyone can rebuild it)."""
    return (f"python -m plcore leaderboard page --protocol {protocol.key} --results {_shown(results)}"
            + (f" --reference {reference}" if reference else "")
            + (f" --out {_shown(out)}" if out else "") + ("" if timings else " --no-timings"))


def _shown(path) -> str:
    """A path as a page prints it: relative to the current folder, never a path of this machine."""
    import os

    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive
        return path.name


def diagram_files(board: Board, out) -> dict:
    """``{(track, group, metric): "<stem>_cd_<track>_<group>_<metric>"}``: the CD diagram of every
    table with a Friedman test, named after the page ``out``."""
    out = Path(out)
    return {(t.track, t.group, t.metric): f"{out.stem}_cd_{t.track}_{t.group}_{t.metric}" for t in tables(board)
            if t.comparison is not None and t.comparison.critical_difference is not None}


def write_page(board: Board, out, *, command: str, timings: bool = True, not_run: list | None = None) -> list:
    """Write ``out`` (Markdown), the LaTeX tables beside it (``.tex``) and the CD diagrams
    (:func:`diagram_files`, ``.svg`` and ``.png``) in ``out``'s folder, which must exist; returns
    the paths written."""
    from plcore.stats import cd_diagram

    out = Path(out)
    stems = diagram_files(board, out)
    written = []
    for t in tables(board):
        if (t.track, t.group, t.metric) in stems:
            written += cd_diagram(t.comparison, out.with_name(stems[(t.track, t.group, t.metric)]),
                                  title=f"{board.protocol.key}: {t.track}, {t.group} ({t.metric})")
    out.write_text(render_markdown(board, command=command, timings=timings,
                                   diagrams={k: v + ".svg" for k, v in stems.items()}, not_run=not_run))
    tex = out.with_suffix(".tex")
    tex.write_text(render_latex(board))
    return [out, tex, *written]
