"""One validation of a run file (issue 63, items 1, 2, 3 and 7), each case as a user or a careless
or dishonest contributor meets it, on a copy of the committed field-smoke/1 results: a bad file is
its cell's problem (``list`` and ``page`` show it and go on, ``run`` replaces it, ``merge`` refuses
it naming each bad file), the component block must be its row's, and ``verify --all`` fails on a
changed, copied or forged fold but passes the committed results as they are."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plcore.leaderboard import iter_runs, load_protocol, pack_predictions, scan, unpack_predictions
from plcore.leaderboard.protocol import checked_data, fold_scores

PROTOCOL = load_protocol("field-smoke/1")
COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"
ROW = "classification/learner/plknn@r1-1f387d31"

def _records(*args):
    """``(path, record)`` of the run files under a folder (:func:`iter_runs`), each as the dict it is written as."""
    return [(p, r.to_dict()) for p, r in iter_runs(*args)]



@pytest.fixture
def results(tmp_path):
    """A copy of the committed field-smoke/1 results, ``<tmp>/res``."""
    shutil.copytree(COMMITTED / "field-smoke-1", tmp_path / "res" / "field-smoke-1")
    return tmp_path / "res"


def _file(results, row=ROW, dataset="iris", fold=0) -> Path:
    (path,) = (results / "field-smoke-1").glob(f"{row.split('@')[0]}@*/{dataset}/fold-{fold}.json")
    return path


def _forge(rec: dict, pred) -> dict:
    """``rec`` with other predictions, their checksum and their score changed consistently."""
    (_, drawn), splits = checked_data(PROTOCOL, rec["dataset"]["name"])
    split = splits[rec["track"]][rec["fold"]["index"]]
    rec = json.loads(json.dumps(rec))
    rec["predictions"] = pack_predictions(np.asarray(pred), drawn.n_classes)
    rec["scores"] = fold_scores(PROTOCOL.track(rec["track"]), rec["track"], drawn, split, pred)
    return rec


def _truth(rec: dict) -> np.ndarray:
    (_, drawn), splits = checked_data(PROTOCOL, rec["dataset"]["name"])
    return drawn.y_true[splits[rec["track"]][rec["fold"]["index"]][1]]


def _lines(proc) -> list:
    return proc.stdout.strip().splitlines()


def test_a_truncated_file_is_an_invalid_cell_that_list_and_page_show_and_go_on(results, plcore_cli):
    bad = _file(results)
    bad.write_text(bad.read_text()[:200])  # a copy cut short
    listed = plcore_cli(["leaderboard", "list", "--protocol", "field-smoke/1", "--results", "res"], results.parent)
    (row,) = [line for line in _lines(listed) if line.startswith("plknn@r1-")]
    assert row.split()[-2:] == ["invalid", "done"]
    assert f"  {Path('res') / bad.relative_to(results)}: not a readable run file (JSONDecodeError" in listed.stdout
    page = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", "res"], results.parent)
    (line,) = [ln for ln in page.stdout.splitlines() if ln.startswith("| ") and "| PL-KNN |" in ln]
    assert "† invalid" in line  # counted like a failed cell, imputed, never a result
    section = page.stdout.split("## Invalid run files", 1)[1]
    assert f"`{bad.relative_to(results).as_posix()}`: not a readable run file" in section
    assert "/tmp/" not in page.stdout.replace(str(results), "")  # no path of this machine beyond the results


def test_a_checksum_mismatch_names_the_file(results):
    bad = _file(results)
    rec = json.loads(bad.read_text())
    rec["predictions"]["sha256"] = "0" * 64
    bad.write_text(json.dumps(rec))
    (found,) = scan(PROTOCOL, results).invalid
    assert found.path == bad and found.reason == "the predictions do not match their sha256"
    assert found.line().startswith(f"{bad}: ") and "\n" not in found.line()


def test_run_replaces_an_invalid_file_by_running_its_fold_again_and_says_so(results, plcore_cli):
    bad = _file(results)
    before = bad.read_text()
    bad.write_text(before[:100])
    moved = _file(results, dataset="wine", fold=1)
    moved.write_text(_file(results, dataset="wine", fold=0).read_text())  # fold 0's file in fold 1's place
    proc = plcore_cli(["leaderboard", "run", "--protocol", "field-smoke/1", "--results", "res", "--only",
                       "learner:plknn"], results.parent)
    assert f"{Path('res') / bad.relative_to(results)}: invalid (not a readable run file" in proc.stdout
    assert "its content places it at" in proc.stdout and _lines(proc)[-1] == "2 run file(s) written under res"
    assert json.loads(bad.read_text())["predictions"] == json.loads(before)["predictions"]  # the same fold again
    assert scan(PROTOCOL, results).invalid == []


def test_merge_checks_every_incoming_file_and_refuses_naming_each_bad_one(results, tmp_path, plcore_cli):
    theirs = tmp_path / "theirs" / "field-smoke-1"
    shutil.copytree(results / "field-smoke-1" / "classification" / "learner", theirs / "classification" / "learner")
    shutil.rmtree(results / "field-smoke-1" / "classification" / "learner")  # every learner file is new here
    wrong_score = _file(theirs.parent, dataset="wine", fold=0)
    rec = json.loads(wrong_score.read_text())
    rec["scores"]["accuracy"] = 1.0
    wrong_score.write_text(json.dumps(rec))
    other_hash = _file(theirs.parent, row="classification/learner/plsvm@r1-08b027b9")
    rec = json.loads(other_hash.read_text())
    rec["protocol"]["hash"] = load_protocol("field-quick/1").hash
    other_hash.write_text(json.dumps(rec))
    proc = plcore_cli(["leaderboard", "merge", str(theirs.parent), "--results", "res"], results.parent, check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "merge refused, nothing copied: 2 bad run file(s)" in err[0]
    assert f"{wrong_score}: the stored accuracy 1.0 disagrees with its predictions" in err[0]
    assert f"{other_hash}: made under protocol hash {load_protocol('field-quick/1').hash}" in err[0]
    assert not (results / "field-smoke-1" / "classification" / "learner").exists()


def test_a_consistently_changed_file_conflicts_with_the_one_already_there(results, tmp_path):
    from plcore.exceptions import DataValidationError
    from plcore.leaderboard import merge_trees

    theirs = tmp_path / "theirs"
    shutil.copytree(results, theirs)
    path = _file(theirs)
    rec = json.loads(path.read_text())
    path.write_text(json.dumps(_forge(rec, _truth(rec))))  # every row right: valid, and not what ran here
    with pytest.raises(DataValidationError) as exc:
        merge_trees([theirs], results)
    assert "other predictions" in str(exc.value) and str(path) in str(exc.value) and str(_file(results)) in str(
        exc.value)
    again = tmp_path / "again"
    shutil.copytree(COMMITTED / "field-smoke-1", again / "field-smoke-1")
    report = merge_trees([again], results)  # the same files again: every one a duplicate
    assert report.copied == [] and len(report.duplicates) == len(_records(results))


def test_a_component_block_that_is_not_its_rows_is_refused(results):
    from plcore.registry import get_registry

    renamed = _file(results)
    rec = json.loads(renamed.read_text())
    rec["component"]["display_name"] = "PL-SVM"
    renamed.write_text(json.dumps(rec))
    foreign = _file(results, dataset="wine", fold=1)
    rec = json.loads(foreign.read_text())
    rec["selection"]["chosen"] = {"learner.C": 10.0}  # plknn has no C
    foreign.write_text(json.dumps(rec))
    found = {bad.path: bad.reason for bad in scan(PROTOCOL, results, registry=get_registry()).invalid}
    assert found[renamed] == "its component.display_name 'PL-SVM' is not the installed row's 'PL-KNN'"
    assert found[foreign] == "its chosen hyperparameter 'learner.C' is not a parameter of learner plknn"
    without = {bad.path: bad.reason for bad in scan(PROTOCOL, results).invalid}  # no plugin: the row's other files
    assert without[renamed] == "its component.display_name 'PL-SVM' is not the row's other files's 'PL-KNN'"


def test_two_components_with_one_display_name_are_told_apart_on_the_page(results):
    from plcore.leaderboard.page import collect

    for path in (results / "field-smoke-1").glob("classification/learner/aknn@*/*/fold-*.json"):
        rec = json.loads(path.read_text())
        rec["component"]["display_name"] = "PL-KNN"
        path.write_text(json.dumps(rec))
    labels = [r.label for r in collect(PROTOCOL, results).rows]
    assert "PL-KNN (learner:plknn)" in labels and "PL-KNN (learner:aknn)" in labels and "PL-KNN" not in labels


def _verify_all(plcore_cli, results, *only):
    return plcore_cli(["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(results), "--all",
                       *(["--only", *only] if only else [])], results.parent, check=False)


def test_verify_all_fails_on_a_forged_fold(results, plcore_cli):
    path = _file(results)
    rec = json.loads(path.read_text())
    truth = _truth(rec)
    assert not np.array_equal(unpack_predictions(rec["predictions"]), truth)
    path.write_text(json.dumps(_forge(rec, truth)))  # predictions, checksum and score changed together
    assert scan(PROTOCOL, results).invalid == []  # nothing in the file gives it away
    proc = _verify_all(plcore_cli, results, "learner:plknn")
    assert proc.returncode == 1 and "learner:plknn on iris fold 0: DIFFERS" in proc.stdout


def test_a_forged_fold_that_records_this_machines_arithmetic_fails_even_with_allow_other_cpu(results, plcore_cli):
    import subprocess
    import sys

    path = _file(results)
    rec = _forge(json.loads(path.read_text()), _truth(json.loads(path.read_text())))
    probe = ("import json, scipy.linalg, sklearn.neighbors; from plcore.registry import get_registry; get_registry(); "
             "from plcore.leaderboard.runner import numerics; print(json.dumps(numerics()))")
    rec["numerics"] = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                                check=True).stdout)  # what a fresh process here records
    path.write_text(json.dumps(rec))
    proc = plcore_cli(["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(results), "--all",
                       "--only", "learner:plknn", "--allow-other-cpu"], results.parent, check=False)
    assert proc.returncode == 1 and "learner:plknn on iris fold 0: DIFFERS, " in proc.stdout, proc.stdout
    assert "on this machine's arithmetic" not in proc.stdout


def test_a_fold_that_differs_where_its_file_records_no_cpu_is_reported_apart(results, plcore_cli):
    path = _file(results)
    rec = json.loads(path.read_text())
    path.write_text(json.dumps(_forge(rec, _truth(rec))))
    args = ["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(results), "--all", "--only",
            "learner:plknn"]
    strict = plcore_cli(args, results.parent, check=False)
    line = next(line for line in _lines(strict) if line.startswith("learner:plknn on iris fold 0:"))
    assert strict.returncode == 1 and "DIFFERS on this machine's arithmetic" in line and "CPU not recorded" in line
    assert line.endswith(": a failure without --allow-other-cpu")
    assert "1 differ on other arithmetic" in _lines(strict)[-1]
    allowed = plcore_cli([*args, "--allow-other-cpu"], results.parent, check=False)
    assert allowed.returncode == 0, allowed.stdout[-2000:]


def test_other_arithmetic_names_what_differs_and_nothing_where_it_is_the_same():
    from plcore.leaderboard.verify import other_arithmetic

    here = {"libraries": [{"api": "openblas", "architecture": "SkylakeX"}], "cpu": "Some CPU",
            "torch": {"capability": "AVX512"}}
    assert other_arithmetic(here, here) == ""
    assert other_arithmetic({**here, "cpu": None}, here) == "CPU not recorded stored, Some CPU here"
    stored = {"libraries": [{"api": "openblas", "architecture": "Haswell"}], "cpu": "Some CPU",
              "torch": {"capability": "AVX2"}}
    assert other_arithmetic(stored, here) == ("OpenBLAS Haswell stored, SkylakeX here; "
                                              "PyTorch's CPU capability AVX2 stored, AVX512 here")
    assert other_arithmetic("not a block", here).startswith("OpenBLAS none stored")


def test_verify_all_fails_on_a_fold_copied_under_another_component(results, plcore_cli):
    source, target = _file(results), _file(results, row="classification/learner/plsvm@r1-08b027b9")
    theirs, mine = json.loads(source.read_text()), json.loads(target.read_text())
    alike = np.mean(unpack_predictions(theirs["predictions"]) == unpack_predictions(mine["predictions"]))
    assert alike < 0.9  # PL-KNN's fold is not PL-SVM's
    mine.update(predictions=theirs["predictions"], scores=theirs["scores"])
    target.write_text(json.dumps(mine))
    proc = _verify_all(plcore_cli, results, "learner:plsvm")
    assert proc.returncode == 1 and "learner:plsvm on iris fold 0: DIFFERS" in proc.stdout


def test_verify_all_fails_on_a_fold_presented_as_a_new_revision(results, plcore_cli):
    for path in list((results / "field-smoke-1").glob("classification/learner/plknn@*/*/fold-*.json")):
        rec = json.loads(path.read_text())
        rec["component"]["revision"] = 2
        new = results / "field-smoke-1" / "classification" / "learner" / path.parents[1].name.replace("@r1-", "@r2-")
        (new / path.parent.name).mkdir(parents=True, exist_ok=True)
        (new / path.parent.name / path.name).write_text(json.dumps(rec))
    proc = _verify_all(plcore_cli, results, "learner:plknn")
    assert proc.returncode == 1 and "learner:plknn: not re-run (installed as plknn@r1-" in proc.stdout
    assert "the files are plknn@r2-" in proc.stdout


def test_verify_all_passes_the_committed_smoke_results(plcore_cli, tmp_path):
    proc = plcore_cli(["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(COMMITTED), "--all"],
                      tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _lines(proc)[-1].endswith("0 differ, 0 row(s) not re-run, 0 invalid file(s)")


def test_odd_files_stay_their_own_problem(results):
    """A wrongly typed field, a NaN score, a score holding a line break, a copy under a name that is
    no fold's and junk in a folder of its own: each is one line naming its file, a copy in no
    cell's place is stray (it hides no valid fold), and junk never makes a row of its own."""
    from plcore.leaderboard.page import collect

    typed = _file(results)
    rec = json.loads(typed.read_text())
    rec["component"]["spec_hash"] = 123
    typed.write_text(json.dumps(rec))
    nan = _file(results, fold=1)
    rec = json.loads(nan.read_text())
    rec["scores"]["accuracy"] = float("nan")
    nan.write_text(json.dumps(rec))
    broken = _file(results, dataset="wine", fold=0)
    rec = json.loads(broken.read_text())
    rec["dataset"]["fingerprint"] = "x\n## injected"
    broken.write_text(json.dumps(rec))
    stray = _file(results, dataset="wine", fold=1).with_name("fold-01.json")
    stray.write_text(_file(results, dataset="wine", fold=1).read_text())
    junk = results / "field-smoke-1" / "classification" / "learner" / "plknn@r2-00000000" / "iris" / "fold-0.json"
    junk.parent.mkdir(parents=True)
    junk.write_text("not json")
    found = {bad.path: bad for bad in scan(PROTOCOL, results).invalid}
    assert found[typed].reason == "component.spec_hash=123 is not a string"
    assert found[nan].reason.startswith("the stored accuracy nan disagrees with its predictions")
    assert "\n" not in found[broken].reason and "## injected" in found[broken].reason
    assert found[stray].cell is None and found[junk].cell is not None
    board = collect(PROTOCOL, results)
    (row,) = [r for r in board.rows if r.name == "plknn"]
    assert row.key == "plknn@r1-1f387d31" and board.superseded == []
    assert board.state(row, "iris") == "invalid" and board.state(row, "wine") == "invalid"  # wine: the fingerprint
    assert row.folds["wine"][1].status == "ok"  # the stray copy hides nothing


