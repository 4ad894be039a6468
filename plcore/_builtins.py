"""Built-in components, registered through the same hook as third-party plugins."""

from __future__ import annotations

from plcore.datasets import bags, loaders
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from plcore.hookspecs import hookimpl
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec

_DATA_HOME = "${oc.env:PLCORE_DATA_HOME,null}"


def _dataset(name, description):
    return ComponentSpec(
        "dataset", name, loaders.load_dataset,
        config={"_target_": "plcore.datasets.load_dataset", "name_or_path": name, "data_home": _DATA_HOME},
        description=description,
    )


@hookimpl
def plcore_report_writers():
    from plcore.report import reproduction_page

    return {"reproduction": reproduction_page}


@hookimpl
def plcore_components():
    from plcore import protocols

    specs = [
        ComponentSpec("learner", "plknn", PlKnnLearner,
                      description="PL-KNN: distance-weighted candidate votes of the k nearest neighbours",
                      search_space={"k": [3, 5, 10, 20]}),
        ComponentSpec("bags", "uniform", bags.UniformBags,
                      config={"_target_": "plcore.datasets.bags.UniformBags", "r": 3, "random_state": None}),
        ComponentSpec("bags", "fixed_size", bags.FixedSizeBags),
        ComponentSpec("bags", "cluster_noisy", bags.ClusterNoisyBags),
        ComponentSpec("bags", "drop_true", bags.DropTrueBags),
    ]
    for name in loaders.SKLEARN_DATASETS:
        specs.append(_dataset(name, f"scikit-learn embedded data set {name} (exact labels)"))
    for name in loaders.PALM_DATASETS:
        specs.append(_dataset(name, f"PALM partial-label data set {name} (.mat in the data home)"))
    for name in loaders.UCI_DATASETS:
        specs.append(_dataset(name, f"UCI data set {name} (.arff in the data home; exact labels)"))
    specs.append(ComponentSpec(
        "dataset", "file", loaders.load_dataset,
        config={"_target_": "plcore.datasets.load_dataset", "name_or_path": "???", "data_home": _DATA_HOME},
        description="any .mat/.arff/.csv/.npz file: dataset=file dataset.name_or_path=PATH"))
    for name, spec in protocols.PROTOCOLS.items():
        specs.append(ComponentSpec("protocol", name, spec, config=spec.config(),
                                   description=(spec.function.__doc__ or "").strip().splitlines()[0]))
    specs += [
        ComponentSpec("preprocessor", "standardize", StandardScaler,
                      description="z-score every feature (scikit-learn StandardScaler)"),
        ComponentSpec("preprocessor", "minmax", MinMaxScaler,
                      description="scale every feature to [0, 1] (scikit-learn MinMaxScaler)"),
        ComponentSpec("preprocessor", "isotropic", protocols.IsotropicScaler,
                      description="centre, divide all features by one RMS (neighbours unchanged)"),
    ]
    return specs
