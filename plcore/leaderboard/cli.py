"""``python -m plcore leaderboard list|run|merge|page|verify``: ``list`` shows the protocol and its
hash, every installed component by track and section, and each cell's state; ``run`` runs the
missing folds of the chosen rows (``--only KIND:NAME``), each written as a run file, here or by a
Hydra launcher; ``merge SRC...`` brings other machines' run files in; ``page`` renders the
leaderboard from the files; ``verify`` recomputes every stored score and re-runs one fold per data
set (issue 56, item 4). Every command checks the run files it reads the one way
(:mod:`plcore.leaderboard.checks`)."""

from __future__ import annotations

import argparse
import sys

from plcore.exceptions import ConfigError
from plcore.leaderboard.protocol import HEADLINE

__all__ = ["main", "listing"]


def listing(protocol, rows, states) -> str:
    """The text of ``leaderboard list``: a header, then one table per track and section."""
    lines = [f"protocol {protocol.key} ({protocol.hash}); data sets: {', '.join(protocol.datasets)}"]
    datasets = list(protocol.datasets)
    for track in protocol.data["tracks"]:
        for section in ("ranked", "reference"):
            mine = [e for e in rows if e.track == track and e.section == section]
            if not mine:
                continue
            title = f"{track} track" + (" (reference: trained on true labels, unranked)" if section == "reference"
                                        else "")
            lines += ["", f"{title}: {len(mine)} components"]
            table = [["component", "kind", "distribution", *datasets]]
            for e in mine:
                name = e.key if len(e.pipeline) == 1 else f"{e.key} + {e.pipeline[1]}"
                table.append([name, e.kind, f"{e.distribution} {e.version}",
                              *(states.get((e.key, d), "-") for d in datasets)])
            widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    return "\n".join(lines)


def _check_results(path, *, must_exist: bool) -> None:
    """``--results`` in one line before any work (issue 63, item 4): a file is refused, a
    folder that does not exist too where the command reads it (``run`` and ``merge`` create it),
    and a tree that holds a symbolic link (issue 71, item 4)."""
    from pathlib import Path

    where = Path(path)
    if where.exists() and not where.is_dir():
        raise ConfigError(f"--results {path}: is a file, not a folder of run files")
    if must_exist and not where.exists():
        raise ConfigError(f"--results {path}: no such folder (run files go under <results>/<id>-<version>/)")
    from plcore.leaderboard.checks import refuse_links

    refuse_links(where, f"--results {path}")  # a link out of it would be read or written through


