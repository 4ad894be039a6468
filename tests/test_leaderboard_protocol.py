"""Frozen, versioned leaderboard protocols (issue 56, item 1; design note 2.2, test 1): each
shipped protocol's hash is pinned here, its data sets' fingerprints, candidate sets and folds are
what plcore's protocols draw, and data that differ are refused in one line."""

from collections import defaultdict

import numpy as np
import pytest

from plcore.exceptions import ConfigError, DataValidationError
from plcore.leaderboard.protocol import (_freeze, available_protocols, check_dataset, describe_dataset,
                                         load_protocol, rows_digest)

#: the pinned hashes: a protocol changed without a new version fails here
PINNED = {
    "field/1": "sha256:25d60f9c3241bbf516a4ffa723602c392d0f813186ae6b6971f02e260a5b71dd",
    "field-quick/1": "sha256:b4ab9054636ca0c7da3fece491741b41e1e569bf6932ab946f1a2300e0596861",
    "field-smoke/1": "sha256:f1169feb74b95803040cd0c57f8622feb68063d4a77a1bed0e44ea9a657ebbfd",
    "field/2": "sha256:a779e2ce463dccb3a28e86f2f63c92d8c8f7c77bff9967c21fe4c4f0cfc63591",
    "field-smoke/2": "sha256:d0dd1256494a89b09270eb40f3949c616a3cb9ffac8546aef8cf183b132b26dc",
    "field/3": "sha256:078b84f2f0cb6ef4bac3b85aad3fdc119b327de5fc56015a28659c97762b856d",
    "vision/1": "sha256:1ed5e332a3e20623b9f94b4649b9e196f8f8c4f374a7a61b32c04e0ebe2493d8",
}


def test_every_shipped_protocol_is_pinned_and_unchanged():
    assert sorted(available_protocols()) == sorted(PINNED)
    for key, pinned in PINNED.items():
        got = load_protocol(key).hash
        assert got == pinned, (f"protocol {key} changed (hash {got}, pinned {pinned}): a frozen protocol is never "
                               "edited; add <id>-<version+1>.yaml and pin its hash")


def test_an_unknown_protocol_is_one_line_listing_them():
    with pytest.raises(ConfigError) as exc:
        load_protocol("field/9")
    assert "\n" not in str(exc.value) and "field/1" in str(exc.value) and "field-smoke/1" in str(exc.value)


def test_the_smoke_protocol_is_what_its_freezer_makes():
    """The file's entries are computed, not typed: freezing it again gives the file itself."""
    from plcore.leaderboard.protocol import PROTOCOL_DIR

    assert _freeze("field-smoke/1") == (PROTOCOL_DIR / "field-smoke-1.yaml").read_text()


def test_the_protocol_folds_and_candidates_are_those_the_kfold_protocol_draws():
    """The k-fold protocol with the smoke tier's settings on iris tests on exactly the rows whose
    digests the protocol holds, with the candidate sets whose digest it holds."""
    from plcore.datasets import UniformBags, load_dataset
    from plcore.learners import PlKnnLearner
    from plcore.run.protocols import Setup, apply_bags, kfold

    protocol = load_protocol("field-smoke/1")
    entry, spec = protocol.datasets["iris"], protocol.track("classification")
    ds = load_dataset("iris")
    res = kfold(Setup(learner=PlKnnLearner(k=5), bags=UniformBags(r=1)), ds, n_splits=spec.n_splits,
                random_state=spec.seed, refit=False, progress=False)
    tested = defaultdict(list)
    for row in res.predictions:
        tested[row["step"]].append(row["index"])
    assert [rows_digest(tested[k]) for k in sorted(tested)] == entry["splits"]["classification"]
    drawn = apply_bags(ds, UniformBags(r=1), spec.seed)
    assert describe_dataset("iris", entry["candidates"], protocol.data["tracks"])["candidates_digest"] == \
        entry["candidates_digest"]
    assert ds.fingerprint() == entry["fingerprint"] and drawn.S.sum(axis=1).tolist() == [2] * 150