def test_a_path_of_a_machine_is_refused_without_repeating_it(results):
    path = _file(results, row="classification/learner/plsvm@r1-08b027b9")
    rec = json.loads(path.read_text())
    rec["selection"]["note"] = "read /home/alice/secret/data.csv"
    path.write_text(json.dumps(rec))
    (bad,) = scan(PROTOCOL, results).invalid
    assert bad.reason == "selection.note names a path of a machine" and "alice" not in bad.line()


# Merge never replaces (issue 71, item 1): a file whose spec hash shares only its first 8 hex digits
# with the committed row's is refused, two merges into one folder serialise, a SRC one level off
# says which folder to pass.

def _other_spec(rec: dict) -> dict:
    """``rec`` with a spec hash whose first 8 hex digits (its folder's name) are the same, and no others."""
    rec = json.loads(json.dumps(rec))
    head, tail = rec["component"]["spec_hash"][:15], rec["component"]["spec_hash"][15:]
    rec["component"]["spec_hash"] = head + "".join("0" if c != "0" else "1" for c in tail)
    return rec


def _one_file_tree(tmp_path, name, results, rec) -> tuple[Path, Path]:
    """A tree ``<tmp>/<name>`` holding only ``rec``, in its place (plknn's first fold on iris)."""
    path = tmp_path / name / _file(COMMITTED).relative_to(COMMITTED)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rec))
    return tmp_path / name, path


