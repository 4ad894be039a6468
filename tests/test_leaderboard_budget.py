"""field/3's budget (issue 72): a fold's configurations and checkpoints (:func:`plcore.run.protocols.budget_fold`)
checked against a plain re-fit of each, the draws and step counts against their definitions, and the run files
of ``field-smoke/2`` (field/3's smoke tier) as the user's commands see them: written, listed as done, verified,
and every forged claim of their ``tuning`` block refused in one line."""

import json
import math
import shutil

import numpy as np
import pytest
from sklearn.base import clone

from plcore.exceptions import ConfigError
from plcore.leaderboard.cli import main as leaderboard
from plcore.leaderboard.jobs import create_component
from plcore.metrics import covering_rate
from plcore.registry import get_registry
from plcore.run.pipeline import make_preprocessor
from plcore.run.protocols import Budget, Setup, budget_fold, draw_configurations, fold_seeds, validation_split
from plcore.run.protocols._budget import epochs_for

ROWS = ["learner:plknn", "learner:proden"]


def _blobs(n=120, q=3, seed=0):
    """Three separated blobs with one false candidate per row."""
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=n)
    X = rng.normal(size=(n, 4)) + 3.0 * np.eye(q, 4)[y]
    S = np.eye(q, dtype=bool)[y]
    S[np.arange(n), (y + 1 + rng.randint(q - 1, size=n)) % q] = True
    return X, S, y


def test_epochs_and_checkpoints_count_optimizer_steps():
    assert epochs_for(20, 50, 16) == (5, 4)      # 4 steps an epoch (16 + 16 + 16 + 2 rows): 5 epochs reach 20
    assert epochs_for(21, 50, 16) == (6, 4)      # the first epoch end at or past the budget
    assert epochs_for(10, 8, 128) == (10, 1)     # a batch larger than the rows is the rows
    with pytest.raises(ConfigError, match="integer batch_size"):
        epochs_for(10, 8, "auto")


def test_validation_split_is_a_seeded_partition():
    fit, val = validation_split(119, 0.2, 7)
    assert len(val) == math.ceil(0.2 * 119) and len(fit) + len(val) == 119
    assert not set(fit) & set(val) and sorted(np.r_[fit, val]) == list(range(119))
    again = validation_split(119, 0.2, 7)
    assert np.array_equal(again[1], val) and not np.array_equal(validation_split(119, 0.2, 8)[1], val)


def test_configurations_are_the_defaults_then_draws_the_same_for_every_fold():
    grid = {"learner.k": [5, 10, 20]}
    assert draw_configurations(grid, 1, 0) == [{}]
    drawn = draw_configurations(grid, 10, 0)    # a grid: without replacement, as many as it has
    assert drawn[0] == {} and sorted(p["learner.k"] for p in drawn[1:]) == [5, 10, 20]
    space = {"learner.learning_rate": {"log10_uniform": [-4.5, -2.5]}, "learner.batch_size": {"pow2_int": [5, 8]}}
    points = draw_configurations(space, 6, 3)
    assert points == draw_configurations(space, 6, 3) and len(points) == 6 and points[0] == {}
    assert all(10 ** -4.5 <= p["learner.learning_rate"] <= 10 ** -2.5 for p in points[1:])
    assert all(p["learner.batch_size"] in (32, 64, 128) for p in points[1:])


