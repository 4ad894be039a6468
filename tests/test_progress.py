"""Per-iteration progress: on only inside a protocol and only on a terminal."""

import io
import sys

from plcore.progress import enabled, iterations


def test_iterations_is_the_plain_iterable_unless_enabled_on_a_terminal(monkeypatch):
    data = range(3)
    assert iterations(data, "x") is data  # outside a protocol
    with enabled(True):  # pytest's stderr is not a terminal
        assert iterations(data, "x") is data
    fake = io.StringIO()
    fake.isatty = lambda: True
    monkeypatch.setattr(sys, "stderr", fake)
    with enabled(True):
        bar = iterations(data, "CENDA iterations", 3)
        assert list(bar) == [0, 1, 2] and bar is not data
    with enabled(False):
        assert iterations(data, "x") is data
    assert iterations(data, "x") is data  # reset after the block
