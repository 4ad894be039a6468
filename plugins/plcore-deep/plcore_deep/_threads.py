"""How many CPU threads a deep fit trains on (the learners' ``n_threads="auto"``).

PyTorch starts one intra-op thread per physical core (or ``OMP_NUM_THREADS``). A step of the
small networks and batches of tabular partial-label learning is mostly per-call overhead,
which more threads do not shorten, and two fits that each start a thread per core
oversubscribe the machine: their threads spin instead of working (issue 44: two published-MLP
fits on lost side by side on 2 cores, PyTorch's default threads, did not finish a split in
300 s; one alone takes 42 s). ``"auto"`` therefore trains on one thread when a step's
arithmetic is below :data:`SMALL_STEP_FLOPS`, and otherwise on the cores this process may use:
its CPU affinity, capped by ``OMP_NUM_THREADS`` where set (joblib's workers, the launchers'
workers and plcore's own split workers set it to their share). The threshold is measured by
``benchmarks/deep_threads.py``; on CUDA the count is left as it is.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

__all__ = ["SMALL_STEP_FLOPS", "step_flops", "available_cores", "choose_threads", "torch_threads"]

#: a step below this many floating-point operations trains on one thread (benchmarks/deep_threads.py)
SMALL_STEP_FLOPS = 2e8


def _macs_per_row(network: str, n_features: int, n_classes: int, hidden: tuple) -> int:
    """Multiply-adds of one row's forward pass (linear and convolution layers)."""
    if network == "lenet":
        from plcore_deep._networks import lenet_side

        side = lenet_side(n_features)
        pooled = side // 2 - 4                               # after the second 5x5 convolution
        flat = 16 * (pooled // 2) ** 2
        return (side * side * 6 * 25 + pooled * pooled * 16 * 6 * 25
                + flat * 120 + 120 * 84 + 84 * n_classes)
    from plcore_deep._image_networks import IMAGE_NETWORKS, image_macs

    if network in IMAGE_NETWORKS:
        return image_macs(network, n_features)
    widths = (n_features, *hidden, n_classes)
    return sum(a * b for a, b in zip(widths, widths[1:]))


def step_flops(network: str, n_features: int, n_classes: int, hidden: tuple, batch_size: int) -> float:
    """Floating-point operations of one training step: forward (2 per multiply-add) and
    backward (twice the forward), for ``batch_size`` rows."""
    return 6.0 * _macs_per_row(network, n_features, n_classes, tuple(hidden)) * batch_size


def available_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by ``OMP_NUM_THREADS`` where set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    if limit.isdigit() and int(limit) >= 1:
        cores = min(cores, int(limit))
    return max(1, cores)


def choose_threads(n_threads, flops: float) -> int:
    """``n_threads`` as given, or for ``"auto"`` one thread below :data:`SMALL_STEP_FLOPS` and
    :func:`available_cores` above."""
    if n_threads != "auto":
        return int(n_threads)
    return 1 if flops < SMALL_STEP_FLOPS else available_cores()


@contextmanager
def torch_threads(n: int):
    """PyTorch's intra-op threads set to ``n`` for the block, restored after."""
    import torch

    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != before:
            torch.set_num_threads(before)
