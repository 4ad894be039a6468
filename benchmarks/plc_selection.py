"""PLC's figures beside the paper's (Table 1): defaults, nested label-free selection, oracle, baselines.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/plc_selection.py \\
        [--settings msrc lost05 lost10 ecoli] [--n-iter 8] [--full-grid]

For every setting (the clustering protocol: 10 partitions, ACC on the unlabelled rows; MSRCv2 = the
10 stored splits of the public demo) it prints one row:

* ``PLC defaults (all rows z-scored)``: the demo's hyperparameters, z-score over all rows;
* ``PLC defaults``: the same with the demo's z-scoring of the labelled and unlabelled parts
  separately (``protocol.preprocessing_by_part=true``, as in the presets);
* ``PLC nested``: ``protocol.select.method=random protocol.select.n_iter=8`` -- 8 points of the
  paper's grid, chosen on every partition by the labelled rows' candidate sets only (the
  presets' setting, ``python -m plcore experiment=plc_msrc`` etc.);
* ``oracle``: the one of the same 8 points with the best mean ACC on the evaluated rows (true
  labels; read off the nested run's fits): what tuning on true labels could report;
* ``--full-grid``: "nested" and "oracle" over all 54 points of the paper's grid
  (``protocol.select.method=grid``) instead of 8 random ones (about 20 min per setting on lost);
* k-means and spectral clustering (the paper's baselines) on the same features;
* the paper's figure.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from plcore.datasets import load_dataset
from plcore.datasets.bags import UniformBags
from plcore.run.protocols import Setup, clustering
from plcore_plc import KMeansClusterer, PlcClusterer, SpectralClusterer

#: name -> (data set, rho, bags, paper ACC (mean, std) or None)
SETTINGS = {
    "msrc": ("msrc-v2-plc-splits", 0.10, None, (0.359, 0.020)),
    "lost05": ("lost", 0.05, None, (0.399, 0.027)),
    "lost10": ("lost", 0.10, None, (0.497, 0.024)),
    "ecoli": ("ecoli", 0.10, UniformBags(r=2), None),
}


def _cell(values):
    values = np.asarray(values)
    return f"{values.mean():.3f} ± {values.std():.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME", "../shared/datasets"))
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--n-iter", type=int, default=8)
    ap.add_argument("--full-grid", action="store_true", help="select over the paper's whole grid (54 points)")
    args = ap.parse_args(argv)
    print("| setting | PLC defaults (all rows z-scored) | PLC defaults | PLC nested (candidate sets) "
          "| oracle (test labels) | k-means | SC | paper | nested chose |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.settings:
        ds_name, rho, bags, paper = SETTINGS[name]
        ds = load_dataset(ds_name, data_home=args.data_home)

        def run(clusterer, by_part=True, select=None):
            return clustering(Setup(clusterer=clusterer, bags=bags), ds, rho=rho, preprocessing_by_part=by_part,
                              select=select, progress=False)

        glob = run(PlcClusterer(random_state=0), by_part=False)
        plain = run(PlcClusterer(random_state=0))
        select = {"method": "grid"} if args.full_grid else {"method": "random", "n_iter": args.n_iter}
        nested = run(PlcClusterer(random_state=0), select=select)
        acc = nested.extra["candidate_acc"]                     # (partitions, candidates)
        best = int(np.argmax(acc.mean(axis=0)))
        km = run(KMeansClusterer(random_state=0))
        sc = run(SpectralClusterer(random_state=0))
        chose = {}
        for step in nested.steps:
            key = tuple(sorted((k.split(".", 2)[2], v) for k, v in step.items() if k.startswith("selected.")))
            chose[key] = chose.get(key, 0) + 1
        chosen = "; ".join(", ".join(f"{k}={v:g}" for k, v in key) + f" (x{n})" for key, n in chose.items())
        cells = [_cell([s["acc"] for s in r.steps]) for r in (glob, plain, nested)]
        cells.append(_cell(acc[:, best]) + " (" + ", ".join(f"{k}={v:g}" for k, v in
                                                            sorted(nested.extra["candidates"][best].items())) + ")")
        cells += [_cell([s["acc"] for s in r.steps]) for r in (km, sc)]
        cells.append(f"{paper[0]:.3f} ± {paper[1]:.3f}" if paper else "(figure only)")
        print(f"| {name} (rho {rho:g}) | " + " | ".join(cells) + f" | {chosen} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
