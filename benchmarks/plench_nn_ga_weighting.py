"""The cause of NN's and GA's difference from PLENCH (docs/results/plench.md), tested: plcore's NN
and GA with PLENCH's weighting of the partial risks, beside PLENCH's own code.

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/plench_nn_ga_weighting.py \\
        --plench PATH [the other options of plench_parity.py]

Ishida et al. (ICML 2019), Theorem 1, weigh the first sum of the partial risk
``R_j = sum_k pi_k E_k[l_j] - (q-1) pi_j E_j[l_j]`` by ``pi_k``, the prior of the pairs' label
(plcore's ``plcore_deep._complementary.partial_risks``); PLENCH's code, as the authors', by
``pi_j``, the prior of the risk's class, over the labels with a pair in the batch; and its GA
ascends on ``min(n_j R_j, 0)``, ``n_j`` the batch's pairs with label ``j``. This script runs
``plench_parity.py`` for NN and GA with plcore's two functions replaced by those formulas while
it runs (an ablation of plcore's own code, nothing of PLENCH's changed): if the weighting is the
cause, the two sides agree.
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plench_parity  # noqa: E402


def plench_partial_risks(logits, S, prior):
    """``R_j = pi_j sum_{k with a pair} E_k[l_j] - (q-1) pi_j E_j[l_j]`` (PLENCH's ``non_negative_loss``)."""
    import torch.nn.functional as F

    q = logits.shape[1]
    M = (S <= 0).to(logits.dtype)
    neglog = -F.log_softmax(logits, dim=1)
    pairs = M.sum(dim=0)
    E = (M.T @ neglog) / pairs.clamp(min=1).unsqueeze(1)             # [k, j] = E_k[l(f(x), j)]
    return prior * E[pairs > 0].sum(dim=0) - (q - 1) * prior * E.diagonal()


def plench_ga_objective(logits, S, prior):
    """PLENCH's GA step: descent on ``sum_j R_j``, or ascent on ``sum_j min(n_j R_j, 0)``."""
    import torch

    from plcore_deep import _complementary

    R = _complementary.partial_risks(logits, S, prior)
    risk = R.sum()
    if bool((R < 0).any()):
        counts = (S <= 0).to(logits.dtype).sum(dim=0)
        objective = -torch.clamp(counts * R, max=0).sum()
        return objective + (risk - objective).detach()
    return risk


def main(argv=None) -> int:
    from plcore_deep import _complementary

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--algorithms" not in argv:
        argv += ["--algorithms", "NN", "GA"]
    with mock.patch.object(_complementary, "partial_risks", plench_partial_risks), \
            mock.patch.object(_complementary, "ga_objective", plench_ga_objective):
        print("plcore's NN and GA with PLENCH's weighting of the partial risks (and GA's ascent on n_j R_j)")
        return plench_parity.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
