"""The deep learners' random search spaces are PLENCH's (``plench/core/hparams_registry.py``,
tabular MLP data sets), and ``protocol.select.method=random`` draws from them; ``method=grid``
keeps the shared 4-point grid."""

import math

import pytest

from plcore.data import PLDataset
from plcore.registry import get_registry
from plcore.run.protocols import Setup, kfold
from plcore.testing import make_pl_data

#: PLENCH's random draws, written out from hparams_registry.py (lr, weight_decay, batch_size for
#: MLP_DATASET; then each algorithm's), as (kind, bounds or values) in plcore's parameter names
_LR = ("10**U", (-4.5, -2.5))
_COMMON = {"learning_rate": _LR, "weight_decay": ("10**U", (-6, -3)), "batch_size": ("2**int(U)", (5, 8))}
PLENCH = {
    "proden": _COMMON,
    "rc": _COMMON,  # not in PLENCH: PRODEN's
    "cc": _COMMON,
    "cavl": _COMMON,
    "lws": {**_COMMON, "beta": ("choice", (1, 2))},  # lw_weight
    "pop": {**_COMMON, "window": ("choice", (3, 4, 5, 6, 7)),  # rollWindow
            "warm_up": ("choice", (10, 15, 20)), "theta": _LR, "inc": _LR},
    "pico": {**_COMMON, "feat_dim": ("choice", (64, 128, 256)), "queue_size": ("choice", (4096, 8192)),  # moco_queue
             "moco_m": ("choice", (0.9, 0.999)), "proto_m": ("choice", (0.99, 0.9)),
             "loss_weight": ("choice", (0.5, 1.0))},
    "valen": {**_COMMON, "n_neighbors": ("choice", (3, 4))},  # knn
    "idgp": {**_COMMON, "warm_up": ("choice", (5, 10, 15, 20))},  # warm_up_epoch
    "crdpll": _COMMON,  # its lam fixed at 1
    "able": {**_COMMON, "feat_dim": ("choice", (64, 128, 256)), "loss_weight": ("choice", (0.5, 1.0, 2.0)),
             "temperature": ("choice", (0.03, 0.05, 0.07, 0.09))},
    # momentum, moco_queue, weight, feat_temperature; prot_start (178 steps) fixed
    "dirk": {**_COMMON, "moco_m": ("choice", (0.5, 0.9, 0.99)), "queue_size": ("choice", (4096, 8192)),
             "feat_dim": ("choice", (64, 128, 256)), "loss_weight": ("choice", (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)),
             "dist_temperature": ("choice", (0.2, 0.4, 0.6)), "temperature": ("choice", (0.03, 0.05, 0.07, 0.09))},
    # FREDIS: theta, delta fixed (1e-6, 1.0)
    "fredis": {**_COMMON, "inc": ("choice", (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)),
               "dec": ("choice", (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)), "times": ("choice", (1, 2, 3, 4, 5)),
               "change_size": ("choice", (50, 100, 500, 300, 800, 1000)),
               "update_interval": ("choice", (10, 20)),
               "lam": ("choice", (1, 10)), "alpha": ("choice", (1e-3, 1e-2, 1e-1, 1))},
    # ALIM: PiCO's, then its own; loss_weight_mixup (1.0) and mixup_alpha (4) fixed
    "alim": {**_COMMON, "feat_dim": ("choice", (64, 128, 256)), "queue_size": ("choice", (4096, 8192)),
             "moco_m": ("choice", (0.9, 0.999)), "proto_m": ("choice", (0.99, 0.9)),
             "loss_weight": ("choice", (0.5, 1.0)), "start_epoch": ("choice", (20, 40, 80, 100, 140)),
             "noise_rate": ("choice", (0.1, 0.2, 0.3, 0.4, 0.5, 0.7))},
    # PiCO+: PiCO's, then its own (chosen_neighbors); prot_start and knn_start (steps) fixed
    "pico_plus": {**_COMMON, "feat_dim": ("choice", (64, 128, 256)), "queue_size": ("choice", (4096, 8192)),
                  "moco_m": ("choice", (0.9, 0.999)), "proto_m": ("choice", (0.99, 0.9)),
                  "loss_weight": ("choice", (0.5, 1.0)), "pure_ratio": ("choice", (0.6, 0.8, 0.95, 0.99, 1.0)),
                  "n_neighbors": ("choice", (8, 16)), "temperature_guess": ("choice", (0.1, 0.07)),
                  "ur_weight": ("choice", (0.1, 0.5)), "cls_weight": ("choice", (2, 3, 5))},
    **{name: _COMMON for name in ("exp", "mcl_gce", "mcl_mse", "abs_mae", "abs_gce")},
    # the complementary-label losses; NN's beta fixed
    **{name: _COMMON for name in ("pc", "forward", "nn", "ga", "scl_exp", "scl_nl", "l_w", "op_w")},  # ABS_GCE's q fixed
}
_NAMES = {"log10_uniform": "10**U", "pow2_int": "2**int(U)"}


def _as_table(space):
    out = {}
    for param, value in space.items():
        if isinstance(value, dict):
            ((name, bounds),) = value.items()
            out[param] = (_NAMES[name], tuple(bounds))
        else:
            out[param] = ("choice", tuple(value))
    return out


@pytest.mark.parametrize("name", sorted(PLENCH))
def test_each_learner_declares_plenchs_distributions(name):
    spec = get_registry().get("learner", name).spec
    assert _as_table(spec.search_distributions) == PLENCH[name]


def test_grid_stays_the_shared_four_points():
    for name in PLENCH:
        assert get_registry().get("learner", name).spec.search_space == {
            "learning_rate": [3e-4, 3e-3], "weight_decay": [1e-5, 1e-3]}


def _learner(name, **params):
    return get_registry().get("learner", name).spec.cls(hidden_layer_sizes=(8,), n_epochs=3, device="cpu",
                                                        random_state=0, **params)


def _dataset():
    X, S, y = make_pl_data(n_samples=120, n_classes=3, r=1, random_state=0)
    return PLDataset(X, S, y)


def test_method_random_draws_learning_rate_and_batch_size_inside_plenchs_ranges():
    res = kfold(Setup(learner=_learner("proden")), _dataset(), n_splits=2, refit=False, progress=False,
                select={"method": "random", "n_iter": 3, "cv": 2})
    for step in res.steps:
        assert 10 ** -4.5 <= step["selected.learner.learning_rate"] <= 10 ** -2.5
        assert 10 ** -6 <= step["selected.learner.weight_decay"] <= 10 ** -3
        assert step["selected.learner.batch_size"] in (32, 64, 128)
        # a draw, not a grid point
        assert not any(math.isclose(step["selected.learner.learning_rate"], g) for g in (3e-4, 3e-3))


def test_method_grid_without_space_searches_the_grid_as_before():
    res = kfold(Setup(learner=_learner("lws")), _dataset(), n_splits=2, refit=False, progress=False,
                select={"method": "grid", "cv": 2})
    for step in res.steps:
        assert step["selected.learner.learning_rate"] in (3e-4, 3e-3)
        assert step["selected.learner.weight_decay"] in (1e-5, 1e-3)
        assert "selected.learner.beta" not in step and "selected.learner.batch_size" not in step
