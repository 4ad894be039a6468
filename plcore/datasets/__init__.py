"""Data-set loaders and bag generators (imported on first use: see :mod:`plcore.utils`)."""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports
from plcore.datasets.catalog import IDX_DATASETS, PALM_DATASETS, SKLEARN_DATASETS, UCI_DATASETS
from plcore.datasets.formats import FORMATS, TableOptions

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore.datasets.bags import (ClusterNoisyBags, DropTrueBags, FixedSizeBags, FlipBags, InstanceDependentBags,
                                      NoisyBags, UniformBags, UniformSetBags)
    from plcore.datasets.loaders import (find_dataset_file, find_idx_folder, get_data_home, load_arff, load_csv,
                                         load_dataset, load_idx, load_npz, load_palm, load_parquet, load_sklearn,
                                         load_splits, read_table)

__all__ = [
    "ClusterNoisyBags", "DropTrueBags", "FixedSizeBags", "FlipBags", "InstanceDependentBags", "NoisyBags",
    "UniformBags", "UniformSetBags",
    "IDX_DATASETS", "PALM_DATASETS", "SKLEARN_DATASETS", "UCI_DATASETS", "FORMATS", "TableOptions",
    "find_dataset_file", "find_idx_folder", "get_data_home", "load_arff", "load_csv", "load_dataset",
    "load_idx", "load_npz", "load_palm", "load_parquet", "load_sklearn", "load_splits", "read_table", "read_tables",
]

__getattr__, __dir__ = lazy_exports(globals(), {
    **dict.fromkeys(("ClusterNoisyBags", "DropTrueBags", "FixedSizeBags", "FlipBags", "InstanceDependentBags",
                     "NoisyBags", "UniformBags", "UniformSetBags"), "plcore.datasets.bags"),
    **dict.fromkeys(("find_dataset_file", "find_idx_folder", "get_data_home", "load_arff", "load_csv",
                     "load_dataset", "load_idx", "load_npz", "load_palm", "load_parquet", "load_sklearn",
                     "load_splits", "read_table", "read_tables"),
                    "plcore.datasets.loaders"),
})
