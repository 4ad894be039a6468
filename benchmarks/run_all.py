"""One benchmark command: every benchmark at a quick size, one markdown table (issue 19).

Run from the repository root::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py --quick [--output FILE]

Convention
----------
A benchmark module ``benchmarks/<name>.py`` contributes rows by defining, at top level::

    def table_rows(quick: bool = True) -> list[dict]: ...

Each row has the keys ``method``, ``measure``, ``ratio`` (float), ``goal`` (str, e.g.
``">= 10x"``), ``met`` (bool) and ``note`` (str: provenance, the absolute figures, anchors).
Importing the module must not run its ``main()``.

How it runs
-----------
Each module's ``table_rows(quick=...)`` is called in a fresh subprocess (isolation: memory,
numba caches, imported plugins), with ``benchmarks/`` on ``sys.path`` and the repository
root as working directory; the child's own output goes to stderr (progress), the rows come
back as JSON through a temporary file. The modules of :data:`EXPECTED` always get a row: a
missing file, a module without ``table_rows``, one that raises, times out or returns malformed
rows gets a row saying so. Any other ``benchmarks/*.py`` that defines ``table_rows`` is run
too (after the expected ones). Progress goes to stderr, the markdown table to stdout (and to
``--output``). The exit status is 1 when a module failed, was missing, or gave a row whose
ratio is not a finite number (a measurement that could not be made); with ``--strict`` also
when a goal is not met.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent

#: The modules expected to contribute, in table order. A tuple lists alternatives: every one
#: of them that defines ``table_rows`` is run, and the group is missing only when none does
#: (issue 19's rows: start-up and tracking, IPAL's NNLS, the online single-row path,
#: neighbour search, A-kNN predict, PL-KNN, CENDA at 100k, SAUTE; then the other methods'
#: speed-ups over their straightforward versions: PLC, the deep learners).
EXPECTED: tuple[tuple[str, ...], ...] = (
    ("startup",),
    ("ipal",),
    ("online_single_row", "online"),
    ("neighbors",),
    ("aknn",),
    ("plknn",),
    ("cenda",),
    ("saute",),
    ("plc",),
    ("deep",),
    ("selection_speed",),
    ("deep_threads",),
)

#: never run as a contributing module (this command itself)
EXCLUDED = {"run_all"}

KEYS = ("method", "measure", "ratio", "goal", "met", "note")
COLUMNS = ("method", "measure", "ratio", "goal", "met", "note", "source")

_CHILD = r"""
import json, sys
bench_dir, name, quick, out = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
sys.path.insert(0, bench_dir)
mod = __import__(name)
rows = mod.table_rows(quick=quick)
with open(out, "w", encoding="utf-8") as fh:
    json.dump(rows, fh)
"""


@dataclass
class ModuleResult:
    """What one module gave: its rows, or why it gave none."""

    name: str
    rows: list[dict] = field(default_factory=list)
    status: str = "ok"  # ok | missing module | missing table_rows | failed
    error: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status != "ok" or any(not _finite(r.get("ratio")) for r in self.rows)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def defines_table_rows(path: Path) -> bool:
    """Whether ``path`` defines a top-level ``table_rows`` (read statically: nothing is imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "table_rows"
               for node in tree.body)


def plan(bench_dir: Path = BENCH_DIR, expected=EXPECTED, discover: bool = True) -> list[tuple[str, str]]:
    """``[(module name, status)]`` in table order: the expected modules (status ``ok``,
    ``missing module`` or ``missing table_rows``), then (``discover``) the other modules
    that define ``table_rows``."""
    out, seen = [], set()
    for group in expected:
        seen.update(group)
        present = [name for name in group if (bench_dir / f"{name}.py").exists()]
        with_rows = [name for name in present if defines_table_rows(bench_dir / f"{name}.py")]
        if with_rows:
            out += [(name, "ok") for name in with_rows]
        elif present:
            out.append((present[0], "missing table_rows"))
        else:
            out.append(("/".join(group), "missing module"))
    for path in sorted(bench_dir.glob("*.py")) if discover else ():
        name = path.stem
        if name not in seen and name not in EXCLUDED and not name.startswith("_") and defines_table_rows(path):
            out.append((name, "ok"))
    return out


def validate_rows(rows) -> list[dict]:
    """The rows, checked against the convention (raises ``ValueError`` naming the problem)."""
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"table_rows returned {type(rows).__name__} {rows!r:.80}, expected a non-empty list of dicts")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is a {type(row).__name__}, expected a dict")
        missing = [k for k in KEYS if k not in row]
        if missing:
            raise ValueError(f"row {i} lacks the keys {missing}")
        if not isinstance(row["met"], bool):
            raise ValueError(f"row {i}: met is {row['met']!r}, expected a bool")
        if row["ratio"] is not None and not isinstance(row["ratio"], (int, float)):
            raise ValueError(f"row {i}: ratio is {row['ratio']!r}, expected a float")
    return rows


def _env() -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env.setdefault(var, "1")
    env.setdefault("PLCORE_DATA_HOME", str(REPO.parent / "shared" / "datasets"))
    return env


