"""Every registered learner, reducer and clusterer fed extreme or out-of-range input: how each answers.

    python scripts/bad_input_table.py            # markdown table on stdout

Cases (on the conformance suite's blobs, ``plcore.testing.make_pl_data``):

* ``X * 1e200``: fitted on features whose squares overflow float64; the outputs (predict,
  transform or labels_) compared with those of a fit on ``X``;
* ``above the data``: ``n_clusters``, ``n_features`` or ``n_components`` set to 10**6;
* ``metric``: ``metric="nosuchmetric"`` where the component has one.

Each cell: ``clear`` (a one-line ValueError at fit or predict), ``exact`` (accepted, outputs equal
those on ``X``), ``obscure`` (another error, or a multi-line message), ``silent`` (accepted, outputs
differ or the setting was capped), ``hang`` (no answer in 60 s), ``-`` (no such parameter).
"""

from __future__ import annotations

import signal
import sys
import warnings

import numpy as np

from plcore.registry import get_registry
from plcore.testing import make_pl_data

TIMEOUT_S = 60


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def _outputs(kind, est, X, S):
    S_fit = S.copy()
    if kind == "clusterer":
        S_fit[np.arange(S.shape[0]) % 3 != 0] = True
    est.fit(X, S_fit)
    if kind == "learner":
        return est.predict(X)
    if kind == "reducer":
        return est.transform(X)
    return est.labels_


def _attempt(fn):
    signal.alarm(TIMEOUT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn()
    except _Hang:
        return "hang", None
    except ValueError as err:
        return ("clear" if len(str(err).strip().splitlines()) == 1 else "obscure"), None
    except Exception:  # noqa: BLE001 - classified
        return "obscure", None
    finally:
        signal.alarm(0)


def row(kind, comp):
    X, S, _ = make_pl_data(n_samples=90, n_features=4, n_classes=3)

    def make(**params):
        est = comp.spec.cls(**{**(comp.spec.test_params or {}), **params})
        if "random_state" in est.get_params():
            est.set_params(random_state=0)
        return est

    cells = []
    status, base = _attempt(lambda: _outputs(kind, make(), X, S))
    status, big = _attempt(lambda: _outputs(kind, make(), X * 1e200, S))
    if status == "ok":
        if kind == "reducer":  # outputs in the units of X: compared after undoing the scale
            same = base is not None and np.allclose(np.asarray(big) / 1e200, np.asarray(base), rtol=1e-6, atol=1e-9)
        else:
            same = base is not None and np.array_equal(np.asarray(base), np.asarray(big))
        status = "exact" if same else "silent"
    cells.append(status)
    params = comp.spec.cls().get_params()
    limited = [p for p in ("n_clusters", "n_features", "n_components") if p in params]
    if limited:
        status, _ = _attempt(lambda: _outputs(kind, make(**{limited[0]: 10 ** 6}), X, S))
        cells.append(f"{'silent' if status == 'ok' else status} ({limited[0]})")
    else:
        cells.append("-")
    if "metric" in params:
        status, _ = _attempt(lambda: _outputs(kind, make(metric="nosuchmetric"), X, S))
        cells.append("silent" if status == "ok" else status)
    else:
        cells.append("-")
    return cells


def main() -> int:
    signal.signal(signal.SIGALRM, _alarm)
    reg = get_registry()
    print("| component | X * 1e200 | above the data | metric |")
    print("| --- | --- | --- | --- |")
    for (kind, name), comp in sorted(reg.components.items()):
        if kind not in ("learner", "reducer", "clusterer"):
            continue
        print(f"| {kind} {name} | " + " | ".join(row(kind, comp)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
