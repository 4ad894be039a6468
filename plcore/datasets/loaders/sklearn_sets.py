"""scikit-learn's embedded data sets (iris, wine, breast_cancer, digits): no file, no data home."""

from __future__ import annotations

import numpy as np

from plcore.data import PLDataset
from plcore.datasets.catalog import SKLEARN_DATASETS
from plcore.exceptions import DataValidationError


def load_sklearn(name: str) -> PLDataset:
    """One of scikit-learn's embedded data sets: iris, wine, breast_cancer, digits."""
    from sklearn import datasets

    if name not in SKLEARN_DATASETS:
        raise DataValidationError(f"unknown scikit-learn data set {name!r}; choose from {SKLEARN_DATASETS}")
    bunch = getattr(datasets, f"load_{name}")()
    classes = np.asarray(getattr(bunch, "target_names", np.unique(bunch.target)))
    return PLDataset(bunch.data, None, bunch.target, classes, name, {"source": f"sklearn.datasets.load_{name}"})