def test_a_deep_fold_keeps_every_checkpoint_and_its_choices_are_plain_refits():
    """Each configuration's checkpoints are at the first epoch end past every ``every`` steps, and the
    default's predictions are a plain fit of the defaults for the budget's epochs (same seed, same
    scaling); the tuned choice is the largest validation covering rate (ties: earliest), its test
    predictions scoring the accuracy its checkpoint stores."""
    X, S, y = _blobs()
    train, test = np.arange(80), np.arange(80, 120)
    learner = create_component(get_registry(), "learner", "proden", 0).set_params(
        hidden_layer_sizes=(8,), batch_size=16, device="cpu")
    budget = Budget(steps=30, every=10, configurations=3, validation=0.25)
    space = {"learner.learning_rate": [1e-3, 3e-2]}
    fold = budget_fold(Setup(learner=learner), X, S, y, train, test, budget=budget, space=space,
                       preprocessing="standardize", seed=0, fold=1)
    seeds = fold_seeds(0, 1)
    fit_pos, val_pos = validation_split(80, 0.25, seeds["split"])
    assert np.array_equal(fold.fit_rows, train[fit_pos]) and np.array_equal(fold.validation_rows, train[val_pos])
    n_epochs, per_epoch = epochs_for(30, len(fit_pos), 16)
    for steps in fold.steps:    # 4 steps an epoch: checkpoints after epochs 3, 5 and 8 (12, 20, 32 steps)
        assert steps == [12, 20, 32] and all(s % per_epoch == 0 for s in steps)
    assert fold.params == draw_configurations(space, 3, 0) and len(fold.params) == 3
    fit = fold.fit_rows
    scaler = make_preprocessor("standardize").fit(X[fit])
    plain = clone(learner).set_params(n_epochs=n_epochs, random_state=seeds["fit"](0)).fit(scaler.transform(X[fit]),
                                                                                             S[fit])
    assert np.array_equal(fold.predictions["default"], plain.predict(scaler.transform(X[test])))
    cr = [covering_rate(S[fold.validation_rows], plain.predict(scaler.transform(X[fold.validation_rows])))]
    assert fold.curves[0][-1, 0] == pytest.approx(cr[0], abs=1e-8)
    values = [(c[k, 0], -j, -k) for j, c in enumerate(fold.curves) for k in range(len(c))]
    best = max(values)
    assert fold.chosen == (-best[1], -best[2])
    j, k = fold.chosen
    assert fold.curves[j][k, 3] == pytest.approx(np.mean(fold.predictions["tuned"] == y[test]), abs=1e-8)


def test_a_classic_fold_has_one_checkpoint_per_configuration():
    X, S, y = _blobs()
    learner = create_component(get_registry(), "learner", "plknn", 0)
    fold = budget_fold(Setup(learner=learner), X, S, y, np.arange(80), np.arange(80, 120),
                       budget=Budget(steps=30, every=10, configurations=3, validation=0.25),
                       space={"learner.k": [3, 7]}, preprocessing="standardize", seed=0)
    assert fold.steps == [[0], [0], [0]] and [len(c) for c in fold.curves] == [1, 1, 1]
    fit = fold.fit_rows
    scaler = make_preprocessor("standardize").fit(X[fit])
    plain = clone(learner).fit(scaler.transform(X[fit]), S[fit])
    assert np.array_equal(fold.predictions["default"], plain.predict(scaler.transform(X[80:])))


# -- the run files of field-smoke/2, as the commands see them --------------------------------------------------

@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """field-smoke/2 run for two rows (PL-KNN and PRODEN), once for the module."""
    res = tmp_path_factory.mktemp("budget") / "res"
    assert leaderboard(["run", "--protocol", "field-smoke/2", "--results", str(res), "--only", *ROWS]) == 0
    return res


@pytest.fixture
def results(committed, tmp_path):
    shutil.copytree(committed, tmp_path / "res")
    return tmp_path / "res"


def _path(results, row="learner/proden@r1-fcfe7c21", dataset="iris", fold=0):
    return results / "field-smoke-2" / "classification" / row / dataset / f"fold-{fold}.json"


def _edit(path, change):
    rec = json.loads(path.read_text())
    change(rec)
    path.write_text(json.dumps(rec))


def _listed(results, capsys):
    code = leaderboard(["list", "--protocol", "field-smoke/2", "--results", str(results), "--only", *ROWS])
    return code, capsys.readouterr().out


def test_the_smoke_tier_writes_both_rows_lists_them_done_and_verifies(committed, capsys):
    rec = json.loads(_path(committed).read_text())
    assert rec["schema"] == "plcore.leaderboard.run/2" and rec["selection"]["method"] == "budget"
    assert set(rec["scores"]) == {"accuracy", "default_accuracy", "disambiguation", "default_disambiguation"}
    confs = rec["tuning"]["configurations"]
    assert len(confs) == 2 and confs[0]["params"] == {} and confs[0]["steps"][-1] >= 20
    code, out = _listed(committed, capsys)
    assert code == 0 and "0 cell(s) to run" in out
    assert leaderboard(["verify", "--protocol", "field-smoke/2", "--results", str(committed), "--all",
                        "--only", *ROWS]) == 0
    out = capsys.readouterr().out
    assert "the same predictions (tuned and default) and checkpoints" in out and "0 differ" in out


