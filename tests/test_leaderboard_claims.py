"""Every claim in a run file re-checked (issue 71, item 2), each case as the user's command line on a
copy of the committed field-smoke/1 results: forged failures and timeouts, a selection other than the
re-run's, chosen values no fit would take, implausible timings and malformed ``numerics`` are caught
by ``list`` / ``verify`` in one line naming the file; a fold whose re-run raises is that fold's line
and the next is checked; a negative ``--seed`` is refused before any work."""

import json
import shutil
from pathlib import Path

import pytest

COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"
BEST = "classification/learner/plknn_cenda@r1-db6557c2"  # rank 1 of the classic rows on the committed page
PLKNN = "classification/learner/plknn@r1-1f387d31"


@pytest.fixture
def results(tmp_path):
    """A copy of the committed field-smoke/1 results, ``<tmp>/res``."""
    shutil.copytree(COMMITTED / "field-smoke-1", tmp_path / "res" / "field-smoke-1")
    return tmp_path / "res"


def _file(results, row=PLKNN, dataset="iris", fold=0) -> Path:
    return results / "field-smoke-1" / row / dataset / f"fold-{fold}.json"


def _edit(path: Path, change) -> Path:
    rec = json.loads(path.read_text())
    change(rec)
    path.write_text(json.dumps(rec))
    return path


def _cli(plcore_cli, results, command, *args):
    return plcore_cli(["leaderboard", command, "--protocol", "field-smoke/1", "--results", str(results), *args],
                      results.parent, check=False)


def _line(proc, start: str) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith(start))


def _fail(status: str):
    def change(rec):
        for key in ("predictions", "scores", "selection"):
            rec.pop(key, None)
        rec.update(status=status, error="MemoryError: out of memory" if status == "failed" else "ran out of time")
        rec["timing"] = {"wall_s": 3600.0}
    return change


@pytest.mark.parametrize("status", ["failed", "timeout"])
def test_verify_all_catches_forged_failures_of_the_best_row(results, plcore_cli, status):
    for path in sorted((results / "field-smoke-1" / BEST).glob("*/fold-*.json")):
        _edit(path, _fail(status))
    proc = _cli(plcore_cli, results, "verify", "--all", "--only", "learner:plknn_cenda")
    line = _line(proc, "learner:plknn_cenda on iris fold 0:")
    claimed = "failed (MemoryError: out of memory)" if status == "failed" else "timeout (ran out of time)"
    assert proc.returncode == 1 and line == f"learner:plknn_cenda on iris fold 0: DIFFERS, claimed {claimed}, ok here"
    assert "4 differ" in proc.stdout.splitlines()[-1]
    default = _cli(plcore_cli, results, "verify", "--only", "learner:plknn_cenda")  # a claimed failure per data set
    assert default.returncode == 1 and "0 fold(s) the same, 0 numerically equivalent, 2 differ" in default.stdout


def test_a_failure_that_fails_again_the_same_way_is_the_same_and_a_fold_that_raises_is_its_line(results,
                                                                                                  monkeypatch):
    from plcore.leaderboard import load_protocol, verify as verify_module
    from plcore.leaderboard.verify import verify
    from plcore.registry import get_registry

    for path in sorted((results / "field-smoke-1" / BEST).glob("*/fold-*.json")):
        _edit(path, _fail("failed"))
    real = verify_module.fold_record

    def again(protocol, entry, dataset, fold, **kw):  # the installed row fails here too: on iris, the same way
        if dataset == "wine" and fold == 0:
            raise RuntimeError("boom")
        rec = real(protocol, entry, dataset, fold, **kw)
        error = "MemoryError: out of memory" if dataset == "iris" and fold == 0 else "MemoryError: other"
        return rec.replace(status="failed", error=error, predictions=None, scores=None, selection=None)

    monkeypatch.setattr(verify_module, "fold_record", again)
    lines = []
    found = verify(load_protocol("field-smoke/1"), results, registry=get_registry(), only=["learner:plknn_cenda"],
                   all_folds=True, echo=lines.append)
    said = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if " fold " in line}
    assert said["learner:plknn_cenda on iris fold 0"] == "the same (failed: MemoryError: out of memory)"
    assert said["learner:plknn_cenda on iris fold 1"] == ("DIFFERS, claimed failed (MemoryError: out of memory), "
                                                          "failed here: MemoryError: other")
    assert said["learner:plknn_cenda on wine fold 0"] == (
        f"DIFFERS, the re-run of field-smoke-1/{BEST}/wine/fold-0.json raised RuntimeError: boom")
    assert "learner:plknn_cenda on wine fold 1" in said  # the next fold is still checked
    assert not found.ok and len(found.same) == 1 and len(found.differ) == 3


