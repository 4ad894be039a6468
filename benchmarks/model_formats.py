"""A run's model written with skops (plcore's format) or cloudpickle (before issue 42): size,
write and read time, and what importing each costs a fresh process.

Run from the repository root (``OMP_NUM_THREADS=1`` recommended on a shared machine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/model_formats.py [--quick]

What is measured
----------------
* Two refitted pipelines as a run logs them: the default run's (``standardize -> PL-KNN k=10``
  on digits, 1,797 rows x 64 features, ``UniformBags(r=3)``) and a deep learner's
  (``standardize -> PRODEN``, MLP (500,), 5 epochs, same data).
* **write**: ``skops.io.dumps`` (plus ``get_untrusted_types``, which plcore runs to choose the
  format) or ``cloudpickle.dumps``; **read**: ``skops.io.loads`` with the trusted types, or
  ``cloudpickle.loads``; best of 7 rounds (3 with ``--quick``), after one untimed round.
* **import**: the seconds a fresh process spends importing ``skops.io`` as plcore imports it
  (:func:`plcore.tracking.models.skops_io`), ``skops.io`` plainly, and ``cloudpickle``, beyond
  what a run has imported anyway (scikit-learn, SciPy, plcore's tracking modules); best of 5
  fresh processes (3 with ``--quick``). skops imports every scikit-learn estimator to build
  its default trusted list; with PyTorch installed (plcore-deep), scikit-learn's package walk
  imports PyTorch too, which plcore's import avoids.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time



def _best(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


_BASE = "import sklearn, scipy.sparse, plcore.tracking.models"


def _import_seconds(code: str, rounds: int) -> float:
    """Best wall time of ``python -c "<_BASE>; <code>"`` minus that of ``_BASE`` alone."""
    def once(text):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", text], check=True)
        return time.perf_counter() - start

    base = min(once(_BASE) for _ in range(rounds))
    return min(once(f"{_BASE}; {code}") for _ in range(rounds)) - base


def _pipelines():
    import warnings

    from plcore.datasets import load_dataset
    from plcore.datasets.bags import UniformBags
    from plcore.learners import PlKnnLearner
    from plcore.run.pipeline import build_pipeline
    from plcore_deep import ProdenLearner

    data = load_dataset("digits")
    S = UniformBags(r=3).generate(data.y_true, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield "PL-KNN (default run)", build_pipeline([PlKnnLearner(k=10)]).fit(data.X, S)
        yield "PRODEN (MLP 500, deep)", build_pipeline([ProdenLearner(n_epochs=5, device="cpu",
                                                                       random_state=0)]).fit(data.X, S)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else 7
    import cloudpickle

    from plcore.registry import model_packages
    from plcore.tracking.models import choose_format, skops_io

    sio = skops_io()

    packages = model_packages()
    print("| model | format | size (KB) | write (ms) | read (ms) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, pipe in _pipelines():
        fmt, types, _ = choose_format(pipe, packages)
        assert fmt == "skops", fmt
        data = sio.dumps(pipe)
        write = _best(lambda: sio.get_untrusted_types(data=sio.dumps(pipe)), rounds)
        read = _best(lambda: sio.loads(data, trusted=types), rounds)
        print(f"| {name} | skops | {len(data) / 1024:.0f} | {write * 1000:.0f} | {read * 1000:.0f} |")
        blob = cloudpickle.dumps(pipe)
        write = _best(lambda: cloudpickle.dumps(pipe), rounds)
        read = _best(lambda: cloudpickle.loads(blob), rounds)
        print(f"| {name} | cloudpickle | {len(blob) / 1024:.0f} | {write * 1000:.0f} | {read * 1000:.0f} |")
    n = 3 if args.quick else 5
    print(f"\nimport in a fresh process, beyond scikit-learn, SciPy and plcore.tracking: skops.io as plcore "
          f"imports it {_import_seconds('plcore.tracking.models.skops_io()', n):.2f} s, skops.io plainly "
          f"{_import_seconds('import skops.io', n):.2f} s, cloudpickle {_import_seconds('import cloudpickle', n):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
