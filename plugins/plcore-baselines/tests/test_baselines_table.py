"""The cenda_table report: cells, paper figures and win/tie/loss from (fake) MLflow runs; its presets
and the writer's registration."""

import numpy as np
from scipy import stats

from plcore.run.report import RunRecord
from plcore_baselines import plugin
from plcore_baselines.reports import COMPARISONS, DATASETS, LEARNERS, REDUCERS, cenda_table, learner_name, run_key


def _preset(name):
    return plugin.plcore_experiments()[name]


def _run(dataset, learner, reducer, folds):
    folds = np.asarray(folds, dtype=float)
    over = f"dataset={dataset} +learner={learner}" + (f" +reducer={reducer}" if reducer else "")
    rec = RunRecord(run_id=f"{dataset}-{learner}-{reducer}", name="x", params={},
                    metrics={"accuracy_mean": folds.mean(), "accuracy_std": folds.std()},
                    tags={"overrides": over, "dataset": dataset})
    rec._history["accuracy"] = folds
    return rec


def test_run_key_reads_the_sweep_overrides():
    assert run_key(_run("lost", "ipal", "delin", [0.1, 0.2])) == ("lost", "ipal", "delin")
    assert run_key(_run("lost", "ipal", None, [0.1, 0.2])) == ("lost", "ipal", "none")
    assert run_key(_run("lost", "ipal", "none", [0.1, 0.2])) == ("lost", "ipal", "none")
    assert run_key(_run("lost", "aknn", None, [0.1, 0.2])) is None   # not one of the table's learners


def test_table_cells_paper_figures_and_win_tie_loss():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.35, 0.45, size=10)
    runs = []
    for lrn in LEARNERS:
        runs.append(_run("lost", lrn, "none", base))
        runs.append(_run("lost", lrn, "cenda", base + 0.3 + rng.normal(0, 0.01, 10)))        # clear win
        runs.append(_run("lost", lrn, "delin", base + 0.3 + rng.normal(0, 0.01, 10) - (0.1 if lrn == "ipal" else 0)))
        runs.append(_run("lost", lrn, "saute", base - 0.05 + rng.normal(0, 0.005, 10)))       # clear loss
    text = cenda_table(runs)
    lines = text.splitlines()
    ipal = next(l for l in lines if l.startswith("| lost | IPAL |"))
    cells = [c.strip() for c in ipal.strip("|").split("|")]
    assert cells[2] == f"{base.mean():.3f} ± {base.std():.3f}"
    assert cells[6] == "0.733 ± 0.031 / 0.818 ± 0.011 / 0.850 ± 0.014"           # CENDA paper, Table 7
    wtl = {}
    for line in lines:
        cells_ = [c.strip() for c in line.strip("|").split("|")]
        if len(cells_) == 5 and " vs " in cells_[0]:
            wtl[(cells_[0], cells_[1])] = cells_[2:]
    assert len(wtl) == len(COMPARISONS) * len(LEARNERS)
    assert [learner_name(lrn) for lrn in LEARNERS] == ["PL-KNN", "PL-SVM", "PL-ECOC", "IPAL"]  # the specs' names
    for name in map(learner_name, LEARNERS):
        assert wtl[("A-CENDA vs A", name)] == ["win", "1/0/0", "win"]          # ours, total, paper Table 6
        assert wtl[("A-SAUTE vs A", name)] == ["loss", "0/0/1", "–"]
    ra = next(r for r in runs if run_key(r) == ("lost", "ipal", "cenda"))
    rb = next(r for r in runs if run_key(r) == ("lost", "ipal", "delin"))
    assert stats.ttest_rel(ra.steps(), rb.steps()).pvalue < 0.05
    assert wtl[("A-CENDA vs A-DELIN", "IPAL")][0] == "win"


def test_missing_cells_are_dashes_and_empty_input_writes_nothing():
    text = cenda_table([_run("msrc-v2", "plknn", None, [0.4, 0.5, 0.45])])
    row = next(l for l in text.splitlines() if l.startswith("| msrc-v2 | PL-KNN |"))
    assert row.count("–") == 4                     # three reducers missing + no paper figure for msrc-v2
    assert cenda_table([]) == ""


