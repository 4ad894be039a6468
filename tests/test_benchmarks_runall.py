"""``benchmarks/run_all.py`` assembles one markdown table from fake benchmark modules: the
columns, a row per module row, a row for a module that fails, lacks ``table_rows`` or is
missing, and the exit status. No real benchmark runs (each fake module returns at once)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_all():
    spec = importlib.util.spec_from_file_location("plcore_bench_run_all", REPO / "benchmarks" / "run_all.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up by name
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


GOOD = '''
print("progress output of the benchmark")  # must not reach the table on stdout

def table_rows(quick=True):
    return [
        {"method": "fake", "measure": "speed-up over the loop", "ratio": 12.5, "goal": ">= 10x",
         "met": True, "note": "quick" if quick else "full"},
        {"method": "fake", "measure": "a | pipe", "ratio": 0.5, "goal": ">= 1x", "met": False, "note": ""},
    ]

def main():
    raise SystemExit("main() must not run on import")

if __name__ == "__main__":
    main()
'''
BAD = '''
def table_rows(quick=True):
    raise RuntimeError("benchmark exploded")
'''
NO_ROWS = '''
def main():
    pass
'''
NAN = '''
def table_rows(quick=True):
    return [{"method": "nan", "measure": "m", "ratio": float("nan"), "goal": "<= 1 s", "met": False,
             "note": "failed: could not measure"}]
'''
MALFORMED = '''
def table_rows(quick=True):
    return [{"method": "x", "ratio": 1.0}]
'''
EXTRA = '''
def table_rows(quick=True):
    return [{"method": "extra", "measure": "m", "ratio": 2.0, "goal": ">= 1x", "met": True, "note": ""}]
'''


@pytest.fixture()
def bench_dir(tmp_path):
    for name, text in {"good": GOOD, "bad": BAD, "norows": NO_ROWS, "nanrow": NAN, "malformed": MALFORMED,
                       "extra": EXTRA, "_helper": EXTRA}.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    return tmp_path


def _table(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]


def test_plan_reads_modules_statically(run_all, bench_dir):
    expected = (("good",), ("norows",), ("absent", "good"), ("gone", "alsogone"), ("norows", "bad"),
                ("bad", "absent", "nanrow"))
    assert run_all.plan(bench_dir, expected) == [
        ("good", "ok"), ("norows", "missing table_rows"), ("good", "ok"), ("gone/alsogone", "missing module"),
        ("bad", "ok"),  # an alternative with table_rows: the group is there
        ("bad", "ok"), ("nanrow", "ok"),  # every alternative with table_rows runs
        # then the others that define table_rows, sorted; _helper is private
        ("extra", "ok"), ("malformed", "ok")]


def test_table_columns_rows_and_failures(run_all, bench_dir, monkeypatch, capsys):
    monkeypatch.setattr(run_all, "EXPECTED", (("good",), ("bad",), ("norows",), ("absent",)))
    status = run_all.main(["--quick", "--bench-dir", str(bench_dir)])
    captured = capsys.readouterr()
    rows = _table(captured.out)
    header, sep, *body = rows
    assert header == ["method", "measure", "ratio", "goal", "met", "note", "source"]
    assert all(c == "---" for c in sep)
    assert all(len(r) == len(header) for r in body), body
    by_method = {}
    for r in body:
        by_method.setdefault(r[0], []).append(r)
    # the good module's two rows, in order, with the quick flag passed through
    assert by_method["fake"][0][1:6] == ["speed-up over the loop", "12.5", ">= 10x", "yes", "quick"]
    assert by_method["fake"][1][1:5] == ["a \\| pipe", "0.5", ">= 1x", "no"]
    assert by_method["fake"][0][6].startswith("benchmarks/good.py")
    # a raising module: one failed row; its traceback went to stderr, not into the table
    assert by_method["bad"][0][4] == "failed" and "FAILED" in by_method["bad"][0][5]
    assert "benchmark exploded" in captured.err
    assert by_method["norows"][0][4] == "missing" and "no table_rows" in by_method["norows"][0][5]
    assert by_method["absent"][0][4] == "missing" and "module missing" in by_method["absent"][0][5]
    # discovered modules follow the expected ones
    assert [r[0] for r in body][-3:] == ["extra", "malformed", "nan"]
    assert by_method["nan"][0][2:5] == ["n/a", "<= 1 s", "failed"]
    assert "progress output of the benchmark" not in captured.out
    assert "progress output of the benchmark" in captured.err
    assert status == 1


def test_exit_status_zero_when_all_ran(run_all, bench_dir, capsys, tmp_path_factory):
    out_file = tmp_path_factory.mktemp("out") / "table.md"
    status = run_all.main(["--only", "good", "extra", "--bench-dir", str(bench_dir), "--output", str(out_file)])
    captured = capsys.readouterr()
    assert status == 0
    assert [r[0] for r in _table(captured.out)[2:]] == ["fake", "fake", "extra"]
    assert out_file.read_text() == captured.out
    # a goal not met fails only under --strict
    assert run_all.main(["--only", "good", "--bench-dir", str(bench_dir), "--strict"]) == 1


def test_malformed_rows_fail(run_all, bench_dir, capsys):
    assert run_all.main(["--only", "malformed", "--bench-dir", str(bench_dir)]) == 1
    body = _table(capsys.readouterr().out)[2:]
    assert body[0][4] == "failed" and "malformed rows" in body[0][5] and "measure" in body[0][5]


def test_timeout_fails_the_module(run_all, tmp_path, capsys):
    (tmp_path / "slow.py").write_text("import time\n\ndef table_rows(quick=True):\n    time.sleep(60)\n")
    assert run_all.main(["--only", "slow", "--bench-dir", str(tmp_path), "--timeout", "2"]) == 1
    body = _table(capsys.readouterr().out)[2:]
    assert body[0][4] == "failed" and "timed out" in body[0][5]
