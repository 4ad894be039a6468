"""The CIFAR networks and image views (plcore_deep._image_networks, _image_views), and every deep
learner fitting a few steps on real CIFAR-10 images (../shared/datasets/images) on the CPU."""

import numpy as np
import pytest
import torch
from PIL import Image, ImageEnhance, ImageOps

from plcore_deep._image_networks import ImageInput, build_image_network, set_input_statistics
from plcore_deep._image_views import StrongView, WeakView, _op
from plcore_deep._views import make_view



@pytest.mark.parametrize("name, n_params", [("resnet18", 11_173_962), ("wrn28_2", 1_467_610),
                                            ("resnet32", 466_906)])
def test_each_backbone_has_its_papers_size_and_shape(name, n_params):
    """Parameter counts of the published architectures for 10 classes (ResNet-18 CIFAR 11.17 M,
    WRN-28-2 1.47 M, ResNet-32 0.47 M): a block, width or stage wrong changes them."""
    torch.manual_seed(0)
    model = build_image_network(name, 3072, 10).eval()
    assert sum(p.numel() for p in model.parameters()) == n_params
    assert model(torch.rand(2, 3072)).shape == (2, 10)


def test_the_input_layer_standardises_each_channel_by_the_training_images():
    torch.manual_seed(1)
    X = torch.rand(64, 3072) * torch.tensor([0.5, 1.0, 0.2]).repeat_interleave(1024)
    layer = ImageInput(3072)
    set_input_statistics(torch.nn.Sequential(layer), X)
    out = layer(X)
    assert out.shape == (64, 3, 32, 32)
    assert torch.allclose(out.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    assert torch.allclose(out.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-3)


def test_the_weak_view_is_a_padded_crop_and_a_flip_of_each_colour_image():
    """Against the textbook per-image version: pad by 4 with zeros, crop at (dy, dx), flip."""
    x = torch.rand(6, 3 * 8 * 8)
    out = WeakView((3, 8, 8))(x, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    dy, dx = torch.randint(0, 9, (6,), generator=g), torch.randint(0, 9, (6,), generator=g)
    flip = torch.rand(6, generator=g) < 0.5
    for i in range(6):
        padded = torch.nn.functional.pad(x[i].reshape(3, 8, 8), (4, 4, 4, 4))
        crop = padded[:, dy[i]:dy[i] + 8, dx[i]:dx[i] + 8]
        expected = crop.flip(2) if flip[i] else crop
        assert torch.equal(out[i].reshape(3, 8, 8), expected)


def _pil(image):
    return Image.fromarray((image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8))


def _back(pil):
    return torch.from_numpy(np.asarray(pil, dtype=np.float32) / 255).permute(2, 0, 1)


@pytest.mark.parametrize("name, v, pil", [
    ("brightness", 0.6, lambda im, v: ImageEnhance.Brightness(im).enhance(v)),
    ("color", 0.3, lambda im, v: ImageEnhance.Color(im).enhance(v)),
    ("contrast", 0.4, lambda im, v: ImageEnhance.Contrast(im).enhance(v)),
    ("sharpness", 0.2, lambda im, v: ImageEnhance.Sharpness(im).enhance(v)),
    ("solarize", 100.0, lambda im, v: ImageOps.solarize(im, v)),
    ("posterize", 5.0, lambda im, v: ImageOps.posterize(im, int(v))),
    ("auto_contrast", 0.0, lambda im, v: ImageOps.autocontrast(im)),
    ("equalize", 0.0, lambda im, v: ImageOps.equalize(im)),
    ("translate_x", 0.25, lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, v * im.size[0], 0, 1, 0))),
    ("shear_y", 0.3, lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, 0, v, 1, 0), Image.BILINEAR)),
])
def test_each_rand_augment_operation_is_pils(name, v, pil):
    """Each operation on float images against PIL's, which the authors' pipelines call: within
    two levels of 255 on most pixels (PIL rounds in bytes; the shear is compared with PIL's bilinear
    sampling, which ours is, where the authors' take PIL's default nearest pixel)."""
    rng = np.random.RandomState(0)
    base = rng.randint(0, 256, size=(16, 16, 3)).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(base).resize((32, 32), Image.BILINEAR))   # some structure
    image = torch.from_numpy(smooth.astype(np.float32) / 255).permute(2, 0, 1)
    ours = _op(name, image[None], torch.tensor([v]))[0]
    theirs = _back(pil(_pil(image), v))
    close = (ours - theirs).abs() <= 2.5 / 255
    share = 0.9 if name in ("translate_x", "shear_y", "equalize") else 0.99
    assert close.float().mean() >= share, f"{name}: {close.float().mean():.3f} of the pixels within 2 levels"


