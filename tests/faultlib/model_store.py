"""``python model_store.py STORE_DIR MARKER``: a tracking store whose runs hold the models the
tests of ``python -m plcore predict`` need, written with MLflow alone (as any MLflow client or a
crafted store could write them), one run per name; prints ``{name: run id}`` as JSON.

* ``crafted_pickle``: a cloudpickle model whose ``model.pkl`` was replaced by a pickle that
  creates the file ``MARKER`` when it is loaded;
* ``declares_untrusted``: a skops model holding ``operator.neg`` (a function), which its
  ``MLmodel`` declares trusted;
* ``plain``: a skops model of scikit-learn types only;
* ``older_plcore``: ``plain``, with ``plcore==0.0.1`` in its requirements;
* ``older_plcore_class``: a skops model holding ``plcore.learners.plknn.PlKnnLearnerV0``, a
  class the installed plcore lacks, with ``plcore==0.0.1`` in its requirements.
"""

import glob
import json
import operator
import os
import pickle
import sys
import warnings

import mlflow
import mlflow.sklearn
import numpy as np
import skops.io
import yaml
from sklearn.dummy import DummyClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler


class PlKnnLearnerV0(DummyClassifier):
    """Stands for a class an earlier plcore had."""


PlKnnLearnerV0.__module__, PlKnnLearnerV0.__qualname__ = "plcore.learners.plknn", "PlKnnLearnerV0"


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def main(store, marker):
    warnings.simplefilter("ignore")
    mlflow.set_tracking_uri(f"sqlite:///{os.path.join(store, 'mlflow.db')}")
    mlflow.set_experiment("plcore")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 4)), np.arange(40) % 3
    classes = ["setosa", "versicolor", "virginica"]
    reqs = ["scikit-learn", "numpy"]
    models = {
        "crafted_pickle": (make_pipeline(StandardScaler(), DummyClassifier()), "cloudpickle", reqs, None),
        "declares_untrusted": (make_pipeline(FunctionTransformer(operator.neg), DummyClassifier()), "skops", reqs,
                               ["_operator.neg"]),
        "plain": (make_pipeline(StandardScaler(), DummyClassifier()), "skops", reqs, None),
        "older_plcore": (make_pipeline(StandardScaler(), DummyClassifier()), "skops", reqs + ["plcore==0.0.1"], None),
        "older_plcore_class": (make_pipeline(StandardScaler(), DummyClassifier()), "skops", reqs + ["plcore==0.0.1"],
                               None),
    }
    ids = {}
    for name, (pipe, fmt, requirements, trusted) in models.items():
        pipe.fit(X, y)
        with mlflow.start_run(run_name=name) as run:
            info = mlflow.sklearn.log_model(pipe, name="model", serialization_format=fmt, pip_requirements=requirements,
                                            skops_trusted_types=trusted)
            mlflow.log_text(json.dumps(classes), "classes.json")
        ids[name] = run.info.run_id
        folder = glob.glob(os.path.join(store, "mlruns", "*", "models", info.model_id, "artifacts"))[0]
        if name == "crafted_pickle":
            with open(os.path.join(folder, "model.pkl"), "wb") as fh:
                pickle.dump(_Payload(marker), fh)
        if name == "older_plcore_class":  # written directly: MLflow reads a model back when it saves one
            skops.io.dump(make_pipeline(StandardScaler(), PlKnnLearnerV0()).fit(X, y),
                          os.path.join(folder, "model.skops"))
            with open(os.path.join(folder, "MLmodel")) as fh:
                mlmodel = yaml.safe_load(fh)
            mlmodel["flavors"]["sklearn"]["skops_trusted_types"] = ["plcore.learners.plknn.PlKnnLearnerV0"]
            with open(os.path.join(folder, "MLmodel"), "w") as fh:
                yaml.safe_dump(mlmodel, fh)
    print(json.dumps(ids))


if __name__ == "__main__":
    main(*sys.argv[1:3])
