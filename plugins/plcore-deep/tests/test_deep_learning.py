"""Learning where the answer is known: digits with uniform bags of r = 3 false positives."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from plcore.datasets.bags import UniformBags
import plcore_deep
from plcore_deep.plugin import LEARNER_OPTIONS

#: option name -> class (the plugin's option table, plugin.py)
LEARNERS = {option: getattr(plcore_deep, path.split(":")[1]) for option, path in LEARNER_OPTIONS.items()}


@pytest.fixture(scope="module")
def digits_r3():
    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=3).generate(y, random_state=0)
    X_tr, X_te, S_tr, _, y_tr, y_te = train_test_split(X, S, y, test_size=0.25, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), S_tr, y_tr, scaler.transform(X_te), y_te


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_learns_digits_with_three_false_positives_per_bag(name, digits_r3):
    X_tr, S_tr, y_tr, X_te, y_te = digits_r3
    est = LEARNERS[name](device="cpu", random_state=0).fit(X_tr, S_tr)   # the defaults
    acc = float(np.mean(est.predict(X_te) == y_te))
    assert acc >= 0.90, f"{name}: held-out accuracy {acc:.3f} on digits, r = 3 (chance 0.10)"
    # disambiguation: the confidences' argmax is the true label on most training rows
    disambiguated = float(np.mean(np.argmax(est.confidences_, axis=1) == y_tr))
    assert disambiguated >= 0.95, f"{name}: training rows disambiguated {disambiguated:.3f}"
