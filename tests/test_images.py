"""CIFAR-10, CIFAR-100 and PLCIFAR10 from a local copy (plcore.datasets.loaders.cifar): the official
python layout written here in miniature, PLENCH's annotation file, the image .npz, the refusals."""

import pickle

import numpy as np
import pytest

from plcore.datasets import load_dataset
from plcore.datasets.catalog import CIFAR100_SUPERCLASSES, CIFAR10_CLASSES
from plcore.datasets.loaders.cifar import cifar100_class_groups
from plcore.exceptions import DataValidationError, DatasetNotFoundError



def _dump(path, obj):
    path.write_bytes(pickle.dumps(obj, protocol=2))


def _images(rng, n):
    """``n`` random images as the official files hold them: (n, 3072) uint8, channel-major."""
    return rng.randint(0, 256, size=(n, 3072)).astype(np.uint8)


def _cifar10(root, rng, per_batch=4):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    parts = {}
    for stem in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data, labels = _images(rng, per_batch), rng.randint(0, 10, size=per_batch).tolist()
        _dump(folder / stem, {b"batch_label": stem.encode(), b"labels": labels, b"data": data})
        parts[stem] = (data, labels)
    _dump(folder / "batches.meta", {b"label_names": [c.encode() for c in CIFAR10_CLASSES], b"num_vis": 3072})
    return folder, parts


def test_cifar10_from_the_official_folder_by_name_and_by_path(tmp_path):
    """Training batches then the test batch, rows = pixels / 255 in the files' channel-major order,
    the test part marked, the class names from batches.meta; found by name in the data home."""
    rng = np.random.RandomState(0)
    folder, parts = _cifar10(tmp_path, rng)
    ds = load_dataset("cifar10", data_home=tmp_path)
    data = np.concatenate([parts[s][0] for s in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]])
    assert ds.X.shape == (24, 3072) and np.allclose(ds.X, data / 255.0)
    assert ds.y_true.tolist() == sum((parts[s][1] for s in [f"data_batch_{i}" for i in range(1, 6)]
                                      + ["test_batch"]), [])
    assert ds.meta["test_rows"].tolist() == [False] * 20 + [True] * 4 and ds.meta["image_shape"] == (3, 32, 32)
    assert ds.classes.tolist() == list(CIFAR10_CLASSES) and ds.S is None
    again = load_dataset(folder)
    assert np.array_equal(again.X, ds.X) and np.array_equal(again.y_true, ds.y_true)
    nested = tmp_path / "home"
    (nested / "cifar10").mkdir(parents=True)
    folder.rename(nested / "cifar10" / folder.name)        # one level down is found too
    assert load_dataset("cifar10", data_home=nested).n_samples == 24


def test_cifar100_keeps_its_superclasses_and_refuses_another_class_order(tmp_path):
    rng = np.random.RandomState(1)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    groups = cifar100_class_groups()
    for stem, n in (("train", 6), ("test", 3)):
        fine = rng.randint(0, 100, size=n)
        _dump(folder / stem, {b"data": _images(rng, n), b"fine_labels": fine.tolist(),
                              b"coarse_labels": groups[fine].tolist()})
    names = sorted(c for members in CIFAR100_SUPERCLASSES.values() for c in members)
    _dump(folder / "meta", {b"fine_label_names": [n.encode() for n in names],
                            b"coarse_label_names": [n.encode() for n in CIFAR100_SUPERCLASSES]})
    ds = load_dataset("cifar100", data_home=tmp_path)
    assert ds.X.shape == (9, 3072) and ds.n_classes == 100 and ds.classes.tolist() == names
    assert ds.meta["test_rows"].sum() == 3 and np.array_equal(ds.meta["class_groups"], groups)
    train = pickle.loads((folder / "train").read_bytes())
    train[b"coarse_labels"] = [(c + 1) % 20 for c in train[b"coarse_labels"]]
    _dump(folder / "train", train)
    with pytest.raises(DataValidationError, match="coarse labels are not CIFAR-100's superclasses"):
        load_dataset("cifar100", data_home=tmp_path)


def test_cifar100_superclasses_are_twenty_of_five_in_the_official_order():
    names = [c for members in CIFAR100_SUPERCLASSES.values() for c in members]
    groups = cifar100_class_groups()
    assert len(CIFAR100_SUPERCLASSES) == 20 and len(set(names)) == 100
    assert np.bincount(groups).tolist() == [5] * 20
    order = sorted(names)
    assert groups[order.index("apple")] == 4 and groups[order.index("whale")] == 0   # fruit..., aquatic mammals
    assert groups[order.index("worm")] == 13 and groups[order.index("tractor")] == 19


def test_a_pickle_naming_any_other_callable_is_refused_never_run(tmp_path):
    """The official files are pickles: one that would call a function (os.system) is refused in one
    line, and the function is not called."""
    rng = np.random.RandomState(2)
    folder, _ = _cifar10(tmp_path, rng)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            import os
            return os.system, (f"touch {marker}",)

    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": Evil(), b"labels": []}))
    with pytest.raises(DataValidationError, match=r"data_batch_3.*names (posix|os)\.system") as err:
        load_dataset("cifar10", data_home=tmp_path)
    assert "\n" not in str(err.value) and not marker.exists()