def test_preset_sweeps_every_cell_and_names_the_registered_writer():
    assert set(plugin.plcore_experiments()) == {"cenda_table", "cenda_table_transductive", "cenda_table_unscaled"}
    preset = _preset("cenda_table")
    params = preset["hydra"]["sweeper"]["params"]
    assert params["+learner"].split(",") == list(LEARNERS)
    assert params["+reducer"].split(",") == list(REDUCERS)
    assert params["dataset"].split(",") == list(DATASETS)
    assert preset["protocol"]["n_splits"] == 10
    from plcore_baselines.plugin import PLSVM_SEARCH_SPACE

    assert preset["protocol"]["select"] == {"method": "grid", "space": {"learner.C": PLSVM_SEARCH_SPACE["C"]},
                                            "missing": "skip"}   # PL-SVM's C only, as the paper tuned it
    assert preset["tracking"]["experiment_name"] == "cenda_table"
    report = preset["hydra"]["callbacks"]["report"]
    # the current folder, never the committed page under docs/ unless a command names it
    assert report == {"_target_": "plcore.run.callbacks.ReportCallback", "output": "cenda_table.md",
                      "writer": "cenda_table"}
    from hydra.utils import instantiate

    from plcore.run.callbacks import ReportCallback

    callback = instantiate(report)  # reports are opt-in: the preset carries its own callback
    assert isinstance(callback, ReportCallback) and callback.writer == "cenda_table"
    from plcore.registry import get_registry

    assert plugin.plcore_report_writers() == {"cenda_table": "plcore_baselines.reports:cenda_table"}
    assert get_registry().report_writer("cenda_table") is cenda_table


def test_transductive_preset_and_its_report_say_how_reducers_were_fitted():
    preset = _preset("cenda_table_transductive")
    assert preset["defaults"] == ["cenda_table"]         # the same sweep and writer
    assert preset["protocol"]["fit_reducer_on"] == "all"
    assert preset["tracking"]["experiment_name"] == "cenda_table_transductive"
    assert preset["hydra"]["callbacks"]["report"]["output"] == "cenda_table_transductive.md"
    assert "fit_reducer_on" not in _preset("cenda_table")["protocol"]
    run = _run("lost", "plknn", "cenda", [0.8, 0.85, 0.82])
    run.params["protocol.fit_reducer_on"] = "all"
    text = cenda_table([run])
    assert "experiment=cenda_table_transductive" in text and "fitted transductively" in text
    assert "contain their true labels" in text
    assert preset["protocol"]["select"] == {"method": "none"}   # the inner folds would see the test rows
    run = _run("lost", "plknn", "cenda", [0.8, 0.85])
    run.params["protocol.reduced_preprocessing"] = "isotropic"
    text = cenda_table([run])
    assert "fitted on the training folds only" in text
    # the page names the option that writes the docs' page (the preset alone writes ./cenda_table.md)
    assert "`python -m plcore experiment=cenda_table hydra.callbacks.report.output=docs/results/cenda_table.md`" in text


def test_unscaled_preset_and_report_name_the_rescaling_and_plsvm_selection():
    preset = _preset("cenda_table_unscaled")
    assert preset["defaults"] == ["cenda_table"] and preset["protocol"] == {"reduced_preprocessing": "none"}
    assert preset["hydra"]["callbacks"]["report"]["output"] == "cenda_table_unscaled.md"
    assert preset["hydra"]["sweeper"]["params"] == {"+learner": "plsvm"}   # the only learner it changes
    runs = [_run("lost", "plsvm", None, [0.7, 0.8]), _run("lost", "plknn", None, [0.4, 0.5])]
    runs[0].params.update({"protocol.reduced_preprocessing": "none", "protocol.select.method": "grid"})
    runs[1].params.update({"protocol.reduced_preprocessing": "none", "protocol.select.method": "grid"})
    text = cenda_table(runs)
    assert "experiment=cenda_table_unscaled" in text and "used as it is" in text
    assert "PL-SVM's C chosen from {1e-3, ..., 1e3}" in text
    runs[0].params["protocol.select.method"] = "none"
    assert "PL-SVM at its default C = 1" in cenda_table(runs)
