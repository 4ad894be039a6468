"""Who is on the leaderboard (issue 56, item 3; design note 2.3, test 3): the rows come from the
registry, so a plugin plcore has never heard of joins with no file of plcore changed; opting out,
reference learners, reducers paired with the reference learner, clusterers, declared n/a data
sets; and each cell's state from the run files (``leaderboard list``)."""

import numpy as np
import pytest

from plcore.exceptions import PluginError
from plcore.leaderboard import SCHEMA, load_protocol, pack_predictions, write_run
from plcore.leaderboard.cli import listing
from plcore.leaderboard.checks import cell_states
from plcore.leaderboard.jobs import entries, spec_hash
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry, hookimpl

PROTOCOL = load_protocol("field-smoke/1")


class _Baseline(PlKnnLearner):
    """A learner trained on the true labels."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.exact_label_baseline = True
        return tags


class _Plugin:
    """A third-party plugin nobody told plcore about."""

    def __init__(self, specs):
        self.specs = specs

    @hookimpl
    def plcore_components(self):
        return self.specs


def _registry(*specs):
    reg = Registry()
    reg.register(_Plugin(list(specs)), name="foo-plugin", distribution="plcore-foo", version="0.3")
    return reg.load(entry_points=False)


def test_a_plugin_learner_joins_the_classification_track_with_no_file_changed():
    rows = entries(PROTOCOL, _registry(ComponentSpec("learner", "foo", PlKnnLearner)))
    (foo,) = [e for e in rows if e.name == "foo"]
    assert (foo.track, foo.section, foo.distribution, foo.version, foo.pipeline) == (
        "classification", "ranked", "plcore-foo", "0.3", ["foo"])
    assert foo.key == f"foo@r1-{foo.spec_hash.split(':')[1][:8]}"
    assert {e.name for e in rows if e.kind == "learner"} >= {"foo", "plknn"}


def test_opt_out_reference_na_and_track_come_from_the_spec():
    from plcore.learners.plknn import PlKnnLearner as Knn

    rows = entries(PROTOCOL, _registry(
        ComponentSpec("learner", "hidden", Knn, leaderboard=False),
        ComponentSpec("learner", "oracle", _Baseline),
        ComponentSpec("learner", "big", Knn, leaderboard={"na": {"wine": "needs 40 GB"}}),
    ))
    names = {e.name: e for e in rows}
    assert "hidden" not in names and names["oracle"].section == "reference" and names["big"].na == {"wine": "needs 40 GB"}
    states = cell_states(PROTOCOL, rows, "nowhere")
    assert states[(names["big"].key, "wine")] == "na" and states[(names["big"].key, "iris")] == "not run"
    with pytest.raises(PluginError, match="leaderboard must be False, or a dict"):
        ComponentSpec("learner", "bad", Knn, leaderboard={"na": ["wine"]})
    with pytest.raises(PluginError, match="leaderboard_revision must be a positive integer"):
        ComponentSpec("learner", "bad", Knn, leaderboard_revision=0)


def test_a_changed_default_or_revision_makes_a_new_row():
    a = ComponentSpec("learner", "foo", PlKnnLearner)
    b = ComponentSpec("learner", "foo", PlKnnLearner, config_overrides={"k": 5})
    c = ComponentSpec("learner", "foo", PlKnnLearner, search_space={"k": [3, 5]})
    assert len({spec_hash(a), spec_hash(b), spec_hash(c)}) == 3 and spec_hash(a) == spec_hash(
        ComponentSpec("learner", "foo", PlKnnLearner))
    rows = entries(PROTOCOL, _registry(ComponentSpec("learner", "foo", PlKnnLearner, leaderboard_revision=2)))
    assert [e.key for e in rows if e.name == "foo"][0].startswith("foo@r2-")


def test_installed_reducers_pair_with_the_reference_learner_and_clusterers_cluster():
    from plcore.registry import get_registry

    rows = entries(PROTOCOL, get_registry())
    kinds = {(e.kind, e.track) for e in rows}
    assert kinds <= {("learner", "classification"), ("reducer", "classification"), ("clusterer", "clustering")}
    for e in rows:
        if e.kind == "reducer":
            assert e.pipeline == [e.name, "plknn"]
    assert [e.track for e in rows] == sorted(e.track for e in rows)


def _record(entry, dataset, fold, status="ok"):
    rec = {"schema": SCHEMA, "protocol": {"id": "field-smoke", "version": 1, "hash": PROTOCOL.hash},
           "track": entry.track,
           "component": {"kind": entry.kind, "name": entry.name, "revision": entry.revision,
                         "spec_hash": entry.spec_hash},
           "dataset": {"name": dataset, "fingerprint": PROTOCOL.datasets[dataset]["fingerprint"]},
           "fold": {"index": fold, "n_splits": 2,
                    "test_digest": PROTOCOL.datasets[dataset]["splits"][entry.track][fold]},
           "status": status, "error": None if status == "ok" else "ValueError: boom"}
    if status == "ok":  # every test row predicted as class 0, its score as page recomputes it
        from plcore.leaderboard.protocol import checked_data, fold_scores

        (_, drawn), splits = checked_data(PROTOCOL, dataset)
        split = splits[entry.track][fold]
        pred = np.zeros(len(split[1]), dtype=int)
        rec["predictions"] = pack_predictions(pred, drawn.n_classes)
        rec["scores"] = fold_scores(PROTOCOL.track(entry.track), entry.track, drawn, split, pred)
        rec["timing"] = {"fit_s": 0.01, "predict_s": 0.001, "wall_s": 0.02}  # as a fold that ran records them
    rec["component"].update(display_name=entry.display_name, distribution=entry.distribution,
                            pipeline=entry.pipeline, section=entry.section, group=entry.group)
    return rec


def test_cell_states_and_the_listing_read_the_run_files(tmp_path):
    rows = entries(PROTOCOL, _registry(ComponentSpec("learner", "foo", PlKnnLearner)))
    (foo,) = [e for e in rows if e.name == "foo"]
    write_run(tmp_path, _record(foo, "iris", 0))
    write_run(tmp_path, _record(foo, "iris", 1))
    write_run(tmp_path, _record(foo, "wine", 0, status="failed"))
    states = cell_states(PROTOCOL, rows, tmp_path)
    assert states[(foo.key, "iris")] == "done" and states[(foo.key, "wine")] == "partial 1/2"
    write_run(tmp_path, _record(foo, "wine", 1))
    assert cell_states(PROTOCOL, rows, tmp_path)[(foo.key, "wine")] == "failed"
    other = dict(_record(foo, "iris", 0), protocol={"id": "field-smoke", "version": 1, "hash": "sha256:other"})
    write_run(tmp_path / "elsewhere", other)
    assert cell_states(PROTOCOL, rows, tmp_path / "elsewhere")[(foo.key, "iris")] == "invalid"  # another hash
    text = listing(PROTOCOL, rows, cell_states(PROTOCOL, rows, tmp_path))
    assert text.startswith(f"protocol field-smoke/1 ({PROTOCOL.hash}); data sets: iris, wine")
    (line,) = [ln for ln in text.splitlines() if ln.startswith(foo.key)]
    assert line.split()[-2:] == ["done", "failed"] and "plcore-foo 0.3" in line


def test_leaderboard_list_from_the_command_line(tmp_path, plcore_cli):
    proc = plcore_cli(["leaderboard", "list", "--protocol", "field-smoke/1", "--results", str(tmp_path)], tmp_path)
    assert proc.stdout.startswith("protocol field-smoke/1 (sha256:") and "plknn@r1-" in proc.stdout
    assert "reference: trained on true labels" in proc.stdout and "clustering track" in proc.stdout
    bad = plcore_cli(["leaderboard", "list", "--protocol", "field/9"], tmp_path, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: no leaderboard protocol 'field/9'")


# --- the cost of what is missing (`leaderboard list`): fits per fold from each row's declared grid


def _fits(protocol, kind, name):
    from plcore.registry import get_registry

    reg = get_registry()
    if (kind, name) not in reg.components:
        pytest.skip(f"{kind} {name} is not installed")
    from plcore.leaderboard.jobs import fits_per_fold

    (entry,) = [e for e in entries(load_protocol(protocol), reg) if (e.kind, e.name) == (kind, name)]
    return fits_per_fold(load_protocol(protocol).track(entry.track), entry, reg), reg.components


def _points(components, kind, name, skip=()):
    import math

    return math.prod(len(v) for k, v in components[(kind, name)].spec.search_space.items() if k not in skip)


def test_a_grid_fitted_together_is_one_fit_per_inner_fold_and_the_refit():
    assert _fits("field/1", "learner", "plknn")[0] == 1 * 3 + 1  # PL-KNN's k values: one fit (path_params)
    assert _fits("field-quick/1", "learner", "plknn")[0] == 2 * 2 + 1  # two random points, two inner folds


def test_other_grids_count_every_point_or_every_point_of_the_rest():
    fits, comps = _fits("field/1", "learner", "plsvm")
    assert fits == _points(comps, "learner", "plsvm") * 3 + 1 and _points(comps, "learner", "plsvm") > 2
    fits, comps = _fits("field/1", "learner", "plecoc")
    assert fits == _points(comps, "learner", "plecoc", skip=("code_length",)) * 3 + 1  # code lengths together
    fits, comps = _fits("field/1", "reducer", "cenda")
    assert fits == _points(comps, "reducer", "cenda") * 3 + 1  # times PL-KNN's grid, fitted together


def test_a_deep_learner_counts_the_protocols_grid_and_its_epochs():
    from plcore.registry import get_registry

    full, _ = _fits("field/1", "learner", "proden")
    quick, _ = _fits("field-quick/1", "learner", "proden")
    default = get_registry().create("learner", "proden").get_params()["n_epochs"]
    assert full == 4 * 3 + 1 and quick == pytest.approx((2 * 2 + 1) * 50 / default)


def test_a_clustering_partition_fits_each_point_once():
    fits, comps = _fits("field/1", "clusterer", "plc")
    assert fits == _points(comps, "clusterer", "plc") and _fits("field-quick/1", "clusterer", "plc")[0] == 2
