"""The leaderboard's run files (issue 56, item 2; design note section 2.4, 2.6, tests 2 and 5):
packed predictions, the schema's checks and atomic writes (merging trees: test_leaderboard_checks.py)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from plcore.exceptions import DataValidationError
from plcore.leaderboard import (SCHEMA, RunFile, iter_runs, pack_predictions, read_run, run_path,
                                unpack_predictions, validate_run, write_run)
from plcore.leaderboard import runfile as runfile_module
from plcore.leaderboard.runfile import ComponentRef

COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"


def _record(name="plknn", dataset="lost", fold=0, pred=(0, 2, 1, 1), status="ok", protocol_hash="sha256:aa",
            fingerprint="0123456789abcdef", test_digest=None):
    rec = {"schema": SCHEMA, "protocol": {"id": "field-smoke", "version": 1, "hash": protocol_hash},
           "track": "classification",
           "component": {"kind": "learner", "name": name, "revision": 1, "spec_hash": "sha256:0badc0ffee12",
                         "distribution": "plcore", "version": "0.9.0"},
           "dataset": {"name": dataset, "fingerprint": fingerprint},
           "fold": {"index": fold, "n_splits": 2, "test_digest": test_digest or f"sha256:f{fold}", "seed": 0},
           "status": status, "error": None if status == "ok" else "ValueError: boom",
           "selection": {"method": "none"}, "timing": {"fit_s": 0.1}}
    if status == "ok":
        rec["predictions"] = pack_predictions(np.asarray(pred), 3)
    return rec


@pytest.mark.parametrize("q, pred", [(3, [0, 2, 1, 1]), (300, [0, 299, 256, 7]), (2, [])])
def test_predictions_round_trip_one_or_two_bytes_a_row(q, pred):
    packed = pack_predictions(np.asarray(pred, dtype=int), q)
    assert packed["encoding"] == ("uint8-base64" if q <= 256 else "uint16-base64")
    assert len(__import__("base64").b64decode(packed["data"])) == len(pred) * (1 if q <= 256 else 2)
    np.testing.assert_array_equal(unpack_predictions(packed), pred)
    tampered = dict(packed, data=pack_predictions(np.asarray(pred[::-1] or [1], dtype=int), q)["data"])
    if tampered["data"] != packed["data"]:
        with pytest.raises(DataValidationError, match="sha256"):
            unpack_predictions(tampered)
    with pytest.raises(DataValidationError, match="class indices"):
        pack_predictions(np.asarray([q]), q)


def test_a_record_is_written_where_its_key_says_and_read_back(tmp_path):
    rec = _record()
    path = write_run(tmp_path, rec)
    assert path == tmp_path / "field-smoke-1" / "classification" / "learner" / "plknn@r1-0badc0ff" / "lost" / "fold-0.json"
    assert path == run_path(tmp_path, RunFile.from_dict(rec)) and read_run(path).to_dict() == rec
    assert [p for p in os.listdir(path.parent) if p.startswith(".")] == []  # no temporary file left
    assert [p for p, _ in iter_runs(tmp_path)] == [path]


@pytest.mark.parametrize("change, needle", [
    (lambda r: r.update(schema="plcore.leaderboard.run/0"), "schema 'plcore.leaderboard.run/0'"),
    (lambda r: r.pop("dataset"), "lacks the field 'dataset'"),
    (lambda r: r["fold"].pop("test_digest"), "lacks the field 'fold.test_digest'"),
    (lambda r: r.update(status="done"), "status 'done' is not one of ok, failed, timeout, na"),
    (lambda r: r.update(status="failed"), "status failed needs its error in one line"),
    (lambda r: r.update(error="x"), "status ok with an error"),
    (lambda r: r["component"].update(name="../evil"), "component.name='../evil' is not a name"),
    (lambda r: r["selection"].update(note="data from /home/me/lost.mat"), "selection.note names a path of a machine"),
])
def test_bad_records_are_refused_in_one_line(change, needle):
    rec = _record()
    change(rec)
    with pytest.raises(DataValidationError) as exc:
        validate_run(rec)
    assert "\n" not in str(exc.value) and needle in str(exc.value), str(exc.value)


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    """Killed half-way (here: the rename fails), the writer leaves neither the file nor a temporary one."""
    def boom(src, dst):
        raise OSError("killed")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_run(tmp_path, _record())
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_unreadable_file_is_one_line_naming_it(tmp_path):
    path = run_path(tmp_path, RunFile.from_dict(_record()))
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(DataValidationError) as exc:
        read_run(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_files_are_json_a_person_can_read(tmp_path):
    path = write_run(tmp_path, _record())
    text = path.read_text()
    assert text.endswith("\n") and json.loads(text)["status"] == "ok" and '\n "component": {' in text


def test_every_committed_run_file_reads_as_a_run_file_and_writes_back_the_same_bytes(tmp_path):
    """``RunFile.from_dict`` then ``to_dict`` is the record it read, key for key: a committed file
    re-written by ``write_run`` is the same bytes, but for the schema it was upgraded to (run/1 to
    run/2 changes nothing else)."""
    paths = sorted(COMMITTED.glob("*/*/*/*/*/fold-*.json"))
    assert len(paths) > 5000

    def upgraded(text):
        return text.replace('"schema": "plcore.leaderboard.run/1"', f'"schema": "{SCHEMA}"')

    for path in paths:
        text = path.read_text()
        run = RunFile.from_dict(json.loads(text), str(path))
        assert json.dumps(run.to_dict(), indent=1, sort_keys=True) + "\n" == upgraded(text), path
    for path in paths[::500]:  # and through the writer, into its place
        written = write_run(tmp_path, read_run(path))
        assert written.relative_to(tmp_path) == path.relative_to(COMMITTED)
        assert written.read_text() == upgraded(path.read_text())


def test_a_run_file_built_in_code_writes_its_set_fields_and_error():
    run = RunFile.from_dict(_record())
    component = ComponentRef("learner", "plknn", 1, "sha256:0badc0ffee12", display_name="PL-KNN")
    built = RunFile(SCHEMA, run.protocol, run.track, component, run.dataset, run.fold, "na", error="no GPU")
    record = built.to_dict()
    assert record["error"] == "no GPU" and "predictions" not in record and "timing" not in record
    assert record["component"]["version"] is None  # the component's identity is always written
    assert run.to_dict()["component"] == _record()["component"]  # a file's: as it had it
    assert built.replace(status="failed").to_dict()["status"] == "failed"
    assert RunFile.from_dict(record) == built


def test_an_older_file_is_upgraded_through_the_update_chain(tmp_path, monkeypatch):
    """A later schema upgrades the files of an older one (asv's ``update_to_N``), never refuses
    them: a committed run/1 file reads as the current schema (run/2 adds ``tuning``, which it has
    not); with a next schema whose step renames ``timing.wall_s`` to ``timing.total_s``, it reads
    as that one, and is written as such; a schema with no step, or newer than this plcore, is one
    line."""
    one = next(iter(sorted(COMMITTED.glob("field-smoke-1/*/*/*/*/fold-0.json"))))
    stored = json.loads(one.read_text())
    assert stored["schema"] == "plcore.leaderboard.run/1"
    current = runfile_module.SCHEMA_VERSION
    assert current == 2 and read_run(one).schema == "plcore.leaderboard.run/2" and read_run(one).tuning is None
    after = current + 1

    def update_next(record):
        timing = record.setdefault("timing", {})
        if "wall_s" in timing:
            timing["total_s"] = timing.pop("wall_s")
        return record

    monkeypatch.setattr(runfile_module, "SCHEMA_VERSION", after)
    with pytest.raises(DataValidationError, match=f"has no update_to_{after} to 'plcore.leaderboard.run/{after}'"):
        read_run(one)
    monkeypatch.setattr(runfile_module, "UPDATES", dict(runfile_module.UPDATES))
    runfile_module.update_to(after)(update_next)
    run = read_run(one)
    assert run.schema == f"plcore.leaderboard.run/{after}" and run.seconds("total_s") == stored["timing"]["wall_s"]
    assert run.seconds("wall_s") is None and run.predictions == stored["predictions"]
    assert json.loads(one.read_text()) == stored  # reading changes no file
    written = json.loads(write_run(tmp_path, run).read_text())
    assert written["schema"] == f"plcore.leaderboard.run/{after}" and "wall_s" not in written["timing"]
    assert {k: v for k, v in written.items() if k not in ("schema", "timing")} == {
        k: v for k, v in stored.items() if k not in ("schema", "timing")}
    newer = dict(stored, schema=f"plcore.leaderboard.run/{after + 1}")
    with pytest.raises(DataValidationError, match=f"newer than 'plcore.leaderboard.run/{after}'"):
        RunFile.from_dict(newer)
