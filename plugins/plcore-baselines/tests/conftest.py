"""Shared fixtures of the plcore-baselines tests."""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


@pytest.fixture(scope="session")
def digits_r2():
    """digits with uniform bags r=2, a 70/30 split z-scored on the training part, and the
    candidate-frequency baseline (predict the label most frequent in the training candidate sets)."""
    from plcore.datasets import UniformBags, load_dataset

    ds = load_dataset("digits")
    S = UniformBags(r=2, random_state=0).generate(ds.y_true)
    Xtr, Xte, Str, _, _, yte = train_test_split(ds.X, S, ds.y_true, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return SimpleNamespace(Xtr=sc.transform(Xtr), Xte=sc.transform(Xte), Str=Str, yte=yte,
                           baseline=float(np.mean(yte == np.argmax(Str.sum(axis=0)))))


@pytest.fixture(scope="session")
def lost_fold(data_home):
    """Lost, the first of 10 shuffled folds (seed 0), z-scored on its training part."""
    from sklearn.model_selection import KFold

    from plcore.datasets import load_dataset
    from plcore.utils import dense_candidates

    ds = load_dataset("lost", data_home=data_home)
    S = dense_candidates(ds.S)
    tr, te = next(KFold(10, shuffle=True, random_state=0).split(ds.X))
    sc = StandardScaler().fit(ds.X[tr])
    return SimpleNamespace(Xtr=sc.transform(ds.X[tr]), Xte=sc.transform(ds.X[te]), Str=S[tr],
                           yte=ds.y_true[te])