def test_plcifar10_aggregates_the_annotators_sets_as_plench_does(tmp_path):
    """Union of every annotator's set (plcifar10) or the largest one (plcifar10-vaguest), beside
    CIFAR-10's training images; the test images keep their exact labels as one-label sets."""
    rng = np.random.RandomState(3)
    _, parts = _cifar10(tmp_path, rng)
    y = np.concatenate([parts[f"data_batch_{i}"][1] for i in range(1, 6)])
    sets = {i: [[int(y[i])], [int(y[i]), (int(y[i]) + 1) % 10, (int(y[i]) + 2) % 10], [(int(y[i]) + 3) % 10,
                                                                                        int(y[i])]]
            for i in range(20)}
    (tmp_path / "plcifar10").mkdir()
    _dump(tmp_path / "plcifar10" / "plcifar10.pkl", sets)
    union = load_dataset("plcifar10", data_home=tmp_path)
    vague = load_dataset("plcifar10-vaguest", data_home=tmp_path)
    S, V = np.asarray(union.S.todense() if hasattr(union.S, "todense") else union.S), np.asarray(vague.S)
    assert S.shape == (24, 10) and S[:20].sum(axis=1).tolist() == [4] * 20 and V[:20].sum(axis=1).tolist() == [3] * 20
    assert all(S[i, (y[i] + 3) % 10] and not V[i, (y[i] + 3) % 10] for i in range(20))
    assert (S[20:].sum(axis=1) == 1).all() and union.meta["test_rows"][20:].all()
    sets[5] = [[(int(y[5]) + 1) % 10]]                                # an annotator missed the truth
    _dump(tmp_path / "plcifar10" / "plcifar10.pkl", sets)
    with pytest.raises(DataValidationError, match="dataset.noisy=true"):
        load_dataset("plcifar10", data_home=tmp_path)
    assert load_dataset("plcifar10", data_home=tmp_path, noisy=True).meta["noisy"]


@pytest.mark.parametrize("name, where", [("cifar10", "cifar-10-batches-py/"), ("cifar100", "cifar-100-python/"),
                                         ("plcifar10", "plcifar10.pkl")])
def test_a_missing_set_says_where_to_put_what_in_one_line(tmp_path, name, where):
    with pytest.raises(DatasetNotFoundError) as err:
        load_dataset(name, data_home=tmp_path)
    assert where in str(err.value) and "nothing is downloaded" in str(err.value) and "\n" not in str(err.value)


def test_the_shared_cifar10_subset_loads_as_channel_major_rows(image_subsets):
    raw = np.load(image_subsets / "cifar10-subset-a.npz")
    ds = load_dataset(image_subsets / "cifar10-subset-a.npz")
    assert ds.X.shape == (1000, 3072) and ds.meta["image_shape"] == (3, 32, 32)
    assert np.bincount(ds.y_true).tolist() == [100] * 10 and ds.classes.tolist() == list(CIFAR10_CLASSES)
    image = ds.X[7].reshape(3, 32, 32)                                   # channel-major rows
    assert np.allclose(image.transpose(1, 2, 0) * 255, raw["x"][7]) and 0 <= ds.X.min() and ds.X.max() <= 1


def test_an_image_npz_of_another_shape_is_one_line(tmp_path):
    np.savez(tmp_path / "bad.npz", x=np.zeros((4, 28, 28), np.uint8), y=np.zeros(4, np.int64))
    with pytest.raises(DataValidationError, match=r"images must be \(n, 32, 32, 3\) or \(n, 3072\)"):
        load_dataset(tmp_path / "bad.npz")
    np.savez(tmp_path / "floats.npz", x=np.zeros((4, 32, 32, 3)), y=np.zeros(4, np.int64))
    with pytest.raises(DataValidationError, match="unsigned bytes"):
        load_dataset(tmp_path / "floats.npz")


class _Recording:
    """A PL-KNN that records the rows it is fitted on and predicts for (clones share the record)."""

    fitted, predicted = [], []


def test_holdout_on_the_official_split_trains_on_the_training_part_only(tmp_path):
    """protocol.official_split: fitted on the 60 training images, tested on the 12 of CIFAR-10's
    test batch, in every repeat; a data set without a test part is refused in one line."""
    from plcore.exceptions import ConfigError
    from plcore.learners.plknn import PlKnnLearner
    from plcore.registry import get_registry
    from plcore.run.protocols import apply_bags, holdout

    class Knn(PlKnnLearner):
        def fit(self, X, S, **kw):
            _Recording.fitted.append(X.shape[0])
            return super().fit(X, S, **kw)

        def predict(self, X):
            _Recording.predicted.append(X.shape[0])
            return super().predict(X)

    rng = np.random.RandomState(4)
    _cifar10(tmp_path, rng, per_batch=12)
    ds = apply_bags(load_dataset("cifar10", data_home=tmp_path),
                    get_registry().create("bags", "flip", p=0.3, random_state=0), 0)
    _Recording.fitted.clear(), _Recording.predicted.clear()
    seen = []
    holdout(Knn(k=3), ds, official_split=True, n_repeats=2, preprocessing="none", refit=False, progress=False,
            callback=seen.append)
    assert len(seen) == 2 and _Recording.fitted == [60, 60] and set(_Recording.predicted) == {12}
    iris = apply_bags(load_dataset("iris"), get_registry().create("bags", "uniform", r=1, random_state=0), 0)
    with pytest.raises(ConfigError, match="official_split=true needs a data set with its own test part"):
        holdout(PlKnnLearner(), iris, official_split=True, progress=False)
