"""Every deep learner's constructor and registry entry, pinned (``learner_params.json``,
captured before the learners were declared as records): the leaderboard's spec hashes are
computed from them, and a change of a default or of a search space would mark every committed
run of the learner stale."""

import hashlib
import importlib
import inspect
import json
from pathlib import Path

import pytest
from sklearn.base import clone

from plcore.registry import get_registry
from plcore_deep.plugin import LEARNER_OPTIONS

PINNED = json.loads((Path(__file__).parent / "learner_params.json").read_text())


def _class(name):
    module, cls_name = LEARNER_OPTIONS[name].split(":")
    return getattr(importlib.import_module(module), cls_name)


def _spec_hash(spec):
    """What ``plcore.leaderboard.jobs.spec_hash`` computes."""
    data = {"target": spec.target, "config": spec.config, "config_overrides": spec.config_overrides,
            "search_space": spec.search_space, "search_distributions": spec.search_distributions}
    return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":"),
                                                 default=repr).encode()).hexdigest()


def test_the_same_learners_in_the_same_order():
    assert list(LEARNER_OPTIONS) == list(PINNED)


@pytest.mark.parametrize("name", list(PINNED))
def test_constructor_and_registry_entry_are_as_pinned(name):
    pinned, cls = PINNED[name], _class(name)
    assert LEARNER_OPTIONS[name] == pinned["class"]
    assert list(inspect.signature(cls).parameters) == pinned["signature"]
    params = cls().get_params(deep=False)
    assert {k: repr(v) for k, v in sorted(params.items())} == pinned["params"]
    spec = get_registry().get("learner", name).spec
    assert {k: repr(v) for k, v in spec.config.items()} == pinned["params"]    # the config node is the defaults
    assert (spec.display_name, spec.description) == (pinned["display_name"], pinned["description"])
    assert repr(spec.search_space) == pinned["search_space"]
    assert repr(spec.search_distributions) == pinned["search_distributions"]   # the order of the draws too
    assert repr(spec.test_params) == pinned["test_params"]
    assert _spec_hash(spec) == pinned["spec_hash"]


@pytest.mark.parametrize("name", list(PINNED))
def test_set_params_and_clone_see_every_parameter(name):
    cls = _class(name)
    est = cls(random_state=3, n_epochs=7)
    assert est.get_params()["random_state"] == 3 and est.get_params()["n_epochs"] == 7
    copy = clone(est.set_params(learning_rate=0.5))
    assert copy.get_params() == est.get_params() and copy is not est
    with pytest.raises(TypeError):
        cls(not_a_parameter=1)
    with pytest.raises(TypeError):
        cls(128)                                 # keyword-only, as scikit-learn's estimators


def test_a_class_no_record_names_keeps_its_parents_constructor():
    from plcore_deep import ProdenLearner

    class Slower(ProdenLearner):
        pass

    assert inspect.signature(Slower) == inspect.signature(ProdenLearner)
    assert clone(Slower(n_epochs=3)).get_params() == ProdenLearner(n_epochs=3).get_params()