def _merge(plcore_cli, cwd, *sources, results="res"):
    return plcore_cli(["leaderboard", "merge", *map(str, sources), "--results", results], cwd, check=False)


def _one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_merge_refuses_a_file_whose_spec_hash_matches_only_in_its_folders_8_digits(results, tmp_path, plcore_cli):
    committed = _file(results)
    before = committed.read_text()
    rec = json.loads(before)
    theirs, forged = _one_file_tree(tmp_path, "theirs", results, _forge(_other_spec(rec), _truth(rec)))
    proc = _merge(plcore_cli, results.parent, theirs)
    line = _one_line(proc)
    assert proc.returncode == 2 and "merge refused, nothing copied: 1 bad run file(s)" in line
    theirs_hash, ours = _other_spec(rec)["component"]["spec_hash"], rec["component"]["spec_hash"]
    assert f"{forged}: its component.spec_hash '{theirs_hash}' is not the installed row's '{ours}'" in line
    assert f"(not merged over {Path('res') / committed.relative_to(results)})" in line
    assert committed.read_text() == before


def test_a_prefix_colliding_file_of_a_row_not_installed_conflicts_naming_both(results, tmp_path):
    from plcore.exceptions import DataValidationError
    from plcore.leaderboard import merge_trees

    committed = _file(results)
    before = committed.read_text()
    theirs, forged = _one_file_tree(tmp_path, "theirs", results, _other_spec(json.loads(before)))
    with pytest.raises(DataValidationError) as exc:  # no registry: the row is installed nowhere
        merge_trees([theirs], results)
    text = str(exc.value)
    assert "\n" not in text and f"differs between {committed} and {forged} (component.spec_hash" in text
    assert committed.read_text() == before


