"""Built-in components, registered through the same hook as third-party plugins.

Every component is declared by its import path with its config node and description, so
that listing and composing import none of them (:class:`plcore.registry.ComponentSpec`).
"""

from __future__ import annotations

from plcore.datasets.catalog import CIFAR_DATASETS, IDX_DATASETS, PALM_DATASETS, SKLEARN_DATASETS, UCI_DATASETS
from plcore.datasets.formats import TableOptions, suffixes
from plcore.registry.hookspecs import hookimpl
from plcore.run.defaults import PROTOCOL_DEFAULTS, PROTOCOL_DESCRIPTIONS, protocol_defaults
from plcore.registry import ComponentSpec

_DATA_HOME = "${oc.env:PLCORE_DATA_HOME,null}"
_LOADER = "plcore.datasets.loaders:load_dataset"


def _dataset(name, description, **options):
    return ComponentSpec(
        "dataset", name, _LOADER,
        config={"_target_": "plcore.datasets.load_dataset", "name_or_path": name, "data_home": _DATA_HOME,
                "class_coverage": None, **options},
        description=description,
    )


#: data sets that carry candidate sets: a true label outside them is refused unless noisy=true
_NOISY = {"noisy": False}
#: how a CSV or Parquet file holds its labels (docs/own_data.md): exact labels in the last column
#: by default; candidate sets only when named (the defaults of TableOptions, written there once)
_TABLE = TableOptions().labels()


@hookimpl
def plcore_report_writers():
    return {"reproduction": "plcore.run.report:reproduction_page", "summary": "plcore.run.report:summary_page",
            "plench_table": "plcore.run.plench_report:plench_table"}


