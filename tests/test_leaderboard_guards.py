"""Nothing overwritten by mistake (issue 63, item 4), as a user types it: a ``--results`` that is a
file, or a folder that does not exist where the command reads it, is one line and exit 2 before any
work; ``page --out`` never replaces an existing page with a page of no run file."""

import pytest


@pytest.mark.parametrize("command", ["page", "verify"])
def test_a_missing_results_folder_is_one_line_before_any_work(plcore_cli, tmp_path, command):
    res = plcore_cli(["leaderboard", command, "--protocol", "field-smoke/1", "--results", "leaderbord"], tmp_path,
                     check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "--results leaderbord: no such folder" in lines[0]
    assert not (tmp_path / "leaderbord").exists()


@pytest.mark.parametrize("command", ["run", "list", "page", "verify"])
def test_a_results_file_is_one_line_before_any_work(plcore_cli, tmp_path, command):
    (tmp_path / "results.json").write_text("{}")
    args = ["leaderboard", command, "--protocol", "field-smoke/1", "--results", "results.json"]
    res = plcore_cli(args + (["--only", "learner:plknn"] if command == "run" else []), tmp_path, check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "is a file, not a folder of run files" in lines[0]
    assert (tmp_path / "results.json").read_text() == "{}" and sorted(p.name for p in tmp_path.iterdir()) == [
        "results.json"]


def test_page_out_keeps_an_existing_page_when_the_results_hold_no_run_file(plcore_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    page = tmp_path / "leaderboard.md"
    page.write_text("# the committed page\n")
    res = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", "empty", "--out",
                      "leaderboard.md"], tmp_path, check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "not replaced by a page of no run file" in lines[0]
    assert page.read_text() == "# the committed page\n"
    fresh = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", "empty", "--out",
                        "new.md"], tmp_path)
    assert fresh.returncode == 0 and "No run file of this protocol yet" in (tmp_path / "new.md").read_text()


def _verify(plcore_cli, cwd, *args, results=None):
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "leaderboard"
    return plcore_cli(["leaderboard", "verify", "--protocol", "field-smoke/1", "--results", str(results or committed),
                       *args], cwd, check=False)


def test_verify_all_reruns_every_fold_and_sample_a_seeded_few(plcore_cli, tmp_path):
    """Issue 63, item 3: ``--all`` re-runs each ok fold (2 data sets x 2 folds), ``--sample 1``
    one fold a row, the same one for the same seed."""
    every = _verify(plcore_cli, tmp_path, "--only", "learner:plknn", "--all")
    assert every.returncode == 0 and every.stdout.strip().splitlines()[-1].startswith("verified: 4 fold(s) the same")
    one = _verify(plcore_cli, tmp_path, "--only", "learner:plknn", "--sample", "1", "--seed", "3")
    again = _verify(plcore_cli, tmp_path, "--only", "learner:plknn", "--sample", "1", "--seed", "3")
    assert one.returncode == 0 and one.stdout.strip().splitlines()[-1].startswith("verified: 1 fold(s) the same")
    assert one.stdout == again.stdout


def test_verify_fails_when_it_checks_nothing_or_cannot_rerun_a_row(plcore_cli, tmp_path):
    import shutil
    from pathlib import Path

    unknown = _verify(plcore_cli, tmp_path, "--only", "learner:plknnn")
    assert unknown.returncode == 2 and "--only learner:plknnn: no run file" in unknown.stderr
    (tmp_path / "empty").mkdir()
    nothing = _verify(plcore_cli, tmp_path, results=tmp_path / "empty")
    assert nothing.returncode == 1 and "nothing was re-run: verify fails" in nothing.stdout
    # a row whose files carry another revision than the installed one: named, and a failure
    committed = Path(__file__).resolve().parents[1] / "leaderboard" / "field-smoke-1"
    copy = tmp_path / "copy" / "field-smoke-1"
    shutil.copytree(committed, copy)
    import json

    for path in (copy / "classification" / "learner").glob("plknn@*/*/fold-*.json"):
        rec = json.loads(path.read_text())
        rec["component"]["revision"] = 7
        new = path.parents[1].with_name(path.parents[1].name.replace("@r1-", "@r7-")) / path.parent.name / path.name
        new.parent.mkdir(parents=True, exist_ok=True)
        new.write_text(json.dumps(rec))
        path.unlink()
    stale = _verify(plcore_cli, tmp_path, "--only", "learner:plknn", results=tmp_path / "copy")
    assert stale.returncode == 1 and "learner:plknn: not re-run (installed as plknn@r1-" in stale.stdout
    allowed = _verify(plcore_cli, tmp_path, "--only", "learner:plknn", "learner:plsvm", "--allow-missing",
                      results=tmp_path / "copy")
    assert allowed.returncode == 0 and "1 row(s) not re-run" in allowed.stdout


def test_verify_rows_reruns_a_seeded_subset_of_the_rows(capsys):
    """``--rows N``: every file is still checked; only N of the rows (after ``--only``) are re-run,
    the same N for the same seed, named on a line of their own."""
    from pathlib import Path

    from plcore.exceptions import ConfigError
    from plcore.leaderboard.cli import main as leaderboard

    committed = Path(__file__).resolve().parents[1] / "leaderboard"
    args = ["verify", "--protocol", "field-smoke/1", "--results", str(committed), "--only", "learner:plknn",
            "learner:perceptron", "learner:ipal", "--sample", "1", "--rows", "2", "--seed", "5"]
    assert leaderboard(args) == 0
    out = capsys.readouterr().out
    assert leaderboard(args) == 0 and capsys.readouterr().out == out
    named = next(line for line in out.splitlines() if line.startswith("re-running 2 of the rows, drawn with seed 5: "))
    chosen = named.split(": ", 1)[1].split(", ")
    rerun = [line for line in out.splitlines() if " fold " in line]
    assert len(chosen) == 2 and {line.split(" on ")[0] for line in rerun} == set(chosen) and len(rerun) == 2
    with pytest.raises(ConfigError, match="--rows must be a positive number of rows, got 0"):
        leaderboard([*args[:-4], "--rows", "0"])