def run_module(name: str, quick: bool = True, bench_dir: Path = BENCH_DIR, timeout: float | None = None,
               cwd: Path = REPO) -> ModuleResult:
    """Call ``name.table_rows(quick=quick)`` in a fresh subprocess and collect its rows."""
    result = ModuleResult(name)
    with tempfile.TemporaryDirectory(prefix="plcore-run-all-") as tmp:
        out = Path(tmp) / "rows.json"
        t0 = time.perf_counter()
        try:  # the child's output streams to our stderr (progress), or is copied there afterwards
            sys.stderr.flush()
            stream = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):  # a captured stderr (pytest's capsys) has no fd
            stream = subprocess.PIPE
        # its own session, so that a timeout ends the benchmark's own subprocesses too
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(bench_dir), name, "1" if quick else "0", str(out)],
            cwd=cwd, env=_env(), stdout=stream, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            result.status, result.error = "failed", f"timed out after {timeout:.0f} s"
        finally:
            if proc.poll() is None:  # interrupted: end the child's session
                os.killpg(proc.pid, signal.SIGKILL)
        if output:
            sys.stderr.write(output)
        result.seconds = time.perf_counter() - t0
        if result.status != "ok":
            return result
        if proc.returncode != 0:
            result.status = "failed"
            result.error = f"exited with status {proc.returncode} (traceback above, on stderr)"
            return result
        try:
            result.rows = validate_rows(json.loads(out.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            result.status, result.error = "failed", f"malformed rows: {exc}"
    return result


def collect(quick: bool = True, bench_dir: Path = BENCH_DIR, expected=EXPECTED, timeout: float | None = None,
            cwd: Path = REPO, log=None, discover: bool = True) -> list[ModuleResult]:
    """Run every planned module (see :func:`plan`), in order."""
    log = log or (lambda msg: None)
    results = []
    todo = plan(bench_dir, expected, discover)
    for i, (name, status) in enumerate(todo, 1):
        if status != "ok":
            log(f"[{i}/{len(todo)}] {name}: {status}")
            results.append(ModuleResult(name, status=status))
            continue
        log(f"[{i}/{len(todo)}] {name}: running table_rows(quick={quick}) ...")
        res = run_module(name, quick, bench_dir, timeout, cwd)
        log(f"[{i}/{len(todo)}] {name}: {res.status}{': ' + res.error if res.error else ''} "
            f"({len(res.rows)} rows, {res.seconds:.0f} s)")
        results.append(res)
    return results


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _ratio(x) -> str:
    if not _finite(x):
        return "n/a"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def render(results: list[ModuleResult]) -> str:
    """The markdown table: one row per module row, one row per module that gave none."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for res in results:
        src = f"benchmarks/{res.name}.py" if res.status != "missing module" else \
            " or ".join(f"benchmarks/{n}.py" for n in res.name.split("/"))
        if res.status != "ok":
            why = {"missing module": "module missing",
                   "missing table_rows": "module has no table_rows()"}.get(res.status, f"FAILED: {res.error}")
            lines.append("| " + " | ".join(_cell(c) for c in (
                res.name, "-", "n/a", "-", "failed" if res.status == "failed" else "missing", why, src)) + " |")
            continue
        for row in res.rows:
            met = "yes" if row["met"] else "no"
            if not _finite(row["ratio"]):
                met = "failed"
            lines.append("| " + " | ".join(_cell(c) for c in (
                row["method"], row["measure"], _ratio(row["ratio"]), row["goal"], met, row["note"],
                f"{src} ({res.seconds:.0f} s)")) + " |")
    return "\n".join(lines) + "\n"


def exit_status(results: list[ModuleResult], strict: bool = False) -> int:
    if any(res.failed for res in results):
        return 1
    if strict and any(not row["met"] for res in results for row in res.rows):
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run every benchmark's table_rows() and print one markdown table.")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="quick", action="store_true", default=True,
                      help="quick sizes (the default)")
    size.add_argument("--full", dest="quick", action="store_false", help="the benchmarks' full sizes")
    ap.add_argument("--output", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--only", nargs="+", metavar="MODULE", help="run only these modules (names without .py)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per module (default: none)")
    ap.add_argument("--strict", action="store_true", help="exit 1 also when a goal is not met")
    ap.add_argument("--bench-dir", type=Path, default=BENCH_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def log(msg):
        print(f"run_all: {msg}", file=sys.stderr, flush=True)

    bench_dir = args.bench_dir.resolve()
    t0 = time.perf_counter()
    if args.only:  # exactly the named modules, no discovery of others
        results = collect(args.quick, bench_dir, tuple((name,) for name in args.only), args.timeout, log=log,
                          discover=False)
    else:
        results = collect(args.quick, bench_dir, EXPECTED, args.timeout, log=log)
    table = render(results)
    status = exit_status(results, args.strict)
    n_failed = sum(res.failed for res in results)
    footer = (f"\n{sum(len(r.rows) for r in results)} rows from {len(results)} modules in "
              f"{time.perf_counter() - t0:.0f} s ({'quick' if args.quick else 'full'} sizes); "
              f"{n_failed} module(s) failed or missing.\n")
    sys.stdout.write(table + footer)
    if args.output:
        args.output.write_text(table + footer, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
