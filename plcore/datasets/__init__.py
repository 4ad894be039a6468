"""Data-set loaders and bag generators."""

from plcore.datasets.bags import ClusterNoisyBags, DropTrueBags, FixedSizeBags, UniformBags
from plcore.datasets.loaders import (
    PALM_DATASETS,
    SKLEARN_DATASETS,
    UCI_DATASETS,
    find_dataset_file,
    get_data_home,
    load_arff,
    load_csv,
    load_dataset,
    load_npz,
    load_palm,
    load_sklearn,
    load_splits,
)

__all__ = [
    "ClusterNoisyBags", "DropTrueBags", "FixedSizeBags", "UniformBags",
    "PALM_DATASETS", "SKLEARN_DATASETS", "UCI_DATASETS",
    "find_dataset_file", "get_data_home", "load_arff", "load_csv", "load_dataset",
    "load_npz", "load_palm", "load_sklearn", "load_splits",
]