def test_scan_refuses_a_file_whose_full_spec_hash_is_not_its_rows(results):
    path = _file(results)
    rec = json.loads(path.read_text())
    path.write_text(json.dumps(_other_spec(rec)))
    (bad,) = scan(PROTOCOL, results).invalid  # the row's other files, without a registry
    theirs_hash, ours = _other_spec(rec)["component"]["spec_hash"], rec["component"]["spec_hash"]
    assert bad.path == path
    assert bad.reason == f"its component.spec_hash {theirs_hash!r} is not the row's other files's {ours!r}"


def test_two_merges_started_together_serialise_and_the_second_is_refused(results, tmp_path):
    committed = _file(results)
    rec = json.loads(committed.read_text())
    committed.unlink()  # a fold new here, brought by two machines with other predictions
    a, path_a = _one_file_tree(tmp_path, "a", results, rec)
    b, path_b = _one_file_tree(tmp_path, "b", results, _forge(rec, _truth(rec)))
    procs = [subprocess.Popen([sys.executable, "-m", "plcore", "leaderboard", "merge", str(src), "--results", "res"],
                              cwd=results.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for src in (a, b)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], outs
    won, lost = (0, 1) if codes[0] == 0 else (1, 0)
    err = outs[lost][1].strip().splitlines()
    assert len(err) == 1 and "differs between" in err[0] and "(other predictions)" in err[0]
    assert f"between {Path('res') / committed.relative_to(results)} and {(path_a, path_b)[lost]} " in err[0]
    assert committed.read_text() == (path_a, path_b)[won].read_text()
    assert not (results / ".merge.lock").exists()


def test_merge_of_a_folder_one_level_too_deep_says_which_folder_to_pass(results, plcore_cli):
    proc = _merge(plcore_cli, results.parent, Path("res") / "field-smoke-1" / "classification", results="merged")
    line = _one_line(proc)
    assert proc.returncode == 2 and line.startswith(
        f"error: {Path('res/field-smoke-1/classification')}: no run file at SRC/<protocol id>-<version>/<track>/"
        "<kind>/<name>@r<rev>-<hash>/<data set>/fold-<k>.json; it is a folder inside the results tree res")
    assert line.endswith(": pass res instead") and not (results.parent / "merged").exists()
    (results.parent / "deeper").mkdir()
    shutil.move(results, results.parent / "deeper" / "res")
    proc = _merge(plcore_cli, results.parent, "deeper", results="merged")
    assert proc.returncode == 2 and _one_line(proc).endswith(
        f"run files lie deeper, under {Path('deeper/res/field-smoke-1')}: pass {Path('deeper/res')} instead")


# No link leads out of a results tree (issue 71, item 4): a symbolic link in one is refused in one
# line before any work, and a run file is never written through one.


def _link_out(results, tmp_path) -> tuple[Path, Path]:
    """plknn's cell folder moved out of ``results`` and linked back in; (link, the folder outside)."""
    cell = _file(results).parent.parent
    outside = tmp_path / "outside"
    shutil.move(cell, outside)
    cell.symlink_to(outside, target_is_directory=True)
    return cell, outside


@pytest.mark.parametrize("command", ["run", "list", "page", "verify"])
def test_a_results_tree_with_a_link_leading_out_is_refused_before_any_work(results, tmp_path, plcore_cli, command):
    link, outside = _link_out(results, tmp_path)
    shutil.rmtree(outside / "iris")  # `run` would write this cell's folds out of the tree
    before = sorted(outside.rglob("*"))
    args = ["leaderboard", command, "--protocol", "field-smoke/1", "--results", "res"]
    proc = plcore_cli(args + (["--only", "learner:plknn"] if command == "run" else []), results.parent, check=False)
    assert proc.returncode == 2 and _one_line(proc) == (
        f"error: --results res: {Path('res') / link.relative_to(results)} is a symbolic link leading out of res; "
        "a results tree holds no links (put the folder or file itself there)")
    assert sorted(outside.rglob("*")) == before


def test_merge_refuses_a_link_in_its_source_or_its_target(results, tmp_path, plcore_cli):
    theirs = tmp_path / "theirs"
    shutil.copytree(results, theirs)
    link, _ = _link_out(theirs, tmp_path)
    proc = _merge(plcore_cli, tmp_path, theirs, results="merged")
    assert proc.returncode == 2 and _one_line(proc).startswith(f"error: merge {theirs}: {link} is a symbolic link "
                                                               f"leading out of {theirs}")
    assert not (tmp_path / "merged").exists()
    inside = _file(results, dataset="wine")
    inside.unlink()
    inside.symlink_to(_file(results))  # a link inside the tree is refused too
    proc = _merge(plcore_cli, tmp_path, COMMITTED)
    assert proc.returncode == 2 and _one_line(proc).startswith(
        f"error: --results res: {Path('res') / inside.relative_to(results)} is a symbolic link leading inside it")


def test_a_run_file_is_never_written_through_a_link_out_of_the_tree(results, tmp_path):
    from plcore.exceptions import DataValidationError
    from plcore.leaderboard import write_run

    link, outside = _link_out(results, tmp_path)
    rec = json.loads((outside / "iris" / "fold-0.json").read_text())
    shutil.rmtree(outside / "iris")
    with pytest.raises(DataValidationError, match="through a symbolic link; nothing written"):
        write_run(results, rec)
    assert [p.name for p in outside.iterdir()] == ["wine"]


def test_a_fold_a_run_holds_is_left_out_of_a_merge_and_merged_the_next_time(results, tmp_path):
    from plcore.leaderboard import merge_trees
    from plcore.leaderboard.runfile import claimed

    committed = _file(results)
    rec = json.loads(committed.read_text())
    committed.unlink()  # a fold a `leaderboard run` into res computes while a merge brings it too
    source, incoming = _one_file_tree(tmp_path, "a", results, rec)
    with claimed(committed) as mine:
        assert mine
        report = merge_trees([source], results)
        assert report.left == [incoming] and not report.copied and not committed.exists()
    report = merge_trees([source], results)  # merged again once the run is gone
    assert report.copied == [committed] and not report.left
    assert committed.read_text() == incoming.read_text()