@hookimpl
def plcore_components():
    bags = "plcore.datasets.bags"
    specs = [
        ComponentSpec("learner", "plknn", "plcore.learners.plknn:PlKnnLearner", display_name="PL-KNN",
                      config={"k": 10, "metric": "euclidean", "n_jobs": None, "weights": "linear"},
                      description="PL-KNN: distance-weighted candidate votes of the k nearest neighbours",
                      search_space={"k": [3, 5, 10, 20]}),
        ComponentSpec("learner", "conformal_sets", "plcore.prediction_sets:ConformalSetLearner",
                      display_name="Conformal sets",
                      config={"alpha": 0.1, "calibration_fraction": 0.2, "estimator": None, "random_state": None},
                      description="split-conformal prediction sets (predict_set) around a scored learner "
                                  "(learner.estimator=<learner name>; default PL-KNN), calibrated on candidate sets",
                      leaderboard=False),
        ComponentSpec("bags", "uniform", f"{bags}:UniformBags",
                      config={"_target_": "plcore.datasets.bags.UniformBags", "r": 1, "random_state": None},
                      config_overrides={"r": 3},  # the papers' protocol (Cour et al.): three false positives
                      description="True label plus ``r`` distinct false positives drawn uniformly (Cour et al. protocol)."),
        ComponentSpec("bags", "fixed_size", f"{bags}:FixedSizeBags", config={"random_state": None, "s": 2},
                      description="Bags of exactly ``s`` labels: the true one plus ``s - 1`` random others (online paper)."),
        ComponentSpec("bags", "cluster_noisy", f"{bags}:ClusterNoisyBags",
                      config={"eta": 0.0, "n_clusters": 5, "random_state": None},
                      description="Instance-dependent noisy bags of the PL A-kNN paper (section 4.1)."),
        ComponentSpec("bags", "drop_true", f"{bags}:DropTrueBags", config={"eta": 0.1, "random_state": None},
                      description="Label noise for real PLL data: remove the true label from a bag with "
                                  "probability ``eta``."),
        ComponentSpec("bags", "noisy", f"{bags}:NoisyBags", config={"eta": 0.2, "q": 0.1, "random_state": None},
                      description="Noisy partial labels as PiCO+ draws them: each false label joins with "
                                  "probability ``q``, the true label is left out with probability ``eta``."),
        ComponentSpec("bags", "flip", f"{bags}:FlipBags", config={"p": 0.3, "random_state": None},
                      description="Each false label joins the bag independently with probability ``p`` "
                                  "(deep-PLL benchmarks)."),
        ComponentSpec("bags", "hierarchical", f"{bags}:HierarchicalBags",
                      config={"p": 0.5, "groups": "cifar100", "random_state": None},
                      description="Each false label of the true label's superclass joins with probability ``p`` "
                                  "(PiCO's CIFAR-100-H; ``groups``: cifar100, one group per class, or a count).",
                      test_params={"groups": 2}),
        ComponentSpec("bags", "instance_dependent", f"{bags}:InstanceDependentBags",
                      config={"hidden_layer_sizes": (64,), "max_iter": 100, "rate": 0.4, "estimator": None,
                              "random_state": None},
                      description="Instance-dependent bags (VALEN/POP recipe): false labels a helper network "
                                  "confuses with the true one, at ``rate`` (``estimator``: the helper, a learner's "
                                  "name or node; default an MLP)."),
        ComponentSpec("bags", "uniform_sets", f"{bags}:UniformSetBags", config={"random_state": None},
                      description="A bag drawn uniformly from the sets that contain the true label (RC/CC, "
                                  "Feng et al. 2020)."),
    ]
    for name in SKLEARN_DATASETS:
        specs.append(_dataset(name, f"scikit-learn embedded data set {name} (exact labels)"))
    for name in PALM_DATASETS:
        specs.append(_dataset(name, f"PALM partial-label data set {name} (.mat in the data home)", **_NOISY))
    for name in UCI_DATASETS:
        specs.append(_dataset(name, f"UCI data set {name} (.arff in the data home; exact labels)"))
    for name, info in IDX_DATASETS.items():
        specs.append(_dataset(name, f"image data set {name} (IDX files: Debian's {info['package']} or the data "
                                    f"home; exact labels)"))
    for name, info in CIFAR_DATASETS.items():
        what = (f"PLENCH's human candidate sets ({info['aggregation']}) on CIFAR-10's images" if "file" in info
                else "exact labels")
        specs.append(_dataset(name, f"image data set {name} ({info['folder']}/ in the data home, or "
                                    f"dataset.name_or_path=an .npz of x and y; {what})",
                              **(_NOISY if "file" in info else {})))
    specs.append(ComponentSpec(
        "dataset", "file", _LOADER,
        config={"_target_": "plcore.datasets.load_dataset", "name_or_path": "???", "data_home": _DATA_HOME,
                "class_coverage": None, **_TABLE, **_NOISY, "categorical": TableOptions().categorical},
        description=f"any {'/'.join(suffixes())} file: dataset=file dataset.name_or_path=PATH"))
    for name in PROTOCOL_DEFAULTS:
        specs.append(ComponentSpec("protocol", name, f"plcore.run.protocols:PROTOCOLS.{name}",
                                   config={"name": name, **protocol_defaults(name)},
                                   description=PROTOCOL_DESCRIPTIONS[name]))
    specs += [
        ComponentSpec("preprocessor", "standardize", "sklearn.preprocessing:StandardScaler",
                      description="z-score every feature (scikit-learn StandardScaler)"),
        ComponentSpec("preprocessor", "minmax", "sklearn.preprocessing:MinMaxScaler",
                      description="scale every feature to [0, 1] (scikit-learn MinMaxScaler)"),
        ComponentSpec("preprocessor", "isotropic", "plcore.preprocessing:IsotropicScaler",
                      description="centre, divide all features by one RMS (neighbours unchanged)"),
        ComponentSpec("preprocessor", "minmax_nonconstant", "plcore.preprocessing:MinMaxNonConstant",
                      description="drop constant features, scale the others to [0, 1] (the deep-PLL tabular recipe)"),
    ]
    return specs
