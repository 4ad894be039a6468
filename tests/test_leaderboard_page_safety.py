"""The page renders untrusted text safely, marks unverified rows and checks ``--out`` before the
work (issue 71, items 2, 3 and 4), each case as a dishonest contributor or a careless user meets
it: a copy of the committed field-smoke/1 results with a forged row that no installed component
backs (PL-KNN's files under another name, every prediction right, so that it ranks first)."""

import json
import shutil
from pathlib import Path

import pytest

from plcore.leaderboard import load_protocol, pack_predictions
from plcore.leaderboard.protocol import checked_data, fold_scores

PROTOCOL = load_protocol("field-smoke/1")
COMMITTED = Path(__file__).resolve().parents[1] / "leaderboard"
LEARNERS = Path("field-smoke-1") / "classification" / "learner"


@pytest.fixture
def results(tmp_path):
    """A copy of the committed field-smoke/1 results, ``<tmp>/res``."""
    shutil.copytree(COMMITTED / "field-smoke-1", tmp_path / "res" / "field-smoke-1")
    return tmp_path / "res"


def _forge_row(results, **component) -> str:
    """A row ``forged`` that is not installed: PL-KNN's files with every prediction right (their
    scores recomputed to match) and ``component``'s fields in each; returns its row key."""
    files = sorted((results / LEARNERS).glob("plknn@*/*/fold-*.json"))
    key = files[0].parents[1].name.replace("plknn@", "forged@")
    for path in files:
        rec = json.loads(path.read_text())
        (_, drawn), splits = checked_data(PROTOCOL, rec["dataset"]["name"])
        split = splits[rec["track"]][rec["fold"]["index"]]
        truth = drawn.y_true[split[1]]
        rec["predictions"] = pack_predictions(truth, drawn.n_classes)
        rec["scores"] = fold_scores(PROTOCOL.track(rec["track"]), rec["track"], drawn, split, truth)
        rec["component"].update(name="forged", **component)
        new = results / LEARNERS / key / path.parent.name / path.name
        new.parent.mkdir(parents=True, exist_ok=True)
        new.write_text(json.dumps(rec))
    return key


def _page(plcore_cli, results, *args, check=True):
    return plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", "res", *args],
                      results.parent, check=check)


def _classic_rows(text) -> list:
    """The lines of the classic table of a page."""
    table = text.split("## classification: classic", 1)[1].split("\n\n", 2)[1]
    return table.splitlines()


def _cells(line) -> int:
    """How many cells a Markdown table line has (an escaped ``\\|`` splits none)."""
    return len(line.replace("\\|", "").strip().strip("|").split("|"))


def test_a_newline_in_display_name_injects_no_heading(results, plcore_cli):
    _forge_row(results, display_name="Forged\n## injected heading\n")
    text = _page(plcore_cli, results).stdout
    assert not any(line.startswith("## injected") for line in text.splitlines())
    (line,) = [ln for ln in _classic_rows(text) if "Forged" in ln]
    assert "| Forged ## injected heading ‡ |" in line


def test_html_links_images_and_bidi_overrides_reach_no_page(results, plcore_cli):
    name = ("<img src=x onerror=alert(1)><script>alert(1)</script> [click](http://evil.example) "
            "![pic](http://evil.example/p.png) www.evil.example \u202eexe.txt\u2066\u200f *bold* _em_ # x")
    _forge_row(results, display_name=name, version="1.0<b>")
    proc = _page(plcore_cli, results, "--out", "page.md")
    text = (results.parent / "page.md").read_text()
    mine = "\n".join(line for line in text.splitlines() if "onerror" in line)  # the row's line and the notes
    assert mine.count("\n") >= 1 and "<b>" not in text and "\u202e" not in text
    for raw in ("<img", "<script", "http://", "www.evil", "\u2066", "\u200f", "*bold*", " _em_"):
        assert raw not in mine, raw
    assert "](" not in mine.replace("\\](", "")  # no link, no image: each ``](`` escaped
    (line,) = [ln for ln in _classic_rows(text) if "onerror" in ln]
    assert "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in line and "\\*bold\\* \\_em\\_" in line
    tex = (results.parent / "page.tex").read_text()
    assert r"\textless{}img src=x onerror=alert(1)\textgreater{}" in tex and "\u202e" not in tex
    assert proc.returncode == 0


