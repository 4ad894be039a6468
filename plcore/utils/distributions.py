"""Search distributions written as plain data, for random hyperparameter search.

A search space maps each parameter either to a **list** of values (a grid axis; a random search
draws one of them uniformly) or to a **distribution**, a one-key mapping ``{name: [a, b]}``::

    uniform: [a, b]         # U(a, b)
    log10_uniform: [a, b]   # 10 ** U(a, b): PLENCH's learning rate, weight decay, POP's theta
    pow2_int: [a, b]        # 2 ** int(U(a, b)), int() truncating: PLENCH's batch size (a >= 0)

The spec stays plain data (YAML, Hydra overrides, logged configs); :func:`sampler` turns it into
an object with scikit-learn's ``rvs(random_state=...)``, which draws exactly the formula above
from the generator it is given (``RandomizedSearchCV`` and ``ParameterSampler`` pass theirs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

__all__ = ["DISTRIBUTIONS", "Distribution", "is_distribution", "check_distribution", "sampler", "describe"]


@dataclass(frozen=True)
class Distribution:
    """One distribution of the vocabulary, with its two bounds."""

    name: str
    low: float
    high: float

    def rvs(self, size=None, random_state=None):
        """One draw (``size`` must be None) from ``random_state`` (a seed, a RandomState or a Generator)."""
        import numpy as np

        if size is not None:
            raise ValueError("Distribution.rvs draws one value at a time (size=None)")
        rng = random_state if hasattr(random_state, "uniform") else np.random.RandomState(random_state)
        u = rng.uniform(self.low, self.high)
        if self.name == "uniform":
            return float(u)
        if self.name == "log10_uniform":
            return float(10 ** u)
        return 2 ** int(u)

    def contains(self, value) -> bool:
        """Whether ``value`` can be drawn."""
        if self.name == "uniform":
            return self.low <= value <= self.high
        if self.name == "log10_uniform":
            return 10 ** self.low <= value <= 10 ** self.high
        return value in {2 ** k for k in range(int(self.low), math.ceil(self.high))}

    @property
    def spec(self) -> dict:
        """The plain-data spec ``{name: [low, high]}``."""
        return {self.name: [int(b) if b.is_integer() else b for b in (self.low, self.high)]}


#: the vocabulary: name -> what one draw is
DISTRIBUTIONS = {"uniform": "U(a, b)", "log10_uniform": "10**U(a, b)", "pow2_int": "2**int(U(a, b)), a >= 0"}


def is_distribution(value) -> bool:
    """Whether ``value`` is written as a distribution (a mapping), not a list of values."""
    return hasattr(value, "keys")


def check_distribution(value) -> Distribution:
    """The :class:`Distribution` of the spec ``{name: [a, b]}``; a one-line ``ValueError`` otherwise."""
    known = "; ".join(f"{n}: [a, b] = {what}" for n, what in DISTRIBUTIONS.items())
    keys = list(value.keys())
    if len(keys) != 1 or keys[0] not in DISTRIBUTIONS:
        raise ValueError(f"{_plain(value)!r} is not a distribution; write one of {known}")
    name = keys[0]
    bounds = value[name]
    if (isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__") or len(bounds) != 2
            or not all(isinstance(b, Real) and not isinstance(b, bool) and math.isfinite(b) for b in bounds)):
        raise ValueError(f"{name} takes two finite numbers [a, b], got {_plain(bounds)!r}")
    low, high = float(bounds[0]), float(bounds[1])
    if not low < high:
        raise ValueError(f"{name} needs a < b, got [{bounds[0]}, {bounds[1]}]")
    if name == "pow2_int" and low < 0:
        raise ValueError(f"pow2_int needs a >= 0 (int() truncates towards zero), got [{bounds[0]}, {bounds[1]}]")
    return Distribution(name, low, high)


def sampler(value):
    """What scikit-learn's random search takes for one parameter: the list itself, or the
    :class:`Distribution` of a spec."""
    return check_distribution(value) if is_distribution(value) else list(value)


def describe(value) -> str:
    """A short text of a list or a spec (``10**U(-4.5, -2.5)``) for messages and docs."""
    if not is_distribution(value):
        return "{" + ", ".join(str(v) for v in value) + "}"
    d = check_distribution(value)
    low, high = f"{d.low:g}", f"{d.high:g}"
    return {"uniform": f"U({low}, {high})", "log10_uniform": f"10**U({low}, {high})",
            "pow2_int": f"2**int(U({low}, {high}))"}[d.name]


def _plain(value):
    if hasattr(value, "keys"):
        return {k: _plain(value[k]) for k in value.keys()}
    if hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        return [_plain(v) for v in value]
    return value
