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