def test_the_strong_view_is_seeded_in_range_and_differs_per_image():
    x = torch.rand(8, 3072)
    view = make_view("auto", network="resnet18")
    assert isinstance(view, StrongView)
    a = view(x, torch.Generator().manual_seed(4))
    b = view(x, torch.Generator().manual_seed(4))
    c = view(x, torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == x.shape
    assert a.min() >= 0 and a.max() <= 1
    same = torch.cat([x[:1]] * 8)
    out = view(same, torch.Generator().manual_seed(6))
    assert len({tuple(row[:64].tolist()) for row in out}) == 8      # each image drawn on its own


def _subset(folder, n=96, p=0.3):
    from plcore.datasets import load_dataset
    from plcore.registry import get_registry
    from plcore.run.protocols import apply_bags
    from plcore.utils import dense_candidates

    ds = load_dataset(folder / "cifar10-subset-a.npz")
    rows = np.random.RandomState(0).permutation(ds.n_samples)[:n]
    ds = apply_bags(ds.subset(rows), get_registry().create("bags", "flip", p=p, random_state=0), 0)
    return ds.X, dense_candidates(ds.S), ds.y_true


def _deep_learners():
    from plcore.registry import get_registry

    registry = get_registry()
    return sorted(c.name for c in registry.components.values()
                  if c.kind == "learner" and c.distribution == "plcore-deep")


@pytest.mark.parametrize("name", _deep_learners())
def test_every_deep_learner_fits_a_few_steps_on_cifar10_images(name, image_subsets):
    """Every deep learner with PLENCH's ResNet-32 on 96 real CIFAR-10 images (flip p = 0.3), three
    steps of 32: it fits, its probabilities are rows that sum to 1, its confidences stay on the sets."""
    from plcore.registry import get_registry

    X, S, _ = _subset(image_subsets)
    est = get_registry().create("learner", name)
    est.set_params(network="resnet32", n_epochs=1, batch_size=32, device="cpu", random_state=0)
    est.fit(X, S)
    proba = est.predict_proba(X[:10])
    assert proba.shape == (10, 10) and np.allclose(proba.sum(axis=1), 1)
    conf = np.asarray(est.confidences_)
    assert np.allclose(conf.sum(axis=1), 1) and not (conf[~S] > 1e-6).any()


def test_a_resnet_learns_where_the_answer_is_known_and_survives_saving(image_subsets):
    """Real CIFAR-10 images, the class made visible: class k has its channel k brightened by 0.4.
    PRODEN on ResNet-32, 150 training images with flip sets (p = 0.3), 8 epochs: the 60 held-out
    images are classified far above chance (1/3); the network stored as plain arrays (its input
    statistics too) gives the same probabilities."""
    import pickle

    from plcore_deep import ProdenLearner

    X, _, _ = _subset(image_subsets, n=210)
    k = np.arange(210) % 3
    images = X.reshape(210, 3, 1024).copy()
    images[np.arange(210), k] = np.clip(images[np.arange(210), k] + 0.4, 0, 1)
    X = images.reshape(210, -1)
    rng = np.random.RandomState(1)
    S = (rng.random_sample((210, 3)) < 0.3) | np.eye(3, dtype=bool)[k]
    est = ProdenLearner(network="resnet32", n_epochs=8, batch_size=30, learning_rate=3e-3, device="cpu",
                        random_state=0).fit(X[:150], S[:150])
    assert np.mean(est.predict(X[150:]) == k[150:]) > 0.8
    again = pickle.loads(pickle.dumps(est))
    assert np.allclose(again.predict_proba(X[150:160]), est.predict_proba(X[150:160]))
    assert any(name.endswith("mean") for name in est.__getstate__()["network_"]["weights"])


def test_instance_dependent_sets_from_an_image_network_helper(image_subsets):
    """VALEN's and PLENCH's CIFAR recipe: the helper a ResNet-32 trained on the true labels of 96
    real CIFAR-10 images (CC's loss on singleton sets: cross-entropy); the generator's probabilities
    are the recipe applied to that network's own (the same seed, fitted apart), every truth is in its
    set, labels the network confuses join more often, and the same seed gives the same sets."""
    from sklearn.base import clone

    from plcore.datasets import InstanceDependentBags
    from plcore_deep import CcLearner

    X, _, y = _subset(image_subsets)
    helper = CcLearner(network="resnet32", n_epochs=1, batch_size=48, device="cpu", random_state=0)
    gen = InstanceDependentBags(rate=0.4, estimator=helper, random_state=0)
    S = gen.generate(y, X, n_classes=10)
    assert S[np.arange(y.size), y].all() and S.sum(axis=1).mean() > 1.5
    seen = np.unique(y)
    p = np.zeros((y.size, 10))
    p[:, seen] = clone(helper).fit(X, np.eye(10, dtype=bool)[y][:, seen]).predict_proba(X)
    p[np.arange(y.size), y] = 0.0
    p /= p.max(axis=1, keepdims=True)
    np.testing.assert_allclose(gen.probabilities_, np.minimum(1.0, 0.4 * p / p.mean(axis=1, keepdims=True)),
                               atol=1e-6)
    drawn = S.copy()
    drawn[np.arange(y.size), y] = False
    assert gen.probabilities_[drawn].mean() > gen.probabilities_[~drawn & (gen.probabilities_ > 0)].mean()
    again = InstanceDependentBags(rate=0.4, estimator=helper, random_state=0).generate(y, X, n_classes=10)
    np.testing.assert_array_equal(S, again)