def _chosen_elsewhere(rec):  # the other configuration claimed chosen, its parameters with it
    other = 1 - rec["tuning"]["chosen"]["configuration"]
    rec["tuning"]["chosen"] = {"configuration": other, "checkpoint": 0}
    rec["selection"]["chosen"] = rec["tuning"]["configurations"][other]["params"]


def _curve_raised(rec):   # the other configuration's covering rate forged above the choice's
    other = 1 - rec["tuning"]["chosen"]["configuration"]
    rec["tuning"]["configurations"][other]["covering_rate"][0] = 1.0
    rec["tuning"]["configurations"][rec["tuning"]["chosen"]["configuration"]]["covering_rate"] = [
        0.5 for _ in rec["tuning"]["configurations"][rec["tuning"]["chosen"]["configuration"]]["steps"]]


def _params_forged(rec):
    rec["tuning"]["configurations"][1]["params"]["learner.learning_rate"] = 0.5


def _test_accuracy_forged(rec):
    j, k = rec["tuning"]["chosen"]["configuration"], rec["tuning"]["chosen"]["checkpoint"]
    rec["tuning"]["configurations"][j]["test_accuracy"][k] = 1.0


def _default_swapped(rec):  # the tuned predictions claimed as the default's
    rec["tuning"]["default"]["predictions"] = dict(rec["predictions"])


def _no_tuning(rec):
    rec.pop("tuning")


@pytest.mark.parametrize("forge, reason", [
    (_chosen_elsewhere, "is not what its curves choose by covering_rate"),
    (_curve_raised, "is not what its curves choose by covering_rate"),
    (_params_forged, "are not the row's draw"),
    (_test_accuracy_forged, "stored test_accuracy 1.0 disagrees with its predictions"),
    (_default_swapped, "disagrees"),
    (_no_tuning, "has no tuning block"),
])
def test_a_forged_tuning_claim_makes_its_file_invalid(results, capsys, forge, reason):
    path = _path(results)
    before = json.loads(path.read_text())
    _edit(path, forge)
    if forge is _default_swapped and before["scores"]["default_accuracy"] == before["scores"]["accuracy"]:
        pytest.skip("the default and the tuned choice predict alike on this fold")
    code, out = _listed(results, capsys)
    assert "invalid" in out and reason in out, out


def _passes_its_checks_then_verified(results, capsys):
    """``list`` shows no invalid file; then ``verify --all`` of proden's files: its code and output."""
    code, out = _listed(results, capsys)
    assert "invalid" not in out
    code = leaderboard(["verify", "--protocol", "field-smoke/2", "--results", str(results), "--all",
                        "--only", "learner:proden"])
    return code, capsys.readouterr().out


def test_verify_names_a_configuration_whose_checkpoints_were_forged(results, capsys):
    """A configuration that was not chosen, its covering rate lowered (so that the choice still
    stands and the file passes its checks): only a re-run can tell, and verify names it."""
    path = _path(results, "learner/proden@r1-fcfe7c21", "wine", 0)

    def lowered(rec):
        other = 1 - rec["tuning"]["chosen"]["configuration"]
        rec["tuning"]["configurations"][other]["covering_rate"] = [
            0.0 for _ in rec["tuning"]["configurations"][other]["steps"]]
    _edit(path, lowered)
    code, out = _passes_its_checks_then_verified(results, capsys)
    assert code == 1 and "learner:proden on wine fold 0: DIFFERS" in out and "covering_rate differs" in out, out


def test_a_moved_curve_that_was_not_chosen_is_put_down_to_other_arithmetic_where_the_file_records_it(results, capsys):
    """The same forgery in a file that records another CPU: the choice and both rows' predictions
    stand, so another machine's arithmetic explains it (a chaotic curve that was not chosen): named
    apart, a failure unless ``--allow-other-cpu``. A moved choice is never put down to it."""
    path = _path(results, "learner/proden@r1-fcfe7c21", "wine", 0)

    def lowered_elsewhere(rec):
        other = 1 - rec["tuning"]["chosen"]["configuration"]
        rec["tuning"]["configurations"][other]["covering_rate"] = [
            0.0 for _ in rec["tuning"]["configurations"][other]["steps"]]
        rec["numerics"] = {**rec["numerics"], "cpu": "Another CPU"}
    _edit(path, lowered_elsewhere)
    code, out = _passes_its_checks_then_verified(results, capsys)
    line = next(line for line in out.splitlines() if line.startswith("learner:proden on wine fold 0:"))
    assert code == 1 and "DIFFERS on this machine's arithmetic" in line and "covering_rate differs" in line, out
    assert "Another CPU stored" in line
    code = leaderboard(["verify", "--protocol", "field-smoke/2", "--results", str(results), "--all",
                        "--only", "learner:proden", "--allow-other-cpu"])
    assert code == 0, capsys.readouterr().out


