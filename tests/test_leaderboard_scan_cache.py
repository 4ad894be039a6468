"""The scan cache (issue 72, item 6: ``list`` and ``page`` fast as the files grow): a second scan of
unchanged files checks nothing again and loads no data set, with the same verdicts and scores; a
file edited to other bytes (its size and time kept), another installed row or an unwritable cache
is checked again, never trusted."""

import os
import shutil
from pathlib import Path

import pytest

from plcore.leaderboard import checks, load_protocol
from plcore.registry import get_registry

COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"
PLKNN = "field-smoke-1/classification/learner/plknn@r1-1f387d31/iris/fold-0.json"


@pytest.fixture
def cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PLCORE_SCAN_CACHE", "1")
    monkeypatch.setenv("PLCORE_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(COMMITTED / "field-smoke-1", tmp_path / "res" / "field-smoke-1")
    return tmp_path / "res"


def _scan(results):
    return checks.scan(load_protocol("field-smoke/1"), results, registry=get_registry())


def _no_data(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a data set was loaded")
    monkeypatch.setattr(checks, "checked_data", refuse)


def test_a_second_scan_of_unchanged_files_loads_no_data_and_finds_the_same(cached, monkeypatch):
    first = _scan(cached)
    assert first.valid and not first.invalid and list((cached.parent / "cache").rglob("*.json"))
    _no_data(monkeypatch)
    again = _scan(cached)
    assert [p for p, _ in again.valid] == [p for p, _ in first.valid]
    assert again.scores == first.scores and [r.to_dict() for _, r in again.valid] == [r.to_dict() for _, r in
                                                                                      first.valid]


def test_a_file_edited_to_other_bytes_is_checked_again(cached, monkeypatch):
    _scan(cached)
    path = cached / PLKNN
    text, stat = path.read_text(), path.stat()
    forged = text.replace('"accuracy": 0.', '"accuracy": 1.', 1)
    assert forged != text and len(forged) == len(text)
    path.write_text(forged)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same size and time: only the bytes differ
    found = _scan(cached)
    assert [b.path for b in found.invalid] == [path] and "disagrees with its predictions" in found.invalid[0].reason


def test_another_installed_row_or_no_registry_checks_everything_again(cached, monkeypatch):
    _scan(cached)
    _no_data(monkeypatch)
    with pytest.raises(AssertionError, match="a data set was loaded"):
        checks.scan(load_protocol("field-smoke/1"), cached)        # no registry: no cache
    monkeypatch.setattr(checks, "_context", lambda protocol, installed: "another context")
    with pytest.raises(AssertionError, match="a data set was loaded"):
        _scan(cached)


def test_an_unwritable_cache_never_fails_a_scan(cached, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("PLCORE_CACHE_DIR", str(blocker / "cache"))
    found = _scan(cached)
    assert found.valid and not found.invalid
