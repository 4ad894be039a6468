"""Digest of every registered estimator's outputs on fixed inputs (a restructuring must not change them).

    python scripts/output_digest.py > before.txt   # ... change the code ...
    python scripts/output_digest.py > after.txt && diff before.txt after.txt

Each component is built with its conformance-test settings (``ComponentSpec.test_params``), fitted
on one fixed blob data set with uniform candidate sets, and every output it has (predict,
predict_proba, decision_function, transform, labels_, confidences_, generate; a preprocessor's
fit_transform and transform) is hashed
byte for byte (SHA-256 of the array's dtype, shape and bytes).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import warnings

import numpy as np
from sklearn.datasets import make_blobs

from plcore.registry import ESTIMATOR_KINDS, get_registry


def _digest(a) -> str:
    a = np.ascontiguousarray(np.asarray(a))
    h = hashlib.sha256(f"{a.dtype}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:16]


def _data():
    X, y = make_blobs(n_samples=90, centers=3, n_features=6, random_state=0, cluster_std=2.0)
    rng = np.random.default_rng(0)
    S = np.zeros((90, 4), dtype=bool)
    S[np.arange(90), y] = True
    S |= rng.random((90, 4)) < 0.3
    return X, y, S


def outputs(kind: str, est, X, y, S) -> dict:
    if kind == "bags":
        sig = inspect.signature(est.generate).parameters
        kw = {"X": X} if "X" in sig else {}
        return {"generate": est.generate(y, **kw)}
    if kind == "preprocessor":
        return {"fit_transform": est.fit_transform(X), "transform": est.fit(X).transform(X)}
    if kind == "clusterer":
        S_c = S.copy()
        S_c[::3] = True  # unlabelled rows: all ones
        return {"labels_": est.fit(X, S_c).labels_}
    est.fit(X, S)
    out = {}
    for name in ("predict", "predict_proba", "decision_function", "transform"):
        if hasattr(est, name):
            try:
                out[name] = getattr(est, name)(X)
            except (AttributeError, NotImplementedError):
                pass
    if hasattr(est, "confidences_"):
        out["confidences_"] = est.confidences_
    return out


def main() -> int:
    X, y, S = _data()
    reg = get_registry()
    for (kind, name), comp in sorted(reg.components.items()):
        if kind not in ESTIMATOR_KINDS + ("preprocessor",):
            continue
        params = dict(comp.spec.test_params or {})
        est = comp.spec.cls(**params)
        if "random_state" in est.get_params():
            est.set_params(random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outs = outputs(kind, est, X, y, S)
            except Exception as err:  # noqa: BLE001 - recorded: it must fail the same way after
                outs = {"error": np.frombuffer(f"{type(err).__name__}: {err}".encode(), dtype=np.uint8)}
        for key, value in sorted(outs.items()):
            print(f"{kind:9s} {name:20s} {key:18s} {_digest(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