def test_data_that_differ_from_the_protocol_are_refused_in_one_line(monkeypatch):
    protocol = load_protocol("field-smoke/1")
    assert check_dataset(protocol, "wine")["name"] == "wine"
    import plcore.datasets as datasets

    real = datasets.load_dataset

    def shifted(name, **kwargs):
        ds = real(name, **kwargs)
        ds.X = ds.X + 1.0  # another copy of the data: its fingerprint differs
        return ds

    monkeypatch.setattr(datasets, "load_dataset", shifted)
    monkeypatch.setattr("plcore.leaderboard.protocol._LOADED", {})  # the data loaded once per process
    with pytest.raises(DataValidationError) as exc:
        check_dataset(protocol, "wine")
    msg = str(exc.value)
    assert "\n" not in msg and "data set 'wine' differs from protocol field-smoke/1: its fingerprint" in msg
    with pytest.raises(ConfigError, match="has no data set 'lost'; its data sets: iris, wine"):
        check_dataset(protocol, "lost")


@pytest.mark.data
def test_the_quick_protocol_matches_the_shared_data(data_home):
    """lost (its own candidate sets) and ecoli (uniform bags) as the quick tier runs them."""
    protocol = load_protocol("field-quick/1")
    for name in ("lost", "ecoli"):
        entry = check_dataset(protocol, name, data_home=data_home)
        assert len(entry["splits"]["classification"]) == 3 and len(entry["splits"]["clustering"]) == 3
    assert np.isin(["lost", "msrc-v2", "ecoli", "satimage", "semeion", "digits"], list(protocol.datasets)).all()


@pytest.mark.data
def test_the_full_protocol_is_what_its_freezer_makes_on_the_shared_data(data_home, monkeypatch):
    """field/1 holds every real partial-label set and UCI set of the data home with digits and
    Fashion-MNIST (classification only); flare's nominal attributes one-hot encoded; its file is
    what freezing gives on the data here."""
    from plcore.datasets import find_idx_folder
    from plcore.leaderboard.protocol import PROTOCOL_DIR

    try:
        find_idx_folder("fashion-mnist", data_home)
    except Exception:  # noqa: BLE001 - the image data are installed by .ci/run
        pytest.skip("Fashion-MNIST's IDX files are not installed")
    monkeypatch.setenv("PLCORE_DATA_HOME", str(data_home))
    protocol = load_protocol("field/1")
    assert list(protocol.datasets) == ["lost", "msrc-v2", "ecoli", "satimage", "semeion", "first-order-theorem",
                                       "flare", "digits", "fashion-mnist"]
    assert protocol.track_datasets("clustering") == list(protocol.datasets)[:-1]
    assert protocol.datasets["flare"]["load"] == {"categorical": "onehot"}
    assert [len(d["splits"]["classification"]) for d in protocol.datasets.values()] == [10] * 9
    assert _freeze("field/1") == (PROTOCOL_DIR / "field-1.yaml").read_text()


def test_a_tracks_typed_view_is_what_the_runner_and_the_cost_model_read():
    """``Protocol.track`` is a frozen :class:`Track`: the deep rows' selection, space and epochs
    (their own where the protocol sets them, the track's or the learner's otherwise) one way for
    ``run`` and the cost model alike; the file's data, and so its hash, are untouched."""
    from plcore.leaderboard.protocol import DeepBudget, Track

    field2, smoke = load_protocol("field/2"), load_protocol("field-smoke/1")
    spec = field2.track("classification")
    assert isinstance(spec, Track) and spec.metric == "accuracy" and spec.train_share == 1 - 1 / 3
    assert spec.selection("deep") == {"method": "none"} and spec.selection("classic") == spec.select
    assert spec.n_epochs("deep") == 50 and spec.n_epochs("classic") is None and spec.space("deep") is None
    deep = smoke.track("classification").deep
    assert isinstance(deep, DeepBudget) and deep.n_epochs == 2 and deep.space and deep.select is None
    clustering = smoke.track("clustering")
    assert clustering.metrics == ("acc", "nmi") and clustering.preprocessing_by_part and clustering.train_share == 1.0
    assert load_protocol("vision/1").track("classification").takes("deep")
    assert not load_protocol("vision/1").track("classification").takes("classic")
    assert list(field2.tracks) == list(field2.data["tracks"]) and field2.hash == load_protocol("field/2").hash