def test_page_reference_decides_every_row_against_the_users_row(capsys):
    """``page --reference KIND:NAME`` on a committed tier (field-smoke/1): each ranked row's verdict
    against that row, beside the verdict against the best; the command on the page names it; a row
    that is not on the board is one line."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "leaderboard"
    assert leaderboard(["page", "--protocol", "field-smoke/1", "--results", str(committed),
                        "--reference", "learner:cc"]) == 0
    page = capsys.readouterr().out
    assert "--reference learner:cc" in page and "| vs CC: P(...) |" in page
    cc = next(line for line in page.splitlines() if line.startswith("| ") and "| CC |" in line)
    assert "| reference |" in cc
    assert page.count("Tiers: ") >= 2   # the classic and the deep table
    with pytest.raises(ConfigError, match="--reference learner:nope: no such row on field-smoke/1"):
        leaderboard(["page", "--protocol", "field-smoke/1", "--results", str(committed), "--reference",
                     "learner:nope"])


def test_list_prices_a_row_that_never_ran_by_a_probe_fit(tmp_path, capsys):
    """A row with no run file anywhere is probed (one fold of the smallest task; under a budget one
    configuration for one checkpoint's steps) and priced from the probe, not its group's median;
    ``--no-probe`` keeps the median. The probe writes no run file."""
    res = tmp_path / "res"
    assert leaderboard(["run", "--protocol", "field-smoke/2", "--results", str(res), "--only", "learner:plknn"]) == 0
    capsys.readouterr()
    before = sorted(res.rglob("fold-*.json"))
    assert leaderboard(["list", "--protocol", "field-smoke/2", "--results", str(res), "--only", "learner:ipal"]) == 0
    out = capsys.readouterr().out
    assert "probing learner:ipal (it has never run" in out and "from a probe fit of each row never run" in out
    assert sorted(res.rglob("fold-*.json")) == before
    assert leaderboard(["list", "--protocol", "field-smoke/2", "--results", str(res), "--only", "learner:ipal",
                        "--no-probe"]) == 0
    out = capsys.readouterr().out
    assert "probing" not in out and "their group's median (rows never run)" in out


def test_verify_names_a_forged_disambiguation(results, capsys):
    """The two rows' disambiguations swapped, with their scores (so that the file passes its
    checks, which recompute the scores from the stored arrays): only a re-run can tell, and verify
    names the arrays."""
    def swapped(rec):
        d, s = rec["tuning"]["disambiguation"], rec["scores"]
        d["default"], d["tuned"] = d["tuned"], d["default"]
        s["default_disambiguation"], s["disambiguation"] = s["disambiguation"], s["default_disambiguation"]

    path = next(p for p in sorted(results.rglob("learner/proden@*/*/fold-*.json"))
                if len(set(json.dumps(v) for v in json.loads(p.read_text())["tuning"]["disambiguation"].values())) == 2)
    _edit(path, swapped)
    code, out = _passes_its_checks_then_verified(results, capsys)
    assert code == 1 and "tuning.disambiguation.default differs" in out, out


def test_the_twin_note_pairs_rows_by_their_predictions_never_by_their_failures():
    """Rows whose every fold made the same predictions share a note; two rows that failed alike
    predicted nothing and are not twins."""
    from types import SimpleNamespace

    from plcore.leaderboard.page import _twin_lines

    def row(label, *digests):
        folds = {"iris": {k: SimpleNamespace(ok=d is not None, predictions={"sha256": d} if d else None)
                          for k, d in enumerate(digests)}}
        return SimpleNamespace(variant="tuned", folds=folds, track="classification", label=label)

    board = SimpleNamespace(rows=[row("PiCO", "a", "b"), row("Conf+PiCO", "a", "b"), row("CC", "a", "c"),
                                  row("X", None, None), row("Y", None, None)])
    assert _twin_lines(board) == ["", "Rows that made the same predictions on every fold (they train alike): "
                                      "PiCO, Conf+PiCO."]
    board.rows[1] = row("Conf+PiCO", "a", None)
    assert _twin_lines(board) == []
