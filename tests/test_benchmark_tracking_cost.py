"""benchmarks/tracking_cost.py --single (issue 55, item 5): its table of one command's tracking
cost, before and after, from the rounds' times (no timing here: the benchmark measures)."""

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_module):
    return benchmark_module("tracking_cost")


def test_the_single_command_table_shows_before_after_and_the_helper_floor(bench, capsys):
    times = {"before: tracked": [5.3, 5.1], "before: tracking=none": [2.1, 2.0],
             "after: tracked": [4.0, 3.2], "after: tracking=none": [2.2, 2.1],
             "tracking=none with a helper process alongside": [4.5, 4.4]}
    bench.print_single(times, 2)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == ["| before, tracking=none", "| before, tracked",
                                                  "| after, tracking=none", "| after, tracked",
                                                  "| tracking=none while a helper process, handed the fitted "
                                                  "pipeline, does every phase of a tracked run"]
    assert rows[1].endswith("| 5.10 | 5.20 | **3.10** |") and rows[3].endswith("| 3.20 | 3.60 | **1.10** |")
    assert rows[4].endswith("| 4.40 | 4.45 | 2.30 |")  # against the after checkout's untracked best


def test_the_helper_phases_read_a_handed_pipeline(bench):
    """The helper's script takes the pickled pipeline as its second argument (a run's refit)."""
    assert "sys.argv[2]" in bench._CHILD and "pickle.load" in bench._CHILD
    assert bench.SINGLE[:2] == ["-m", "plcore"] and "protocol.n_splits=3" in bench.SINGLE