def test_a_dollar_in_a_name_is_no_mathtext_in_the_diagrams(results, plcore_cli):
    _forge_row(results, display_name="Forged $\\frac{1$ 100%")  # mathtext that does not parse
    proc = _page(plcore_cli, results, "--out", "page.md", check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (results.parent / "page_cd_classification_classic_accuracy.svg").is_file()
    assert r"Forged \$\textbackslash{}frac\{1\$ 100\% (unverified)" in (results.parent / "page.tex").read_text()


def test_a_bar_in_distribution_does_not_break_the_table(results, plcore_cli):
    _forge_row(results, display_name="Forged", distribution="plcore-forged | 9 | 9 | 9")
    rows = _classic_rows(_page(plcore_cli, results).stdout)
    (line,) = [ln for ln in rows if "Forged" in ln]
    assert _cells(line) == _cells(rows[0]) and "plcore-forged \\| 9 \\| 9 \\| 9" in line


def test_a_row_no_installed_component_backs_is_marked_unverified(results, plcore_cli):
    key = _forge_row(results, display_name="Forged")
    text = _page(plcore_cli, results, "--out", "page.md").stdout
    text = (results.parent / "page.md").read_text()
    rows = _classic_rows(text)
    assert rows[2].startswith("| 1 | Forged ‡ |")  # ranked first, and marked
    assert all("‡" not in line for line in rows[3:])  # every other row is installed here
    note = next(line for line in text.splitlines() if line.startswith("`‡`: unverified: 1 row(s)"))
    assert "no fold of theirs can be re-run here" in note and "1 of them ranked above a verified row" in note
    assert "Forged (unverified)" in (results.parent / "page.tex").read_text()
    assert key.startswith("forged@r1-")


def test_a_row_installed_at_another_revision_is_unverified(results, plcore_cli):
    for path in sorted((results / LEARNERS).glob("plsvm@*/*/fold-*.json")):
        rec = json.loads(path.read_text())
        rec["component"]["revision"] = 2
        new = path.parents[1].with_name(path.parents[1].name.replace("@r1-", "@r2-")) / path.parent.name
        new.mkdir(parents=True, exist_ok=True)
        (new / path.name).write_text(json.dumps(rec))
    rows = _classic_rows(_page(plcore_cli, results).stdout)
    assert [line.split(" | ")[1] for line in rows if "PL-SVM" in line] == ["PL-SVM ‡"]


def test_the_committed_results_have_no_unverified_row(plcore_cli, tmp_path):
    proc = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", str(COMMITTED)], tmp_path)
    assert "‡" not in proc.stdout


def _refused(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


def test_page_out_a_md_link_to_a_run_file_is_refused_before_the_work(results, plcore_cli):
    run_file = sorted((results / LEARNERS).glob("plknn@*/iris/fold-0.json"))[0]
    before = run_file.read_text()
    link = results.parent / "page.md"
    link.symlink_to(run_file)
    proc = plcore_cli(["leaderboard", "page", "--protocol", "field-smoke/1", "--results", str(results), "--out",
                       "page.md"], results.parent, check=False)
    assert "whose files this command must not replace" in _refused(proc)
    assert run_file.read_text() == before


def test_page_out_a_run_file_inside_results_is_refused_before_the_work(results, plcore_cli):
    run_file = sorted((results / LEARNERS).glob("plknn@*/iris/fold-0.json"))[0]
    before = run_file.read_text()
    out = run_file.relative_to(results.parent).as_posix()
    line = _refused(_page(plcore_cli, results, "--out", out, check=False))
    assert line.endswith(f"--out {out}: is inside res, whose files this command must not replace; write it elsewhere")
    assert run_file.read_text() == before and not run_file.with_suffix(".tex").exists()


def test_page_out_a_markdown_page_inside_results_is_written(results, plcore_cli):
    _page(plcore_cli, results, "--out", "res/README.md")
    assert (results / "README.md").read_text().startswith("# Leaderboard: field-smoke/1")


def test_page_out_a_folder_or_a_missing_folder_is_one_line(results, plcore_cli):
    (results.parent / "pages").mkdir()
    assert _refused(_page(plcore_cli, results, "--out", "pages", check=False)).endswith(
        "--out pages: is a folder; name a file to write")
    assert _refused(_page(plcore_cli, results, "--out", "nowhere/page.md", check=False)).endswith(
        "--out nowhere/page.md: its folder nowhere does not exist")
    assert not (results.parent / "nowhere").exists()
