"""plcore.run.report: paired t-tests, the reproduction table, and the end-of-sweep callback."""

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from plcore.run.report import RunRecord, fmt_mean_std, paired_ttest, reproduction_table


def _run(name, metrics, params=None, overrides="", steps=None):
    rec = RunRecord(run_id=name, name=name, params=dict(params or {}), metrics=dict(metrics),
                    tags={"overrides": overrides})
    if steps is not None:
        rec._history["accuracy"] = np.asarray(steps, dtype=float)
    return rec


ROOT = Path(__file__).resolve().parents[1]


def test_paired_ttest_decisions_match_scipy():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.5, size=10)
    better = base + 0.05 + rng.normal(0, 0.01, size=10)
    noisy = base + rng.normal(0, 0.05, size=10)
    assert stats.ttest_rel(better, base).pvalue < 0.05
    assert paired_ttest(better, base) == "win"
    assert paired_ttest(base, better) == "loss"
    p = stats.ttest_rel(noisy, base).pvalue
    assert paired_ttest(noisy, base) == ("tie" if p >= 0.05 else ("win" if (noisy - base).mean() > 0 else "loss"))
    assert paired_ttest(base, base) == "tie"                      # identical folds
    assert paired_ttest(base + 0.01, base) == "win"               # constant improvement: p = 0
    # the level matters: a difference significant at 0.05 but not at 0.001
    mid = base + 0.01 + rng.normal(0, 0.012, size=10)
    pm = stats.ttest_rel(mid, base).pvalue
    if 0.001 < pm < 0.05:
        assert paired_ttest(mid, base, alpha=0.05) == "win" and paired_ttest(mid, base, alpha=0.001) == "tie"


