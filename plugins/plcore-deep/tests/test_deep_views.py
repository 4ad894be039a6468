"""The second views PiCO contrasts (plcore_deep._views): each against a literal version."""

import numpy as np
import pytest
import torch

from plcore_deep import PicoLearner
from plcore_deep import _views as views


def test_identity_is_the_row_itself():
    x = torch.randn(4, 9)
    assert views.make_view("identity")(x, torch.Generator().manual_seed(0)) is x


def test_auto_is_gaussian_for_the_mlp_and_image_shifts_for_lenet():
    assert isinstance(views.make_view("auto", network="mlp"), views.GaussianNoise)
    assert isinstance(views.make_view("auto", network="lenet"), views.ImageShiftFlip)


def test_gaussian_adds_scaled_standard_normal_noise_from_the_generator():
    x = torch.randn(5, 3)
    got = views.make_view("gaussian", noise_scale=0.25)(x, torch.Generator().manual_seed(7))
    want = x + 0.25 * torch.randn(x.shape, generator=torch.Generator().manual_seed(7))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_image_view_is_a_padded_crop_and_a_flip_per_row():
    """Each row, as a side x side image, equals a literal crop of its zero-padded copy at the drawn
    offsets, mirrored where the drawn coin says so."""
    side, pad, n = 12, 4, 6
    x = torch.arange(n * side * side, dtype=torch.float32).reshape(n, side * side)
    got = views.ImageShiftFlip(pad)(x, torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(3)
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    for i in range(n):
        padded = np.pad(x[i].reshape(side, side).numpy(), pad)
        crop = padded[int(dy[i]):int(dy[i]) + side, int(dx[i]):int(dx[i]) + side]
        if flip[i]:
            crop = crop[:, ::-1]
        np.testing.assert_array_equal(got[i].reshape(side, side).numpy(), crop)
    assert bool(flip.any()) and not bool(flip.all()), "the seed must draw both flipped and unflipped rows"


def test_an_unknown_augmentation_is_a_one_line_parameter_error():
    from plcore.exceptions import InvalidParameterError

    X = np.random.RandomState(0).randn(20, 4)
    S = np.ones((20, 3), dtype=bool)
    with pytest.raises(InvalidParameterError, match="augmentation"):
        PicoLearner(augmentation="mixup", n_epochs=1, device="cpu").fit(X, S)