def _gpu_here() -> bool:
    """Whether PyTorch is installed and sees a GPU."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _cells_left(entry, states) -> int:
    from plcore.leaderboard.runfile import to_run

    return sum(1 for (key, _), s in states.items() if key == entry.key and to_run(s))


def main(argv=None) -> int:
    """Entry point of ``python -m plcore leaderboard``."""
    from plcore.leaderboard.checks import cell_states
    from plcore.leaderboard.jobs import chosen, entries
    from plcore.leaderboard.protocol import load_protocol
    from plcore.registry import get_registry

    ap = argparse.ArgumentParser(prog="python -m plcore leaderboard", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    for command, text in (("list", "every eligible component by track and each cell's state"),
                          ("run", "run the missing folds of the chosen rows, each written as a run file")):
        p = sub.add_parser(command, help=text)
        p.add_argument("--protocol", default=HEADLINE, help=f"<id>/<version> (default {HEADLINE}, the headline)")
        p.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
        p.add_argument("--only", nargs="+", default=None, metavar="KIND:NAME", help="only these rows")
        p.add_argument("--track", default=None, help="only this track")
        p.add_argument("--group", default=None, choices=["classic", "deep", "clustering"],
                       help="only this group of rows (deep: the learners trained by epochs)")
        if command == "list":
            p.add_argument("--no-probe", action="store_true",
                           help="price a row that never ran by its group's median instead of a probe fit (one "
                                "fold of the smallest task; under a budget one configuration, one checkpoint)")
        if command == "run":
            p.add_argument("--datasets", nargs="+", default=None, help="only these data sets of the protocol")
            p.add_argument("--launcher", default=None, help="a Hydra launcher (joblib, ray, submitit_slurm): one job "
                                                             "per row; default: the rows one after another here")
            p.add_argument("--override", nargs="+", default=[], metavar="KEY=VALUE",
                           help="Hydra overrides for the launcher (hydra.launcher.n_jobs=2)")
            p.add_argument("--allow-cpu", action="store_true",
                           help="run a protocol meant for a GPU (vision/1) on a machine without one")
            p.add_argument("--tracking-uri", default=None,
                           help="also log each cell that ran as an MLflow run (experiment "
                                "leaderboard-<id>-<version>), for browsing")
    pg = sub.add_parser("page", help="render the leaderboard (Markdown, LaTeX, CD diagrams) from the run files alone")
    pg.add_argument("--protocol", default=HEADLINE, help=f"<id>/<version> (default {HEADLINE}, the headline)")
    pg.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    pg.add_argument("--reference", default=None, metavar="KIND:NAME",
                    help="decide every ranked row against this row (Bayesian signed-rank test, tiers), e.g. your "
                         "method: the page's tables (.tex) and figures are then your paper's")
    pg.add_argument("--out", default=None, help="write the page here (with .tex and the diagrams beside it); "
                                               "default: print the Markdown")
    pg.add_argument("--no-timings", action="store_true", help="leave out fit times and compute (pages that "
                                                              "differ only where the runs did)")
    vf = sub.add_parser("verify", help="recompute every stored score; re-run one fold per data set of the rows")
    vf.add_argument("--protocol", default=HEADLINE, help=f"<id>/<version> (default {HEADLINE}, the headline)")
    vf.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    vf.add_argument("--only", nargs="+", default=None, metavar="KIND:NAME", help="re-run only these rows")
    how = vf.add_mutually_exclusive_group()
    how.add_argument("--all", action="store_true", dest="all_folds",
                     help="re-run every fold of the rows that claims ok, failed or timeout")
    how.add_argument("--sample", type=int, default=None, metavar="N",
                     help="re-run N folds a row, drawn at random (--seed) from its ok, failed and timed-out folds")
    vf.add_argument("--rows", type=int, default=None, metavar="N",
                    help="re-run only N of the rows (after --only), drawn at random (--seed): a spot check whose "
                         "cost does not grow with the board; every file is still checked")
    vf.add_argument("--seed", type=int, default=0, help="the seed of --sample and --rows, 0 or more (default 0)")
    vf.add_argument("--allow-missing", action="store_true",
                    help="a row that cannot be re-run here (not installed, another revision) is not a failure")
    vf.add_argument("--allow-other-cpu", action="store_true",
                    help="a fold that differs where its file records another CPU's or BLAS kernel's arithmetic "
                         "is reported, not a failure")
    mg = sub.add_parser("merge", help="bring other machines' run files in (identical ones dropped, conflicts refused)")
    mg.add_argument("sources", nargs="+", metavar="SRC", help="folders of run files made elsewhere")
    mg.add_argument("--results", default="leaderboard", help="the folder merged into (default ./leaderboard)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command in ("list", "run", "page", "verify", "merge"):
        _check_results(args.results, must_exist=args.command in ("page", "verify"))
    if args.command == "merge":
        from plcore.leaderboard.checks import merge_trees

        report = merge_trees(args.sources, args.results, registry=get_registry(),
                             echo=lambda line: print(line, flush=True))
        print(f"{len(report.copied)} run file(s) merged into {args.results}; {len(report.duplicates)} identical "
              "duplicate(s) dropped")
        if report.left:
            print(f"{len(report.left)} run file(s) left out: a `leaderboard run` into {args.results} holds or has "
                  f"just written their folds; merge again once it is done to check them: "
                  + ", ".join(map(str, report.left)), flush=True)
        return 0
    if args.command == "page":
        return _page(args)
    if args.command == "verify":
        from plcore.leaderboard.protocol import load_protocol
        from plcore.leaderboard.verify import verify

        if args.sample is not None and args.sample < 1:
            raise ConfigError(f"--sample must be a positive number of folds, got {args.sample}")
        if args.rows is not None and args.rows < 1:
            raise ConfigError(f"--rows must be a positive number of rows, got {args.rows}")
        found = verify(load_protocol(args.protocol), args.results, registry=get_registry(), only=args.only,
                       echo=lambda line: print(line, flush=True), all_folds=args.all_folds, sample=args.sample,
                       seed=args.seed, allow_missing=args.allow_missing, allow_other_cpu=args.allow_other_cpu,
                       n_rows=args.rows)
        return 0 if found.ok else 1
    if args.command not in ("list", "run"):
        raise ConfigError("usage: python -m plcore leaderboard list|run|merge|page|verify ...; "
                          "python -m plcore leaderboard --help")
    protocol = load_protocol(args.protocol)
    registry = get_registry()
    rows = chosen(entries(protocol, registry), args.only, args.track, args.group)
    if args.command == "list":
        from plcore.leaderboard.jobs import cost_text, duration, estimate_missing
        from plcore.leaderboard.runfile import to_run

        from plcore.leaderboard.checks import scan

        found = scan(protocol, args.results, registry=registry)
        states = cell_states(protocol, rows, args.results, found=found)
        print(listing(protocol, rows, states))
        invalid = [b for b in found.invalid if b.cell is not None]
        stray = [b for b in found.invalid if b.cell is None]
        if invalid:  # each invalid file with its reason; `run` replaces them
            print(f"\n{len(invalid)} invalid run file(s), run again by `leaderboard run`:")
            for bad in invalid:
                print(f"  {bad.line()}")
        if stray:  # files in no cell's place: nothing runs them again
            print(f"\n{len(stray)} stray file(s), in the place of no cell of {protocol.key} (remove them):")
            for bad in stray:
                print(f"  {bad.line()}")
        todo = [k for k, s in states.items() if to_run(s)]
        estimate = estimate_missing(protocol, rows, states, args.results, registry)
        if estimate.guessed and not args.no_probe:  # a row never run anywhere: measured, not guessed
            from plcore.leaderboard.runner import probe_rate

            probed = {}
            for e in rows:
                if e.key in estimate.guessed:
                    print(f"probing {e.kind}:{e.name} (it has never run: one fold of the protocol's smallest task"
                          + (", one configuration, one checkpoint's steps" if protocol.track(e.track).budget else "")
                          + ")...", flush=True)
                    probed[e.key] = probe_rate(protocol, e, registry)
            estimate = estimate_missing(protocol, rows, states, args.results, registry, probed=probed)
        print(f"\n{len(todo)} cell(s) to run: {cost_text(estimate, len(todo)) if todo else 'nothing'}")
        if todo and protocol.data.get("requires") == "gpu":
            print(f"(protocol {protocol.key} is meant for a machine with a GPU: the estimate scales CPU "
                  "measurements and is an upper bound there)")
        for e in rows:  # what each row still costs: a new row's price before it runs
            if e.key in estimate.by_row:
                print(f"  {e.kind}:{e.name}: {_cells_left(e, states)} cell(s), "
                      f"{duration(estimate.by_row[e.key])} on one core")
        return 0
    if protocol.data.get("requires") == "gpu" and not args.allow_cpu and not _gpu_here():
        raise ConfigError(f"protocol {protocol.key} is meant for a machine with a GPU and PyTorch sees none here: "
                          "nothing run (`leaderboard list` estimates it; --allow-cpu runs it anyway)")
    if args.launcher and not rows:
        raise ConfigError("no row to run: --only, --track and --group chose none")
    if args.launcher:
        from plcore.leaderboard.sweep import launch

        launch(protocol.key, [f"{e.kind}:{e.name}" for e in rows], args.results, launcher=args.launcher,
               datasets=args.datasets, overrides=args.override, tracking_uri=args.tracking_uri)
        print(f"{len(rows)} row(s) run by Hydra's {args.launcher} launcher into {args.results}")
        return 0
    from plcore.leaderboard.runner import run_missing

    written = run_missing(protocol, rows, args.results, registry=registry, datasets=args.datasets,
                          echo=lambda line: print(line, flush=True), tracking_uri=args.tracking_uri)
    print(f"{len(written)} run file(s) written under {args.results}")
    return 0


def _page(args) -> int:
    from pathlib import Path

    from plcore.leaderboard.jobs import entries
    from plcore.leaderboard.page import collect, not_run_lines, page_command, render_markdown, write_page
    from plcore.leaderboard.protocol import load_protocol
    from plcore.registry import get_registry
    from plcore.utils.files import checked_output

    if args.out is not None:  # before any work: a page, never a run file, a folder or nowhere
        md_page = Path(args.out).resolve().suffix.lower() == ".md"  # what a link leads to, not its name
        trees = () if md_page else (args.results,)
        for path in (args.out, Path(args.out).with_suffix(".tex")):  # the page and the tables beside it
            checked_output(path, flag="--out", trees=trees, overwrite=True)
    protocol = load_protocol(args.protocol)
    registry = get_registry()
    board = collect(protocol, args.results, registry=registry)
    board.reference = args.reference
    if args.reference is not None:
        from plcore.leaderboard.page import tables

        tables(board)  # a reference that is no finished row: one line before anything is written
    not_run = not_run_lines(board, entries(protocol, registry), args.results, registry)
    command = page_command(protocol, args.results, args.out, timings=not args.no_timings, reference=args.reference)
    if args.out is None:
        sys.stdout.write(render_markdown(board, command=command, timings=not args.no_timings, not_run=not_run))
        return 0
    if board.n_files == len(board.invalid) and Path(args.out).exists():
        raise ConfigError(f"--out {args.out}: not replaced by a page of no run file (no valid file of {protocol.key} "
                          f"under {args.results}); remove it first to write an empty page")
    paths = write_page(board, args.out, command=command, timings=not args.no_timings, not_run=not_run)
    print(f"{args.out}: {len({r.ident for r in board.rows})} rows from {board.n_files} run files; {len(paths) - 1} more file(s) beside it")
    return 0