def test_verify_names_a_chosen_value_other_than_the_re_runs(results, plcore_cli):
    path = _file(results)
    rec = json.loads(path.read_text())
    stored = rec["selection"]["chosen"]["learner.k"]
    other = next(k for k in (3, 5, 10, 20) if k != stored)
    _edit(path, lambda r: r["selection"]["chosen"].update({"learner.k": other}))
    assert _cli(plcore_cli, results, "list").returncode == 0  # a value of the row's space: nothing else tells
    proc = _cli(plcore_cli, results, "verify", "--all", "--only", "learner:plknn", "--allow-other-cpu")
    line = _line(proc, "learner:plknn on iris fold 0:")
    assert proc.returncode == 1 and line.startswith("learner:plknn on iris fold 0: DIFFERS, 100.0% of the rows alike")
    assert f"selection.chosen.learner.k {other} stored, {stored} here" in line
    _edit(path, lambda r: r["selection"].update(method="grid", chosen=rec["selection"]["chosen"]))
    proc = _cli(plcore_cli, results, "verify", "--all", "--only", "learner:plknn")
    line = _line(proc, "learner:plknn on iris fold 0:")
    assert proc.returncode == 1 and "selection.method 'grid' stored, 'random' here" in line


@pytest.mark.parametrize("key, value, reason", [
    ("learner.k", -5, "its selection.chosen.learner.k=-5: The 'k' parameter of PlKnnLearner must be an int in the "
                      "range [1, inf). Got -5 instead."),
    ("learner.weights", "banana-mode", "its selection.chosen.learner.weights='banana-mode': The 'weights' parameter "
                                       "of PlKnnLearner must be a str among"),
    ("learner.k", 7, "its selection.chosen.learner.k=7 is not in the row's search space (3, 5, 10, 20)"),
    ("learner.weights", "uniform", "its selection.chosen.learner.weights='uniform': the row searches only learner.k"),
])
def test_list_and_verify_refuse_a_chosen_value_no_fit_would_take(results, plcore_cli, key, value, reason):
    path = _edit(_file(results), lambda r: r["selection"]["chosen"].update({key: value}))
    shown = f"  {Path('res') / path.relative_to(results)}: "
    listed = plcore_cli(["leaderboard", "list", "--protocol", "field-smoke/1", "--results", "res"], results.parent)
    assert listed.returncode == 0 and _line(listed, shown).startswith(shown + reason)
    proc = _cli(plcore_cli, results, "verify", "--only", "learner:plknn")
    inside = path.relative_to(results).as_posix()  # verify names a file inside --results
    assert proc.returncode == 1 and _line(proc, f"  {inside}: ").startswith(f"  {inside}: {reason}")


@pytest.mark.parametrize("change, reason", [
    (lambda t: t.update(fit_s=1e-9, predict_s=1e-9, wall_s=1e-9), "timing.fit_s=1e-09 is below 5e-05 s"),
    (lambda t: t.update(wall_s=t["fit_s"] / 2), "timing.wall_s="),
    (lambda t: t.clear(), "timing.fit_s is missing from a fold that ran ok"),
])
def test_implausible_timings_are_refused(results, plcore_cli, change, reason):
    path = _edit(_file(results), lambda r: change(r["timing"]))
    listed = _cli(plcore_cli, results, "list")
    line = _line(listed, f"  {path}: ")
    assert line.startswith(f"  {path}: {reason}")
    if "wall_s=" in reason:
        assert line.endswith("is less than fit_s + predict_s " + line.rsplit("predict_s ", 1)[1])


def test_a_fold_forged_as_not_applicable_is_invalid(results, plcore_cli):
    def na(rec):
        for key in ("predictions", "scores", "selection"):
            rec.pop(key, None)
        rec.update(status="na", error="declared not applicable")
    paths = [_edit(path, na) for path in sorted((results / "field-smoke-1" / BEST).glob("iris/fold-*.json"))]
    listed = _cli(plcore_cli, results, "list")
    assert _line(listed, f"  {paths[0]}: ").startswith(
        f"  {paths[0]}: its status 'na' on iris: the installed row declares that data set applicable")
    proc = _cli(plcore_cli, results, "verify", "--only", "learner:plknn_cenda")
    assert proc.returncode == 1 and f"{len(paths)} invalid file(s)" in proc.stdout.splitlines()[-1]


@pytest.mark.parametrize("numerics, reason", [
    ({"libraries": [{"api": "openblas", "version": "0.3", "threads": "abc"}]},
     "numerics.libraries[0].threads='abc' is not a positive integer"),
    ({"libraries": [], "torch": {"version": "2.5", "threads": -1}},
     "numerics.torch.threads=-1 is not a positive integer"),
    ("four threads", "numerics is not a mapping"),
    ({"libraries": {"api": "openblas"}}, "numerics.libraries is not a list"),
    ({"libraries": [{"api": "openblas", "version": 3}]}, "numerics.libraries[0].version=3 is not a string"),
])
def test_a_malformed_numerics_block_is_invalid_and_later_rows_are_still_verified(results, plcore_cli, numerics,
                                                                                  reason):
    path = _edit(_file(results), lambda r: r.update(numerics=numerics))
    listed = _cli(plcore_cli, results, "list")
    assert listed.returncode == 0 and _line(listed, f"  {path}: ") == f"  {path}: {reason}"
    proc = _cli(plcore_cli, results, "verify", "--all", "--only", "learner:plknn", "learner:plsvm")
    inside = path.relative_to(results).as_posix()
    assert proc.returncode == 1 and _line(proc, f"  {inside}: ") == f"  {inside}: {reason}"
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "learner:plsvm on wine fold 1: " in proc.stdout  # the row after it is checked to the end


def test_a_negative_seed_is_refused_before_the_scan(results, plcore_cli):
    proc = _cli(plcore_cli, results, "verify", "--sample", "1", "--seed", "-1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "error: --seed must be a number of 0 or more, got -1"
