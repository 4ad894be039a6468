"""The networks the deep learners train (PyTorch): an MLP or linear model, LeNet-5, the CIFAR
backbones (:mod:`plcore_deep._image_networks`), and how a fitted one is stored (architecture +
NumPy weights) and applied in batches."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = ["NETWORKS", "make_network", "build_network", "build_lenet", "Twin", "lenet_side", "resolve_device",
           "network_state", "network_from_state", "predict_logits"]


#: the values of a learner's ``network``
NETWORKS = ("mlp", "lenet", "resnet18", "wrn28_2", "resnet32")


def make_network(network: str, n_features: int, n_classes: int, hidden_layer_sizes=(), batch_norm=False) -> nn.Module:
    """The network ``network`` (:data:`NETWORKS`) for rows of ``n_features`` and ``n_classes``
    outputs; ``hidden_layer_sizes`` and ``batch_norm`` shape the MLP only."""
    from plcore_deep._image_networks import IMAGE_NETWORKS, build_image_network

    if network == "lenet":
        return build_lenet(n_features, n_classes)
    if network in IMAGE_NETWORKS:
        return build_image_network(network, n_features, n_classes)
    return build_network(n_features, n_classes, tuple(hidden_layer_sizes), bool(batch_norm))


def build_network(n_features: int, n_classes: int, hidden_layer_sizes, batch_norm: bool = False) -> nn.Sequential:
    """``Linear -> ReLU`` per hidden layer (``Linear -> ReLU -> BatchNorm1d`` with ``batch_norm``,
    the order of the field's tabular MLP, Fuchs & Kalinke's ``models/mlp.py``), then a linear
    output layer (no hidden layer: the linear model). PyTorch's default initialisation, drawn
    from the global generator."""
    layers, width = [], n_features
    for size in hidden_layer_sizes:
        layers += [nn.Linear(width, int(size)), nn.ReLU()] + ([nn.BatchNorm1d(int(size))] if batch_norm else [])
        width = int(size)
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


class Twin(nn.Module):
    """Two networks whose predictions are averaged (CroSel): the output is ``log((softmax(f_1) +
    softmax(f_2)) / 2)``, so its softmax (and argmax) is the mean of the two posteriors."""

    def __init__(self, first: nn.Module, second: nn.Module):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x):
        both = torch.stack([torch.log_softmax(self.first(x), dim=1), torch.log_softmax(self.second(x), dim=1)])
        return torch.logsumexp(both, dim=0) - math.log(2)


def _build(arch: dict) -> nn.Module:
    """The network an ``architecture`` dict describes (:func:`network_state`)."""
    return make_network(arch["network"], arch["n_features"], arch["n_classes"], arch["hidden_layer_sizes"],
                        arch["batch_norm"])


def lenet_side(n_features: int) -> int:
    """The side of the square one-channel images a LeNet takes from rows of ``n_features`` pixels;
    a ``ValueError`` when they are not such images (at least 12 x 12)."""
    side = math.isqrt(int(n_features))
    if side * side != n_features or side < 12:
        raise ValueError(f"network='lenet' needs rows of square one-channel images of at least 12 x 12 pixels "
                         f"(d = side^2, e.g. 784 for 28 x 28), got d={n_features}")
    return side


def build_lenet(n_features: int, n_classes: int) -> nn.Sequential:
    """LeNet-5 (LeCun et al. 1998) on rows of ``side x side`` pixels, as deep-PLL papers train on
    (Fashion-/K-)MNIST: 5x5 conv (6, padding 2) -> ReLU -> 2x2 max-pool -> 5x5 conv (16) -> ReLU
    -> 2x2 max-pool -> 120 -> 84 -> ``n_classes``, ReLU between (28 x 28: 16 * 5 * 5 = 400 inputs to
    the first linear layer)."""
    side = lenet_side(n_features)
    flat = 16 * ((side // 2 - 4) // 2) ** 2
    return nn.Sequential(nn.Unflatten(1, (1, side, side)),
                         nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, n_classes))


def resolve_device(device: str) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; ``"cuda"`` without CUDA is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but PyTorch sees no CUDA device "
                         f"(torch {torch.__version__}); use device='cpu' or 'auto'")
    return torch.device(device)


def network_state(model: nn.Module, architecture: dict) -> dict:
    """A fitted network as plain data: its ``architecture`` (the arguments of
    :func:`build_network` / :func:`build_lenet`) and its weights as NumPy arrays. A learner is
    written this way (skops, a logged model's format, holds no PyTorch object)."""
    return {"architecture": dict(architecture),
            "weights": {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}}


def network_from_state(state: dict) -> nn.Module:
    """The float64 network of :func:`network_state`, in eval mode, with the same weights (the
    global PyTorch generator is left as it was)."""
    arch = state["architecture"]
    with torch.random.fork_rng(devices=[]):
        model = Twin(_build(arch), _build(arch)) if arch.get("twin") else _build(arch)
    model = model.double()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state["weights"].items()})
    return model.eval()


@torch.no_grad()
def predict_logits(model: nn.Module, X: np.ndarray, device: torch.device, batch_size: int = 8192) -> np.ndarray:
    """The float64 outputs of ``model`` for ``X``, in batches on ``device``, in the model's float
    type (a fitted network is float64 on the CPU; one in training, float32 on its device, is
    left there)."""
    weight = next(model.parameters())
    home = weight.device
    model = model.to(device)
    X = np.asarray(X, dtype=np.float64)
    Xt = torch.as_tensor(X if X.flags.writeable else X.copy()).to(weight.dtype)  # PyTorch warns on read-only
    out = [model(Xt[i:i + batch_size].to(device)).cpu() for i in range(0, X.shape[0], batch_size)]
    model.to(home)
    if not out:
        return np.empty((0, [m for m in model.modules() if isinstance(m, nn.Linear)][-1].out_features))
    return torch.cat(out).double().numpy()
