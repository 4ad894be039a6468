"""benchmarks/plench_parity.py's speed columns (issue 65): the steps each side takes, the summary
the issue's goal is read from, and the ``--before`` worker that runs an earlier checkout's
plcore-deep (no PLENCH checkout and no timing here: the benchmark measures)."""

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_module):
    return benchmark_module("plench_parity")


def test_plcore_trains_the_epochs_nearest_plenchs_steps_with_every_batch(bench):
    # lost's 909 fitting rows in batches of 128: PLENCH's 1,000 full batches are 143 of plcore's
    # epochs (7 full batches an epoch), and plcore's loop also takes each epoch's 13-row batch
    assert bench.plcore_epochs(909, {"batch_size": 128}, 1000) == 143
    assert bench.plcore_steps(909, {"batch_size": 128}, 1000) == 143 * 8
    assert bench.plcore_steps(1024, {"batch_size": 128}, 1000) == 1000


def _row(name, ours, theirs, old, data="lost", steps_ours=2000):
    return {"data": data, "algorithm": name, "theirs": [0.5] if theirs else [], "ours": [0.5], "old": [0.5],
            "s_theirs": theirs or 0.0, "s_ours": ours, "s_old": old, "steps_theirs": 1000, "steps_ours": steps_ours}


def test_the_summary_gives_the_goal_figures_per_data_set(bench):
    table = [_row("A", 1.0, 4.0, 2.0), _row("B", 3.0, 4.0, 3.0), _row("C", 5.0, 4.0, 5.0),
             _row("CroSel", 2.0, None, 4.0)]
    lines = bench._summary(table, with_before=True)
    # plcore/PLENCH 0.25, 0.75, 1.25 (CroSel has no PLENCH side); per step half of that (2,000 steps);
    # plcore/before 0.5, 1, 1, 0.5
    assert lines[0] == ("lost: plcore/PLENCH over 3 algorithms: median 0.75x (per step 0.38x), 1 at or below "
                        "0.5x, worst 1.25x, total 0.75x")
    assert lines[1] == ("lost: plcore/before over 4 learners: median 0.75x, best 0.50x, total 0.79x; "
                        "test accuracy the same for 4 of 4")
    markdown = bench._markdown(table, True, None).splitlines()
    assert markdown[0].startswith("| data | algorithm |") and markdown[0].endswith("| plcore/PLENCH | per step |")
    assert markdown[-1].endswith("| CroSel | – | 50.0 | – | – | 2.0 | 4.0 | 0.50x | yes | – | – |")


def test_the_before_worker_imports_the_checkouts_plcore_deep(bench, tmp_path):
    """A fresh interpreter that starts as the worker does imports the checkout's plcore-deep, not the
    installed one."""
    package = tmp_path / "plugins" / "plcore-deep" / "plcore_deep"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("EARLIER = True\n")
    script = (f"import importlib.util, sys\n"
              f"spec = importlib.util.spec_from_file_location('pp', {str(Path(bench.__file__))!r})\n"
              f"pp = importlib.util.module_from_spec(spec); spec.loader.exec_module(pp)\n"
              f"pp._use_checkout({str(tmp_path)!r})\n"
              f"import plcore_deep\n"
              f"print(pp._where_plcore_deep(), plcore_deep.EARLIER)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == [str(package.resolve()), "True"]