def test_paired_ttest_rejects_unpaired_input():
    with pytest.raises(ValueError, match="equally long"):
        paired_ttest([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError):
        paired_ttest([0.1], [0.2])


def test_fmt_mean_std():
    assert fmt_mean_std([0.5, 0.7]) == "0.600 ± 0.100"
    assert fmt_mean_std(mean=0.81, std=0.012) == "0.810 ± 0.012"
    assert fmt_mean_std(mean=0.81) == "0.810"
    assert fmt_mean_std() == "–"


def test_reproduction_table_puts_ours_beside_the_paper():
    runs = [
        _run("a", {"accuracy_mean": 0.756, "accuracy_std": 0.035},
             {"paper.source": "CENDA, Table 7", "paper.setting": "Lost, PL-KNN-CENDA", "paper.metric": "accuracy_mean",
              "paper.value": "0.81", "paper.std": "0.012"}, overrides="experiment=paper_cenda_lost"),
        _run("b", {"acc_mean": 0.376, "acc_std": 0.031},
             {"paper.source": "PLC, Table 1", "paper.setting": "Lost rho 0.05", "paper.metric": "acc_mean",
              "paper.value": "0.399", "paper.std": "0.027"}, overrides="experiment=paper_plc_lost_rho05"),
        _run("c", {"mistake_rate_final_mean": 0.366, "mistake_rate_final_std": 0.033},
             {"paper.source": "Online, Fig. 2", "paper.metric": "mistake_rate_final_mean"},
             overrides="experiment=paper_online_ecoli"),
        _run("no-paper-block", {"accuracy_mean": 0.9}),
    ]
    table = reproduction_table(runs)
    lines = table.strip().splitlines()
    assert len(lines) == 2 + 3                                    # header + 3 rows; the run without a paper block is left out
    row = next(l for l in lines if "PL-KNN-CENDA" in l)
    assert "0.810 ± 0.012" in row and "0.756 ± 0.035" in row and "-0.054" in row
    assert "`python -m plcore experiment=paper_cenda_lost`" in row
    assert "-0.023" in next(l for l in lines if "PLC" in l)
    online = next(l for l in lines if "Online" in l)
    assert "figure only" in online and "0.366 ± 0.033" in online
    assert reproduction_table([runs[-1]]) == ""
    # a preset run again: only its latest run is reported
    older = _run("a-old", {"accuracy_mean": 0.700, "accuracy_std": 0.05}, runs[0].params,
                 overrides="experiment=paper_cenda_lost")
    runs[0].start_time, older.start_time = 2, 1
    again = reproduction_table([runs[0], older])
    assert again.count("paper_cenda_lost") == 1 and "0.756 ± 0.035" in again and "0.700" not in again


def test_sweep_writes_the_reproduction_report_and_report_command_rebuilds_it(tmp_path, plcore_cli):
    """``report=reproduction`` writes ``reproduction.md`` in the current folder, never the committed
    page under docs/ (launched from a clone's root it would overwrite it); the page names the option
    that regenerates the docs' page."""
    out = tmp_path / "reproduction.md"
    (tmp_path / "docs" / "results").mkdir(parents=True)  # a clone's root
    args = ["-m", "+learner=plknn", "learner.k=3,7", "protocol.n_splits=2", "progress=false",
            "+paper.source='Test paper'", "+paper.setting='digits, r=3'", "+paper.metric=accuracy_mean",
            "+paper.value=0.5", "+paper.std=0.1", "report=reproduction"]
    proc = plcore_cli(args, tmp_path)
    assert "report written to reproduction.md" in proc.stdout
    assert list((tmp_path / "docs").rglob("*")) == [tmp_path / "docs" / "results"]
    text = out.read_text()
    assert ("`python -m plcore -m 'experiment=glob(paper_*)' report=reproduction "
            "hydra.callbacks.report.output=docs/results/reproduction.md`") in text
    rows = [l for l in text.splitlines() if l.startswith("| Test paper")]
    assert len(rows) == 2 and all("0.500 ± 0.100" in r for r in rows)

    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("plcore")
    found = client.search_runs([exp.experiment_id])
    means = sorted(f"{r.data.metrics['accuracy_mean']:.3f}" for r in found)
    assert sorted(r.split("|")[5].split("±")[0].strip() for r in rows) == means
    (sweep,) = {r.data.tags["hydra.sweep.dir"] for r in found}
    assert f"_Made from 2 run(s) of sweep `{sweep}` at commit " in text  # scoped to the sweep, says the commit

    again = tmp_path / "again.md"
    plcore_cli(["report", "--writer", "reproduction", "--out", str(again), "--sweep-dir", sweep], tmp_path)
    strip = lambda t: [l for l in t.splitlines() if not l.startswith("Generated")]  # noqa: E731
    assert strip(again.read_text()) == strip(text)


def test_no_shipped_report_writes_into_docs_unless_a_command_names_it():
    """The reproduction report's default, the callback's and every preset's report output are
    files in the current folder (a page under docs/ only where a command passes its path)."""
    from omegaconf import OmegaConf

    from plcore.registry import get_registry
    from plcore.run.callbacks import ReportCallback

    conf = OmegaConf.load(ROOT / "conf" / "report" / "reproduction.yaml")
    outputs = {"ReportCallback()": ReportCallback().output,
               "report=reproduction": conf.hydra.callbacks.report.output}
    for name, preset in get_registry().experiments.items():
        report = preset.get("hydra", {}).get("callbacks", {}).get("report", {})
        if report.get("output"):
            outputs[f"experiment={name}"] = report["output"]
    assert {"experiment=cenda_table", "experiment=cenda_table_transductive"} <= set(outputs)
    assert {k: v for k, v in outputs.items() if "/" in v} == {}, "a shipped report writes outside the current folder"
    assert outputs["report=reproduction"] == outputs["ReportCallback()"] == "reproduction.md"


def test_report_summarises_any_sweep_and_never_overwrites_a_tracked_file(tmp_path, plcore_cli):
    """``python -m plcore report --sweep-dir`` on an ordinary sweep (no paper block) writes a
    summary of its runs, by default to ``plcore-report.md`` here; a file git tracks is replaced
    only with ``--overwrite``."""
    import subprocess

    plcore_cli(["-m", "dataset=iris", "bags.r=1", "learner.k=3,5", "protocol.n_splits=2", "progress=false",
                "hydra.sweep.dir=sweep"], tmp_path)
    proc = plcore_cli(["report", "--sweep-dir", "sweep"], tmp_path)
    assert "report written to plcore-report.md (2 runs)" in proc.stdout
    table = [l for l in (tmp_path / "plcore-report.md").read_text().splitlines() if l.startswith("| plknn")]
    assert len(table) == 2 and "learner.k=3" in table[0] and "learner.k=5" in table[1]
    assert all("| FINISHED | accuracy |" in row for row in table)
    tracked = tmp_path / "tracked.md"
    tracked.write_text("keep me\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "tracked.md"], cwd=tmp_path, check=True)
    refused = plcore_cli(["report", "--sweep-dir", "sweep", "--out", "tracked.md"], tmp_path, check=False)
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: tracked.md is tracked by git: pass --overwrite to replace it, or --out another file")
    assert tracked.read_text() == "keep me\n"
    plcore_cli(["report", "--sweep-dir", "sweep", "--out", "tracked.md", "--overwrite"], tmp_path)
    assert tracked.read_text().startswith("# Sweep summary")


def test_report_command_with_nothing_to_report(tmp_path, plcore_cli):
    proc = plcore_cli(["report", "--out", str(tmp_path / "x.md")], tmp_path, check=False)
    assert proc.returncode == 1 and "nothing to report" in proc.stdout
    assert not (tmp_path / "x.md").exists()


def test_steps_read_per_fold_metrics_under_their_step_name():
    class Client:
        def get_metric_history(self, run_id, key):
            Metric = type("M", (), {})
            out = []
            if key == "fold/accuracy":
                for step, value in ((1, 0.5), (0, 0.25)):
                    m = Metric()
                    m.step, m.value = step, value
                    out.append(m)
            return out

    rec = RunRecord("r", "n", {}, {"fold/accuracy": 0.5, "accuracy_mean": 0.375}, {}, _client=Client())
    np.testing.assert_array_equal(rec.steps("accuracy"), [0.25, 0.5])


def test_report_names_the_sweep_and_the_commit(tmp_path):
    from plcore.run.report import write_report

    runs = [RunRecord("a", "n", {}, {}, {"mlflow.source.git.commit": "0123456789abcdef", "plcore.git.dirty": "true"})]
    path = write_report(runs, tmp_path / "r.md", writer=lambda rs: "# table\n", sweep_dir="multirun/x")
    text = path.read_text()
    assert text.startswith("# table\n") and "sweep `multirun/x`" in text and "0123456789+dirty" in text
